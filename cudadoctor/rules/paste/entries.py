"""The codes only a paste raises (CD900-CD915): what `cudadoctor triage` read, what to ask for, and
the error texts whose cause no probe fact carries. The rules that raise them are in the sibling modules.
"""

from __future__ import annotations

from cudadoctor.model import Severity
from cudadoctor.rules.catalogue import entry

READ = entry(
    "CD900",
    "paste-read",
    Severity.INFO,
    "Paste",
    "What the paste shows",
    """The formats triage recognised in the paste and every fact it read, with the line it came from.
    Facts the paste does not show stay unknown: no rule assumes them, and the verdict names what it
    could not check.""",
)


ASK_FOR = entry(
    "CD901",
    "paste-ask-for",
    Severity.INFO,
    "Paste",
    "To be sure, ask for:",
    """The paste leaves facts unknown that decide the diagnosis. The commands listed print exactly
    those facts; their output, pasted back, settles it. When no error explains the problem yet, this
    is a warning: the paste is not enough to call the machine healthy.""",
)


DRIVER_TOO_OLD = entry(
    "CD902",
    "paste-driver-too-old",
    Severity.ERROR,
    "Paste",
    "torch says the NVIDIA driver is too old for its CUDA",
    """torch's own warning ("The NVIDIA driver on your system is too old (found version 11040)") names
    the newest CUDA the driver supports (11040 is 11.4). The wheel's CUDA is newer, across a major
    version or below the major's minimum driver, so CUDA cannot start. Upgrade the driver, or install
    the torch build made for the driver's CUDA.""",
)


GPU_TOO_OLD = entry(
    "CD903",
    "paste-gpu-too-old",
    Severity.ERROR,
    "Paste",
    "torch says the GPU is too old for this build",
    """torch's warning "Found GPU0 … which is of cuda capability X.Y. PyTorch no longer supports this GPU
    because it is too old" means the installed build has no kernels for that architecture. Only an
    older torch release with a build for it, or the CPU, remains.""",
)


UNDEFINED_SYMBOL = entry(
    "CD904",
    "paste-undefined-symbol",
    Severity.ERROR,
    "Paste",
    "A library torch loads is a different version than the one torch was built with",
    """"undefined symbol: …" means a shared library was found but is not the version the caller was
    linked against: usually an nvidia-* wheel at another version than torch pins (pip upgraded one of
    them), or a system CUDA library found first through LD_LIBRARY_PATH (pytorch#134929, #119932,
    #157381). Removing every nvidia-* package and reinstalling torch from its index fixes it
    (pytorch#104259).""",
)


CANNOT_OPEN = entry(
    "CD905",
    "paste-library-missing",
    Severity.ERROR,
    "Paste",
    "A library torch needs cannot be found",
    """The dynamic loader could not find a shared library: for the CUDA libraries (cuDNN, cuBLAS, NCCL,
    nvJitLink) the nvidia-* wheel torch depends on is missing or was removed, or the library search
    path points at a toolkit without it; for libcuda.so.1 there is no NVIDIA driver here.""",
)


WINDOWS_DLL = entry(
    "CD906",
    "paste-windows-dll",
    Severity.ERROR,
    "Paste",
    "Windows cannot load one of torch's DLLs",
    """[WinError 126/127/1114] while loading a torch DLL (c10.dll, torch_cuda.dll, cudnn…dll) means a
    dependency is missing: usually the Microsoft Visual C++ Redistributable, or a broken install mixing
    builds. The message's text is in the Windows UI language; its error number is not.""",
)


DESERIALIZE = entry(
    "CD907",
    "paste-deserialize-cuda",
    Severity.ERROR,
    "Paste",
    "A checkpoint saved on a GPU is loaded where CUDA is not available",
    """torch.load restores tensors to the device they were saved from. Without CUDA (a CPU-only torch,
    no driver, or fewer GPUs than the saving machine) it fails with "Attempting to deserialize object
    on a CUDA device". map_location moves them while loading.""",
)


STATE_DICT_PREFIX = entry(
    "CD908",
    "paste-state-dict-prefix",
    Severity.ERROR,
    "Paste",
    "State dict keys differ by a wrapper's prefix (module. / _orig_mod.)",
    """nn.DataParallel and DistributedDataParallel prefix every key with "module.", torch.compile with
    "_orig_mod.". A checkpoint saved from a wrapped model does not load into a bare one (or the
    reverse): strip the prefix with consume_prefix_in_state_dict_if_present, never with k[7:].""",
)


CUDA_RUNTIME = entry(
    "CD909",
    "paste-cuda-runtime-error",
    Severity.WARNING,
    "Paste",
    "A CUDA error while running, not a setup problem",
    """CUDA started and the program ran, then failed: out of memory, a device-side assert (an index out of
    range in the model or loss), an illegal memory access, or a busy GPU. The setup can be fine.""",
)


CONTAINER = entry(
    "CD910",
    "paste-container-no-gpu",
    Severity.ERROR,
    "Paste",
    "The container runtime could not give the container a GPU",
    """Docker was asked for GPUs (--gpus) but has no NVIDIA runtime ("could not select device driver"),
    or nvidia-container-cli failed on the host. The NVIDIA Container Toolkit on the host, registered
    with Docker, is what passes GPUs into containers.""",
)


NO_DRIVER = entry(
    "CD911",
    "paste-no-driver",
    Severity.ERROR,
    "Paste",
    "torch found no NVIDIA driver",
    """torch is a CUDA build, but "Found no NVIDIA driver on your system": libcuda, which the driver
    installs, is not there (no driver, a container started without GPUs, or WSL without the Windows
    driver).""",
)


NOT_COMPILED = entry(
    "CD912",
    "paste-not-compiled-with-cuda",
    Severity.ERROR,
    "Paste",
    "Torch not compiled with CUDA enabled: a CPU-only torch",
    """The code asks for CUDA, but the installed torch is a CPU-only build (from PyPI on Windows, a +cpu
    wheel, or conda's cpuonly). A CUDA build of the same version fixes it.""",
)


CUDNN_STATUS = entry(
    "CD913",
    "paste-cudnn-error",
    Severity.ERROR,
    "Paste",
    "cuDNN failed",
    """A cuDNN call failed (CUDNN_STATUS_…). NOT_INITIALIZED and MAPPING_ERROR usually mean a cuDNN
    that does not match torch (a system copy first on the library path) or a GPU out of memory at
    start-up; EXECUTION_FAILED and NOT_SUPPORTED point at the GPU's architecture or the driver.""",
)


STACK_WORKS = entry(
    "CD914",
    "paste-stack-works",
    Severity.OK,
    "Paste",
    "The paste shows the GPU at work: the CUDA stack runs",
    """A line in the paste shows a CUDA device in use: the allocator reporting the GPU's memory, a tensor
    on cuda:0, a launcher's "Device: cuda:0 …". Driver, CUDA and torch work together; what went wrong
    happened while the program ran.""",
)


HARMLESS = entry(
    "CD915",
    "paste-harmless-warning",
    Severity.INFO,
    "Paste",
    "A warning that needs no fix",
    """Some warnings torch and its libraries print are notices, not failures: the TypedStorage and
    torch.meshgrid deprecations, "TORCH_CUDA_ARCH_LIST is not set" while an extension builds for the GPUs
    present, and torch 2.3.0's "Plan failed with a cudnnException" (pytorch#121834: cuDNN falls back to
    another plan). The program's results are not affected.""",
)
