"""Whether torch is installed and imports, and whether it is a CUDA build at all: not installed, the torch
check that hung or crashed, an import that fails (on a library: which one and why), a CPU-only or ROCm build.
Their install fixes (advice/install.py) serve rules/torch_build.py too, which composes them."""

from __future__ import annotations

from cudadoctor.advice import install as install_advice
from cudadoctor.advice import shell
from cudadoctor.advice.install import (
    Advice,
    advice_fixes,
    advise,
    cpu_install,
    environment_unknowns,
    externally_managed,
)
from cudadoctor.advice.text import not_known
from cudadoctor.facts import Facts, TorchFacts
from cudadoctor.facts.libraries import ImportFailure
from cudadoctor.knowledge import wheels
from cudadoctor.model import Finding, Fix, Severity, msg
from cudadoctor.rules.catalogue import TORCH_BUILD, entry, fix, named
from cudadoctor.rules.libraries import drop_from_ld_library_path, library_facts, path_rules
from cudadoctor.rules.predicates import driver_with_gpu, gpu_presence

NOT_INSTALLED = entry(
    "CD201",
    "torch-not-installed",
    Severity.ERROR,
    "PyTorch",
    "PyTorch is not installed in the target interpreter",
    """The interpreter cudadoctor diagnosed (the one running it, or --python) cannot import torch. If torch
    lives in another environment, point cudadoctor at it with --python.""",
)

CPU_ONLY = entry(
    "CD202",
    "cpu-only-wheel",
    Severity.ERROR,
    "PyTorch",
    "A CPU-only PyTorch is installed, but this machine has an NVIDIA GPU",
    """This torch build has no CUDA support at all (torch.version.cuda is None), so it will never use
    the GPU, whatever the driver. The fix is a CUDA build of the same torch version.""",
    breaks=(TORCH_BUILD,),
)

IMPORT_FAILED = entry(
    "CD211",
    "torch-import-failed",
    Severity.ERROR,
    "PyTorch",
    "import torch fails",
    """torch is installed but raises on import: a broken or half-upgraded install, missing shared
    libraries, or a wheel for another Python version.""",
    breaks=(TORCH_BUILD,),
)

TORCH_PROBE_FAILED = entry(
    "CD212",
    "torch-probe-failed",
    Severity.ERROR,
    "PyTorch",
    "The torch check did not finish",
    """The child process that imports torch and initialises CUDA hung or died. A hang in CUDA
    initialisation usually means a stuck driver; a crash, a broken install.""",
)

ROCM_BUILD = entry(
    "CD213",
    "rocm-build-on-nvidia",
    Severity.ERROR,
    "PyTorch",
    "A ROCm (AMD) build of torch is installed on an NVIDIA machine",
    """ROCm builds of torch drive AMD GPUs through HIP; they cannot use an NVIDIA GPU.""",
    breaks=(TORCH_BUILD,),
)

CODE_ADVICE = entry(
    "CD214",
    "cpu-fallback-code",
    Severity.INFO,
    "PyTorch",
    "No usable GPU: write code that falls back to the CPU",
    """Code that hard-codes "cuda" or loads GPU-saved checkpoints without map_location fails here
    ("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False").""",
)

CPU_NO_GPU = entry(
    "CD216",
    "cpu-build-no-gpu",
    Severity.INFO,
    "PyTorch",
    "A CPU-only PyTorch, and no NVIDIA GPU to use: consistent",
    """This torch build has no CUDA support, which is right for a machine without an NVIDIA GPU.""",
)


def gpus_present(f: Facts) -> bool:
    """NVML itself reports GPUs (the strongest evidence a CUDA build is wanted here)."""
    return bool(f.driver and f.driver.init_status == "ok" and f.driver.device_count)


def torch_name(t: TorchFacts) -> str:
    """ "torch 2.5.1+cu124", or "torch" where a paste did not show the version."""
    return named("torch", t.version)


def _not_known(label: str, unknown: list[str]) -> Fix:
    """A fix with no command: what it would be computed from is not known (a guess could be wrong)."""
    return Fix(when=not_known(label, unknown))


