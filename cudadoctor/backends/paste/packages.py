"""`pip list`, `pip freeze` (and `pip list --format=freeze`, as collect_env prints it), `uv pip list`
and `conda list` fragments: the package versions that decide a diagnosis.

What is certain from them: a `torch==X+cuYYZ` or `+cpu` local version names the build; conda's
`pytorch` build string says cuda or cpu ("py3.10_cuda12.1_cudnn8.9.2_0", conda-forge "cuda126_…",
"cpu_…"); `cpuonly` / `pytorch-mutex … cpu` keep a CPU build (pytorch#92273); `nvidia-*-cuNN` wheels
are the CUDA libraries a PyPI torch brings.
"""

from __future__ import annotations

import re

from cudadoctor.backends.paste.model import Partial
from cudadoctor.backends.paste.text import where

_FREEZE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*==\s*([0-9][^\s;]*)\s*$")
_LIST = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s+([0-9][0-9A-Za-z.+!_-]*)(?:\s+(\S.*))?$")
_CONDA = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s+([0-9][0-9A-Za-z.+!_-]*)\s+(\S+)(?:\s+(\S+))?\s*$")
# `pip list | grep torch` drops the header: a line that is only a torch-family or nvidia-* wheel's name
# and version, aligned by spaces (an editable install adds its location), read as a pip list line.
_GREP = re.compile(
    r"^\s*(torch|torchvision|torchaudio|pytorch-triton|triton|nvidia-(?!smi\b)[a-z0-9][a-z0-9-]*)"
    r"\s+(\d+\.\d+[0-9A-Za-z.+!_-]*)(?:\s+(?:/|[A-Za-z]:\\)\S*)?\s*$",
    re.IGNORECASE,
)
_PIP_HEADER = re.compile(r"^\s*Package\s+Version(\s+.*)?$")
_CONDA_HEADER = re.compile(r"^\s*#\s*Name\s+Version\s+Build(\s+Channel)?\s*$")
_RULE = re.compile(r"^\s*-{3,}(\s+-{3,})+\s*$")

INTERESTING = re.compile(
    r"^(torch|pytorch|torchvision|torchaudio|pytorch-cuda|pytorch-gpu|cpuonly|pytorch-mutex|nvidia-.*|"
    r"cudatoolkit|cuda-version|cuda-runtime|triton|xformers|flash-attn|flash_attn|vllm|deepspeed|jax|jaxlib|"
    r"tensorflow|numpy|nvidia-ml-py|pynvml|accelerate|transformers|bitsandbytes|onnxruntime-gpu|cupy.*)$"
)


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


_DIRECT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*@\s*\S*?/([A-Za-z0-9_]+)-(\d[^-/]*?)-(?:cp|py)\d")


def freeze_line(p: Partial, text: str, w: str) -> bool:
    m = _FREEZE.match(text)
    direct = _DIRECT.match(text) if m is None else None
    if direct is not None:
        # `torch @ https://download.pytorch.org/whl/cu121/torch-2.1.0%2Bcu121-cp310-…whl`
        name = normalize(direct.group(1))
        if INTERESTING.match(name):
            p.packages.setdefault(name, direct.group(3).replace("%2B", "+").replace("%2b", "+"))
            p.where.setdefault(f"pkg:{name}", w)
        return True
    if not m:
        return False
    name = normalize(m.group(1))
    if INTERESTING.match(name):
        p.packages.setdefault(name, m.group(2))
        p.where.setdefault(f"pkg:{name}", w)
    return True


def conda_line(p: Partial, text: str, w: str) -> bool:
    m = _CONDA.match(text)
    if not m:
        return freeze_line(p, text, w)
    name = normalize(m.group(1))
    if INTERESTING.match(name):
        build = m.group(3)
        channel = m.group(4) or ""
        if build == "pypi" or channel == "pypi":
            # installed with pip inside a conda env: a pip package
            p.packages.setdefault(name if name != "pytorch" else "torch", m.group(2))
        else:
            p.conda.setdefault(name, (m.group(2), build))
        p.where.setdefault(f"pkg:{name}", w)
    return True


