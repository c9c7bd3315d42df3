"""What a user is told once the leads of issue 28 that held are in the tables (research/leads28.md has the
sources): the torch release matrix, the drivers that ignore Maxwell/Pascal/Volta, Blackwell's relatives,
and the fleet's measured floors. Hand-written facts for machines nobody here owns."""

from __future__ import annotations

import pytest

from cudadoctor.facts import DriverFacts, PciDevice, PciFacts
from cudadoctor.facts.platform import KernelModuleFacts, PlatformFacts
from cudadoctor.model import Severity
from cudadoctor.rules import evaluate
from tests.facts_fixtures import gpu, healthy, no_driver, torch_cuda
from tests.helpers import commands

CU13X = "7.5 8.0 8.6 9.0 10.0 12.0+PTX"
CU128_211 = "7.5 8.0 8.6 9.0 10.0 12.0"


def run(facts):
    findings = evaluate(facts, [])
    return {f.code: f for f in findings}


# --- the torch release matrix ------------------------------------------------------------------------


def test_v100_on_torch_211_cu128_is_told_volta_left_that_build():
    """2.11 removed sm_70 from its cu128 build (pytorch PR#172598): a V100 there has no kernels; cu126 does."""
    dev = [gpu(0, "Tesla V100-SXM2-32GB", "7.0", total_gib=32)]
    facts = healthy(dev, driver="580.95.05", cuda=13000)
    facts.torch = torch_cuda("2.11.0+cu128", "12.8", CU128_211, dev)
    by = run(facts)
    f = by["CD205"]
    assert f.title == "torch 2.11.0+cu128 has no kernels for Tesla V100-SXM2-32GB (compute capability 7.0, Volta)"
    assert "torch 2.11 builds with kernels for it: cu126" in f.why
    assert commands(f)[-1] == (
        "/opt/venv/bin/python -m pip install torch==2.11.0 --index-url https://download.pytorch.org/whl/cu126"
    )


def test_pascal_on_torch_215_gets_the_last_release_that_has_its_kernels():
    """2.15 has no cu126 (RFC pytorch#190385, test-infra PR#8739): torch 2.14 cu126 is the last build for
    Pascal, and the 580 driver here runs it."""
    dev = [gpu(0, "NVIDIA GeForce GTX 1080 Ti", "6.1", total_gib=11)]
    facts = healthy(dev, driver="580.95.05", cuda=13000)
    facts.torch = torch_cuda("2.15.0+cu132", "13.2", CU13X, dev)
    by = run(facts)
    f = by["CD206"]
    assert "Pascal" in f.title
    assert "no current release has kernels for it" in f.why
    assert "The newest torch with a build for 6.1 is 2.14 (cu126)" in f.why
    assert commands(f)[-1] == (
        "/opt/venv/bin/python -m pip install torch==2.14.0 --index-url https://download.pytorch.org/whl/cu126"
    )


def test_an_ampere_gpu_on_215_is_offered_cu130_which_its_13_0_driver_runs_in_full():
    dev = [gpu(0, "NVIDIA A100-SXM4-80GB", "8.0")]
    facts = healthy(dev, driver="580.95.05", cuda=13000)
    facts.torch = torch_cuda("2.15.0+cu132", "13.2", CU13X, dev)
    by = run(facts)
    assert "CD205" not in by and "CD206" not in by
    assert by["CD204"].severity is Severity.INFO  # 13.2 on a 13.0 driver: minor-version compatibility only


# --- Blackwell and later: no false "no kernels" --------------------------------------------------------


@pytest.mark.parametrize(
    "name, cc, machine",
    [
        ("NVIDIA GB10", "12.1", "aarch64"),  # runs sm_120 cubins (pytorch#172629: torch's warning is false)
        ("NVIDIA B300 SXM6 AC", "10.3", "x86_64"),  # runs sm_100 (not sm_100a-only) cubins
        ("NVIDIA Thor", "11.0", "aarch64"),  # sm_110 in the aarch64 cu130 build
    ],
)
def test_blackwell_relatives_run_the_cu130_build(name, cc, machine):
    dev = [gpu(0, name, cc, total_gib=120)]
    facts = healthy(dev, driver="580.95.05", cuda=13000, machine=machine)
    warning = (
        f"Found GPU0 {name} which is of compute capability (CC) {cc}. Your installed torch==2.13.0+cu130 "
        "does not include kernels for this GPU."
    )
    flags = "8.0 9.0 10.0 11.0 12.0+PTX" if machine == "aarch64" else CU13X
    facts.torch = torch_cuda("2.13.0+cu130", "13.0", flags, dev, availability_warnings=[warning])
    by = run(facts)
    assert "CD205" not in by and "CD206" not in by
    assert by["CD200"].severity is Severity.OK


