"""Run as a script in the TARGET interpreter (stdlib + torch only): prints one JSON line of facts.

Never imported by cudadoctor itself. Order matters: facts that do not initialise CUDA come first and
are printed before anything that can hang, so a hang still leaves them behind.
"""

import json
import os
import sys
import warnings

# the helper beside this script (also under PYTHONSAFEPATH); leave_path() takes this directory off again
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from _cudadoctor_child import hard_exit, leave_path

leave_path()

MARK = "CUDADOCTOR_TORCH_FACTS "


def emit(out):
    sys.stdout.write(MARK + json.dumps(out) + "\n")
    sys.stdout.flush()


def dist_version(name):
    try:
        import importlib.util

        if importlib.util.find_spec(name) is None:  # cheap; metadata scans every distribution
            return None
        from importlib import metadata

        return metadata.version(name)
    except Exception:
        return None


# Every CUDA library family torch uses (the parent classifies the paths: backends/libraries.py).
FAMILY_PREFIXES = (
    ("cudart", "libcudart."),
    ("cudnn", "libcudnn"),
    ("cublas", "libcublas"),
    ("cufft", "libcufft"),
    ("curand", "libcurand."),
    ("cusolver", "libcusolver"),
    ("cusparse", "libcusparse"),
    ("nccl", "libnccl."),
    ("nvjitlink", "libnvJitLink."),
    ("nvrtc", "libnvrtc"),
    ("cupti", "libcupti."),
    ("nvtx", "libnvToolsExt."),
    ("cuda", "libcuda."),
)


# The same families as Windows DLL names (torch\lib\cudart64_12.dll, cudnn64_9.dll, nvJitLink_120_0.dll, …).
WINDOWS_PREFIXES = (
    ("cudart", "cudart64_"),
    ("cudnn", "cudnn"),
    ("cublas", "cublas"),
    ("cufft", "cufft"),
    ("curand", "curand64_"),
    ("cusolver", "cusolver"),
    ("cusparse", "cusparse"),
    ("nvjitlink", "nvjitlink_"),
    ("nvrtc", "nvrtc"),
    ("cupti", "cupti64_"),
    ("nvtx", "nvtoolsext64_"),
    ("cuda", "nvcuda."),
)


def windows_modules():
    """Every DLL loaded in this process (EnumProcessModules), full paths."""
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    psapi = ctypes.WinDLL("psapi", use_last_error=True)
    kernel32.GetCurrentProcess.restype = wintypes.HANDLE
    psapi.EnumProcessModules.argtypes = [
        wintypes.HANDLE,
        ctypes.POINTER(wintypes.HMODULE),
        wintypes.DWORD,
        ctypes.POINTER(wintypes.DWORD),
    ]
    kernel32.GetModuleFileNameW.argtypes = [wintypes.HMODULE, wintypes.LPWSTR, wintypes.DWORD]
    size = 4096
    modules = (wintypes.HMODULE * size)()
    needed = wintypes.DWORD()
    if not psapi.EnumProcessModules(
        kernel32.GetCurrentProcess(), modules, ctypes.sizeof(modules), ctypes.byref(needed)
    ):
        return None
    count = min(needed.value // ctypes.sizeof(wintypes.HMODULE), size)
    buf = ctypes.create_unicode_buffer(32768)
    out = []
    for i in range(count):
        if kernel32.GetModuleFileNameW(modules[i], buf, 32768):
            out.append(buf.value)
    return out


def loaded_libraries():
    """The files of each family mapped into this process: /proc/self/maps (the resolved paths) on Linux,
    the loaded modules on Windows; None where neither can be read."""
    found = {key: [] for key, _ in FAMILY_PREFIXES}
    if sys.platform == "win32":
        try:
            paths = windows_modules()
        except Exception:
            paths = None
        if paths is None:
            return None
        for path in paths:
            base = os.path.basename(path).lower()
            for key, prefix in WINDOWS_PREFIXES:
                if base.startswith(prefix) and base.endswith(".dll") and path not in found[key]:
                    found[key].append(path)
                    break
        return found
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split(None, 5)[-1].strip() for line in maps if ".so" in line}
    except OSError:
        return None
    for path in sorted(paths):
        base = os.path.basename(path)
        for key, prefix in FAMILY_PREFIXES:
            if base.startswith(prefix) and path not in found[key]:
                found[key].append(path)
                break
    return found


def environment_facts(out):
    """Where this interpreter looks for packages and libraries (read before torch is imported)."""
    out["prefix"] = sys.prefix
    try:
        import importlib.util
        import sysconfig

        out["stdlib"] = sysconfig.get_path("stdlib")
        out["ensurepip"] = importlib.util.find_spec("ensurepip") is not None
    except Exception:
        pass
    here = os.path.dirname(os.path.abspath(__file__))  # sys.path[0]: this script's directory
    out["site_dirs"] = [p for p in sys.path if p and os.path.isdir(p) and os.path.abspath(p) != here]
    out["ld_library_path"] = os.environ.get("LD_LIBRARY_PATH")
    try:
        import site

        if site.ENABLE_USER_SITE:
            out["user_site"] = site.getusersitepackages()
    except Exception:
        pass
    try:
        import importlib.util

        if importlib.util.find_spec("torch") is not None:
            from importlib import metadata

            dist = metadata.distribution("torch")
            installer = dist.read_text("INSTALLER")
            out["torch_installer"] = installer.strip() if installer else None
            variant = dist.read_text("variant.json")
            if variant:
                out["torch_variant"] = wheel_variant(variant)
    except Exception:
        pass


