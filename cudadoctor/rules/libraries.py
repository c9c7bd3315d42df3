"""Between torch and the driver: the CUDA libraries torch loaded, the nvidia-* wheels against torch's
pins, torchvision/torchaudio against torch and conda's CPU pins (shared cuda-facts §10);
torch.compile is rules/torch_compile.py."""

from __future__ import annotations

import ntpath
import posixpath
import re
from collections import defaultdict
from types import ModuleType

from cudadoctor.advice import install as install_advice
from cudadoctor.advice import shell
from cudadoctor.facts import Facts
from cudadoctor.facts.libraries import OWN_ORIGINS, LibraryFacts, LoadedLibrary, PinCheck
from cudadoctor.knowledge import library_defects, wheels
from cudadoctor.knowledge.versions import parse_version, version_at_least
from cudadoctor.model import Finding, Fix, Severity, Table
from cudadoctor.rules.catalogue import entry, fix, named

SECTION = "CUDA libraries"

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
PINS = entry(
    "CD219",
    "nvidia-wheels-differ-from-pins",
    Severity.WARNING,
    SECTION,
    "Installed nvidia-* wheels differ from the versions torch pins",
    """torch's Linux wheels pin every nvidia-*-cu12/-cu13 library in their Requires-Dist. Another package,
    a resolver or a manual upgrade that installs a different version mixes libraries built against each
    other's exact versions: `undefined symbol: __nvJitLinkComplete_12_4` (pytorch#134929),
    `ncclCommRegister` (pytorch#119932), `cuptiActivityEnableDriverApi` (pytorch#157381). The fix is the
    pinned versions, or removing every nvidia-* package and reinstalling torch (pytorch#104259).""",
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
TWO_TORCHES = entry(
    "CD221",
    "two-torch-installs",
    Severity.WARNING,
    SECTION,
    "Two torch installs are visible to this interpreter",
    """The user site-packages (~/.local/lib/pythonX.Y/site-packages, from `pip install --user` or a pip run
    outside any venv) comes before the environment's own site-packages on sys.path. A torch there hides
    the environment's torch, with its own CUDA build and its own nvidia-* libraries: the environment looks
    right and the wrong torch is imported.""",
)
COMPANION = entry(
    "CD222",
    "torchvision-torchaudio-mismatch",
    Severity.ERROR,
    SECTION,
    "torchvision or torchaudio was built for another torch",
    """torchvision and torchaudio contain C++/CUDA extensions compiled against one exact torch release and
    CUDA variant (their Requires-Dist pins `torch==X.Y.Z`; the local tag, +cu126, names the variant). A
    pair that does not match fails at import or at the first custom operator: `operator torchvision::nms
    does not exist`, `undefined symbol`, or a CUDA error in a torchvision kernel.""",
    beside_torch=True,
)
CONDA_CPU = entry(
    "CD223",
    "conda-cpuonly",
    Severity.WARNING,
    SECTION,
    "conda keeps this environment on a CPU build (cpuonly / pytorch-mutex cpu)",
    """The pytorch channel's `cpuonly` package pins `pytorch-mutex=*=cpu`; while either is installed, conda
    resolves every pytorch update to a CPU build again, whatever the command asks for (pytorch#92273,
    #39619).""",
)
CONDA_CHANNEL = entry(
    "CD224",
    "conda-pytorch-channel-deprecated",
    Severity.WARNING,
    SECTION,
    "torch comes from the deprecated `pytorch` conda channel",
    """PyTorch stopped publishing to its conda channel after 2.5 (pytorch#138506): nothing newer will
    come from `-c pytorch`. conda-forge's `pytorch-gpu` (with `cuda-version` to choose the CUDA) is the
    maintained conda route; pip wheels from download.pytorch.org are the other.""",
)
JETSON = entry(
    "CD225",
    "jetson-needs-jetpack-wheel",
    Severity.ERROR,
    SECTION,
    "On Jetson, torch must come from NVIDIA's JetPack wheels",
    """Jetson modules (JetPack / L4T) have an integrated GPU and their own CUDA stack. The aarch64 wheels on
    PyPI and download.pytorch.org target server GPUs (GH200, GB200) and are not built for Jetson; a torch
    from there runs on the CPU only. NVIDIA publishes torch wheels per JetPack release.""",
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


def _libs(f: Facts) -> LibraryFacts | None:
    t = f.torch
    return getattr(t, "libraries", None) if t is not None else None


def evaluate(f: Facts) -> list[Finding]:
    out: list[Finding] = []
    lf = _libs(f)
    if lf is not None:
        out += _stack(f, lf)
        out += _pins(f, lf)
        out += _old_toolkit(f, lf)
        out += _two_torches(f, lf)
        out += _companions(f, lf)
        out += _conda(f, lf)
        out += _jetson(f, lf)
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
    return {
        "wheel": f"wheel {lib.package}" if lib.package else "wheel (site-packages/nvidia)",
        "torch": "torch/lib",
        "env": "this environment",
        "ld_library_path": named("LD_LIBRARY_PATH", lib.via),
        "cuda_toolkit": named("CUDA toolkit", lib.via),
        "conda": named("another conda env", lib.via),
        "system": "system library path",
    }.get(lib.origin, "elsewhere")


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
            f"torch loaded {fams} from outside its environment: {shadows[0].path}"
            if len(shadows) == 1
            else f"torch loaded {len(shadows)} CUDA libraries ({fams}) from {where} instead of its own"
        )
        fixes = _shadow_fixes(f, origin, where, shadows[0].path)
        out.append(
            CUDNN_SHADOWED.finding(
                title=title,
                severity=sev,
                why=f"{CUDNN_SHADOWED.explanation} Found through: {_where(shadows[0])}.",
                fix=fixes,
                tables=[_table(shadows)],
            )
        )
    if not out:
        n = len(lf.loaded)
        out.append(
            STACK.finding(
                title=f"torch loaded {n} CUDA librar{'y' if n == 1 else 'ies'}, all from its own environment",
                tables=[_table(lf.loaded)],
            )
        )
    else:
        out.append(
            STACK.finding(
                title=f"The CUDA libraries torch loaded ({len(lf.loaded)})",
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
                f"Windows found {name} in {where} before torch\\lib: remove that directory from PATH, then check",
                f"where {name}",
                check,
            )
        ]
    if origin == "ld_library_path":
        return [
            fix(
                f"Drop {where} from LD_LIBRARY_PATH (torch finds its own copies without it), then check",
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


def _paths(f: Facts) -> ModuleType:
    """The path rules of the machine the facts came from, not of the one reading them (`check --from`)."""
    return ntpath if f.system is not None and f.system.os == "Windows" else posixpath


def _legacy_shadow(f: Facts) -> list[Finding]:
    """Facts saved before the library probe existed: the cuDNN-only check, at info level (unknown whether
    the environment had its own copy)."""
    t = f.torch
    assert t is not None and t.loaded_libraries
    path = _paths(f)
    own = [path.dirname(t.path)] if t.path else []
    own.append(path.dirname(path.dirname(t.python_executable)))
    foreign = [p for p in t.loaded_libraries.get("cudnn", []) if not any(p.startswith(o + path.sep) for o in own if o)]
    if not foreign:
        return []
    return [
        CUDNN_SHADOWED.finding(
            title=f"torch loaded a cuDNN from outside its environment: {foreign[0]}",
            severity=Severity.INFO,
            fix=[
                fix(
                    "Let the wheel's own cuDNN load: remove that directory from LD_LIBRARY_PATH",
                    "echo $LD_LIBRARY_PATH",
                )
            ],
        )
    ]


# --- pins -------------------------------------------------------------------------------------------


def _defect_fix(f: Facts, p: PinCheck) -> bool:
    """An nvidia-* wheel newer than torch's pin because the pinned release has a silent wrong-results
    defect on a GPU here (CD229's own fix): one story, not a pin problem."""
    family = re.sub(r"^nvidia-|-cu\d+$", "", p.package)
    pinned = re.sub(r"^[=<>!~]+", "", p.required)
    ccs = [d.compute_capability for d in (f.driver.devices if f.driver else [])]
    return any(
        (d := library_defects.affected(family, pinned, cc)) is not None
        and library_defects.affected(family, p.installed, cc) is None
        and version_at_least(p.installed, d.fixed)
        for cc in ccs
    )


def _pins(f: Facts, lf: LibraryFacts) -> list[Finding]:
    bad = [p for p in lf.pins or () if not p.ok and not _defect_fix(f, p)]
    if not bad:
        return []
    t = f.torch
    specs = [f"{p.package}{p.required}" for p in bad]
    sev = PINS.severity
    failure = lf.import_failure
    if failure is not None and failure.kind == "undefined_symbol":
        sev = Severity.ERROR
    missing = [p for p in bad if p.installed is None]
    differ = [p for p in bad if p.installed is not None]
    counts = ", ".join(([f"{len(differ)} differ"] if differ else []) + ([f"{len(missing)} missing"] if missing else []))
    torch_name = f"torch {t.version}" if t is not None and t.version else "torch"
    fixes = [
        fix(
            "Install the versions torch pins",
            install_advice.package_install(f, [f'"{s}"' for s in specs]),
        )
    ]
    clean = install_advice.reinstall_clean(f)
    if clean:
        fixes.append(fix("Or remove every nvidia-* package and reinstall torch, which brings its own set", *clean))
    return [
        PINS.finding(
            title=f"nvidia-* wheels do not match the pins of {torch_name} ({counts})",
            severity=sev,
            fix=fixes,
            tables=[
                Table(
                    ["Package", "torch requires", "Installed"],
                    [[p.package, p.required, p.installed or "missing"] for p in bad],
                )
            ],
        )
    ]


# --- LD_LIBRARY_PATH, two torches, companions -------------------------------------------------------


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
                title=f"LD_LIBRARY_PATH has CUDA {version} ({directory}); "
                f"{named('torch', t.version)} is built with CUDA {t.cuda}",
                severity=Severity.INFO if unsure else OLD_TOOLKIT_PATH.severity,
                fix=[
                    fix(
                        "Drop it from LD_LIBRARY_PATH for Python work",
                        drop_from_ld_library_path(directory),
                    ),
                    fix(
                        "Find where it is set",
                        FIND_LD,
                    ),
                ],
            )
        )
    return out


def _two_torches(f: Facts, lf: LibraryFacts) -> list[Finding]:
    installs = lf.torch_installs or []
    if len(installs) < 2:
        return []
    t = f.torch
    py = shell.word(t.python_executable, lead=True) if t else "python"
    imported = installs[0]
    rows = [[p, "imported" if i == 0 else "hidden"] for i, p in enumerate(installs)]
    fixes = []
    if lf.user_site_torch:
        fixes.append(
            fix(
                f"Remove the copy in the user site-packages ({lf.user_site_torch}): pip removes the first one on "
                "sys.path, the user site's",
                f"{py} -m pip uninstall -y torch torchvision torchaudio",
            )
        )
        fixes.append(fix("Or ignore the user site for this interpreter", "export PYTHONNOUSERSITE=1"))
    else:
        fixes.append(fix("See where each comes from", f'{py} -c "import sys; print(*sys.path, sep=chr(10))"'))
    return [
        TWO_TORCHES.finding(
            title=f"{len(installs)} torch installs are visible; {imported} is the one imported",
            fix=fixes,
            tables=[Table(["torch", "On sys.path"], rows)],
        )
    ]


def _companions(f: Facts, lf: LibraryFacts) -> list[Finding]:
    t = f.torch
    bad = [c for c in lf.companions or () if c.ok is False]
    if not bad or t is None or not t.version:
        return []
    rows = [[c.package, c.version, c.requires_torch or "?", c.expected or "?"] for c in bad]
    names = " and ".join(c.package for c in bad)
    return [
        COMPANION.finding(
            title=f"{names} {'do' if len(bad) > 1 else 'does'} not match {named('torch', t.version)}",
            fix=[fix("Install the matching pair from the same index", *install_advice.companion_commands(f, bad))],
            tables=[Table(["Package", "Installed", "Built for torch", f"Pairs with {t.version}"], rows)],
        )
    ]


# --- conda, Jetson ----------------------------------------------------------------------------------


def _conda(f: Facts, lf: LibraryFacts) -> list[Finding]:
    m = lf.manager
    if m is None:
        return []
    out = []
    tool = m.conda_frontend or "conda"
    if m.cpuonly:
        names = " ".join(x.split()[0] for x in m.cpuonly)
        label = "Remove the CPU pins, then install a CUDA build"
        install = install_advice.advise(f).commands
        if not install:  # removing the pins alone would leave no torch
            steps, label = [], f"{label}: which one fits is not known here; run every check to see it"
        elif install_advice.installer(f) == "conda":
            steps = install_advice.conda_forge_commands(f)  # its remove takes the pins with it
        else:
            steps = [f"{tool} remove -p {shell.word(m.prefix or '')} -y {names}", *install]
        out.append(
            CONDA_CPU.finding(
                title=f"{' and '.join(m.cpuonly)} installed" + (f" in {m.prefix}" if m.prefix else ""),
                fix=[fix(label, *steps)],
            )
        )
    if m.pytorch_channel:
        out.append(
            CONDA_CHANNEL.finding(
                title=f"torch{f' in {m.prefix}' if m.prefix else ''} comes from the pytorch conda channel, "
                "which has no release after 2.5",
                fix=[
                    fix("Move to conda-forge's pytorch-gpu", *steps)
                    if (steps := install_advice.conda_forge_commands(f))
                    else fix("Move to conda-forge's pytorch-gpu: which build fits is not known here; run every check")
                ],
                tables=[Table(["Evidence"], [[e] for e in m.pytorch_channel])],
            )
        )
    return out


def _jetson(f: Facts, lf: LibraryFacts) -> list[Finding]:
    t = f.torch
    if not lf.jetson or t is None or not t.installed or t.version is None:
        return []
    if t.cuda_built and t.is_available is not False:
        return []
    return [
        JETSON.finding(
            title=f"{named('torch', t.version)} on a Jetson ({lf.jetson}) cannot use its GPU",
            why=f"{JETSON.explanation} {wheels.platform_note('Linux', 'aarch64', jetson=True)}",
            fix=[
                fix(
                    "Install the torch wheel NVIDIA built for this JetPack release (see the page for the URL)",
                    f"{shell.word(t.python_executable, lead=True)} -m pip uninstall -y torch",
                    f"xdg-open {wheels.JETSON_WHEELS}",
                )
            ],
        )
    ]


# --- import failures (CD211 in rules/torch_build.py asks here for the details) -----------------------

VC_REDIST = "https://aka.ms/vc14/vc_redist.x64.exe"


def import_failure_detail(f: Facts) -> tuple[str, str, list[Fix]] | None:
    """(title, why, fixes) for an `import torch` that failed on a library; None when it is not that."""
    lf = _libs(f)
    failure = lf.import_failure if lf is not None else None
    t = f.torch
    if failure is None or t is None or failure.kind == "other":
        return None
    fixes: list[Fix] = []
    if failure.kind == "undefined_symbol":
        fam = failure.family or "another library"
        title = f"{failure.library or 'a library'}: {named('undefined symbol', failure.symbol)}"
        if failure.loaded_instead:
            title += f" ({fam} loaded from {failure.loaded_instead})"
        why = f"{failure.library or 'A library'} needs {failure.symbol or 'a symbol'} from {fam}"
        if failure.loaded_instead:
            why += (
                f", but the {fam} that was loaded is {failure.loaded_instead}"
                + (f" ({failure.loaded_origin})" if failure.loaded_origin else "")
                + ", "
                "not the one it was built with."
            )
            if failure.loaded_origin == "ld_library_path":
                d = _paths(f).dirname(failure.loaded_instead)
                fixes.append(
                    fix(
                        f"Drop {d} from LD_LIBRARY_PATH so the wheel's own {fam} loads",
                        drop_from_ld_library_path(d),
                    )
                )
        else:
            why += (
                ": the copy found first does not define it (a mixed set of nvidia-* wheels, or an older copy "
                "first on LD_LIBRARY_PATH)."
            )
        bad = [p for p in (lf.pins or ()) if not p.ok] if lf else []
        if bad:
            why += f" {len(bad)} nvidia-* package(s) differ from torch's pins (CD219)."
            fixes.append(
                fix(
                    "Install the versions torch pins",
                    install_advice.package_install(f, [f'"{p.package}{p.required}"' for p in bad]),
                )
            )
        clean = install_advice.reinstall_clean(f)
        if clean:
            fixes.append(fix("Or remove every nvidia-* package and reinstall torch (pytorch#104259)", *clean))
        return title, why, fixes
    if failure.kind == "missing_library":
        title = f"{failure.library} cannot be found"
        why = (
            f"torch needs {failure.library} ({failure.family or 'a CUDA library'}); the nvidia-* wheel that carries it "
            "is missing (torch installed with --no-deps, or the package removed), or, for a build that uses the "
            "system's libraries, that library is not installed."
        )
        clean = install_advice.reinstall_clean(f)
        if clean:
            fixes.append(fix("Reinstall torch with its own libraries", *clean[1:]))
        return title, why, fixes
    # Windows: "[WinError 126] … Error loading "…\\torch\\lib\\c10.dll" or one of its dependencies"
    lib = failure.library or "a DLL"
    if failure.family is None:
        title = f"{lib} or one of its dependencies cannot be loaded (Windows)"
        why = (
            f"Windows could not load {lib}: most often the Microsoft Visual C++ Redistributable is missing or too old "
            "(pytorch#126507, #131662)."
        )
        fixes.append(
            fix(
                "Install the latest Microsoft Visual C++ Redistributable (x64), then open a new terminal",
                "winget install --id Microsoft.VCRedist.2015+.x64",
            )
        )
        fixes.append(fix("Or download it", f"start {VC_REDIST}"))
    else:
        title = f"{lib} cannot be loaded (Windows)"
        why = (
            f"torch's own {failure.family} DLL is in torch\\lib; an older CUDA or cuDNN directory on PATH, or a "
            "damaged install, makes Windows load or fail on another copy."
        )
        fixes.append(fix(f"See which {lib} Windows finds first", f"where {lib}"))
    return title, why, fixes


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
                title=f"{lib.family} {lib.version} gives silently wrong results on {names}: fixed in {defect.fixed}",
                fix=fixes,
            )
        )
    return out
