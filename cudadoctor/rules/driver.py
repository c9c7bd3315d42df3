"""The NVIDIA driver as NVML reports it, and what the PCI bus says when NVML cannot."""

from __future__ import annotations

from cudadoctor.facts import DriverFacts, Facts, SystemFacts
from cudadoctor.knowledge.driver_install import install_commands
from cudadoctor.knowledge.versions import cuda_int_to_str
from cudadoctor.report import Finding, Fix, Severity
from cudadoctor.rules.catalogue import entry, fix

DRIVER_OK = entry(
    "CD100",
    "driver-ok",
    Severity.OK,
    "Driver",
    "NVIDIA driver loaded",
    """NVML answered: the NVIDIA kernel driver and its user-space library are installed and agree.
    The CUDA version it names is the newest CUDA this driver supports, not an installed toolkit.""",
)
NO_DRIVER = entry(
    "CD101",
    "driver-not-installed",
    Severity.ERROR,
    "Driver",
    "No NVIDIA driver: libnvidia-ml.so.1 not found",
    """The NVIDIA driver's management library is missing, so no CUDA program (PyTorch included) can
    use a GPU here. On a Linux host the driver is not installed; in a container the GPU and driver
    were not passed in; under WSL2 the Windows driver provides it.""",
)
DRIVER_NOT_LOADED = entry(
    "CD102",
    "driver-not-loaded",
    Severity.ERROR,
    "Driver",
    "The NVIDIA kernel module is not loaded",
    """The user-space driver is installed but the kernel module (nvidia.ko) is not running: it failed
    to build for the running kernel, Secure Boot refused an unsigned module, or nouveau holds the GPU.""",
)
VERSION_MISMATCH = entry(
    "CD103",
    "driver-library-mismatch",
    Severity.ERROR,
    "Driver",
    "Driver/library version mismatch",
    """The user-space driver libraries were upgraded while the old kernel module is still loaded
    (typically an unattended upgrade). Every CUDA program fails until the module is reloaded or the
    machine rebooted.""",
)
NO_PERMISSION = entry(
    "CD104",
    "driver-no-permission",
    Severity.ERROR,
    "Driver",
    "No permission to open the NVIDIA devices",
    """The driver is loaded but this user may not open /dev/nvidia*: the device nodes belong to a
    group this user is not in, or a container was started without the devices.""",
)
GPU_LOST = entry(
    "CD105",
    "gpu-lost",
    Severity.ERROR,
    "Driver",
    "A GPU has fallen off the bus or needs a reset",
    """The driver reports a GPU as lost or in need of a reset, usually after an Xid error (overheating,
    power, a PCIe fault). Programs cannot use it until it is reset or the machine rebooted.""",
)
NVML_OLD_DRIVER = entry(
    "CD106",
    "nvml-functions-missing",
    Severity.WARNING,
    "Driver",
    "The driver is older than the NVML binding: some queries are unavailable",
    """nvidia-ml-py asked for NVML functions this driver does not have. The doctor falls back where
    it can; details such as process lists or the CUDA version may be missing. A newer driver has them.""",
)
NVML_ERROR = entry(
    "CD107",
    "nvml-error",
    Severity.ERROR,
    "Driver",
    "NVML failed to initialise",
    """NVML, the library behind nvidia-smi, returned an error on initialisation; CUDA programs will most
    likely fail the same way.""",
)
NO_GPU = entry(
    "CD108",
    "no-nvidia-gpu",
    Severity.ERROR,
    "Driver",
    "No NVIDIA GPU in this machine",
    """The PCI bus has no NVIDIA display or 3D controller, so there is nothing for a driver to drive.
    PyTorch runs on the CPU here. Installing a driver or a CUDA build of torch will not change that.""",
)
MACOS = entry(
    "CD109",
    "macos-no-cuda",
    Severity.ERROR,
    "Driver",
    "macOS has no CUDA",
    """NVIDIA stopped CUDA for macOS after 10.2. On Apple silicon PyTorch uses the GPU through Metal
    (MPS): torch.device("mps").""",
)
NO_DEVICES = entry(
    "CD110",
    "driver-no-devices",
    Severity.ERROR,
    "Driver",
    "The driver is loaded but reports no GPU",
    """NVML works but counts zero devices: the GPU is bound to another driver (vfio-pci for a VM),
    disabled, or hidden from this container by NVIDIA_VISIBLE_DEVICES.""",
)
BINDING_MISSING = entry(
    "CD111",
    "nvml-binding-missing",
    Severity.WARNING,
    "Driver",
    "The NVML binding (nvidia-ml-py) is not installed",
    """cudadoctor reads the driver through nvidia-ml-py, which is missing from its environment, so
    driver and GPU facts are unknown.""",
)

