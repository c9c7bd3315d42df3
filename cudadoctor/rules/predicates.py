"""The questions about a machine that several rule modules ask (is this WSL, a Jetson, a container without
its GPU; is there a GPU at all; which package tool; why the kernel module is not loaded; which finding of
another module is the cause of one's own), and the few message parts they share: one module, so that no
rule module imports another for them. Pure functions of the facts, like the rules."""

from __future__ import annotations

import re
from dataclasses import dataclass

from cudadoctor.facts import Facts
from cudadoctor.facts.platform import ContainerFacts, DeviceNode, KernelModuleFacts, ModuleBuild, WslFacts
from cudadoctor.knowledge.architectures import last_driver_branch
from cudadoctor.knowledge.driver_install import SOURCES, TURING_FIRST_PCI_ID, pre_turing_pci
from cudadoctor.knowledge.gpu_health import COMPUTE_EXCLUSIVE_PROCESS, COMPUTE_EXCLUSIVE_THREAD, COMPUTE_PROHIBITED
from cudadoctor.knowledge.visibility import Visibility, from_env
from cudadoctor.model import Fix, Message, msg
from cudadoctor.rules.catalogue import fix


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


def visibility(f: Facts) -> Visibility | None:
    """Which GPUs CUDA programs started here see: the one helper every rule uses. None when the driver's
    devices or the environment (the system probe) are unknown."""
    if f.driver is None or f.driver.init_status != "ok" or not f.driver.devices:
        return None
    return from_env(f.system.env if f.system is not None else None, f.driver.devices)


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


# compute modes in which a second process (or any) gets CUDA_ERROR_DEVICE_UNAVAILABLE
LIMITED_COMPUTE_MODES = (COMPUTE_EXCLUSIVE_PROCESS, COMPUTE_EXCLUSIVE_THREAD, COMPUTE_PROHIBITED)


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


def capabilities_cause(f: Facts) -> str | None:
    """CD145 (rules/containers.py) when libcuda is missing because NVIDIA_DRIVER_CAPABILITIES leaves out
    compute (for cuda_driver.py's cause=)."""
    c = container(f)
    if c is None or c.driver_capabilities is None:
        return None
    caps = {w.strip().lower() for w in c.driver_capabilities.split(",") if w.strip()}
    return None if "compute" in caps or "all" in caps else "CD145"


def compute_mode_cause(f: Facts) -> str | None:
    """CD155 (rules/health.py) when a GPU's compute mode explains CUDA_ERROR_DEVICE_UNAVAILABLE."""
    d = f.driver
    if d is None or d.init_status != "ok":
        return None
    return "CD155" if any(dev.compute_mode in LIMITED_COMPUTE_MODES and not dev.error for dev in d.devices) else None


# --- WSL (rules/wsl.py) ------------------------------------------------------------------------------


def wsl_root_cause(f: Facts) -> str | None:
    """The WSL finding (rules/wsl.py) that explains a driver failure, for driver.py's and cuda_driver.py's
    cause=."""
    w = wsl(f)
    if w is None:
        return None
    if w.version == 1:
        return "CD112"
    if w.linux_driver_packages or w.linux_module_files:
        return "CD113"
    if w.shadowing_libs:
        return "CD114"
    if f.driver is not None and f.driver.init_status == "OPERATING_SYSTEM":
        return "CD115"
    return None


# --- the kernel module (rules/kernel_module.py): why it is not loaded or not usable, Linux hosts only -----


def module(f: Facts) -> KernelModuleFacts | None:
    p = f.platform
    if p is None or p.wsl is not None:  # never module advice inside WSL
        return None
    return p.module


def running_builds(m: KernelModuleFacts) -> list[ModuleBuild]:
    return [b for b in (m.builds or []) if b.kernel == m.kernel]


def driver_unloaded(f: Facts) -> bool:
    """NVML says the module is not loaded, or the module facts say so while the libraries are installed."""
    d, m = f.driver, module(f)
    if d is not None and d.init_status == "DRIVER_NOT_LOADED":
        return True
    return m is not None and m.loaded is False and d is not None and d.init_status not in ("LIBRARY_NOT_FOUND", "ok")


SECURE_BOOT_HINTS = ("Key was rejected", "unsigned module loading is restricted", "Required key not available")


