"""Example machines whose story is where they run: WSL (1 and 2) and containers (Docker, Kubernetes)."""

from __future__ import annotations

from typing import Any

from cudadoctor.facts import (
    CudaDriverFacts,
    Facts,
    PlatformFacts,
    SmokeFacts,
    SmokeStep,
)
from cudadoctor.facts.platform import (
    ContainerFacts,
    WslFacts,
)
from cudadoctor.rules.examples.base import (
    driver_580,
    example_driver,
    example_gpu,
    libcuda_ok,
    ubuntu_system,
    venv_torch,
)


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


def _wsl() -> dict[str, Facts]:
    wsl2 = ubuntu_system(wsl=True, kernel="5.15.153.1-microsoft-standard-WSL2")
    rtx = [example_gpu("NVIDIA GeForce RTX 4080", "8.9", total=16, used=1)]
    return {
        # an old distribution still on WSL1
        "wsl1": Facts(
            system=ubuntu_system(wsl=True, os_release="Ubuntu 20.04.6 LTS", kernel="4.4.0-19041-Microsoft"),
            driver=example_driver("LIBRARY_NOT_FOUND"),
            platform=PlatformFacts(wsl=WslFacts(version=1, distro="Ubuntu-20.04", lib_dir=False)),
        ),
        # someone ran `apt install nvidia-driver-550` inside WSL2
        "linux-driver-inside-wsl2": Facts(
            system=wsl2,
            driver=example_driver("DRIVER_NOT_LOADED"),
            platform=_wsl_platform(linux_driver_packages=["nvidia-driver-550", "libnvidia-compute-550"]),
        ),
        # a copied libcuda.so.1 found before /usr/lib/wsl/lib
        "wsl-copied-libcuda": Facts(
            system=wsl2,
            driver=example_driver(devices=rtx, driver_version="560.94", cuda_driver_version=12060),
            cuda_driver=libcuda_ok(12060, init_result=100, init_error_name="CUDA_ERROR_NO_DEVICE", device_count=None),
            platform=_wsl_platform(shadowing_libs=["/usr/lib/x86_64-linux-gnu/libcuda.so.1"]),
        ),
        # "GPU access blocked by the operating system"
        "wsl-gpu-blocked": Facts(
            system=wsl2,
            driver=example_driver("OPERATING_SYSTEM"),
            cuda_driver=libcuda_ok(init_result=304, init_error_name="CUDA_ERROR_OPERATING_SYSTEM", driver_version=None),
            platform=_wsl_platform(),
        ),
    }


def _container(runtime: str = "docker", **kw: Any) -> PlatformFacts:
    return PlatformFacts(container=ContainerFacts(runtime=runtime, **kw))


def _containers() -> dict[str, Facts]:
    inside = ubuntu_system(in_container=True, container_hints=["/.dockerenv"], shm_total=64 << 20)
    a10 = [example_gpu("NVIDIA A10G", "8.6", total=24, used=0)]
    return {
        # `docker run` without --gpus on an image that sets NVIDIA_VISIBLE_DEVICES=void
        "docker-without-gpus": Facts(
            system=inside, driver=example_driver("LIBRARY_NOT_FOUND"), platform=_container(visible_devices="void")
        ),
        # NVIDIA_DRIVER_CAPABILITIES=utility: nvidia-smi works, CUDA does not
        "container-utility-only": Facts(
            system=inside,
            driver=example_driver(devices=a10),
            cuda_driver=CudaDriverFacts(library_found=False, load_error="libcuda.so.1: cannot open shared object file"),
            platform=_container(visible_devices="all", driver_capabilities="utility"),
        ),
        # a Kubernetes pod whose spec asks for no GPU
        "kubernetes-pod-without-gpu": Facts(
            system=ubuntu_system(in_container=True, container_hints=["KUBERNETES_SERVICE_HOST"]),
            driver=example_driver("LIBRARY_NOT_FOUND"),
            platform=_container("kubernetes", kubernetes=True),
        ),
        # Docker's default 64 MB /dev/shm kills DataLoader workers
        "docker-64mb-shm": Facts(
            system=inside,
            driver=driver_580(a10),
            cuda_driver=libcuda_ok(),
            torch=venv_torch(),
            platform=_container(visible_devices="all", driver_capabilities="compute,utility"),
            smoke=SmokeFacts(
                steps=[SmokeStep("cpu", "mlp", [2.31, 0.42]), SmokeStep("cuda:0", "mlp", [2.31, 0.42])],
                max_loss_difference=1e-6,
                dataloader_ok=False,
                dataloader_error="DataLoader worker (pid 2345) is killed by signal: Bus error.",
            ),
        ),
    }


def examples() -> dict[str, Facts]:
    return {**_wsl(), **_containers()}
