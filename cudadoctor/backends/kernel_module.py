"""The NVIDIA kernel module on Linux: loaded or not and why, what is built on disk for which kernel, the
user-space libraries' version on disk, Secure Boot, nouveau, the /dev/nvidia* nodes, NVRM lines of the
kernel log, and the fabric manager on NVSwitch systems. No root: what needs it is left unknown.

Sources: /proc/driver/nvidia/version and /sys/module/nvidia/version name the loaded module (uv
crates/uv-torch/src/accelerator.rs reads the same); "Open Kernel Module" in that line marks the open
flavour; Secure Boot state is byte 4 of the EFI variable SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c
(UEFI spec, global variable GUID; mokutil --sb-state reads the same); fabric manager must run at the
driver's exact version on NVSwitch systems (pytorch#35710, NVIDIA Fabric Manager user guide).
"""

from __future__ import annotations

import re
import stat as stat_mod

from cudadoctor.backends.hostfs import Host
from cudadoctor.backends.wsl import LIB_DIRS
from cudadoctor.facts.platform import DeviceNode, KernelModuleFacts, ModuleBuild

SECURE_BOOT_VAR = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
NVIDIA_VENDOR = "0x10de"
NVSWITCH_CLASS = "0x0680"  # PCI "other bridge": what an NVSwitch presents
MODINFO_LIMIT = 2  # modinfo calls per run: the probe's time bound holds whatever is on disk
_MODULE_NAMES = ("nvidia.ko", "nvidia.ko.xz", "nvidia.ko.zst", "nvidia.ko.gz")
_MODULE_SUBDIRS = ("updates/dkms", "updates", "extra", "extra/nvidia", "kernel/drivers/video", "misc")
_LIB_VERSION = re.compile(r"^(?:libnvidia-ml|libcuda)\.so\.(\d+\.\d+(?:\.\d+)?)$")
# Kernel log lines that name why the module did not load or does not drive a GPU.
_LOG_CAUSES = re.compile(
    r"NVRM|nvidia.*(Key was rejected|module verification failed|Unknown symbol|disagrees about version)|"
    r"Lockdown: \S+: unsigned module loading is restricted|nouveau.*(probe|fifo|failed)",
)
_VERSION_LINE = re.compile(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)")


def parse_proc_version(text: str | None) -> tuple[str | None, str | None]:
    """(version, flavour) from /proc/driver/nvidia/version."""
    if not text:
        return None, None
    m = _VERSION_LINE.search(text)
    flavour = "open" if "Open Kernel Module" in text else "proprietary" if "Kernel Module" in text else None
    return (m.group(1) if m else None), flavour


def _modinfo(host: Host, path: str, timeout: float) -> dict[str, str]:
    exe = host.program("modinfo") or ("/sbin/modinfo" if host.exists("/sbin/modinfo") else None)
    if exe is None:
        return {}
    res = host.run([exe, host.path(path)], timeout)
    if not res.ok:
        return {}
    out: dict[str, str] = {}
    for line in res.stdout.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in out:
            out[key.strip()] = value.strip()
    return out


def _builds(host: Host, kernel: str | None, timeout: float) -> list[ModuleBuild] | None:
    kernels = host.listdir("/lib/modules")
    if kernels is None:
        return None
    out = []
    for k in kernels:
        subdirs = list(_MODULE_SUBDIRS)
        # Ubuntu's prebuilt, signed modules: /lib/modules/K/kernel/nvidia-550[-open|srv]/
        subdirs += [f"kernel/{d}" for d in host.listdir(f"/lib/modules/{k}/kernel") or [] if d.startswith("nvidia")]
        for sub in subdirs:
            for name in host.listdir(f"/lib/modules/{k}/{sub}") or []:
                if name in _MODULE_NAMES:
                    build = ModuleBuild(kernel=k, path=f"/lib/modules/{k}/{sub}/{name}")
                    asked = sum(1 for b in out if b.kernel == kernel)
                    if k == kernel and asked < MODINFO_LIMIT:  # modinfo only where it matters
                        info = _modinfo(host, build.path, timeout)
                        build.version = info.get("version")
                        lic = info.get("license")
                        if lic:
                            build.flavour = "open" if "MIT" in lic or "GPL" in lic else "proprietary"
                        if info:
                            build.signed = bool(info.get("signer") or info.get("sig_id"))
                    out.append(build)
    return out


def _dkms(host: Host) -> dict[str, list[str]] | None:
    versions = host.listdir("/var/lib/dkms/nvidia")
    if versions is None:
        return None
    out = {}
    for v in versions:
        if not re.match(r"^\d+\.\d+", v):
            continue  # "kernel-6.8.0-…" links and the like
        kernels = [k for k in host.listdir(f"/var/lib/dkms/nvidia/{v}") or [] if k not in ("source", "build")]
        out[v] = kernels
    return out


def library_versions(host: Host) -> list[str] | None:
    seen, any_dir = set(), False
    for d in LIB_DIRS:
        names = host.listdir(d)
        if names is None:
            continue
        any_dir = True
        for name in names:
            m = _LIB_VERSION.match(name)
            if m:
                seen.add(m.group(1))
    return sorted(seen) if any_dir else None


