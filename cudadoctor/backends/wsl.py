"""WSL: which version, the Windows driver's libraries in /usr/lib/wsl/lib, and what inside the Linux
distribution shadows them (a Linux NVIDIA driver, a `cuda-drivers` package, a stray libcuda copy).

Sources: NVIDIA "CUDA on WSL User Guide" (the Windows driver provides libcuda in /usr/lib/wsl/lib;
never install a Linux driver inside WSL); microsoft/WSL#11755; the driver store path
/usr/lib/wsl/drivers/nv_disp*.inf_amd64_*/ as nvidia-container-toolkit PR #1890 shows it.
"""

from __future__ import annotations

import re

from cudadoctor.backends.hostfs import Host
from cudadoctor.facts.platform import WslFacts

WSL_LIB = "/usr/lib/wsl/lib"
WSL_DRIVERS = "/usr/lib/wsl/drivers"
# The driver's own libraries: a copy of these outside /usr/lib/wsl is loaded instead of the real one.
_DRIVER_LIBS = re.compile(r"^(libcuda\.so|libnvidia-ml\.so)(\.\d.*)?$")
# Where a Linux driver package or a .run installer puts its libraries.
LIB_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
)
# Packages that install a Linux driver (or its libcuda) inside WSL and break it.
_DRIVER_PACKAGE = re.compile(
    r"^(nvidia-driver-\d+.*|nvidia-dkms-\d+.*|nvidia-kernel-.*|libnvidia-compute-\d+|libnvidia-gl-\d+|"
    r"cuda-drivers(-\d+)?|nvidia-driver|nvidia-utils-\d+.*|xserver-xorg-video-nvidia-\d+)$"
)


def wsl_version(host: Host) -> int | None:
    """2, 1, or None when this is not WSL (or unknown)."""
    version = (host.read("/proc/version") or "") + " " + (host.kernel() or "")
    if "microsoft" not in version.lower():
        return None
    if "WSL2" in version or host.exists("/dev/dxg"):
        return 2
    # WSL1's kernel release is Windows' build ("4.4.0-19041-Microsoft") and there is no /dev/dxg
    return 1


def windows_driver_version(inf_text: str) -> str | None:
    """The NVIDIA driver version from a Windows .inf DriverVer (…,32.0.15.6094 → 560.94)."""
    m = re.search(r"DriverVer\s*=\s*[^,\n]*,\s*(\d+)\.(\d+)\.(\d+)\.(\d+)", inf_text)
    if not m:
        return None
    digits = (m.group(3) + m.group(4).zfill(4))[-5:]
    return f"{int(digits[:3])}.{digits[3:]}"


def _windows_driver(host: Host) -> str | None:
    for store in host.listdir(WSL_DRIVERS) or []:
        if not store.lower().startswith("nv"):
            continue
        for name in host.listdir(f"{WSL_DRIVERS}/{store}") or []:
            if name.lower().endswith(".inf"):
                version = windows_driver_version(host.read(f"{WSL_DRIVERS}/{store}/{name}", 1 << 20) or "")
                if version:
                    return version
    return None


def _shadowing(host: Host) -> list[str]:
    out = []
    extra = [d.rstrip("/") for d in (host.environ.get("LD_LIBRARY_PATH") or "").split(":") if d.startswith("/")]
    # the toolkit's link-time stubs are another finding (CD124); /usr/lib/wsl is the real driver
    extra = [d for d in extra if "/wsl/" not in d + "/" and "/stubs" not in d]
    for d in dict.fromkeys([*LIB_DIRS, *extra]):
        for name in host.listdir(d) or []:
            if not _DRIVER_LIBS.match(name):
                continue
            path = f"{d}/{name}"
            target = host.readlink(path)
            if target is not None and "/wsl/" in target:
                continue  # a link to the Windows driver's copy is fine
            out.append(path)
    return out


def installed_packages(host: Host, pattern: re.Pattern[str]) -> list[str] | None:
    """Installed Debian packages whose name matches; None where there is no dpkg database."""
    status = host.read("/var/lib/dpkg/status", 64 << 20)
    if status is None:
        return None
    out = []
    for stanza in status.split("\n\n"):
        name = re.search(r"^Package:\s*(\S+)", stanza, re.MULTILINE)
        state = re.search(r"^Status:\s*(.+)$", stanza, re.MULTILINE)
        if name and state and state.group(1).strip().endswith(" installed") and pattern.match(name.group(1)):
            out.append(name.group(1))
    return sorted(set(out))


def wsl_facts(host: Host) -> WslFacts | None:
    """None when this is not WSL."""
    version = wsl_version(host)
    if version is None:
        return None
    libs = host.listdir(WSL_LIB)
    modules = []
    for k in host.listdir("/lib/modules") or []:  # any kernel's nvidia.ko inside WSL is a Linux driver
        for sub in ("updates/dkms", "kernel/drivers/video", "extra", "updates"):
            for name in host.listdir(f"/lib/modules/{k}/{sub}") or []:
                if name.startswith("nvidia.ko"):
                    modules.append(f"/lib/modules/{k}/{sub}/{name}")
    return WslFacts(
        version=version,
        distro=host.environ.get("WSL_DISTRO_NAME"),
        lib_dir=libs is not None,
        wsl_libs=[n for n in libs if n.startswith(("libcuda", "libnvidia", "libdxcore", "nvidia-smi"))]
        if libs is not None
        else None,
        shadowing_libs=_shadowing(host),
        linux_driver_packages=installed_packages(host, _DRIVER_PACKAGE),
        linux_module_files=modules,
        windows_driver_version=_windows_driver(host),
    )
