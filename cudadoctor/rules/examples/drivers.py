"""Example machines whose story is the driver, NVML, libcuda or the kernel module: `check` on a box
where the driver is missing, half upgraded, refused, lost a GPU, or its module is not loaded."""

from __future__ import annotations

from typing import Any

from cudadoctor.facts import (
    CudaDriverFacts,
    DriverFacts,
    Facts,
    NvmlDevice,
    PciDevice,
    PciFacts,
    PlatformFacts,
    SystemFacts,
    ToolkitFacts,
)
from cudadoctor.facts.platform import (
    DeviceNode,
    KernelModuleFacts,
    ModuleBuild,
)
from cudadoctor.rules.examples.base import (
    KERNEL,
    UBUNTU,
    example_driver,
    example_gpu,
    example_torch,
    libcuda_ok,
    pci_bus,
    ubuntu_system,
)

# --- the driver and NVML --------------------------------------------------------------------------


def _bare() -> dict[str, Facts]:
    """An Ubuntu box with only the driver's status known: the driver's own failures, plainly."""
    bus = PciFacts(scanned=True, nvidia_gpus=[PciDevice(address="0000:18:00.0", kernel_driver=None)])
    return {
        "no-driver-gpu-on-bus": Facts(
            system=SystemFacts(**UBUNTU), pci=bus, driver=example_driver("LIBRARY_NOT_FOUND")
        ),
        "no-driver-no-gpu": Facts(
            system=SystemFacts(**UBUNTU), pci=PciFacts(scanned=True), driver=example_driver("LIBRARY_NOT_FOUND")
        ),
        "driver-not-loaded": Facts(system=SystemFacts(**UBUNTU), pci=bus, driver=example_driver("DRIVER_NOT_LOADED")),
        "driver-library-mismatch": Facts(
            system=SystemFacts(**UBUNTU), driver=example_driver("LIB_RM_VERSION_MISMATCH")
        ),
        # a 595 driver on a GTX 1050 (Pascal): the module loads but ignores the GPU, and says its last branch
        "driver-branch-drops-pascal": Facts(
            system=SystemFacts(**UBUNTU),
            pci=PciFacts(scanned=True, nvidia_gpus=[PciDevice(address="0000:01:00.0", device_id="0x1c81")]),
            driver=example_driver("DRIVER_NOT_LOADED"),
            platform=PlatformFacts(
                module=KernelModuleFacts(
                    kernel=KERNEL,
                    loaded=False,
                    loaded_version="595.71.05",
                    kernel_log_lines=[
                        "[ 4.1] NVRM: The NVIDIA NVIDIA GeForce GTX 1050 GPU installed in this system is",
                        "[ 4.1] NVRM:  supported through the NVIDIA 580.xx Legacy drivers. Please",
                        "[ 4.1] NVRM:  information.  The 595.71.05 NVIDIA driver will ignore",
                        "[ 4.1] NVRM: No NVIDIA GPU found.",
                    ],
                )
            ),
        ),
        "nvml-no-permission": Facts(system=SystemFacts(**UBUNTU), driver=example_driver("NO_PERMISSION")),
        "cpu-torch-no-libcuda": Facts(
            system=SystemFacts(**UBUNTU),
            driver=example_driver(),
            cuda_driver=CudaDriverFacts(library_found=False),
            torch=example_torch(version="2.13.0+cpu", cuda=None, cuda_built=False, is_available=False, arch_flags=[]),
        ),
        "torch-not-available": Facts(
            system=SystemFacts(**UBUNTU),
            driver=example_driver(),
            torch=example_torch(is_available=False, arch_flags=["sm_75", "sm_80", "sm_86", "sm_90", "compute_120"]),
        ),
        "small-shm-no-toolkit": Facts(system=SystemFacts(**{**UBUNTU, "shm_total": 64 << 20}), toolkit=ToolkitFacts()),
    }


