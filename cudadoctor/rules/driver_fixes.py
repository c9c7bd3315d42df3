"""The commands that install the NVIDIA driver on this OS (a Kepler or Maxwell-to-Volta GPU gets its last
branch), that get a newer one, and that keep a Linux driver out of WSL, as the fixes of rules/driver.py."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.knowledge.driver_install import LEGACY_BRANCH, SOURCES, install_commands
from cudadoctor.model import Fix, Message, msg
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.predicates import WSL_FIX, in_wsl, legacy_gpu, package_tool

# Linux driver packages inside WSL, by the distribution's package manager (WSL_FIX, for a paste without
# facts, assumes apt)
_WSL_REMOVE = {
    "dnf": "sudo dnf remove 'nvidia-driver*' 'akmod-nvidia*' 'kmod-nvidia*' 'xorg-x11-drv-nvidia*' 'cuda-drivers*'",
    "zypper": "rpm -qa | grep -i nvidia",
    "pacman": "pacman -Qs nvidia",
}


def wsl_fix(f: Facts) -> list[Fix]:
    tool = package_tool(f)
    if tool not in _WSL_REMOVE:
        return WSL_FIX
    if tool == "dnf":
        remove = fix("Never install a Linux NVIDIA driver inside WSL; remove one if present", _WSL_REMOVE[tool])
    else:
        remove = fix(
            "Never install a Linux NVIDIA driver inside WSL; list any installed, then remove them", _WSL_REMOVE[tool]
        )
    return [WSL_FIX[0], remove]


# install_commands' labels that are words, not names
_SYSTEMS = {"RHEL and derivatives": msg("RHEL and derivatives"), "Any Linux": msg("Any Linux")}


def _system(label: str) -> Message:
    """ "Ubuntu", "RHEL and derivatives, driver 580" (knowledge/driver_install.install_commands) as a message."""
    if isinstance(label, Message):
        return label
    legacy = f", driver {LEGACY_BRANCH}"
    base = label[: -len(legacy)] if label.endswith(legacy) else label
    name = _SYSTEMS.get(base) or msg("{name}", name=base)
    return msg("{system}, driver {branch}", system=name, branch=LEGACY_BRANCH) if base != label else name


def driver_install_fixes(f: Facts) -> list[Fix]:
    system = f.system
    if system is not None and system.os == "Windows":
        return [fix("Install the NVIDIA driver for Windows, then reboot", f"start {SOURCES['generic']}")]
    label, commands = install_commands(system.os_id if system else None, legacy=legacy_gpu(f))
    return [
        fix(msg("{system}: install the NVIDIA driver", system=_system(label)), *commands),
        fix("Check afterwards", "nvidia-smi"),
    ]


def driver_upgrade_commands(f: Facts) -> list[str]:
    """Commands that install a newer driver here (the Windows one under WSL)."""
    page = SOURCES["generic"]
    if f.system is not None and f.system.os == "Windows":
        return [f"start {page}"]
    if in_wsl(f):
        return [f"explorer.exe {page}"]
    return install_commands(f.system.os_id if f.system else None, legacy=legacy_gpu(f))[1]
