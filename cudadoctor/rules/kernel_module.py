"""Why the NVIDIA kernel module is not loaded or not usable (Linux hosts, never WSL): Secure Boot with an
unsigned module, nouveau holding the GPU, no module built for the running kernel, the open vs proprietary
flavour a GPU needs, /dev/nvidia* nodes missing or closed to this user, the fabric manager on NVSwitch
systems, and which of the two "version mismatch" shapes this is.

Each finding here is a root cause; rules/driver.py's CD102/CD103/CD104 point at it with `cause=`. What both
modules ask of the facts (is the module blocked, and why) is in rules/predicates.py.

Sources: cuda-facts §9 (Secure Boot "Key was rejected by service" — lcp/mokutil#61; nouveau; DKMS after
a kernel upgrade — gpustat#110; mismatch shapes — tinygrad/open-gpu-kernel-modules#47; fabric manager —
pytorch#35710). Open modules: NVIDIA driver README "Using the open GPU kernel modules" — Turing and later
only, and Blackwell GPUs require them (the kernel log says "requires use of the NVIDIA open kernel modules").
Legacy branches: a 590+ driver on Maxwell/Pascal/Volta logs "supported through the NVIDIA 580.xx Legacy
drivers … will ignore this GPU" (NixOS/nixos-hardware#1880), a question of the branch, not the flavour.
"""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.facts.platform import KernelModuleFacts
from cudadoctor.knowledge.driver_install import LEGACY_BRANCH, SOURCES, install_commands
from cudadoctor.model import Finding, Fix, Message, Severity, Table, msg, msg_n
from cudadoctor.rules.catalogue import entry, fix
from cudadoctor.rules.predicates import (
    SECURE_BOOT_HINTS,
    NeededFlavour,
    container,
    device_node_problems,
    dropped_gpu,
    fabric_manager_trouble,
    family,
    joined,
    legacy_gpu,
    mismatch,
    module,
    module_causes,
    module_versions,
    needed_flavour,
)

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
DROPPED_GPU = entry(
    "CD116",
    "driver-branch-drops-gpu",
    Severity.ERROR,
    "Driver",
    "This driver branch no longer drives the GPU: it needs its legacy branch",
    """Each NVIDIA driver branch drives the GPUs it supports; older GPUs stay on a legacy branch. From 590
    the driver ignores Maxwell, Pascal and Volta GPUs, whose last branch is 580: the kernel log says the GPU
    "is supported through the NVIDIA 580.xx Legacy drivers" and that this driver "will ignore this GPU", and
    with no other GPU the module does not load. This is not a question of the module flavour (open or
    proprietary): install the branch the log names, never a newer one.""",
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


def _branch(version: str | None) -> str:
    return version.split(".")[0] if version else "BRANCH"


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


def _log_says(line: str) -> Message:
    return msg('The kernel log says: "{line}".', line=line[-160:])


def evaluate(f: Facts) -> list[Finding]:
    m = module(f)
    if m is None:
        return []
    os_id = f.system.os_id if f.system else None
    out: list[Finding] = []
    causes = dict(module_causes(f))
    if causes.get("CD117"):
        out.append(_secure_boot(m, os_id))
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
    dropped = dropped_gpu(m) if causes.get("CD116") else None
    if dropped is not None:
        out.append(dropped_branch_finding(dropped.branch, dropped.driver or m.loaded_version, dropped.line, os_id))
    needed = needed_flavour(f, m) if causes.get("CD126") and dropped is None else None
    if needed is not None:
        out.append(flavour_finding(needed, os_id, m, legacy_gpu(f)))
    if causes.get("CD119"):
        elsewhere = sorted({b.kernel for b in m.builds or []} | {k for ks in (m.dkms or {}).values() for k in ks})
        out.append(
            NOT_BUILT.finding(
                title=msg(
                    "No NVIDIA kernel module for the running kernel {kernel} (built for {kernels})"
                    if elsewhere
                    else "No NVIDIA kernel module for the running kernel {kernel}",
                    kernel=m.kernel,
                    kernels=", ".join(elsewhere[:3]),
                ),
                fix=_rebuild(os_id, f.driver.library_version if f.driver else None),
            )
        )
    out.extend(_device_nodes(f))
    fm = _fabric(f)
    if fm is not None:
        out.append(fm)
    shape = mismatch(f)
    if shape is not None and shape[0] == "on-disk" and f.driver is not None:
        if f.driver.init_status == "LIB_RM_VERSION_MISMATCH":  # driver.py leaves CD103 to this
            out.append(_on_disk_mismatch(f, shape[1]))
    return out


def _secure_boot(m: KernelModuleFacts, os_id: str | None) -> Finding:
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
    evidence = [line for line in m.kernel_log_lines if any(h in line for h in SECURE_BOOT_HINTS)]
    why = msg(SECURE_BOOT.explanation)
    if evidence:
        why = msg("{page} {evidence}", page=why, evidence=_log_says(evidence[-1]))
    return SECURE_BOOT.finding(why=why, fix=fixes)


def dropped_branch_finding(branch: int, driver: str | None, line: str, os_id: str | None) -> Finding:
    """A GPU the installed branch ignores: the branch the driver's own log names, never a newer one."""
    fam = family(os_id)
    if branch == LEGACY_BRANCH:
        system, commands = install_commands(os_id, legacy=True)
        known = system != "Any Linux"
    else:  # an older legacy branch (470 for Kepler, 390, …): where its package name follows the pattern
        commands = {
            "ubuntu": [f"sudo apt install nvidia-driver-{branch}", "sudo reboot"],
            "arch": [f"yay -S nvidia-{branch}xx-dkms", "sudo reboot"],
        }.get(fam, [])
        known = bool(commands)
    fixes = (
        [
            fix(
                msg("Install the {branch} driver branch, the last that drives this GPU, then reboot", branch=branch),
                *commands,
            )
        ]
        if known
        else []
    )
    fixes.append(
        fix(
            msg("Or download NVIDIA's {branch}.xx legacy driver for this GPU", branch=branch),
            f"xdg-open {SOURCES['generic']}",
        )
    )
    return DROPPED_GPU.finding(
        title=msg(
            "Driver {driver} ignores this GPU: its last branch is {branch}"
            if driver
            else "The installed driver ignores this GPU: its last branch is {branch}",
            driver=driver,
            branch=branch,
        ),
        why=msg("{page} {evidence}", page=msg(DROPPED_GPU.explanation), evidence=_log_says(line)),
        fix=fixes,
    )


def flavour_finding(needed: NeededFlavour, os_id: str | None, m: KernelModuleFacts, legacy: bool | int) -> Finding:
    fam = family(os_id)
    branch = _branch(m.loaded_version or next((b.version for b in m.builds or [] if b.version), None))
    # drivers from 590 on ignore Maxwell, Pascal and Volta: for such a GPU never a newer branch than their last
    # (knowledge/architectures.py LAST_DRIVER_BRANCH); Turing and newer keep the branch installed
    capped = needed.want == "proprietary" and legacy is not False
    last = LEGACY_BRANCH if legacy is True else int(legacy)  # Kepler's is 470 (predicates.legacy_gpu)
    if capped and (not branch.isdigit() or int(branch) > last):
        branch = str(last)
    if needed.want == "open":
        cmds = {
            "ubuntu": f"sudo apt install nvidia-driver-{branch}-open",
            "debian": "sudo apt install nvidia-open-kernel-dkms",
            "fedora": "sudo dnf install akmod-nvidia-open",
            "rhel": "sudo dnf module install nvidia-driver:open-dkms",
            "arch": "sudo pacman -S nvidia-open",
        }
        run = "sudo sh NVIDIA-Linux-*.run -m=kernel-open"
    else:
        stream = branch if branch.isdigit() else "latest"
        cmds = {
            "ubuntu": f"sudo apt install nvidia-driver-{branch}",
            "debian": "sudo apt install nvidia-kernel-dkms",
            "fedora": "sudo dnf install akmod-nvidia",
            "rhel": f"sudo dnf module install nvidia-driver:{stream}-dkms",
        }
        if capped:  # from 590 Arch's nvidia-dkms is the open module; the proprietary 580 is in the AUR
            cmds["arch"] = f"yay -S nvidia-{last}xx-dkms"
        run = "sudo sh NVIDIA-Linux-*.run -m=kernel"
    fixes = []
    if fam in cmds:
        fixes.append(
            fix(
                msg(
                    "Install the open kernel module, then reboot"
                    if needed.want == "open"
                    else "Install the proprietary kernel module, then reboot"
                ),
                cmds[fam],
                "sudo reboot",
            )
        )
    fixes.append(fix("Installed with NVIDIA's .run file", run))
    if needed.line is not None:
        evidence = _log_says(needed.line)
    else:
        evidence = msg(
            "Judging by its PCI device ID 0x{id}, the GPU is Blackwell or newer."
            if needed.want == "open"
            else "Judging by its PCI device ID 0x{id}, the GPU is older than Turing.",
            id=f"{needed.pci_id or 0:04x}",
        )
    return FLAVOUR.finding(
        title=msg(
            "This GPU needs the open NVIDIA kernel module"
            if needed.want == "open"
            else "This GPU needs the proprietary NVIDIA kernel module"
        ),
        why=msg("{page} {evidence}", page=msg(FLAVOUR.explanation), evidence=evidence),
        fix=fixes,
    )


def _device_nodes(f: Facts) -> list[Finding]:
    found = device_node_problems(f)
    if found is None:
        return []
    missing, closed = found
    in_container = container(f) is not None
    user = f.system.user if f.system and f.system.user else "$USER"
    fixes = []
    if closed:
        group = next((n.owner_group for n in closed if n.owner_group and n.owner_group != "root"), None)
        fixes.append(fix("See who may open them", "ls -l /dev/nvidia*", "id"))
        fixes.append(
            fix(
                msg("Add yourself to the group that owns them ({group}), then log in again", group=group)
                if group
                else msg("Add yourself to the group that owns them (often video), then log in again"),
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
    parts = []
    if missing:
        parts.append(msg("{nodes} missing", nodes=", ".join(n.path for n in missing)))
    if closed:
        parts.append(msg("{nodes} not open to {user}", nodes=", ".join(n.path for n in closed), user=user))
    return [
        DEVICE_NODES.finding(
            title=msg("NVIDIA device nodes: {problems}", problems=joined(parts)),
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
                        for n in missing + closed
                    ],
                )
            ],
        )
    ]