def _driver_trouble() -> dict[str, Facts]:
    t4 = example_gpu("Tesla T4", "7.5", total=16, used=0)
    return {
        # nvidia-ml-py missing from cudadoctor's own environment
        "nvml-binding-missing": Facts(
            system=ubuntu_system(),
            driver=DriverFacts(binding=None, library_loaded=False, init_status="BINDING_MISSING"),
        ),
        # nvidia-smi: "Failed to initialize NVML: Unknown Error"
        "nvml-unknown-error": Facts(system=ubuntu_system(), driver=example_driver("UNKNOWN")),
        # a two-GPU box where GPU 1 fell off the bus
        "gpu-fell-off-the-bus": Facts(
            system=ubuntu_system(),
            driver=example_driver(
                devices=[example_gpu(), NvmlDevice(index=1, pci_bus_id="00000000:3B:00.0", error="GPU_IS_LOST")]
            ),
        ),
        # an old 470 driver that lacks functions nvidia-ml-py asks for
        "old-driver-missing-nvml-functions": Facts(
            system=ubuntu_system(os_release="Ubuntu 20.04.6 LTS"),
            driver=example_driver(
                devices=[t4],
                driver_version="470.256.02",
                cuda_driver_version=11040,
                missing_functions=["nvmlDeviceGetComputeRunningProcesses_v3"],
            ),
        ),
        # a MacBook on Apple silicon
        "macbook-apple-silicon": Facts(
            system=SystemFacts(os="Darwin", os_release="macOS 14.5", machine="arm64", env={}),
            pci=PciFacts(scanned=False),
            driver=example_driver("LIBRARY_NOT_FOUND"),
            torch=example_torch(version="2.13.0", cuda=None, cuda_built=False, is_available=False, mps_available=True),
        ),
        # the GPU is bound to vfio-pci for a VM, so NVML counts none
        "gpu-bound-to-vfio": Facts(system=ubuntu_system(), pci=pci_bus("vfio-pci"), driver=example_driver(devices=[])),
    }


def _libcuda_trouble() -> dict[str, Facts]:
    laptop = [example_gpu("NVIDIA GeForce RTX 4070 Laptop GPU", "8.9", total=8, used=0)]
    drv = example_driver(devices=laptop, driver_version="550.120", cuda_driver_version=12040)
    return {
        # a laptop after suspend/resume: cuInit says CUDA_ERROR_UNKNOWN until nvidia_uvm is reloaded
        "laptop-after-suspend": Facts(
            system=ubuntu_system(),
            driver=drv,
            cuda_driver=libcuda_ok(12040, init_result=999, init_error_name="CUDA_ERROR_UNKNOWN", device_count=None),
        ),
        # cuInit hangs (a wedged GPU)
        "cuinit-hangs": Facts(system=ubuntu_system(), driver=drv, cuda_driver=CudaDriverFacts(timed_out=True)),
        # the toolkit's stubs directory first on LD_LIBRARY_PATH
        "libcuda-stub-first": Facts(
            system=ubuntu_system(
                env={"LD_LIBRARY_PATH": "/usr/local/cuda-12.4/lib64/stubs:/usr/local/cuda-12.4/lib64"}
            ),
            driver=drv,
            cuda_driver=libcuda_ok(
                12040,
                library_path="/usr/local/cuda-12.4/lib64/stubs/libcuda.so",
                init_result=34,
                init_error_name="CUDA_ERROR_STUB_LIBRARY",
                driver_version=None,
                device_count=None,
            ),
        ),
    }


# --- below the driver: the kernel module, WSL, containers ----------------------------------------


def _not_loaded(module: KernelModuleFacts, pci: PciFacts | None = None) -> Facts:
    """An Ubuntu host whose NVIDIA module is not loaded, with what the platform probe found."""
    return Facts(
        system=ubuntu_system(kernel=KERNEL, user="alice"),
        pci=pci or pci_bus(None),
        driver=example_driver("DRIVER_NOT_LOADED", library_version="550.120"),
        platform=PlatformFacts(module=module),
    )


def _build(kernel: str = KERNEL, version: str = "550.120", **kw: Any) -> ModuleBuild:
    return ModuleBuild(kernel=kernel, path=f"/lib/modules/{kernel}/updates/dkms/nvidia.ko.zst", version=version, **kw)


