"""The CUDA libraries torch loaded: where each came from, a copy from outside the environment that shadows
the wheel's own (CD208), an older toolkit on LD_LIBRARY_PATH (CD220), a release with a known silent
wrong-results defect (CD229). The packages beside torch (nvidia-* pins, torchvision/torchaudio, conda,
Jetson) are rules/torch_packages.py; torch.compile is rules/torch_compile.py."""

from __future__ import annotations

import ntpath
import posixpath
import re
from collections import defaultdict
from types import ModuleType

from cudadoctor.advice import install as install_advice
from cudadoctor.advice import shell
from cudadoctor.facts import Facts
from cudadoctor.facts.libraries import OWN_ORIGINS, LibraryFacts, LoadedLibrary
from cudadoctor.knowledge import library_defects
from cudadoctor.knowledge.versions import parse_version
from cudadoctor.model import Finding, Fix, Severity, Table, msg, msg_n
from cudadoctor.rules import torch_packages
from cudadoctor.rules.catalogue import entry, fix, named

SECTION = torch_packages.SECTION

CUDNN_SHADOWED = entry(
    "CD208",
    "cudnn-shadowed",
    Severity.WARNING,
    "CUDA libraries",
    "A CUDA library from outside the environment shadows the wheel's own",
    """pip wheels bring their own CUDA libraries (cuDNN, cuBLAS, NCCL, nvJitLink, … in nvidia-*-cu12/-cu13
    packages). A copy found first through LD_LIBRARY_PATH, another conda environment, a CUDA toolkit or
    the system library path is loaded instead, and a version mismatch shows up as `undefined symbol`
    errors at import, cuDNN errors or silent slowdowns. One finding per place the copies came from
    (rules/libraries.py); the first version of this check looked at cuDNN only.""",
)

STACK = entry(
    "CD218",
    "cuda-library-stack",
    Severity.OK,
    SECTION,
    "The CUDA libraries torch loaded",
    """Each CUDA library family torch uses (cudart, cuBLAS, cuDNN, cuFFT, cuRAND, cuSOLVER, cuSPARSE, NCCL,
    nvJitLink, NVRTC, CUPTI, NVTX): the file the process actually loaded, its version and where it came
    from. A pip wheel's own copies live in site-packages/nvidia/*/lib (or torch/lib); a conda build's in
    the environment's lib directory.""",
)

OLD_TOOLKIT_PATH = entry(
    "CD220",
    "ld-library-path-older-toolkit",
    Severity.WARNING,
    SECTION,
    "LD_LIBRARY_PATH points at a CUDA toolkit older than torch's",
    """Directories in LD_LIBRARY_PATH are searched before the paths a wheel records for its own libraries.
    A toolkit older than the one torch was built with shadows any library torch has not loaded yet, or
    that a later import (an extension, a second framework) pulls in: the classic source of
    `undefined symbol` errors. torch does not need a system toolkit to run.""",
)

SILENT_WRONG = entry(
    "CD229",
    "cuda-library-silent-wrong-results",
    Severity.WARNING,
    SECTION,
    "The CUDA library torch loaded has a known silent wrong-results defect on this GPU",
    """Some CUDA library releases compute wrong results on some GPU architectures without raising any
    error: training diverges or gives NaNs, inference is subtly off. cuBLAS before 13.1.0.3 does so on
    compute capability 10.x and 11.x (B200, GB200, B300, Thor) when a cublasLt matmul runs concurrently
    with another kernel that uses Tensor Memory (cuBLAS patch release notes; pytorch PR#178333, which
    moved torch's CUDA 13.0 builds to cuBLAS 13.1.0.3). cuBLAS ships such patch releases as its own
    nvidia-cublas wheel, apart from the toolkit.""",
)


def library_facts(f: Facts) -> LibraryFacts | None:
    t = f.torch
    return getattr(t, "libraries", None) if t is not None else None


