"""What only the CI gate (`check --require-*`) and the doctor itself (a probe that crashed) raise."""

from __future__ import annotations

from cudadoctor.facts import (
    Facts,
    GpuProcess,
)
from cudadoctor.model import ProbeOutcome
from cudadoctor.rules.examples.base import (
    GiB,
    driver_580,
    example_gpu,
    libcuda_ok,
    ubuntu_system,
    venv_torch,
)
from cudadoctor.rules.requirements import Requirements

# --- what only the CI gate and the doctor itself raise --------------------------------------------


def _gate() -> tuple[Facts, Requirements]:
    """A shared CI box, two A100s (one busy) and two T4s, for a job that needs two bf16 GPUs with 20 GiB."""
    busy = GpuProcess(pid=5151, used_memory=31 * GiB, name="python", user="bob")
    shared = [
        example_gpu("NVIDIA A100-PCIE-40GB", "8.0", 0, 40, 31, processes=[busy]),
        example_gpu("NVIDIA A100-PCIE-40GB", "8.0", 1, 40, 0),
        example_gpu("Tesla T4", "7.5", 2, 16, 0),
        example_gpu("Tesla T4", "7.5", 3, 16, 0),
    ]
    facts = Facts(
        system=ubuntu_system(env={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}),
        driver=driver_580(shared),
        cuda_driver=libcuda_ok(n=4),
        torch=venv_torch(device_count=4, cudnn_version=None),
    )
    gate = Requirements(
        require_gpus=2,
        min_free_memory=20 * GiB,
        min_compute_capability="8.0",
        expect_torch_cuda="12.8",
        require_cudnn=True,
        min_h2d_gbps=20.0,
    )
    return facts, gate


def _failed_probes() -> list[ProbeOutcome]:
    return [
        ProbeOutcome("toolkit", "crashed", 0.1, "PermissionError: [Errno 13] Permission denied: '/usr/local/cuda'"),
        ProbeOutcome("driver", "timeout", 10.0, "did not finish in 10 s"),
    ]


def gates() -> dict[str, tuple[Facts, Requirements]]:
    """CI gates that pass: the job's needs met, each requirement in the table."""
    a100 = [example_gpu("NVIDIA A100-SXM4-80GB", "8.0", 0, 80, 2)]
    runner = Facts(system=ubuntu_system(), driver=driver_580(a100), cuda_driver=libcuda_ok(), torch=venv_torch())
    needs = Requirements(require_gpus=1, min_free_memory=40 * GiB, min_compute_capability="8.0", require_cudnn=True)
    # a CI runner's A100 meets a job that needs one bf16 GPU with 40 GiB free and cuDNN
    return {"ci-gate-passes": (runner, needs)}
