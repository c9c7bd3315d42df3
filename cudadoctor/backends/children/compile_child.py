"""Run as a script in the TARGET interpreter (stdlib + torch only): can torch.compile compile here?

Never imported by cudadoctor itself. Prints one JSON line after a marker at each stage, so a stage
that hangs (a compiler that never returns) still leaves what came before: first the pieces inductor
needs (Triton, a C++ compiler, Python headers, a writable cache directory), then a tiny function
compiled for the GPU when one runs kernels, else for the CPU. An importable Triton does not prove
compilation works (unsloth PR#7704), so the function is really compiled and run. Also a stage of
torch_session_child.py (main() is the stage).
"""

import json
import os
import shutil
import sys
import sysconfig
import tempfile
import time

# the helper beside this script (also under PYTHONSAFEPATH); leave_path() takes this directory off again
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from _cudadoctor_child import hard_exit, leave_path

leave_path()

MARK = "CUDADOCTOR_COMPILE_FACTS "


def emit(out):
    sys.stdout.write(MARK + json.dumps(out) + "\n")
    sys.stdout.flush()


def short(exc):
    text = "%s: %s" % (type(exc).__name__, exc)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    keep = [ln for ln in lines if not ln.startswith(("File ", "Traceback", "^"))]
    return " | ".join(keep[:6])[:1200]


def find_compiler():
    """The C++ compiler inductor uses, as torch._inductor (config.cpp.cxx, cpp_builder) picks it:
    $CXX, else cl on Windows, clang++ on macOS and g++ elsewhere; nothing else is tried."""
    cxx = os.environ.get("CXX")
    name = cxx or ("cl" if sys.platform == "win32" else "clang++" if sys.platform == "darwin" else "g++")
    return name, shutil.which(name)


def cache_dir():
    d = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if d:
        return os.path.abspath(d)
    try:
        import getpass

        user = getpass.getuser()
    except Exception:
        user = "uid_%s" % os.getuid() if hasattr(os, "getuid") else "unknown_user"
    for ch in '\\/:*?"<>|':
        user = user.replace(ch, "_")
    return os.path.join(tempfile.gettempdir(), "torchinductor_" + user)


def writable(directory):
    try:
        os.makedirs(directory, exist_ok=True)
        fd, path = tempfile.mkstemp(dir=directory, prefix=".cudadoctor-")
        os.close(fd)
        os.unlink(path)
        return True
    except OSError:
        return False


def usable_gpu(torch):
    try:
        return bool(torch.cuda.is_available()) and (torch.ones(1, device="cuda") + 1).item() == 2
    except Exception:
        return False


def main():
    out = {"python_executable": sys.executable}
    try:
        import importlib.util

        spec = importlib.util.find_spec("triton")
        if spec is None:
            out["triton_error"] = "No module named 'triton'"
        else:
            from importlib import metadata

            for dist in ("triton", "triton-windows", "pytorch-triton"):
                try:
                    out["triton"] = metadata.version(dist)
                    break
                except Exception:
                    continue
            else:
                out["triton"] = "unknown"
    except Exception as exc:
        out["triton_error"] = short(exc)
    name, path = find_compiler()
    out["compiler_name"], out["compiler"] = name, path
    include = sysconfig.get_paths().get("include")
    out["python_include"] = include
    out["python_headers"] = bool(include) and os.path.isfile(os.path.join(include, "Python.h"))
    d = cache_dir()
    out["cache_dir"], out["cache_writable"] = d, writable(d)
    emit(out)

    try:
        import torch
    except Exception as exc:
        out["cpu_error"] = "import torch: " + short(exc)
        emit(out)
        return
    out["torch_version"] = torch.__version__

    def f(x):
        return (torch.sin(x) * 2 + x.cos()).sum()

    # Where a GPU runs kernels, compile for the GPU only: that is what a GPU user's torch.compile does
    # (inductor's C++ build for the CPU took 57 of a 63 s `check --full` on an H100 machine). The CPU is
    # compiled for only where no GPU can.
    for device, key in (("cuda", "gpu"),) if usable_gpu(torch) else (("cpu", "cpu"),):
        start = time.monotonic()
        try:
            torch._dynamo.reset()
            x = torch.arange(16, dtype=torch.float32, device=device) / 7
            got = torch.compile(f, fullgraph=True)(x)
            want = f(x)
            ok = bool(torch.allclose(got, want, rtol=1e-4, atol=1e-4))
            out[key + "_ok"] = ok
            if not ok:
                out[key + "_error"] = "compiled result %r differs from eager %r" % (float(got), float(want))
        except Exception as exc:
            out[key + "_ok"] = False
            out[key + "_error"] = short(exc)
        out[key + "_seconds"] = round(time.monotonic() - start, 2)
        emit(out)
    out["complete"] = True
    emit(out)


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    hard_exit(0)
