"""Below torch: WSL, the kernel module, version mismatches, cuInit/NVML errors, containers, GPU health,
multi-GPU P2P. Rule tests on hand-written facts; backend tests on fake /proc, /sys, /dev trees reached
through the host seam (backends/hostfs.Host); fake-NVML end-to-end tests through `run_cli`."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import pytest

from cudadoctor.backends.child import ChildResult
from cudadoctor.backends.hostfs import Host
from cudadoctor.backends.platform_facts import platform_facts
from cudadoctor.backends.wsl import windows_driver_version
from cudadoctor.facts import BandwidthFacts, CudaDriverFacts, DriverFacts, Facts, PciDevice, PciFacts
from cudadoctor.facts.measure import PeerTransfer
from cudadoctor.facts.platform import ContainerFacts, KernelModuleFacts, PlatformFacts, WslFacts, XidEvent
from cudadoctor.knowledge.cuda_errors import CU_INIT_ERRORS, NVML_ERRORS
from cudadoctor.model import Severity
from cudadoctor.report import build
from cudadoctor.rules import evaluate
from cudadoctor.rules.catalogue import CATALOGUE
from cudadoctor.rules.health import health_flags
from tests.facts_fixtures import gpu, healthy, linux
from tests.helpers import by_code, codes, commands

KERNEL = "6.8.0-50-generic"
SB_VAR = "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"


# ---------------------------------------------------------------- helpers


class FakeRun:
    """Answers programs by name (dmesg, modinfo, systemctl, nv-fabricmanager) like the real ones."""

    def __init__(self, answers: dict[str, ChildResult] | None = None) -> None:
        self.answers = answers or {}
        self.calls: list[list[str]] = []

    def __call__(self, argv, timeout):
        assert timeout <= 10, "every program runs with a short time bound"
        self.calls.append(list(argv))
        name = os.path.basename(argv[0])
        return self.answers.get(name, ChildResult(None, "", "", error=f"{name}: not found"))


def ok(stdout: str) -> ChildResult:
    return ChildResult(0, stdout, "")


DMESG_DENIED = ChildResult(1, "", "dmesg: read kernel buffer failed: Operation not permitted")


def tree(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith("/"):
            p.mkdir(parents=True, exist_ok=True)
        elif isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)


def host(root: Path, run: FakeRun | None = None, env: dict | None = None, **kw) -> Host:
    programs = {"dmesg", "modinfo", "systemctl", "nv-fabricmanager"}
    return Host(
        root=str(root),
        environ=env or {},
        run=run or FakeRun(),
        kernel_release=kw.pop("kernel", KERNEL),
        which=lambda name: f"/usr/bin/{name}" if name in programs else None,
        **kw,
    )


def linux_host_tree(root: Path, loaded: bool = False) -> None:
    tree(
        root,
        {
            "proc/version": f"Linux version {KERNEL} (buildd@lcy02) #50-Ubuntu SMP\n",
            "proc/cmdline": "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet\n",
            "proc/1/comm": "systemd\n",
            "sys/module/ext4/": "",
            "sys/firmware/acpi/": "",
            "dev/null": "",
            "etc/modprobe.d/alsa.conf": "options snd-hda-intel index=0\n",
            f"lib/modules/{KERNEL}/kernel/": "",
        },
    )
    if loaded:
        tree(root, {"sys/module/nvidia/version": "550.54.14\n"})


def not_loaded_facts(platform: PlatformFacts, os_id: str = "ubuntu") -> Facts:
    return Facts(
        system=linux(os_id=os_id),
        pci=PciFacts(scanned=True, nvidia_gpus=[PciDevice(address="0000:01:00.0", device_id="0x2684")]),
        driver=DriverFacts(binding="nvidia-ml-py", library_loaded=True, init_status="DRIVER_NOT_LOADED"),
        cuda_driver=CudaDriverFacts(library_found=True, init_result=100),
        platform=platform,
    )


# ---------------------------------------------------------------- the seam itself


def test_host_seam_reads_only_under_its_root_and_never_blocks_on_a_fifo(tmp_path):
    tree(tmp_path, {"proc/version": "Linux version 6.8\n"})
    os.makedirs(tmp_path / "proc/driver/nvidia")
    os.mkfifo(tmp_path / "proc/driver/nvidia/version")  # a reader of a FIFO would wait forever
    h = host(tmp_path)
    start = time.monotonic()
    assert h.read("/proc/version") == "Linux version 6.8\n"
    assert h.read("/proc/driver/nvidia/version") is None
    assert h.listdir("/nonexistent") is None  # unknown, not empty
    assert time.monotonic() - start < 1


def test_may_open_follows_owner_group_other_bits(tmp_path):
    p = tmp_path / "node"
    p.write_text("")
    os.chmod(p, 0o660)
    st = os.stat(p)
    assert Host(uid=st.st_uid + 1, groups=(st.st_gid,)).may_open(st) is True
    assert Host(uid=st.st_uid + 1, groups=(st.st_gid + 1,)).may_open(st) is False
    os.chmod(p, 0o666)
    assert Host(uid=st.st_uid + 1, groups=()).may_open(os.stat(p)) is True


# ---------------------------------------------------------------- 1. WSL


def wsl2_tree(root: Path) -> None:
    tree(
        root,
        {
            "proc/version": "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1)\n",
            "dev/dxg": "",
            "usr/lib/wsl/lib/libcuda.so.1": "",
            "usr/lib/wsl/lib/libnvidia-ml.so.1": "",
            "usr/lib/wsl/drivers/nv_dispi.inf_amd64_7cc7/nv_dispi.inf": "DriverVer = 08/14/2024,32.0.15.6094\n",
            "usr/lib/x86_64-linux-gnu/libc.so.6": "",
            "var/lib/dpkg/status": (
                "Package: bash\nStatus: install ok installed\nVersion: 5.1\n\n"
                "Package: nvidia-driver-550\nStatus: install ok installed\nVersion: 550.90.07-0ubuntu1\n\n"
                "Package: nvidia-driver-535\nStatus: deinstall ok config-files\nVersion: 535.1\n"
            ),
        },
    )


def test_wsl2_with_a_linux_driver_inside_says_remove_it_and_never_modprobe(tmp_path):
    wsl2_tree(tmp_path)
    tree(tmp_path, {"usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.90.07": "", "sys/module/nvidia/": ""})
    tree(tmp_path, {"opt/old/lib/libcuda.so.1": "", "usr/local/cuda/lib64/stubs/libcuda.so": ""})
    env = {"LD_LIBRARY_PATH": "/usr/lib/wsl/lib:/opt/old/lib:/usr/local/cuda/lib64/stubs"}
    run = FakeRun({"dmesg": ok("")})
    platform = platform_facts(host(tmp_path, run, env=env, kernel="5.15.153.1-microsoft-standard-WSL2"))
    w = platform.wsl
    assert w is not None and w.version == 2
    assert w.linux_driver_packages == ["nvidia-driver-550"]  # the removed 535 is not "installed"
    assert w.shadowing_libs == ["/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.90.07", "/opt/old/lib/libcuda.so.1"]
    assert w.windows_driver_version == "560.94"
    assert platform.module is None  # no kernel-module facts inside WSL

    facts = not_loaded_facts(platform)
    facts.system.wsl = True
    findings = evaluate(facts, [])
    assert "CD113" in codes(findings) and "CD114" in codes(findings)
    assert "sudo apt-get remove --purge nvidia-driver-550" in commands(findings)
    every = " ".join(commands(findings)).lower()
    for word in ("modprobe", "dkms", "mokutil", "secure boot", "initramfs"):
        assert word not in every, word
    cd102 = [f for f in findings if f.code == "CD102"]
    assert not cd102 or cd102[0].cause == "CD113"


def test_wsl1_says_convert_to_wsl2_with_the_distro_name(tmp_path):
    tree(tmp_path, {"proc/version": "Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com)\n"})
    platform = platform_facts(host(tmp_path, env={"WSL_DISTRO_NAME": "Ubuntu-22.04"}, kernel="4.4.0-19041-Microsoft"))
    assert platform.wsl is not None and platform.wsl.version == 1
    facts = Facts(
        system=linux(wsl=True),
        driver=DriverFacts(binding="nvidia-ml-py", library_loaded=False, init_status="LIBRARY_NOT_FOUND"),
        platform=platform,
    )
    findings = evaluate(facts, [])
    assert "CD112" in codes(findings)
    assert "wsl --set-version Ubuntu-22.04 2" in commands(findings)
    assert not any("modprobe" in c for c in commands(findings))


def test_wsl_gpu_blocked_by_the_operating_system():
    facts = Facts(
        system=linux(wsl=True),
        driver=DriverFacts(binding="x", library_loaded=True, init_status="OPERATING_SYSTEM"),
        platform=PlatformFacts(wsl=WslFacts(version=2)),
    )
    findings = evaluate(facts, [])
    f = by_code(findings, "CD115")
    assert "wsl --update" in commands([f])
    assert not any("modprobe" in c or "dmesg" in c for c in commands(findings))


def test_windows_driver_version_from_the_inf():
    assert windows_driver_version("DriverVer=01/11/2022,30.0.15.1123") == "511.23"
    assert windows_driver_version("no version here") is None


# ---------------------------------------------------------------- 2. why the module is not loaded


def test_secure_boot_with_an_unsigned_module(tmp_path):
    linux_host_tree(tmp_path)
    tree(
        tmp_path,
        {
            SB_VAR: b"\x06\x00\x00\x00\x01",
            f"lib/modules/{KERNEL}/updates/dkms/nvidia.ko.zst": "",
        },
    )
    run = FakeRun(
        {
            "dmesg": ok(
                "[    5.1] Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7\n"
            ),
            "modinfo": ok("filename: /lib/modules/x/nvidia.ko.zst\nversion: 550.90.07\nlicense: NVIDIA\n"),
        }
    )
    platform = platform_facts(host(tmp_path, run))
    m = platform.module
    assert m.secure_boot is True and m.loaded is False
    assert m.builds[0].version == "550.90.07" and m.builds[0].signed is False and m.builds[0].flavour == "proprietary"
    findings = evaluate(not_loaded_facts(platform), [])
    assert "CD117" in codes(findings)
    assert "sudo mokutil --import /var/lib/dkms/mok.pub" in commands(findings)
    assert by_code(findings, "CD102").cause == "CD117"


def test_secure_boot_off_is_known_false_and_missing_efivars_is_unknown(tmp_path):
    linux_host_tree(tmp_path)
    tree(tmp_path, {SB_VAR: b"\x06\x00\x00\x00\x00"})
    assert platform_facts(host(tmp_path)).module.secure_boot is False
    (tmp_path / SB_VAR).unlink()
    os.rmdir(tmp_path / "sys/firmware/efi/efivars")
    assert platform_facts(host(tmp_path)).module.secure_boot is None  # EFI present, variable unreadable


def test_nouveau_bound_gives_blacklist_and_this_distros_initramfs(tmp_path):
    linux_host_tree(tmp_path)
    tree(tmp_path, {"sys/module/nouveau/": "", f"lib/modules/{KERNEL}/updates/dkms/nvidia.ko": ""})
    platform = platform_facts(host(tmp_path, FakeRun({"modinfo": ok("version: 550.90.07\nsigner: DKMS\n")})))
    assert platform.module.nouveau_loaded is True and platform.module.nouveau_blacklisted is False
    fedora = evaluate(not_loaded_facts(platform, os_id="fedora"), [])
    assert "CD118" in codes(fedora) and "sudo dracut --force" in commands(fedora)
    ubuntu = evaluate(not_loaded_facts(platform, os_id="ubuntu"), [])
    assert "sudo update-initramfs -u" in commands(ubuntu)


def test_no_module_for_the_running_kernel_after_an_upgrade(tmp_path):
    linux_host_tree(tmp_path)
    tree(
        tmp_path,
        {
            "lib/modules/6.8.0-45-generic/updates/dkms/nvidia.ko": "",
            "var/lib/dkms/nvidia/550.90.07/6.8.0-45-generic/x86_64/module/nvidia.ko": "",
            "var/lib/dkms/nvidia/550.90.07/source/": "",
        },
    )
    platform = platform_facts(host(tmp_path))
    assert platform.module.dkms == {"550.90.07": ["6.8.0-45-generic"]}
    findings = evaluate(not_loaded_facts(platform), [])
    f = by_code(findings, "CD119")
    assert KERNEL in f.title and "6.8.0-45-generic" in f.title
    assert "sudo dkms autoinstall -k $(uname -r)" in commands([f])
    assert by_code(findings, "CD102").cause == "CD119"


def test_open_module_needed_by_the_gpu_from_the_kernel_log(tmp_path):
    linux_host_tree(tmp_path, loaded=True)
    line = (
        "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2b85) installed in this system requires use of "
        "the NVIDIA open kernel modules."
    )
    platform = platform_facts(host(tmp_path, FakeRun({"dmesg": ok(f"[    4.2] {line}\n")})))
    assert platform.module.kernel_log_lines == [f"[    4.2] {line}"]
    facts = not_loaded_facts(platform)
    findings = evaluate(facts, [])
    f = by_code(findings, "CD126")
    assert "open" in f.title and "sudo apt install nvidia-driver-550-open" in commands([f])


def test_device_nodes_closed_to_this_user(tmp_path):
    linux_host_tree(tmp_path, loaded=True)
    tree(tmp_path, {"dev/nvidiactl": "", "dev/nvidia0": "", "dev/nvidia-uvm": ""})
    render_gid = 4321
    for n in ("nvidiactl", "nvidia0", "nvidia-uvm"):
        os.chmod(tmp_path / "dev" / n, 0o660)
        if os.getuid() == 0:
            os.chown(tmp_path / "dev" / n, -1, render_gid)
    st = os.stat(tmp_path / "dev/nvidiactl")
    tree(tmp_path, {"etc/group": f"root:x:0:\nrender:x:{st.st_gid}:bob\n"})
    platform = platform_facts(host(tmp_path, uid=st.st_uid + 1000, groups=(st.st_gid + 1000,)))
    nodes = {n.path: n for n in platform.module.device_nodes}
    assert nodes["/dev/nvidiactl"].accessible is False and nodes["/dev/nvidiactl"].mode == "-rw-rw----"
    facts = not_loaded_facts(platform)
    facts.driver = DriverFacts(binding="x", library_loaded=True, init_status="NO_PERMISSION")
    findings = evaluate(facts, [])
    f = by_code(findings, "CD127")
    assert "/dev/nvidiactl" in f.title and "sudo usermod -aG render alice" in commands([f])


def test_missing_uvm_node_is_silent_while_cuda_works(tmp_path):
    linux_host_tree(tmp_path, loaded=True)
    tree(tmp_path, {"dev/nvidiactl": "", "dev/nvidia0": ""})
    platform = platform_facts(host(tmp_path))
    facts = healthy([gpu(0, "NVIDIA H100 80GB HBM3", "9.0")])
    facts.platform = platform
    assert "CD127" not in codes(evaluate(facts, []))


# ---------------------------------------------------------------- 3. version mismatch, two shapes


def mismatch_tree(root: Path, module_on_disk: str, libs: str) -> Host:
    linux_host_tree(root, loaded=True)
    tree(
        root,
        {
            f"lib/modules/{KERNEL}/kernel/nvidia-550/nvidia.ko": "",
            f"usr/lib/x86_64-linux-gnu/libnvidia-ml.so.{libs}": "",
            f"usr/lib/x86_64-linux-gnu/libcuda.so.{libs}": "",
        },
    )
    return host(root, FakeRun({"modinfo": ok(f"version: {module_on_disk}\nlicense: NVIDIA\nsigner: Canonical\n")}))


def mismatch_facts(platform: PlatformFacts, libs: str) -> Facts:
    return Facts(
        system=linux(),
        driver=DriverFacts(
            binding="x", library_loaded=True, init_status="LIB_RM_VERSION_MISMATCH", library_version=libs
        ),
        platform=platform,
    )


def test_loaded_module_older_than_disk_says_reboot(tmp_path):
    platform = platform_facts(mismatch_tree(tmp_path, "550.90.07", "550.90.07"))
    assert platform.module.loaded_version == "550.54.14"
    findings = evaluate(mismatch_facts(platform, "550.90.07"), [])
    f = by_code(findings, "CD103")
    assert "sudo reboot" in commands([f]) and "550.54.14" in f.title and "550.90.07" in f.title
    assert "CD128" not in codes(findings)


def test_module_and_libraries_differ_on_disk_says_a_reboot_will_not_help(tmp_path):
    platform = platform_facts(mismatch_tree(tmp_path, "570.124.06", "570.124.04"))
    findings = evaluate(mismatch_facts(platform, "570.124.04"), [])
    assert "CD128" in codes(findings) and "CD103" not in codes(findings)
    f = by_code(findings, "CD128")
    assert "570.124.06" in f.title and "570.124.04" in f.title
    assert "sudo reboot" not in commands([f])[:1]  # reboot is never the first advice
    assert "reboot" in f.why.lower() and "not" in f.why.lower()


# ---------------------------------------------------------------- 4. cuInit and NVML codes


@pytest.mark.parametrize("code", [3, 34, 46, 100, 101, 222, 304, 802, 803, 804, 999])
def test_every_cuinit_code_has_a_name_a_cause_and_a_fix(code):
    name, meaning = CU_INIT_ERRORS[code][:2]
    assert name.startswith("CUDA_ERROR_") and len(meaning) > 20
    facts = Facts(system=linux(), cuda_driver=CudaDriverFacts(library_found=True, init_result=code))
    findings = [f for f in evaluate(facts, []) if f.section == "CUDA driver library"]
    assert findings and findings[0].fix, code
    assert not any(fx.commands == ["sudo dmesg -T | grep -i -E 'NVRM|Xid' | tail"] for fx in findings[0].fix[:1])


def test_cuinit_802_says_start_the_fabric_manager_of_the_drivers_version():
    facts = healthy([gpu(i, "NVIDIA H100 80GB HBM3", "9.0") for i in range(8)])
    facts.cuda_driver = CudaDriverFacts(library_found=True, init_result=802)
    findings = evaluate(facts, [])
    f = next(f for f in findings if f.section == "CUDA driver library")
    assert "sudo systemctl enable --now nvidia-fabricmanager" in commands([f])


def test_fabric_manager_of_another_version_on_an_nvswitch_system(tmp_path):
    linux_host_tree(tmp_path, loaded=True)
    for i in range(4):
        tree(tmp_path, {f"sys/bus/pci/devices/0000:0{i}:00.0/vendor": "0x10de\n"})
        tree(tmp_path, {f"sys/bus/pci/devices/0000:0{i}:00.0/class": "0x068000\n"})
    run = FakeRun(
        {
            "systemctl": ok("LoadState=loaded\nActiveState=failed\n"),
            "nv-fabricmanager": ok("Fabric Manager version is : 550.54.15\n"),
        }
    )
    platform = platform_facts(host(tmp_path, run))
    m = platform.module
    assert m.nvswitch_count == 4 and m.fabric_manager == "failed" and m.fabric_manager_version == "550.54.15"
    facts = healthy([gpu(0, "NVIDIA H100 80GB HBM3", "9.0")], driver="550.54.14")
    facts.platform = platform
    facts.cuda_driver = CudaDriverFacts(library_found=True, init_result=802)
    findings = evaluate(facts, [])
    f = by_code(findings, "CD143")
    assert "550.54.15" in f.title and "550.54.14" in f.title
    assert "sudo apt install nvidia-fabricmanager-550=550.54.14-1" in commands([f])
    assert next(x for x in findings if x.section == "CUDA driver library").cause == "CD143"


def test_cuinit_46_points_at_exclusive_compute_mode():
    facts = healthy([gpu(0, "NVIDIA A100-SXM4-80GB", "8.0", compute_mode="exclusive_process")])
    facts.cuda_driver = CudaDriverFacts(library_found=True, init_result=46)
    findings = evaluate(facts, [])
    assert "CD155" in codes(findings)
    cu = next(x for x in findings if x.section == "CUDA driver library")
    assert cu.cause == "CD155"
    assert "sudo nvidia-smi -i 0 -c DEFAULT" in commands(findings)


@pytest.mark.parametrize("name", ["IRQ_ISSUE", "INSUFFICIENT_POWER", "CORRUPTED_INFOROM", "TIMEOUT", "UNKNOWN"])
def test_nvml_init_errors_have_a_cause_and_a_fix(name):
    assert name in NVML_ERRORS
    facts = Facts(system=linux(), driver=DriverFacts(binding="x", library_loaded=True, init_status=name))
    f = by_code(evaluate(facts, []), "CD107")
    assert NVML_ERRORS[name][1] in f.why and f.fix


# ---------------------------------------------------------------- 5. containers and Kubernetes


def container_tree(root: Path) -> None:
    tree(root, {"proc/1/comm": "python\n", "proc/1/cgroup": "0::/\n", ".dockerenv": "", "dev/null": ""})


def no_driver_in(platform: PlatformFacts) -> Facts:
    return Facts(
        system=linux(in_container=True, container_hints=["/.dockerenv"]),
        driver=DriverFacts(binding="x", library_loaded=False, init_status="LIBRARY_NOT_FOUND"),
        platform=platform,
    )


def test_nvidia_visible_devices_void_is_the_cause(tmp_path):
    container_tree(tmp_path)
    platform = platform_facts(host(tmp_path, env={"NVIDIA_VISIBLE_DEVICES": "void"}))
    c = platform.container
    assert c.runtime == "docker" and c.visible_devices == "void" and c.own_pid_namespace is True
    findings = evaluate(no_driver_in(platform), [])
    f = by_code(findings, "CD144")
    assert 'NVIDIA_VISIBLE_DEVICES="void"' in f.title and "docker run --gpus all --rm IMAGE" in commands([f])
    assert by_code(findings, "CD101").cause == "CD144"


def test_kubernetes_pod_without_gpus_gets_the_pod_spec(tmp_path):
    container_tree(tmp_path)
    (tmp_path / ".dockerenv").unlink()
    tree(tmp_path, {"proc/1/cgroup": "0::/kubepods/besteffort/pod1234/abcd\n"})
    platform = platform_facts(host(tmp_path, env={"KUBERNETES_SERVICE_HOST": "10.0.0.1"}))
    assert platform.container.kubernetes is True
    findings = evaluate(no_driver_in(platform), [])
    f = by_code(findings, "CD146")
    assert any("nvidia.com/gpu" in c and "runtimeClassName: nvidia" in c for c in commands([f]))


def test_capabilities_without_compute_explain_a_missing_libcuda():
    platform = PlatformFacts(container=ContainerFacts(runtime="docker", driver_capabilities="utility"))
    facts = healthy([gpu(0, "NVIDIA L4", "8.9")], in_container=True, container_hints=["/.dockerenv"])
    facts.platform = platform
    facts.cuda_driver = CudaDriverFacts(library_found=False)
    findings = evaluate(facts, [])
    assert "CD145" in codes(findings)
    assert by_code(findings, "CD121").cause == "CD145"


def test_capabilities_explain_libcuda_even_when_only_the_platform_probe_saw_the_container():
    """Found by the story properties on another machine: the system probe said "not a container" while the
    platform probe read the runtime and its capabilities; CD121 then stood as a second root cause and
    took the verdict from CD145."""
    facts = healthy([gpu(0, "NVIDIA L4", "8.9")], in_container=False)
    facts.platform = PlatformFacts(container=ContainerFacts(runtime="docker", driver_capabilities="utility"))
    facts.cuda_driver = CudaDriverFacts(library_found=False)
    findings = evaluate(facts, [])
    assert by_code(findings, "CD121").cause == "CD145"
    assert 'lacks "compute"' in build("check", facts, [], findings).verdict


def test_a_driver_that_counts_no_gpu_is_the_cause_of_a_failing_cuinit():
    """Also found by the story properties: NVML counted 0 GPUs and cuInit said NOT_INITIALIZED; the verdict
    named cuInit, a consequence, instead of the driver that sees no GPU."""
    facts = healthy([gpu(0, "NVIDIA L4", "8.9")])
    facts.driver.device_count, facts.driver.devices = 0, []
    facts.cuda_driver = CudaDriverFacts(library_found=True, init_result=3, driver_version=12040)
    findings = evaluate(facts, [])
    assert by_code(findings, "CD122").cause == "CD110"
    assert "reports no GPU" in build("check", facts, [], findings).verdict


def test_memory_used_without_processes_in_a_container_says_pid_namespace():
    platform = PlatformFacts(container=ContainerFacts(runtime="docker", own_pid_namespace=True))
    facts = healthy([gpu(0, "NVIDIA A100-SXM4-80GB", "8.0", used_gib=30)], in_container=True)
    facts.platform = platform
    f = by_code(evaluate(facts, []), "CD147")
    assert "PID namespace" in f.why and "no processes" not in f.title.lower()
    assert "docker run --pid=host --gpus all ..." in commands([f])


def test_small_shm_in_a_container_says_shm_size_and_ipc_host():
    facts = healthy([gpu(0, "NVIDIA L4", "8.9")], shm_total=64 << 20, in_container=True)
    f = by_code(evaluate(facts, []), "CD140")
    assert "docker run --shm-size=8g ..." in commands([f]) and "docker run --ipc=host ..." in commands([f])


# ---------------------------------------------------------------- 6. GPU health


def sick(**kw):
    return gpu(0, "NVIDIA A100-SXM4-80GB", "8.0", **kw)


def test_health_flags_compact_column():
    assert health_flags(gpu(0, "x", "8.0")) == "?"
    healthy_dev = sick(
        ecc_uncorrected_volatile=0, remapped_rows_pending=False, clocks_event_reasons=1, compute_mode="default"
    )
    assert health_flags(healthy_dev) == ""
    bad = sick(
        ecc_uncorrected_volatile=2,
        remapped_rows_pending=True,
        clocks_event_reasons=0x40 | 0x80,
        compute_mode="prohibited",
    )
    assert health_flags(bad) == "ERTPX"
    assert health_flags(dataclasses.replace(bad, error="GPU_IS_LOST")) == "L"


def test_health_findings_from_nvml_facts():
    dev = sick(
        ecc_uncorrected_volatile=3,
        ecc_uncorrected_aggregate=7,
        remapped_rows_pending=True,
        remapped_rows_failure=False,
        remapped_rows_uncorrectable=2,
        clocks_event_reasons=0x40,
        persistence_mode=False,
        temperature_c=91,
    )
    findings = evaluate(healthy([dev]), [])
    assert by_code(findings, "CD150").severity is Severity.ERROR
    assert by_code(findings, "CD152").severity is Severity.WARNING
    assert "thermal" in by_code(findings, "CD153").title
    assert "sudo systemctl enable --now nvidia-persistenced" in commands(findings)
    assert "sudo nvidia-smi --gpu-reset -i 0" in commands(findings)


def test_remap_failure_is_an_error_and_unknown_health_adds_nothing():
    findings = evaluate(healthy([sick(remapped_rows_failure=True)]), [])
    assert by_code(findings, "CD152").severity is Severity.ERROR
    quiet = evaluate(healthy([gpu(0, "NVIDIA A100-SXM4-80GB", "8.0")]), [])
    assert not {"CD150", "CD151", "CD152", "CD153", "CD154", "CD155"} & set(codes(quiet))


def test_xid_errors_with_meanings_and_unreadable_log_prints_the_sudo_command():
    facts = healthy([sick()])
    facts.platform = PlatformFacts(
        xid=[XidEvent(79, "0000:3b:00"), XidEvent(13, "0000:3b:00"), XidEvent(13, "0000:3b:00")],
    )
    f = by_code(evaluate(facts, []), "CD156")
    assert f.severity is Severity.ERROR and "fallen off the bus" in f.title
    assert ["13", "0000:3b:00", "2"] == f.tables[0].rows[0][:3]
    facts.platform = PlatformFacts(xid=None, module=KernelModuleFacts(kernel_log_readable=False))
    f = by_code(evaluate(facts, []), "CD157")
    assert f.severity is Severity.INFO and "sudo dmesg -T | grep -i xid" in commands([f])


def test_xid_from_a_fake_kernel_log_and_a_denied_one(tmp_path):
    linux_host_tree(tmp_path, loaded=True)
    log = "[ 812.3] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
    assert [x.xid for x in platform_facts(host(tmp_path, FakeRun({"dmesg": ok(log)}))).xid] == [79]
    denied = platform_facts(host(tmp_path, FakeRun({"dmesg": DMESG_DENIED})))
    assert denied.xid is None and denied.module.kernel_log_readable is False


# ---------------------------------------------------------------- 7. multi-GPU


def multi(matrix, p2p, names=None, **platform):
    devices = [
        gpu(i, (names or {}).get(i, "NVIDIA A100-PCIE-40GB"), "8.0", pcie_gen_max=4, pcie_width_max=16)
        for i in range(len(matrix))
    ]
    facts = healthy(devices)
    facts.bandwidth = BandwidthFacts(
        device_names={str(i): d.name for i, d in enumerate(devices)}, p2p_access=matrix, p2p=p2p
    )
    facts.platform = PlatformFacts(**platform)
    return facts


def test_p2p_missing_on_a_server_gives_iommu_and_nccl_fixes(tmp_path):
    tree(
        tmp_path,
        {
            "sys/class/iommu/dmar0/": "",
            "proc/cmdline": "root=/dev/sda1 intel_iommu=on\n",
            "sys/bus/pci/devices/0000:3b:00.0/vendor": "0x10de\n",
            "sys/bus/pci/devices/0000:3b:00.0/class": "0x030200\n",
            "sys/kernel/iommu_groups/17/type": "DMA-FQ\n",
        },
    )
    os.symlink("../../../kernel/iommu_groups/17", tmp_path / "sys/bus/pci/devices/0000:3b:00.0/iommu_group")
    from cudadoctor.backends.platform_facts import iommu_facts

    iommu = iommu_facts(host(tmp_path))
    assert (
        iommu.enabled is True and iommu.cmdline == "intel_iommu=on" and iommu.group_types == {"0000:3b:00.0": "DMA-FQ"}
    )
    facts = multi([[True, False], [False, True]], [PeerTransfer(0, 1, 9.0), PeerTransfer(1, 0, 9.0)], iommu=iommu)
    f = by_code(evaluate(facts, []), "CD161")
    cmds = commands([f])
    assert "export NCCL_P2P_DISABLE=1" in cmds and any("iommu=pt" in c for c in cmds)
    assert f.tables[0].rows == [["0", "-", "no"], ["1", "no", "-"]]


def test_geforce_without_p2p_is_said_plainly():
    facts = multi(
        [[True, False], [False, True]], [], names={0: "NVIDIA GeForce RTX 4090", 1: "NVIDIA GeForce RTX 4090"}
    )
    f = by_code(evaluate(facts, []), "CD161")
    assert f.severity is Severity.INFO and "GeForce" in f.title


def test_slow_and_healthy_p2p():
    slow = multi([[True, True], [True, True]], [PeerTransfer(0, 1, 3.0), PeerTransfer(1, 0, 24.0)])
    f = by_code(evaluate(slow, []), "CD162")
    assert "3.0 GB/s" in f.title
    good = multi([[True, True], [True, True]], [PeerTransfer(0, 1, 24.0), PeerTransfer(1, 0, 24.5)])
    assert "CD160" in codes(evaluate(good, []))


# ---------------------------------------------------------------- catalogue, explain, knowing less


NEW_CODES = ["CD112", "CD113", "CD114", "CD115", "CD117", "CD118", "CD119", "CD126", "CD127", "CD128"]
NEW_CODES += ["CD143", "CD144", "CD145", "CD146", "CD147", "CD150", "CD151", "CD152", "CD153", "CD154"]
NEW_CODES += ["CD155", "CD156", "CD157", "CD160", "CD161", "CD162"]


def test_every_new_code_has_a_page():
    for code in NEW_CODES:
        assert code in CATALOGUE and len(CATALOGUE[code].explanation) > 60, code
    text = (Path(__file__).resolve().parents[2] / "docs" / "findings.md").read_text()
    assert all(f"{code}" in text for code in NEW_CODES)


def test_explain_prints_a_new_code(run_cli):
    r = run_cli("explain", "CD128")
    assert r.code == 0 and "reboot" in r.stdout.lower()


def test_knowing_less_below_torch_adds_no_error_or_warning(tmp_path):
    wsl2_tree(tmp_path)
    platform = platform_facts(host(tmp_path, kernel="5.15.153.1-microsoft-standard-WSL2"))
    base = healthy([sick(ecc_uncorrected_volatile=0)])
    full = dataclasses.replace(base, platform=platform)
    bad = {f.code for f in evaluate(base, []) if f.severity in (Severity.ERROR, Severity.WARNING)}
    assert bad <= {f.code for f in evaluate(full, []) if f.severity in (Severity.ERROR, Severity.WARNING)}


# ---------------------------------------------------------------- fake NVML end to end


HEALTH_MACHINE = """\
driver 550.54.14
cuda 12040
device name="NVIDIA A100" cc=8.0 ecc=2/9 remapped=0/3 remap_pending=1 compute_mode=3 persistence=0 clocks_event=0x40
device name="NVIDIA A100-SXM4-80GB" cc=8.0 health_error=4 unsupported=compute_mode
device name="NVIDIA A100-SXM4-80GB" cc=8.0 retired=2/1 retired_pending=1
"""


def test_fake_nvml_health_queries_end_to_end(run_cli):
    r = run_cli("check", "--json", "--only", "driver,system", machine=HEALTH_MACHINE)
    devices = r.json["facts"]["driver"]["devices"]
    d0, d1, d2 = devices
    assert d0["ecc_uncorrected_volatile"] == 2 and d0["ecc_uncorrected_aggregate"] == 9
    assert d0["remapped_rows_pending"] is True and d0["remapped_rows_uncorrectable"] == 3
    assert d0["compute_mode"] == "exclusive_process" and d0["persistence_mode"] is False
    assert d0["clocks_event_reasons"] == 0x40
    # NO_PERMISSION on every health query: unknown, not healthy and not broken
    assert d1["ecc_uncorrected_volatile"] is None and d1["compute_mode"] is None and d1["persistence_mode"] is None
    assert d2["retired_pages_sbe"] == 2 and d2["retired_pages_dbe"] == 1 and d2["retired_pages_pending"] is True
    found = set(r.codes())
    assert {"CD150", "CD151", "CD152", "CD153", "CD154", "CD155"} <= found


def test_fake_cuinit_802_end_to_end(run_cli):
    machine = 'driver 550.54.14\ncuda 12040\ncuda_init 802\ndevice name="NVIDIA H100 80GB HBM3" cc=9.0\n'
    r = run_cli("check", "--json", "--only", "driver,cuda_driver", machine=machine)
    f = next(f for f in r.json["findings"] if f["code"] == "CD122")
    assert "SYSTEM_NOT_READY" in f["title"]
    assert any("nvidia-fabricmanager" in c for fx in f["fix"] for c in fx["commands"])


def test_module_not_loaded_without_a_found_cause_leaves_out_what_is_ruled_out(tmp_path):
    linux_host_tree(tmp_path)
    tree(tmp_path, {SB_VAR: b"\x06\x00\x00\x00\x00", f"lib/modules/{KERNEL}/updates/dkms/nvidia.ko": ""})
    platform = platform_facts(host(tmp_path, FakeRun({"dmesg": DMESG_DENIED})))
    f = by_code(evaluate(not_loaded_facts(platform), []), "CD102")
    assert f.cause is None
    assert "Secure Boot is off" in f.why and "readable only by root" in f.why
    cmds = commands([f])
    assert "mokutil --sb-state" not in cmds and "sudo dkms autoinstall" not in cmds
    assert "sudo dmesg -T | grep -i -E 'nvidia|nouveau|secure boot' | tail -20" in cmds


def test_container_started_without_device_nodes(tmp_path):
    container_tree(tmp_path)
    tree(tmp_path, {"sys/module/nvidia/version": "550.54.14\n"})
    platform = platform_facts(host(tmp_path, env={"NVIDIA_VISIBLE_DEVICES": "all"}))
    facts = no_driver_in(platform)
    facts.driver = DriverFacts(binding="x", library_loaded=True, init_status="NO_PERMISSION")
    findings = evaluate(facts, [])
    f = by_code(findings, "CD127")
    assert "/dev/nvidiactl" in f.title and "docker run --gpus all --rm IMAGE nvidia-smi" in commands([f])
    assert by_code(findings, "CD104").cause == "CD127"


class _FakeCuda:
    """Just enough of torch.cuda for measure_child.peer_to_peer: 3 GPUs, no P2P between 0 and 2."""

    def __init__(self) -> None:
        self.n = 3

    def device_count(self):
        return self.n

    def can_device_access_peer(self, i, j):
        return {i, j} != {0, 2}

    def device(self, i):
        import contextlib

        return contextlib.nullcontext()

    def synchronize(self, i=None):
        pass

    def empty_cache(self):
        pass

    class Event:
        clock = 0.0

        def __init__(self, enable_timing=False):
            self.t = 0.0

        def record(self):
            _FakeCuda.Event.clock += 0.004  # 4 ms per copy
            self.t = _FakeCuda.Event.clock

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return (end.t - self.t) * 1000.0


class _FakeTensor:
    def fill_(self, v):
        return self

    def copy_(self, src, non_blocking=False):
        return self


class _FakeTorch:
    uint8 = "uint8"
    cuda = _FakeCuda()

    @staticmethod
    def empty(n, dtype=None, device=None):
        return _FakeTensor()


def test_measure_child_p2p_matrix_and_rates_read_back_as_facts():
    from cudadoctor.backends.children import measure_child
    from cudadoctor.facts.codec import from_jsonable

    out = {"transfers": [], "device_names": {"0": "A", "1": "A", "2": "A"}}
    measure_child.peer_to_peer(_FakeTorch, out, 4 << 20, 2)
    facts = from_jsonable(BandwidthFacts, out)
    assert facts.p2p_access == [[True, True, False], [True, True, True], [False, True, True]]
    assert len(facts.p2p) == 6 and all(t.gbps and t.gbps > 0 for t in facts.p2p)
    assert {(t.src, t.dst) for t in facts.p2p} == {(i, j) for i in range(3) for j in range(3) if i != j}


def test_blackwell_gpu_with_only_a_proprietary_module_built(tmp_path):
    linux_host_tree(tmp_path)
    tree(tmp_path, {f"lib/modules/{KERNEL}/updates/dkms/nvidia.ko": ""})
    run = FakeRun({"dmesg": DMESG_DENIED, "modinfo": ok("version: 570.133.07\nlicense: NVIDIA\nsigner: DKMS\n")})
    facts = not_loaded_facts(platform_facts(host(tmp_path, run)))
    facts.pci = PciFacts(scanned=True, nvidia_gpus=[PciDevice(address="0000:01:00.0", device_id="0x2b85")])
    f = by_code(evaluate(facts, []), "CD126")
    assert "0x2b85" in f.why and "sudo apt install nvidia-driver-570-open" in commands([f])
    facts.pci.nvidia_gpus[0].device_id = "0x2684"  # Ada: both flavours work, so no verdict
    assert "CD126" not in codes(evaluate(facts, []))


def test_system_and_pci_facts_through_the_seam(tmp_path):
    from cudadoctor.backends.host import pci_facts, system_facts

    tree(
        tmp_path,
        {
            "etc/os-release": 'PRETTY_NAME="Rocky Linux 9.4"\nID=rocky\n',
            "run/.containerenv": "",
            "proc/1/cgroup": "0::/\n",
            "proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15\n",
            "sys/bus/pci/devices/0000:01:00.0/vendor": "0x10de\n",
            "sys/bus/pci/devices/0000:01:00.0/class": "0x030000\n",
            "sys/bus/pci/devices/0000:01:00.0/device": "0x2684\n",
            "sys/bus/drivers/nouveau/": "",
        },
    )
    os.symlink("../../../bus/drivers/nouveau", tmp_path / "sys/bus/pci/devices/0000:01:00.0/driver")
    s = system_facts({}, host(tmp_path))
    assert (s.os_release, s.os_id, s.in_container) == ("Rocky Linux 9.4", "rocky", True)
    assert s.kernel_module_version == "570.86.15"
    pci = pci_facts(host=host(tmp_path))
    assert [(g.address, g.device_id, g.kernel_driver) for g in pci.nvidia_gpus] == [
        ("0000:01:00.0", "0x2684", "nouveau")
    ]


def test_platform_facts_survive_a_saved_report(tmp_path):
    from cudadoctor.facts.codec import from_jsonable, to_jsonable

    linux_host_tree(tmp_path, loaded=True)
    tree(
        tmp_path,
        {
            "var/lib/dkms/nvidia/550.54.14/6.8.0-50-generic/x86_64/": "",
            f"lib/modules/{KERNEL}/updates/dkms/nvidia.ko": "",
            "dev/nvidiactl": "",
        },
    )
    log = "NVRM: Xid (PCI:0000:3b:00): 48, pid=1, DBE (0x1) detected\n"
    platform = platform_facts(host(tmp_path, FakeRun({"dmesg": ok(log), "modinfo": ok("version: 550.54.14\n")})))
    again = from_jsonable(PlatformFacts, to_jsonable(platform))
    assert again == platform and again.xid[0].xid == 48 and again.module.dkms == {"550.54.14": [KERNEL]}


@pytest.mark.parametrize(
    "facts",
    [
        Facts(
            system=linux(wsl=True),
            driver=DriverFacts(binding="x", library_loaded=True, init_status="OPERATING_SYSTEM"),
            cuda_driver=CudaDriverFacts(library_found=True, init_result=304),
            platform=PlatformFacts(wsl=WslFacts(version=2, linux_driver_packages=["cuda-drivers"])),
        ),
        Facts(
            system=linux(wsl=True),
            cuda_driver=CudaDriverFacts(library_found=True, init_result=304),
        ),
        Facts(
            system=linux(),
            driver=DriverFacts(binding="x", library_loaded=True, init_status="ok", device_count=0),
            platform=PlatformFacts(container=ContainerFacts(runtime="docker", visible_devices="none")),
        ),
    ],
)
def test_every_cause_points_at_a_finding_that_is_there(facts):
    findings = evaluate(facts, [])
    present = set(codes(findings))
    assert all(f.cause in present for f in findings if f.cause), [(f.code, f.cause) for f in findings]


# ---------------------------------------------------------------- review fixes (regressions)


def wsl2_facts(os_id: str = "ubuntu", system_wsl: bool | None = True, **wsl) -> Facts:
    """WSL2 with NVML failing: the PCI bus inside WSL lists no GPU (the Windows driver owns it)."""
    return Facts(
        system=linux(os_id=os_id, wsl=system_wsl),
        pci=PciFacts(scanned=True, nvidia_gpus=[]),
        driver=DriverFacts(binding="x", library_loaded=True, init_status="DRIVER_NOT_LOADED"),
        platform=PlatformFacts(wsl=WslFacts(version=2, **wsl)),
    )


def test_wsl2_pci_scan_without_a_gpu_is_not_no_gpu():
    from cudadoctor.rules.predicates import gpu_presence
    from tests.facts_fixtures import torch_cpu

    facts = wsl2_facts(system_wsl=None, linux_driver_packages=["nvidia-driver-550"])
    facts.torch = torch_cpu()
    assert gpu_presence(facts) is None
    findings = evaluate(facts, [])
    assert {"CD102", "CD113"} <= set(codes(findings))
    assert not any("no NVIDIA GPU" in f.title for f in findings), [f.title for f in findings]


def test_wsl2_from_platform_facts_alone_without_the_driver_library_is_not_cd108():
    facts = wsl2_facts(system_wsl=None, lib_dir=False)
    facts.driver = DriverFacts(binding="x", library_loaded=False, init_status="LIBRARY_NOT_FOUND")
    findings = evaluate(facts, [])
    assert "CD108" not in codes(findings)
    f = by_code(findings, "CD101")
    assert "WSL2" in f.title and "wsl --shutdown" in commands([f])


def test_shadowing_copy_with_an_unknown_driver_is_no_worse_than_with_a_working_one():
    libs = ["/usr/lib/x86_64-linux-gnu/libcuda.so.1"]

    def severity(driver):
        facts = wsl2_facts(shadowing_libs=libs)
        facts.driver = driver
        return by_code(evaluate(facts, []), "CD114").severity

    working = DriverFacts(binding="x", library_loaded=True, init_status="ok", driver_version="560.94", device_count=0)
    assert severity(working) is Severity.WARNING
    assert severity(None) is Severity.WARNING  # unknown is not broken
    assert severity(DriverFacts(binding="x", library_loaded=True, init_status="DRIVER_NOT_LOADED")) is Severity.ERROR


def test_fedora_under_wsl_gets_dnf_and_rpm_never_apt_or_dpkg():
    facts = wsl2_facts(
        os_id="fedora",
        linux_driver_packages=["cuda-drivers"],
        shadowing_libs=["/usr/lib64/libcuda.so.1"],
    )
    cmds = commands(evaluate(facts, []))
    assert "sudo dnf remove cuda-drivers" in cmds and "sudo dnf autoremove" in cmds
    assert "rpm -qf /usr/lib64/libcuda.so.1" in cmds and "sudo dnf install cuda-toolkit" in cmds
    assert not any(c.startswith(("sudo apt", "dpkg")) for c in cmds), cmds
    # no package database read (not dpkg), only the module file: ask rpm who owns it
    module = "/lib/modules/5.15.153.1-microsoft-standard-WSL2/extra/nvidia.ko"
    facts = wsl2_facts(os_id="fedora", linux_module_files=[module])
    cmds = commands([by_code(evaluate(facts, []), "CD113")])
    assert f"rpm -qf {module}" in cmds and "sudo nvidia-uninstall" in cmds
    # no Windows driver libraries either: the generic WSL advice removes with dnf, too
    facts = wsl2_facts(os_id="fedora", lib_dir=False)
    facts.driver = DriverFacts(binding="x", library_loaded=False, init_status="LIBRARY_NOT_FOUND")
    cmds = commands([by_code(evaluate(facts, []), "CD101")])
    assert any(c.startswith("sudo dnf remove 'nvidia-driver*'") for c in cmds)
    assert not any(c.startswith(("sudo apt", "dpkg")) for c in cmds), cmds


def test_a_run_installer_inside_wsl_gets_its_real_uninstall_command():
    module = "/lib/modules/5.15.153.1-microsoft-standard-WSL2/kernel/drivers/video/nvidia.ko"
    facts = wsl2_facts(linux_driver_packages=[], linux_module_files=[module])
    f = by_code(evaluate(facts, []), "CD113")
    removal = f.fix[0]
    assert removal.commands[0] == "sudo nvidia-uninstall" and ".run" in removal.when
    assert not any(c.lstrip().startswith("#") for c in commands([f]))


def nodes_facts(cuda: CudaDriverFacts) -> Facts:
    from cudadoctor.facts.platform import DeviceNode

    facts = healthy([gpu(0, "NVIDIA H100 80GB HBM3", "9.0")])
    facts.cuda_driver = cuda
    facts.platform = PlatformFacts(
        module=KernelModuleFacts(
            kernel=KERNEL,
            loaded=True,
            device_nodes=[
                DeviceNode("/dev/nvidiactl", True, True),
                DeviceNode("/dev/nvidia0", True, True),
                DeviceNode("/dev/nvidia-uvm", False),
            ],
        )
    )
    return facts


def test_missing_uvm_node_while_cuinit_timed_out_is_not_an_error():
    timed_out = nodes_facts(CudaDriverFacts(library_found=True, timed_out=True))
    assert "CD127" not in codes(evaluate(timed_out, []))
    failed = nodes_facts(CudaDriverFacts(library_found=True, init_result=999))
    assert "/dev/nvidia-uvm missing" in by_code(evaluate(failed, []), "CD127").title


def fabric_facts(state: str | None, version: str | None, driver: DriverFacts | None) -> Facts:
    facts = Facts(system=linux(), driver=driver)
    module = KernelModuleFacts(kernel=KERNEL, loaded=True, nvswitch_count=4)
    module.fabric_manager, module.fabric_manager_version = state, version
    facts.platform = PlatformFacts(module=module)
    return facts


def test_fabric_manager_with_an_unknown_state_or_driver_never_prints_none():
    ok_driver = healthy([gpu(0, "NVIDIA H100 80GB HBM3", "9.0")], driver="550.54.14").driver
    f = by_code(evaluate(fabric_facts(None, "550.54.15", ok_driver), []), "CD143")
    assert "None" not in f.title and "fabric manager 550.54.15 vs driver 550.54.14" in f.title
    assert "sudo apt install nvidia-fabricmanager-550=550.54.14-1" in commands([f])
    f = by_code(evaluate(fabric_facts("inactive", None, None), []), "CD143")
    assert "nvidia-fabricmanager is inactive" in f.title
    install = f.fix[0].commands[0]
    assert "None" not in install and "BRANCH" not in install and "=" not in install.split("nvidia-fabricmanager")[1]
    assert install.startswith("sudo apt install nvidia-fabricmanager-")


def test_nvml_error_without_a_message_names_only_the_error():
    facts = Facts(system=linux(), driver=DriverFacts(binding="x", library_loaded=True, init_status="UNKNOWN"))
    assert by_code(evaluate(facts, []), "CD107").title == "NVML failed to initialise: UNKNOWN"
    facts.driver.init_message = "Unknown Error"
    assert by_code(evaluate(facts, []), "CD107").title == "NVML failed to initialise: UNKNOWN (Unknown Error)"


def comment_commands(findings) -> list[str]:
    return [c for c in commands(findings) if c.lstrip().startswith("#") or " # " in c]


def test_every_fix_below_torch_is_a_command_to_paste_not_a_comment():
    from cudadoctor.facts import SystemFacts

    page = "https://www.nvidia.com/Download/index.aspx"
    windows = Facts(
        system=SystemFacts(os="Windows"),
        driver=DriverFacts(binding="x", library_loaded=False, init_status="LIBRARY_NOT_FOUND"),
    )
    f = by_code(evaluate(windows, []), "CD101")
    assert f.fix[0].commands == [f"start {page}"]
    gentoo = Facts(
        system=linux(os_id="gentoo"),
        pci=PciFacts(scanned=True, nvidia_gpus=[PciDevice(address="0000:01:00.0")]),
        driver=DriverFacts(binding="x", library_loaded=False, init_status="LIBRARY_NOT_FOUND"),
    )
    assert f"xdg-open {page}" in commands(evaluate(gentoo, []))
    blocked = wsl2_facts()
    blocked.driver.init_status = "OPERATING_SYSTEM"
    assert f"start {page}" in commands([by_code(evaluate(blocked, []), "CD115")])
    old = healthy([gpu(0, "NVIDIA A100-SXM4-80GB", "8.0")])
    old.driver.missing_functions = ["nvmlDeviceGetComputeRunningProcesses_v3"]
    assert by_code(evaluate(old, []), "CD106").fix[0].commands == ["sudo ubuntu-drivers install", "sudo reboot"]
    nouveau = not_loaded_facts(PlatformFacts(module=KernelModuleFacts(kernel=KERNEL, loaded=False)), os_id="gentoo")
    nouveau.pci.nvidia_gpus[0].kernel_driver = "nouveau"
    f = by_code(evaluate(nouveau, []), "CD118")
    assert any("sudo dracut --force" in c and c.startswith("if command -v") for c in commands([f]))
    p2p = multi([[True, False], [False, True]], [PeerTransfer(0, 1, 9.0), PeerTransfer(1, 0, 9.0)])
    acs = next(x for x in by_code(evaluate(p2p, []), "CD161").fix if "ACS off" in x.when)
    assert acs.commands == ["sudo setpci -s BUS:DEV.FN ECAP_ACS+0x6.w=0000"]
    sick_gpu = healthy([sick(ecc_uncorrected_volatile=2, retired_pages_pending=True, remapped_rows_pending=True)])
    health = [x for x in evaluate(sick_gpu, []) if x.code in ("CD150", "CD151", "CD152")]
    assert len(health) == 3
    for x in health:
        assert any(fx.when.startswith("Or reboot") and fx.commands == ["sudo reboot"] for fx in x.fix), x.code
    for facts in (
        windows,
        gentoo,
        blocked,
        old,
        nouveau,
        p2p,
        sick_gpu,
        wsl2_facts(linux_module_files=["/x/nvidia.ko"]),
    ):
        assert not comment_commands(evaluate(facts, [])), comment_commands(evaluate(facts, []))


def test_unknown_retired_counts_are_unknown_not_zero():
    facts = healthy([sick(retired_pages_pending=True, retired_pages_dbe=1)])
    f = by_code(evaluate(facts, []), "CD151")
    assert f.tables[0].rows == [["0", "unknown", "1"]]


def test_unknown_pid_namespace_is_not_claimed():
    def why(own_pid_namespace):
        facts = healthy([gpu(0, "NVIDIA A100-SXM4-80GB", "8.0", used_gib=30)], in_container=True)
        facts.platform = PlatformFacts(container=ContainerFacts(runtime="docker", own_pid_namespace=own_pid_namespace))
        return by_code(evaluate(facts, []), "CD147").why

    assert "This is a container with its own PID namespace" in why(True)
    unknown = why(None)
    assert "This is a container with its own PID namespace" not in unknown and "not known" in unknown


def test_lifetime_only_ecc_count_does_not_recommend_a_reset():
    lifetime = by_code(evaluate(healthy([sick(ecc_uncorrected_volatile=0, ecc_uncorrected_aggregate=5)]), []), "CD150")
    assert lifetime.severity is Severity.WARNING
    assert not any("--gpu-reset" in c or c == "sudo reboot" for c in commands([lifetime]))
    now = by_code(evaluate(healthy([sick(ecc_uncorrected_volatile=2, ecc_uncorrected_aggregate=5)]), []), "CD150")
    assert "sudo nvidia-smi --gpu-reset -i 0" in commands([now]) and "sudo reboot" in commands([now])