_LINUX_DOC = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/"
CONTAINER_FIX = [
    fix(
        "Docker: pass the GPUs in (needs the NVIDIA Container Toolkit on the host)",
        "docker run --gpus all --rm IMAGE nvidia-smi",
    ),
    fix(
        "On the host, once: install and register the NVIDIA Container Toolkit",
        "sudo apt-get install -y nvidia-container-toolkit",
        "sudo nvidia-ctk runtime configure --runtime=docker",
        "sudo systemctl restart docker",
    ),
    fix("Kubernetes: request a GPU in the pod spec", "resources: {limits: {nvidia.com/gpu: 1}}"),
]
WSL_FIX = [
    fix(
        "Install the NVIDIA driver on Windows (not inside WSL), then restart WSL from Windows",
        "# https://www.nvidia.com/Download/index.aspx  (Windows driver, GeForce/RTX/Data Center)",
        "wsl --shutdown",
    ),
    fix(
        "Never install a Linux NVIDIA driver inside WSL; remove one if present",
        "sudo apt-get remove --purge '^nvidia-driver-.*' '^libnvidia-.*'",
    ),
]


def gpu_presence(f: Facts) -> bool | None:
    """Does this machine have an NVIDIA GPU a driver could use? True/False when a probe answered,
    None when nothing that ran can tell (a timed-out driver probe is not "no GPU")."""
    d, pci = f.driver, f.pci
    if d is not None and d.init_status == "ok" and d.device_count is not None:
        if d.device_count > 0:
            return True
    if pci is not None and pci.scanned:
        return bool(pci.nvidia_gpus)
    if d is not None and d.init_status == "ok" and d.device_count == 0:
        return False
    return None


def _driver_install(system: SystemFacts | None) -> list[Fix]:
    if system is not None and system.os == "Windows":
        return [
            fix(
                "Install the NVIDIA driver for Windows, then reboot",
                "# https://www.nvidia.com/Download/index.aspx",
            )
        ]
    label, commands = install_commands(system.os_id if system else None)
    return [fix(f"{label}: install the NVIDIA driver", *commands), fix("Check afterwards", "nvidia-smi")]


def evaluate(f: Facts) -> list[Finding]:
    d = f.driver
    if d is None:
        return []
    if d.init_status == "BINDING_MISSING":
        return [BINDING_MISSING.finding(fix=[fix("Install it next to cudadoctor", "pip install nvidia-ml-py")])]
    if d.init_status == "ok":
        return _healthy_driver(d)
    if d.init_status == "LIBRARY_NOT_FOUND":
        return [_library_not_found(f)]
    if d.init_status == "DRIVER_NOT_LOADED":
        return [
            DRIVER_NOT_LOADED.finding(
                fix=[
                    fix(
                        "Load the module and read why it fails",
                        "sudo modprobe nvidia",
                        "sudo dmesg -T | grep -i -E 'nvidia|nouveau|secure boot' | tail -20",
                    ),
                    fix("Rebuild it for the running kernel (DKMS)", "sudo dkms autoinstall", "sudo reboot"),
                    fix(
                        "Secure Boot on: enrol the module signing key, or disable Secure Boot",
                        "mokutil --sb-state",
                    ),
                ]
            )
        ]
    if d.init_status == "LIB_RM_VERSION_MISMATCH":
        s = f.system
        versions = []
        if s is not None and s.kernel_module_version:
            versions.append(f"kernel module {s.kernel_module_version}")
        if d.library_version:
            versions.append(f"libraries {d.library_version}")
        title = VERSION_MISMATCH.summary + (f": {' vs '.join(versions)}" if versions else "")
        return [
            VERSION_MISMATCH.finding(
                title=title,
                fix=[
                    fix("Simplest: reboot", "sudo reboot"),
                    fix(
                        "Without a reboot: stop GPU users, then reload the modules",
                        "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia",
                        "sudo modprobe nvidia",
                        "nvidia-smi",
                    ),
                    fix(
                        "Debian/Ubuntu: keep unattended upgrades from doing it again",
                        "sudo apt-mark hold $(dpkg-query -W -f='${Package}\\n' 'nvidia-*' 'libnvidia-*')",
                    ),
                    fix(
                        "RHEL/Fedora: lock the driver version",
                        "sudo dnf install python3-dnf-plugin-versionlock",
                        "sudo dnf versionlock add 'nvidia-*'",
                    ),
                ],
            )
        ]
    if d.init_status == "NO_PERMISSION":
        user = f.system.user if f.system and f.system.user else "$USER"
        return [
            NO_PERMISSION.finding(
                fix=[
                    fix("See who may open the devices", "ls -l /dev/nvidia*"),
                    fix(
                        "Add yourself to the group that owns them (often video), then log in again",
                        f"sudo usermod -aG video {user}",
                    ),
                    fix("In a container: start it with the GPUs", "docker run --gpus all ..."),
                ]
            )
        ]
    if d.init_status in ("GPU_IS_LOST", "RESET_REQUIRED"):
        return [GPU_LOST.finding(fix=_gpu_lost_fix(None))]
    return [
        NVML_ERROR.finding(
            title=f"NVML failed to initialise: {d.init_status} ({d.init_message})",
            fix=[
                fix(
                    "Compare with nvidia-smi and the kernel log",
                    "nvidia-smi",
                    "sudo dmesg -T | grep -i -E 'NVRM|Xid' | tail -20",
                )
            ],
        )
    ]


