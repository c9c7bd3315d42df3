"""Title templates: the finding titles the rule modules build with f-strings, as messages with named
placeholders, so a translation can reorder them. `localize.title` matches a title against these (the
literal text exactly, each placeholder non-empty) and formats the translation with what matched.

A title no template matches keeps its English detail behind the translated summary. Rule modules that
build titles from `_()` templates themselves would make this table unnecessary; until then, a template
here that no longer matches its rule's f-string only costs that title its translation (the test for
this package checks the common ones on hand-written facts).
"""

from __future__ import annotations

import re
from functools import cache

from cudadoctor.locale import N_

TEMPLATES: tuple[str, ...] = (
    # driver (CD100, CD102, CD108, CD122)
    N_("NVIDIA driver {version} (supports CUDA up to {cuda}), {count} GPUs: {names}"),
    N_("NVIDIA driver {version} (supports CUDA up to {cuda}), 1 GPU: {names}"),
    N_("NVIDIA driver {version}, {count} GPUs: {names}"),
    N_("NVIDIA driver {version}, 1 GPU: {names}"),
    N_("{count} NVIDIA GPUs on the PCI bus, but no NVIDIA driver"),
    N_("1 NVIDIA GPU on the PCI bus, but no NVIDIA driver"),
    N_("NVML failed to initialise: {status} ({message})"),
    N_("GPU {index} cannot be queried: {error}"),
    # libcuda (CD120, CD122, CD125)
    N_("libcuda {version} at {path}: cuInit ok, {count} devices"),
    N_("libcuda {version} at {path}: cuInit ok, 1 device"),
    N_("No CUDA driver library: {error}"),
    N_("cuInit failed: {name} ({result})"),
    # toolkit (CD130, CD131)
    N_("CUDA toolkit found ({described}), but no NVIDIA driver: a toolkit is not a driver"),
    N_("CUDA toolkit: {described}"),
    # torch (CD200-CD217)
    N_("torch {version} (CUDA {cuda}, cuDNN {cudnn}) uses {count} GPUs: {names}"),
    N_("torch {version} (CUDA {cuda}, cuDNN {cudnn}) uses 1 GPU: {names}"),
    N_("torch {version} (CUDA {cuda}) uses {count} GPUs: {names}"),
    N_("torch {version} (CUDA {cuda}) uses 1 GPU: {names}"),
    N_("torch {version} is a CPU-only build, but this machine has an NVIDIA GPU"),
    N_("torch {version} is a CPU-only build, and there is no NVIDIA GPU to use"),
    N_("torch {version} is a CPU-only build; whether this machine has an NVIDIA GPU is unknown"),
    N_("torch {version} is a ROCm {hip} build"),
    N_("torch {version} needs CUDA {cuda}; driver {driver} supports CUDA up to {have}"),
    N_("torch CUDA {cuda} on a driver for CUDA {have}: works through minor-version compatibility"),
    N_("torch {version} has no kernels for {gpu}"),
    N_("torch {version} runs on {gpu} only through PTX JIT"),
    N_("{gpu} is older than every current torch build"),
    N_("torch {version} finds no cuDNN"),
    N_("nvcc is CUDA {nvcc}, torch carries CUDA {cuda}: not a problem for running torch"),
    N_("torch.cuda.is_available() is False although the driver sees {count} GPUs"),
    N_("torch.cuda.is_available() is False although the driver sees 1 GPU"),
    N_("import torch fails: {detail}"),
    N_("PyTorch is not installed in {python}"),
    N_("The torch check did not finish: {error}"),
    N_("The torch check failed: {error}"),
    N_("A kernel on cuda:0 failed: {error}"),
    # CUDA libraries (CD218, CD226)
    N_("torch loaded {count} CUDA libraries, all from its own environment"),
    N_("torch loaded 1 CUDA library, all from its own environment"),
    N_("The CUDA libraries torch loaded ({count})"),
    N_("torch.compile works ({took})"),
    # visible devices (CD300, CD301)
    N_("CUDA sees {seen} of {count} GPUs (CUDA_VISIBLE_DEVICES {shown}, order {order})"),
    N_("CUDA sees {seen} of {count} GPUs (CUDA_VISIBLE_DEVICES {shown}, order {order}, estimated)"),
    N_("CUDA sees {seen} of 1 GPU (CUDA_VISIBLE_DEVICES {shown}, order {order})"),
    N_("CUDA sees {seen} of 1 GPU (CUDA_VISIBLE_DEVICES {shown}, order {order}, estimated)"),
    N_("CUDA_VISIBLE_DEVICES={shown} hides all {count} GPUs"),
    N_("CUDA_VISIBLE_DEVICES={shown} hides all 1 GPU"),
    # system and health (CD140-CD154)
    N_('/dev/shm is {size}: DataLoader workers may die with "Bus error"'),
    N_("Running in a container ({hints})"),
    N_("Running under WSL2, Windows NVIDIA driver {version}"),
    N_("Persistence mode is off on {off} of {count} GPUs"),
    N_("Persistence mode is off on {off} of 1 GPU"),
    N_("Uncorrectable ECC errors on {count} GPUs"),
    N_("Uncorrectable ECC errors on 1 GPU"),
    N_("{count} GPUs slowing down: {reason}"),
    N_("1 GPU slowing down: {reason}"),
    N_("Xid {xid} in the kernel log: {what}"),
    N_("Row remapping failed"),
    N_("Row remapping pending (reset needed)"),
    N_("GPU memory in use with no process listed on {count} GPUs"),
    N_("GPU memory in use with no process listed on 1 GPU"),
    N_('NVIDIA_VISIBLE_DEVICES="{value}" hides the GPUs from this container'),
    N_('NVIDIA_DRIVER_CAPABILITIES="{value}" lacks "compute": no libcuda here'),
    N_("No NVIDIA kernel module for the running kernel {kernel}"),
    N_("This GPU needs the {flavour} NVIDIA kernel module"),
    # multi-GPU (CD160-CD162)
    N_("P2P works between all {count} GPUs: slowest pair {gbps} GB/s"),
    N_("No P2P access on {missing} of {pairs} GPU pairs"),
    # measurements (CD400-CD412)
    N_("Copy bandwidth, GB/s (median of timed {size} MiB copies)"),
    N_("cuda:{device} pinned host-to-device {h2d} GB/s vs pageable {pageable} GB/s"),
    N_("Bandwidth measurement: {error}"),
    N_("Bandwidth skipped: {reason}"),
    N_("Smoke test: {error}"),
    N_("Smoke test ran on the CPU only; GPU half skipped: {reason}"),
    N_("{model} on {device}: loss {first} -> {last}"),
    # page text added to a finding from facts (CD210)
    N_("Cause: {causes}."),
    N_("No other check explains it. torch said: {warnings}"),
)

