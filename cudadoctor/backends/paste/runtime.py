"""What a program printed while it ran on a working stack: out-of-memory errors with their numbers,
bugs in the user's code (tensors on two devices, labels out of range, a device index the process
does not see), warnings that are harmless, and the lines that show the GPU ran at all.

The texts come from torch's sources: c10/cuda/CUDACachingAllocator.cpp (every wording of the OOM
message: 1.x "(GPU 0; 7.93 GiB total capacity; 6.19 GiB already allocated; 340.00 MiB free; 551.04 MiB
cached)", 1.5-2.0 "… reserved in total by PyTorch)", 2.1+ "GPU 0 has a total capacity of 4.00 GiB of
which 2.35 GiB is free. Process 1 has … memory in use. Of the allocated memory 825.15 MiB is allocated
by PyTorch, and 2.1 GiB is reserved by PyTorch but unallocated"), aten's device checks ("Expected all
tensors to be on the same device"), torch/storage.py (TypedStorage deprecation), torch/functional.py
(meshgrid indexing), torch/utils/cpp_extension.py (TORCH_CUDA_ARCH_LIST is not set), and torch
2.3.0's cuDNN v8 API warning ("Plan failed with a cudnnException", pytorch#121834: harmless).
"""

from __future__ import annotations

import re

from cudadoctor.backends.paste.model import Hit, Partial
from cudadoctor.backends.paste.text import short

