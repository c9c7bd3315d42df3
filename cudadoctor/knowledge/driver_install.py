"""How to install the NVIDIA driver, per Linux distribution (/etc/os-release ID)."""

from __future__ import annotations

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


def install_commands(os_id: str | None) -> tuple[str, list[str]]:
    """(label, commands) for this distribution; a pointer to NVIDIA's download page otherwise."""
    family = _FAMILY.get(os_id or "", os_id or "")
    if family in INSTALL_COMMANDS:
        return family.capitalize() if family != "rhel" else "RHEL and derivatives", INSTALL_COMMANDS[family]
    # no packaged driver known for this distribution: open NVIDIA's download page for this GPU
    return "Any Linux", [f"xdg-open {SOURCES['generic']}"]