def secure_boot_blocks(m: KernelModuleFacts) -> bool:
    if not m.secure_boot:
        return False
    if any(h in line for line in m.kernel_log_lines for h in SECURE_BOOT_HINTS):
        return True
    builds = running_builds(m)
    return bool(builds) and all(b.signed is False for b in builds)


def nouveau_blocks(f: Facts, m: KernelModuleFacts) -> bool:
    bound = f.pci is not None and any(g.kernel_driver == "nouveau" for g in f.pci.nvidia_gpus)
    return bound or bool(m.nouveau_loaded and not m.loaded)


def not_built(m: KernelModuleFacts) -> bool:
    if m.kernel is None or m.builds is None or running_builds(m):
        return False
    return bool(m.builds) or any(kernels for kernels in (m.dkms or {}).values())


# The driver's kernel log when its branch no longer drives a GPU, wrapped over several lines: "NVRM: The
# NVIDIA GeForce GT 1030 GPU installed in this system is / NVRM:  supported through the NVIDIA 580.xx Legacy
# drivers. Please / … The 595.71.05 NVIDIA driver will ignore this GPU" (NixOS/nixos-hardware#1880; the same
# words since the 173.14.xx and 304.xx legacy branches).
_LEGACY_LINE = re.compile(r"supported through the NVIDIA (\d+)\.xx Legacy drivers")
_IGNORING_DRIVER = re.compile(r"The (\d+\.\d+(?:\.\d+)?) NVIDIA driver will ignore")
# "(PCI ID: 10de:1d81)" in the driver's messages about one GPU
_LOG_PCI_ID = re.compile(r"PCI ID: 10de:([0-9a-fA-F]{4})")


@dataclass(frozen=True)
class DroppedGpu:
    """The driver's own word that its branch no longer drives a GPU here: the GPU's last branch, the
    ignoring driver's version (None: not in the log), the log line that says so."""

    branch: int
    driver: str | None
    line: str


def dropped_gpu(m: KernelModuleFacts) -> DroppedGpu | None:
    for i, line in enumerate(m.kernel_log_lines):
        found = _LEGACY_LINE.search(line)
        if found is None:
            continue
        near = " ".join(m.kernel_log_lines[i : i + 3])
        version = _IGNORING_DRIVER.search(near)
        return DroppedGpu(int(found[1]), version[1] if version else None, line)
    return None


@dataclass(frozen=True)
class NeededFlavour:
    """The kernel module flavour a GPU here needs ("open", "proprietary") and how that is known: the kernel
    log line that says so (`line`), or else a GPU's PCI device ID (`pci_id`) against the flavour built."""

    want: str
    line: str | None = None
    pci_id: int | None = None


def needed_flavour(f: Facts, m: KernelModuleFacts) -> NeededFlavour | None:
    """When the kernel log or the GPU says the other flavour is needed (a GPU its branch ignores is not a
    flavour question: dropped_gpu)."""
    for line in m.kernel_log_lines:
        if "requires use of the NVIDIA open kernel modules" in line:
            return NeededFlavour("open", line=line)
        if "not supported by open nvidia.ko" in line or "GPU System Processor" in line:
            return NeededFlavour("proprietary", line=line)
    # without the log: the flavour built for this kernel against the GPUs' PCI device IDs
    flavours = {b.flavour for b in running_builds(m) if b.flavour}
    ids = [i for i in (_device_id(g.device_id) for g in (f.pci.nvidia_gpus if f.pci is not None else [])) if i]
    if flavours == {"proprietary"} and any(i >= BLACKWELL_FIRST_ID for i in ids):
        return NeededFlavour("open", pci_id=max(ids))
    if flavours == {"open"} and any(i < TURING_FIRST_PCI_ID for i in ids):
        return NeededFlavour("proprietary", pci_id=min(ids))
    return None


# PCI device IDs (❓ inferred from NVIDIA's PCI ID lists, not a published rule): GB100 starts at 0x2900 and
# every Blackwell chip after it is higher (Turing's first: knowledge/driver_install.TURING_FIRST_PCI_ID).
BLACKWELL_FIRST_ID = 0x2900


