"""How to install the NVIDIA driver, per Linux distribution (/etc/os-release ID).

From driver 590 on, Maxwell, Pascal and Volta GPUs are ignored; 580 is their last branch
(knowledge/architectures.py LAST_DRIVER_BRANCH, with its sources). A machine with such a GPU gets the 580
branch: Ubuntu's `nvidia-driver-580` and NVIDIA's EL module stream `nvidia-driver:580-dkms` (both present:
NVIDIA/ansible-role-nvidia-driver PR#89), Arch's AUR `nvidia-580xx-dkms` (Arch news on 590, "remove nvidia,
nvidia-lts or nvidia-dkms and install nvidia-580xx-dkms from the AUR"). Debian's `nvidia-driver` is older
than 590 in its stable release (❓ not re-checked); Fedora's RPM Fusion legacy package is not sourced here,
so Fedora gets NVIDIA's download page instead.
"""

from __future__ import annotations

from cudadoctor.model import Message, msg

SOURCES = {
    "ubuntu": "https://documentation.ubuntu.com/server/how-to/graphics/install-nvidia-drivers/",
    "debian": "https://wiki.debian.org/NvidiaGraphicsDrivers",
    "fedora": "https://rpmfusion.org/Howto/NVIDIA",
    "rhel": "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/",
    "arch": "https://wiki.archlinux.org/title/NVIDIA",
    "generic": "https://www.nvidia.com/Download/index.aspx",
}

INSTALL_COMMANDS: dict[str, list[str]] = {
    "ubuntu": ["sudo ubuntu-drivers install", "sudo reboot"],
    "debian": ["sudo apt update", "sudo apt install nvidia-driver firmware-misc-nonfree", "sudo reboot"],
    "fedora": ["sudo dnf install akmod-nvidia xorg-x11-drv-nvidia-cuda", "sudo reboot"],
    # NVIDIA's own repository (add it first, as the installation guide shows).
    "rhel": ["sudo dnf module install nvidia-driver:latest-dkms", "sudo reboot"],
    "arch": ["sudo pacman -S nvidia-open nvidia-utils", "sudo reboot"],
}

# For GPUs whose last driver branch is 580 (Maxwell, Pascal, Volta): a newer branch ignores them.
LEGACY_BRANCH = 580
LEGACY_INSTALL_COMMANDS: dict[str, list[str]] = {
    "ubuntu": [f"sudo apt install nvidia-driver-{LEGACY_BRANCH}", "sudo reboot"],
    "debian": INSTALL_COMMANDS["debian"],
    "rhel": [f"sudo dnf module install nvidia-driver:{LEGACY_BRANCH}-dkms", "sudo reboot"],
    # the AUR needs a helper (yay, paru); pacman alone cannot install it
    "arch": [f"yay -S nvidia-{LEGACY_BRANCH}xx-dkms", "sudo reboot"],
}

# PCI device IDs (❓ inferred from NVIDIA's PCI ID lists, not a published rule): Turing's first chips are
# 0x1e02 (TU102) and later, so an ID below 0x1e00 is a GPU older than Turing.
TURING_FIRST_PCI_ID = 0x1E00

# Derivatives that follow their parent's packaging.
_FAMILY = {
    "pop": "ubuntu",
    "linuxmint": "ubuntu",
    "rocky": "rhel",
    "almalinux": "rhel",
    "centos": "rhel",
    "ol": "rhel",
    "manjaro": "arch",
    "endeavouros": "arch",
}


def install_commands(os_id: str | None, legacy: bool | int = False) -> tuple[Message, list[str]]:
    """(label, commands) for this distribution; a pointer to NVIDIA's download page otherwise. `legacy`:
    a GPU here is one newer drivers ignore, so only its last branch is installed: True or 580 for Maxwell,
    Pascal and Volta, 470 for Kepler (no distribution package for 470 is sourced here: the download page,
    where NVIDIA offers the 470 legacy driver by product)."""
    family = _FAMILY.get(os_id or "", os_id or "")
    branch = LEGACY_BRANCH if legacy is True else (legacy or None)
    if branch is not None and branch != LEGACY_BRANCH:
        return msg("Any Linux, driver {branch}", branch=branch), [f"xdg-open {SOURCES['generic']}"]
    table = LEGACY_INSTALL_COMMANDS if branch else INSTALL_COMMANDS
    if family in table:
        name = family.capitalize()
        if family == "rhel":
            return (
                msg("RHEL and derivatives, driver {branch}", branch=branch) if branch else msg("RHEL and derivatives")
            ), table[family]
        return (
            msg("{family}, driver {branch}", family=name, branch=branch) if branch else msg("{family}", family=name)
        ), table[family]
    # no packaged driver known for this distribution: open NVIDIA's download page for this GPU
    return msg("Any Linux"), [f"xdg-open {SOURCES['generic']}"]


def pre_turing_pci(device_ids: list[str | None]) -> bool:
    """Whether any of these PCI device IDs ("0x1b06") is a GPU older than Turing."""
    for text in device_ids:
        try:
            if text and int(text, 16) < TURING_FIRST_PCI_ID:
                return True
        except ValueError:
            continue
    return False