def detect(all_lines: list[str]) -> bool:
    return any(
        _PIP_HEADER.match(line) or _CONDA_HEADER.match(line) or _freeze_torch(line) or _GREP.match(line)
        for line in all_lines
    )


def _freeze_torch(line: str) -> bool:
    if _DIRECT.match(line):
        return True
    m = _FREEZE.match(line)
    return bool((m and normalize(m.group(1)) in ("torch", "torchvision", "torchaudio")) or (m and "nvidia-" in line))


def parse(all_lines: list[str]) -> Partial:
    p = Partial("package list")
    mode = ""
    for n, line in enumerate(all_lines):
        w = where(n, line)
        if _PIP_HEADER.match(line):
            mode = "pip"
            p.format = "pip list"
            continue
        if _CONDA_HEADER.match(line):
            mode = "conda"
            p.format = "conda list"
            continue
        if _RULE.match(line) or not line.strip():
            continue
        if mode == "conda":
            if line.lstrip().startswith("#"):
                continue
            if not conda_line(p, line, w):
                mode = ""
            continue
        if freeze_line(p, line, w):
            if mode != "pip" and p.format == "package list":
                p.format = "pip freeze"
            continue
        if mode == "pip":
            m = _LIST.match(line)
            if m:
                name = normalize(m.group(1))
                if INTERESTING.match(name):
                    p.packages.setdefault(name, m.group(2))
                    p.where.setdefault(f"pkg:{name}", w)
                continue
            mode = ""
        grep = _GREP.match(line)
        if grep:
            name = normalize(grep.group(1))
            p.packages.setdefault(name, grep.group(2))
            p.where.setdefault(f"pkg:{name}", w)
            if p.format == "package list":
                p.format = "pip list"
    apply(p, "")
    return p


def apply(p: Partial, w: str) -> None:
    """What the package versions make certain about the torch build."""
    torch_v = p.packages.get("torch")
    if torch_v:
        w = p.where.get("pkg:torch", w)
        p.set("torch_version", torch_v, w)
        p.set("torch_installed", True, w)
        m = re.search(r"\+cu(\d{2,3})$", torch_v)
        if m:
            digits = m.group(1)
            p.set("torch_cuda_built", True, w)
            p.set("torch_cuda", f"{int(digits[:-1])}.{digits[-1]}", w)
        elif torch_v.endswith("+cpu"):
            p.set("torch_cuda_built", False, w)
        elif re.search(r"\+rocm(\d+(?:\.\d+)*)$", torch_v):
            p.set("torch_hip", re.search(r"\+rocm(\S+)$", torch_v).group(1), w)  # type: ignore[union-attr]
    conda_torch = p.conda.get("pytorch") or p.conda.get("torch")
    if conda_torch:
        version, build = conda_torch
        w = p.where.get("pkg:pytorch", p.where.get("pkg:torch", w))
        p.set("torch_version", version, w)
        p.set("torch_installed", True, w)
        m = re.search(r"(?:^|_)cuda(\d+)\.(\d+)(?:_|$)", build) or re.search(r"^cuda(\d{2})(\d)(?:_|$)", build)
        if m:
            p.set("torch_cuda_built", True, w)
            p.set("torch_cuda", f"{int(m.group(1))}.{int(m.group(2))}", w)
        elif re.match(r"^(?:py\d+\.\d+_)?cpu", build) or re.match(r"^cpu_", build):
            p.set("torch_cuda_built", False, w)
    mutex = p.conda.get("pytorch-mutex")
    if "cpuonly" in p.conda or (mutex and mutex[1] == "cpu"):
        # the CPU mutex forces the CPU build whatever else the solver was asked for
        if not conda_torch or "torch_cuda_built" not in p.values:
            p.set("torch_cuda_built", False, p.where.get("pkg:cpuonly", p.where.get("pkg:pytorch-mutex", w)))
