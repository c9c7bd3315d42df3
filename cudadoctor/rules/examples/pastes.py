"""Example pastes from issues (`cudadoctor triage`): error text from people's reports, by what it says."""

from __future__ import annotations

from cudadoctor.facts import (
    Facts,
    PasteFacts,
    SystemFacts,
    TorchFacts,
)
from cudadoctor.facts.paste import PasteHit

# --- pastes from issues (`cudadoctor triage`) -----------------------------------------------------


def _paste(*hits: PasteHit, formats: tuple[str, ...] = ("error text",)) -> PasteFacts:
    return PasteFacts(formats=list(formats), hits=list(hits))


def _pastes() -> dict[str, Facts]:
    linux = SystemFacts(os="Linux")
    windows = SystemFacts(os="Windows")
    cuda_wheel = TorchFacts(
        python_executable="python", installed=True, version="2.13.0+cu130", cuda="13.0", cuda_built=True
    )
    hit = PasteHit
    return {
        # "Torch not compiled with CUDA enabled" on Windows (PyPI's CPU-only torch)
        "paste-not-compiled-with-cuda": Facts(
            system=windows,
            torch=TorchFacts(
                python_executable="python", installed=True, version="2.13.0+cpu", cuda_built=False, is_available=False
            ),
            paste=_paste(hit("not-compiled-with-cuda", "AssertionError: Torch not compiled with CUDA enabled")),
        ),
        # a training log: the allocator's numbers show the GPU ran (the problem is elsewhere)
        "paste-gpu-ran": Facts(
            paste=_paste(
                hit(
                    "gpu-ran",
                    "max_memory_allocated: 5.1 GiB on cuda:0",
                    {"why": "the CUDA allocator reported the GPU's memory"},
                ),
                formats=("run-time output",),
            ),
        ),
        # torch's TypedStorage deprecation warning, pasted as if it were the problem
        "paste-harmless-warning": Facts(
            paste=_paste(
                hit(
                    "harmless-warning",
                    "UserWarning: TypedStorage is deprecated. It will be removed in the future",
                    {"warning": "TypedStorage"},
                ),
                formats=("run-time output",),
            ),
        ),
        # torch's "driver too old" warning
        "paste-driver-too-old": Facts(
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
        "paste-gpu-too-old": Facts(
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
        "paste-undefined-symbol": Facts(
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
        "paste-cudnn-missing": Facts(
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
        "paste-windows-dll": Facts(
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
        "paste-ddp-checkpoint": Facts(
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
        "paste-out-of-memory": Facts(
            system=linux,
            torch=cuda_wheel,
            paste=_paste(hit("out-of-memory", "torch.OutOfMemoryError: CUDA out of memory.")),
        ),
        # `docker run --gpus all` on a host without the NVIDIA Container Toolkit
        "paste-docker-no-gpu-runtime": Facts(
            paste=_paste(
                hit(
                    "docker-no-gpu-runtime",
                    'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].',
                )
            )
        ),
        # "Found no NVIDIA driver on your system"
        "paste-no-driver": Facts(
            system=linux,
            torch=cuda_wheel,
            paste=_paste(hit("no-driver", "RuntimeError: Found no NVIDIA driver on your system.")),
        ),
        # cuDNN failing at the first convolution
        "paste-cudnn-status": Facts(
            system=linux,
            torch=cuda_wheel,
            paste=_paste(
                hit("cudnn-status", "cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", {"status": "NOT_INITIALIZED"})
            ),
        ),
    }


def examples() -> dict[str, Facts]:
    return {**_pastes()}
