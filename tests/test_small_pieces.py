from __future__ import annotations

import os

import pytest

from cudadoctor.backends.host import pci_facts, relevant_env
from cudadoctor.backends.nvml import library_version_from_path
from cudadoctor.knowledge.secrets import mask_value
from cudadoctor.knowledge.units import format_size, parse_size
from cudadoctor.knowledge.versions import cuda_int_to_str, cudnn_int_to_str, version_at_least


@pytest.mark.parametrize(
    "text,expected",
    [
        ("8GiB", 8 << 30),
        ("8G", 8 << 30),
        ("8192MiB", 8 << 30),
        ("0.5TB", 500_000_000_000),
        ("8GB", 8_000_000_000),
        ("1024B", 1024),
        (" 2 gib ", 2 << 30),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "eight", "8XB", "-1G", "1.2.3G"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError, match="is not a size"):
        parse_size(text)


def test_format_size():
    assert format_size(64 * 1024 * 1024) == "64.0 MiB"
    assert format_size(None) == "N/A"


def test_version_encodings():
    assert cuda_int_to_str(12020) == "12.2" and cuda_int_to_str(13030) == "13.3"
    assert cudnn_int_to_str(90100) == "9.1.0" and cudnn_int_to_str(91002) == "9.10.2"
    assert cudnn_int_to_str(8902) == "8.9.2"
    assert version_at_least("535.104.05", "525.60.13") is True
    assert version_at_least("570.26", "570.26.0") is True  # two-part Linux versions pad with 0
    assert version_at_least("576.57", "580") is False
    assert version_at_least(None, "1") is None


def test_user_space_driver_version_from_library_file():
    assert library_version_from_path("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.14") == "550.54.14"
    assert library_version_from_path("/tmp/libnvidia-ml.so.1") is None


def test_secrets_are_masked_at_collection():
    env = relevant_env(
        {
            "CUDA_TOKEN": "x",
            "PIP_INDEX_URL": "https://u:p@h/simple",
            "HOME": "/root",
            "CUDA_VISIBLE_DEVICES": "0",
        }
    )
    assert env == {"CUDA_TOKEN": "***", "PIP_INDEX_URL": "https://***@h/simple", "CUDA_VISIBLE_DEVICES": "0"}
    assert mask_value("NCCL_PASSWORD", "x") == "***"


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


CHILD_LEFT_RUNNING = """
import os, sys, threading, time
from cudadoctor.backends.child import run_child

marker = sys.argv[1]
argv = ["sh", "-c", f"echo $$ > {marker}; exec sleep 60"]
threading.Thread(target=run_child, args=(argv, 120), daemon=True).start()
while not os.path.exists(marker):
    time.sleep(0.05)
sys.exit(130)  # as after Ctrl-C
"""


def test_children_left_running_are_killed_at_exit(tmp_path):
    """Ctrl-C does not reach children in their own session: the doctor kills them when it exits."""
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT

    marker = tmp_path / "pid"
    subprocess.run(
        [sys.executable, "-c", CHILD_LEFT_RUNNING, str(marker)], timeout=30, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    pid = int(marker.read_text())
    time.sleep(0.2)
    try:
        with open(f"/proc/{pid}/stat") as fh:
            alive = fh.read().split()[2] != "Z"
    except FileNotFoundError:
        alive = False
    assert not alive


def test_redaction_covers_full_and_shortened_uuids():
    from cudadoctor.render.redact import redact

    data = {
        "facts": {"system": {"hostname": "box7", "user": "alice"}},
        "x": [
            "GPU-1a2b3c4d-1111-2222-3333-444455556666",
            "0  GPU-1a2b3c4d-  78 GiB",
            "MIG-aaaa-bbbb",
            "/home/alice/venv on box7",
            "GPU-less text",
        ],
    }
    out = redact(data, "box7", "alice")
    assert out["x"][:4] == [
        "GPU-<redacted>",
        "0  GPU-<redacted>  78 GiB",
        "MIG-<redacted>",
        "/home/<user>/venv on <host>",
    ]
    assert out["x"][4] == "GPU-less text"
    assert out["facts"]["system"] == {"hostname": "<host>", "user": "<user>"}
