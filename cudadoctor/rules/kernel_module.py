"""Why the NVIDIA kernel module is not loaded or not usable (Linux hosts, never WSL): Secure Boot with an
unsigned module, nouveau holding the GPU, no module built for the running kernel, the open vs proprietary
flavour a GPU needs, /dev/nvidia* nodes missing or closed to this user, the fabric manager on NVSwitch
systems, and which of the two "version mismatch" shapes this is.

Each finding here is a root cause; rules/driver.py's CD102/CD103/CD104 point at it with `cause=`.

Sources: cuda-facts §9 (Secure Boot "Key was rejected by service" — lcp/mokutil#61; nouveau; DKMS after
a kernel upgrade — gpustat#110; mismatch shapes — tinygrad/open-gpu-kernel-modules#47; fabric manager —
pytorch#35710). Open modules: NVIDIA driver README "Using the open GPU kernel modules" — Turing and later
only, and Blackwell GPUs require them (the kernel log says "requires use of the NVIDIA open kernel modules").
"""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.facts.platform import KernelModuleFacts
from cudadoctor.knowledge.driver_install import LEGACY_BRANCH
from cudadoctor.model import Finding, Fix, Severity, Table, plural
from cudadoctor.rules.catalogue import entry, fix
from cudadoctor.rules.predicates import family

SECURE_BOOT = entry(
    "CD117",
    "secure-boot-unsigned-module",
    Severity.ERROR,
    "Driver",
    "Secure Boot refuses the unsigned NVIDIA kernel module",
    """Secure Boot is on, so the kernel loads only modules signed with a key the firmware trusts. The
    nvidia module built on this machine (DKMS, akmods or the .run installer) is not signed with an
    enrolled key, so `modprobe nvidia` fails with "Key was rejected by service" and no CUDA program can
    start. Enrol the key the module was signed with (a Machine Owner Key, MOK) or turn Secure Boot off.""",
)
NOUVEAU = entry(
    "CD118",
    "nouveau-holds-gpu",
    Severity.ERROR,
    "Driver",
    "nouveau, the open-source driver, holds the GPU",
    """The nouveau kernel driver is loaded and bound to the NVIDIA GPU, so the NVIDIA module cannot
    take it. nouveau has no CUDA. Blacklist nouveau, rebuild the initramfs (it loads nouveau early) and
    reboot.""",
)
NOT_BUILT = entry(
    "CD119",
    "module-not-built-for-kernel",
    Severity.ERROR,
    "Driver",
    "No NVIDIA kernel module for the running kernel",
    """The NVIDIA module is built per kernel. The kernel was upgraded and the module was not rebuilt for
    it (DKMS failed, the headers were missing, or the driver came from a .run installer that does not
    rebuild), so after the reboot there is no nvidia.ko to load.""",
)
FLAVOUR = entry(
    "CD126",
    "module-flavour-mismatch",
    Severity.ERROR,
    "Driver",
    "The GPU needs the other NVIDIA kernel module flavour (open vs proprietary)",
    """NVIDIA ships two kernel modules: the open one (Turing and newer only; required by Blackwell) and
    the proprietary one (needed by Maxwell, Pascal and Volta). With the wrong one the module loads but
    refuses the GPU.""",
)
DEVICE_NODES = entry(
    "CD127",
    "device-nodes",
    Severity.ERROR,
    "Driver",
    "/dev/nvidia* device nodes are missing or closed to this user",
    """CUDA talks to the driver through /dev/nvidiactl, /dev/nvidia0… and /dev/nvidia-uvm. When they are
    missing (a container started without them, nvidia-uvm not loaded) or this user may not open them
    (group, mode), CUDA fails although the module is loaded.""",
)
ON_DISK_MISMATCH = entry(
    "CD128",
    "driver-packages-mismatch",
    Severity.ERROR,
    "Driver",
    "Driver packages differ on disk: kernel module and libraries are different versions",
    """The kernel module installed for this kernel and the user-space libraries on disk are different
    driver versions (a partial upgrade, packages from two sources, or a .run installer over packages).
    A reboot will not help (it loads the same mismatched module again): install matching packages.""",
)
FABRIC_MANAGER = entry(
    "CD143",
    "fabric-manager",
    Severity.ERROR,
    "Driver",
    "NVSwitch system without a running fabric manager of the driver's version",
    """On NVSwitch systems (HGX/DGX A100, H100, H200) CUDA cannot start until nvidia-fabricmanager has
    configured the switches, and it must be exactly the driver's version. Until then cuInit fails with
    CUDA_ERROR_SYSTEM_NOT_READY (802).""",
)

