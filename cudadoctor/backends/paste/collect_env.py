"""`python -m torch.utils.collect_env` of any torch 1.x-2.x, and vLLM's copy of it.

Formats read from the source: pytorch torch/utils/collect_env.py (1.x: "Key: value" without ROCM,
Libc or Python platform lines; 1.8+: ROCM, Libc, Python platform; 1.13+: CUDA_MODULE_LOADING; 2.x:
HIP/MIOpen, XNNPACK, the CPU block, caching allocator config) and vllm/collect_env.py (the same fields
padded as "Key                          : value" in "=====" sections, True/False instead of Yes/No,
plus vLLM Info, GPU Topology and Environment Variables sections).

What a value means comes from how collect_env computes it: "CUDA used to build PyTorch" is
torch.version.cuda (None, printed "None" or "Could not collect", on a CPU build); "CUDA runtime
version" is nvcc's, not torch's; "GPU models and configuration" is `nvidia-smi -L` (every GPU, UUIDs
removed) except on macOS and ROCm builds; "Nvidia driver version" is parsed from `nvidia-smi`; "cuDNN
version" lists system libcudnn files, not the cuDNN torch loads.
"""

from __future__ import annotations

import itertools
import re

from cudadoctor.backends.paste import packages
from cudadoctor.backends.paste.model import Gpu, Partial
from cudadoctor.backends.paste.text import known, major_minor, platform_facts, where

# a full-width colon (U+FF1A) is how some torch 1.x reports reach issues ("GPU 0： Tesla P100-PCIE-16GB",
# pytorch/pytorch#37320), and what an input method types in a hand-edited report
_KEY = re.compile(r"^\s*(?:-\s+)?([A-Za-z][A-Za-z0-9_ ./()?-]*?)\s*[:：]\s?(.*)$")
_GPU_LINE = re.compile(r"^\s*GPU (\d+)\s?[:：]\s?(.+?)\s*$")
_ENV = re.compile(r"^\s*([A-Z][A-Z0-9_]*)=(.*)$")
_RULE = re.compile(r"^\s*={5,}\s*$")
_PKG = re.compile(r"^\s*\[(pip3?|conda|uv)\]\s+(.*)$")

KEYS = {
    "pytorch version",
    "is debug build",
    "cuda used to build pytorch",
    "rocm used to build pytorch",
    "os",
    "python version",
    "python platform",
    "is cuda available",
    "cuda runtime version",
    "gpu models and configuration",
    "nvidia driver version",
    "cudnn version",
    "libc version",
    "vllm version",
}


# A collect_env whose newlines were lost (pasted outside a code block and re-flowed, or scraped):
# every field on one line. It is split again before each field name it knows.
_FIELDS = (
    "PyTorch version",
    "Is debug build",
    "CUDA used to build PyTorch",
    "ROCM used to build PyTorch",
    "XPU used to build PyTorch",
    "OS",
    "GCC version",
    "Clang version",
    "CMake version",
    "Libc version",
    "Python version",
    "Python platform",
    "Is CUDA available",
    "CUDA runtime version",
    "CUDA_MODULE_LOADING set to",
    "GPU models and configuration",
    "Nvidia driver version",
    "cuDNN version",
    "Is XPU available",
    "HIP runtime version",
    "MIOpen runtime version",
    "Is XNNPACK available",
    "Caching allocator config",
    "CPU",
    "Versions of relevant libraries",
)
_FLAT_KEYS = ("PyTorch version", "CUDA used to build", "Is CUDA available", "GPU models", "Nvidia driver")
_FLAT_FIELD = re.compile(
    r"(?<![\w(/-])(?:" + "|".join(re.escape(f) for f in _FIELDS) + r")\s*:|(?<=\s)GPU \d+: |(?<=\s)\[(?:pip3?|conda)\] "
)


def _expand(all_lines: list[str]) -> tuple[list[str], list[int]]:
    """Lines with flattened reports split again, and for each the paste line it came from."""
    out: list[str] = []
    origin: list[int] = []
    for n, line in enumerate(all_lines):
        flat = len(line) > 120 and any(k in line for k in _FLAT_KEYS)  # a cheap test before the regex
        starts = [m.start() for m in _FLAT_FIELD.finditer(line)] if flat else []
        if len(starts) < 3:
            out.append(line)
            origin.append(n)
            continue
        cuts = [0, *starts, len(line)]
        for a, b in itertools.pairwise(cuts):
            if line[a:b].strip():
                out.append(line[a:b].strip())
                origin.append(n)
    return out, origin


def detect(all_lines: list[str]) -> bool:
    all_lines, _ = _expand(all_lines)
    hits = 0
    for line in all_lines:
        m = _KEY.match(line)
        if m and m.group(1).strip().lower() in KEYS:
            hits += 1
            if hits >= 2:
                return True
    return False


