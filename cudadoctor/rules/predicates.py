"""The questions about a machine that several rule modules ask (is this WSL, a Jetson, a container without
its GPU; is there a GPU at all; which package tool): one module, so that no rule module imports another
for them. Pure functions of the facts, like the rules."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.facts.platform import ContainerFacts, WslFacts


def wsl(f: Facts) -> WslFacts | None:
    return f.platform.wsl if f.platform is not None else None


def in_wsl(f: Facts) -> bool:
    """WSL from either probe: the platform facts, or the system probe's older flag."""
    return wsl(f) is not None or bool(f.system and f.system.wsl)


def jetson(f: Facts) -> str | None:
    """The L4T release line when this is a Jetson (an integrated GPU: no PCI device, no NVML)."""
    libs = getattr(f.torch, "libraries", None) if f.torch is not None else None
    return getattr(libs, "jetson", None)


def gpu_presence(f: Facts) -> bool | None:
    """Does this machine have an NVIDIA GPU a driver could use? True/False when a probe answered,
    None when nothing that ran can tell (a timed-out driver probe is not "no GPU")."""
    if jetson(f):
        return True
    d, pci = f.driver, f.pci
    if d is not None and d.init_status == "ok" and d.device_count is not None:
        if d.device_count > 0:
            return True
    if in_wsl(f):
        return None  # WSL2's PCI bus never lists the GPU: the Windows driver owns it
    if pci is not None and pci.scanned:
        return bool(pci.nvidia_gpus)
    if d is not None and d.init_status == "ok" and d.device_count == 0:
        return False
    return None


def driver_with_gpu(f: Facts) -> bool | None:
    """Is an NVIDIA driver driving a GPU here (so a hang may be the driver's)? False only when a probe said
    so: no GPU, or NVML found no driver library or no loaded module. NVML that hung, crashed, or was refused
    is not "no driver": then None."""
    if gpu_presence(f) is False:
        return False
    d = f.driver
    if d is None:
        return None
    if (d.init_status or "").upper() in ("LIBRARY_NOT_FOUND", "DRIVER_NOT_LOADED"):
        return False
    if d.init_status == "ok":
        return bool(d.devices) or bool(d.device_count)
    return None


def family(os_id: str | None) -> str:
    fam = {"pop": "ubuntu", "linuxmint": "ubuntu", "rocky": "rhel", "almalinux": "rhel", "centos": "rhel"}
    fam.update({"ol": "rhel", "manjaro": "arch", "endeavouros": "arch"})
    return fam.get(os_id or "", os_id or "")


def package_tool(f: Facts) -> str:
    """apt, dnf, zypper or pacman, from the distribution's os-release ID (apt when unknown: the Linux
    driver packages are read from the dpkg database, and most WSL distributions are Ubuntu)."""
    fam = family(f.system.os_id if f.system is not None else None)
    if fam in ("fedora", "rhel"):
        return "dnf"
    if fam.startswith(("opensuse", "sles", "suse")):
        return "zypper"
    if fam == "arch":
        return "pacman"
    return "apt"


def container(f: Facts) -> ContainerFacts | None:
    c = f.platform.container if f.platform is not None else None
    return c if c is not None and c.runtime is not None else None


def no_gpu_here(f: Facts) -> bool:
    d = f.driver
    return d is not None and (d.init_status == "LIBRARY_NOT_FOUND" or (d.init_status == "ok" and d.device_count == 0))


def container_root_cause(f: Facts) -> str | None:
    """The finding here that explains "no driver / no GPU in this container" (CD144, CD146: rules/containers.py), for
    driver.py's cause=."""
    c = container(f)
    if c is None or not no_gpu_here(f):
        return None
    if c.visible_devices is not None and c.visible_devices.strip().lower() in ("", "void", "none"):
        return "CD144"
    if c.kubernetes:
        return "CD146"
    return None
