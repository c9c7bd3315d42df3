"""libcuda through ctypes, in a child process: cuInit can hang on a broken driver and
initialising CUDA in the doctor's own process would poison later forks."""

from __future__ import annotations

import sys

from cudadoctor.backends.child import marked_json, run_child
from cudadoctor.facts import CudaDriverFacts

# Runs in a child interpreter with nothing but the standard library. Prints one JSON object.
_CHILD = r"""
import ctypes, json, os, sys
MARK = "CUDADOCTOR_LIBCUDA "
out = {"library_found": False, "candidates": []}
if sys.platform == "win32":
    names = ["nvcuda.dll"]
else:
    names = ["libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1", "libcuda.so"]
# CUDADOCTOR_LIBRARY_DIRS (a test seam, see backends/nvml.py): look only in those directories
dirs = os.environ.get("CUDADOCTOR_LIBRARY_DIRS")
if dirs is not None:
    names = [os.path.join(d, "libcuda.so.1") for d in dirs.split(os.pathsep) if d]
lib = None
for name in names:
    out["candidates"].append(name)
    try:
        lib = ctypes.CDLL(name)
        break
    except OSError as exc:
        out.setdefault("load_error", str(exc))  # the first name is the one that matters
if lib is not None:
    out["library_found"] = True
    out.pop("load_error", None)
    path = None
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                if "libcuda.so" in line:
                    path = line.split(None, 5)[-1].strip()
                    break
    except OSError:
        pass
    out["library_path"] = path or name
    v = ctypes.c_int(0)
    if lib.cuDriverGetVersion(ctypes.byref(v)) == 0:
        out["driver_version"] = v.value
    print(MARK + json.dumps(out), flush=True)  # what we know so far survives a hang in cuInit
    rc = lib.cuInit(0)
    out["init_result"] = rc
    err = ctypes.c_char_p()
    try:
        if lib.cuGetErrorName(rc, ctypes.byref(err)) == 0 and err.value:
            out["init_error_name"] = err.value.decode()
    except AttributeError:
        pass
    if rc == 0:
        n = ctypes.c_int(0)
        if lib.cuDeviceGetCount(ctypes.byref(n)) == 0:
            out["device_count"] = n.value
print(MARK + json.dumps(out), flush=True)
"""


def query_libcuda(timeout: float, python: str | None = None) -> CudaDriverFacts:
    # -I -S: the child needs only ctypes and json; skipping site saves start-up time beside the torch child
    res = run_child([python or sys.executable, "-I", "-S", "-c", _CHILD], timeout=timeout)
    data = marked_json(res, "CUDADOCTOR_LIBCUDA ") or {}
    facts = CudaDriverFacts(
        library_found=data.get("library_found") if isinstance(data.get("library_found"), bool) else None,
        library_path=data.get("library_path"),
        candidates=list(data.get("candidates", [])),
        load_error=data.get("load_error"),
        init_result=data.get("init_result"),
        init_error_name=data.get("init_error_name"),
        driver_version=data.get("driver_version"),
        device_count=data.get("device_count"),
    )
    if res.timed_out:
        facts.timed_out = True
    elif not res.ok:
        facts.child_error = res.failure()
    return facts
