"""Record what the real NVML and libcuda answer, call by call, to compare with the fakes.

Run on a machine with an NVIDIA GPU: `python tests/fakenvml/dump_real.py > real_nvml.json`.
Every call the doctor and the fakes make is tried; a failing call keeps its NVML/CUDA error code,
so the fakes can be checked for the same field formats and the same errors
(tests/fixtures/real_h100_nvml.json is one such recording).
"""

from __future__ import annotations

import ctypes
import json
import sys
from typing import Any


def plain(value: Any) -> Any:
    """A JSON-able copy of an NVML answer (ctypes structs as dicts, bytes as text)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    fields = getattr(value, "_fields_", None)
    if fields is not None:
        return {name: plain(getattr(value, name)) for name, *_ in fields}
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return repr(value)


def attempt(fn: Any, *args: Any) -> dict[str, Any]:
    import pynvml

    try:
        return {"ok": plain(fn(*args))}
    except pynvml.NVMLError as exc:
        return {"error": exc.value, "text": str(exc)}
    except Exception as exc:  # a binding that does not exist in this nvidia-ml-py
        return {"exception": f"{type(exc).__name__}: {exc}"}


DEVICE_CALLS = [
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetIndex",
    "nvmlDeviceGetPciInfo",
    "nvmlDeviceGetPciInfo_v3",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetCudaComputeCapability",
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetCurrPcieLinkGeneration",
    "nvmlDeviceGetCurrPcieLinkWidth",
    "nvmlDeviceGetMaxPcieLinkGeneration",
    "nvmlDeviceGetMaxPcieLinkWidth",
    "nvmlDeviceGetGpuMaxPcieLinkGeneration",
    "nvmlDeviceGetMigMode",
    "nvmlDeviceGetMaxMigDeviceCount",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetPowerManagementLimit",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
    "nvmlDeviceGetPersistenceMode",
    "nvmlDeviceGetComputeMode",
    "nvmlDeviceGetRetiredPagesPendingStatus",
    "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetPerformanceState",
    "nvmlDeviceGetFanSpeed",
    "nvmlDeviceGetDisplayActive",
    "nvmlDeviceGetEncoderUtilization",
    "nvmlDeviceGetDecoderUtilization",
    "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetGraphicsRunningProcesses",
]


def nvml_dump() -> dict[str, Any]:
    import pynvml

    out: dict[str, Any] = {"nvidia_ml_py": getattr(pynvml, "__version__", None)}
    init = attempt(pynvml.nvmlInit)
    out["nvmlInit"] = init
    if "ok" not in init:
        return out
    for name in (
        "nvmlSystemGetDriverVersion",
        "nvmlSystemGetNVMLVersion",
        "nvmlSystemGetCudaDriverVersion",
        "nvmlSystemGetCudaDriverVersion_v2",
        "nvmlDeviceGetCount",
    ):
        out[name] = attempt(getattr(pynvml, name))
    devices = []
    count = out["nvmlDeviceGetCount"].get("ok") or 0
    for i in range(count):
        handle = pynvml.nvmlDeviceGetHandleByIndex(i)
        dev: dict[str, Any] = {}
        for name in DEVICE_CALLS:
            dev[name] = attempt(getattr(pynvml, name, None) or (lambda *_: 1 / 0), handle)
        dev["nvmlDeviceGetTemperature(GPU)"] = attempt(
            pynvml.nvmlDeviceGetTemperature, handle, pynvml.NVML_TEMPERATURE_GPU
        )
        dev["nvmlDeviceGetPcieThroughput(TX)"] = attempt(
            pynvml.nvmlDeviceGetPcieThroughput, handle, pynvml.NVML_PCIE_UTIL_TX_BYTES
        )
        dev["nvmlDeviceGetPcieThroughput(RX)"] = attempt(
            pynvml.nvmlDeviceGetPcieThroughput, handle, pynvml.NVML_PCIE_UTIL_RX_BYTES
        )
        for label, kind in (("VOLATILE", pynvml.NVML_VOLATILE_ECC), ("AGGREGATE", pynvml.NVML_AGGREGATE_ECC)):
            dev[f"nvmlDeviceGetTotalEccErrors(UNCORRECTED,{label})"] = attempt(
                pynvml.nvmlDeviceGetTotalEccErrors, handle, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, kind
            )
        for label, cause in (
            ("SBE", pynvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS),
            ("DBE", pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR),
        ):
            dev[f"nvmlDeviceGetRetiredPages({label})"] = attempt(pynvml.nvmlDeviceGetRetiredPages, handle, cause)
        dev["nvmlDeviceGetMigDeviceHandleByIndex(0)"] = attempt(
            lambda h: bool(pynvml.nvmlDeviceGetMigDeviceHandleByIndex(h, 0)), handle
        )
        devices.append(dev)
    out["devices"] = devices
    out["nvmlShutdown"] = attempt(pynvml.nvmlShutdown)
    return out


def cuda_dump() -> dict[str, Any]:
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return {"load": str(exc)}
    out: dict[str, Any] = {}
    version = ctypes.c_int(-1)
    out["cuDriverGetVersion_before_init"] = [lib.cuDriverGetVersion(ctypes.byref(version)), version.value]
    count = ctypes.c_int(-1)
    out["cuDeviceGetCount_before_init"] = [lib.cuDeviceGetCount(ctypes.byref(count)), count.value]
    out["cuInit"] = lib.cuInit(0)
    out["cuDeviceGetCount"] = [lib.cuDeviceGetCount(ctypes.byref(count)), count.value]
    names = {}
    for code in (0, 1, 3, 100, 101, 304, 803, 804, 999):
        text = ctypes.c_char_p()
        rc = lib.cuGetErrorName(code, ctypes.byref(text))
        names[code] = [rc, text.value.decode() if text.value else None]
    out["cuGetErrorName"] = names
    uuid = (ctypes.c_ubyte * 16)()
    dev = ctypes.c_int()
    try:  # the fake libcuda has neither: the doctor does not call them
        if lib.cuDeviceGet(ctypes.byref(dev), 0) == 0 and lib.cuDeviceGetUuid(uuid, dev) == 0:
            out["cuDeviceGetUuid(0)"] = bytes(uuid).hex()
    except AttributeError:
        pass
    return out


def torch_dump() -> dict[str, Any]:
    try:
        import torch
    except ImportError as exc:
        return {"import": str(exc)}
    out: dict[str, Any] = {
        "version": torch.__version__,
        "cuda": torch.version.cuda,
        "available": torch.cuda.is_available(),
    }
    if out["available"]:
        props = torch.cuda.get_device_properties(0)
        out["props"] = {
            k: str(getattr(props, k)) for k in dir(props) if not k.startswith("_") and not callable(getattr(props, k))
        }
        out["arch_list"] = torch.cuda.get_arch_list()
        out["mem_get_info"] = list(torch.cuda.mem_get_info(0))
    return out


if __name__ == "__main__":
    json.dump(
        {"nvml": nvml_dump(), "libcuda": cuda_dump(), "torch": torch_dump()}, sys.stdout, indent=1, sort_keys=True
    )
    sys.stdout.write("\n")
