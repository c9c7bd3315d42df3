"""torch, CUDA, NVML, loader and container error and warning texts, wherever they sit in a paste.

The texts come from their sources: torch/cuda/__init__.py ("The NVIDIA driver on your system is too
old (found version 11040)", "Found no NVIDIA driver on your system", "Torch not compiled with CUDA
enabled", the "sm_XX is not compatible with the current PyTorch installation" and "which is of cuda
capability … too old" warnings), c10/cuda ("CUDA driver initialization failed", "Error 804: …"),
torch/serialization.py (deserialize on a CUDA device), torch/nn/modules/module.py (state_dict keys),
nvidia-smi's own failures, the dynamic loader ("cannot open shared object file", "undefined symbol"),
Windows' loader ("[WinError 126] … Error loading "…\\c10.dll"", any UI language), Docker's
"could not select device driver". They are matched on the paste with wrapped lines joined, so a
message a terminal broke in two still matches.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from cudadoctor.backends.paste.model import Gpu, Hit, Partial
from cudadoctor.backends.paste.text import joined, short

_W = ""  # where: the error text itself (the hit) says it


def _too_old(p: Partial, m: re.Match[str]) -> None:
    """torch's own message; an extension's build log often prints its first sentence only, no version."""
    if m.group(1):
        p.set("libcuda_version", int(m.group(1)), _W)
    p.set("torch_cuda_built", True, _W)
    p.set("torch_installed", True, _W)
    p.set("torch_available", False, _W)
    detail = {"found": int(m.group(1))} if m.group(1) else {"by": "torch"}
    p.hits.append(Hit("driver-too-old", short(m.group(0)), detail))


def _insufficient(p: Partial, m: re.Match[str]) -> None:
    p.hits.append(Hit("driver-too-old", short(m.group(0)), {}))


def _arch(p: Partial, m: re.Match[str]) -> None:
    name = _name_before(m.string, m.start())
    sm = m.group("sm")
    cc = f"{int(sm[:-1])}.{sm[-1]}"
    flags = m.group("flags").split()
    p.set("torch_cuda_built", True, _W)
    p.set("torch_installed", True, _W)
    p.set("torch_arch_flags", flags, _W)
    p.torch_gpus.append(Gpu(index=0, name=name, capability=cc))
    p.hits.append(Hit("arch-not-in-build", short(m.group(0)), {"gpu": name, "cc": cc, "flags": flags}))


_GPU_WORD = re.compile(r"(?:NVIDIA |GeForce |Tesla |Quadro |TITAN |Orin|Xavier|Jetson )")


def _name_before(text: str, start: int) -> str | None:
    """The GPU name in "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 …"."""
    window = text[max(0, start - 120) : start]
    if not window.endswith(" with "):
        return None
    starts = [g.start() for g in _GPU_WORD.finditer(window)]
    if not starts:
        return None
    name = window[starts[0] if len(starts) == 1 else _first_of_last_run(window, starts) : -len(" with ")]
    return name.strip() or None


def _first_of_last_run(window: str, starts: list[int]) -> int:
    """ "… error NVIDIA GeForce RTX 5090 with " has NVIDIA and GeForce: the name starts at the first of
    the last run of adjacent vendor words."""
    first = starts[-1]
    for s in reversed(starts[:-1]):
        if window[s:first].count(" ") <= 1:
            first = s
        else:
            break
    return first


def _too_old_gpu(p: Partial, m: re.Match[str]) -> None:
    cc = f"{m.group('major')}.{m.group('minor')}"
    p.set("torch_cuda_built", True, _W)
    p.set("torch_installed", True, _W)
    p.torch_gpus.append(Gpu(index=int(m.group("index")), name=m.group("name").strip(), capability=cc))
    p.hits.append(Hit("gpu-too-old", short(m.group(0)), {"gpu": m.group("name").strip(), "cc": cc}))


# a traceback frame as Python prints it, joined into one line: File "path", line N, in func  code
_FRAME = re.compile(r'File "(?P<path>[^"]{1,300})", line (?P<line>\d+), in [\w<>.]+\s+(?P<code>.{0,400}?)(?= File "|$)')
# where an extension's compiled op is called: mmcv's ext_module.*, a package's _C / _ext module, torch.ops.<ns>
# of a library (not aten or prims); the frame's file in an extension's ops folder
_EXT_CALL = re.compile(
    r"(?<!torch\.)\b(?:ext_module|_ext|_C)\.\w+\("
    r"|\btorch\.ops\.(?!(?:aten|prims|quantized|inductor|higher_order|c10d|_)\w*\.)(?P<ns>\w+)\."
)
_EXT_PATH = re.compile(r"(?:^|[/\\])(?P<pkg>[\w-]+)[/\\](?:ops|_ext|csrc)[/\\]\w+\.py$")
_TORCH_PATH = re.compile(r"(?:^|[/\\])torch[/\\]")


def _failing_frame(text: str, start: int, end: int) -> re.Match[str] | None:
    """The frame that raised an error at text[start:end]: the last one printed before it (a Python traceback),
    or, where none is, the first one after it (a debugger's "Exception has occurred" puts the frames last)."""
    before = list(_FRAME.finditer(text[max(0, start - 2000) : start]))
    if before:
        return before[-1]
    after = _FRAME.search(text[end : end + 800])
    if after is None or "Traceback (most recent call last)" in text[end : end + after.start()]:
        return None  # a traceback that starts after it begins with the outermost frame, not the failing one
    return after


def _extension_of(frame: re.Match[str]) -> str | None:
    """The extension a frame calls into (its import name; "" where the frame does not tell), or None for
    torch's own or ordinary code: the frame calls a compiled op (ext_module.*, a _C / _ext module,
    torch.ops.<library>), or its file is in a known CUDA extension's installed package."""
    from cudadoctor.knowledge import extension_modules

    path, code = frame.group("path"), frame.group("code")
    # torchvision's ops come from the same index and build as torch: a missing kernel there is torch's build
    if _TORCH_PATH.search(path) or "torchvision" in path or "torch.ops.torchvision" in code:
        return None
    parts = [x for x in re.split(r"[/\\]", path) if x]
    installed = parts[parts.index("site-packages") + 1] if "site-packages" in parts[:-1] else None
    where = _EXT_PATH.search(path)
    call = _EXT_CALL.search(code)
    if call is not None:
        return call.group("ns") or installed or (where.group("pkg") if where else "")
    if installed and extension_modules.distribution(installed):
        return installed
    return None


# an extension built for chosen GPU architectures: the variable set (a Dockerfile ENV, an export); -gencode
# flags told in prose ("I tried removing the -gencode lines") say nothing of how the failing build was made
_ARCH_FLAGS = re.compile(
    r"(?:\bENV\s+|\bexport\s+|\$env:)(?:MMCV_CUDA_ARGS|TORCH_CUDA_ARCH_LIST)"
    r"(?:\s*=\s*|(?<=ENV MMCV_CUDA_ARGS) |(?<=ENV TORCH_CUDA_ARCH_LIST) )[\"']?[^\"'\n]{1,120}"
)


def _flag_archs(flags: str) -> list[str]:
    """The compute capabilities build flags compile for: "6.1" from -gencode=arch=compute_61,code=sm_61, "7.0+PTX"
    from TORCH_CUDA_ARCH_LIST's "7.0+PTX"; a named list ("Turing") is not read."""
    gencode = [f"{m[0]}.{m[1:]}" for m in re.findall(r"code=sm_(\d{2,3})", flags)]
    gencode += [f"{m[0]}.{m[1:]}+PTX" for m in re.findall(r"code=compute_(\d{2,3})", flags)]
    if gencode:
        return gencode
    value = flags.split("=", 1)[1] if "=" in flags else flags.split(None, 2)[-1]
    return re.findall(r"\d+\.\d+(?:\+PTX)?", value)


def _no_kernel(p: Partial, m: re.Match[str]) -> None:
    # every place the error is printed (a post often quotes it, then pastes the traceback): the frames of any
    frames = (_failing_frame(m.string, x.start(), x.end()) for x in re.finditer(re.escape(m.group(0)), m.string))
    frame = next((x for x in frames if x is not None and _extension_of(x) is not None), None)
    if frame is not None:
        # raised in an extension's own kernel (mmcv#2201: mmcv built on an A100 for sm_80, run on a V100):
        # torch's kernels are not in question, so no torch kernel fact
        code = re.split(r"\s\w+(?:Error|Exception):", frame.group("code"))[0]  # not the error that follows it
        where = f"{frame.group('path')}:{frame.group('line')}: {code.rstrip(' (')}"
        detail = {"package": _extension_of(frame), "frame": short(where, 200)}
        p.hits.append(Hit("extension-no-kernel", short(m.group(0)), detail))
        return
    # nvcc's own flags outrank TORCH_CUDA_ARCH_LIST where both are set (MMCV_CUDA_ARGS' -gencode replaces the list)
    found = sorted(_ARCH_FLAGS.finditer(m.string), key=lambda x: "TORCH_CUDA_ARCH_LIST" in x.group(0))
    flags = found[0] if found else None
    if m.string[max(0, m.start() - 16) : m.start()].rstrip().endswith("CUDA Error:"):
        # "CUDA Error: <cuGetErrorString>" is how kernel libraries that call the driver API themselves say it
        # (cpm_kernels' checkCUStatus: ChatGLM's quantized path, THUDM/ChatGLM3#695); torch says "CUDA error:"
        p.hits.append(
            Hit("extension-no-kernel", short(m.group(0)), {"frame": "CUDA Error: (a kernel library's words)"})
        )
        return
    if m.string[max(0, m.start() - 24) : m.start()].rstrip().endswith("CUDA kernel failed :"):
        # the CHECK macro of OpenPCDet / mmdet3d ops ("CUDA kernel failed : no kernel image …"): torch's own
        # errors say "CUDA error:", so the op that failed is the extension's (open-mmlab/OpenPCDet#623)
        p.hits.append(Hit("extension-no-kernel", short(m.group(0)), {"frame": "CUDA kernel failed : (an op's check)"}))
        return
    if flags is not None and _flag_archs(flags.group(0)):
        # the paste builds an extension for chosen architectures (MMCV_CUDA_ARGS' -gencode, TORCH_CUDA_ARCH_LIST):
        # whether they leave the GPU out is the rules' to decide, with its compute capability (open-mmlab/mmcv#1413:
        # sm_61 only, run on a V100); torch's kernel error stays read beside it
        package = "mmcv" if "MMCV_CUDA_ARGS" in flags.group(0) else None
        shown = flags.group(0).replace('"', "").replace("'", "").strip()
        detail = {"flags": short(shown, 200), "archs": " ".join(_flag_archs(flags.group(0)))}
        p.hits.append(
            Hit("extension-arch-flags", short(m.group(0)), {**detail, **({"package": package} if package else {})})
        )
    p.set("torch_cuda_built", True, _W)
    p.set("torch_installed", True, _W)
    p.set("torch_kernel_error", "no kernel image is available for execution on the device", _W)
    p.hits.append(Hit("no-kernel-image", short(m.group(0)), {}))


def _init_failed(p: Partial, m: re.Match[str]) -> None:
    p.set("cuda_init_result", 3, _W)
    p.set("torch_available", False, _W)
    p.hits.append(Hit("cuda-init-failed", short(m.group(0)), {"code": 3}))


def _error_80x(p: Partial, m: re.Match[str]) -> None:
    # "Error 804: …" means a CUDA error only inside torch's CUDA initialisation warning
    if "cuda" not in m.string[max(0, m.start() - 300) : m.start()].lower():
        return
    code = int(m.group("code"))
    p.set("cuda_init_result", code, _W)
    p.set("torch_available", False, _W)
    p.hits.append(Hit("cuda-init-failed", short(m.group(0)), {"code": code}))


def _named_80x(code: int) -> Callable[[Partial, re.Match[str]], None]:
    def handler(p: Partial, m: re.Match[str]) -> None:
        if p.values.get("cuda_init_result") is None:
            p.set("cuda_init_result", code, _W)
            p.hits.append(Hit("cuda-init-failed", short(m.group(0)), {"code": code}))

    return handler


def _nvml(status: str) -> Callable[[Partial, re.Match[str]], None]:
    def handler(p: Partial, m: re.Match[str]) -> None:
        p.set("nvml_status", status, _W)
        p.set("nvml_message", short(m.group(0)), _W)
        p.hits.append(Hit(f"nvml-{status.lower().replace('_', '-')}", short(m.group(0)), {}))

    return handler


def _nvml_lib_version(p: Partial, m: re.Match[str]) -> None:
    p.set("nvml_library_version", m.group(1), _W)


def _kernel_module(p: Partial, m: re.Match[str]) -> None:
    p.set("kernel_module_version", m.group(1), f"/proc/driver/nvidia/version: {short(m.group(0), 80)}")


def _undefined_symbol(p: Partial, m: re.Match[str]) -> None:
    lib = re.search(r"([\w/.+-]+\.so[\w.]*): $", m.string[max(0, m.start() - 200) : m.start()])
    p.hits.append(
        Hit("undefined-symbol", short(m.group(0)), {"symbol": m.group("sym"), "library": lib.group(1) if lib else None})
    )


def _cannot_open(p: Partial, m: re.Match[str]) -> None:
    lib = m.group("lib")
    if lib == "libcuda.so" and "Could not load library" in m.string[max(0, m.start() - 160) : m.start()]:
        # cuDNN loading a sub-library after CUDA started: the driver is there, only the unversioned name
        # libcuda.so (a link the driver's development package makes) is not on the loader's path
        _library_missing(p, m, lib, by="cuDNN")
        return
    _library_missing(p, m, lib)


def _library_missing(p: Partial, m: re.Match[str], lib: str, by: str | None = None) -> None:
    if "nvidia-container-cli" in m.string[max(0, m.start() - 160) : m.start()]:
        return  # the container hook on the host failed to load it: nvidia-container-cli's error says so
    p.hits.append(Hit("cannot-open-library", short(m.group(0)), {"library": lib, **({"by": by} if by else {})}))
    if lib.startswith("libnvidia-ml"):
        p.set("nvml_status", "LIBRARY_NOT_FOUND", _W)
    if lib.startswith("libcuda.so") and by is None:  # the loader's own words; a program's search can miss it
        p.set("libcuda_found", False, _W)


def _dlopen(by: str | None = None, lib: str | None = None) -> Callable[[Partial, re.Match[str]], None]:
    """A program's own words for a library its dlopen did not find: the library named in the text (group lib or
    name), or the one the wording is about."""

    def handler(p: Partial, m: re.Match[str]) -> None:
        named = m.groupdict().get("lib") or (m.groupdict().get("name") and f"lib{m.group('name')}.so")
        _library_missing(p, m, named or lib or "libcuda.so", by)

    return handler


# a shared object of torch's own (the wheel's torch/lib, its extension module torch/_C)
# (libtorchaudio.so, libtorchvision.so are not torch's: their import is not torch's)
_TORCH_LIB = re.compile(
    r"(?:^|[/\\])torch[/\\](?:lib[/\\]|_C\b)"
    r"|(?:^|[/\\])lib(?:torch(?:_cpu|_cuda\w*|_python|_global_deps)?|c10(?:_cuda)?|shm)\.so"
)


def _runtime_too_old(p: Partial, m: re.Match[str]) -> None:
    """The loader's "version `GLIBCXX_3.4.30' not found (required by …)": the C (glibc) or C++ (libstdc++)
    runtime found is older than the library was built against. It is torch's import that failed when the library
    is torch's own, or the failing frame is torch's __init__ (`from torch._C import *`)."""
    lib = (m.group("lib") or "").rstrip(".,;:`'\"")
    before = m.string[max(0, m.start() - 600) : m.start()]
    torch = bool(_TORCH_LIB.search(lib)) or bool(
        re.search(r"[/\\]torch[/\\]__init__\.py\W.{0,300}$|from torch\._C import[^\n]{0,200}$", before)
    )
    detail = {"version": m.group("version").rstrip("."), "family": m.group("family")}
    if m.group("runtime"):
        detail["runtime"] = m.group("runtime")
    if lib:
        detail["library"] = lib
    if torch:
        detail["torch"] = "yes"
        p.set("torch_installed", True, _W)
    p.hits.append(Hit("runtime-too-old", short(m.group(0)), detail))


# what a torch-based import is: torch's own packages, Lightning, and the CUDA extensions cudadoctor knows
_IMPORT = re.compile(
    r"\bimport(?:ing)?\s+(?:of\s+)?(?P<mod>[A-Za-z_]\w*)|\bfrom\s+(?P<pkg>[A-Za-z_]\w*)[\w.]*\s+import\b", re.I
)
# what shows the crash came later than the import: a program running (an assignment, a call on the GPU, training)
_RAN = re.compile(
    r"=|\.(?:cuda|to|fit|train|backward|forward|step)\(|\b(?:epoch|loss|iteration|training|inference|batch)\b", re.I
)


def _torch_based(module: str) -> bool:
    from cudadoctor.knowledge import extension_modules

    return (
        module.startswith("torch")
        or module in ("pytorch_lightning", "lightning")
        or extension_modules.distribution(module) is not None
    )


def _import_segfault(p: Partial, m: re.Match[str]) -> None:
    """A crash (SIGSEGV) while importing torch or a torch-based package: the shell's "Segmentation fault (core
    dumped)" (bash; zsh's "segmentation fault (core dumped)  python") right after an import of it, with the word
    import in between (`python -c "import torch"`, "the import of X fails with"), or faulthandler's "Fatal Python
    error: Segmentation fault" over the import machinery's frames. A crash after the program ran is not this."""
    for x in re.finditer(re.escape(m.group(0)), m.string):
        module = _crashed_import(m.string, x.start(), x.end())
        if module is not None:
            p.hits.append(Hit("import-segfault", short(m.group(0)), {"module": module}))
            return


def _crashed_import(text: str, start: int, end: int) -> str | None:
    after = text[end : end + 2000]
    if re.search(r"<frozen importlib\._bootstrap", after):
        # the installed package each frame is in (the folder under site-packages)
        frames = re.findall(r'File "[^"]*?[/\\](?:site|dist)-packages[/\\](\w+)[/\\.][^"]*", line \d+', after)
        return next((f for f in frames if _torch_based(f)), None)
    before = text[max(0, start - 300) : start]
    imports = [i for i in _IMPORT.finditer(before) if _torch_based(i.group("mod") or i.group("pkg"))]
    said = list(re.finditer(r"\bimport(?:ing|ed|s)?\b", before, re.I))
    if not imports or not said:
        return None
    if _RAN.search(before[min(imports[-1].end(), said[-1].end()) :]):
        return None
    return imports[-1].group("mod") or imports[-1].group("pkg")


def _win_dll(p: Partial, m: re.Match[str]) -> None:
    p.set("os", "Windows", _W)
    p.hits.append(Hit("windows-dll", short(m.group(0)), {"library": m.group("dll")}))


def _nvcc_arch(p: Partial, m: re.Match[str]) -> None:
    """nvcc too old for an architecture; whether CMake drives the build (TORCH_CUDA_ARCH_LIST is torch's
    cpp_extension's, not CMake's: graphdeco-inria/nerfshop#13 built tiny-cuda-nn with cmake)."""
    # a CMake command or file near the error, not collect_env's "CMake version:" line; bounded, as every match
    # of a 1 MB paste would otherwise search all of it
    near = m.string[max(0, m.start() - 20_000) : m.end() + 2_000]
    cmake = re.search(r"\bcmake\s+(?:--build|-[SBDG]|\.\.)|CMAKE_CUDA_ARCHITECTURES|CMakeLists\.txt", near, re.I)
    detail = {"arch": m.group("arch"), **({"builder": "cmake"} if cmake else {})}
    p.hits.append(Hit("nvcc-arch-unsupported", short(m.group(0)), detail))


_SHM_DENIED = re.compile(r"shm_open failed\s*:\s*Permission denied|/dev/shm\S*:\s*Permission denied")
# the container already shares the host's /dev/shm or has a large one: "--ipc=host", "ipc: host", "--shm-size=16g"
_SHM_GIVEN = re.compile(r"--ipc[= ]host\b|\bipc:\s*['\"]?host\b|--shm-size[= ]\S+|\bshm_size:\s*\S+")


def _shm(p: Partial, m: re.Match[str]) -> None:
    """/dev/shm too small, or NCCL denied it (NVIDIA/nccl#328: its permissions), or a size already given."""
    near = m.string[max(0, m.start() - 20_000) : m.end() + 20_000]
    detail = {}
    if _SHM_DENIED.search(near):
        detail["denied"] = "yes"
    # given before the error, as the set-up that failed; after it, it is the fix that worked (VideoDiffusion#2)
    given = _SHM_GIVEN.search(m.string[max(0, m.start() - 20_000) : m.start()])
    if given:
        detail["given"] = given.group(0)
    p.hits.append(Hit("shm-too-small", short(m.group(0)), detail))


def _win_dll_once(p: Partial, m: re.Match[str]) -> None:
    # bounded: parse() keeps at most 41 hits a pattern, and stops this pattern's matches there too
    if not any(h.kind == "windows-dll" and h.detail.get("library") == m.group("dll") for h in p.hits):
        _win_dll(p, m)


# the code naming a GPU index past the first: "cuda:1", set_device(1), device_ids=[0, 1], --gpu 1, --device 2
# (the first match only, searched once per "invalid device ordinal")
_INDEX_ASKED = re.compile(
    r"\bcuda:(?P<a>[1-9]\d?)\b|set_device\(\s*(?P<b>[1-9]\d?)\s*\)|device_ids\s*=\s*\[[\d\s,]*?(?P<c>[1-9]\d?)\s*\]"
    r"|--(?:gpu|gpu_ids?|gpu-ids?|device)[ =](?P<d>[1-9]\d?)\b"  # not --gpus: a count (Lightning, docker)
)


_RANK_DEVICE = re.compile(
    r"set_device\(\s*(?:args\.|opt\.|self\.|cfg\.)?local_rank\s*\)|set_device\(\s*int\(os\.environ\[.LOCAL_RANK.\]\)"
    r"|cuda:\{(?:args\.)?local_rank\}|--nproc[_-]per[_-]node"
)


def _invalid_ordinal(p: Partial, m: re.Match[str]) -> None:
    """'invalid device ordinal': with the index the code asks for, where the paste shows one past the first."""
    asked = _INDEX_ASKED.search(m.string)
    index = next((v for v in asked.groups() if v), None) if asked else None
    detail = {"index": index} if index else {}
    # a rank's own device (set_device(args.local_rank), LOCAL_RANK) past the GPUs: more ranks than GPUs
    # (HRNet#171, tatsu-lab/stanford_alpaca#67: --nproc_per_node larger than the GPU count)
    if _RANK_DEVICE.search(m.string):
        detail["ranks"] = "yes"
    p.hits.append(Hit("invalid-ordinal", short(m.group(0)), detail))


def _no_driver(p: Partial, m: re.Match[str]) -> None:
    p.set("torch_cuda_built", True, _W)
    p.set("torch_installed", True, _W)
    p.set("torch_available", False, _W)
    p.set("libcuda_found", False, _W)
    # torch.cuda.is_available()'s UserWarning ("CUDA initialization: Found no NVIDIA driver …") is printed while
    # the program goes on on the CPU; a RuntimeError stops it
    warned = "CUDA initialization" in m.string[max(0, m.start() - 40) : m.start()]
    p.hits.append(Hit("no-driver", short(m.group(0)), {"warning": "yes"} if warned else {}))


def _app_says_cpu(p: Partial, m: re.Match[str]) -> None:
    # torch's state only where the paste shows torch: faster-whisper, llama.cpp print the same for their own CUDA
    if re.search(r"(?<![A-Za-z])(?:py)?torch", m.string, re.I):
        p.set("torch_available", False, _W)
        p.set("torch_installed", True, _W)
    p.hits.append(Hit("app-on-cpu", short(m.group(0)), {}))


def _not_compiled(p: Partial, m: re.Match[str]) -> None:
    p.set("torch_cuda_built", False, _W)
    p.set("torch_installed", True, _W)
    p.set("torch_available", False, _W)
    p.hits.append(Hit("not-compiled-with-cuda", short(m.group(0)), {}))


def _no_torch(p: Partial, m: re.Match[str]) -> None:
    p.set("torch_installed", False, _W)
    p.hits.append(Hit("torch-not-installed", short(m.group(0)), {}))


def _cudnn_incompatible(p: Partial, m: re.Match[str]) -> None:
    p.set("torch_installed", True, _W)
    p.set("torch_cudnn_error", short(m.group(0), 200), _W)
    p.hits.append(Hit("cudnn-incompatible", short(m.group(0)), {}))


def _repl_version(p: Partial, m: re.Match[str]) -> None:
    p.set("torch_version", m.group("v"), _W)
    p.set("torch_installed", True, _W)


def _repl_arch(p: Partial, m: re.Match[str]) -> None:
    p.set("torch_installed", True, _W)
    p.set("torch_cuda_built", True, _W)
    p.set("torch_arch_flags", re.findall(r"(?:sm|compute)_\d+[af]?", m.group("flags")), _W)


def _repl_available(p: Partial, m: re.Match[str]) -> None:
    p.set("torch_installed", True, _W)
    p.set("torch_available", m.group("v") == "True", _W)


def _assert_available(p: Partial, m: re.Match[str]) -> None:
    p.set("torch_installed", True, _W)
    p.set("torch_available", False, _W)


def _repl_cuda(p: Partial, m: re.Match[str]) -> None:
    p.set("torch_installed", True, _W)
    if m.group("v") == "None":
        p.set("torch_cuda_built", False, _W)
    else:
        p.set("torch_cuda_built", True, _W)
        p.set("torch_cuda", m.group("v"), _W)


def _api_mismatch(p: Partial, m: re.Match[str]) -> None:
    """The driver's libraries (the "client") and the loaded kernel module are different versions."""
    p.set("nvml_status", "LIB_RM_VERSION_MISMATCH", _W)
    p.set("nvml_library_version", m.group("client"), _W)
    p.set("kernel_module_version", m.group("module"), _W)
    p.hits.append(Hit("nvml-lib-rm-version-mismatch", short(m.group(0)), {}))


def _simple(kind: str) -> Callable[[Partial, re.Match[str]], None]:
    def handler(p: Partial, m: re.Match[str]) -> None:
        detail = {k: v for k, v in m.groupdict().items() if v is not None}
        p.hits.append(Hit(kind, short(m.group(0)), detail))

    return handler


def _nvrm(kind: str) -> Callable[[Partial, re.Match[str]], None]:
    """A kernel-log message the driver wraps over several "NVRM:" lines: the hit shows it as one sentence."""

    def handler(p: Partial, m: re.Match[str]) -> None:
        detail = {k: v for k, v in m.groupdict().items() if v is not None}
        p.hits.append(Hit(kind, short(re.sub(r"\s*\bNVRM:\s*", " ", m.group(0)).strip()), detail))

    return handler


def _keys(kind: str) -> Callable[[Partial, re.Match[str]], None]:
    """load_state_dict's list of keys: how many, and the first few."""

    def handler(p: Partial, m: re.Match[str]) -> None:
        keys = re.findall(r'"([^"]+)"', m.group("keys"))
        p.hits.append(Hit(kind, short(m.group(0)), {"n": str(len(keys)), "keys": ", ".join(keys[:5])}))

    return handler


def _deserialize(p: Partial, m: re.Match[str]) -> None:
    p.set("torch_installed", True, _W)
    if m.group("dev") is None:
        p.set("torch_available", False, _W)
    p.hits.append(Hit("deserialize-cuda", short(m.group(0)), {k: v for k, v in m.groupdict().items() if v}))


def _wsl_blocked(p: Partial, m: re.Match[str]) -> None:
    p.set("wsl", True, _W)
    p.set("os", "Linux", _W)
    _nvml("GPU_ACCESS_BLOCKED")(p, m)


def _busy(p: Partial, m: re.Match[str]) -> None:
    """cudaErrorDevicesUnavailable / CUDA_ERROR_DEVICE_UNAVAILABLE (46), in both of CUDA's wordings: the GPU is
    in an exclusive or prohibited compute mode, held elsewhere, or the driver is broken; CUDA cannot start."""
    if p.values.get("cuda_init_result") is None:
        p.set("cuda_init_result", 46, _W)
        p.hits.append(Hit("cuda-init-failed", short(m.group(0)), {"code": 46}))


def _cuinit_named(p: Partial, m: re.Match[str]) -> None:
    """TensorFlow's "failed call to cuInit: CUDA_ERROR_UNKNOWN" (stream_executor/cuda/cuda_driver.cc)."""
    from cudadoctor.knowledge.cuda_errors import CU_INIT_ERRORS

    code = next((c for c, (name, _) in CU_INIT_ERRORS.items() if name == m.group("name")), None)
    if code is not None:
        _named_80x(code)(p, m)


def _triton_import(p: Partial, m: re.Match[str]) -> None:
    """torch's inductor imports a name its pinned Triton has and another Triton lacks (triton_key moved to
    triton.runtime.cache in Triton 3.5: woct0rdho/triton-windows#158 with torch 2.8)."""
    text = m.string
    windows = bool(re.search(r"triton[-_]windows|\d-windows\.post|\\triton\\", text, re.I))
    detail = {"name": m.group("name"), "module": m.group("module")}
    if windows:
        detail["windows"] = "yes"
    p.hits.append(Hit("triton-mismatch", short(m.group(0)), detail))


_SO = r"(?P<lib>lib[\w+.-]{0,120}?\.so(?:\.\d+)*)"
PATTERNS: list[tuple[re.Pattern[str], Callable[[Partial, re.Match[str]], None]]] = [
    # what people type in a Python prompt: >>> torch.__version__ '2.5.1+cu124'
    (
        re.compile(r"torch\.__version__\)?\s*(?:>>>\s*)?['\"]?(?P<v>\d+\.\d+\.\d+(?:[.+][0-9A-Za-z.]+)?)['\"]?"),
        _repl_version,
    ),
    (re.compile(r"torch\.cuda\.is_available\(\)\)?\s*(?:>>>\s*)?(?P<v>True|False)\b"), _repl_available),
    # a traceback through `assert torch.cuda.is_available()` (alone, or with a message) that raised: it was
    # False ("CPU training is not allowed", so-vits-svc#137); `assert ... and device_count() >= n` could be either
    # (the text is joined into one line: the AssertionError follows within a few lines)
    (
        re.compile(r"assert\s+\(?torch\.cuda\.is_available\(\)\)?(?!\s*(?:and|or|==|is)\b).{0,300}?\bAssertionError\b"),
        _assert_available,
    ),
    (re.compile(r"torch\.version\.cuda\)?\s*(?:>>>\s*)?['\"]?(?P<v>\d+\.\d+|None)\b['\"]?"), _repl_cuda),
    (
        re.compile(
            r"get_arch_list\(\)\)?\s*(?:>>>\s*)?\[(?P<flags>'(?:sm|compute)_\d+[af]?'(?:,\s*'(?:sm|compute)_\d+[af]?')*)\]"
        ),
        _repl_arch,
    ),
    (re.compile(r"NVIDIA driver on your system is too old(?: \(found version (\d{4,5})\))?"), _too_old),
    (re.compile(r"CUDA driver version is insufficient for CUDA runtime version"), _insufficient),
    (
        re.compile(
            r"CUDA capability sm_(?P<sm>\d{2,3}) is not compatible with the current PyTorch installation\.?\s*"
            r"The current PyTorch install supports CUDA capabilities (?P<flags>(?:(?:sm|compute)_\d{2,3}[af]?\s?)+)"
        ),
        _arch,
    ),
    (
        re.compile(
            r"Found GPU(?P<index>\d+) (?P<name>.{2,80}?) which is of (?:cuda|compute) capability (?:\(CC\) )?"
            r"(?P<major>\d+)\.(?P<minor>\d+)"
        ),
        _too_old_gpu,
    ),
    # also cut short, as titles and prose retell it ("error msg `no kernel image is available`", open-mmlab/mmcv#1413)
    (re.compile(r"no kernel image is available(?: for execution on the device)?"), _no_kernel),
    (re.compile(r"CUDA driver initialization failed(?:, you might not have a CUDA gpu)?"), _init_failed),
    (re.compile(r"Error (?P<code>80[0-9]|999|100|101|46|34|35|3): [A-Za-z][^.()\n]{3,120}"), _error_80x),
    (re.compile(r"system not yet initialized"), _named_80x(802)),
    (re.compile(r"forward compatibility was attempted on non supported HW"), _named_80x(804)),
    (re.compile(r"system has unsupported display driver / cuda driver combination"), _named_80x(803)),
    # TensorFlow's own cuInit failure (stream_executor/cuda/cuda_driver.cc), by its CUresult name
    (re.compile(r"failed call to cuInit: (?P<name>CUDA_ERROR_[A-Z_]+)"), _cuinit_named),
    (re.compile(r"Driver/library version mismatch", re.I), _nvml("LIB_RM_VERSION_MISMATCH")),
    (re.compile(r"NVML library version:\s*(\d+\.\d+(?:\.\d+)?)"), _nvml_lib_version),
    (re.compile(r"NVRM version: NVIDIA UNIX \S+ Kernel Module\s+(\d+\.\d+(?:\.\d+)?)"), _kernel_module),
    (
        re.compile(r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"),
        _nvml("DRIVER_NOT_LOADED"),
    ),
    (re.compile(r"NVIDIA-SMI couldn't find libnvidia-ml\.so library"), _nvml("LIBRARY_NOT_FOUND")),
    # the Go NVML bindings of NVIDIA's device plugin and container tools: libnvidia-ml.so.1 not found in the pod
    # (NVIDIA/k8s-device-plugin#23: Docker's default runtime was not nvidia, so nothing mounted the driver)
    (re.compile(r"could not load NVML library"), _nvml("LIBRARY_NOT_FOUND")),
    # no module loaded: TensorFlow's cuda_diagnostics.cc ("kernel driver does not appear to be running on this
    # host (…): /proc/driver/nvidia/version does not exist"), or cat's own words for the same file
    (
        re.compile(
            r"/proc/driver/nvidia/version does not exist"
            r"|cat: /proc/driver/nvidia/version: No such file or directory"
        ),
        _nvml("DRIVER_NOT_LOADED"),
    ),
    (re.compile(r"GPU access blocked by the operating system"), _wsl_blocked),
    (re.compile(r"Failed to initialize NVML: Unknown Error"), _nvml("UNKNOWN")),
    (
        re.compile(r"Failed to initialize NVML: Insufficient Permissions|Failed to initialize NVML: No permission"),
        _nvml("NO_PERMISSION"),
    ),
    (
        re.compile(r"(?:GPU is lost|Unable to determine the device handle for GPU[^:]*: GPU is lost)"),
        _nvml("GPU_IS_LOST"),
    ),
    (re.compile(r"undefined symbol: (?P<sym>[A-Za-z_][\w@.]*)"), _undefined_symbol),
    (re.compile(_SO + r": cannot open shared object file"), _cannot_open),
    # a program that dlopens CUDA's libraries itself, in its own words: cuda-python (cuda/_cuda/ccuda.pyx:
    # "Failed to dlopen libcuda.so", later "libcuda.so.1"), Triton (backends/nvidia/driver.py libcuda_dirs:
    # "libcuda.so cannot found!"), Numba (cuda/cudadrv/driver.py DRIVER_NOT_FOUND_MSG; numba -s adds "or no CUDA
    # enabled devices are present", which is not only this), cudarc (src/lib.rs: "Unable to dynamically load the
    # \"cuda\" shared library")
    (re.compile(r"Failed to dlopen " + _SO), _dlopen("dlopen")),
    # bitsandbytes 0.3x-0.42 (cuda_setup, cextension.py): no CUDA runtime found, so it loads its CPU library
    (
        re.compile(
            r"bitsandbytes was compiled without GPU support|No libcudart\.so found!"
            r"|CUDA SETUP: Required library version not found: libbitsandbytes_cpu"
        ),
        _dlopen("bitsandbytes", "libcudart.so"),
    ),
    # cuDNN 8 loading its sub-libraries on first use: "Could not load library libcudnn_cnn_infer.so.8. Error:
    # libcuda.so: cannot open shared object file" (facebookresearch/nougat#105, the title alone); what it could
    # not load, when printed, is read by the loader's pattern above
    (re.compile(r"Could not load library " + _SO), _dlopen("cuDNN")),
    (re.compile(r"libcuda\.so cannot found"), _dlopen("triton", "libcuda.so")),
    (re.compile(r"CUDA driver library cannot be found(?! or no CUDA)"), _dlopen("numba", "libcuda.so")),
    (
        re.compile(
            r"Unable to dynamically load the \\?\"?(?P<name>cuda|nvrtc|cublas|cublasLt|curand|cudnn|nccl)\\?\"? shared"
        ),
        _dlopen("cudarc"),
    ),
    # glibc's loader (elf/dl-version.c: "version `%s' not found (required by %s)"; newer releases quote it
    # 'like this'): the C runtime (GLIBC_) or C++ runtime (GLIBCXX_, CXXABI_) found is older than the library needs
    (
        re.compile(
            # the runtime's path starts a token and is bounded: an optional group retried at every offset of a
            # long token is quadratic (a 1 MB paste with a base64 image took seconds)
            r"(?:(?<![^\s`'\"(])(?P<runtime>[^\s:`'\"]{0,300}?lib(?:c|m|pthread|dl|rt|stdc\+\+|gcc_s)\.so[\d.]*):\s*)?"
            r"version\s+[`'‘’\"]?"
            r"(?P<version>(?P<family>GLIBCXX|GLIBC|CXXABI)_\d+(?:\.\d+)*)[`'‘’\"]?\s+not\s+found"
            r"(?:\s*\(required\s+by\s+(?P<lib>[^)\s]+)\s*\))?"
        ),
        _runtime_too_old,
    ),
    # a crash while importing (bash, zsh, faulthandler)
    # (no optional group or \b in front: either makes the engine try every position of a 1 MB paste, ten times
    # slower than a pattern that starts with its letters)
    (re.compile(r"[Ss]egmentation [Ff]ault\b(?: \(core dumped\))?"), _import_segfault),
    (
        re.compile(r"\[WinError (?P<code>126|127|193|1114|1455)\][^\"]{0,200}?Error loading \"(?P<dll>[^\"]+?\.dll)\""),
        _win_dll,
    ),
    # the same error pasted without its "[WinError 126]": the message is ERROR_MOD_NOT_FOUND's (126) in English
    # (Djdefrag/QualityScaler#9's title); torch/__init__.py adds 'Error loading "…" or one of its dependencies'
    (
        re.compile(r"(?<!\] )The specified module could not be found\.?\s*Error loading \"(?P<dll>[^\"]+?\.dll)\""),
        _win_dll,
    ),
    # torch's own words without either of the above in front (a typo'd "Erro loading", no WinError code:
    # oyxhust/captcha#2); the code is unknown
    (re.compile(r"Erro(?:r)? loading \"(?P<dll>[^\"]+?\.dll)\" or one of its dependencies"), _win_dll_once),
    (re.compile(r"Found no NVIDIA driver on your system"), _no_driver),
    (re.compile(r"Torch not compiled with CUDA enabled"), _not_compiled),
    # the same retold: "torch was not compiled with CUDA support" (AudioLDM#5); not "… with flash attention"
    (
        re.compile(r"[Tt][Oo][Rr][Cc][Hh] (?i:(?:was |is )?not compiled with CUDA(?: support)?)(?! enabled)"),
        _not_compiled,
    ),
    # a package's compiled module missing (IDEA-Research/Grounded-Segment-Anything#84: groundingdino built without
    # its CUDA op, CUDA_HOME unset at build time); torch's own `torch._C` is not this
    (
        re.compile(r"cannot import name '_C' from '(?P<package>(?!torch')[A-Za-z_][\w.]*)'|name '_C' is not defined"),
        _simple("extension-op-missing"),
    ),
    # an application's own log of torch.cuda.is_available() being False (2noise/ChatTTS gpu_utils: "No GPU found,
    # use CPU instead"; "CUDA is not available, using CPU", "falling back to CPU"): the state, not its cause
    (
        re.compile(
            # openai/whisper's transcribe(): the model runs on the CPU (a CPU-only torch, or no GPU)
            r"FP16 is not supported on CPU; using FP32 instead|"
            r"No GPU found,? use CPU instead"
            r"|CUDA (?:is )?not available[,.;:]? (?:using|use|falling back to|fall back to) (?:the )?CPU",
            re.I,
        ),
        _app_says_cpu,
    ),
    # InvokeAI 2.x's start-up log: the device torch gave it (invoke-ai/InvokeAI#1202)
    (re.compile(r"Using device_type cpu\b"), _app_says_cpu),
    (re.compile(r"No module named '?torch'?(?![\w.])"), _no_torch),
    (
        re.compile(
            r"cuDNN version incompatibility: PyTorch was compiled\s+against \(\d+, \d+, \d+\) but found runtime "
            r"version \(\d+, \d+, \d+\)[^.]*"
        ),
        _cudnn_incompatible,
    ),
    (re.compile(r"CUDNN_STATUS_(?P<status>[A-Z_]+)"), _simple("cudnn-status")),
    (
        re.compile(
            r"Attempting to deserialize object on (?:a CUDA device|CUDA device (?P<dev>\d+))"
            r"(?: but torch\.cuda\.device_count\(\) is (?P<count>\d+))?"
        ),
        _deserialize,
    ),
    # checkpoints: pickle's own error on a Git LFS pointer ("version https://git-lfs…" starts with v),
    # safetensors' HeaderTooLarge, torch.load's weights_only refusal (2.4+) and the global it names,
    # load_state_dict's shape and key errors (module.py, every wording since 0.3)
    (re.compile(r"invalid load key, '(?P<key>v)'"), _simple("ckpt-lfs-pointer")),
    (re.compile(r"version https://git-lfs\.github\.com/spec"), _simple("ckpt-lfs-pointer")),
    (re.compile(r"HeaderTooLarge"), _simple("ckpt-header-too-large")),
    # a zip checkpoint cut short or damaged: caffe2/serialize/inline_container.cc PyTorchStreamReader::valid
    # ("PytorchStreamReader failed " + what + info + ": " + miniz's error string); "file not found" and "not a
    # ZIP archive" are another kind of file, not a damaged one. The legacy format's own: torch/csrc/serialization.cpp
    (
        re.compile(
            r"PytorchStreamReader failed (?P<what>[a-z -]{3,40}?(?: [\w./-]+)?): (?P<reason>failed finding central "
            r"directory|invalid header or archive is corrupted|file read failed|decompression failed or archive is "
            r"corrupted|CRC-32 check failed|unexpected decompressed size|unsupported multidisk archive)"
            r"|unexpected EOF, expected \d+ more bytes\. The file might be corrupted"
        ),
        _simple("ckpt-truncated"),
    ),
    (
        re.compile(r"Weights only load failed(?:[^\n]{0,1500}?Unsupported global: GLOBAL (?P<global>[\w.]+))?"),
        _simple("ckpt-weights-only"),
    ),
    (
        re.compile(
            r"size mismatch for (?P<key>[\w.]+): copying a param with shape torch\.Size\((?P<saved>\[[\d, ]*\])\) "
            r"from checkpoint, the shape in current model is torch\.Size\((?P<model>\[[\d, ]*\])\)"
        ),
        _simple("ckpt-shape-mismatch"),
    ),
    # torch 0.3/0.4's wording of the same (module.py _load_from_state_dict)
    (
        re.compile(
            r"While copying the parameter named \"?(?P<key>[\w.]+)\"?, whose dimensions in the model are "
            r"torch\.Size\((?P<model>\[[\d, ]*\])\) and whose dimensions in the checkpoint are "
            r"torch\.Size\((?P<saved>\[[\d, ]*\])\)"
        ),
        _simple("ckpt-shape-mismatch"),
    ),
    (
        re.compile(r"(?:unexpected|missing) keys? \"(?P<prefix>module\.|_orig_mod\.)[\w.]+\" in state_dict", re.I),
        _simple("state-dict-prefix"),
    ),
    (
        re.compile(r"Unexpected key\(s\) in state_dict: \"(?P<prefix>module\.|_orig_mod\.)"),
        _simple("state-dict-prefix"),
    ),
    (
        re.compile(r"Missing key\(s\) in state_dict: \"(?P<prefix>module\.|_orig_mod\.)"),
        _simple("state-dict-prefix"),
    ),
    # any other key difference (module.py load_state_dict, since 0.4): the keys are listed quoted
    (
        re.compile(r"Missing key\(s\) in state_dict: (?P<keys>\"[^\"]{1,200}\"(?:, \"[^\"]{1,200}\"){0,400})"),
        _keys("ckpt-missing-keys"),
    ),
    (
        re.compile(r"Unexpected key\(s\) in state_dict: (?P<keys>\"[^\"]{1,200}\"(?:, \"[^\"]{1,200}\"){0,400})"),
        _keys("ckpt-unexpected-keys"),
    ),
    (re.compile(r"device-side assert triggered"), _simple("device-side-assert")),
    (re.compile(r"an illegal memory access was encountered"), _simple("illegal-memory-access")),
    # cudaErrorDevicesUnavailable as the runtime words it, and as newer releases and torch print it
    (
        re.compile(
            r"CUDA-capable device\(s\) is/are busy or unavailable|all CUDA-capable devices are busy or unavailable"
        ),
        _busy,
    ),
    # torch/cuda/__init__.py's "No CUDA GPUs are available", and as people retype it ("no cuda gp available",
    # "no cuda gpu aviliable")
    (
        re.compile(
            # "No CUDA GPUs are available" and its retellings; letters first, so the engine scans for them
            r"[Nn][Oo] [Cc][Uu][Dd][Aa] (?i:(?:gpus?|gp|devices?)\s+(?:(?:are|is)\s+)?"
            r"(?:available|aviliable|avaliable|avilable|availabe|availible))(?![A-Za-z])",
        ),
        _simple("no-cuda-gpus"),
    ),
    # the kernel side (modprobe, dmesg / journal NVRM lines), as the kernel and the driver print them
    (
        re.compile(r"could not insert 'nvidia[\w-]*': (?:Key was rejected by service|Required key not available)"),
        _simple("secure-boot-rejects"),
    ),
    (re.compile(r"Bad return status for module build on kernel: (?P<kernel>\S+)"), _simple("module-not-built")),
    # kmod's modprobe when the module was built for another kernel (or against another nvidia.ko)
    (
        re.compile(r"could not insert '(?P<module>nvidia[\w-]*)': Unknown symbol in module"),
        _simple("module-not-built"),
    ),
    (
        re.compile(r"Module (?P<module>nvidia[\w-]*) not found in directory /lib/modules/(?P<kernel>\S+)"),
        _simple("module-not-built"),
    ),
    (
        re.compile(
            r"NVRM: API mismatch: the client has the version (?P<client>\d+(?:\.\d+)+), but\s+"
            r"(?:NVRM:\s+)?this kernel module has the version (?P<module>\d+(?:\.\d+)+)"
        ),
        _api_mismatch,
    ),
    (re.compile(r"NVRM: Xid \((?P<pci>[^)]*)\): (?P<xid>\d+),[^\n]{0,120}"), _simple("xid")),
    (re.compile(r"requires use of the NVIDIA open kernel modules"), _simple("needs-open-module")),
    # the open module on a GPU without a GSP (older than Turing): open-gpu-kernel-modules kernel-open/nvidia/nv.c
    (
        re.compile(
            r"not supported by open\s+(?:NVRM:\s+)?nvidia\.ko because it does not include the required GPU\s+"
            r"(?:NVRM:\s+)?System Processor"
        ),
        _nvrm("gsp-required"),
    ),
    # a branch that dropped the GPU (nv-pci.c: "… is supported through the NVIDIA 580.xx Legacy drivers … The
    # 590.44.01 NVIDIA driver will ignore this GPU"); only the three-digit branches of the last two decades
    (
        re.compile(
            r"supported through the NVIDIA (?P<branch>\d{3})(?:\.\d+)?\.xx Legacy drivers"
            r"(?:.{0,300}?The (?P<driver>\d+(?:\.\d+)+) NVIDIA driver will ignore)?"
        ),
        _nvrm("legacy-branch"),
    ),
    (
        re.compile(r"nouveau(?:\s+\d{6,}\s+\d+\b| \d{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d: )"),
        _simple("nouveau-loaded"),
    ),
    # torch.utils.cpp_extension building an extension with a toolkit of another CUDA major
    (
        re.compile(
            r"The detected CUDA version \((?P<nvcc>[\d.]+)\) mismatches the version that was used to "
            r"compile\s+PyTorch \((?P<torch>[\d.]+)\)"
        ),
        _simple("extension-cuda-mismatch"),
    ),
    # the same check in DeepSpeed's op builder (op_builder/builder.py, assert_no_cuda_mismatch) and apex's setup.py
    (
        re.compile(
            r"Installed CUDA version (?P<nvcc>[\d.]+) does not match the version torch was compiled with "
            r"(?P<torch>[\d.]+)"
            r"|Cuda extensions are being compiled with a version of Cuda that does not match the version used to "
            r"compile Pytorch binaries"
        ),
        _simple("extension-cuda-mismatch"),
    ),
    # nvcc older than the architecture asked for (detectron2#272: CUDA 9.2 for an RTX 2060's compute_75)
    (re.compile(r"Unsupported gpu architecture '(?P<arch>compute_\d+)'"), _nvcc_arch),
    # torch.compile: Triton or a C/C++ compiler missing (torch/_inductor, triton's build)
    (
        re.compile(
            r"Cannot find a working triton installation|InvalidCxxCompiler: No working C\+\+ compiler found"
            r"|Failed to find C compiler\. Please specify via CC environment variable"
        ),
        _simple("compile-toolchain-missing"),
    ),
    (re.compile(r"\bSecureBoot enabled\b"), _simple("secure-boot-on")),
    # NCCL's own error classes (ncclResult_t): the reason is in its NCCL_DEBUG=INFO log
    (
        re.compile(
            r"NCCL (?:error|Error \d+)[^\n]{0,120}?(?P<what>unhandled system error|unhandled cuda error|internal error"
            r"|invalid usage|remote process exited or there was a network error)"
        ),
        _simple("nccl-error"),
    ),
    # torchvision's C++ ops registered by another torch (torchvision/extension.py, ops)
    (re.compile(r"operator torchvision::(?P<op>\w+) does not exist"), _simple("torchvision-mismatch")),
    # torchvision/extension.py's _assert_has_ops: its compiled ops do not load with the installed torch
    (re.compile(r"Couldn't load custom C\+\+ ops"), _simple("torchvision-mismatch")),
    # the dispatcher has torchvision's op but no CUDA kernel for it: a CPU torchvision, or one built for another
    # torch (aten/src/ATen/core/dispatch/OperatorEntry.cpp reportError)
    (
        re.compile(r"Could not run 'torchvision::(?P<op>\w+)' with arguments from the '(?P<backend>CUDA)' backend"),
        _simple("torchvision-mismatch"),
    ),
    # inductor importing from a Triton other than the one torch pins (triton_key left triton.compiler.compiler
    # in Triton 3.5; AttrsDescriptor in 3.3; torch/_inductor/codecache.py and runtime/hints.py import them)
    (
        re.compile(r"cannot import name '(?P<name>\w+)' from '(?P<module>triton(?:\.\w+)*)'"),
        _triton_import,
    ),
    # torch's CUDA initialisation warning: cuInit returned CUDA_ERROR_UNKNOWN (999)
    (
        re.compile(r"CUDA initialization: CUDA unknown error|CUDA unknown error - this may be due to an incorrectly"),
        _named_80x(999),
    ),
    # the kernel log's "GPU at PCI:0000:01:00.0 has fallen off the bus" (Xid 79), or a poster's own words
    (re.compile(r"f[ae]ll(?:en|s|ing)? off the bus\b", re.I), _simple("fell-off-bus")),
    # the NVIDIA module's log when nouveau got the GPU first (nv.c: "NVRM: The NVIDIA probe routine was not
    # called ... nouveau, rivafb, nvidiafb or rivatv was loaded and obtained ownership of the NVIDIA device(s)")
    (
        re.compile(r"NVRM: nouveau, rivafb, nvidiafb or rivatv\s+(?:NVRM:\s+)?was loaded and obtained ownership"),
        _simple("nouveau-owns"),
    ),
    # attention kernels that need a newer GPU (xFormers' reason, vLLM's backend choice, flash-attn's check)
    (
        re.compile(
            r"requires a GPU with compute capability > (?P<need>\d+\.\d)"
            r"|Cannot use FlashAttention-2 backend for (?P<arch>Volta and Turing|Volta) GPUs"
            r"|FlashAttention only supports (?P<newer>Ampere) GPUs or newer"
        ),
        _simple("attention-needs-newer-gpu"),
    ),
    # Lightning: "You requested GPUs: [0]\n But your machine only has: []"
    # and its other wordings across versions: "You requested gpu: [0] But your machine only has: []"
    # (accelerators/cuda.py), "GPUs requested but none are available." (utilities/device_parser.py, 0.x-2.x),
    # "`CUDAAccelerator` can not run on your system since the accelerator is not available" (accelerator_connector)
    (
        re.compile(
            r"You requested (?:GPUs|gpu): \[[\d, ]+\]\s*But your machine only has: \[\]"
            r"|GPUs requested but none are available"
            r"|`?(?:CUDA|GPU)Accelerator`? can not run on your system since the accelerator is not available"
        ),
        _simple("no-cuda-gpus"),
    ),
    # shared memory: torch's DataLoader (torch/utils/data/_utils) and NCCL's shm transport
    (
        re.compile(
            r"dataloader's workers are out of shared memory|insufficient shared memory \(shm\)"
            r"|(?:shared memory|共享内存)\s*(?:is |was )?(?:不够|不足|太小|not enough|too small|insufficient|exhausted)"
            r"|NCCL WARN Call to posix_fallocate failed"
            # NCCL's include/shm.h, with or without its "NCCL WARN" prefix (torch's "Last error:", Ray's
            # "(Runner pid=…)" put other words in front: showlab/VideoDiffusion#2)
            r"|Error while creating shared memory segment (?:/dev/shm/)?nccl-"
        ),
        _shm,
    ),
    # a program that asked for CUDA from a torch that has none (Ultralytics, xFormers)
    (re.compile(r"Invalid CUDA '?device=[\w,]+'? requested"), _simple("cuda-wanted")),
    (re.compile(r"xFormers was built for:?\s*PyTorch \S+\+cu\d+"), _simple("cuda-wanted")),
    # vLLM: the model's context does not fit the KV cache the GPU's memory leaves
    (
        re.compile(
            r"max seq len \((?P<len>\d+)\) is larger than the maximum number of tokens that can be stored in KV cache"
        ),
        _simple("kv-cache-too-small"),
    ),
    (re.compile(r"invalid device ordinal"), _invalid_ordinal),
    (re.compile(r"unspecified launch failure"), _simple("launch-failure")),
    (re.compile(r"CUDA error: unknown error"), _simple("cuda-unknown-error")),
    (
        # `docker run --gpus` names no driver (""); a compose file's `driver: nvidia` names it (AbdBarho/
        # stable-diffusion-webui-docker#130, #81); either way no NVIDIA runtime is registered with Docker
        re.compile(r"could not select device driver \"(?:nvidia)?\" with capabilities: \[\[[\w ,]*\]\]"),
        _simple("docker-no-gpu-runtime"),
    ),
    # the image's NVIDIA_REQUIRE_CUDA checked by the container hook against the host driver
    (
        re.compile(r"unsatisfied condition: cuda\s*>=\s*(?P<cuda>\d+\.\d+)"),
        _simple("image-needs-newer-driver"),
    ),
    (re.compile(r"nvidia-container-cli: (?P<what>[^\n]{0,120})"), _simple("nvidia-container-cli")),
]


# what a Python prompt answered: where it answered twice (before and after an upgrade, pytorch#28195), the
# later answer is the state asked about, and the first value set wins
_REPL = (_repl_version, _repl_available, _repl_cuda, _repl_arch)


# For the patterns a regex scan of a 1 MB paste is slow for (an optional or case-free start): words every match
# contains, lower-cased; the pattern runs only where the paste has one (benchmarks/bench_triage.py)
_NEEDS: dict[str, tuple[str, ...]] = {}


def _needs(fragment: str, *words: str) -> None:
    found = [pattern.pattern for pattern, _ in PATTERNS if fragment in pattern.pattern]
    if not found:  # a pattern reworded: its prefilter must follow, never silently stop applying
        raise ValueError(f"no pattern has {fragment!r}")
    for pattern in found:
        _NEEDS[pattern] = words


_needs("(?P<family>GLIBCXX|GLIBC|CXXABI)", "glibc", "cxxabi")
_needs("egmentation [Ff]ault", "segmentation fault")
_needs("[Nn][Oo] [Cc][Uu][Dd][Aa]", "no cuda")
_needs("off the bus", "off the bus")
_needs("nouveau", "nouveau")
_needs("NVIDIA driver on your system is too old", "too old")
_needs("SecureBoot enabled", "secureboot enabled")
_needs("GPUs requested but none", "requested", "can not run on your system")
_needs("No GPU found", "no gpu found", "not available", "fp16 is not supported on cpu")
_needs("Using device_type cpu", "using device_type cpu")
_needs("in state_dict", "state_dict")
_needs("shared memory", "shared memory", "shm", "共享内存", "posix_fallocate")
_needs("The specified module could not be found", "specified module")
_needs(": cannot open shared object file", "cannot open shared object")


def parse(all_lines: list[str], text: str | None = None) -> Partial:
    """Every error text in the paste; `text`: the lines already joined (text.joined), when the caller has it."""
    p = Partial("error text")
    text = joined(all_lines) if text is None else text
    low = text.lower()
    seen: set[tuple[str, str]] = set()
    for pattern, handler in PATTERNS:
        words = _NEEDS.get(pattern.pattern)
        if words is not None and not any(w in low for w in words):
            continue
        matches = list(pattern.finditer(text))
        if handler in _REPL:
            matches.reverse()
        before = len(p.hits)
        for m in matches:
            key = (pattern.pattern, m.group(0))
            if key in seen:
                continue
            seen.add(key)
            handler(p, m)
            if len(p.hits) > 40 + before:
                break  # a long log repeats its errors: forty hits of one pattern say it
    return p