def _device_id(text: str | None) -> int | None:
    try:
        return int(text, 16) if text else None
    except ValueError:
        return None


def legacy_gpu(f: Facts) -> bool | int:
    """The last driver branch of a GPU here that newer drivers ignore (Kepler: 470; Maxwell, Pascal, Volta:
    580; knowledge/architectures.py) by its compute capability; True by its PCI device ID (the PCI bus's, or
    one the kernel log names) when NVML cannot tell (older than Turing). False for Turing and newer, and when
    nothing tells."""
    d = f.driver
    if d is not None and (
        limits := [b for dev in d.devices or [] if (b := last_driver_branch(dev.compute_capability))]
    ):
        return min(limits)
    ids = [g.device_id for g in f.pci.nvidia_gpus] if f.pci is not None else []
    m = module(f)
    ids += [found[1] for line in (m.kernel_log_lines if m is not None else []) for found in _LOG_PCI_ID.finditer(line)]
    return pre_turing_pci(ids)


def module_causes(f: Facts) -> list[tuple[str, bool]]:
    """Why the module is not loaded, in the order a cause is named: (code in rules/kernel_module.py, found)."""
    m = module(f)
    if m is None or not driver_unloaded(f):
        return []
    return [
        ("CD117", secure_boot_blocks(m)),
        ("CD118", nouveau_blocks(f, m)),
        ("CD116", dropped_gpu(m) is not None),
        ("CD126", needed_flavour(f, m) is not None),
        ("CD119", not_built(m)),
    ]


def module_root_cause(f: Facts) -> str | None:
    """The code of the kernel-module finding that explains "module not loaded" (for CD102's cause=)."""
    return next((code for code, found in module_causes(f) if found), None)


def ruled_out(f: Facts) -> list[str]:
    """For CD102 without a found cause, what the facts exclude: "secure-boot-off", "built-for-kernel",
    "nouveau-not-loaded"."""
    m = module(f)
    if m is None:
        return []
    out = []
    if m.secure_boot is False:
        out.append("secure-boot-off")
    if running_builds(m):
        out.append("built-for-kernel")
    if m.nouveau_loaded is False:
        out.append("nouveau-not-loaded")
    return out


def mismatch(f: Facts) -> tuple[str, dict[str, object]] | None:
    """Which "version mismatch": ("loaded-older", versions) — a reboot or reload fixes it — or ("on-disk",
    versions) — the module for this kernel and the libraries on disk differ; None: cannot tell. `versions`:
    "loaded" (str or None), "disk" and "libraries" (lists)."""
    m = module(f)
    if m is None:
        return None
    libs = m.library_versions or []
    if f.driver is not None and f.driver.library_version:
        libs = sorted(set(libs) | {f.driver.library_version})
    disk = sorted({b.version for b in running_builds(m) if b.version})
    versions: dict[str, object] = {"loaded": m.loaded_version, "disk": disk, "libraries": libs}
    if not disk or not libs:
        return None
    if set(disk) != set(libs) or len(libs) > 1:
        return "on-disk", versions
    if m.loaded_version and m.loaded_version not in libs:
        return "loaded-older", versions
    return None


def device_node_problems(f: Facts) -> tuple[list[DeviceNode], list[DeviceNode]] | None:
    """(missing, closed) /dev/nvidia* nodes that stand in CUDA's way; None when none do or it is unknown."""
    m = module(f)
    if m is None or m.device_nodes is None or not m.loaded:
        return None
    d, c = f.driver, f.cuda_driver
    if d is not None and d.init_status == "ok" and c is not None and c.init_result == 0:
        return None  # CUDA works: whatever a node says, it is not in the way
    cuda_failed = c is not None and c.init_result not in (0, None)  # a timed-out cuInit has not failed
    in_container = container(f) is not None
    needed = [n for n in m.device_nodes if not n.path.endswith(("-tools", "-modeset"))]  # CUDA opens only these
    closed = [n for n in needed if n.exists and n.accessible is False]
    # nvidia-modprobe creates missing nodes on first use on a host: missing ones matter only when CUDA is known
    # to have failed, or in a container (nothing creates them there); /dev/nvidia-uvm only when CUDA is known to
    # have failed, as it is normally created on first use
    missing = [
        n for n in needed if not n.exists and (cuda_failed or (in_container and not n.path.endswith("nvidia-uvm")))
    ]
    return (missing, closed) if missing or closed else None