def _fabric(f: Facts) -> Finding | None:
    trouble = fabric_manager_trouble(f)
    m = module(f)
    if trouble is None or m is None:
        return None
    state, version, driver = trouble
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
    if state is not None:
        what.append(msg("nvidia-fabricmanager is {state}", state=state))
    if version is not None:
        what.append(msg("fabric manager {version} vs driver {driver}", version=version, driver=driver))
    n = m.nvswitch_count or 0
    return FABRIC_MANAGER.finding(
        title=msg_n("{n} NVSwitch: {what}", "{n} NVSwitches: {what}", n, n=n, what=joined(what)),
        fix=[
            fix("Install the fabric manager of exactly the driver's version", pkg),
            fix(
                "Start it now and at every boot, then check",
                "sudo systemctl enable --now nvidia-fabricmanager",
                "systemctl status nvidia-fabricmanager",
            ),
        ],
    )


def _on_disk_mismatch(f: Facts, versions: dict[str, object]) -> Finding:
    """NVML's "version mismatch" where the module for this kernel and the libraries on disk differ: a reboot
    loads the same mismatched module again (driver.py says CD103 only for the other shape)."""
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
        title=msg("{summary}: {versions}", summary=msg(ON_DISK_MISMATCH.summary), versions=module_versions(versions)),
        fix=fixes,
    )
