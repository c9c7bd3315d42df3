"""The libraries torch loads, as their errors show: an undefined symbol, a library or Windows DLL that cannot
be opened, cuDNN's status codes, and extensions, torch.compile, Triton or torchvision built for another torch or
CUDA, or an extension without kernels for the GPU.
"""

from __future__ import annotations

import re

from cudadoctor.advice import install as install_advice
from cudadoctor.advice import shell
from cudadoctor.facts import Facts
from cudadoctor.facts.paste import PasteHit
from cudadoctor.knowledge import extension_modules, triton_pins
from cudadoctor.model import Finding, Fix, Table, msg
from cudadoctor.rules.catalogue import fix, named
from cudadoctor.rules.extensions import OTHER_TORCH
from cudadoctor.rules.paste.entries import CANNOT_OPEN, UNDEFINED_SYMBOL, WINDOWS_DLL
from cudadoctor.rules.paste.installs import reinstall_torch, torch_install

# a mangled name in torch's own C++ namespaces (c10::, at::, torch::), const members too
_TORCH_SYMBOL = re.compile(r"^_ZNK?(?:3c10|2at|5torch)")
# what torch installs itself: its symbols there are CD904's story (a mixed or half-upgraded torch)
_TORCH_FAMILY = re.compile(r"(?:^|/)(?:torch|torchvision|torchaudio|functorch)/|(?:^|/)lib(?:torch|c10|shm)\w*\.so")


def _extension(library: str | None) -> str | None:
    """The pip name of the extension whose shared object this is; None for torch's own or an unknown one."""
    if not library or _TORCH_FAMILY.search(library):
        return None
    parts = re.split(r"[/\\]", library)
    if "site-packages" in parts and parts.index("site-packages") + 1 < len(parts) - 1:
        top = parts[parts.index("site-packages") + 1]
    else:
        top = parts[-1]
    return extension_modules.distribution(top)


def other_torch(f: Facts, h: PasteHit, package: str) -> Finding:
    """An extension's shared object missing a symbol of torch's C++ API: it was built against another torch
    (flash-attention#931: flash-attn 2.5.7 beside torch 2.3.0); reinstalling torch does not help."""
    t = f.torch
    version = f.paste.packages.get(package) if f.paste is not None else None
    spec = f"{package}=={version}" if version else package
    return OTHER_TORCH.finding(
        title=msg(
            "{package} was built against another torch than {torch}: undefined symbol {symbol}",
            package=package,
            torch=named("torch", t.version if t else None),
            symbol=h.detail.get("symbol", "?"),
        ),
        why=msg(
            "{package}'s compiled code calls torch's C++ API (c10::, at::, torch::) as the torch it was built "
            "against exported it. Those symbols change from release to release, so the extension loads only "
            "beside that torch; reinstalling torch itself does not help.",
            package=package,
        ),
        fix=[
            fix("See the versions of both", f'python -m pip list | grep -i -E "^(torch|{package}) "'),
            fix(
                msg(
                    "Install the {package} build made for this torch (its releases say which torch each is "
                    "for), or build it from source against this torch",
                    package=package,
                ),
                "python -m pip install --no-build-isolation --no-deps --no-cache-dir --force-reinstall "
                f"--no-binary {package} {spec}",
            ),
        ],
    )


def undefined_symbol(f: Facts, h: PasteHit) -> Finding:
    sym, lib = h.detail.get("symbol", "?"), h.detail.get("library")
    package = _extension(lib)
    if package and _TORCH_SYMBOL.match(sym):
        return other_torch(f, h, package)
    title = (
        msg("undefined symbol {symbol} in {library}: a library at the wrong version", symbol=sym, library=lib)
        if lib
        else msg("undefined symbol {symbol}: a library at the wrong version", symbol=sym)
    )
    return UNDEFINED_SYMBOL.finding(
        title=title,
        fix=[
            fix("See which copies are found first", "echo $LD_LIBRARY_PATH", "python -m pip list | grep -i nvidia"),
            fix("Let torch use the libraries of its own wheels", "unset LD_LIBRARY_PATH"),
            reinstall_torch(f),
        ],
    )


