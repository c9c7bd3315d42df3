"""Example machines for `check`'s codes, and the CI gate's machine and requirements."""

from __future__ import annotations

from typing import Any

from cudadoctor.facts import (
    BandwidthFacts,
    CompileFacts,
    CudaDriverFacts,
    DriverFacts,
    Facts,
    GpuProcess,
    MigInstance,
    NvmlDevice,
    PasteFacts,
    PciDevice,
    PciFacts,
    PlatformFacts,
    SmokeFacts,
    SmokeStep,
    SystemFacts,
    ToolkitFacts,
    TorchFacts,
    Transfer,
)
from cudadoctor.facts.libraries import (
    CompanionCheck,
    EnvironmentManager,
    ImportFailure,
    LibraryFacts,
    LoadedLibrary,
    PinCheck,
)
from cudadoctor.facts.measure import PeerTransfer
from cudadoctor.facts.paste import PasteHit
from cudadoctor.facts.platform import (
    ContainerFacts,
    DeviceNode,
    IommuFacts,
    KernelModuleFacts,
    ModuleBuild,
    WslFacts,
    XidEvent,
)
from cudadoctor.knowledge import companions
from cudadoctor.knowledge.gpu_health import CLOCKS_HW_THERMAL, CLOCKS_SW_THERMAL, COMPUTE_EXCLUSIVE_PROCESS
from cudadoctor.model import ProbeOutcome
from cudadoctor.rules.examples.base import (
    _UBUNTU,
    KERNEL,
    SITE,
    VENV,
    GiB,
    _bus,
    _driver,
    _driver_580,
    _gpu,
    _torch,
    _ubuntu,
    _venv_torch,
    libcuda_ok,
)
from cudadoctor.rules.examples.extensions import extension_machines
from cudadoctor.rules.requirements import Requirements


def machines() -> list[Facts]:
    bus = PciFacts(scanned=True, nvidia_gpus=[PciDevice(address="0000:18:00.0", kernel_driver=None)])
    return [
        Facts(system=SystemFacts(**_UBUNTU), pci=bus, driver=_driver("LIBRARY_NOT_FOUND")),
        Facts(system=SystemFacts(**_UBUNTU), pci=PciFacts(scanned=True), driver=_driver("LIBRARY_NOT_FOUND")),
        Facts(system=SystemFacts(**_UBUNTU), pci=bus, driver=_driver("DRIVER_NOT_LOADED")),
        Facts(system=SystemFacts(**_UBUNTU), driver=_driver("LIB_RM_VERSION_MISMATCH")),
        Facts(system=SystemFacts(**_UBUNTU), driver=_driver("NO_PERMISSION")),
        Facts(
            system=SystemFacts(**_UBUNTU),
            driver=_driver(),
            cuda_driver=CudaDriverFacts(library_found=False),
            torch=_torch(version="2.13.0+cpu", cuda=None, cuda_built=False, is_available=False, arch_flags=[]),
        ),
        Facts(
            system=SystemFacts(**_UBUNTU),
            driver=_driver(),
            torch=_torch(is_available=False, arch_flags=["sm_75", "sm_80", "sm_86", "sm_90", "compute_120"]),
        ),
        Facts(system=SystemFacts(**{**_UBUNTU, "shm_total": 64 << 20}), toolkit=ToolkitFacts()),
        *_driver_trouble(),
        *_libcuda_trouble(),
        *_kernel_module(),
        *_wsl(),
        *_containers(),
        *_gpu_health(),
        *_torch_builds(),
        *_libraries(),
        *extension_machines(),
        *_visible_devices(),
        *_measured(),
        *_pastes(),
    ]


# --- the driver and NVML --------------------------------------------------------------------------


def _driver_trouble() -> list[Facts]:
    t4 = _gpu("Tesla T4", "7.5", total=16, used=0)
    return [
        # nvidia-ml-py missing from cudadoctor's own environment
        Facts(system=_ubuntu(), driver=DriverFacts(binding=None, library_loaded=False, init_status="BINDING_MISSING")),
        # nvidia-smi: "Failed to initialize NVML: Unknown Error"
        Facts(system=_ubuntu(), driver=_driver("UNKNOWN")),
        # a two-GPU box where GPU 1 fell off the bus
        Facts(
            system=_ubuntu(),
            driver=_driver(devices=[_gpu(), NvmlDevice(index=1, pci_bus_id="00000000:3B:00.0", error="GPU_IS_LOST")]),
        ),
        # an old 470 driver that lacks functions nvidia-ml-py asks for
        Facts(
            system=_ubuntu(os_release="Ubuntu 20.04.6 LTS"),
            driver=_driver(
                devices=[t4],
                driver_version="470.256.02",
                cuda_driver_version=11040,
                missing_functions=["nvmlDeviceGetComputeRunningProcesses_v3"],
            ),
        ),
        # a MacBook on Apple silicon
        Facts(
            system=SystemFacts(os="Darwin", os_release="macOS 14.5", machine="arm64", env={}),
            pci=PciFacts(scanned=False),
            driver=_driver("LIBRARY_NOT_FOUND"),
            torch=_torch(version="2.13.0", cuda=None, cuda_built=False, is_available=False, mps_available=True),
        ),
        # the GPU is bound to vfio-pci for a VM, so NVML counts none
        Facts(system=_ubuntu(), pci=_bus("vfio-pci"), driver=_driver(devices=[])),
    ]