def parse(all_lines: list[str]) -> Partial:
    all_lines, origin = _expand(all_lines)
    vllm = any(re.match(r"^\s*vLLM (?:Version|Info)", line) for line in all_lines)
    p = Partial("vLLM collect_env" if vllm else "torch collect_env")
    torch_known = False
    cuda_field: tuple[str, int] | None = None
    section = ""
    i = 0
    while i < len(all_lines):
        line = all_lines[i]
        if _RULE.match(line) and i + 2 < len(all_lines) and _RULE.match(all_lines[i + 2]):
            section = all_lines[i + 1].strip().lower()
        m_pkg = _PKG.match(line)
        if m_pkg:
            tool, rest = m_pkg.group(1), m_pkg.group(2)
            if tool == "conda":
                packages.conda_line(p, rest, where(origin[i], line))
            else:
                packages.freeze_line(p, rest, where(origin[i], line))
            i += 1
            continue
        if section.startswith("environment variables"):
            m_env = _ENV.match(line)
            if m_env:
                p.env[m_env.group(1)] = m_env.group(2)
                i += 1
                continue
        m = _KEY.match(line)
        if not m:
            i += 1
            continue
        key, value = m.group(1).strip().lower(), m.group(2).strip()
        w = where(origin[i], line)
        if key == "pytorch version":
            v = known(value)
            if v:
                torch_known = True
                p.set("torch_version", v, w)
                p.set("torch_installed", True, w)
        elif key == "cuda used to build pytorch":
            cuda_field = (value, i)
        elif key == "rocm used to build pytorch":
            v = known(value)
            if v:
                p.set("torch_hip", v, w)
        elif key == "os":
            _os_line(p, value, w)
        elif key == "python version":
            mv = re.match(r"(\d+\.\d+(?:\.\d+)?)", value)
            if mv:
                p.set("python_version", mv.group(1), w)
        elif key == "python platform":
            for k, v in platform_facts(value).items():
                p.set(k, v, w)
        elif key == "is cuda available":
            b = _bool(value)
            if b is not None:
                p.set("torch_available", b, w)
        elif key == "cuda runtime version":
            v = major_minor(known(value))
            if v:
                p.set("nvcc_version", v, w)
        elif key == "nvidia driver version":
            v = known(value)
            if v and re.fullmatch(r"\d{3}\.\d{1,3}(?:\.\d{1,3})?", v):
                p.set("driver_version", v, w)
                # collect_env parses it from `nvidia-smi` output: NVML answered
                p.set("nvml_status", "ok", w)
        elif key == "gpu models and configuration":
            if p.gpus or p.torch_gpus:  # the same report pasted twice: the first one counts
                i += 1
                continue
            i = _gpus(p, all_lines, i, value, origin)
            continue
        i += 1
    if cuda_field is not None:
        value, n = cuda_field
        w = where(origin[n], all_lines[n])
        v = known(value)
        if v and major_minor(v):
            p.set("torch_cuda_built", True, w)
            p.set("torch_cuda", major_minor(v), w)
        elif torch_known and value.strip().lower() in ("none", "could not collect"):
            # torch.version.cuda is None: a CPU (or ROCm) build
            if "torch_hip" not in p.values:
                p.set("torch_cuda_built", False, w)
    packages.apply(p, "")
    return p


def _gpus(p: Partial, all_lines: list[str], i: int, value: str, origin: list[int]) -> int:
    """The GPU list: inline ("GPU 0: …"), on the next lines (several GPUs), or one device name."""
    w = where(origin[i], all_lines[i])
    inline = _GPU_LINE.match(value)
    if inline:
        p.gpus.append(Gpu(index=int(inline.group(1)), name=inline.group(2)))
    elif known(value) and not value.startswith("GPU"):
        # macOS/ROCm: torch's name of the current device
        p.torch_gpus.append(Gpu(index=0, name=known(value)))
    j = i + 1
    if not known(value):
        while j < len(all_lines) and not all_lines[j].strip():
            j += 1
        while j < len(all_lines):
            m = _GPU_LINE.match(all_lines[j])
            if m:
                p.gpus.append(Gpu(index=int(m.group(1)), name=m.group(2)))
            elif not re.match(r"^\s+MIG ", all_lines[j]):
                break
            j += 1
    if p.gpus:
        p.set("gpu_count", len(p.gpus), w)
        p.set("nvml_status", "ok", w)
    return max(j, i + 1)


def _os_line(p: Partial, value: str, w: str) -> None:
    v = known(value)
    if not v:
        return
    m = re.match(r"^(.*?)\s*\((x86_64|aarch64|arm64|AMD64|ppc64le)\)\s*$", v)
    release = m.group(1) if m else v
    if m:
        p.set("machine", m.group(2), w)
    if re.search(r"windows", v, re.I):
        p.set("os", "Windows", w)
    elif re.search(r"mac ?os", v, re.I):
        p.set("os", "Darwin", w)
    else:
        p.set("os", "Linux", w)
    p.set("os_release", release, w)


def _bool(value: str) -> bool | None:
    v = value.strip().lower()
    if v in ("yes", "true"):
        return True
    if v in ("no", "false"):
        return False
    return None