def _install_fix(f: Facts, t: TorchFacts) -> list[Fix]:
    """Install torch where there is none: the CUDA build for these GPUs and this driver, the CPU build where
    there is no NVIDIA GPU, and no command while whether there is one is unknown (--only torch skips the
    driver and PCI checks: a CPU build there would be wrong on a GPU machine)."""
    label = msg("Install the build that fits this machine")
    present = gpu_presence(f)
    if present is None:
        return [fix(msg("{label}: whether it has an NVIDIA GPU is not known; run every check to see it", label=label))]
    if present:
        return advice_fix(advise(f), label)[:1]
    cmds = cpu_install(f)
    if not cmds:
        return [_not_known(label, environment_unknowns(f))]
    if externally_managed(f):
        label = msg(
            "{label} ({python} is externally managed (PEP 668): pip installs into a new venv)",
            label=label,
            python=t.python_executable,
        )
    return [fix(label, *cmds)]


def advice_fix(advice: Advice, label: str) -> list[Fix]:
    """The fixes of an install advice (advice/install.py builds them as templates)."""
    return advice_fixes(advice, label)


def _by_hand(t: TorchFacts, label: str) -> Fix:
    return fix(
        label,
        shell.word(t.python_executable, lead=True) + ' -c "import torch; print(torch.cuda.is_available())"',
    )


def _timed_out(f: Facts, t: TorchFacts) -> Finding:
    # a stuck driver is a likely reason only where a driver with a GPU is in use (or that is unknown)
    driver = driver_with_gpu(f) is not False
    hung = t.version and t.is_available is None
    return TORCH_PROBE_FAILED.finding(
        title=msg(
            "The torch child process did not finish in time (CUDA initialisation hung)"
            if hung
            else "The torch child process did not finish in time"
        ),
        why=None
        if driver
        else msg(
            "{page} No NVIDIA driver or GPU is in use here, so no driver hung: importing torch outlasted the bound "
            "(a --timeout shorter than the check's own, a slow or network file system).",
            page=msg(TORCH_PROBE_FAILED.explanation),
        ),
        fix=[
            _by_hand(t, msg("Try it by hand and see where it stops")),
            *([fix("Look for driver errors", "sudo dmesg -T | grep -i -E 'NVRM|Xid' | tail")] if driver else []),
        ],
    )


def _import_failed(f: Facts, t: TorchFacts) -> Finding:
    detail = import_failure_detail(f)
    return IMPORT_FAILED.finding(
        title=msg("import torch fails: {detail}", detail=detail[0] if detail else t.import_error),
        why=msg(
            "{page} {detail} The error: {error}",
            page=msg(IMPORT_FAILED.explanation),
            detail=detail[1],
            error=t.import_error,
        )
        if detail
        else None,
        fix=[
            *(detail[2] if detail else []),
            fix(
                "Reinstall torch cleanly in this environment",
                f"{shell.word(t.python_executable, lead=True)} -m pip uninstall -y torch",
                *advise(f).commands[-1:],
            ),
        ],
    )


def install_findings(f: Facts, t: TorchFacts) -> tuple[list[Finding], bool]:
    """What is wrong before the build is judged (a check that did not finish, an import that fails, no
    torch, a ROCm build), and whether that is all there is to say (True: judge no build)."""
    if t.timed_out:
        return [_timed_out(f, t)], True
    if t.import_error and t.installed:
        return [_import_failed(f, t)], True
    if t.installed is None:
        # the child never said whether torch imports: its own failure, never "not installed"
        if t.child_error:
            return [
                TORCH_PROBE_FAILED.finding(title=msg("The torch check did not finish: {error}", error=t.child_error))
            ], True
        if t.version is None:
            return [], True  # nothing known about torch: nothing to say
    if t.installed is False:
        fixes = [
            *_install_fix(f, t),
            fix(
                "Or diagnose the environment where torch is installed",
                "cudadoctor check --python /path/to/venv/bin/python",
            ),
        ]
        title = msg("PyTorch is not installed in {python}", python=t.python_executable)
        return [NOT_INSTALLED.finding(title=title, fix=fixes)], True
    if t.child_error and not t.version:
        return [TORCH_PROBE_FAILED.finding(title=msg("The torch check failed: {error}", error=t.child_error))], True
    out: list[Finding] = []
    if t.child_error and not t.complete:
        # it crashed (or flooded, or printed garbage) after the CUDA-free facts: say so, judge what came back
        out.append(
            TORCH_PROBE_FAILED.finding(
                title=msg("The torch check failed part-way: {error}", error=t.child_error),
                fix=[_by_hand(t, msg("Run the same steps by hand and see where it stops"))],
            )
        )
    if t.hip and gpu_presence(f) is not True:
        return out, True  # a ROCm build where no NVIDIA GPU is known: an AMD machine, not cudadoctor's to judge
    if t.hip:
        title = msg("{torch} is a ROCm {hip} build", torch=torch_name(t), hip=t.hip)
        out.append(ROCM_BUILD.finding(title=title, fix=advice_fix(advise(f), msg("Install a CUDA build"))))
        return out, True
    return out, False