def cannot_open(f: Facts, h: PasteHit) -> Finding | None:
    lib = h.detail.get("library", "")
    if lib.startswith("libnvidia-ml") and f.driver is not None and f.driver.init_status == "LIBRARY_NOT_FOUND":
        return None  # CD101 says it with the machine's context
    wsl = f.system is not None and f.system.wsl is True
    if lib.startswith("libcuda.so") and wsl:
        return _libcuda_wsl(lib)
    if lib == "libcuda.so" and h.detail.get("by") == "cuDNN" and not wsl:
        return _unversioned_libcuda()
    if lib.startswith("libcuda.so") and h.detail.get("by") == "triton":
        return _libcuda_triton()
    if lib.startswith(("libcuda.so", "libnvidia-ml")):
        return CANNOT_OPEN.finding(
            title=msg("{library} cannot be found: no NVIDIA driver where this ran", library=lib),
            fix=[
                fix(
                    "On a Linux host: see whether the driver is installed",
                    "nvidia-smi",
                    "ls /usr/lib/x86_64-linux-gnu/libcuda*",
                ),
                fix("In a container: start it with the GPUs", "docker run --gpus all --rm IMAGE nvidia-smi"),
                fix("Under WSL2: the library lives in /usr/lib/wsl/lib (the Windows driver)", "ls /usr/lib/wsl/lib"),
            ],
        )
    if h.detail.get("by") == "cuDNN" and wsl:
        return _cudnn_sublibrary_wsl(lib)
    if h.detail.get("by") == "bitsandbytes":
        return _bitsandbytes_cpu()
    cudnn = lib.startswith("libcudnn")
    major = f.torch.cuda.split(".")[0] if f.torch is not None and f.torch.cuda else None
    package = (f"nvidia-cudnn-cu{major}" if major else "nvidia-cudnn") if cudnn else "nvidia-*"
    if h.detail.get("by") == "cuDNN":
        title = msg("cuDNN could not load {library}: it, or a library it needs, is missing", library=lib)
    elif cudnn:
        title = msg("{library} cannot be found: cuDNN torch needs is missing", library=lib)
    else:
        title = msg("{library} cannot be found: a CUDA library torch needs is missing", library=lib)
    return CANNOT_OPEN.finding(
        title=title,
        fix=[
            fix(
                "See what is installed and where the loader looks",
                "python -m pip list | grep -i nvidia",
                "echo $LD_LIBRARY_PATH",
            ),
            fix(
                msg("Reinstall torch with {package} at the versions it pins", package=package),
                torch_install(f, force=True),
            ),
            reinstall_torch(f),
        ],
    )


# the lib directory of the nvidia-cuda-runtime wheel torch installed (a namespace package in some releases: __path__)
_CUDA_RUNTIME_ON_PATH = (
    'export LD_LIBRARY_PATH="$(python -c \'import nvidia.cuda_runtime as m; print(m.__path__[0] + "/lib")\')'
    ':$LD_LIBRARY_PATH"'
)


def _bitsandbytes_cpu() -> Finding:
    """bitsandbytes 0.3x-0.42 searches the library path for the CUDA runtime (libcudart.so); without it, it loads
    its CPU library and says it "was compiled without GPU support" (Thund3rPat/kohya_ss-linux#8: only
    libcudart.so.11.0, from the nvidia-cuda-runtime wheel, was there)."""
    return CANNOT_OPEN.finding(
        title=msg("bitsandbytes found no CUDA runtime (libcudart.so) and fell back to its CPU library"),
        why=msg(
            "bitsandbytes looks for libcudart.so on the library search path to pick its CUDA library; where it "
            "finds none (the runtime torch installed sits in the nvidia-cuda-runtime wheel, named "
            "libcudart.so.11.0 or .12), it loads libbitsandbytes_cpu.so and says it was compiled without GPU "
            "support. Its own report names what it searched."
        ),
        fix=[
            fix("See what bitsandbytes searched and found", "python -m bitsandbytes"),
            fix(
                "Put the CUDA runtime of torch's wheels on the search path",
                _CUDA_RUNTIME_ON_PATH,
            ),
        ],
    )


