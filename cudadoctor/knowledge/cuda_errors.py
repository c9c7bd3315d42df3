"""CUresult codes cuInit returns when CUDA cannot start, with what each means for a user.

Source: CUDA Driver API, "Data types used by CUDA driver" (enum cudaError_enum / CUresult),
https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html; the causes named for 34, 46, 802,
803, 804 are cuda-facts §9 (pytorch#35710 for 802: fabric manager on NVSwitch systems).
NVML return codes: nvml.h nvmlReturn_t as nvidia-ml-py 13.615.71 names them (cuda-facts §7).
"""

from __future__ import annotations

# CUresult values the rules name (cuda.h)
CUDA_SUCCESS = 0
CUDA_ERROR_NOT_INITIALIZED = 3
CUDA_ERROR_STUB_LIBRARY = 34
CUDA_ERROR_INSUFFICIENT_DRIVER = 35
CUDA_ERROR_DEVICE_UNAVAILABLE = 46
CUDA_ERROR_NO_DEVICE = 100
CUDA_ERROR_INVALID_DEVICE = 101
CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222
CUDA_ERROR_SHARED_OBJECT_INIT_FAILED = 303
CUDA_ERROR_OPERATING_SYSTEM = 304
CUDA_ERROR_SYSTEM_NOT_READY = 802
CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803
CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804
CUDA_ERROR_UNKNOWN = 999

CU_INIT_ERRORS: dict[int, tuple[str, str]] = {
    3: (
        "CUDA_ERROR_NOT_INITIALIZED",
        "The driver refused to initialise: usually the kernel module and libcuda disagree, or the "
        "process forked after CUDA started (a child of a CUDA process must use the spawn start method).",
    ),
    34: (
        "CUDA_ERROR_STUB_LIBRARY",
        "The libcuda.so that was loaded is the CUDA toolkit's link-time stub (lib64/stubs), not the "
        "driver: a stubs directory is on LD_LIBRARY_PATH ahead of the real driver library.",
    ),
    35: (
        "CUDA_ERROR_INSUFFICIENT_DRIVER",
        "The installed driver is older than the CUDA runtime that asks for it.",
    ),
    46: (
        "CUDA_ERROR_DEVICE_UNAVAILABLE",
        "CUDA-capable device(s) is/are busy or unavailable: the GPU's compute mode is Exclusive-Process "
        "(another process holds it) or Prohibited, or the GPU is held by a VM or another container.",
    ),
    100: (
        "CUDA_ERROR_NO_DEVICE",
        "The driver found no CUDA device it may use: CUDA_VISIBLE_DEVICES hides them all, or the "
        "GPUs are not usable by this process.",
    ),
    101: ("CUDA_ERROR_INVALID_DEVICE", "CUDA_VISIBLE_DEVICES names a device that does not exist."),
    222: (
        "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
        "The program carries PTX newer than this driver can compile: the CUDA build is newer than the driver.",
    ),
    303: ("CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", "A driver library failed to initialise."),
    304: (
        "CUDA_ERROR_OPERATING_SYSTEM",
        'The operating system refused a call the driver needs: under WSL "GPU access blocked by the '
        'operating system"; in a container the device cgroup denies /dev/nvidia*.',
    ),
    802: (
        "CUDA_ERROR_SYSTEM_NOT_READY",
        "The system is not ready for CUDA: on NVSwitch systems (HGX/DGX) nvidia-fabricmanager is not "
        "running, or is not exactly the driver's version.",
    ),
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


# NVML return codes: name -> (code, what it means for a user, what to do). The rules quote the meaning and
# turn the advice into commands (rules/driver.py); every code nvmlInit and the device queries return.
NVML_ERRORS: dict[str, tuple[int, str, str]] = {
    "UNINITIALIZED": (1, "NVML was used before nvmlInit: a bug in the caller.", "report it"),
    "INVALID_ARGUMENT": (2, "A query was given an invalid argument.", "report it"),
    "NOT_SUPPORTED": (3, "This GPU or driver does not support the query (GeForce, vGPU, an old GPU).", "none"),
    "NO_PERMISSION": (4, "This user may not open /dev/nvidia* or run the query.", "device groups"),
    "ALREADY_INITIALIZED": (5, "NVML was initialised twice (deprecated code).", "none"),
    "NOT_FOUND": (6, "The object asked for does not exist.", "none"),
    "INSUFFICIENT_SIZE": (7, "A buffer was too small.", "report it"),
    "INSUFFICIENT_POWER": (
        8,
        "A GPU's external power cables are not connected or not delivering enough power.",
        "reseat the PCIe power cables",
    ),
    "DRIVER_NOT_LOADED": (9, "The NVIDIA kernel module is not loaded.", "see CD102"),
    "TIMEOUT": (10, "The driver did not answer in time: a GPU or the driver is stuck.", "reset or reboot"),
    "IRQ_ISSUE": (
        11,
        "The kernel driver found a problem with a GPU's interrupts (MSI, a PCIe or firmware fault).",
        "kernel log, reboot",
    ),
    "LIBRARY_NOT_FOUND": (12, "libnvidia-ml.so.1 is missing: no driver here.", "see CD101"),
    "FUNCTION_NOT_FOUND": (13, "The driver is older than the NVML binding.", "see CD106"),
    "CORRUPTED_INFOROM": (
        14,
        "The GPU's infoROM (its on-board configuration store) is corrupted.",
        "service: the GPU's firmware needs repair",
    ),
    "GPU_IS_LOST": (15, "The GPU has fallen off the bus or stopped answering.", "see CD105"),
    "RESET_REQUIRED": (16, "The GPU needs a reset before it can be used again.", "see CD105"),
    "OPERATING_SYSTEM": (
        17,
        "The operating system blocked the request (WSL: GPU access blocked; a container's device cgroup).",
        "see CD115",
    ),
    "LIB_RM_VERSION_MISMATCH": (18, "The libraries and the loaded kernel module are different versions.", "see CD103"),
    "IN_USE": (19, "The GPU is in use: the operation needs it idle.", "stop its processes"),
    "MEMORY": (20, "The driver ran out of (host) memory.", "free memory"),
    "NO_DATA": (21, "No data is available yet.", "none"),
    "VGPU_ECC_NOT_SUPPORTED": (22, "ECC is not supported on this vGPU.", "none"),
    "INSUFFICIENT_RESOURCES": (23, "The GPU lacks resources for the request.", "none"),
    "FREQ_NOT_SUPPORTED": (24, "The frequency asked for is not supported.", "none"),
    "ARGUMENT_VERSION_MISMATCH": (25, "A structure version does not match the driver's.", "update the binding"),
    "DEPRECATED": (26, "The call is deprecated in this driver.", "update the binding"),
    "NOT_READY": (27, "The system is not ready (NVSwitch systems: the fabric manager).", "see CD143"),
    "GPU_NOT_FOUND": (28, "The GPU was not found: removed, or hidden by the VM or container.", "see CD110"),
    "INVALID_STATE": (29, "The GPU is in a state that does not allow the request.", "none"),
    "RESET_TYPE_NOT_SUPPORTED": (30, "This reset type is not supported.", "none"),
    "UNKNOWN": (999, "NVML failed for an unknown reason (often a driver/kernel problem).", "kernel log, reboot"),
}