_SB_HINTS = ("Key was rejected", "unsigned module loading is restricted", "Required key not available")


def _module(f: Facts) -> KernelModuleFacts | None:
    p = f.platform
    if p is None or p.wsl is not None:  # never module advice inside WSL
        return None
    return p.module


def _branch(version: str | None) -> str:
    return version.split(".")[0] if version else "BRANCH"


def driver_unloaded(f: Facts) -> bool:
    """NVML says the module is not loaded, or the module facts say so while the libraries are installed."""
    d, m = f.driver, _module(f)
    if d is not None and d.init_status == "DRIVER_NOT_LOADED":
        return True
    return m is not None and m.loaded is False and d is not None and d.init_status not in ("LIBRARY_NOT_FOUND", "ok")


def root_cause(f: Facts) -> str | None:
    """The code of the finding here that explains "module not loaded" (for CD102's cause=)."""
    for code, found in _causes(f):
        if found:
            return code
    return None


def _running_builds(m: KernelModuleFacts):
    return [b for b in (m.builds or []) if b.kernel == m.kernel]


def _secure_boot_blocks(f: Facts, m: KernelModuleFacts) -> bool:
    if not m.secure_boot:
        return False
    if any(h in line for line in m.kernel_log_lines for h in _SB_HINTS):
        return True
    builds = _running_builds(m)
    return bool(builds) and all(b.signed is False for b in builds)


def _nouveau_blocks(f: Facts, m: KernelModuleFacts) -> bool:
    bound = f.pci is not None and any(g.kernel_driver == "nouveau" for g in f.pci.nvidia_gpus)
    return bound or bool(m.nouveau_loaded and not m.loaded)


def _not_built(m: KernelModuleFacts) -> bool:
    if m.kernel is None or m.builds is None:
        return False
    if _running_builds(m):
        return False
    built_elsewhere = bool(m.builds) or any(kernels for kernels in (m.dkms or {}).values())
    return built_elsewhere


def _needed_flavour(f: Facts, m: KernelModuleFacts) -> tuple[str, str] | None:
    """(needed, why) when the kernel log or the GPU says the other flavour is needed."""
    for line in m.kernel_log_lines:
        if "requires use of the NVIDIA open kernel modules" in line:
            return "open", f'The kernel log says: "{line[-160:]}".'
        if "not supported by open nvidia.ko" in line or "GPU System Processor" in line:
            return "proprietary", f'The kernel log says: "{line[-160:]}".'
        # a 590+ driver on Maxwell/Pascal/Volta: "… supported through the NVIDIA 580.xx Legacy drivers …
        # The 595.71.05 NVIDIA driver will ignore this GPU" (NixOS/nixos-hardware#1880): its last branch
        if "Legacy drivers" in line or "will ignore this GPU" in line:
            return "proprietary", f'The kernel log says: "{line[-160:]}".'
    # without the log: the flavour built for this kernel against the GPUs' PCI device IDs
    flavours = {b.flavour for b in _running_builds(m) if b.flavour}
    ids = [_device_id(g.device_id) for g in (f.pci.nvidia_gpus if f.pci is not None else [])]
    ids = [i for i in ids if i is not None]
    if flavours == {"proprietary"} and any(i >= BLACKWELL_FIRST_ID for i in ids):
        newest = max(ids)
        return "open", f"Judging by its PCI device ID 0x{newest:04x}, the GPU is Blackwell or newer."
    if flavours == {"open"} and any(i < TURING_FIRST_ID for i in ids):
        oldest = min(ids)
        return "proprietary", f"Judging by its PCI device ID 0x{oldest:04x}, the GPU is older than Turing."
    return None