def _unversioned_libcuda() -> Finding:
    """cuDNN's "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file"
    on Linux: CUDA had started (the driver's libcuda.so.1 loaded), but cuDNN's sub-library asks for libcuda.so."""
    return CANNOT_OPEN.finding(
        title=msg("cuDNN needs libcuda.so, the unversioned name of the driver's library, and the loader finds none"),
        why=msg(
            "CUDA started, so the driver's libcuda.so.1 is there; cuDNN 8's sub-libraries ask for libcuda.so, a "
            "link the driver's development package makes. Without it on the loader's path they do not load."
        ),
        fix=[
            fix("See which libcuda names the loader knows", "ldconfig -p | grep libcuda"),
            fix(
                msg("Make the link beside the driver's library"),
                "L=\"$(ldconfig -p | awk '/libcuda.so.1 /{print $NF; exit}')\"; "
                'sudo ln -s "$L" "$(dirname "$L")/libcuda.so"',
                "sudo ldconfig",
            ),
        ],
    )


def _wsl_libcuda_fixes() -> list[Fix]:
    return [
        fix("See the driver's libraries WSL provides", "ls -l /usr/lib/wsl/lib/libcuda*"),
        fix("Put them on the library search path", "export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH"),
        fix(msg("If libcuda is not there: install or update the NVIDIA driver in Windows, not inside WSL")),
    ]


def _cudnn_sublibrary_wsl(lib: str) -> Finding:
    """cuDNN 8 loads its sub-libraries on first use, and each needs the driver's libcuda.so: under WSL2 that is
    the Windows driver's, in /usr/lib/wsl/lib, which the loader may not search (facebookresearch/nougat#105)."""
    return CANNOT_OPEN.finding(
        title=msg(
            "cuDNN could not load {library}: under WSL2 the libcuda.so it needs is in /usr/lib/wsl/lib", library=lib
        ),
        why=msg(
            "cuDNN loads {library} when it is first used, and that library needs the driver's libcuda.so. Under "
            "WSL2 the driver is the Windows one and its Linux libraries are in /usr/lib/wsl/lib; where the loader "
            "does not search there, cuDNN cannot load {library} (facebookresearch/nougat#105).",
            library=lib,
        ),
        fix=_wsl_libcuda_fixes(),
    )


def _libcuda_wsl(lib: str) -> Finding:
    """Under WSL2 libcuda is the Windows driver's, in /usr/lib/wsl/lib: a program that dlopens it and misses it
    there loads it once the directory is on LD_LIBRARY_PATH (NVIDIA/cuda-python#17)."""
    return CANNOT_OPEN.finding(
        title=msg("{library} cannot be found: under WSL2 the driver's libraries are in /usr/lib/wsl/lib", library=lib),
        why=msg(
            "Under WSL2 the NVIDIA driver is the Windows one; its Linux libraries, libcuda.so.1 among them, are in "
            "/usr/lib/wsl/lib. A program that loads {library} by name and does not find it there loads it once that "
            "directory is on LD_LIBRARY_PATH (NVIDIA/cuda-python#17).",
            library=lib,
        ),
        fix=_wsl_libcuda_fixes(),
    )


