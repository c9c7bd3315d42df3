"""The host backend: the PCI scan from sysfs, Windows display adapters, the environment collected."""

from __future__ import annotations

import os

from cudadoctor.backends.host import pci_facts


def _pci(root, addr, vendor, cls, driver=None):
    d = root / addr
    d.mkdir(parents=True)
    (d / "vendor").write_text(vendor + "\n")
    (d / "class").write_text(cls + "\n")
    (d / "device").write_text("0x2330\n")
    if driver:
        (root / "drivers" / driver).mkdir(parents=True, exist_ok=True)
        os.symlink(root / "drivers" / driver, d / "driver")


def test_pci_scan_finds_nvidia_display_controllers_only(tmp_path):
    root = tmp_path / "devices"
    _pci(root, "0000:18:00.0", "0x10de", "0x030200", "nvidia")
    _pci(root, "0000:19:00.0", "0x10de", "0x068000")  # NVSwitch bridge, not a GPU
    _pci(root, "0000:00:02.0", "0x8086", "0x030000", "i915")
    facts = pci_facts(str(root))
    assert facts.scanned
    assert [(g.address, g.kernel_driver) for g in facts.nvidia_gpus] == [("0000:18:00.0", "nvidia")]


def test_pci_scan_without_sysfs(tmp_path):
    assert pci_facts(str(tmp_path / "absent")).scanned is False


def test_windows_display_adapters_are_parsed():
    from cudadoctor.backends.host import parse_windows_adapters

    one = '{"Name":"NVIDIA GeForce RTX 4070","PNPDeviceID":"PCI\\\\VEN_10DE&DEV_2786&SUBSYS_1","Status":"OK"}'
    gpus = parse_windows_adapters(one)
    assert [(g.device_id, g.kernel_driver) for g in gpus] == [("0x2786", "nvidia")]
    many = (
        '[{"Name":"Intel UHD","PNPDeviceID":"PCI\\\\VEN_8086&DEV_9BC4","Status":"OK"},'
        '{"Name":"Microsoft Basic Display Adapter","PNPDeviceID":"PCI\\\\VEN_10DE&DEV_2684","Status":"Error"}]'
    )
    gpus = parse_windows_adapters(many)
    assert len(gpus) == 1 and gpus[0].kernel_driver is None  # an NVIDIA GPU without its driver
    assert parse_windows_adapters("not json") == []
