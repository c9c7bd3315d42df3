"""The operating system: platform, memory, containers, WSL, /dev/shm, the PCI bus, the CUDA
toolkit on disk, and who owns a process. Read-only, time-bounded where it runs programs."""

from __future__ import annotations

import glob
import os
import platform
import re
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from cudadoctor.backends.child import run_child
from cudadoctor.backends.hostfs import Host
from cudadoctor.backends.procinfo import identity
from cudadoctor.facts import PciDevice, PciFacts, SystemFacts, ToolkitFacts, ToolkitInstall
from cudadoctor.knowledge.secrets import mask_value

NVIDIA_VENDOR = "0x10de"
# PCI class 0x03xxxx is a display controller (VGA 0x0300, 3D 0x0302); NVSwitch bridges are not GPUs.
_GPU_CLASS_PREFIX = "0x03"

SYSFS_PCI = "/sys/bus/pci/devices"

_ENV_PREFIXES = ("CUDA_", "NVIDIA_", "TORCH_", "PYTORCH_", "NCCL_", "CUDNN_", "PIP_", "UV_")
_ENV_NAMES = ("LD_LIBRARY_PATH", "LD_PRELOAD", "PATH", "CONDA_PREFIX", "VIRTUAL_ENV", "OMP_NUM_THREADS")