# --- drivers from 590 on ignore Maxwell, Pascal and Volta --------------------------------------------

LEGACY_LOG = [
    "[ 4.1] NVRM: The NVIDIA NVIDIA GeForce GTX 1050 GPU installed in this system is",
    "[ 4.1] NVRM:  supported through the NVIDIA 580.xx Legacy drivers. Please",
    "[ 4.1] NVRM:  information.  The 595.71.05 NVIDIA driver will ignore",
    "[ 4.1] NVRM: No NVIDIA GPU found.",
]


def _module_refuses_pascal(os_id: str, log: list[str], device_id: str | None = "0x1c81", version: str = "595.71.05"):
    facts = healthy([], driver=version, cuda=13020, os_id=os_id)
    gpus = [PciDevice(address="0000:01:00.0", device_id=device_id)] if device_id else []
    facts.pci = PciFacts(scanned=True, nvidia_gpus=gpus)
    facts.driver = DriverFacts(binding="nvidia-ml-py", library_loaded=True, init_status="DRIVER_NOT_LOADED")
    facts.torch = None
    module = KernelModuleFacts(kernel="6.8.0-45-generic", loaded=False, loaded_version=version, kernel_log_lines=log)
    facts.platform = PlatformFacts(module=module)
    return facts


def _check(run_cli, tmp_path, facts, *args: str) -> str:
    """What `cudadoctor check --from REPORT` prints for these facts (a report saved on that machine)."""
    import json

    from cudadoctor.facts.codec import to_jsonable

    report = tmp_path / "report.json"
    report.write_text(json.dumps({"tool": "cudadoctor", "schema_version": 2, "facts": to_jsonable(facts)}))
    r = run_cli("check", "--from", str(report), *args)
    assert r.code == 1, r.stderr
    return r.stdout


def test_a_590_driver_on_pascal_is_told_its_last_branch_not_a_module_flavour(run_cli, tmp_path):
    """The driver's own log says the branch, not the flavour, is wrong: a 590+ proprietary module ignores the
    GPU as well, so "needs the proprietary module" (CD126) was the wrong story."""
    by = run(_module_refuses_pascal("ubuntu", LEGACY_LOG))
    assert "CD126" not in by
    f = by["CD116"]
    assert f.title == "Driver 595.71.05 ignores this GPU: its last branch is 580"
    assert "580.xx Legacy drivers" in f.why
    assert commands(f)[0] == "sudo apt install nvidia-driver-580"  # not nvidia-driver-595
    assert by["CD102"].cause == "CD116"

    arch = run(_module_refuses_pascal("arch", LEGACY_LOG))["CD116"]
    assert commands(arch)[0] == "yay -S nvidia-580xx-dkms"  # Arch's nvidia-dkms is the open module from 590
    rhel = run(_module_refuses_pascal("rocky", LEGACY_LOG))["CD116"]
    assert commands(rhel)[0] == "sudo dnf module install nvidia-driver:580-dkms"

    out = _check(run_cli, tmp_path, _module_refuses_pascal("ubuntu", LEGACY_LOG))
    assert "CD116 Driver 595.71.05 ignores this GPU: its last branch is 580" in out
    assert "sudo apt install nvidia-driver-580" in out
    assert "proprietary NVIDIA kernel module" not in out
    zh = _check(run_cli, tmp_path, _module_refuses_pascal("ubuntu", LEGACY_LOG), "--lang", "zh_CN")
    assert "CD116" in zh and "ignores this GPU" not in zh and "sudo apt install nvidia-driver-580" in zh