_UNIT = {"b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40, "kb": 1 << 10, "mb": 1 << 20}
_SIZE = r"(\d+(?:\.\d+)?) ?([KMGT]i?B|bytes)"


def size(number: str, unit: str) -> int:
    return int(float(number) * _UNIT.get(unit.lower().replace("bytes", "b"), 1))


_OOM = re.compile(
    # "I run out of CUDA memory on A100 40GB" (Lightning-AI/litgpt#781) as well as torch's own words
    r"(?:CUDA out of memory|CUDA error: out of memory|OutOfMemoryError|out of memory|out of (?:CUDA|GPU|video) memory)",
    re.I,
)
_TRIED = re.compile(r"Tried to allocate " + _SIZE)
_OLD = re.compile(
    r"\(GPU (\d+); " + _SIZE + r" total capacity; " + _SIZE + r" already allocated; " + _SIZE + r" free;"
    r"(?: " + _SIZE + r" (reserved in total by PyTorch|cached))?"
)
_NEW = re.compile(r"GPU (\d+) has a total capacity of " + _SIZE + r" of which " + _SIZE + r" is free")
_NEW_ALLOC = re.compile(
    r"Of the allocated memory " + _SIZE + r" is allocated by PyTorch, and " + _SIZE + r" is reserved by PyTorch"
)
_THIS = re.compile(r"this process has " + _SIZE + r" memory in use")
_OTHERS = re.compile(r"Process (\d+) has " + _SIZE + r" memory in use")
_ADVICE = re.compile(r"try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
_EXPANDABLE = re.compile(r"expandable_segments\s*:\s*True", re.I)


def _oom(p: Partial, text: str) -> None:
    m = _OOM.search(text)
    if not m:
        return
    detail: dict[str, object] = {}
    seg = text[m.start() : m.start() + 1200]
    t = _TRIED.search(seg)
    if t:
        detail["tried"] = size(*t.groups())
    old, new = _OLD.search(seg), _NEW.search(seg)
    if old:
        g = old.groups()
        detail.update(gpu=g[0], total=size(g[1], g[2]), allocated=size(g[3], g[4]), free=size(g[5], g[6]))
        if g[7]:
            # 1.x printed what the allocator cached beyond the allocated memory; 1.5+ the whole reserve
            cached = size(g[7], g[8])
            detail["reserved"] = cached + detail["allocated"] if g[9] == "cached" else cached  # type: ignore[operator]
    elif new:
        g = new.groups()
        detail.update(gpu=g[0], total=size(g[1], g[2]), free=size(g[3], g[4]))
        a = _NEW_ALLOC.search(seg)
        if a:
            allocated, unallocated = size(*a.groups()[:2]), size(*a.groups()[2:])
            detail.update(allocated=allocated, reserved=allocated + unallocated)
        this = _THIS.search(seg)
        if this:
            detail["this_process"] = size(*this.groups())
        others = [size(n, u) for pid, n, u in _OTHERS.findall(seg)]
        if others:
            detail["others"] = sum(others)
    if _EXPANDABLE.search(_ADVICE.sub("", text)):  # set by the user, not torch's own advice to set it
        detail["expandable"] = "set"
    p.hits.append(Hit("out-of-memory", short(seg[: (t.end() if t else len(m.group(0)))], 120), detail))
    if "total" in detail:  # the allocator answered: the GPU ran
        p.hits.append(Hit("gpu-ran", short(seg, 120), {"why": "the CUDA allocator reported the GPU's memory"}))


# Bugs in the program, printed by a stack that works (each proves a CUDA device was used).
_CODE_BUGS = [
    (
        re.compile(
            r"Expected (?:all tensors to be on the same device|object of device type cuda but got device type cpu"
            r"|tensor for argument #\d+ '\w+' to have the same device)[^\n]{0,160}"
        ),
        "device-mismatch",
    ),
    (
        re.compile(
            r"Input type \(torch\.(?:cuda\.)?\w+\) and weight type \(torch\.(?:cuda\.)?\w+\) should be the same"
        ),
        "device-mismatch",
    ),
    (
        re.compile(r"expected device cuda:\d+ but got device cpu|expected device cpu but got device cuda:\d+"),
        "device-mismatch",
    ),
    (
        re.compile(r"Assertion `t >= 0 && t < n_classes` failed|Assertion `cur_target >= 0 && cur_target < n_classes`"),
        "labels-out-of-range",
    ),
    (re.compile(r"module 'torch\.cuda' has no attribute '(?P<attr>\w+)'"), "torch-attribute-typo"),
    # DistributedDataParallel's reducer: a parameter the loss did not use (torch/csrc/distributed/c10d/reducer.cpp)
    (re.compile(r"Expected to have finished reduction in the prior iteration before starting a new one"), "ddp-unused"),
]

_HARMLESS = [
    (re.compile(r"TypedStorage is deprecated|'TypedStorage' class in PyTorch is being deprecated"), "TypedStorage"),
    (
        re.compile(r"torch\.meshgrid: in an upcoming release, it will be required to pass the indexing argument"),
        "meshgrid",
    ),
    (re.compile(r"TORCH_CUDA_ARCH_LIST is not set, all archs for visible cards are included"), "TORCH_CUDA_ARCH_LIST"),
    (re.compile(r"Plan failed with a cudnnException: CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR"), "cudnn-plan"),
    # aten/src/ATen/native/transformers/cuda/sdp_utils.cpp on builds without flash attention (Windows wheels):
    # scaled_dot_product_attention uses another kernel; "does not affect use" (modelscope/DiffSynth-Studio#26)
    (re.compile(r"Torch was not compiled with flash attention"), "no flash attention"),
    # Lightning's tip on a GPU with Tensor Cores (lightning/fabric/accelerators/cuda.py): a notice on a working GPU
    (re.compile(r"You are using a CUDA device \('[^']+'\) that has Tensor Cores"), "Tensor Cores tip"),
    # Lightning's data-loading tip (PossibleUserWarning): a speed notice, not a set-up problem (NVIDIA/NeMo#1204)
    (re.compile(r"does not have many workers which may be a bottleneck"), "num_workers tip"),
    # Stability's ldm/sgm attention modules (copied into A1111, ComfyUI, Easy Diffusion, …) print it when `import
    # xformers` fails and use their own attention instead: "This is expected behaviour" (easydiffusion#700); A1111's
    # own wording is "no module 'xformers'. Processing without..."
    (re.compile(r"No module 'xformers'\. (?:Proceeding without it|Processing without)", re.I), "no xformers"),
    # WSL2: the Windows driver puts copies, not links, in /usr/lib/wsl/lib; "not blocking in any way"
    # (a WSL collaborator, microsoft/WSL#5548; yuk7/ArchWSL#248)
    (re.compile(r"(?:/usr/lib/wsl/lib/)?libcuda\.so\.1 is not a symbolic link"), "WSL libcuda.so.1 copy"),
]

# Lines that show a CUDA device in use: a launcher's own log, a printed device.
_RAN = [
    re.compile(r"^\s*Device: cuda:(\d+) (?P<name>.+?)(?: : \w+)?\s*$"),  # ComfyUI
    re.compile(r"\bCUDA:\d+ \((?:NVIDIA )?[^,()]+, \d+ ?MiB\)"),  # Ultralytics' banner
    re.compile(r"Using device:? cuda(?::\d+)?\b|device\s*=\s*cuda:\d+\b|CUDA device ?0[:：]?\s*\S", re.I),
    # Lightning: "You are using a CUDA device ('NVIDIA GeForce RTX 4070') that has Tensor Cores"; "GPU available:
    # True (cuda), used: True" (lightning/pytorch/trainer/connectors: _log_device_info)
    re.compile(r"You are using a CUDA device \('[^']+'\)|GPU available: True(?: \(cuda\))?, used: True"),
]


# Ultralytics' banner: "Ultralytics YOLOv8.0.53 Python-3.9.1 torch-1.8.1+cu111 CUDA:0 (NVIDIA GeForce RTX
# 3070, 8192MiB)" or "… torch-2.0.0+cpu CPU": the torch and the device of one run.
_ULTRALYTICS = re.compile(
    r"Ultralytics\b[^\n]*?\btorch-(?P<torch>\S+) (?:CUDA:\d+ \((?P<gpu>[^,()]+), \d+ ?MiB\)|(?P<cpu>CPU)\b)"
)


def _banners(p: Partial, all_lines: list[str]) -> None:
    """A run on the CPU with a +cpu torch, where another run in the same paste used a GPU: the machine
    has the GPU, the later environment a CPU-only torch."""
    runs = [m for line in all_lines if "Ultralytics" in line for m in [_ULTRALYTICS.search(line)] if m]
    gpu = next((m.group("gpu") for m in runs if m.group("gpu")), None)
    cpu = next((m for m in runs if m.group("cpu") and m.group("torch").endswith("+cpu")), None)
    if gpu and cpu:
        p.hits.append(Hit("cpu-torch-beside-gpu-run", short(cpu.group(0)), {"torch": cpu.group("torch"), "gpu": gpu}))


# Lightning's device banner: what torch.cuda.is_available() said in that run ("GPU available: False, used: False")
_LIGHTNING_GPU = re.compile(r"GPU available: (?P<v>True|False)(?: \((?:cuda|mps)\))?, used: (?:True|False)")


def parse(all_lines: list[str], text: str) -> Partial:
    p = Partial("run-time output")
    banner = _LIGHTNING_GPU.search(text) if "GPU available:" in text else None
    if banner is not None and "(mps)" not in banner.group(0):
        p.set("torch_available", banner.group("v") == "True", "Lightning's device banner")
        p.set("torch_installed", True, "Lightning's device banner")
    _oom(p, text)
    _banners(p, all_lines)
    for pattern, kind in _CODE_BUGS:
        m = pattern.search(text)
        if m:
            p.hits.append(Hit(kind, short(m.group(0)), {k: v for k, v in m.groupdict().items() if v}))
            if kind == "device-mismatch" and "cuda" in m.group(0):
                p.hits.append(Hit("gpu-ran", short(m.group(0), 120), {"why": "a tensor was on a CUDA device"}))
    for pattern, what in _HARMLESS:
        m = pattern.search(text)
        if m:
            p.hits.append(Hit("harmless-warning", short(m.group(0)), {"warning": what}))
    # a Processes table pasted alone (no banner: the nvidia-smi reader reads a whole one, where a process
    # says nothing of whether torch can use the GPU)
    tables_alone = "NVIDIA-SMI" not in text
    for n, line in enumerate(all_lines):
        if sum(h.kind == "gpu-ran" for h in p.hits) >= 3:
            break
        if tables_alone and "MiB" in line and _SMI_PROCESS.match(line):
            why = f"line {n + 1}: nvidia-smi lists a compute process holding GPU memory"
            p.hits.append(Hit("gpu-ran", short(line.strip(), 120), {"why": why}))
            continue
        if "cuda" not in line.lower():
            continue
        for pattern in _RAN:
            m = pattern.search(line)
            if m:
                p.hits.append(Hit("gpu-ran", short(line, 120), {"why": f"line {n + 1}"}))
                break
    return p


# a row of nvidia-smi's Processes table: "|    0     28290    C   python     1012MiB |" (older), or with GI/CI
# columns "|    0   N/A  N/A     28290      C   python     1012MiB |": a compute process (C, C+G, M+C) held
# memory on the GPU, so CUDA ran there; a graphics one (G: Xorg) says nothing of CUDA
_SMI_PROCESS = re.compile(r"^\|\s+\d+\s+(?:N/A\s+N/A\s+|\d+\s+\d+\s+)?\d+\s+(?:C|C\+G|M\+C)\s+\S.*?\d+\s?MiB\s*\|\s*$")