# PCI device IDs (❓ inferred from NVIDIA's PCI ID lists, not a published rule): Turing's first chips are
# 0x1e02 (TU102) and later; GB100 starts at 0x2900 and every Blackwell chip after it is higher.
TURING_FIRST_ID = 0x1E00
BLACKWELL_FIRST_ID = 0x2900


def _device_id(text: str | None) -> int | None:
    try:
        return int(text, 16) if text else None
    except ValueError:
        return None


def _causes(f: Facts) -> list[tuple[str, bool]]:
    m = _module(f)
    if m is None or not driver_unloaded(f):
        return []
    return [
        ("CD117", _secure_boot_blocks(f, m)),
        ("CD118", _nouveau_blocks(f, m)),
        ("CD126", _needed_flavour(f, m) is not None),
        ("CD119", _not_built(m)),
    ]


def _initramfs(os_id: str | None) -> list[str]:
    fam = family(os_id)
    if fam in ("ubuntu", "debian"):
        return ["sudo update-initramfs -u"]
    if fam in ("fedora", "rhel"):
        return ["sudo dracut --force"]
    if fam == "arch":
        return ["sudo mkinitcpio -P"]
    # another distribution: whichever of the three tools it has
    return [
        "if command -v update-initramfs >/dev/null; then sudo update-initramfs -u; "
        "elif command -v dracut >/dev/null; then sudo dracut --force; else sudo mkinitcpio -P; fi"
    ]


def _rebuild(os_id: str | None, version: str | None) -> list[Fix]:
    fam = family(os_id)
    out = []
    if fam in ("ubuntu", "debian"):
        out.append(
            fix(
                "Debian/Ubuntu: install this kernel's headers, let DKMS build the module, reboot",
                "sudo apt install linux-headers-$(uname -r)",
                "sudo dkms autoinstall -k $(uname -r)",
                "sudo reboot",
            )
        )
        if fam == "ubuntu":
            out.append(
                fix(
                    "Ubuntu: or take the prebuilt, signed module for this kernel",
                    f"sudo apt install linux-modules-nvidia-{_branch(version)}-$(uname -r)",
                )
            )
    elif fam == "fedora":
        out.append(
            fix("Fedora (RPM Fusion akmods): build it for this kernel", "sudo akmods --force --kernels $(uname -r)")
        )
    elif fam == "rhel":
        out.append(
            fix(
                "RHEL and derivatives: install this kernel's headers, rebuild with DKMS",
                "sudo dnf install kernel-devel-$(uname -r) kernel-headers-$(uname -r)",
                "sudo dkms autoinstall -k $(uname -r)",
            )
        )
    else:
        out.append(fix("Rebuild the module with DKMS", "sudo dkms autoinstall -k $(uname -r)"))
    out.append(fix("Installed with NVIDIA's .run file: run it again for the new kernel", "sudo sh NVIDIA-Linux-*.run"))
    return out


def evaluate(f: Facts) -> list[Finding]:
    m = _module(f)
    if m is None:
        return []
    os_id = f.system.os_id if f.system else None
    out: list[Finding] = []
    causes = dict(_causes(f))
    if causes.get("CD117"):
        out.append(_secure_boot(f, m, os_id))
    if causes.get("CD118"):
        out.append(
            NOUVEAU.finding(
                fix=[
                    fix(
                        "Blacklist nouveau, rebuild the initramfs, reboot",
                        "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | "
                        "sudo tee /etc/modprobe.d/blacklist-nouveau.conf",
                        *_initramfs(os_id),
                        "sudo reboot",
                    ),
                    fix("Check afterwards: the GPU's driver must be nvidia", "lspci -nnk -d 10de:"),
                ]
            )
        )
    needed = _needed_flavour(f, m) if causes.get("CD126") else None
    if needed is not None:
        out.append(_flavour(needed, os_id, m))
    if causes.get("CD119"):
        elsewhere = sorted({b.kernel for b in m.builds or []} | {k for ks in (m.dkms or {}).values() for k in ks})
        out.append(
            NOT_BUILT.finding(
                title=f"No NVIDIA kernel module for the running kernel {m.kernel}"
                + (f" (built for {', '.join(elsewhere[:3])})" if elsewhere else ""),
                fix=_rebuild(os_id, f.driver.library_version if f.driver else None),
            )
        )
    out.extend(_device_nodes(f, m))
    fm = _fabric(f, m)
    if fm is not None:
        out.append(fm)
    return out