# PEP 817 ("Wheel Variants", wheelnext/wheelnext docs/proposals/pep817_wheel_variant_support.md, "Null
# variant"): a variant-enabled installer picks the null variant when no variant suits the machine it runs
# on; PyTorch's CPU-only build is its null variant (same PEP, "PyTorch CPU/GPU variants"; astral.sh/blog/
# wheel-variants: the experimental uv picks torch's build from the machine's GPU).
NULL_VARIANT = msg(
    "This torch is the null variant of a variant wheel (PEP 817, WheelNext): the variant-enabled installer "
    "picked the CPU-only build because, where it ran, its NVIDIA plug-in found no variant the machine could "
    "use (no GPU visible, as in a `docker build`, or a driver older than every CUDA variant). The install "
    "below names the CUDA build itself, so no plug-in chooses."
)


def cpu_build(f: Facts, t: TorchFacts) -> list[Finding]:
    """A torch without CUDA: wrong where NVML reports GPUs, right (CD216) where there is none."""
    if t.libraries is not None and t.libraries.jetson and not gpus_present(f):
        return []  # CD225 (rules/torch_packages.py): a Jetson's integrated GPU, which the PCI scan does not show
    # a paste with no NVML verdict that names the GPU ("I have an RTX 3060"): the machine has one, by the
    # poster's word, with the line it came from in CD900 (a live check's CPU torch names no devices)
    named = f.driver is None and any(d.capability for d in t.devices)
    if gpus_present(f) or named:
        advice = advise(f)
        variant = advice.variant.name if advice.variant else None  # the note names the fix's index
        note = wheels.platform_note(f.system.os, f.system.machine, variant=variant) if f.system else None
        why = msg("{page} {note}", page=msg(CPU_ONLY.explanation), note=msg(note)) if note else None
        if t.torch_variant is not None and t.torch_variant.label == "null":
            why = msg("{page} {note}", page=why or msg(CPU_ONLY.explanation), note=NULL_VARIANT)
        return [
            CPU_ONLY.finding(
                title=msg("{torch} is a CPU-only build, but this machine has an NVIDIA GPU", torch=torch_name(t)),
                why=why,
                fix=advice_fix(advice, msg("Install the CUDA build for this driver")),
            )
        ]
    if f.system is not None and f.system.os == "Darwin":
        title = msg(
            "{torch} on macOS: MPS available" if t.mps_available else "{torch} on macOS: MPS not available",
            torch=torch_name(t),
        )
        return [CPU_NO_GPU.finding(title=title)]
    if gpu_presence(f) is None:
        return [
            CPU_NO_GPU.finding(
                title=msg(
                    "{torch} is a CPU-only build; whether this machine has an NVIDIA GPU is unknown",
                    torch=torch_name(t),
                ),
                why=msg(
                    "The driver and PCI checks did not run or did not finish, so the doctor cannot tell whether "
                    "a CUDA build would help here."
                ),
            )
        ]
    return [
        CPU_NO_GPU.finding(
            title=msg("{torch} is a CPU-only build, and there is no NVIDIA GPU to use", torch=torch_name(t))
        )
    ]


def code_advice(f: Facts, t: TorchFacts) -> list[Finding]:
    """CD214: no usable GPU, so code that assumes one fails; with no GPU at all CD108 gives the same advice."""
    no_gpu_at_all = gpu_presence(f) is False
    mps = f.system is not None and f.system.os == "Darwin" and t.mps_available
    if t.is_available is not False or mps or no_gpu_at_all:
        return []
    return [
        CODE_ADVICE.finding(
            fix=[
                fix(
                    "Pick the device at run time",
                    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
                ),
                fix("Load checkpoints saved on a GPU", "torch.load(path, map_location='cpu')"),
            ]
        )
    ]


# --- an import that fails on a library (CD211's details) ---------------------------------------------

VC_REDIST = "https://aka.ms/vc14/vc_redist.x64.exe"