def _gpu_lost_fix(index: int | None) -> list[Fix]:
    target = f" -i {index}" if index is not None else ""
    return [
        fix("Read the Xid error that caused it", "sudo dmesg -T | grep -i xid | tail -5"),
        fix(
            "Reset the GPU (no process may be using it), or reboot",
            f"sudo nvidia-smi --gpu-reset{target}",
            "sudo reboot",
        ),
    ]


def _healthy_driver(d: DriverFacts) -> list[Finding]:
    out: list[Finding] = []
    cuda = cuda_int_to_str(d.cuda_driver_version)
    if d.device_count is None:
        out.append(
            DRIVER_OK.finding(
                title=f"NVIDIA driver {d.driver_version or '(version unknown)'} loaded; NVML did not say how many GPUs",
                severity=Severity.INFO,
            )
        )
    elif d.device_count == 0:
        out.append(
            NO_DEVICES.finding(
                fix=[
                    fix("See which kernel driver holds each NVIDIA device", "lspci -nnk -d 10de:"),
                    fix("In a container: check what the runtime exposed", "echo $NVIDIA_VISIBLE_DEVICES"),
                ]
            )
        )
    else:
        names = sorted({dev.name or "unknown GPU" for dev in d.devices})
        out.append(
            DRIVER_OK.finding(
                title=f"NVIDIA driver {d.driver_version} (supports CUDA up to {cuda or 'unknown'}), "
                f"{d.device_count} GPU{'s' if d.device_count != 1 else ''}: {', '.join(names)}",
            )
        )
    for dev in d.devices:
        if dev.error:
            out.append(
                GPU_LOST.finding(
                    title=f"GPU {dev.index}{' (' + dev.pci_bus_id + ')' if dev.pci_bus_id else ''} "
                    f"cannot be queried: {dev.error}",
                    fix=_gpu_lost_fix(dev.index),
                )
            )
    if d.missing_functions:
        out.append(
            NVML_OLD_DRIVER.finding(
                title=f"Driver {d.driver_version} lacks NVML functions: {', '.join(d.missing_functions)}",
                fix=[fix("Upgrade the driver (details are then complete)", f"# {_LINUX_DOC}")],
            )
        )
    return out


def _library_not_found(f: Facts) -> Finding:
    s, pci = f.system, f.pci
    if s is not None and s.os == "Darwin":
        return MACOS.finding(
            fix=[
                fix(
                    "Use the Apple GPU through MPS in PyTorch",
                    'python -c "import torch; print(torch.backends.mps.is_available())"',
                    "device = torch.device('mps' if torch.backends.mps.is_available() else 'cpu')",
                )
            ]
        )
    if s is not None and s.wsl is True:
        return NO_DRIVER.finding(
            title="WSL2 without the NVIDIA driver: /usr/lib/wsl/lib has no libnvidia-ml.so.1",
            why="Under WSL2 the GPU driver is the Windows one; WSL maps its libraries into "
            "/usr/lib/wsl/lib. They are missing, so the Windows driver is absent or too old.",
            fix=WSL_FIX,
        )
    if pci is not None and pci.scanned and not pci.nvidia_gpus:
        return NO_GPU.finding(
            fix=[
                fix(
                    "Use the CPU in your code; it keeps working when a GPU appears",
                    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
                ),
                fix("Load checkpoints saved on a GPU", "torch.load(path, map_location='cpu')"),
            ]
        )
    if s is not None and s.in_container is True:
        return NO_DRIVER.finding(
            title="No NVIDIA driver inside this container (libnvidia-ml.so.1 not found)",
            why="Containers get the driver from the host through the NVIDIA Container Toolkit; this "
            "one was started without it (no --gpus), so no GPU can be used inside.",
            fix=CONTAINER_FIX,
        )
    gpus = pci.nvidia_gpus if pci is not None else []
    title = NO_DRIVER.summary
    why = NO_DRIVER.explanation
    if gpus:
        title = f"{len(gpus)} NVIDIA GPU{'s' if len(gpus) != 1 else ''} on the PCI bus, but no NVIDIA driver"
        bound = sorted({g.kernel_driver for g in gpus if g.kernel_driver})
        if bound:
            why += f" The GPU is bound to: {', '.join(bound)}."
        if "nouveau" in bound:
            why += " nouveau (the open-source driver) cannot run CUDA."
    return NO_DRIVER.finding(title=title, why=why, fix=_driver_install(s))
