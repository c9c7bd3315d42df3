"""Example machines that work, or where a check could not run: what `check` (and `check --full`) says
when all is well, when a toolkit stands in for a driver, and when a measurement failed or was skipped."""

from __future__ import annotations

from cudadoctor.facts import (
    BandwidthFacts,
    CompileFacts,
    CudaDriverFacts,
    DriverFacts,
    Facts,
    PciFacts,
    SmokeFacts,
    SmokeStep,
    ToolkitFacts,
    Transfer,
)
from cudadoctor.facts.host import ToolkitInstall
from cudadoctor.facts.measure import PeerTransfer
from cudadoctor.rules.examples.base import (
    VENV,
    driver_580,
    example_driver,
    example_gpu,
    libcuda_ok,
    pci_bus,
    ubuntu_system,
    venv_torch,
)

_CUDA_12_8 = ToolkitFacts(
    nvcc_path="/usr/local/cuda-12.8/bin/nvcc",
    nvcc_version="12.8",
    cuda_home="/usr/local/cuda-12.8",
    installs=[ToolkitInstall("/usr/local/cuda-12.8", "12.8")],
    libcudart=["/usr/local/cuda-12.8/lib64/libcudart.so.12"],
)


def _copies(device: int) -> list[Transfer]:
    rates = {("h2d", "pinned"): 25.1, ("d2h", "pinned"): 26.3, ("h2d", "pageable"): 13.0, ("d2h", "pageable"): 12.7}
    return [Transfer(device, d, m, gbps=g, size=256 << 20) for (d, m), g in rates.items()]


def _workstation() -> Facts:
    """Two RTX 6000 Ada on PCIe 4 x16 with CUDA 12.8 installed for building extensions: `check --full`."""
    link = dict(pcie_gen_current=4, pcie_gen_max=4, pcie_width_current=16, pcie_width_max=16)
    ada = [example_gpu("NVIDIA RTX 6000 Ada Generation", "8.9", index=i, total=48, used=0, **link) for i in range(2)]
    return Facts(
        system=ubuntu_system(),
        driver=driver_580(ada),
        cuda_driver=libcuda_ok(n=2),
        toolkit=_CUDA_12_8,
        torch=venv_torch(device_count=2),
        bandwidth=BandwidthFacts(
            transfers=[*_copies(0), *_copies(1)],
            device_names={"0": "NVIDIA RTX 6000 Ada Generation", "1": "NVIDIA RTX 6000 Ada Generation"},
            p2p_access=[[False, True], [True, False]],
            p2p=[PeerTransfer(0, 1, gbps=24.8, size=256 << 20), PeerTransfer(1, 0, gbps=24.9, size=256 << 20)],
        ),
        compile=CompileFacts(
            python_executable=VENV,
            torch_version="2.13.0+cu130",
            triton="3.5.0",
            compiler="/usr/bin/g++",
            compiler_name="g++",
            python_headers=True,
            cpu_ok=True,
            cpu_seconds=11.2,
            gpu_ok=True,
            gpu_seconds=14.6,
            complete=True,
        ),
        smoke=SmokeFacts(
            steps=[SmokeStep("cpu", "mlp", [2.31, 0.42]), SmokeStep("cuda:0", "mlp", [2.31, 0.42])],
            max_loss_difference=1e-6,
            amp_dtype="bfloat16",
            amp_finite=True,
            dataloader_ok=True,
            checkpoint_ok=True,
        ),
    )


def examples() -> dict[str, Facts]:
    l4 = [example_gpu("NVIDIA L4", "8.9", total=24, used=0)]
    return {
        "workstation-full-check-passes": _workstation(),
        # torch 2.8 cu128 on a 550 driver (CUDA 12.4): minor version compatibility runs it
        "cu128-wheel-on-550-driver": Facts(
            system=ubuntu_system(),
            driver=example_driver(devices=l4, driver_version="550.127.05", cuda_driver_version=12040),
            cuda_driver=libcuda_ok(12040),
            torch=venv_torch(version="2.8.0+cu128", cuda="12.8", arch_flags=["sm_75", "sm_80", "sm_86", "sm_90"]),
        ),
        # a fresh cloud VM: `apt install cuda-toolkit-12-8` done, the driver not installed
        "toolkit-without-driver": Facts(
            system=ubuntu_system(),
            pci=pci_bus(None),
            driver=example_driver("LIBRARY_NOT_FOUND"),
            toolkit=_CUDA_12_8,
        ),
        # a CPU-only cloud instance: no NVIDIA GPU, no driver, no libcuda
        "cpu-only-instance": Facts(
            system=ubuntu_system(),
            pci=PciFacts(scanned=True, nvidia_gpus=[]),
            driver=DriverFacts(binding="nvidia-ml-py", library_loaded=False, init_status="LIBRARY_NOT_FOUND"),
            cuda_driver=CudaDriverFacts(
                library_found=False, load_error="libcuda.so.1: cannot open shared object file: No such file"
            ),
        ),
        # NVML hung reading GPU 1's memory: GPU 0 was read, GPU 1 not
        "nvml-query-hung": Facts(
            system=ubuntu_system(),
            driver=driver_580(l4, device_count=2, query_failure="hung in nvmlDeviceGetMemoryInfo (GPU 1)"),
        ),
        # `check --full` where the copy test crashed the driver with an illegal address
        "bandwidth-child-crashed": Facts(
            system=ubuntu_system(),
            driver=driver_580(l4),
            cuda_driver=libcuda_ok(),
            torch=venv_torch(),
            bandwidth=BandwidthFacts(error="CUDA error: an illegal memory access was encountered"),
        ),
        # `check --full` with a CPU-only torch: nothing on a GPU to measure
        "full-check-with-cpu-torch": Facts(
            system=ubuntu_system(),
            driver=driver_580(l4),
            cuda_driver=libcuda_ok(),
            torch=venv_torch(version="2.13.0+cpu", cuda=None, cuda_built=False, is_available=False, arch_flags=[]),
            bandwidth=BandwidthFacts(skipped="no usable CUDA device (torch.cuda.is_available() is False)"),
        ),
    }