def _libcuda_triton() -> Finding:
    """Triton's "libcuda.so cannot found!" (backends/nvidia/driver.py libcuda_dirs): libcuda.so.1 is not in the
    loader's cache (`ldconfig -p`) nor on LD_LIBRARY_PATH; TRITON_LIBCUDA_PATH names its directory instead."""
    return CANNOT_OPEN.finding(
        title=msg("Triton cannot find libcuda.so.1 in the loader's cache"),
        why=msg(
            "Triton looks for the driver's libcuda.so.1 in the loader's cache (ldconfig -p), then on "
            "LD_LIBRARY_PATH. The driver can be installed while its directory is not in that cache: ldconfig did "
            "not run after it was installed, or the directory is not in /etc/ld.so.conf.d."
        ),
        fix=[
            fix("See where libcuda is, and whether the cache has it", "ldconfig -p | grep libcuda", "nvidia-smi"),
            fix(msg("Refresh the loader's cache (Triton's own advice)"), "sudo ldconfig"),
            fix(
                msg("Or tell Triton the directory that has libcuda.so.1"),
                # the directory found on this machine, not one distribution's (/usr/lib64 on RHEL, aarch64's, WSL's)
                'export TRITON_LIBCUDA_PATH="$(dirname "$(find /usr /lib /lib64 /opt -name libcuda.so.1 2>/dev/null '
                '| head -n 1)")"',
            ),
        ],
    )


# a path inside a conda environment (its own lib/ comes before the system's for conda's python)
_CONDA_PATH = re.compile(
    r"(?:ana|mini|micro)?conda\d?[/\\]|mambaforge|miniforge|[/\\]envs[/\\]|[/\\]bin[/\\]\.\.[/\\]lib[/\\]"
)


def _runtime_too_old(f: Facts, h: PasteHit) -> Finding:
    """The loader's "version `GLIBC_2.14' not found (required by …/torch/lib/libshm.so)" on torch's import: the C
    runtime (glibc, the OS's) or the C++ runtime (libstdc++) loaded is older than torch's build needs
    (pytorch#14274: torch 1.0 on CentOS 6's glibc 2.12). A C++ runtime in a conda environment is replaced with a
    newer one from conda-forge (pytorch/benchmark#2132, pytorch#105248)."""
    version, family = h.detail.get("version", "?"), h.detail.get("family", "GLIBC")
    runtime, library = h.detail.get("runtime"), h.detail.get("library")
    name = re.split(r"[/\\]", library)[-1] if library else "torch"
    if family == "GLIBC":
        title = msg(
            "import torch fails: {library} needs {version}, newer than this system's C library",
            library=name,
            version=version,
        )
        why = msg(
            "The C library the loader found ({runtime}) lacks {version}, which {library} was built against: this "
            "torch build was made for a newer Linux. glibc is part of the operating system and is not upgraded on "
            "its own.",
            runtime=runtime or "libc.so.6",
            version=version,
            library=name,
        )
        fixes = [
            fix("See this system's C library (glibc) version", "ldd --version"),
            fix(
                msg(
                    "Run it on a Linux release whose glibc has {version}, or in a container of one (a container "
                    "brings its own C library)",
                    version=version,
                )
            ),
            fix(
                msg("Or build torch from source on this system (the pytorch README, From Source)"),
                "git clone --recursive https://github.com/pytorch/pytorch",
            ),
        ]
    else:
        conda = bool(_CONDA_PATH.search(runtime or "") or _CONDA_PATH.search(library or ""))
        title = msg(
            "import torch fails: {library} needs {version}, newer than the C++ runtime loaded",
            library=name,
            version=version,
        )
        why = msg(
            "The C++ runtime (libstdc++) the loader found ({runtime}) lacks {version}, which {library} was built "
            "against.",
            runtime=runtime or "libstdc++.so.6",
            version=version,
            library=name,
        )
        strings = fix(
            "See the newest versions this libstdc++ has",
            # the loaded libstdc++ from the loader's cache: `g++ -print-file-name` needs g++, and without it `strings`
            # would wait on stdin
            f"strings {shell.word(runtime) if runtime else _LIBSTDCXX} "
            "| grep -E '^(GLIBCXX|CXXABI)_[0-9]' "
            "| sort -V | tail -n 3",
        )
        newer = fix(
            msg("Install a newer C++ runtime into the conda environment (conda-forge's libstdcxx-ng)"),
            "conda install -c conda-forge libstdcxx-ng",
        )
        if conda:
            fixes = [strings, newer]
        else:
            fixes = [
                strings,
                fix(msg("Run it on a newer Linux release, or in a container of one")),
                fix(
                    msg("In a conda environment: install a newer C++ runtime into it (conda-forge's libstdcxx-ng)"),
                    "conda install -c conda-forge libstdcxx-ng",
                ),
            ]
    from cudadoctor.rules.torch_install import IMPORT_FAILED

    return IMPORT_FAILED.finding(
        title=title,
        why=msg("{page} {detail} The error: {error}", page=msg(IMPORT_FAILED.explanation), detail=why, error=h.text),
        fix=fixes,
    )


