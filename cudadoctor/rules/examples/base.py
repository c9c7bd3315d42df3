"""The one kit of fact builders, for the examples and for the tests (tests/facts_fixtures.py re-exports it).

What every example shares: an Ubuntu host, an A100, a 580 driver, a venv torch (`ubuntu_system`,
`example_gpu`, `example_driver`, `venv_torch`, ...). What the tests' machines share: the same Ubuntu
with a named user and host, GPUs by index/name/capability, a 550 driver, torch in /opt/venv (`linux`,
`gpu`, `healthy`, `no_driver`, `torch_cuda`, `torch_cpu`, ...)."""

from __future__ import annotations

from typing import Any

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
KERNEL = "6.8.0-45-generic"
VENV = "/home/alice/venv/bin/python"
SITE = "/home/alice/venv/lib/python3.12/site-packages"

UBUNTU = dict(os="Linux", os_release="Ubuntu 22.04.4 LTS", os_id="ubuntu", in_container=False, wsl=False, env={})


def ubuntu_system(**kw: Any) -> SystemFacts:
    return SystemFacts(**{**UBUNTU, "env": {}, **kw})  # an env of its own: a test may change it


def example_gpu(
    name: str = "NVIDIA A100-SXM4-80GB", cc: str = "8.0", index: int = 0, total: int = 80, used: int = 10, **kw: Any
) -> NvmlDevice:
    kw.setdefault("uuid", f"GPU-{0x12345678 + index:08x}-1111-2222-3333-444455556666")
    return gpu(index, name, cc, total, used, **kw)


def example_driver(status: str = "ok", devices: list[NvmlDevice] | None = None, **kw: Any) -> DriverFacts:
    base: dict = dict(binding="nvidia-ml-py", library_loaded=status != "LIBRARY_NOT_FOUND", init_status=status)
    if status == "ok":
        devs = [example_gpu()] if devices is None else devices
        base.update(driver_version="535.104.05", cuda_driver_version=12020, device_count=len(devs), devices=devs)
    base.update(kw)
    return DriverFacts(**base)


def driver_580(devices: list[NvmlDevice], **kw: Any) -> DriverFacts:
    """A current driver (CUDA 13.0), for machines whose story is above the driver."""
    return example_driver(devices=devices, driver_version="580.65.06", cuda_driver_version=13000, **kw)


def libcuda_ok(cuda: int = 13000, n: int = 1, **kw: Any) -> CudaDriverFacts:
    base: dict = dict(
        library_found=True,
        library_path="/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        init_result=0,
        driver_version=cuda,
        device_count=n,
    )
    base.update(kw)
    return CudaDriverFacts(**base)


def example_torch(**kw: Any) -> TorchFacts:
    base: dict = dict(python_executable="python3", installed=True, version="2.13.0+cu130", cuda="13.0", cuda_built=True)
    base.update(kw)
    return TorchFacts(**base)


def venv_torch(**kw: Any) -> TorchFacts:
    """torch 2.13 cu130 pip-installed in a venv that imports and sees the GPU (the pieces a story changes)."""
    base: dict = dict(
        python_executable=VENV,
        python_version="3.12.3",
        path=f"{SITE}/torch",
        arch_flags=["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"],
        is_available=True,
        device_count=1,
        cudnn_built=True,
        cudnn_version=91300,
        cudnn_present=True,
        complete=True,
    )
    base.update(kw)
    return example_torch(**base)


def pci_bus(*drivers: str | None) -> PciFacts:
    return PciFacts(
        scanned=True,
        nvidia_gpus=[PciDevice(address=f"0000:{0x18 + i:02x}:00.0", kernel_driver=d) for i, d in enumerate(drivers)],
    )


# --- the tests' machines ----------------------------------------------------------------------------------------


_TEST_HOST = dict(machine="x86_64", python_version="3.11.7", hostname="gpu-box-17", user="alice", shm_total=32 * GiB)


def linux(**kw: Any) -> SystemFacts:
    """The examples' Ubuntu with the host, user and /dev/shm a test's machine has."""
    return ubuntu_system(**{**_TEST_HOST, **kw})


def gpu(index: int, name: str, cc: str, total_gib: float = 80, used_gib: float = 0, **kw: Any) -> NvmlDevice:
    total = int(total_gib * GiB)
    used = int(used_gib * GiB)
    kw.setdefault("uuid", f"GPU-{index:08x}-1111-2222-3333-444455556666")
    return NvmlDevice(
        index=index,
        name=name,
        compute_capability=cc,
        memory_total=total,
        memory_used=used,
        memory_free=total - used,
        pci_bus_id=f"00000000:{0x18 + index:02X}:00.0",
        **kw,
    )


def driver_ok(version: str, cuda: int, devices: list[NvmlDevice]) -> DriverFacts:
    return example_driver(
        devices=devices, binding="nvidia-ml-py 13.615.71", driver_version=version, cuda_driver_version=cuda
    )


def healthy(devices: list[NvmlDevice], driver: str = "550.54.14", cuda: int = 12040, **system: Any) -> Facts:
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


def no_driver(**system: Any) -> Facts:
    return Facts(
        system=linux(**system),
        pci=PciFacts(scanned=True, nvidia_gpus=[]),
        driver=DriverFacts(binding="nvidia-ml-py 13.615.71", library_loaded=False, init_status="LIBRARY_NOT_FOUND"),
        cuda_driver=CudaDriverFacts(library_found=False, load_error="libcuda.so.1: cannot open shared object file"),
        toolkit=ToolkitFacts(),
    )


def torch_cuda(
    version: str, cuda: str, arch: str, devices: list[NvmlDevice], available: bool = True, **kw: Any
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


def torch_cpu(version: str | None = "2.13.0+cpu", **kw: Any) -> TorchFacts:
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