def test_a_kepler_gpu_gets_the_branch_its_log_names():
    """The legacy line names the GPU's own last branch: 470 for Kepler, never the 580 of Maxwell-Volta."""
    log = [
        "NVRM: The NVIDIA GeForce 920M GPU installed in this system is",
        "NVRM:  supported through the NVIDIA 470.xx Legacy drivers. Please",
        "NVRM:  information.  The 565.57.01 NVIDIA driver will ignore",
    ]
    f = run(_module_refuses_pascal("ubuntu", log, device_id="0x1299", version="565.57.01"))["CD116"]
    assert f.title == "Driver 565.57.01 ignores this GPU: its last branch is 470"
    assert commands(f)[0] == "sudo apt install nvidia-driver-470"


def _open_refuses(pci_id: str) -> list[str]:
    return [
        f"NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:{pci_id})",
        "NVRM: installed in this system is not supported by open nvidia.ko",
        "NVRM: because it does not include the required GPU System Processor (GSP).",
    ]


def test_the_580_cap_is_only_for_maxwell_pascal_and_volta():
    """The open module refuses a GPU: the proprietary module of the same branch for Turing and newer (a vGPU
    partition of a Blackwell card, say), and branch 580 only for a GPU older than Turing."""
    blackwell = run(_module_refuses_pascal("ubuntu", _open_refuses("2bb5"), device_id=None))
    f = blackwell["CD126"]
    assert f.title == "This GPU needs the proprietary NVIDIA kernel module"
    assert commands(f)[0] == "sudo apt install nvidia-driver-595"  # not the 580 of pre-Turing GPUs
    assert blackwell["CD102"].cause == "CD126"
    arch = run(_module_refuses_pascal("arch", _open_refuses("2bb5"), device_id="0x2bb5"))["CD126"]
    assert not any("580" in c for c in commands(arch))  # no legacy AUR package for a Blackwell GPU
    rhel = run(_module_refuses_pascal("rocky", _open_refuses("2bb5"), device_id=None))["CD126"]
    assert commands(rhel)[0] == "sudo dnf module install nvidia-driver:595-dkms"

    volta = run(_module_refuses_pascal("ubuntu", _open_refuses("1d81"), device_id=None))["CD126"]
    assert commands(volta)[0] == "sudo apt install nvidia-driver-580"  # its PCI ID in the log: Volta
    arch_volta = run(_module_refuses_pascal("arch", _open_refuses("1d81")))["CD126"]
    assert commands(arch_volta)[0] == "yay -S nvidia-580xx-dkms"


def test_no_driver_on_arch_with_a_pascal_gpu_installs_the_legacy_branch():
    facts = no_driver(os_id="arch")
    facts.pci = PciFacts(scanned=True, nvidia_gpus=[PciDevice(address="0000:01:00.0", device_id="0x1b06")])
    f = run(facts)["CD101"]
    assert f.fix[0].when == "Arch, driver 580: install the NVIDIA driver"
    assert commands(f)[0] == "yay -S nvidia-580xx-dkms"
    # a Turing or newer GPU keeps the distribution's current (open) driver
    facts.pci.nvidia_gpus[0].device_id = "0x2684"
    assert commands(run(facts)["CD101"])[0] == "sudo pacman -S nvidia-open nvidia-utils"


def test_a_driver_upgrade_for_a_volta_gpu_stays_on_its_last_branch():
    """A V100 on driver 470 with torch cu126: the upgrade never installs a branch that ignores it."""
    dev = [gpu(0, "Tesla V100-SXM2-32GB", "7.0", total_gib=32)]
    facts = healthy(dev, driver="470.82.01", cuda=11040, os_id="rocky")
    facts.torch = torch_cuda("2.13.0+cu126", "12.6", "5.0 6.0 7.0 7.5 8.0 8.6 9.0", dev, available=False)
    by = run(facts)
    f = by["CD203"]
    assert f.fix[0].when.startswith(
        "Upgrade the NVIDIA driver to 560.28.03 or newer (RHEL and derivatives, driver 580)"
    )
    assert f.fix[0].commands[0] == "sudo dnf module install nvidia-driver:580-dkms"


def test_legacy_branch_table():
    from cudadoctor.knowledge.architectures import last_driver_branch

    assert [last_driver_branch(cc) for cc in ("5.2", "6.1", "7.0", "7.5", "12.1", None)] == [
        580,
        580,
        580,
        None,
        None,
        None,
    ]


# --- the fleet's measured floors ---------------------------------------------------------------------