def windows_dll(f: Facts, h: PasteHit) -> Finding:
    dll = h.detail.get("library", "a DLL")
    if h.detail.get("code") == "1455":
        return WINDOWS_DLL.finding(
            title=msg("Windows ran out of paging file loading {dll} (WinError 1455)", dll=dll.split(chr(92))[-1]),
            why=msg(
                "WinError 1455 means the paging file is too small to map the DLL: torch's CUDA DLLs are large, "
                "and each DataLoader worker process maps them again. GPU memory is not the cause."
            ),
            fix=[
                fix(
                    msg(
                        "Let Windows size the paging file (System > Advanced > Performance > Virtual memory), or "
                        "enlarge it, then restart"
                    ),
                    "SystemPropertiesPerformance.exe",
                ),
                fix(msg("Or start fewer DataLoader workers"), "DataLoader(dataset, num_workers=2)"),
            ],
            tables=[Table(["Windows said"], [[h.text]])],
        )
    return WINDOWS_DLL.finding(
        title=msg("Windows cannot load {dll}", dll=dll.split(chr(92))[-1]),
        fix=[
            fix(
                "Install the Microsoft Visual C++ Redistributable (x64), then open a new terminal",
                "winget install Microsoft.VCRedist.2015+.x64",
            ),
            fix(
                "Reinstall torch cleanly (one build, from one index)",
                "python -m pip uninstall -y torch torchvision torchaudio",
                torch_install(f),
            ),
        ],
        tables=[Table(["Windows said"], [[h.text]])],
    )


_TRITON_PIN = (
    "python -c \"from importlib.metadata import requires; print([r for r in requires('torch') if "
    "r.startswith(('triton', 'pytorch-triton'))])\""
)

_PINNED = (
    '"$(python -c "from importlib.metadata import requires; '
    "print(next(r.split(';')[0] for r in requires('torch') if r.startswith(('triton', 'pytorch-triton'))))\")\""
)


def _triton_fixes(f: Facts, windows: bool) -> list[Fix]:
    """The Triton this torch pins: on Linux read from torch's own metadata (exact for every release); on Windows
    the triton-windows line for torch's minor (knowledge/triton_pins.py). Never a bare `pip install triton`:
    the newest Triton is not torch's."""
    t = f.torch
    version = t.version if t is not None else None
    out = [] if windows else [fix(msg("See which Triton this torch pins"), _TRITON_PIN)]  # none on Windows
    line = triton_pins.windows_line(version) if windows else None
    if line is not None:
        major, minor = line.split(".")
        spec = f'"triton-windows>={line},<{major}.{int(minor) + 1}"'
        release = ".".join((version or "").split("+")[0].split(".")[:2])
        out.append(
            fix(
                msg("Install the Triton {line} line that torch {torch} works with", line=line, torch=release),
                install_advice.package_install(f, [spec]),
            )
        )
    elif not windows:  # torch's own requirement, read from its metadata: exact whatever the release
        out.append(fix(msg("Install the Triton this torch pins"), install_advice.package_install(f, [_PINNED])))
    return out


def _triton_mismatch(f: Facts, h: PasteHit) -> Finding:
    from cudadoctor.rules.torch_compile import COMPILE_FAILED

    windows = h.detail.get("windows") == "yes" or (f.system is not None and f.system.os == "Windows")
    return COMPILE_FAILED.finding(
        title=msg("Triton does not match this torch: {error}", error=h.text),
        why=msg(
            "torch.compile's inductor imports Triton's internals ({name} from {module}), which move between "
            "Triton releases. Each torch release is built and tested against one Triton line and pins it; a newer "
            "or older Triton (upgraded by another package, or triton-windows on Windows, which torch does not pin) "
            "breaks the import.",
            name=h.detail.get("name", "?"),
            module=h.detail.get("module", "triton"),
        ),
        fix=_triton_fixes(f, windows),
    )


