"""Example machines whose story is torch and what it loads: wheels without this GPU's kernels, CPU and
ROCm wheels, import failures, LD_LIBRARY_PATH, conda, companions, Jetson, torch.compile, cuBLAS."""

from __future__ import annotations

from cudadoctor.facts import (
    CompileFacts,
    Facts,
    PciFacts,
    SmokeFacts,
    SmokeStep,
    SystemFacts,
    TorchFacts,
)
from cudadoctor.facts.libraries import (
    CompanionCheck,
    EnvironmentManager,
    ImportFailure,
    LibraryFacts,
    LoadedLibrary,
    PinCheck,
)
from cudadoctor.knowledge import companions
from cudadoctor.rules.examples.base import (
    SITE,
    VENV,
    driver_580,
    example_driver,
    example_gpu,
    libcuda_ok,
    ubuntu_system,
    venv_torch,
)

# --- torch and its libraries -----------------------------------------------------------------------


def _torch_builds() -> dict[str, Facts]:
    rtx4090 = [example_gpu("NVIDIA GeForce RTX 4090", "8.9", total=24, used=1)]
    rtx5090 = [example_gpu("NVIDIA GeForce RTX 5090", "12.0", total=32, used=1)]
    k80 = [example_gpu("Tesla K80", "3.7", total=12, used=0)]
    b200 = [example_gpu("NVIDIA B200", "10.0", total=180, used=0)]
    cu126 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
    no_kernel = "CUDA error: no kernel image is available for execution on the device"
    return {
        # a fresh venv without torch
        "venv-without-torch": Facts(
            system=ubuntu_system(),
            driver=driver_580(rtx4090),
            torch=TorchFacts(python_executable=VENV, installed=False),
        ),
        # an RTX 5090 with a cu126 wheel, which has no sm_120 kernels
        "rtx5090-cu126-wheel": Facts(
            system=ubuntu_system(),
            driver=driver_580(rtx5090),
            cuda_driver=libcuda_ok(),
            torch=venv_torch(version="2.13.0+cu126", cuda="12.6", arch_flags=cu126, kernel_error=no_kernel),
            smoke=SmokeFacts(
                steps=[SmokeStep("cpu", "cnn", [2.30, 1.71]), SmokeStep("cuda:0", "cnn", error=no_kernel)]
            ),
        ),
        # a Tesla K80 (Kepler) with a current torch
        "k80-current-torch": Facts(
            system=ubuntu_system(os_release="Ubuntu 20.04.6 LTS"),
            driver=example_driver(devices=k80, driver_version="470.256.02", cuda_driver_version=11040),
            torch=venv_torch(version="2.13.0+cu126", cuda="12.6", arch_flags=cu126, is_available=False, device_count=0),
        ),
        # a B200 with torch 2.6 cu126, whose newest kernels are sm_90 (+PTX): it runs through PTX JIT
        "b200-ptx-jit": Facts(
            system=ubuntu_system(),
            driver=example_driver(devices=b200, driver_version="570.172.08", cuda_driver_version=12080),
            torch=venv_torch(version="2.6.0+cu126", cuda="12.6", arch_flags=[*cu126, "compute_90"]),
        ),
        # the wheel's cuDNN was removed (pip uninstall nvidia-cudnn-cu13)
        "cudnn-removed": Facts(
            system=ubuntu_system(),
            driver=driver_580(rtx4090),
            torch=venv_torch(cudnn_version=None, cudnn_present=False),
        ),
        # a ROCm wheel installed on an NVIDIA machine
        "rocm-wheel-on-nvidia": Facts(
            system=ubuntu_system(),
            driver=driver_580(rtx4090),
            torch=venv_torch(
                version="2.13.0+rocm6.4", cuda=None, hip="6.4", cuda_built=False, is_available=False, device_count=0
            ),
        ),
        # importing torch hangs in CUDA initialisation
        "torch-import-hangs": Facts(
            system=ubuntu_system(),
            driver=driver_580(rtx4090),
            torch=TorchFacts(python_executable=VENV, version="2.13.0+cu130", timed_out=True),
        ),
        # pip upgraded nvidia-nccl-cu13 past torch's pin: import torch fails on a symbol
        "nccl-upgraded-past-pin": Facts(
            system=ubuntu_system(),
            driver=driver_580(rtx4090),
            torch=venv_torch(
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
        "windows-cpu-torch-no-msvc": Facts(
            system=SystemFacts(os="Windows", os_release="Windows 11 Pro 23H2", machine="AMD64", env={}),
            driver=example_driver(
                devices=[example_gpu("NVIDIA GeForce RTX 4060 Laptop GPU", "8.9", total=8, used=0)],
                driver_version="566.36",
                cuda_driver_version=12070,
            ),
            torch=venv_torch(
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
    }


def _libraries() -> dict[str, Facts]:
    rtx3090 = [example_gpu("NVIDIA GeForce RTX 3090", "8.6", total=24, used=1)]
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
    return {
        # ~/.bashrc puts CUDA 12.4 and a tarball cuDNN on LD_LIBRARY_PATH
        "bashrc-cuda-on-ld-library-path": Facts(
            system=ubuntu_system(env={"LD_LIBRARY_PATH": "/usr/local/cuda-12.4/lib64:/opt/cudnn-9.1/lib"}),
            driver=driver_580(rtx3090),
            torch=venv_torch(
                libraries=LibraryFacts(
                    loaded=[wheel_cudart, tarball_cudnn],
                    nvidia_installed={"nvidia-cuda-runtime-cu13": "13.0.96", "nvidia-cudnn-cu13": "9.13.0.50"},
                    ld_library_path=["/usr/local/cuda-12.4/lib64", "/opt/cudnn-9.1/lib"],
                    stale_toolkits=["/usr/local/cuda-12.4/lib64=12.4"],
                )
            ),
        ),
        # `pip install --user torch` once, outside any venv: it hides the system interpreter's torch
        "user-site-torch": Facts(
            system=ubuntu_system(),
            driver=driver_580(rtx3090),
            torch=venv_torch(
                python_executable="/usr/bin/python3",
                libraries=LibraryFacts(
                    torch_installs=[user_site, "/usr/local/lib/python3.12/dist-packages/torch"],
                    user_site_torch=user_site,
                ),
            ),
        ),
        # torch upgraded alone, torchvision left at the old release
        "torchvision-left-behind": Facts(
            system=ubuntu_system(),
            driver=driver_580(rtx3090),
            torch=venv_torch(
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
        "conda-cpuonly": Facts(
            system=ubuntu_system(),
            driver=example_driver(devices=rtx3090, driver_version="550.120", cuda_driver_version=12040),
            torch=venv_torch(
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
        "jetson-pypi-wheel": Facts(
            system=ubuntu_system(machine="aarch64"),
            pci=PciFacts(scanned=True),
            driver=example_driver("LIBRARY_NOT_FOUND"),
            torch=venv_torch(
                version="2.13.0",
                is_available=False,
                device_count=0,
                arch_flags=None,
                libraries=LibraryFacts(jetson="# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic"),
            ),
        ),
        # torch.compile on a server without g++ and the Python headers
        "compile-without-gcc": Facts(
            system=ubuntu_system(),
            driver=driver_580(rtx3090),
            torch=venv_torch(),
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
        "compile-check-hangs": Facts(
            system=ubuntu_system(),
            driver=driver_580(rtx3090),
            torch=venv_torch(),
            compile=CompileFacts(python_executable=VENV, torch_version="2.13.0+cu130", timed_out=True),
        ),
        # a B200 node on torch 2.10 cu130, whose cuBLAS predates the TMEM fix (pytorch PR#178333)
        "b200-old-cublas": Facts(
            system=ubuntu_system(),
            driver=driver_580([example_gpu("NVIDIA B200", "10.0", total=180)]),
            torch=venv_torch(
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
        "free-threaded-python": Facts(
            system=ubuntu_system(),
            driver=driver_580([example_gpu("NVIDIA GeForce RTX 3090", "8.6", total=24)]),
            torch=venv_torch(
                python_version="3.14.0",
                free_threaded=True,
                free_threaded_packages={"torchao": "0.14.1", "torchvision": "0.24.1", "bitsandbytes": "0.48.2"},
            ),
        ),
    }


def examples() -> dict[str, Facts]:
    return {**_torch_builds(), **_libraries()}