def secure_boot(host: Host) -> bool | None:
    data = host.read_bytes(SECURE_BOOT_VAR, 64)
    if data is not None and len(data) >= 5:
        return data[4] == 1  # 4 bytes of attributes, then the value
    firmware = host.listdir("/sys/firmware")
    if firmware and "efi" not in firmware:
        return False  # booted without UEFI: there is no Secure Boot (an empty /sys/firmware is a container's mask)
    return None


def _blacklisted(host: Host) -> bool | None:
    cmdline = host.read("/proc/cmdline") or ""
    if re.search(r"(modprobe\.blacklist=\S*nouveau|nouveau\.modeset=0|rd\.driver\.blacklist=\S*nouveau)", cmdline):
        return True
    known = False
    for d in ("/etc/modprobe.d", "/lib/modprobe.d", "/usr/lib/modprobe.d"):
        names = host.listdir(d)
        if names is None:
            continue
        known = True
        for name in names:
            if name.endswith(".conf") and re.search(
                r"^\s*blacklist\s+nouveau\b", host.read(f"{d}/{name}", 1 << 16) or "", re.MULTILINE
            ):
                return True
    return False if known else None


def device_nodes(host: Host) -> list[DeviceNode] | None:
    names = host.listdir("/dev")
    if names is None:
        return None
    wanted = sorted(n for n in names if re.match(r"^nvidia(\d+|ctl|-uvm|-uvm-tools|-modeset)$", n))
    for must in ("nvidiactl", "nvidia-uvm"):
        if must not in wanted:
            wanted.append(must)
    groups = {}
    for line in (host.read("/etc/group", 1 << 20) or "").splitlines():
        parts = line.split(":")
        if len(parts) >= 3 and parts[2].isdigit():
            groups.setdefault(int(parts[2]), parts[0])
    out = []
    for n in wanted:
        path = f"/dev/{n}"
        st = host.stat(path)
        if st is None:
            out.append(DeviceNode(path=path, exists=False))
            continue
        out.append(
            DeviceNode(
                path=path,
                exists=True,
                accessible=host.may_open(st),
                mode=stat_mod.filemode(st.st_mode),
                owner_gid=st.st_gid,
                owner_group=groups.get(st.st_gid),
            )
        )
    return out


def nvswitch_count(host: Host) -> int | None:
    devices = host.listdir("/sys/bus/pci/devices")
    if devices is None:
        return None
    n = 0
    for dev in devices:
        base = f"/sys/bus/pci/devices/{dev}"
        if (host.read(f"{base}/vendor") or "").strip() == NVIDIA_VENDOR and (
            host.read(f"{base}/class") or ""
        ).strip().startswith(NVSWITCH_CLASS):
            n += 1
    return n


def _fabric_manager(host: Host, facts: KernelModuleFacts, timeout: float) -> None:
    systemctl = host.program("systemctl")
    if systemctl:
        res = host.run([systemctl, "show", "-p", "LoadState,ActiveState", "nvidia-fabricmanager"], timeout)
        if res.ok:
            props = dict(line.partition("=")[::2] for line in res.stdout.splitlines())
            if props.get("LoadState") == "not-found":
                facts.fabric_manager = "absent"
            elif props.get("ActiveState"):
                facts.fabric_manager = props["ActiveState"]
    fm = host.program("nv-fabricmanager")
    if fm:
        res = host.run([fm, "--version"], timeout)
        m = re.search(r"(\d+\.\d+(?:\.\d+)?)", res.stdout + res.stderr)
        facts.fabric_manager_version = m.group(1) if m else None
    elif facts.fabric_manager is None and systemctl:
        facts.fabric_manager = "absent"


def log_lines(dmesg_text: str | None, limit: int = 30) -> list[str]:
    if not dmesg_text:
        return []
    hits = [ln.strip() for ln in dmesg_text.splitlines() if _LOG_CAUSES.search(ln) and "Xid" not in ln]
    return hits[-limit:]


def kernel_module_facts(host: Host, dmesg: str | None, dmesg_readable: bool | None, timeout: float = 3.0):
    kernel = host.kernel()
    facts = KernelModuleFacts(kernel=kernel)
    modules = host.listdir("/sys/module")
    if host.exists("/sys/module/nvidia"):
        facts.loaded = True
    elif modules is not None:
        facts.loaded = False
    proc_version, flavour = parse_proc_version(host.read("/proc/driver/nvidia/version"))
    sys_version = (host.read("/sys/module/nvidia/version") or "").strip() or None
    facts.loaded_version = sys_version or proc_version
    facts.loaded_flavour = flavour
    if facts.loaded is None and proc_version:
        facts.loaded = True
    facts.builds = _builds(host, kernel, timeout)
    facts.dkms = _dkms(host)
    facts.library_versions = library_versions(host)
    facts.secure_boot = secure_boot(host)
    if modules is not None:
        facts.nouveau_loaded = "nouveau" in modules
    facts.nouveau_blacklisted = _blacklisted(host)
    facts.device_nodes = device_nodes(host)
    facts.kernel_log_readable = dmesg_readable
    facts.kernel_log_lines = log_lines(dmesg)
    facts.nvswitch_count = nvswitch_count(host)
    if facts.nvswitch_count:
        _fabric_manager(host, facts, timeout)
    return facts
