"""CUresult codes cuInit returns when CUDA cannot start, with what each means for a user.

Source: CUDA Driver API, "Data types used by CUDA driver" (enum cudaError_enum / CUresult),
https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html
"""

from __future__ import annotations

CU_INIT_ERRORS: dict[int, tuple[str, str]] = {
    3: ("CUDA_ERROR_NOT_INITIALIZED", "The driver refused to initialise."),
    34: (
        "CUDA_ERROR_STUB_LIBRARY",
        "The libcuda.so that was loaded is the CUDA toolkit's link-time stub (lib64/stubs), not the "
        "driver: a stubs directory is on LD_LIBRARY_PATH ahead of the real driver library.",
    ),
    35: (
        "CUDA_ERROR_INSUFFICIENT_DRIVER",
        "The installed driver is older than the CUDA runtime that asks for it.",
    ),
    100: (
        "CUDA_ERROR_NO_DEVICE",
        "The driver found no CUDA device it may use: CUDA_VISIBLE_DEVICES hides them all, or the "
        "GPUs are not usable by this process.",
    ),
    101: ("CUDA_ERROR_INVALID_DEVICE", "CUDA_VISIBLE_DEVICES names a device that does not exist."),
    303: ("CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", "A driver library failed to initialise."),
    304: ("CUDA_ERROR_OPERATING_SYSTEM", "The operating system refused a call the driver needs."),
    803: (
        "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
        "The libcuda in use does not match the loaded kernel module: a forward-compatibility "
        "(cuda-compat) libcuda, or a half-finished driver upgrade.",
    ),
    804: (
        "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
        "A cuda-compat (forward-compatibility) libcuda is in use on a GPU that does not support "
        "it: forward compatibility is for data-centre GPUs only.",
    ),
    999: (
        "CUDA_ERROR_UNKNOWN",
        "cuInit failed for an unknown reason; after suspend/resume the nvidia_uvm module often needs a reload.",
    ),
}