_ARCH_HERE = "$(python -c \"import torch; print(*torch.cuda.get_device_capability(), sep='.')\")"


def _flags_leave_out(f: Facts, archs: list[str]) -> bool:
    """The build flags shown compile for none of the GPUs the paste names (compute capability known): a cubin of the
    GPU's major and an equal or lower minor, or PTX of an equal or lower capability, would run (CD240's page). False
    where no GPU's capability is known."""
    from cudadoctor.rules.paste.builds import gpus_with_cc

    ccs = {cc for _, cc in gpus_with_cc(f)}
    if not ccs or not archs:
        return False

    def runs(cc: str) -> bool:
        want = tuple(int(x) for x in cc.split("."))
        for a in archs:
            base = tuple(int(x) for x in a.removesuffix("+PTX").split("."))
            if (base[0] == want[0] and base[1] <= want[1]) or (a.endswith("+PTX") and base <= want):
                return True
        return False

    return not any(runs(cc) for cc in ccs)


def _extension_no_kernel(f: Facts, h: PasteHit) -> Finding:
    """ "no kernel image is available" raised in an extension's own op (mmcv#2201: built on an A100 for sm_80,
    run on a V100): the extension was compiled without this GPU's architecture; torch is not in question."""
    from cudadoctor.rules.extensions import NO_KERNELS
    from cudadoctor.rules.paste.builds import gpus_with_cc

    top = h.detail.get("package")
    # only a package the table knows is named in a pip line: a guessed name could install anything from PyPI
    package = extension_modules.distribution(top) if top else None
    shown = package or top
    gpus = gpus_with_cc(f)
    archs = ";".join(sorted({cc for _, cc in gpus})) if gpus else _ARCH_HERE
    if shown and gpus:
        title = msg("{package} has no kernels for {gpu}", package=shown, gpu=gpus[0][0])
    elif shown:
        title = msg("{package}'s CUDA code has no kernels for this GPU: {error}", package=shown, error=h.text)
    else:
        title = msg("A CUDA extension's code has no kernels for this GPU: {error}", error=h.text)
    windows = f.system is not None and f.system.os == "Windows"
    lang = "powershell" if windows else ""
    arch = [f'$env:TORCH_CUDA_ARCH_LIST="{archs}"' if windows else f'export TORCH_CUDA_ARCH_LIST="{archs}"']
    if "MMCV_CUDA_ARGS" in h.detail.get("flags", ""):
        # nvcc arch flags of the build's own make torch's cpp_extension ignore TORCH_CUDA_ARCH_LIST
        # (torch/utils/cpp_extension.py, _get_cuda_arch_flags: "user-provided arch flags")
        unset = "Remove-Item Env:MMCV_CUDA_ARGS" if windows else "unset MMCV_CUDA_ARGS"
        arch.insert(0, f"{unset}  # its -gencode flags replace TORCH_CUDA_ARCH_LIST")
    where = msg("Or, built from a source checkout: rebuild it there") if package else msg("Rebuild it in its checkout")
    fixes = [fix(where, *arch, "python -m pip install --no-build-isolation -e .", lang=lang)]
    if package:  # the installed version, rebuilt from its source: never another release of it
        pinned = f"{package}==$(python -c \"import importlib.metadata as m; print(m.version('{package}'))\")"
        fixes.insert(
            0,
            fix(
                "Rebuild it from source for this GPU (TORCH_CUDA_ARCH_LIST)",
                *arch,
                "python -m pip install --no-build-isolation --no-deps --no-cache-dir --force-reinstall "
                f'--no-binary {package} "{pinned}"',
                lang=lang,
            ),
        )
    if "flags" in h.detail:
        why = msg(
            "{page} The paste builds it for chosen architectures ({flags}), which leave this GPU's out.",
            page=msg(NO_KERNELS.explanation),
            flags=h.detail["flags"],
        )
    else:
        why = msg(
            "{page} The failing call is the extension's own ({frame}).",
            page=msg(NO_KERNELS.explanation),
            frame=h.detail.get("frame", ""),
        )
    return NO_KERNELS.finding(title=title, why=why, fix=fixes)