def _secure_boot(f: Facts, m: KernelModuleFacts, os_id: str | None) -> Finding:
    fam = family(os_id)
    fixes = []
    if fam in ("ubuntu", "debian"):
        fixes.append(
            fix(
                "Enrol the DKMS signing key (you choose a one-time password, then confirm it in the blue "
                "MOK manager screen at the next boot)",
                "sudo mokutil --import /var/lib/dkms/mok.pub",
                "sudo reboot",
            )
        )
        if fam == "ubuntu":
            fixes.append(fix("Ubuntu: or use the prebuilt signed module", "sudo ubuntu-drivers install"))
    elif fam in ("fedora", "rhel"):
        fixes.append(
            fix(
                "Enrol the akmods/DKMS signing key, confirm it at the next boot",
                "sudo kmodgenca -a",
                "sudo mokutil --import /etc/pki/akmods/certs/public_key.der",
                "sudo reboot",
            )
        )
    else:
        fixes.append(
            fix("Enrol the key the module was signed with, confirm at the next boot", "sudo mokutil --import KEY.der")
        )
    fixes.append(fix("Or turn Secure Boot off in the firmware setup", "mokutil --sb-state"))
    evidence = [line for line in m.kernel_log_lines if any(h in line for h in _SB_HINTS)]
    why = SECURE_BOOT.explanation
    if evidence:
        why += f' The kernel log says: "{evidence[-1][-160:]}".'
    return SECURE_BOOT.finding(why=why, fix=fixes)


def _flavour(needed: tuple[str, str], os_id: str | None, m: KernelModuleFacts) -> Finding:
    want, evidence = needed
    fam = family(os_id)
    branch = _branch(m.loaded_version or next((b.version for b in m.builds or [] if b.version), None))
    if want == "proprietary":
        # a GPU older than Turing: drivers from 590 on ignore Maxwell, Pascal and Volta, so never a newer
        # branch than their last (knowledge/architectures.py LAST_DRIVER_BRANCH, driver_install.py)
        if not branch.isdigit() or int(branch) > LEGACY_BRANCH:
            branch = str(LEGACY_BRANCH)
    if want == "open":
        cmds = {
            "ubuntu": f"sudo apt install nvidia-driver-{branch}-open",
            "debian": "sudo apt install nvidia-open-kernel-dkms",
            "fedora": "sudo dnf install akmod-nvidia-open",
            "rhel": "sudo dnf module install nvidia-driver:open-dkms",
            "arch": "sudo pacman -S nvidia-open",
        }
        run = "sudo sh NVIDIA-Linux-*.run -m=kernel-open"
    else:
        cmds = {
            "ubuntu": f"sudo apt install nvidia-driver-{branch}",
            "debian": "sudo apt install nvidia-kernel-dkms",
            "fedora": "sudo dnf install akmod-nvidia",
            "rhel": f"sudo dnf module install nvidia-driver:{LEGACY_BRANCH}-dkms",
            "arch": f"yay -S nvidia-{LEGACY_BRANCH}xx-dkms",  # from 590 Arch's nvidia-dkms is the open one
        }
        run = "sudo sh NVIDIA-Linux-*.run -m=kernel"
    fixes = []
    if fam in cmds:
        fixes.append(fix(f"Install the {want} kernel module, then reboot", cmds[fam], "sudo reboot"))
    fixes.append(fix("Installed with NVIDIA's .run file", run))
    return FLAVOUR.finding(
        title=f"This GPU needs the {want} NVIDIA kernel module",
        why=f"{FLAVOUR.explanation} {evidence}",
        fix=fixes,
    )