def _h100_nodes(busbw: float):
    from cudadoctor.facts.fleet import AllReduce, FleetFacts, GpuPerf, NodeFacts, RankInfo

    ff = FleetFacts(world_size=16, local_world_size=8, backend="nccl", phases=["inventory", "gpu", "allreduce"])
    for n in range(2):
        ff.nodes.append(NodeFacts(node_rank=n, label=f"gpu{n:02d}", host=f"gpu{n:02d}"))
        for lr in range(8):
            r = n * 8 + lr
            ff.nodes[-1].ranks.append(r)
            ff.ranks.append(RankInfo(rank=r, node_rank=n, local_rank=lr, host=f"gpu{n:02d}", torch="2.13.0+cu130"))
            ff.gpus.append(GpuPerf(r, n, lr, "NVIDIA H100 80GB HBM3", 700.0, 2900.0, 50.0))
        ff.allreduce.append(AllReduce("node", [n], 1 << 30, 8, 0.01, busbw * 8 / 14, busbw))
    return ff


def test_a_healthy_h100_node_without_nvls_is_not_flagged():
    """Ring all-reduce tops out near 370 GB/s on NVLink4 (nccl-tests#212); Azure's 460 needs NVLS. And the
    pinned H2D floor is Azure's current `check_gpu_bw 48`, so 50 GB/s passes."""
    from cudadoctor.rules.fleet import evaluate as fleet

    ring = {f.code: f for f in fleet(_h100_nodes(330.0))}
    assert "CD831" not in ring
    assert not [f for f in ring.values() if f.severity is Severity.WARNING and "H2D" in f.title]
    broken = {f.code: f for f in fleet(_h100_nodes(150.0))}
    assert broken["CD831"].title.endswith("150 GB/s, below 296")
    assert "nccl-tests#212" in broken["CD831"].why


# --- silent wrong results: cuBLAS before 13.1.0.3 on CC 10.x/11.x (pytorch PR#178333) ----------------


def _b200_with_cublas(version: str, name: str = "NVIDIA B200", cc: str = "10.0", pinned: str | None = None):
    from cudadoctor.facts.libraries import LibraryFacts, LoadedLibrary, PinCheck

    dev = [gpu(0, name, cc, total_gib=180)]
    facts = healthy(dev, driver="580.95.05", cuda=13000)
    facts.torch = torch_cuda("2.10.0+cu130", "13.0", CU13X, dev)
    lib = LoadedLibrary(
        "cublas",
        "/opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublasLt.so.13",
        "wheel",
        version=version,
        package="nvidia-cublas",
    )
    pins = [PinCheck("nvidia-cublas", f"=={pinned}", version, ok=False)] if pinned else []
    facts.torch.libraries = LibraryFacts(loaded=[lib], pins=pins, nvidia_installed={"nvidia-cublas": version})
    return facts


def test_blackwell_with_a_cublas_before_the_tmem_fix_is_warned_with_the_patch_release():
    by = run(_b200_with_cublas("13.0.0.19"))
    f = by["CD229"]
    assert f.severity is Severity.WARNING
    assert f.title == "cublas 13.0.0.19 gives silently wrong results on NVIDIA B200: fixed in 13.1.0.3"
    assert commands(f) == ['/opt/venv/bin/python -m pip install "nvidia-cublas>=13.1.0.3"']
    assert "CD229" in run(_b200_with_cublas("13.0.2.14", "NVIDIA B300 SXM6 AC", "10.3"))


def test_the_fixed_cublas_hopper_and_an_unknown_version_are_not_warned():
    assert "CD229" not in run(_b200_with_cublas("13.1.0.3"))
    assert "CD229" not in run(_b200_with_cublas("13.0.0.19", "NVIDIA H100 80GB HBM3", "9.0"))
    assert "CD229" not in run(_b200_with_cublas("13"))  # the soname alone says nothing: unknown is not false
    assert "CD229" not in run(_b200_with_cublas("12.8.4.1"))  # no fixed 12.x release is known: not judged


def test_the_patch_release_over_torchs_pin_is_one_story_not_a_pin_problem():
    by = run(_b200_with_cublas("13.1.0.3", pinned="13.0.0.19"))
    assert "CD229" not in by and "CD219" not in by
    # on a GPU the defect does not touch, the same difference is an ordinary pin mismatch
    by = run(_b200_with_cublas("13.1.0.3", "NVIDIA H100 80GB HBM3", "9.0", pinned="13.0.0.19"))
    assert "CD219" in by