_LIBSTDCXX = "\"$(ldconfig -p | awk '/libstdc\\+\\+\\.so\\.6 /{print $NF; exit}')\""


def libraries_side(f: Facts, kinds: dict[str, list[PasteHit]]) -> list[Finding]:
    """Extensions built, or torchvision installed, for another torch or CUDA."""
    from cudadoctor.rules.extensions import OTHER_CUDA
    from cudadoctor.rules.torch_packages import COMPANION

    out = []
    # the C or C++ runtime older than torch's own build needs: import torch fails (CD211); another library's
    # needs are not torch's import and get no finding here
    too_old = [h for h in kinds.get("runtime-too-old", []) if h.detail.get("torch") == "yes"]
    if too_old:
        out.append(_runtime_too_old(f, too_old[0]))
    if "extension-cuda-mismatch" in kinds:
        h = kinds["extension-cuda-mismatch"][0]
        nvcc, cuda = h.detail.get("nvcc", "?"), h.detail.get("torch", "?")
        out.append(
            OTHER_CUDA.finding(
                title=msg(
                    "The extension is being built with CUDA {nvcc} for a torch built with CUDA {cuda}",
                    nvcc=nvcc,
                    cuda=cuda,
                ),
                why=msg(
                    "torch.utils.cpp_extension refuses to build with a toolkit (nvcc, found through CUDA_HOME or "
                    "PATH) of another CUDA major version than torch's: the extension would link another CUDA "
                    "runtime than torch."
                ),
                fix=[
                    fix(
                        msg("Point the build at a toolkit of torch's CUDA"), f"export CUDA_HOME=/usr/local/cuda-{cuda}"
                    ),
                    fix(msg("Or install the torch built for the toolkit's CUDA"), "nvcc --version"),
                ],
            )
        )
    if "compile-toolchain-missing" in kinds:
        from cudadoctor.rules.torch_compile import COMPILE_FAILED, compiler_fix

        out.append(
            COMPILE_FAILED.finding(
                title=msg(
                    "torch.compile cannot build its kernels: {error}", error=kinds["compile-toolchain-missing"][0].text
                ),
                fix=[
                    *_triton_fixes(f, f.system is not None and f.system.os == "Windows"),
                    compiler_fix(f),
                    fix(msg("Or run without compiling"), "torch._dynamo.config.suppress_errors = True"),
                ],
            )
        )
    if "triton-mismatch" in kinds:
        out.append(_triton_mismatch(f, kinds["triton-mismatch"][0]))
    if "extension-no-kernel" in kinds:
        out.append(_extension_no_kernel(f, kinds["extension-no-kernel"][0]))
    elif "extension-arch-flags" in kinds and "no-kernel-image" in kinds:
        h = kinds["extension-arch-flags"][0]
        if _flags_leave_out(f, h.detail.get("archs", "").split()):
            out.append(_extension_no_kernel(f, h))
    if "torchvision-mismatch" in kinds:
        h = kinds["torchvision-mismatch"][0]
        out.append(
            COMPANION.finding(
                title=msg(
                    "torchvision has no CUDA kernel for {op}: a CPU-only torchvision, or one built for another torch",
                    op=h.detail.get("op", "?"),
                )
                if h.detail.get("backend") == "CUDA"
                else msg("torchvision's operators are missing: it was built for another torch ({error})", error=h.text),
                fix=[
                    fix(msg("See both versions"), "python -m pip list | grep -E '^(torch|torchvision) '"),
                    fix(
                        msg("Install the torchvision made for this torch, from the same index"),
                        "python -m pip install --force-reinstall torch torchvision --index-url "
                        "https://download.pytorch.org/whl/cu126",
                    ),
                ],
            )
        )
    return out