def wheel_variant(text):
    """PEP 817's *.dist-info/variant.json: the one variant the wheel was built as, its label and its
    properties as "namespace :: feature :: value" (`variants` is label -> namespace -> feature -> values)."""
    out = {"label": None, "properties": []}
    try:
        variants = json.loads(text[:1000000]).get("variants") or {}
        label, namespaces = next(iter(variants.items()))
        out["label"] = str(label)[:64]
        for namespace, features in (namespaces or {}).items():
            for feature, values in (features or {}).items():
                for value in values if isinstance(values, list) else [values]:
                    out["properties"].append(f"{namespace} :: {feature} :: {value}"[:200])
    except Exception:
        pass
    out["properties"] = out["properties"][:64]
    return out


# knowledge/free_threaded.PACKAGES (this script runs with the stdlib only)
FREE_THREADED_PACKAGES = (
    "torchvision",
    "torchaudio",
    "torchcodec",
    "torchao",
    "bitsandbytes",
    "flash-attn",
    "xformers",
)


def free_threaded(out):
    """A free-threaded build (3.13t, 3.14t) installs only cp3XXt or py3-none wheels: which companions are here."""
    try:
        import sysconfig

        out["free_threaded"] = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    except Exception:
        return
    if out["free_threaded"]:
        found = {}
        for name in FREE_THREADED_PACKAGES:
            try:
                from importlib import metadata

                found[name] = metadata.version(name)
            except Exception:
                pass
        out["free_threaded_packages"] = found


def main():
    out = {
        "installed": False,
        "python_executable": sys.executable,
        "python_version": sys.version.split()[0],
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "torchvision": dist_version("torchvision"),
        "torchaudio": dist_version("torchaudio"),
    }
    environment_facts(out)
    free_threaded(out)
    try:
        import torch
    except ImportError as exc:
        out["import_error"] = f"{type(exc).__name__}: {exc}"
        out["installed"] = dist_version("torch") is not None
        out["loaded_libraries"] = loaded_libraries()  # what was loaded when it failed
        emit(out)
        return
    except Exception as exc:  # a broken install raises anything
        out["installed"] = True
        out["import_error"] = f"{type(exc).__name__}: {exc}"
        out["loaded_libraries"] = loaded_libraries()
        emit(out)
        return
    out["installed"] = True
    out["version"] = torch.__version__
    out["path"] = os.path.dirname(torch.__file__)
    out["cuda"] = getattr(torch.version, "cuda", None)
    out["hip"] = getattr(torch.version, "hip", None)
    out["cuda_built"] = bool(torch.backends.cuda.is_built())
    try:
        out["compiled_cuda_version"] = int(torch._C._cuda_getCompiledVersion())
    except Exception:
        out["compiled_cuda_version"] = None
    try:
        flags = torch._C._cuda_getArchFlags()  # get_arch_list() is [] whenever CUDA is unavailable
        out["arch_flags"] = flags.split() if flags else []
    except Exception:
        out["arch_flags"] = []
    out["cudnn_built"] = bool(getattr(torch.backends.cudnn, "is_available", lambda: False)())
    try:
        out["mps_built"] = bool(torch.backends.mps.is_built())
    except Exception:
        out["mps_built"] = None
    out["loaded_libraries"] = loaded_libraries()  # torch's import loads most of them already
    emit(out)  # the CUDA-free part, in case what follows hangs

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out["is_available"] = bool(torch.cuda.is_available())
    out["availability_warnings"] = [str(w.message) for w in caught]
    try:
        out["device_count"] = int(torch.cuda.device_count())
    except Exception as exc:
        out["device_count"] = 0
        out["device_error"] = f"{type(exc).__name__}: {exc}"
    devices = []
    if out["is_available"]:
        for i in range(out["device_count"]):
            try:
                p = torch.cuda.get_device_properties(i)
                devices.append(
                    {
                        "index": i,
                        "name": p.name,
                        "capability": f"{p.major}.{p.minor}",
                        "total_memory": int(p.total_memory),
                        "uuid": str(getattr(p, "uuid", "")) or None,
                    }
                )
            except Exception as exc:
                out["device_error"] = f"{type(exc).__name__}: {exc}"
        try:
            # A real kernel launch catches "no kernel image is available for execution on the device".
            (torch.ones(4, device="cuda") * 2).sum().item()
        except Exception as exc:
            out["kernel_error"] = f"{type(exc).__name__}: {exc}"
    out["devices"] = devices
    if out["cuda_built"]:
        try:
            v = torch.backends.cudnn.version()  # initialises CUDA; raises on an incompatible cuDNN
            out["cudnn_version"] = int(v) if v is not None else None
            out["cudnn_present"] = v is not None
        except Exception as exc:
            out["cudnn_error"] = f"{type(exc).__name__}: {exc}"
        try:
            nccl = torch.cuda.nccl.version()
            out["nccl_version"] = ".".join(str(x) for x in nccl) if isinstance(nccl, tuple) else str(nccl)
        except Exception:
            out["nccl_version"] = None
    try:
        out["mps_available"] = bool(torch.backends.mps.is_available())
    except Exception:
        out["mps_available"] = None
    out["loaded_libraries"] = loaded_libraries()
    out["complete"] = True
    emit(out)


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    # Exit at once: tearing torch down at interpreter exit takes ~0.2 s, longer than all the work after
    # the import, and this process has nothing left to clean up.
    hard_exit(0)
