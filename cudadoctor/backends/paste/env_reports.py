"""The environment reports other projects ask for in their issue templates.

Read from their source:
- `accelerate env` (huggingface/accelerate src/accelerate/commands/env.py): "- Key: value" lines;
  "PyTorch version (GPU?): 2.1.0+cu121 (True)" is torch.__version__ and torch.cuda.is_available();
  "GPU type" is torch.cuda.get_device_name() and is printed only when CUDA is available.
- `transformers env` / `transformers-cli env` (src/transformers/commands/env.py): the same "- Key:
  value" shape; older versions print "PyTorch version (GPU?): X (True|False)", newer ones "PyTorch
  version (accelerator?): X (CUDA|XPU|NPU|HPU|NA)" where NA means no accelerator is available.
- `ds_report` (deepspeed/env_report.py): "name ....... value" lines: "torch version", "torch cuda
  version" (torch.version.cuda), "nvcc version", "deepspeed wheel compiled w.", and in newer versions
  "shared memory (/dev/shm) size".
"""

from __future__ import annotations

import re

from cudadoctor.backends.paste.model import Gpu, Partial
from cudadoctor.backends.paste.text import known, major_minor, platform_facts, where

_HF = re.compile(r"^\s*[-*]\s+(`?[A-Za-z][^:]*?)\s*:\s*(.*)$")
_DS = re.compile(r"^\s*([a-z][a-z0-9 ./()]*?)\s+\.{2,}\s+(.*)$")


def detect_hf(all_lines: list[str]) -> bool:
    return any(
        (m := _HF.match(line)) and m.group(1).startswith(("PyTorch version (GPU?)", "PyTorch version (accelerator?)"))
        for line in all_lines
    )


def detect_ds(all_lines: list[str]) -> bool:
    return any((m := _DS.match(line)) and m.group(1) in ("torch version", "torch cuda version") for line in all_lines)


def parse_hf(all_lines: list[str]) -> Partial:
    p = Partial("accelerate/transformers env")
    for n, line in enumerate(all_lines):
        m = _HF.match(line)
        if not m:
            continue
        raw_key = m.group(1).strip()
        key, value, w = raw_key.strip("` "), m.group(2).strip(), where(n, line)
        if raw_key == "`Accelerate` version":
            p.format = "accelerate env"
        elif raw_key == "`transformers` version":
            p.format = "transformers env"
        if key == "Platform":
            for k, v in platform_facts(value).items():
                p.set(k, v, w)
        elif key == "Python version":
            mv = re.match(r"(\d+\.\d+(?:\.\d+)?)", value)
            if mv:
                p.set("python_version", mv.group(1), w)
        elif key.startswith("PyTorch version"):
            mv = re.match(r"^(\S+)\s*\((\w+)\)", value)
            if not mv:
                continue
            version, flag = mv.group(1), mv.group(2)
            if known(version) is None:
                p.set("torch_installed", False, w)
                continue
            p.set("torch_version", version, w)
            p.set("torch_installed", True, w)
            if flag in ("True", "CUDA"):
                p.set("torch_available", True, w)
                p.set("torch_cuda_built", True, w)
            elif flag in ("False", "NA"):
                p.set("torch_available", False, w)
        elif key == "GPU type":
            v = known(value)
            if v:
                p.torch_gpus.append(Gpu(index=0, name=v))
    return p


def parse_ds(all_lines: list[str]) -> Partial:
    p = Partial("ds_report")
    for n, line in enumerate(all_lines):
        m = _DS.match(line)
        if not m:
            continue
        key, value, w = m.group(1).strip(), m.group(2).strip(), where(n, line)
        if key == "torch version":
            p.set("torch_version", value, w)
            p.set("torch_installed", True, w)
        elif key == "torch cuda version":
            if value == "None":
                p.set("torch_cuda_built", False, w)
            elif major_minor(value):
                p.set("torch_cuda_built", True, w)
                p.set("torch_cuda", major_minor(value), w)
        elif key == "nvcc version":
            v = major_minor(value) if not re.search(r"FAIL|missing", value) else None
            if v:
                p.set("nvcc_version", v, w)
        elif key.startswith("shared memory (/dev/shm) size"):
            ms = re.match(r"([\d.]+)\s*(GB|MB|KB|GiB|MiB)", value)
            if ms:
                scale = {"GB": 1 << 30, "GiB": 1 << 30, "MB": 1 << 20, "MiB": 1 << 20, "KB": 1 << 10}[ms.group(2)]
                p.set("shm_total", int(float(ms.group(1)) * scale), w)
    if "torch_cuda_built" in p.values and p.values["torch_cuda_built"] is False:
        p.values.pop("torch_cuda", None)
    return p