def evaluate(f: Facts) -> list[Finding]:
    out: list[Finding] = []
    lf = library_facts(f)
    if lf is not None:
        out += _stack(f, lf)
        out += torch_packages.pins(f, lf)
        out += _old_toolkit(f, lf)
        out += torch_packages.two_torches(f, lf)
        out += torch_packages.companions(f, lf)
        out += torch_packages.conda(f, lf)
        out += torch_packages.jetson(f, lf)
        out += _defects(f, lf)
    elif f.torch is not None and f.torch.loaded_libraries:
        out += _legacy_shadow(f)
    return out


# --- the stack and what shadows it ------------------------------------------------------------------


FIND_LD = "grep -n LD_LIBRARY_PATH ~/.bashrc ~/.profile /etc/profile.d/* 2>/dev/null"


def drop_from_ld_library_path(directory: str) -> str:
    """A bash command that removes one entry from LD_LIBRARY_PATH in this shell."""
    return f'export LD_LIBRARY_PATH="$(echo "$LD_LIBRARY_PATH" | tr : "\\n" | grep -vxF "{directory}" | paste -sd:)"'


def _where(lib: LoadedLibrary) -> str:
    """How the loader found a copy, for CD208's page."""
    if lib.origin == "wheel":
        return msg("wheel {package}", package=lib.package) if lib.package else msg("wheel (site-packages/nvidia)")
    if lib.origin in ("cuda_toolkit", "conda") and lib.via:
        return msg("CUDA toolkit {path}" if lib.origin == "cuda_toolkit" else "another conda env {path}", path=lib.via)
    return {
        "torch": "torch/lib",
        "env": msg("this environment"),
        "ld_library_path": named("LD_LIBRARY_PATH", lib.via),
        "cuda_toolkit": msg("CUDA toolkit"),
        "conda": msg("another conda env"),
        "system": msg("system library path"),
    }.get(lib.origin, msg("elsewhere"))


def _cause(lib: LoadedLibrary) -> tuple[str, str]:
    """(root-cause key, its directory): one finding per LD_LIBRARY_PATH entry, toolkit, prefix or dir."""
    cut = max(lib.path.rfind("/"), lib.path.rfind("\\"))  # Windows paths too, whatever OS replays them
    return lib.origin, lib.via or (lib.path[:cut] if cut > 0 else lib.path)


# The nvidia-* wheel that carries each family (cu12 and cu13 names alike; cusparseLt: nvidia-cusparselt).
WHEEL_OF_FAMILY = {
    "cudart": "nvidia-cuda-runtime",
    "cublas": "nvidia-cublas",
    "cudnn": "nvidia-cudnn",
    "cufft": "nvidia-cufft",
    "curand": "nvidia-curand",
    "cusolver": "nvidia-cusolver",
    "cusparse": "nvidia-cusparse",
    "nccl": "nvidia-nccl",
    "nvjitlink": "nvidia-nvjitlink",
    "nvrtc": "nvidia-cuda-nvrtc",
    "cupti": "nvidia-cuda-cupti",
    "nvtx": "nvidia-nvtx",
}


def _own_families(lf: LibraryFacts) -> set[str] | None:
    """Families the environment carries itself (its nvidia-* wheels, torch/lib, or a loaded own copy)."""
    if lf.nvidia_installed is None:
        return None
    fams = {lib.family for lib in lf.loaded or () if lib.origin in OWN_ORIGINS}
    for family, wheel in WHEEL_OF_FAMILY.items():
        if any(n.startswith(wheel + "-cu") or n == wheel for n in lf.nvidia_installed):
            fams.add(family)
    return fams