def import_failure_detail(f: Facts) -> tuple[str, str, list[Fix]] | None:
    """(title, why, fixes) for an `import torch` that failed on a library; None when it is not that."""
    lf = library_facts(f)
    failure = lf.import_failure if lf is not None else None
    t = f.torch
    if failure is None or t is None or failure.kind == "other":
        return None
    if failure.kind == "undefined_symbol":
        return _undefined_symbol(f, failure)
    if failure.kind == "missing_library":
        fixes: list[Fix] = []
        clean = install_advice.reinstall_clean(f)
        if clean:
            fixes.append(fix("Reinstall torch with its own libraries", *clean[1:]))
        why = msg(
            "torch needs {library} ({family}); the nvidia-* wheel that carries it is missing (torch installed with "
            "--no-deps, or the package removed), or, for a build that uses the system's libraries, that library is "
            "not installed.",
            library=failure.library,
            family=failure.family or msg("a CUDA library"),
        )
        return msg("{library} cannot be found", library=failure.library), why, fixes
    return _windows_dll(failure)


def _undefined_symbol(f: Facts, failure: ImportFailure) -> tuple[str, str, list[Fix]]:
    fixes: list[Fix] = []
    fam = failure.family or msg("another library")
    args = {"library": failure.library or msg("a library"), "family": fam, "path": failure.loaded_instead}
    if failure.symbol:
        title = msg(
            "{library}: undefined symbol {symbol} ({family} loaded from {path})"
            if failure.loaded_instead
            else "{library}: undefined symbol {symbol}",
            symbol=failure.symbol,
            **args,
        )
    else:
        title = msg(
            "{library}: undefined symbol ({family} loaded from {path})"
            if failure.loaded_instead
            else "{library}: undefined symbol",
            **args,
        )
    args |= {"library": failure.library or msg("A library"), "symbol": failure.symbol or msg("a symbol")}
    if failure.loaded_instead:
        why = msg(
            "{library} needs {symbol} from {family}, but the {family} that was loaded is {path} ({origin}), not the "
            "one it was built with."
            if failure.loaded_origin
            else "{library} needs {symbol} from {family}, but the {family} that was loaded is {path}, not the one it "
            "was built with.",
            origin=failure.loaded_origin,
            **args,
        )
        if failure.loaded_origin == "ld_library_path":
            d = path_rules(f).dirname(failure.loaded_instead)
            fixes.append(
                fix(
                    msg("Drop {path} from LD_LIBRARY_PATH so the wheel's own {family} loads", path=d, family=fam),
                    drop_from_ld_library_path(d),
                )
            )
    else:
        why = msg(
            "{library} needs {symbol} from {family}: the copy found first does not define it (a mixed set of "
            "nvidia-* wheels, or an older copy first on LD_LIBRARY_PATH).",
            **args,
        )
    lf = library_facts(f)
    bad = [p for p in (lf.pins or ()) if not p.ok] if lf else []
    if bad:
        why = msg(
            "{why} {n} nvidia-* package(s) differ from torch's pins (CD219).",
            why=why,
            n=len(bad),
        )
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


def _windows_dll(failure: ImportFailure) -> tuple[str, str, list[Fix]]:
    """Windows: "[WinError 126] … Error loading "…\\torch\\lib\\c10.dll" or one of its dependencies"."""
    lib = failure.library or msg("a DLL")
    if failure.family is None:
        title = msg("{library} or one of its dependencies cannot be loaded (Windows)", library=lib)
        why = msg(
            "Windows could not load {library}: most often the Microsoft Visual C++ Redistributable is missing or "
            "too old (pytorch#126507, #131662).",
            library=lib,
        )
        fixes = [
            fix(
                "Install the latest Microsoft Visual C++ Redistributable (x64), then open a new terminal",
                "winget install --id Microsoft.VCRedist.2015+.x64",
            ),
            fix("Or download it", f"start {VC_REDIST}"),
        ]
        return title, why, fixes
    title = msg("{library} cannot be loaded (Windows)", library=lib)
    why = msg(
        "torch's own {family} DLL is in torch\\lib; an older CUDA or cuDNN directory on PATH, or a damaged "
        "install, makes Windows load or fail on another copy.",
        family=failure.family,
    )
    return title, why, [fix(msg("See which {library} Windows finds first", library=lib), f"where {lib}")]