def _kernel_module() -> dict[str, Facts]:
    nodes = [
        DeviceNode("/dev/nvidiactl", exists=True, accessible=False, mode="crw-rw----", owner_group="video"),
        DeviceNode("/dev/nvidia0", exists=True, accessible=False, mode="crw-rw----", owner_group="video"),
        DeviceNode("/dev/nvidia-uvm", exists=True, accessible=True, mode="crw-rw-rw-", owner_group="root"),
    ]
    hgx = [example_gpu("NVIDIA H100 80GB HBM3", "9.0", index=i, used=0) for i in range(8)]
    return {
        # Secure Boot on, the DKMS-built module unsigned
        "secure-boot-unsigned-module": _not_loaded(
            KernelModuleFacts(
                kernel=KERNEL,
                loaded=False,
                secure_boot=True,
                nouveau_loaded=False,
                builds=[_build(flavour="proprietary", signed=False)],
                kernel_log_readable=True,
                kernel_log_lines=[
                    "Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7"
                ],
            )
        ),
        # a fresh install: nouveau still holds the GPU
        "nouveau-holds-the-gpu": _not_loaded(
            KernelModuleFacts(
                kernel=KERNEL,
                loaded=False,
                secure_boot=False,
                nouveau_loaded=True,
                nouveau_blacklisted=False,
                builds=[_build()],
            ),
            pci=pci_bus("nouveau"),
        ),
        # a kernel upgrade DKMS did not build the module for
        "kernel-upgrade-without-module": _not_loaded(
            KernelModuleFacts(
                kernel="6.8.0-48-generic",
                loaded=False,
                secure_boot=False,
                nouveau_loaded=False,
                builds=[_build()],
                dkms={"550.120": [KERNEL]},
            )
        ),
        # an RTX 5090 with the proprietary module: Blackwell needs the open one
        "blackwell-needs-open-module": _not_loaded(
            KernelModuleFacts(
                kernel=KERNEL,
                loaded=False,
                secure_boot=False,
                builds=[_build(version="570.172.08", flavour="proprietary")],
                kernel_log_lines=[
                    "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2b85) installed in this system requires use "
                    "of the NVIDIA open kernel modules."
                ],
            ),
            pci=PciFacts(scanned=True, nvidia_gpus=[PciDevice("0000:01:00.0", device_id="2b85", kernel_driver=None)]),
        ),
        # /dev/nvidia* belong to the video group, which this user is not in
        "device-nodes-video-group": Facts(
            system=ubuntu_system(kernel=KERNEL, user="alice"),
            driver=example_driver("NO_PERMISSION"),
            platform=PlatformFacts(module=KernelModuleFacts(kernel=KERNEL, loaded=True, device_nodes=nodes)),
        ),
        # half an upgrade: 550 libraries, the 535 module still built for this kernel
        "half-upgraded-driver": Facts(
            system=ubuntu_system(kernel=KERNEL, kernel_module_version="535.183.01"),
            driver=example_driver("LIB_RM_VERSION_MISMATCH", library_version="550.120"),
            platform=PlatformFacts(
                module=KernelModuleFacts(
                    kernel=KERNEL,
                    loaded=True,
                    loaded_version="535.183.01",
                    builds=[_build(version="535.183.01")],
                    library_versions=["550.120"],
                )
            ),
        ),
        # an HGX H100 node after a reboot: the fabric manager did not start
        "hgx-fabric-manager-down": Facts(
            system=ubuntu_system(kernel=KERNEL),
            driver=example_driver(devices=hgx, driver_version="550.90.07", cuda_driver_version=12040),
            cuda_driver=libcuda_ok(
                12040, init_result=802, init_error_name="CUDA_ERROR_SYSTEM_NOT_READY", device_count=None
            ),
            platform=PlatformFacts(
                module=KernelModuleFacts(
                    kernel=KERNEL, loaded=True, loaded_version="550.90.07", nvswitch_count=4, fabric_manager="inactive"
                )
            ),
        ),
    }


def examples() -> dict[str, Facts]:
    return {**_bare(), **_driver_trouble(), **_libcuda_trouble(), **_kernel_module()}
