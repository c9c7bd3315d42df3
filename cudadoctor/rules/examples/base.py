"""What every example shares: an Ubuntu host, an A100, a 580 driver, a venv torch."""

from __future__ import annotations

from typing import Any

from cudadoctor.facts import (
    CudaDriverFacts,
    DriverFacts,
    NvmlDevice,
    PciDevice,
    PciFacts,
    SystemFacts,
    TorchFacts,
)

GiB = 1 << 30
KERNEL = "6.8.0-45-generic"
VENV = "/home/alice/venv/bin/python"
SITE = "/home/alice/venv/lib/python3.12/site-packages"

_UBUNTU = dict(os="Linux", os_release="Ubuntu 22.04.4 LTS", os_id="ubuntu", in_container=False, wsl=False, env={})


def _ubuntu(**kw: Any) -> SystemFacts:
    return SystemFacts(**{**_UBUNTU, **kw})


def _gpu(
    name: str = "NVIDIA A100-SXM4-80GB", cc: str = "8.0", index: int = 0, total: int = 80, used: int = 10, **kw: Any
) -> NvmlDevice:
    return NvmlDevice(
        index=index,
        name=name,
        uuid=f"GPU-{0x12345678 + index:08x}-1111-2222-3333-444455556666",
        pci_bus_id=f"00000000:{0x18 + index:02X}:00.0",
        compute_capability=cc,
        memory_total=total * GiB,
        memory_free=(total - used) * GiB,
        memory_used=used * GiB,
        **kw,
    )


def _driver(status: str = "ok", devices: list[NvmlDevice] | None = None, **kw: Any) -> DriverFacts:
    base: dict = dict(binding="nvidia-ml-py", library_loaded=status != "LIBRARY_NOT_FOUND", init_status=status)
    if status == "ok":
        devs = [_gpu()] if devices is None else devices
        base.update(driver_version="535.104.05", cuda_driver_version=12020, device_count=len(devs), devices=devs)
    base.update(kw)
    return DriverFacts(**base)


def _driver_580(devices: list[NvmlDevice], **kw: Any) -> DriverFacts:
    """A current driver (CUDA 13.0), for machines whose story is above the driver."""
    return _driver(devices=devices, driver_version="580.65.06", cuda_driver_version=13000, **kw)


def _libcuda(cuda: int = 13000, n: int = 1, **kw: Any) -> CudaDriverFacts:
    base: dict = dict(
        library_found=True,
        library_path="/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        init_result=0,
        driver_version=cuda,
        device_count=n,
    )
    base.update(kw)
    return CudaDriverFacts(**base)


def _torch(**kw: Any) -> TorchFacts:
    base: dict = dict(python_executable="python3", installed=True, version="2.13.0+cu130", cuda="13.0", cuda_built=True)
    base.update(kw)
    return TorchFacts(**base)


def _venv_torch(**kw: Any) -> TorchFacts:
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
    return _torch(**base)


def _bus(*drivers: str | None) -> PciFacts:
    return PciFacts(
        scanned=True,
        nvidia_gpus=[PciDevice(address=f"0000:{0x18 + i:02x}:00.0", kernel_driver=d) for i, d in enumerate(drivers)],
    )
