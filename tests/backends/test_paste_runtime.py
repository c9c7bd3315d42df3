"""backends/paste/runtime.py and what triage says about it: out-of-memory errors of every torch wording
explained from their own numbers, bugs in the user's code, harmless warnings, lines that show the GPU
ran. Each case is the minimal line a post contains, then the verdict the real command line gives."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cudadoctor.backends.paste import runtime, text
from cudadoctor.rules.paste.runtime import oom_cause

# torch 1.x (c10/cuda/CUDACachingAllocator.cpp): "cached"; 1.5-2.0: "reserved in total by PyTorch";
# 2.1+: "GPU 0 has a total capacity of … of which … is free … Of the allocated memory …"
OOM_1X = (
    "RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 7.93 GiB total capacity; "
    "6.19 GiB already allocated; 340.00 MiB free; 551.04 MiB cached)"
)
OOM_OTHERS = (
    "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total capacity; "
    "2.42 GiB already allocated; 26.12 MiB free; 2.75 GiB reserved in total by PyTorch)"
)
OOM_FRAGMENTED = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "79.33 GiB of which 1.16 GiB is free. Including non-PyTorch memory, this process has 78.16 GiB memory in "
    "use. Of the allocated memory 60.97 GiB is allocated by PyTorch, and 16.70 GiB is reserved by PyTorch but "
    "unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
)
OOM_TOO_BIG = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 218.96 GiB"
OOM_FITS_FREE = (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity "
    "of 4.00 GiB of which 2.35 GiB is free. Of the allocated memory 825.15 MiB is allocated by PyTorch, and "
    "24.85 MiB is reserved by PyTorch but unallocated."
)


def hits(paste: str) -> dict[str, dict[str, object]]:
    lines = text.lines(paste)
    return {h.kind: h.detail for h in runtime.parse(lines, text.joined(lines)).hits}


def triage(paste: str) -> tuple[int, dict]:
    from cudadoctor.cli import cli

    r = CliRunner().invoke(cli, ["triage", "--json"], input=paste)
    return r.exit_code, json.loads(r.stdout)


def test_the_old_wording_gives_its_numbers() -> None:
    d = hits(OOM_1X)["out-of-memory"]
    assert d["gpu"] == "0" and d["tried"] == 512 << 20 and d["total"] == int(7.93 * (1 << 30))
    # 1.x's "cached" is what the allocator holds beyond the allocated memory
    assert d["reserved"] == int(551.04 * (1 << 20)) + d["allocated"] and d["free"] == 340 << 20


@pytest.mark.parametrize(
    ("paste", "cause"),
    [
        (OOM_OTHERS, "others"),  # 10.76 total, 26 MiB free, 2.75 reserved: 8 GiB held elsewhere
        (OOM_FRAGMENTED, "fragmentation"),  # 16.7 GiB reserved but unallocated > the 2 GiB asked
        (OOM_TOO_BIG, "too-big"),
        (OOM_FITS_FREE, "fits-free"),  # 2.35 GiB free, 20 MiB asked
        (OOM_1X, "does-not-fit"),
    ],
)
def test_the_message_tells_the_cause(paste: str, cause: str) -> None:
    detail = {k: str(v) for k, v in hits(paste)["out-of-memory"].items()}
    assert oom_cause(detail) == cause


def test_fragmentation_is_not_advised_where_expandable_segments_is_set() -> None:
    """torch's own advice ("try setting …expandable_segments:True") is not the user having set it."""
    assert "expandable" not in hits(OOM_FRAGMENTED)["out-of-memory"]
    d = hits("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n" + OOM_FRAGMENTED)["out-of-memory"]
    assert d["expandable"] == "set" and oom_cause({k: str(v) for k, v in d.items()}) != "fragmentation"


def test_an_oom_is_a_run_time_verdict_with_its_numbers_and_fix() -> None:
    code, data = triage(OOM_OTHERS)
    oom = next(f for f in data["findings"] if f["code"] == "CD909")
    assert code == 0 and oom["severity"] == "warning"  # the stack ran: not a set-up problem
    assert "held outside this program" in oom["title"] and "8.0 GiB" in oom["title"]
    assert any("nvidia-smi --query-compute-apps" in c for fx in oom["fix"] for c in fx["commands"])
    assert not any(f["severity"] == "error" for f in data["findings"])
    code, data = triage(OOM_FRAGMENTED)
    oom = next(f for f in data["findings"] if f["code"] == "CD909")
    assert "fragmentation" in oom["title"] and "expandable_segments:True" in json.dumps(oom["fix"])


def test_a_bug_in_the_code_says_the_stack_works() -> None:
    code, data = triage(
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    )
    codes = {f["code"]: f["severity"] for f in data["findings"]}
    assert code == 0 and codes["CD914"] == "ok" and codes["CD909"] == "warning"


@pytest.mark.parametrize(
    "warning",
    [
        "UserWarning: TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be "
        "the only storage class.",
        "UserWarning: torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
        "UserWarning: TORCH_CUDA_ARCH_LIST is not set, all archs for visible cards are included for compilation.",
        "UserWarning: Plan failed with a cudnnException: CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: cudnnFinalize "
        "Descriptor Failed cudnn_status: CUDNN_STATUS_NOT_SUPPORTED",
    ],
)
def test_harmless_warnings_need_no_fix(warning: str) -> None:
    code, data = triage(warning)
    codes = {f["code"]: f["severity"] for f in data["findings"]}
    assert code == 0 and codes.get("CD915") == "info" and "CD913" not in codes  # cuDNN's plan warning is no error


def test_a_launcher_log_shows_the_gpu_ran() -> None:
    d = hits("pytorch version: 2.2.2+cu121\nDevice: cuda:0 NVIDIA GeForce RTX 3060 Ti : cudaMallocAsync\n")
    assert "gpu-ran" in d and d["gpu-ran"]["why"] == "line 2"


@pytest.mark.parametrize(
    "driver", ["", "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |\n"]
)
def test_a_cpu_torch_beside_a_run_on_the_gpu(driver: str) -> None:
    """Two Ultralytics banners: the machine has the GPU, the later environment a CPU-only torch. The fix
    installs the driver's CUDA build where the driver is shown, else the oldest CUDA of the newest release."""
    code, data = triage(
        driver + "Ultralytics YOLOv8.0.53 Python-3.9.1 torch-1.8.1+cu111 CUDA:0 (NVIDIA GeForce RTX 3070, 8192MiB)\n"
        "Ultralytics YOLOv8.0.54 Python-3.10.6 torch-2.0.0+cpu CPU\n"
    )
    cpu = next(f for f in data["findings"] if f["code"] == "CD202")
    assert code == 1 and "torch 2.0.0+cpu is a CPU-only build" in cpu["title"] and "RTX 3070" in cpu["title"]
    assert any("download.pytorch.org/whl/cu" in c for fx in cpu["fix"] for c in fx["commands"])


@pytest.mark.parametrize(
    "line",
    [
        "No module 'xformers'. Proceeding without it.",  # ldm/sgm attention modules (easydiffusion#700)
        "no module 'xformers'. Processing without...",  # AUTOMATIC1111's own wording
    ],
)
def test_no_xformers_is_a_harmless_notice(line: str) -> None:
    from cudadoctor.cli import cli

    r = CliRunner().invoke(cli, ["triage", "--json"], input=line + "\nUI works, pics generated\n")
    found = {f["code"]: f["severity"] for f in json.loads(r.stdout)["findings"]}
    assert r.exit_code == 0 and found["CD915"] == "info" and "error" not in found.values()