def _stack(f: Facts, lf: LibraryFacts) -> list[Finding]:
    if not lf.loaded:
        return []
    out: list[Finding] = []
    own = _own_families(lf)
    foreign = [lib for lib in lf.loaded if lib.origin not in OWN_ORIGINS]
    groups: dict[tuple[str, str], list[LoadedLibrary]] = defaultdict(list)
    for lib in foreign:
        groups[_cause(lib)].append(lib)
    for (origin, where), libs in groups.items():
        shadows = [lib for lib in libs if own is None or lib.family in own]
        if not shadows:
            continue
        fams = ", ".join(sorted({lib.family for lib in shadows}))
        sev = Severity.WARNING if own is not None else Severity.INFO
        title = (
            msg("torch loaded {families} from outside its environment: {path}", families=fams, path=shadows[0].path)
            if len(shadows) == 1
            else msg(
                "torch loaded {n} CUDA libraries ({families}) from {path} instead of its own",
                n=len(shadows),
                families=fams,
                path=where,
            )
        )
        fixes = _shadow_fixes(f, origin, where, shadows[0].path)
        out.append(
            CUDNN_SHADOWED.finding(
                title=title,
                severity=sev,
                why=msg(
                    "{page} Found through: {where}.", page=msg(CUDNN_SHADOWED.explanation), where=_where(shadows[0])
                ),
                fix=fixes,
                tables=[_table(shadows)],
            )
        )
    n = len(lf.loaded)
    if not out:
        out.append(
            STACK.finding(
                title=msg_n(
                    "torch loaded {n} CUDA library, all from its own environment",
                    "torch loaded {n} CUDA libraries, all from its own environment",
                    n,
                    n=n,
                ),
                tables=[_table(lf.loaded)],
            )
        )
    else:
        out.append(
            STACK.finding(
                title=msg("The CUDA libraries torch loaded ({n})", n=n),
                severity=Severity.INFO,
                tables=[_table(lf.loaded)],
            )
        )
    return out


_SHORT = {
    "torch": "torch/lib",
    "env": "this env",
    "ld_library_path": "LD_LIBRARY_PATH",
    "cuda_toolkit": "CUDA toolkit",
    "conda": "other conda env",
    "system": "system",
}


def _short_name(path: str) -> str:
    """ "/x/libcublasLt.so.13" -> "cublasLt"; "C:\\x\\cudnn_graph64_9.dll" -> "cudnn_graph64_9": the file, not
    its family, so libcublas and libcublasLt are two rows that say which is which."""
    base = re.split(r"[\\/]", path)[-1]
    base = re.sub(r"\.(so(\.[\d.]*)?|dll|dylib)$", "", base, flags=re.I)
    return base[3:] if base.startswith("lib") else base


def _table(libs: list[LoadedLibrary]) -> Table:
    """The stack as data; the File column (cut from the left when narrow: the end of a path says most)
    says where, From says how it was found."""
    return Table(
        ["Library", "Version", "From", "File<"],
        [
            [_short_name(lib.path), lib.version or "?", lib.package or _SHORT.get(lib.origin, "elsewhere"), lib.path]
            for lib in libs
        ],
    )


def _shadow_fixes(f: Facts, origin: str, where: str, path: str) -> list[Fix]:
    py = shell.word(f.torch.python_executable, lead=True) if f.torch else "python"
    check = f'{py} -c "import torch, torch.cuda; print(torch.cuda.is_available())"'
    if f.system is not None and f.system.os == "Windows":
        name = path.replace("\\", "/").rsplit("/", 1)[-1]
        return [
            fix(
                msg(
                    "Windows found {name} in {path} before torch\\lib: remove that directory from PATH, then check",
                    name=name,
                    path=where,
                ),
                f"where {name}",
                check,
            )
        ]
    if origin == "ld_library_path":
        return [
            fix(
                msg("Drop {path} from LD_LIBRARY_PATH (torch finds its own copies without it), then check", path=where),
                drop_from_ld_library_path(where),
                check,
            ),
            fix("Find where it is set", FIND_LD),
        ]
    if origin == "system":
        return [
            fix(
                "A system copy was found before the wheel's: see which configuration puts it first",
                "ldconfig -p | grep -E 'libcu|libnccl|libnvJitLink'",
                "echo $LD_PRELOAD",
            )
        ]
    return [fix("Unset the variables that point there, then check", "env | grep -E 'LD_|CUDA'", check)]


def path_rules(f: Facts) -> ModuleType:
    """The path rules of the machine the facts came from, not of the one reading them (`check --from`)."""
    return ntpath if f.system is not None and f.system.os == "Windows" else posixpath