# Fix labels built from facts (rules/install_advice.py): "LABEL (NOTE)", the note's parts joined by "; ".
LABELS: tuple[str, ...] = (
    N_("Install a CUDA build"),
    N_("Install a build compiled for this GPU"),
    N_("Install the CUDA build for this driver"),
    N_("Or install the build this driver runs"),
    N_("Or install the torch build this driver runs"),
    N_("Install torch {release}"),
    N_("Then sync the project"),
    N_("Run only these probes: {names}."),
    N_("Or {action}, then keep newer builds"),
    N_("Upgrade the NVIDIA driver to {need} or newer ({family})"),
    N_("upgrade the NVIDIA driver to {need} or newer ({family})"),
    N_("Install NVIDIA driver {need} or newer for Windows"),
    N_("install NVIDIA driver {need} or newer for Windows"),
    N_("Install NVIDIA driver {need} or newer on Windows (WSL uses the Windows driver; never install one inside WSL)"),
    N_("install NVIDIA driver {need} or newer on Windows (WSL uses the Windows driver; never install one inside WSL)"),
    N_("torch {version} {variant}: fits this driver and every GPU"),
    N_("torch {version} {variant}: no build of torch {release} fits this driver and these GPUs as well"),
    N_("runs through PTX JIT only"),
    # parts of titles (rules/toolkit.py)
    N_("nvcc {version} at {path}"),
    N_("CUDA {version} at {path}"),
    N_("no known torch build fits this driver and these GPUs together"),
    N_("{gpu} is {arch}, sm_{sm}: every torch {release} build has kernels for it"),
    N_("{gpu} is {arch}, sm_{sm}: no PyTorch build in cudadoctor's tables has kernels for it"),
    N_("{gpu} is {arch}, sm_{sm}: no current release has kernels for it"),
    N_("the last that does is torch {release} ({names})"),
    N_("{gpu} is {arch}, sm_{sm}: only {variant} builds and newer have kernels for it"),
    N_("{gpu} is {arch}, sm_{sm}: of torch {release}'s builds only {names} have kernels for it"),
    N_("{gpu} (compute capability {cc}, {arch})"),
    N_("unset"),
    # the most general last: the first template that matches wins
    N_("{label}: CUDA {cuda}"),
    N_("{label}: install the NVIDIA driver"),
    N_("{label} ({note}): add to {file}"),
    N_("{label} ({note})"),
)

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_ONE_PART = frozenset({"path", "version"})  # never span a "; " between parts of a list


@cache
def _compiled() -> tuple[tuple[re.Pattern[str], str], ...]:
    out = []
    for template in TEMPLATES + LABELS:
        pattern, pos = "", 0
        for m in _PLACEHOLDER.finditer(template):
            value = "[^;]+?" if m.group(1) in _ONE_PART else ".+?"
            pattern += re.escape(template[pos : m.start()]) + f"(?P<{m.group(1)}>{value})"
            pos = m.end()
        pattern += re.escape(template[pos:])
        out.append((re.compile(pattern, re.DOTALL), template))
    return tuple(out)


def match(title: str) -> tuple[str, dict[str, str]] | None:
    """The template `title` was built from, and the values of its placeholders."""
    for pattern, template in _compiled():
        m = pattern.fullmatch(title)
        if m:
            return template, m.groupdict()
    return None
