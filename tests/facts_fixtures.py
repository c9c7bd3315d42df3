"""Hand-written facts for machines nobody here owns."""

from __future__ import annotations

from cudadoctor.facts import (
    CudaDriverFacts,
    DriverFacts,
    Facts,
    NvmlDevice,
    PciDevice,
    PciFacts,
    SystemFacts,
    ToolkitFacts,
    TorchDevice,
    TorchFacts,
)
from cudadoctor.facts.libraries import EnvironmentManager, LibraryFacts

GiB = 1 << 30


def linux(**kw) -> SystemFacts:
    base = dict(
        os="Linux",
        os_release="Ubuntu 22.04.4 LTS",
        os_id="ubuntu",
        machine="x86_64",
        python_version="3.11.7",
        hostname="gpu-box-17",
        user="alice",
        shm_total=32 * GiB,
        in_container=False,
        wsl=False,
        env={},
    )
    base.update(kw)
    return SystemFacts(**base)


def gpu(index: int, name: str, cc: str, total_gib: float = 80, used_gib: float = 0, **kw) -> NvmlDevice:
    total = int(total_gib * GiB)
    used = int(used_gib * GiB)
    return NvmlDevice(
        index=index,
        name=name,
        compute_capability=cc,
        memory_total=total,
        memory_used=used,
        memory_free=total - used,
        uuid=f"GPU-{index:08x}-1111-2222-3333-444455556666",
        pci_bus_id=f"00000000:{0x18 + index:02X}:00.0",
        **kw,
    )


def driver_ok(version: str, cuda: int, devices: list[NvmlDevice]) -> DriverFacts:
    return DriverFacts(
        binding="nvidia-ml-py 13.615.71",
        library_loaded=True,
        init_status="ok",
        driver_version=version,
        cuda_driver_version=cuda,
        device_count=len(devices),
        devices=devices,
    )


def libcuda_ok(cuda: int, n: int) -> CudaDriverFacts:
    return CudaDriverFacts(
        library_found=True,
        library_path="/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        init_result=0,
        driver_version=cuda,
        device_count=n,
    )


def healthy(devices: list[NvmlDevice], driver: str = "550.54.14", cuda: int = 12040, **system) -> Facts:
    return Facts(
        system=linux(**system),
        pci=PciFacts(
            scanned=True,
            nvidia_gpus=[PciDevice(address=d.pci_bus_id or "", kernel_driver="nvidia") for d in devices],
        ),
        driver=driver_ok(driver, cuda, devices),
        cuda_driver=libcuda_ok(cuda, len(devices)),
        toolkit=ToolkitFacts(),
    )


def no_driver(**system) -> Facts:
    return Facts(
        system=linux(**system),
        pci=PciFacts(scanned=True, nvidia_gpus=[]),
        driver=DriverFacts(binding="nvidia-ml-py 13.615.71", library_loaded=False, init_status="LIBRARY_NOT_FOUND"),
        cuda_driver=CudaDriverFacts(library_found=False, load_error="libcuda.so.1: cannot open shared object file"),
        toolkit=ToolkitFacts(),
    )


def torch_cuda(
    version: str, cuda: str, arch: str, devices: list[NvmlDevice], available: bool = True, **kw
) -> TorchFacts:
    from cudadoctor.knowledge.wheels import arch_list_to_flags

    kw.setdefault("cudnn_version", 91002 if available else None)
    kw.setdefault("cudnn_present", True if available else None)
    if "loaded_libraries" not in kw:  # raw library paths are classified into `libraries` by the rules
        kw.setdefault("libraries", pip_venv())

    return TorchFacts(
        python_executable="/opt/venv/bin/python",
        installed=True,
        version=version,
        path="/opt/venv/lib/python3.11/site-packages/torch",
        cuda=cuda,
        cuda_built=True,
        cudnn_built=True,
        arch_flags=list(arch_list_to_flags(arch)),
        is_available=available,
        device_count=len(devices) if available else 0,
        devices=[TorchDevice(d.index, d.name, d.compute_capability, d.memory_total) for d in devices]
        if available
        else [],
        complete=True,
        **kw,
    )


def pip_venv() -> LibraryFacts:
    """What the torch child's environment facts give for /opt/venv: a plain venv pip installs into (an
    install command needs to know what manages the environment)."""
    return LibraryFacts(manager=EnvironmentManager(kind="pip", prefix="/opt/venv", externally_managed=False))


def torch_cpu(version: str = "2.13.0+cpu", **kw) -> TorchFacts:
    if "loaded_libraries" not in kw:  # raw library paths are classified into `libraries` by the rules
        kw.setdefault("libraries", pip_venv())
    return TorchFacts(
        python_executable="/opt/venv/bin/python",
        installed=True,
        cuda_built=False,
        cudnn_built=False,
        arch_flags=[],
        version=version,
        path="/opt/venv/lib/python3.11/site-packages/torch",
        is_available=False,
        device_count=0,
        complete=True,
        **kw,
    )
