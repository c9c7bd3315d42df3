"""Reading a paste: the formats people paste into issues, each parsed by its own pure module into
partial facts, then merged into one `Facts` where everything the paste does not show stays None.

    read(text) -> Paste(facts, formats)

Formats: torch `collect_env` (any 1.x-2.x) and vLLM's; `accelerate env` / `transformers env`;
`ds_report`; `nvidia-smi` (banner, -L, -q, --query-gpu csv, topo -m); `nvcc --version`; pip / conda
lists; torch, CUDA, NVML, loader and container error texts; a cudadoctor JSON or Markdown report.
Only what is certain is derived: a GPU's compute capability from its name (knowledge/gpu_names.py),
a wheel's CUDA from its `+cuXYZ` tag or its pinned nvidia-cuda-runtime wheel, and a
download.pytorch.org wheel's arch list from the release tables (Linux x86_64 only).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from cudadoctor.backends.paste import (
    collect_env,
    env_reports,
    errors,
    nvcc,
    nvidia_smi,
    packages,
    prose,
    runtime,
    text,
)
from cudadoctor.backends.paste import report as cd_report
from cudadoctor.backends.paste.model import Gpu, Partial
from cudadoctor.facts import (
    CudaDriverFacts,
    DriverFacts,
    Facts,
    NvmlDevice,
    SystemFacts,
    ToolkitFacts,
    TorchDevice,
    TorchFacts,
)
from cudadoctor.facts.paste import PasteFacts, PasteHit, PasteSeen
from cudadoctor.facts.platform import PlatformFacts, WslFacts
from cudadoctor.knowledge.secrets import mask_secrets, mask_value

# How each key is named in the "found in the paste" table.
LABELS = {
    "torch_version": "torch version",
    "torch_cuda": "torch built for CUDA",
    "torch_cuda_built": "torch CUDA build",
    "torch_hip": "torch ROCm build",
    "torch_available": "torch.cuda.is_available()",
    "torch_arch_flags": "torch arch list",
    "torch_kernel_error": "kernel launch error",
    "torch_cudnn_error": "cuDNN error",
    "torch_installed": "torch installed",
    "os": "OS",
    "os_release": "OS release",
    "machine": "machine",
    "kernel": "kernel",
    "python_version": "Python",
    "wsl": "WSL2",
    "in_container": "in a container",
    "container_hint": "container",
    "kernel_module_version": "kernel module",
    "shm_total": "/dev/shm size",
    "driver_version": "NVIDIA driver",
    "driver_cuda": "driver supports CUDA up to",
    "nvml_status": "NVML",
    "nvml_message": "NVML message",
    "nvml_library_version": "NVML library",
    "gpu_count": "GPUs (nvidia-smi)",
    "cuda_init_result": "CUDA initialisation error",
    "libcuda_found": "libcuda found",
    "libcuda_version": "driver's CUDA version (torch)",
    "nvcc_version": "nvcc (toolkit)",
}

# Parsers in priority order: an error text outranks a status line (it is why the person asks), then
# the richest reports first.
_LINE_PARSERS = (
    (collect_env.detect, collect_env.parse),
    (env_reports.detect_hf, env_reports.parse_hf),
    (env_reports.detect_ds, env_reports.parse_ds),
    (nvidia_smi.detect, nvidia_smi.parse),
    (nvcc.detect, nvcc.parse),
    (packages.detect, packages.parse),
)


@dataclass
class Paste:
    facts: Facts
    formats: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        p = self.facts.paste
        return not self.formats and not (p and p.hits)


def read(raw: str) -> Paste:
    """Every format found in `raw`, merged; facts the paste does not show stay None."""
    raw = raw.replace("\r\n", "\n")
    report = cd_report.parse(raw) if cd_report.detect(raw) else None
    if report is not None:
        start, end = report[2]
        raw = raw[:start] + raw[end:]
    all_lines = text.lines(raw)
    one_line = text.joined(all_lines)  # wrapped lines joined: what the error and run-time patterns search
    partials: list[Partial] = [errors.parse(all_lines, one_line)]
    for detect, parse in _LINE_PARSERS:
        if detect(all_lines):
            part = parse(all_lines)
            if not part.empty():
                partials.append(part)
    # what a program printed while it ran, then facts written by hand: the least certain, read last
    ran = runtime.parse(all_lines, one_line)
    if not ran.empty():
        partials.append(ran)
    written = prose.parse(all_lines)
    shown = {k for p in partials for k in p.values}
    # a report's own lines outrank a sentence; torch's build follows from the version shown there
    torch_keys = ("torch_version", "torch_cuda", "torch_cuda_built", "torch_installed")
    written.values = {
        k: v for k, v in written.values.items() if k not in shown and not (k in torch_keys and "torch_version" in shown)
    }
    if any(p.gpus or p.torch_gpus for p in partials):
        written.torch_gpus = []  # a report's GPUs outrank a name in a sentence
        written.hits = [h for h in written.hits if h.kind != "gpu-named"]
    if not written.empty():
        partials.append(written)
    formats = [p.format for p in partials[1:]]
    if partials[0].hits or any(h.kind not in ("gpu-ran", "harmless-warning") for h in ran.hits):
        formats.append("error text")
    elif partials[0].values:
        formats.append("Python prompt output")
    facts = _merge(partials)
    if report is not None:
        base, label, _ = report
        formats.insert(0, label)
        facts = _overlay(base, facts)
        assert facts.paste is not None
        facts.paste.from_report = True
    assert facts.paste is not None
    facts.paste.formats = formats
    return Paste(facts, formats)


def _merge(partials: list[Partial]) -> Facts:
    values: dict[str, Any] = {}
    seen: list[PasteSeen] = []
    for part in partials:
        for key, value in part.values.items():
            if key in values:
                continue
            values[key] = value
            w = part.where.get(key, "")
            shown = mask_secrets(_show(key, value))
            # the line first: it identifies the fact, so a table cut to the terminal's width keeps it
            seen.append(PasteSeen(LABELS.get(key, key), shown, f"{w} of {part.format}" if w else part.format))
    nvml_gpus = next((p.gpus for p in partials if p.gpus and p.format.startswith("nvidia-smi")), None)
    nvml_gpus = nvml_gpus or next((p.gpus for p in partials if p.gpus), [])
    torch_gpus = [g for p in partials for g in p.torch_gpus]
    pkgs: dict[str, str] = {}
    conda: dict[str, tuple[str, str]] = {}
    env: dict[str, str] = {}
    for p in partials:
        for k, v in p.packages.items():
            pkgs.setdefault(k, v)
        for k, c in p.conda.items():
            conda.setdefault(k, c)
        for k, v in p.env.items():
            env.setdefault(k, mask_value(k, v))  # secrets in a paste never reach a report
    hits = [
        PasteHit(h.kind, mask_secrets(h.text), {k: mask_secrets(_str(v)) for k, v in h.detail.items() if v is not None})
        for p in partials
        for h in p.hits
    ]
    paste = PasteFacts(
        seen=seen, hits=hits, packages={**{k: f"{v} ({b})" for k, (v, b) in conda.items()}, **pkgs}, env=env
    )
    _derive(values, pkgs, conda, paste)
    facts = Facts(paste=paste)
    facts.system = _system(values, env)
    facts.driver = _driver(values, nvml_gpus, paste)
    facts.cuda_driver = _cuda_driver(values)
    facts.toolkit = (
        ToolkitFacts(nvcc_path="nvcc", nvcc_version=values["nvcc_version"]) if "nvcc_version" in values else None
    )
    facts.torch = _torch(values, torch_gpus, pkgs, paste)
    facts.platform = _platform(paste)
    return facts


def _platform(paste: PasteFacts) -> PlatformFacts | None:
    """WSL1, and a Linux driver installed inside WSL, as the paste shows them."""
    if not any(h.kind == "wsl1" for h in paste.hits):
        return None
    drivers = [h.detail["package"] for h in paste.hits if h.kind == "linux-driver-install" and "package" in h.detail]
    return PlatformFacts(wsl=WslFacts(version=1, linux_driver_packages=drivers or None))


def _derive(values: dict[str, Any], pkgs: dict[str, str], conda: dict[str, tuple[str, str]], paste: PasteFacts) -> None:
    """What the versions make certain and the paste did not print outright."""
    from cudadoctor.knowledge import wheels

    version = values.get("torch_version")
    if isinstance(version, str) and "torch_cuda_built" not in values:
        m = re.search(r"\+cu(\d{2,3})$", version)
        if m:
            d = m.group(1)
            values["torch_cuda_built"], values["torch_cuda"] = True, f"{int(d[:-1])}.{d[-1]}"
            paste.derived.append(
                PasteSeen("torch built for CUDA", values["torch_cuda"], f"the +cu{d} tag of {version}")
            )
        elif version.endswith("+cpu"):
            values["torch_cuda_built"] = False
            paste.derived.append(PasteSeen("torch CUDA build", "no (CPU-only)", f"the +cpu tag of {version}"))
    if values.get("torch_available") is True and "torch_cuda_built" not in values:
        # a CPU-only build's is_available() is always False: True says the build has CUDA (or ROCm's HIP)
        values["torch_cuda_built"] = True
        paste.derived.append(PasteSeen("torch CUDA build", "yes", "torch.cuda.is_available() is True"))
    runtime = next((v for k, v in pkgs.items() if re.fullmatch(r"nvidia-cuda-runtime(-cu\d+)?", k)), None)
    if "torch_cuda_built" not in values and "torch" in pkgs and runtime and "pytorch" not in conda:
        cuda = text.major_minor(runtime)
        if cuda:
            values["torch_cuda_built"], values["torch_cuda"] = True, cuda
            paste.derived.append(
                PasteSeen(
                    "torch built for CUDA", cuda, f"nvidia-cuda-runtime {runtime}, the CUDA runtime a PyPI torch pins"
                )
            )
    # download.pytorch.org wheels (+cuXYZ) have the arch lists of the release tables (Linux x86_64)
    if (
        "torch_arch_flags" not in values
        and isinstance(version, str)
        and re.search(r"\+cu\d{2,3}$", version)
        and values.get("os") == "Linux"
        and values.get("machine") == "x86_64"
    ):
        release = wheels.release_of(version)
        variant = version.rsplit("+", 1)[1]
        arch = wheels.RELEASES.get(release or "", {}).get(variant)
        if arch:
            values["torch_arch_flags"] = list(wheels.arch_list_to_flags(arch))
            paste.derived.append(
                PasteSeen(
                    "torch arch list", " ".join(values["torch_arch_flags"]), f"torch {release} {variant} (Linux x86_64)"
                )
            )


def _system(values: dict[str, Any], env: dict[str, str]) -> SystemFacts | None:
    keys = (
        "os",
        "os_release",
        "machine",
        "kernel",
        "python_version",
        "wsl",
        "in_container",
        "kernel_module_version",
        "shm_total",
    )
    if not any(k in values for k in keys) and not env:
        return None
    os_name = values.get("os") or ("Linux" if values.get("wsl") or values.get("kernel_module_version") else "unknown")
    return SystemFacts(
        os=os_name,
        os_release=values.get("os_release"),
        machine=values.get("machine"),
        kernel=values.get("kernel"),
        python_version=values.get("python_version"),
        wsl=values.get("wsl"),
        in_container=values.get("in_container"),
        container_hints=[values["container_hint"]] if values.get("container_hint") else [],
        kernel_module_version=values.get("kernel_module_version"),
        shm_total=values.get("shm_total"),
        env=dict(env) if env else None,
    )


def _driver(values: dict[str, Any], gpus: list[Gpu], paste: PasteFacts) -> DriverFacts | None:
    from cudadoctor.knowledge import gpu_names

    status = values.get("nvml_status")
    if status is None and "driver_version" not in values and not gpus:
        return None
    status = status or "ok"
    devices = []
    for n, g in enumerate(gpus):
        cc = g.capability
        if cc is None and g.name:
            model = gpu_names.lookup(g.name)
            if model:
                cc = model.cc
                paste.derived.append(
                    PasteSeen(
                        f"GPU {g.index if g.index is not None else n} capability", cc, f"{g.name}: {model.family}"
                    )
                )
        devices.append(
            NvmlDevice(
                index=g.index if g.index is not None else n,
                name=g.name,
                uuid=g.uuid,
                pci_bus_id=g.bus_id,
                compute_capability=cc,
                memory_total=g.memory_total,
                memory_used=g.memory_used,
                memory_free=g.memory_total - g.memory_used
                if g.memory_total is not None and g.memory_used is not None
                else None,
                mig_enabled=g.mig,
            )
        )
    count = values.get("gpu_count")
    if status == "ok" and count is None and devices:
        count = len(devices)
    return DriverFacts(
        binding=None,
        library_loaded=status != "LIBRARY_NOT_FOUND",
        init_status=status,
        init_message=values.get("nvml_message"),
        library_version=values.get("nvml_library_version"),
        driver_version=values.get("driver_version"),
        cuda_driver_version=values.get("driver_cuda") if status == "ok" else None,
        device_count=count if status == "ok" else None,
        devices=devices if status == "ok" else [],
    )


def _cuda_driver(values: dict[str, Any]) -> CudaDriverFacts | None:
    from cudadoctor.knowledge.cuda_errors import CU_INIT_ERRORS

    result = values.get("cuda_init_result")
    if values.get("libcuda_found") is False:
        return CudaDriverFacts(library_found=False, load_error="the paste: torch found no NVIDIA driver library")
    if result is None:
        return None
    return CudaDriverFacts(
        library_found=True,
        init_result=result,
        init_error_name=CU_INIT_ERRORS.get(result, (None, ""))[0],
    )


def _torch(values: dict[str, Any], gpus: list[Gpu], pkgs: dict[str, str], paste: PasteFacts) -> TorchFacts | None:
    installed = values.get("torch_installed")
    if installed is None and "torch_version" not in values:
        return None
    if installed is False:
        return TorchFacts(python_executable="python", installed=False)
    built = values.get("torch_cuda_built")
    devices = [
        TorchDevice(index=g.index if g.index is not None else n, name=g.name, capability=g.capability)
        for n, g in enumerate(gpus)
    ]
    return TorchFacts(
        python_executable="python",
        installed=True,
        version=values.get("torch_version"),
        cuda=values.get("torch_cuda") if built else None,
        hip=values.get("torch_hip"),
        cuda_built=built if values.get("torch_hip") is None else False,
        arch_flags=values.get("torch_arch_flags") if built else None,
        is_available=values.get("torch_available"),
        devices=devices,
        kernel_error=values.get("torch_kernel_error"),
        cudnn_error=values.get("torch_cudnn_error"),
        torchvision=pkgs.get("torchvision"),
        torchaudio=pkgs.get("torchaudio"),
    )


def _overlay(base: Facts, extra: Facts) -> Facts:
    """A pasted cudadoctor report's facts, with the paste's own facts only where the report has none."""
    for f in dataclasses.fields(Facts):
        if getattr(base, f.name) is None:
            setattr(base, f.name, getattr(extra, f.name))
    return base


def _show(key: str, value: Any) -> str:
    if key in ("driver_cuda", "libcuda_version") and isinstance(value, int):
        return f"{value // 1000}.{(value % 1000) // 10} ({value})"
    if key == "shm_total" and isinstance(value, int):
        from cudadoctor.knowledge.units import format_size

        return format_size(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value)


def _str(value: Any) -> str:
    return " ".join(str(v) for v in value) if isinstance(value, list) else str(value)


__all__ = ["Paste", "read"]