def nodes_cause(f: Facts) -> str | None:
    """CD127 when closed or missing /dev/nvidia* nodes explain NVML's NO_PERMISSION (for driver.py)."""
    return "CD127" if device_node_problems(f) is not None else None


def fabric_manager_trouble(f: Facts) -> tuple[str | None, str | None, str | None] | None:
    """On an NVSwitch system whose fabric manager is not running, or not of the driver's version: (its state
    when not active, its version when it differs, the driver's version); None otherwise or unknown."""
    m = module(f)
    if m is None or not m.nvswitch_count:
        return None
    driver = f.driver.driver_version if f.driver and f.driver.init_status == "ok" else m.loaded_version
    state, version = m.fabric_manager, m.fabric_manager_version
    wrong_version = version is not None and driver is not None and version != driver
    if (state == "active" or state is None) and not wrong_version:
        return None  # running, or systemd could not be asked: unknown
    return (state if state not in (None, "active") else None, version if wrong_version else None, driver)


def module_versions(versions: dict[str, object]) -> Message:
    """ "loaded module 535.183.01; module on disk 550.120; libraries 550.120" (mismatch's versions), for the
    titles of CD103 (rules/driver.py) and CD128 (rules/kernel_module.py)."""
    parts = []
    if versions.get("loaded"):
        parts.append(msg("loaded module {version}", version=versions["loaded"]))
    if versions.get("disk"):
        parts.append(msg("module on disk {versions}", versions=", ".join(versions["disk"])))  # type: ignore[arg-type]
    if versions.get("libraries"):
        parts.append(msg("libraries {versions}", versions=", ".join(versions["libraries"])))  # type: ignore[arg-type]
    return joined(parts)


# --- composing the messages several rule modules raise --------------------------------------------------


def joined(parts: list[Message] | list[str], sep: str = "; ") -> Message:
    """Parts of a title or page as one message, each translated in turn: "a; b; c", "a, b, c" (sep ", ") or
    sentences "a b c" (sep " "). A template per separator, so that a translation chooses its own."""
    if not parts:
        return msg("{text}", text="")
    out = parts[-1] if isinstance(parts[-1], Message) else msg("{text}", text=parts[-1])
    for part in reversed(parts[:-1]):
        if sep == ", ":
            out = msg("{first}, {rest}", first=part, rest=out)
        elif sep == " ":
            out = msg("{first} {rest}", first=part, rest=out)
        else:
            out = msg("{first}; {rest}", first=part, rest=out)
    return out


# --- fixes several rule modules (and rules/paste/) give -------------------------------------------------

CONTAINER_FIX = [
    fix(
        "Docker: pass the GPUs in (needs the NVIDIA Container Toolkit on the host)",
        "docker run --gpus all --rm IMAGE nvidia-smi",
    ),
    fix(
        "On the host, once: install and register the NVIDIA Container Toolkit",
        "sudo apt-get install -y nvidia-container-toolkit",
        "sudo nvidia-ctk runtime configure --runtime=docker",
        "sudo systemctl restart docker",
    ),
    fix("Kubernetes: request a GPU in the pod spec", "resources: {limits: {nvidia.com/gpu: 1}}"),
]
WSL_FIX = [
    fix(
        "Install the NVIDIA driver on Windows (not inside WSL), then restart WSL from Windows",
        f"start {SOURCES['generic']}",
        "wsl --shutdown",
    ),
    fix(
        "Never install a Linux NVIDIA driver inside WSL; remove one if present",
        "sudo apt-get remove --purge '^nvidia-driver-.*' '^libnvidia-.*'",
    ),
]


def windows_fixes() -> list[Fix]:
    """The WSL2 fixes, all on the Windows side (the Windows driver brings CUDA to WSL2)."""
    return [
        fix(
            "On Windows (not inside WSL): install or update the NVIDIA driver, update WSL, restart it",
            f"start {SOURCES['generic']}",
            "wsl --update",
            "wsl --shutdown",
        ),
        fix("Inside WSL afterwards: the Windows driver's libraries must be here", "ls -l /usr/lib/wsl/lib/"),
    ]