def relevant_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables that matter here, secrets masked at collection (URL credentials and query tokens
    too: PIP_EXTRA_INDEX_URL=https://host/simple?access_token=…), so no report ever holds one."""
    return {k: mask_value(k, v) for k, v in sorted(environ.items()) if k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES}


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _os_release(host: Host) -> tuple[str | None, str | None]:
    text = host.read("/etc/os-release") or ""
    fields = dict((k, v.strip().strip('"')) for k, _, v in (ln.partition("=") for ln in text.splitlines()) if k)
    return fields.get("PRETTY_NAME"), fields.get("ID")


def _container_hints(environ: Mapping[str, str], host: Host) -> list[str]:
    hints = []
    if host.exists("/.dockerenv"):
        hints.append("/.dockerenv")
    if host.exists("/run/.containerenv"):
        hints.append("/run/.containerenv (podman)")
    cgroup = host.read("/proc/1/cgroup") or ""
    for word in ("docker", "kubepods", "containerd", "lxc"):
        if word in cgroup:
            hints.append(f"/proc/1/cgroup mentions {word}")
            break
    if "KUBERNETES_SERVICE_HOST" in environ:
        hints.append("KUBERNETES_SERVICE_HOST is set")
    if "NVIDIA_VISIBLE_DEVICES" in environ:
        hints.append("NVIDIA_VISIBLE_DEVICES is set")
    return hints


def _shm_total(host: Host) -> int | None:
    try:
        st = os.statvfs(host.path("/dev/shm"))
    except (OSError, AttributeError):
        return None
    return st.f_blocks * st.f_frsize


def _memory_total() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except Exception:  # psutil missing or unsupported platform
        return None


def system_facts(environ: Mapping[str, str], host: Host | None = None) -> SystemFacts:
    """host: the seam for /etc, /proc, /dev and container marks (a fake tree in tests); None: this machine."""
    host = host or Host(environ=environ)
    pretty, os_id = _os_release(host) if sys.platform.startswith("linux") else (None, None)
    if sys.platform == "darwin":
        pretty = f"macOS {platform.mac_ver()[0]}"
    elif sys.platform == "win32":
        pretty = f"Windows {platform.release()} ({platform.version()})"
    kernel = platform.release()
    hints = _container_hints(environ, host) if sys.platform.startswith("linux") else []
    module = host.read("/proc/driver/nvidia/version")
    module_version = None
    if module:
        m = re.search(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)", module)
        module_version = m.group(1) if m else None
    hostname, user = identity()
    return SystemFacts(
        os=platform.system() or sys.platform,
        os_release=pretty,
        os_id=os_id,
        kernel=kernel,
        machine=platform.machine(),
        python_version=platform.python_version(),
        python_executable=sys.executable,
        hostname=hostname,
        user=user,
        cpu_count=os.cpu_count(),
        memory_total=_memory_total(),
        # NVIDIA_VISIBLE_DEVICES alone is a hint, not proof: people set it on hosts too
        in_container=any("NVIDIA_VISIBLE_DEVICES" not in h for h in hints),
        container_hints=hints,
        wsl="microsoft" in kernel.lower() or host.exists("/usr/lib/wsl/lib"),
        shm_total=_shm_total(host) if sys.platform.startswith("linux") else None,
        kernel_module_version=module_version,
        env=relevant_env(environ),
    )


_WINDOWS_QUERY = (
    "Get-CimInstance Win32_VideoController | Select-Object Name,PNPDeviceID,Status | ConvertTo-Json -Compress"
)


def parse_windows_adapters(text: str) -> list[PciDevice]:
    """NVIDIA display adapters from Win32_VideoController as JSON (one object, or a list)."""
    import json

    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return []
    items = data if isinstance(data, list) else [data]
    out = []
    for item in items:
        pnp = str((item or {}).get("PNPDeviceID") or "")
        m = re.search(r"VEN_10DE&DEV_([0-9A-F]{4})", pnp, re.IGNORECASE)
        if m:
            status = (item or {}).get("Status")
            out.append(
                PciDevice(
                    address=pnp, device_id=f"0x{m.group(1).lower()}", kernel_driver=None if status != "OK" else "nvidia"
                )
            )
    return out


def _windows_pci(timeout: float) -> PciFacts:
    res = run_child(["powershell", "-NoProfile", "-NonInteractive", "-Command", _WINDOWS_QUERY], timeout=timeout)
    if not res.ok:
        return PciFacts(scanned=False, method="Win32_VideoController (failed)")
    return PciFacts(scanned=True, nvidia_gpus=parse_windows_adapters(res.stdout), method="Win32_VideoController")


def pci_facts(root: str | None = None, timeout: float = 8.0, host: Host | None = None) -> PciFacts:
    """NVIDIA GPUs on the bus, whatever the driver: Linux sysfs, or Windows' display adapters.

    root: a sysfs PCI devices directory to read instead; host: the seam (a fake tree in tests)."""
    if sys.platform == "win32" and root is None and host is None:
        return _windows_pci(timeout)
    if root is not None:
        host, root = Host(root=root), "/"
    host, root = host or Host(), root or SYSFS_PCI
    devices = host.listdir(root)
    if devices is None:
        return PciFacts(scanned=False)
    gpus = []
    for dev in devices:
        base = f"{root.rstrip('/')}/{dev}"
        if (host.read(f"{base}/vendor") or "").strip() != NVIDIA_VENDOR:
            continue
        cls = (host.read(f"{base}/class") or "").strip()
        if not cls.startswith(_GPU_CLASS_PREFIX):
            continue
        link = host.readlink(f"{base}/driver")
        driver = os.path.basename(link.rstrip("/")) if link else None
        gpus.append(
            PciDevice(
                address=dev,
                device_id=(host.read(f"{base}/device") or "").strip() or None,
                class_code=cls,
                kernel_driver=driver,
            )
        )
    return PciFacts(scanned=True, nvidia_gpus=gpus, method="sysfs")


_TOOLKIT_GLOBS = ("/usr/local/cuda", "/usr/local/cuda-*", "/opt/cuda")


def _toolkit_version(path: str) -> str | None:
    text = _read(os.path.join(path, "version.json"))
    if text:
        m = re.search(r'"cuda"\s*:\s*\{[^}]*"version"\s*:\s*"(\d+\.\d+)', text)
        if m:
            return m.group(1)
    text = _read(os.path.join(path, "version.txt"))
    if text:
        m = re.search(r"(\d+\.\d+)", text)
        if m:
            return m.group(1)
    m = re.search(r"cuda-(\d+\.\d+)$", path)
    if m:
        return m.group(1)
    for info in glob.glob(os.path.join(path, "dist-info", "nvidia_cuda_runtime-*.dist-info")):
        m = re.search(r"runtime-(\d+\.\d+)", info)
        if m:
            return m.group(1)
    return None


def toolkit_facts(environ: Mapping[str, str], timeout: float = 5.0) -> ToolkitFacts:
    facts = ToolkitFacts(cuda_home=environ.get("CUDA_HOME") or environ.get("CUDA_PATH"))
    nvcc = shutil.which("nvcc", path=environ.get("PATH"))
    if nvcc is None and facts.cuda_home:
        candidate = os.path.join(facts.cuda_home, "bin", "nvcc")
        nvcc = candidate if os.access(candidate, os.X_OK) else None
    facts.nvcc_path = nvcc
    if nvcc:
        res = run_child([nvcc, "--version"], timeout=timeout)
        m = re.search(r"release (\d+\.\d+)", res.stdout)
        facts.nvcc_version = m.group(1) if m else None
    seen: set[str] = set()
    seen_libs: set[str] = set()
    roots = [p for g in _TOOLKIT_GLOBS for p in sorted(glob.glob(g))]
    if facts.cuda_home:
        roots.insert(0, facts.cuda_home)
    for path in roots:
        real = os.path.realpath(path)
        if real in seen or not os.path.isdir(real):
            continue
        seen.add(real)
        facts.installs.append(ToolkitInstall(path=path, version=_toolkit_version(real)))
        for lib in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib")):
            for so in sorted(glob.glob(os.path.join(real, lib, "libcudart.so.*"))):
                # lib64 -> lib and targets/… are often the same files under other names
                if os.path.realpath(so) not in seen_libs:
                    seen_libs.add(os.path.realpath(so))
                    facts.libcudart.append(so)
    return facts