def _device_nodes(f: Facts, m: KernelModuleFacts) -> list[Finding]:
    nodes = m.device_nodes
    if nodes is None or not m.loaded:
        return []
    d, c = f.driver, f.cuda_driver
    nvml_ok = d is not None and d.init_status == "ok"
    cuda_ok = c is not None and c.init_result == 0
    cuda_failed = c is not None and c.init_result not in (0, None)  # a timed-out cuInit has not failed
    container = f.platform.container if f.platform else None
    in_container = container is not None and container.runtime is not None
    if nvml_ok and cuda_ok:
        return []  # CUDA works: whatever a node says, it is not in the way
    needed = [n for n in nodes if not n.path.endswith(("-tools", "-modeset"))]  # CUDA opens only these
    closed = [n for n in needed if n.exists and n.accessible is False]
    # nvidia-modprobe creates missing nodes on first use on a host: missing ones matter only when CUDA
    # is known to have failed, or in a container (nothing creates them there); /dev/nvidia-uvm only when
    # CUDA is known to have failed, as it is normally created on first use
    missing = [
        n for n in needed if not n.exists and (cuda_failed or (in_container and not n.path.endswith("nvidia-uvm")))
    ]
    if not closed and not missing:
        return []
    user = f.system.user if f.system and f.system.user else "$USER"
    fixes = []
    if closed:
        group = next((n.owner_group for n in closed if n.owner_group and n.owner_group != "root"), None)
        fixes.append(fix("See who may open them", "ls -l /dev/nvidia*", "id"))
        fixes.append(
            fix(
                f"Add yourself to the group that owns them ({group or 'often video'}), then log in again",
                f"sudo usermod -aG {group or 'video'} {user}",
            )
        )
    if missing and in_container:
        fixes.append(
            fix(
                "Start the container with the GPUs (the runtime creates the nodes)",
                "docker run --gpus all --rm IMAGE nvidia-smi",
            )
        )
    elif missing:
        fixes.append(fix("Create the missing nodes (loads nvidia-uvm too)", "sudo nvidia-modprobe -u -c=0"))
    bad = closed + missing
    title = (
        (f"{', '.join(n.path for n in missing)} missing" if missing else "")
        + ("; " if missing and closed else "")
        + (f"{', '.join(n.path for n in closed)} not open to {user}" if closed else "")
    )
    return [
        DEVICE_NODES.finding(
            title=f"NVIDIA device nodes: {title}",
            fix=fixes,
            tables=[
                Table(
                    ["Node", "Exists", "Mode", "Usable by this user"],
                    [
                        [
                            n.path,
                            "yes" if n.exists else "no",
                            n.mode or "",
                            "" if n.accessible is None else ("yes" if n.accessible else "no"),
                        ]
                        for n in bad
                    ],
                )
            ],
        )
    ]


def _fabric(f: Facts, m: KernelModuleFacts) -> Finding | None:
    if not m.nvswitch_count:
        return None
    driver = f.driver.driver_version if f.driver and f.driver.init_status == "ok" else m.loaded_version
    state, version = m.fabric_manager, m.fabric_manager_version
    wrong_version = version is not None and driver is not None and version != driver
    if state == "active" and not wrong_version:
        return None
    if state is None and not wrong_version:
        return None  # could not ask systemd: unknown
    branch = _branch(driver)
    fam = family(f.system.os_id if f.system else None)
    if fam in ("ubuntu", "debian"):
        # the driver's version unknown: its branch from the module on disk, and no exact version pin
        pkg = (
            f"sudo apt install nvidia-fabricmanager-{branch}={driver}-1"
            if driver
            else "sudo apt install nvidia-fabricmanager-$(modinfo -F version nvidia | cut -d. -f1)"
        )
    else:
        pkg = f"sudo dnf install nvidia-fabric-manager-{driver}" if driver else "sudo dnf install nvidia-fabric-manager"
    what = []
    if state is not None and state != "active":
        what.append(f"nvidia-fabricmanager is {state}")
    if wrong_version:
        what.append(f"fabric manager {version} vs driver {driver}")
    return FABRIC_MANAGER.finding(
        title=f"{plural(m.nvswitch_count, 'NVSwitch', 'NVSwitches')}: {'; '.join(what)}",
        fix=[
            fix("Install the fabric manager of exactly the driver's version", pkg),
            fix(
                "Start it now and at every boot, then check",
                "sudo systemctl enable --now nvidia-fabricmanager",
                "systemctl status nvidia-fabricmanager",
            ),
        ],
    )