def _legacy_shadow(f: Facts) -> list[Finding]:
    """Facts saved before the library probe existed: the cuDNN-only check, at info level (unknown whether
    the environment had its own copy)."""
    t = f.torch
    assert t is not None and t.loaded_libraries
    path = path_rules(f)
    own = [path.dirname(t.path)] if t.path else []
    own.append(path.dirname(path.dirname(t.python_executable)))
    foreign = [p for p in t.loaded_libraries.get("cudnn", []) if not any(p.startswith(o + path.sep) for o in own if o)]
    if not foreign:
        return []
    return [
        CUDNN_SHADOWED.finding(
            title=msg("torch loaded a cuDNN from outside its environment: {path}", path=foreign[0]),
            severity=Severity.INFO,
            fix=[
                fix(
                    "Let the wheel's own cuDNN load: remove that directory from LD_LIBRARY_PATH",
                    "echo $LD_LIBRARY_PATH",
                )
            ],
        )
    ]


# --- an older toolkit on LD_LIBRARY_PATH --------------------------------------------------------------


def _old_toolkit(f: Facts, lf: LibraryFacts) -> list[Finding]:
    t = f.torch
    wheel = parse_version(t.cuda) if t and t.cuda else None
    if not wheel or not lf.stale_toolkits:
        return []
    shadowing = {lib.via for lib in lf.loaded or () if lib.origin == "ld_library_path"}
    # which libraries came through LD_LIBRARY_PATH is unknown: this may be CD208's directory, told here
    # at info level (knowing less never adds a warning)
    unsure = lf.loaded is None or None in shadowing
    out = []
    for item in lf.stale_toolkits:
        directory, _, version = item.rpartition("=")
        have = parse_version(version)
        if not have or have[:2] >= wheel[:2] or directory in shadowing:
            continue
        out.append(
            OLD_TOOLKIT_PATH.finding(
                title=msg(
                    "LD_LIBRARY_PATH has CUDA {version} ({path}); {torch} is built with CUDA {cuda}",
                    version=version,
                    path=directory,
                    torch=named("torch", t.version),
                    cuda=t.cuda,
                ),
                severity=Severity.INFO if unsure else OLD_TOOLKIT_PATH.severity,
                fix=[
                    fix("Drop it from LD_LIBRARY_PATH for Python work", drop_from_ld_library_path(directory)),
                    fix("Find where it is set", FIND_LD),
                ],
            )
        )
    return out


# --- releases with a known silent wrong-results defect (knowledge/library_defects.py) -----------------


def _defects(f: Facts, lf: LibraryFacts) -> list[Finding]:
    gpus = [(d.name or f"GPU {d.index}", d.compute_capability) for d in (f.driver.devices if f.driver else [])]
    out: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for lib in lf.loaded or ():
        hits = [(name, d) for name, cc in gpus if (d := library_defects.affected(lib.family, lib.version, cc))]
        if not hits or (lib.family, lib.version or "") in seen:
            continue
        seen.add((lib.family, lib.version or ""))
        defect = hits[0][1]
        names = ", ".join(dict.fromkeys(name for name, _ in hits))
        if lib.origin == "wheel":
            fixes = [
                fix(
                    "Install the cuBLAS patch release that fixes it (the drop-in fix PyTorch gave its CUDA 13.0 "
                    "builds); torch's pin may then differ, which is expected",
                    install_advice.package_install(f, [f'"nvidia-{lib.family}>={defect.fixed}"']),
                )
            ]
        else:
            fixes = [
                fix(
                    "See which file it is, and replace it with the release that fixes it",
                    f"ls -l {shell.word(lib.path)}",
                )
            ]
        out.append(
            SILENT_WRONG.finding(
                title=msg(
                    "{library} {version} gives silently wrong results on {gpus}: fixed in {fixed}",
                    library=lib.family,
                    version=lib.version,
                    gpus=names,
                    fixed=defect.fixed,
                ),
                fix=fixes,
            )
        )
    return out
