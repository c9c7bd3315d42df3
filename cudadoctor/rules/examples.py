"""Example machines the catalogue shows fixes from: `explain CODE` prints what the rules say on the first
example that raises CODE (a real fix for a typical machine, not a placeholder)."""

from __future__ import annotations

from functools import cache

from cudadoctor.facts import (
    CudaDriverFacts,
    DriverFacts,
    Facts,
    NvmlDevice,
    PciDevice,
    PciFacts,
    SystemFacts,
    ToolkitFacts,
    TorchFacts,
)
from cudadoctor.report import Fix

_UBUNTU = dict(os="Linux", os_release="Ubuntu 22.04.4 LTS", os_id="ubuntu", in_container=False, wsl=False, env={})


def _gpu(name: str = "NVIDIA A100-SXM4-80GB", cc: str = "8.0") -> NvmlDevice:
    return NvmlDevice(
        index=0,
        name=name,
        uuid="GPU-12345678-1111-2222-3333-444455556666",
        compute_capability=cc,
        memory_total=80 << 30,
        memory_free=70 << 30,
        memory_used=10 << 30,
    )


def _driver(status: str = "ok", **kw: object) -> DriverFacts:
    base: dict = dict(binding="nvidia-ml-py", library_loaded=status != "LIBRARY_NOT_FOUND", init_status=status)
    if status == "ok":
        base.update(driver_version="535.104.05", cuda_driver_version=12020, device_count=1, devices=[_gpu()])
    base.update(kw)
    return DriverFacts(**base)


def _torch(**kw: object) -> TorchFacts:
    base: dict = dict(python_executable="python3", installed=True, version="2.13.0+cu130", cuda="13.0", cuda_built=True)
    base.update(kw)
    return TorchFacts(**base)


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
    ]


@cache
def _all() -> dict[str, list[Fix]]:
    from cudadoctor.rules import evaluate

    out: dict[str, list[Fix]] = {}
    for facts in machines():
        for finding in evaluate(facts, []):
            if finding.fix and finding.code not in out:
                out[finding.code] = finding.fix
    return out


def example_fixes(code: str) -> list[Fix]:
    return list(_all().get(code, []))