def fabric_manager_fix(f: Facts) -> tuple[str | None, list[Fix]]:
    """For cuInit 802: (cause code when this module found it, fixes)."""
    m = _module(f)
    found = m is not None and _fabric(f, m) is not None
    return (
        "CD143" if found else None,
        [
            fix(
                "Start the fabric manager (NVSwitch systems); it must be the driver's exact version",
                "sudo systemctl enable --now nvidia-fabricmanager",
                "systemctl status nvidia-fabricmanager",
                "nv-fabricmanager --version; nvidia-smi --query-gpu=driver_version --format=csv,noheader",
            )
        ],
    )


def mismatch(f: Facts) -> tuple[str, list[str]] | None:
    """Which "version mismatch": ("loaded-older", facts) — a reboot or reload fixes it — or
    ("on-disk", facts) — the module for this kernel and the libraries on disk differ; None: cannot tell."""
    m = _module(f)
    if m is None:
        return None
    libs = m.library_versions or []
    if f.driver is not None and f.driver.library_version:
        libs = sorted(set(libs) | {f.driver.library_version})
    disk = sorted({b.version for b in _running_builds(m) if b.version})
    facts = []
    if m.loaded_version:
        facts.append(f"loaded module {m.loaded_version}")
    if disk:
        facts.append(f"module on disk {', '.join(disk)}")
    if libs:
        facts.append(f"libraries {', '.join(libs)}")
    if not disk or not libs:
        return None
    if set(disk) != set(libs) or len(libs) > 1:
        return "on-disk", facts
    if m.loaded_version and m.loaded_version not in libs:
        return "loaded-older", facts
    return None


def on_disk_mismatch_finding(f: Facts, facts: list[str]) -> Finding:
    fam = family(f.system.os_id if f.system else None)
    fixes = []
    if fam in ("ubuntu", "debian"):
        fixes.append(
            fix(
                "See which driver packages are installed, at which versions",
                "dpkg -l | grep -E 'nvidia|libnvidia' | awk '{print $2, $3}'",
            )
        )
        fixes.append(
            fix(
                "Install one driver branch consistently (kernel module and libraries), then reboot",
                "sudo apt install --reinstall nvidia-driver-$(modinfo -F version nvidia | cut -d. -f1)",
                "sudo reboot",
            )
        )
    elif fam in ("fedora", "rhel"):
        fixes.append(fix("See the installed driver packages", "rpm -qa | grep -i nvidia | sort"))
        fixes.append(
            fix(
                "Bring every NVIDIA package to one version, then reboot",
                "sudo dnf upgrade 'nvidia-*' 'kmod-nvidia*'",
                "sudo reboot",
            )
        )
    else:
        fixes.append(
            fix("Reinstall one driver version for both the module and the libraries", "sudo sh NVIDIA-Linux-*.run")
        )
    return ON_DISK_MISMATCH.finding(
        title=f"{ON_DISK_MISMATCH.summary}: {'; '.join(facts)}",
        fix=fixes,
    )


def nodes_cause(f: Facts) -> str | None:
    """CD127 when closed or missing /dev/nvidia* nodes explain NVML's NO_PERMISSION (for driver.py)."""
    m = _module(f)
    return "CD127" if m is not None and _device_nodes(f, m) else None


def ruled_out(f: Facts) -> tuple[str, set[int]]:
    """For CD102 without a found cause: a sentence on what the facts exclude, and which of its generic
    fixes (1 rebuild, 2 Secure Boot) to leave out."""
    m = _module(f)
    if m is None:
        return "", set()
    words, drop = [], set()
    if m.secure_boot is False:
        words.append("Secure Boot is off")
        drop.add(2)
    if _running_builds(m):
        words.append(f"a module is built for kernel {m.kernel}")
        drop.add(1)
    if m.nouveau_loaded is False:
        words.append("nouveau is not loaded")
    return (f" Ruled out here: {', '.join(words)}." if words else ""), drop