def _libcuda_trouble() -> list[Facts]:
    laptop = [_gpu("NVIDIA GeForce RTX 4070 Laptop GPU", "8.9", total=8, used=0)]
    drv = _driver(devices=laptop, driver_version="550.120", cuda_driver_version=12040)
    return [
        # a laptop after suspend/resume: cuInit says CUDA_ERROR_UNKNOWN until nvidia_uvm is reloaded
        Facts(
            system=_ubuntu(),
            driver=drv,
            cuda_driver=libcuda_ok(12040, init_result=999, init_error_name="CUDA_ERROR_UNKNOWN", device_count=None),
        ),
        # cuInit hangs (a wedged GPU)
        Facts(system=_ubuntu(), driver=drv, cuda_driver=CudaDriverFacts(timed_out=True)),
        # the toolkit's stubs directory first on LD_LIBRARY_PATH
        Facts(
            system=_ubuntu(env={"LD_LIBRARY_PATH": "/usr/local/cuda-12.4/lib64/stubs:/usr/local/cuda-12.4/lib64"}),
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
    ]


# --- below the driver: the kernel module, WSL, containers ----------------------------------------


def _not_loaded(module: KernelModuleFacts, pci: PciFacts | None = None) -> Facts:
    """An Ubuntu host whose NVIDIA module is not loaded, with what the platform probe found."""
    return Facts(
        system=_ubuntu(kernel=KERNEL, user="alice"),
        pci=pci or _bus(None),
        driver=_driver("DRIVER_NOT_LOADED", library_version="550.120"),
        platform=PlatformFacts(module=module),
    )


def _build(kernel: str = KERNEL, version: str = "550.120", **kw: Any) -> ModuleBuild:
    return ModuleBuild(kernel=kernel, path=f"/lib/modules/{kernel}/updates/dkms/nvidia.ko.zst", version=version, **kw)


def _kernel_module() -> list[Facts]:
    nodes = [
        DeviceNode("/dev/nvidiactl", exists=True, accessible=False, mode="crw-rw----", owner_group="video"),
        DeviceNode("/dev/nvidia0", exists=True, accessible=False, mode="crw-rw----", owner_group="video"),
        DeviceNode("/dev/nvidia-uvm", exists=True, accessible=True, mode="crw-rw-rw-", owner_group="root"),
    ]
    hgx = [_gpu("NVIDIA H100 80GB HBM3", "9.0", index=i, used=0) for i in range(8)]
    return [
        # Secure Boot on, the DKMS-built module unsigned
        _not_loaded(
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
        _not_loaded(
            KernelModuleFacts(
                kernel=KERNEL,
                loaded=False,
                secure_boot=False,
                nouveau_loaded=True,
                nouveau_blacklisted=False,
                builds=[_build()],
            ),
            pci=_bus("nouveau"),
        ),
        # a kernel upgrade DKMS did not build the module for
        _not_loaded(
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
        _not_loaded(
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
        Facts(
            system=_ubuntu(kernel=KERNEL, user="alice"),
            driver=_driver("NO_PERMISSION"),
            platform=PlatformFacts(module=KernelModuleFacts(kernel=KERNEL, loaded=True, device_nodes=nodes)),
        ),
        # half an upgrade: 550 libraries, the 535 module still built for this kernel
        Facts(
            system=_ubuntu(kernel=KERNEL, kernel_module_version="535.183.01"),
            driver=_driver("LIB_RM_VERSION_MISMATCH", library_version="550.120"),
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
        Facts(
            system=_ubuntu(kernel=KERNEL),
            driver=_driver(devices=hgx, driver_version="550.90.07", cuda_driver_version=12040),
            cuda_driver=libcuda_ok(
                12040, init_result=802, init_error_name="CUDA_ERROR_SYSTEM_NOT_READY", device_count=None
            ),
            platform=PlatformFacts(
                module=KernelModuleFacts(
                    kernel=KERNEL, loaded=True, loaded_version="550.90.07", nvswitch_count=4, fabric_manager="inactive"
                )
            ),
        ),
    ]


def _wsl_platform(**kw: Any) -> PlatformFacts:
    base: dict = dict(
        version=2,
        distro="Ubuntu-22.04",
        lib_dir=True,
        wsl_libs=["libcuda.so.1", "libnvidia-ml.so.1"],
        shadowing_libs=[],
        linux_driver_packages=[],
        linux_module_files=[],
        windows_driver_version="560.94",
    )
    base.update(kw)
    return PlatformFacts(wsl=WslFacts(**base))


def _wsl() -> list[Facts]:
    wsl2 = _ubuntu(wsl=True, kernel="5.15.153.1-microsoft-standard-WSL2")
    rtx = [_gpu("NVIDIA GeForce RTX 4080", "8.9", total=16, used=1)]
    return [
        # an old distribution still on WSL1
        Facts(
            system=_ubuntu(wsl=True, os_release="Ubuntu 20.04.6 LTS", kernel="4.4.0-19041-Microsoft"),
            driver=_driver("LIBRARY_NOT_FOUND"),
            platform=PlatformFacts(wsl=WslFacts(version=1, distro="Ubuntu-20.04", lib_dir=False)),
        ),
        # someone ran `apt install nvidia-driver-550` inside WSL2
        Facts(
            system=wsl2,
            driver=_driver("DRIVER_NOT_LOADED"),
            platform=_wsl_platform(linux_driver_packages=["nvidia-driver-550", "libnvidia-compute-550"]),
        ),
        # a copied libcuda.so.1 found before /usr/lib/wsl/lib
        Facts(
            system=wsl2,
            driver=_driver(devices=rtx, driver_version="560.94", cuda_driver_version=12060),
            cuda_driver=libcuda_ok(12060, init_result=100, init_error_name="CUDA_ERROR_NO_DEVICE", device_count=None),
            platform=_wsl_platform(shadowing_libs=["/usr/lib/x86_64-linux-gnu/libcuda.so.1"]),
        ),
        # "GPU access blocked by the operating system"
        Facts(
            system=wsl2,
            driver=_driver("OPERATING_SYSTEM"),
            cuda_driver=libcuda_ok(init_result=304, init_error_name="CUDA_ERROR_OPERATING_SYSTEM", driver_version=None),
            platform=_wsl_platform(),
        ),
    ]


def _container(runtime: str = "docker", **kw: Any) -> PlatformFacts:
    return PlatformFacts(container=ContainerFacts(runtime=runtime, **kw))


def _containers() -> list[Facts]:
    inside = _ubuntu(in_container=True, container_hints=["/.dockerenv"], shm_total=64 << 20)
    a10 = [_gpu("NVIDIA A10G", "8.6", total=24, used=0)]
    return [
        # `docker run` without --gpus on an image that sets NVIDIA_VISIBLE_DEVICES=void
        Facts(system=inside, driver=_driver("LIBRARY_NOT_FOUND"), platform=_container(visible_devices="void")),
        # NVIDIA_DRIVER_CAPABILITIES=utility: nvidia-smi works, CUDA does not
        Facts(
            system=inside,
            driver=_driver(devices=a10),
            cuda_driver=CudaDriverFacts(library_found=False, load_error="libcuda.so.1: cannot open shared object file"),
            platform=_container(visible_devices="all", driver_capabilities="utility"),
        ),
        # a Kubernetes pod whose spec asks for no GPU
        Facts(
            system=_ubuntu(in_container=True, container_hints=["KUBERNETES_SERVICE_HOST"]),
            driver=_driver("LIBRARY_NOT_FOUND"),
            platform=_container("kubernetes", kubernetes=True),
        ),
        # Docker's default 64 MB /dev/shm kills DataLoader workers
        Facts(
            system=inside,
            driver=_driver_580(a10),
            cuda_driver=libcuda_ok(),
            torch=_venv_torch(),
            platform=_container(visible_devices="all", driver_capabilities="compute,utility"),
            smoke=SmokeFacts(
                steps=[SmokeStep("cpu", "mlp", [2.31, 0.42]), SmokeStep("cuda:0", "mlp", [2.31, 0.42])],
                max_loss_difference=1e-6,
                dataloader_ok=False,
                dataloader_error="DataLoader worker (pid 2345) is killed by signal: Bus error.",
            ),
        ),
    ]


# --- GPU health, P2P and the measurements ----------------------------------------------------------


def _gpu_health() -> list[Facts]:
    node = [_gpu(index=i, used=0, persistence_mode=True) for i in range(4)]
    node[2] = _gpu(
        index=2,
        used=0,
        persistence_mode=True,
        ecc_uncorrected_volatile=2,
        ecc_uncorrected_aggregate=2,
        remapped_rows_uncorrectable=2,
        remapped_rows_pending=True,
    )
    xid = [
        XidEvent(48, "0000:1a:00", "NVRM: Xid (PCI:0000:1a:00): 48, pid=31337, name=python, DBE (double bit error)"),
        XidEvent(63, "0000:1a:00", "NVRM: Xid (PCI:0000:1a:00): 63, pid=31337, Row Remapper: New row marked"),
    ]
    v100 = _gpu("Tesla V100-SXM2-32GB", "7.0", total=32, used=0, retired_pages_dbe=1, retired_pages_pending=True)
    busy = GpuProcess(pid=4242, used_memory=30 * GiB, name="python", user="bob")
    hot = _gpu(
        "NVIDIA RTX 6000 Ada Generation",
        "8.9",
        total=48,
        used=30,
        temperature_c=91,
        clocks_event_reasons=CLOCKS_SW_THERMAL | CLOCKS_HW_THERMAL,
        persistence_mode=False,
        compute_mode=COMPUTE_EXCLUSIVE_PROCESS,
        processes=[busy],
    )
    return [
        # an A100 node whose GPU 2 had a double-bit error: remap pending, Xid 48 and 63 in the log
        Facts(system=_ubuntu(), driver=_driver(devices=node), platform=PlatformFacts(xid=xid)),
        # a V100 with a page waiting to be retired
        Facts(system=_ubuntu(), driver=_driver(devices=[v100])),
        # a hot, shared workstation: thermal slowdown, exclusive compute mode, kernel log for root only
        Facts(
            system=_ubuntu(),
            driver=_driver(devices=[hot]),
            platform=PlatformFacts(
                xid=None, module=KernelModuleFacts(kernel=KERNEL, loaded=True, kernel_log_readable=False)
            ),
        ),
    ]


def _transfers(device: int, h2d: float, d2h: float, h2d_pageable: float, d2h_pageable: float) -> list[Transfer]:
    rates = {("h2d", "pinned"): h2d, ("d2h", "pinned"): d2h, ("h2d", "pageable"): h2d_pageable}
    rates[("d2h", "pageable")] = d2h_pageable
    return [Transfer(device, d, m, gbps=g, size=256 << 20) for (d, m), g in rates.items()]


def _measured() -> list[Facts]:
    link = dict(pcie_gen_current=4, pcie_gen_max=4, pcie_width_current=16, pcie_width_max=16)
    a6000 = [_gpu("NVIDIA RTX A6000", "8.6", index=i, total=48, used=0, **link) for i in range(4)]
    # P2P between the pairs on one switch only, and slow there: the IOMMU translates GPU traffic
    p2p = [[i != j and i // 2 == j // 2 for j in range(4)] for i in range(4)]
    riser = _gpu(
        "NVIDIA GeForce RTX 4090",
        "8.9",
        total=24,
        used=1,
        pcie_gen_current=4,
        pcie_gen_max=4,
        pcie_width_current=8,
        pcie_width_max=16,
    )
    return [
        # a 4-GPU workstation with the IOMMU in translation mode (`check --full`)
        Facts(
            system=_ubuntu(),
            driver=_driver_580(a6000),
            platform=PlatformFacts(
                iommu=IommuFacts(
                    enabled=True, cmdline="intel_iommu=on", group_types={d.pci_bus_id or "": "DMA-FQ" for d in a6000}
                )
            ),
            bandwidth=BandwidthFacts(
                transfers=[t for i in range(4) for t in _transfers(i, 24.6, 26.1, 11.8, 12.3)],
                device_names={str(i): "NVIDIA RTX A6000" for i in range(4)},
                p2p_access=p2p,
                p2p=[PeerTransfer(0, 1, gbps=3.1, size=256 << 20), PeerTransfer(2, 3, gbps=3.3, size=256 << 20)],
            ),
        ),
        # an RTX 4090 on a riser that trained to x8, its copies far below the link
        Facts(
            system=_ubuntu(),
            driver=_driver_580([riser]),
            bandwidth=BandwidthFacts(transfers=_transfers(0, 6.2, 6.5, 5.8, 5.9), device_names={"0": riser.name or ""}),
        ),
        # a GPU that computes wrong results: the smoke test's loss does not fall on it
        Facts(
            system=_ubuntu(),
            driver=_driver_580([_gpu(used=0)]),
            torch=_venv_torch(),
            smoke=SmokeFacts(
                steps=[SmokeStep("cpu", "mlp", [2.31, 0.42]), SmokeStep("cuda:0", "mlp", [2.31, 2.35])],
                max_loss_difference=0.8,
                amp_dtype="bfloat16",
                amp_finite=False,
                amp_error="loss is nan",
                checkpoint_ok=False,
                checkpoint_error="tensors differ after torch.load(map_location='cpu')",
            ),
        ),
    ]


# --- torch and its libraries -----------------------------------------------------------------------


def _torch_builds() -> list[Facts]:
    rtx4090 = [_gpu("NVIDIA GeForce RTX 4090", "8.9", total=24, used=1)]
    rtx5090 = [_gpu("NVIDIA GeForce RTX 5090", "12.0", total=32, used=1)]
    k80 = [_gpu("Tesla K80", "3.7", total=12, used=0)]
    b200 = [_gpu("NVIDIA B200", "10.0", total=180, used=0)]
    cu126 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
    no_kernel = "CUDA error: no kernel image is available for execution on the device"
    return [
        # a fresh venv without torch
        Facts(system=_ubuntu(), driver=_driver_580(rtx4090), torch=TorchFacts(python_executable=VENV, installed=False)),
        # an RTX 5090 with a cu126 wheel, which has no sm_120 kernels
        Facts(
            system=_ubuntu(),
            driver=_driver_580(rtx5090),
            cuda_driver=libcuda_ok(),
            torch=_venv_torch(version="2.13.0+cu126", cuda="12.6", arch_flags=cu126, kernel_error=no_kernel),
            smoke=SmokeFacts(
                steps=[SmokeStep("cpu", "cnn", [2.30, 1.71]), SmokeStep("cuda:0", "cnn", error=no_kernel)]
            ),
        ),
        # a Tesla K80 (Kepler) with a current torch
        Facts(
            system=_ubuntu(os_release="Ubuntu 20.04.6 LTS"),
            driver=_driver(devices=k80, driver_version="470.256.02", cuda_driver_version=11040),
            torch=_venv_torch(
                version="2.13.0+cu126", cuda="12.6", arch_flags=cu126, is_available=False, device_count=0
            ),
        ),
        # a B200 with torch 2.6 cu126, whose newest kernels are sm_90 (+PTX): it runs through PTX JIT
        Facts(
            system=_ubuntu(),
            driver=_driver(devices=b200, driver_version="570.172.08", cuda_driver_version=12080),
            torch=_venv_torch(version="2.6.0+cu126", cuda="12.6", arch_flags=[*cu126, "compute_90"]),
        ),
        # the wheel's cuDNN was removed (pip uninstall nvidia-cudnn-cu13)
        Facts(
            system=_ubuntu(),
            driver=_driver_580(rtx4090),
            torch=_venv_torch(cudnn_version=None, cudnn_present=False),
        ),
        # a ROCm wheel installed on an NVIDIA machine
        Facts(
            system=_ubuntu(),
            driver=_driver_580(rtx4090),
            torch=_venv_torch(
                version="2.13.0+rocm6.4", cuda=None, hip="6.4", cuda_built=False, is_available=False, device_count=0
            ),
        ),
        # importing torch hangs in CUDA initialisation
        Facts(
            system=_ubuntu(),
            driver=_driver_580(rtx4090),
            torch=TorchFacts(python_executable=VENV, version="2.13.0+cu130", timed_out=True),
        ),
        # pip upgraded nvidia-nccl-cu13 past torch's pin: import torch fails on a symbol
        Facts(
            system=_ubuntu(),
            driver=_driver_580(rtx4090),
            torch=_venv_torch(
                import_error=f"ImportError: {SITE}/torch/lib/libtorch_cuda.so: undefined symbol: "
                "ncclCommWindowRegister",
                is_available=None,
                libraries=LibraryFacts(
                    pins=[PinCheck("nvidia-nccl-cu13", "==2.27.7", "2.26.2", ok=False)],
                    import_failure=ImportFailure(
                        kind="undefined_symbol",
                        library="libtorch_cuda.so",
                        symbol="ncclCommWindowRegister",
                        family="nccl",
                        loaded_instead=f"{SITE}/nvidia/nccl/lib/libnccl.so.2",
                        loaded_origin="wheel",
                    ),
                ),
            ),
        ),
        # a Windows laptop with PyPI's torch (CPU-only there) and no MSVC for torch.compile
        Facts(
            system=SystemFacts(os="Windows", os_release="Windows 11 Pro 23H2", machine="AMD64", env={}),
            driver=_driver(
                devices=[_gpu("NVIDIA GeForce RTX 4060 Laptop GPU", "8.9", total=8, used=0)],
                driver_version="566.36",
                cuda_driver_version=12070,
            ),
            torch=_venv_torch(
                python_executable="C:\\Users\\alice\\venv\\Scripts\\python.exe",
                version="2.13.0+cpu",
                cuda=None,
                cuda_built=False,
                is_available=False,
                device_count=0,
                arch_flags=[],
            ),
            compile=CompileFacts(
                python_executable="C:\\Users\\alice\\venv\\Scripts\\python.exe",
                torch_version="2.13.0+cpu",
                compiler=None,
                compiler_name="cl",
                cpu_ok=False,
                cpu_error="InvalidCxxCompiler: Compiler: cl is not found.",
            ),
        ),
    ]


def _libraries() -> list[Facts]:
    rtx3090 = [_gpu("NVIDIA GeForce RTX 3090", "8.6", total=24, used=1)]
    wheel_cudart = LoadedLibrary(
        "cudart",
        f"{SITE}/nvidia/cu13/lib/libcudart.so.13",
        "wheel",
        version="13.0.96",
        package="nvidia-cuda-runtime-cu13",
    )
    tarball_cudnn = LoadedLibrary(
        "cudnn", "/opt/cudnn-9.1/lib/libcudnn.so.9", "ld_library_path", version="9.1.0", via="/opt/cudnn-9.1/lib"
    )
    conda = EnvironmentManager(
        kind="conda",
        prefix="/home/alice/miniconda3/envs/ml",
        conda_frontend="conda",
        torch_installer="conda",
        conda_torch_package="pytorch 2.5.1 py3.11_cpu_0 (pytorch)",
        conda_torch_packages=["pytorch", "torchvision", "pytorch-mutex", "cpuonly"],
        cpuonly=["cpuonly 2.0", "pytorch-mutex 1.0 cpu"],
        pytorch_channel=["conda-meta/pytorch-2.5.1-py3.11_cpu_0.json: channel pytorch"],
    )
    user_site = "/home/alice/.local/lib/python3.12/site-packages/torch"
    tv = companions.torchvision_for("2.13.0") or "0.28.0"
    return [
        # ~/.bashrc puts CUDA 12.4 and a tarball cuDNN on LD_LIBRARY_PATH
        Facts(
            system=_ubuntu(env={"LD_LIBRARY_PATH": "/usr/local/cuda-12.4/lib64:/opt/cudnn-9.1/lib"}),
            driver=_driver_580(rtx3090),
            torch=_venv_torch(
                libraries=LibraryFacts(
                    loaded=[wheel_cudart, tarball_cudnn],
                    nvidia_installed={"nvidia-cuda-runtime-cu13": "13.0.96", "nvidia-cudnn-cu13": "9.13.0.50"},
                    ld_library_path=["/usr/local/cuda-12.4/lib64", "/opt/cudnn-9.1/lib"],
                    stale_toolkits=["/usr/local/cuda-12.4/lib64=12.4"],
                )
            ),
        ),
        # `pip install --user torch` once, outside any venv: it hides the system interpreter's torch
        Facts(
            system=_ubuntu(),
            driver=_driver_580(rtx3090),
            torch=_venv_torch(
                python_executable="/usr/bin/python3",
                libraries=LibraryFacts(
                    torch_installs=[user_site, "/usr/local/lib/python3.12/dist-packages/torch"],
                    user_site_torch=user_site,
                ),
            ),
        ),
        # torch upgraded alone, torchvision left at the old release
        Facts(
            system=_ubuntu(),
            driver=_driver_580(rtx3090),
            torch=_venv_torch(
                torchvision="0.20.1+cu124",
                libraries=LibraryFacts(
                    companions=[
                        CompanionCheck(
                            "torchvision",
                            "0.20.1+cu124",
                            requires_torch="==2.5.1",
                            expected=tv,
                            local_tag="cu124",
                            ok=False,
                        )
                    ]
                ),
            ),
        ),
        # a conda env from the old pytorch channel, pinned to CPU by cpuonly
        Facts(
            system=_ubuntu(),
            driver=_driver(devices=rtx3090, driver_version="550.120", cuda_driver_version=12040),
            torch=_venv_torch(
                python_executable="/home/alice/miniconda3/envs/ml/bin/python",
                version="2.5.1",
                cuda=None,
                cuda_built=False,
                is_available=False,
                device_count=0,
                arch_flags=[],
                libraries=LibraryFacts(manager=conda),
            ),
        ),
        # a Jetson Orin with the aarch64 wheel from PyPI
        Facts(
            system=_ubuntu(machine="aarch64"),
            pci=PciFacts(scanned=True),
            driver=_driver("LIBRARY_NOT_FOUND"),
            torch=_venv_torch(
                version="2.13.0",
                is_available=False,
                device_count=0,
                arch_flags=None,
                libraries=LibraryFacts(jetson="# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic"),
            ),
        ),
        # torch.compile on a server without g++ and the Python headers
        Facts(
            system=_ubuntu(),
            driver=_driver_580(rtx3090),
            torch=_venv_torch(),
            compile=CompileFacts(
                python_executable=VENV,
                torch_version="2.13.0+cu130",
                triton="3.5.0",
                compiler=None,
                python_headers=False,
                python_include="/usr/include/python3.12",
                cpu_ok=False,
                cpu_error="InvalidCxxCompiler: No working C++ compiler found in torch._inductor.config.cpp.cxx",
            ),
        ),
        # the torch.compile check hangs
        Facts(
            system=_ubuntu(),
            driver=_driver_580(rtx3090),
            torch=_venv_torch(),
            compile=CompileFacts(python_executable=VENV, torch_version="2.13.0+cu130", timed_out=True),
        ),
        # a B200 node on torch 2.10 cu130, whose cuBLAS predates the TMEM fix (pytorch PR#178333)
        Facts(
            system=_ubuntu(),
            driver=_driver_580([_gpu("NVIDIA B200", "10.0", total=180)]),
            torch=_venv_torch(
                version="2.10.0+cu130",
                libraries=LibraryFacts(
                    loaded=[
                        LoadedLibrary(
                            "cublas",
                            f"{SITE}/nvidia/cu13/lib/libcublasLt.so.13",
                            "wheel",
                            version="13.0.0.19",
                            package="nvidia-cublas",
                        )
                    ],
                    nvidia_installed={"nvidia-cublas": "13.0.0.19"},
                ),
            ),
        ),
        # a free-threaded Python 3.14t venv with companions that publish no wheels for it (CD230)
        Facts(
            system=_ubuntu(),
            driver=_driver_580([_gpu("NVIDIA GeForce RTX 3090", "8.6", total=24)]),
            torch=_venv_torch(
                python_version="3.14.0",
                free_threaded=True,
                free_threaded_packages={"torchao": "0.14.1", "torchvision": "0.24.1", "bitsandbytes": "0.48.2"},
            ),
        ),
    ]


# --- which GPUs CUDA sees --------------------------------------------------------------------------


def _visible_devices() -> list[Facts]:
    l40s = [_gpu("NVIDIA L40S", "8.9", index=i, total=48, used=0) for i in range(4)]
    mixed = [_gpu("NVIDIA GeForce RTX 3060", "8.6", total=12, used=0), _gpu("NVIDIA GeForce RTX 4090", "8.9", 1, 24, 0)]
    mig = _gpu(
        mig_enabled=True,
        used=0,
        mig_instances=[
            MigInstance(i, uuid=f"MIG-{0x5E3F7A10 + i:08x}-0b3e-5d2c-9a41-{0x2E7C9B10 + i:012x}") for i in range(3)
        ],
    )
    # a shared 4-GPU box: CUDA_VISIBLE_DEVICES set empty, with an index out of range, with a GPU twice
    box = [_ubuntu(env={"CUDA_VISIBLE_DEVICES": v}) for v in ("", "0,4,1", "1,1")]
    return [
        *(Facts(system=s, driver=_driver(devices=l40s)) for s in box),
        # an RTX 3060 next to an RTX 4090: CUDA's order differs from nvidia-smi's
        Facts(system=_ubuntu(), driver=_driver(devices=mixed)),
        # an A100 split into MIG instances
        Facts(system=_ubuntu(), driver=_driver(devices=[mig])),
    ]


# --- pastes from issues (`cudadoctor triage`) -----------------------------------------------------


def _paste(*hits: PasteHit, formats: tuple[str, ...] = ("error text",)) -> PasteFacts:
    return PasteFacts(formats=list(formats), hits=list(hits))


def _pastes() -> list[Facts]:
    linux = SystemFacts(os="Linux")
    windows = SystemFacts(os="Windows")
    cuda_wheel = TorchFacts(
        python_executable="python", installed=True, version="2.13.0+cu130", cuda="13.0", cuda_built=True
    )
    hit = PasteHit
    return [
        # "Torch not compiled with CUDA enabled" on Windows (PyPI's CPU-only torch)
        Facts(
            system=windows,
            torch=TorchFacts(
                python_executable="python", installed=True, version="2.13.0+cpu", cuda_built=False, is_available=False
            ),
            paste=_paste(hit("not-compiled-with-cuda", "AssertionError: Torch not compiled with CUDA enabled")),
        ),
        # torch's "driver too old" warning
        Facts(
            system=linux,
            torch=cuda_wheel,
            paste=_paste(
                hit(
                    "driver-too-old",
                    "The NVIDIA driver on your system is too old (found version 12020)",
                    {"found": "12020"},
                )
            ),
        ),
        # torch's "GPU too old" warning
        Facts(
            system=linux,
            torch=cuda_wheel,
            paste=_paste(
                hit(
                    "gpu-too-old",
                    "Found GPU0 Tesla K80 which is of cuda capability 3.7.",
                    {"gpu": "Tesla K80", "cc": "3.7"},
                )
            ),
        ),
        # a mixed set of nvidia-* wheels
        Facts(
            system=linux,
            torch=cuda_wheel,
            paste=_paste(
                hit(
                    "undefined-symbol",
                    "libtorch_cuda.so: undefined symbol: ncclCommWindowRegister",
                    {"symbol": "ncclCommWindowRegister", "library": "libtorch_cuda.so"},
                )
            ),
        ),
        # torch installed with --no-deps: cuDNN is missing
        Facts(
            system=linux,
            torch=cuda_wheel,
            paste=_paste(
                hit(
                    "cannot-open-library",
                    "libcudnn.so.9: cannot open shared object file: No such file or directory",
                    {"library": "libcudnn.so.9"},
                )
            ),
        ),
        # Windows without the Visual C++ Redistributable
        Facts(
            system=windows,
            paste=_paste(
                hit(
                    "windows-dll",
                    '[WinError 126] The specified module could not be found. Error loading "C:\\Users\\alice\\venv'
                    '\\Lib\\site-packages\\torch\\lib\\c10.dll" or one of its dependencies.',
                    {"library": "C:\\Users\\alice\\venv\\Lib\\site-packages\\torch\\lib\\c10.dll"},
                )
            ),
        ),
        # loading a DDP checkpoint on a laptop: saved on cuda:1, keys prefixed with module.
        Facts(
            system=linux,
            paste=_paste(
                hit(
                    "deserialize-cuda",
                    "Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count() is 1",
                    {"dev": "1", "count": "1"},
                ),
                hit("state-dict-prefix", 'Unexpected key(s) in state_dict: "module.', {"prefix": "module."}),
            ),
        ),
        # a training run out of memory
        Facts(
            system=linux,
            torch=cuda_wheel,
            paste=_paste(hit("out-of-memory", "torch.OutOfMemoryError: CUDA out of memory.")),
        ),
        # `docker run --gpus all` on a host without the NVIDIA Container Toolkit
        Facts(
            paste=_paste(
                hit(
                    "docker-no-gpu-runtime",
                    'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].',
                )
            )
        ),
        # "Found no NVIDIA driver on your system"
        Facts(
            system=linux,
            torch=cuda_wheel,
            paste=_paste(hit("no-driver", "RuntimeError: Found no NVIDIA driver on your system.")),
        ),
        # cuDNN failing at the first convolution
        Facts(
            system=linux,
            torch=cuda_wheel,
            paste=_paste(
                hit("cudnn-status", "cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", {"status": "NOT_INITIALIZED"})
            ),
        ),
    ]


# --- what only the CI gate and the doctor itself raise --------------------------------------------


def _gate() -> tuple[Facts, Requirements]:
    """A shared CI box, two A100s (one busy) and two T4s, for a job that needs two bf16 GPUs with 20 GiB."""
    busy = GpuProcess(pid=5151, used_memory=31 * GiB, name="python", user="bob")
    shared = [
        _gpu("NVIDIA A100-PCIE-40GB", "8.0", 0, 40, 31, processes=[busy]),
        _gpu("NVIDIA A100-PCIE-40GB", "8.0", 1, 40, 0),
        _gpu("Tesla T4", "7.5", 2, 16, 0),
        _gpu("Tesla T4", "7.5", 3, 16, 0),
    ]
    facts = Facts(
        system=_ubuntu(env={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}),
        driver=_driver_580(shared),
        cuda_driver=libcuda_ok(n=4),
        torch=_venv_torch(device_count=4, cudnn_version=None),
    )
    gate = Requirements(
        require_gpus=2,
        min_free_memory=20 * GiB,
        min_compute_capability="8.0",
        expect_torch_cuda="12.8",
        require_cudnn=True,
        min_h2d_gbps=20.0,
    )
    return facts, gate


def _failed_probes() -> list[ProbeOutcome]:
    return [
        ProbeOutcome("toolkit", "crashed", 0.1, "PermissionError: [Errno 13] Permission denied: '/usr/local/cuda'"),
        ProbeOutcome("driver", "timeout", 10.0, "did not finish in 10 s"),
    ]
