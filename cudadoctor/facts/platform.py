"""Below torch: WSL, the NVIDIA kernel module and what keeps it from loading, the device nodes, the
container runtime, Xid errors from the kernel log, and the IOMMU. Read through the host seam
(backends/hostfs.Host) without root; every fact that could not be read is None, never False or []."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class WslFacts:
    version: int | None = None  # 1 or 2; None: not known
    distro: str | None = None  # WSL_DISTRO_NAME, for `wsl --set-version DISTRO 2`
    lib_dir: bool | None = None  # /usr/lib/wsl/lib exists (the Windows driver's libraries)
    wsl_libs: list[str] | None = None  # libcuda.so.1, libnvidia-ml.so.1, … found there
    # libcuda / libnvidia-ml copies outside /usr/lib/wsl that the loader may pick instead
    shadowing_libs: list[str] | None = None
    # Linux driver packages installed inside WSL (dpkg/rpm database): nvidia-driver-550, cuda-drivers, …
    linux_driver_packages: list[str] | None = None
    linux_module_files: list[str] | None = None  # nvidia.ko* under /lib/modules inside WSL
    windows_driver_version: str | None = None  # "560.94", from the driver store's .inf when readable


@dataclass
class DeviceNode:
    path: str  # /dev/nvidia0, /dev/nvidiactl, /dev/nvidia-uvm
    exists: bool
    accessible: bool | None = None  # this user may open it read-write; None: unknown
    mode: str | None = None  # "crw-rw-rw-" style, from stat
    owner_gid: int | None = None
    owner_group: str | None = None  # the group name from /etc/group: who may open it


@dataclass
class ModuleBuild:
    """A built nvidia.ko on disk."""

    kernel: str  # the kernel release it was built for
    path: str
    version: str | None = None  # modinfo's version, when read
    flavour: str | None = None  # open | proprietary (from the license: "Dual MIT/GPL" is open)
    signed: bool | None = None


@dataclass
class KernelModuleFacts:
    kernel: str | None = None  # uname -r
    loaded: bool | None = None  # /sys/module/nvidia exists
    loaded_version: str | None = None  # /sys/module/nvidia/version or /proc/driver/nvidia/version
    loaded_flavour: str | None = None  # open | proprietary, from /proc/driver/nvidia/version
    builds: list[ModuleBuild] | None = None  # nvidia.ko under /lib/modules/*/ (all kernels)
    dkms: dict[str, list[str]] | None = None  # /var/lib/dkms/nvidia: version -> kernels built for
    library_versions: list[str] | None = None  # user-space versions on disk (libnvidia-ml.so.X.Y.Z)
    secure_boot: bool | None = None  # from efivars SecureBoot-*; None: not EFI or unreadable
    nouveau_loaded: bool | None = None
    nouveau_blacklisted: bool | None = None
    device_nodes: list[DeviceNode] | None = None  # /dev/nvidia*; None: /dev unreadable
    kernel_log_readable: bool | None = None  # False: dmesg needs root here (dmesg_restrict)
    kernel_log_lines: list[str] = field(default_factory=list)  # NVRM lines that name a cause
    fabric_manager: str | None = None  # active | inactive | failed | absent, from systemctl
    fabric_manager_version: str | None = None  # nv-fabricmanager --version
    nvswitch_count: int | None = None  # NVSwitch bridges on the PCI bus (class 0x0680, NVIDIA)


@dataclass
class XidEvent:
    xid: int
    pci: str | None = None  # the PCI address the kernel names
    text: str = ""  # the line, trimmed


@dataclass
class ContainerFacts:
    runtime: str | None = None  # docker | podman | kubernetes | containerd | lxc | None (host or unknown)
    kubernetes: bool | None = None
    # NVIDIA_VISIBLE_DEVICES / NVIDIA_DRIVER_CAPABILITIES as set (None: unset)
    visible_devices: str | None = None
    driver_capabilities: str | None = None
    own_pid_namespace: bool | None = None  # PID 1 here is not the host's init (NVML shows host PIDs)


@dataclass
class IommuFacts:
    enabled: bool | None = None  # /sys/class/iommu has units
    cmdline: str | None = None  # iommu=… / intel_iommu=… / amd_iommu=… words from /proc/cmdline
    group_types: dict[str, str] | None = None  # GPU PCI address -> iommu group type (identity, DMA, DMA-FQ)


@dataclass
class PlatformFacts:
    wsl: WslFacts | None = None  # None: not WSL (or not Linux)
    module: KernelModuleFacts | None = None  # None: not Linux, or inside WSL
    container: ContainerFacts | None = None
    xid: list[XidEvent] | None = None  # None: the kernel log could not be read
    iommu: IommuFacts | None = None
    errors: dict[str, str] = field(default_factory=dict)  # part -> what went wrong reading it
