"""Driver, libcuda, toolkit and system rules on hand-written facts."""

from __future__ import annotations

import dataclasses

from cudadoctor.facts import (
    PciDevice,
    PciFacts,
    ToolkitFacts,
    ToolkitInstall,
)
from cudadoctor.model import Finding, Severity
from cudadoctor.rules import evaluate
from tests.facts_fixtures import GiB, gpu, healthy, no_driver, torch_cuda
from tests.helpers import by_code, codes, commands

CU13X = "7.5 8.0 8.6 9.0 10.0 12.0+PTX"


def test_no_gpu_on_the_bus_says_so_and_that_torch_runs_on_cpu():
    f = by_code(evaluate(no_driver(), []), "CD108")
    assert f.severity is Severity.ERROR
    assert "CPU" in f.why
    assert any("map_location='cpu'" in c for c in commands(f))
    assert "CD101" not in codes(evaluate(no_driver(), []))  # not "install a driver": there is nothing to drive


def test_gpu_on_bus_without_driver_gives_the_distro_install_command():
    facts = no_driver()
    facts.pci = PciFacts(scanned=True, nvidia_gpus=[PciDevice("0000:01:00.0", "0x2684", "0x030000", "nouveau")])
    f = by_code(evaluate(facts, []), "CD101")
    assert "1 NVIDIA GPU on the PCI bus" in f.title
    assert "nouveau" in f.why
    assert "sudo ubuntu-drivers install" in commands(f)


def test_rhel_derivative_gets_dnf_commands():
    facts = no_driver(os_id="rocky")
    facts.pci = PciFacts(scanned=True, nvidia_gpus=[PciDevice("0000:01:00.0")])
    assert any(c.startswith("sudo dnf") for c in commands(by_code(evaluate(facts, []), "CD101")))


def test_wsl_without_driver_says_windows_driver_never_linux():
    facts = no_driver(wsl=True)
    facts.pci = PciFacts(scanned=False)
    f = by_code(evaluate(facts, []), "CD101")
    assert "WSL2" in f.title
    whens = " ".join(r.when for r in f.fix)
    assert "Windows" in whens and "Never install a Linux NVIDIA driver" in whens


def test_container_without_gpus_points_to_the_container_toolkit():
    facts = no_driver(in_container=True, container_hints=["/.dockerenv"])
    facts.pci = PciFacts(scanned=False)
    f = by_code(evaluate(facts, []), "CD101")
    assert "container" in f.title
    assert "docker run --gpus all --rm IMAGE nvidia-smi" in commands(f)
    assert "sudo nvidia-ctk runtime configure --runtime=docker" in commands(f)


def test_macos_points_to_mps():
    facts = no_driver(os="Darwin", os_id=None)
    facts.pci = PciFacts(scanned=False)
    f = by_code(evaluate(facts, []), "CD109")
    assert any("mps" in c for c in commands(f))


def test_version_mismatch_names_both_versions():
    facts = no_driver(kernel_module_version="550.54.14")
    facts.driver = dataclasses.replace(facts.driver, init_status="LIB_RM_VERSION_MISMATCH", library_version="550.90.07")
    f = by_code(evaluate(facts, []), "CD103")
    assert "550.54.14" in f.title and "550.90.07" in f.title


def test_toolkit_without_driver_says_a_toolkit_is_not_a_driver():
    facts = no_driver()
    facts.toolkit = ToolkitFacts(
        nvcc_path="/usr/local/cuda/bin/nvcc",
        nvcc_version="13.0",
        installs=[ToolkitInstall("/usr/local/cuda", "13.0")],
    )
    f = by_code(evaluate(facts, []), "CD130")
    assert "not a driver" in f.title and "13.0" in f.title
    assert "does not need this toolkit" in f.why


def test_toolkit_with_working_driver_is_only_information():
    facts = healthy([gpu(0, "NVIDIA H100 80GB HBM3", "9.0")])
    facts.toolkit = ToolkitFacts(nvcc_path="/usr/bin/nvcc", nvcc_version="11.8")
    f = by_code(evaluate(facts, []), "CD131")
    assert f.severity is Severity.INFO
    assert "does not have to match" in f.why


def test_small_shm_warns_with_docker_fix():
    f = by_code(evaluate(healthy([gpu(0, "NVIDIA A10", "8.6")], shm_total=64 * 1024 * 1024), []), "CD140")
    assert f.severity is Severity.WARNING
    assert "64.0 MiB" in f.title
    assert "docker run --shm-size=8g ..." in commands(f)


def test_zero_devices_with_working_nvml():
    facts = healthy([])
    assert "CD110" in codes(evaluate(facts, []))


def test_healthy_multi_gpu_summary():
    facts = healthy([gpu(0, "NVIDIA H100 80GB HBM3", "9.0"), gpu(1, "NVIDIA H100 80GB HBM3", "9.0", used_gib=3)])
    f = by_code(evaluate(facts, []), "CD100")
    assert f.title == "NVIDIA driver 550.54.14 (supports CUDA up to 12.4), 2 GPUs: NVIDIA H100 80GB HBM3"
    assert not [x for x in evaluate(facts, []) if x.severity is Severity.ERROR]
    assert facts.driver.devices[1].memory_free == 77 * GiB


def t4_old_driver(in_container: bool) -> dict[str, Finding]:
    dev = [gpu(0, "Tesla T4", "7.5", total_gib=15)]
    facts = healthy(dev, driver="535.104.05", cuda=12020, in_container=in_container)
    facts.torch = torch_cuda("2.13.0+cu130", "13.0", CU13X, dev, available=False)
    return by_code(evaluate(facts, []))


def test_a_driver_upgrade_in_a_container_says_on_the_host() -> None:
    inside = [r for r in t4_old_driver(True)["CD203"].fix if "sudo reboot" in r.commands]
    assert inside and all(
        r.when.startswith("On the host (not in this container): upgrade the NVIDIA driver") for r in inside
    )
    outside = [r for r in t4_old_driver(False)["CD203"].fix if "sudo reboot" in r.commands]
    assert outside and all(r.when.startswith("Upgrade the NVIDIA driver") for r in outside)
