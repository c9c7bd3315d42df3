"""The torch build against the driver and each GPU: the heart of the diagnosis."""

from __future__ import annotations

from cudadoctor.advice import shell
from cudadoctor.advice.install import (
    Advice,
    advise,
    arch_reason,
    cpu_install,
    driver_upgrade_fix,
    driver_view,
    environment_unknowns,
    externally_managed,
    gpu_capabilities,
)
from cudadoctor.facts import Facts, TorchFacts
from cudadoctor.knowledge import wheels
from cudadoctor.knowledge.architectures import arch_name
from cudadoctor.knowledge.driver_minimums import full_minimum, major_floor
from cudadoctor.knowledge.versions import cudnn_int_to_str, parse_version
from cudadoctor.model import Finding, Fix, Severity, msg, plural
from cudadoctor.rules.catalogue import CUDA, TORCH_BUILD, entry, fix, named
from cudadoctor.rules.driver import GPU_LOST
from cudadoctor.rules.libraries import import_failure_detail
from cudadoctor.rules.predicates import driver_with_gpu, gpu_presence
from cudadoctor.rules.story import beside_torch, breaks, rests_on

TORCH_OK = entry(
    "CD200",
    "torch-cuda-ok",
    Severity.OK,
    "PyTorch",
    "PyTorch can use the GPU",
    """torch imported in the target interpreter, CUDA initialised, and a small kernel ran on the GPU.""",
)
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
DRIVER_TOO_OLD = entry(
    "CD203",
    "driver-too-old-for-wheel",
    Severity.ERROR,
    "PyTorch",
    "The driver is too old for this torch build's CUDA",
    """CUDA programs run on a driver of the same CUDA major version or newer (minor-version compatibility
    covers newer minors of the same major). This wheel needs a newer major than the driver supports:
    CUDA initialisation fails with "The NVIDIA driver on your system is too old". Either upgrade the
    driver or install the build of torch made for the driver's CUDA.""",
    breaks=(TORCH_BUILD,),
)
MINOR_COMPAT = entry(
    "CD204",
    "minor-version-compatibility",
    Severity.INFO,
    "PyTorch",
    "The wheel's CUDA is newer than the driver's, within the same major: fine",
    """Within one CUDA major, minor-version compatibility lets a newer toolkit run on an older driver
    (at or above the major's floor). Nearly everything works; code that needs PTX JIT-compiled by the
    driver (a GPU newer than the wheel's cubins) can fail, and the newest APIs report
    cudaErrorCallRequiresNewerDriver.""",
    breaks=(TORCH_BUILD,),
)
ARCH_UNSUPPORTED = entry(
    "CD205",
    "gpu-arch-not-in-build",
    Severity.ERROR,
    "PyTorch",
    "This torch build has no kernels for a GPU here",
    """Each torch wheel is compiled for a list of GPU architectures (its arch list). A GPU whose compute
    capability is neither in that list nor reachable from an embedded PTX gets "no kernel image is
    available for execution on the device" at the first operation.""",
    breaks=(TORCH_BUILD,),
)
GPU_TOO_OLD = entry(
    "CD206",
    "gpu-too-old",
    Severity.ERROR,
    "PyTorch",
    "A GPU here is older than every current torch build",
    """Current PyTorch builds dropped this GPU's architecture (CUDA 12 dropped Kepler, CUDA 13 dropped
    Maxwell, Pascal and Volta). An older torch release still supports it, if any does.""",
)
CUDNN_PROBLEM = entry(
    "CD207",
    "cudnn-problem",
    Severity.ERROR,
    "PyTorch",
    "cuDNN cannot be used",
    """torch.backends.cudnn.version() failed: the cuDNN library found at run time is missing or
    incompatible with the one torch was built with, so convolutions and RNNs fail or fall back.""",
)
NVCC_DIFFERS = entry(
    "CD209",
    "nvcc-differs-from-torch",
    Severity.INFO,
    "PyTorch",
    "The system nvcc's CUDA differs from torch's: not a problem",
    """pip and conda builds of torch carry their own CUDA runtime; the toolkit's nvcc is only used to
    compile extensions. `python -m torch.utils.collect_env` prints nvcc's version as "CUDA runtime
    version", which misleads: it is not what torch runs on.""",
)
NOT_AVAILABLE = entry(
    "CD210",
    "cuda-not-available",
    Severity.ERROR,
    "PyTorch",
    "torch.cuda.is_available() is False although the driver sees GPUs",
    """NVML reports GPUs, but torch cannot use any. The findings it names are the cause.""",
    rests_on=(CUDA,),
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
NO_KERNEL = entry(
    "CD215",
    "kernel-launch-failed",
    Severity.ERROR,
    "PyTorch",
    "A kernel launch on the GPU failed",
    """CUDA initialised, but the first real operation failed. "no kernel image is available" means the
    build lacks this GPU's architecture; other errors point at the driver or the GPU.""",
    rests_on=(CUDA,),
)
CPU_NO_GPU = entry(
    "CD216",
    "cpu-build-no-gpu",
    Severity.INFO,
    "PyTorch",
    "A CPU-only PyTorch, and no NVIDIA GPU to use: consistent",
    """This torch build has no CUDA support, which is right for a machine without an NVIDIA GPU.""",
)

PTX_ONLY = entry(
    "CD217",
    "gpu-runs-on-ptx-only",
    Severity.WARNING,
    "PyTorch",
    "A GPU here runs this torch build only through PTX JIT",
    """The build has no compiled kernels (cubins) for this GPU's architecture, only PTX for an older one,
    which the driver JIT-compiles at start-up: the first run is slow, and libraries without kernels for
    this architecture can still fail with "no kernel image is available". torch warns that the GPU "is
    not compatible with the current PyTorch installation".""",
)


def _gpus_present(f: Facts) -> bool:
    """NVML itself reports GPUs (the strongest evidence a CUDA build is wanted here)."""
    return bool(f.driver and f.driver.init_status == "ok" and f.driver.device_count)


def _install_fix(f: Facts, t: TorchFacts) -> list[Fix]:
    """Install torch where there is none: the CUDA build for these GPUs and this driver, the CPU build where
    there is no NVIDIA GPU, and no command while whether there is one is unknown (--only torch skips the
    driver and PCI checks: a CPU build there would be wrong on a GPU machine)."""
    label = "Install the build that fits this machine"
    present = gpu_presence(f)
    if present is None:
        return [fix(f"{label}: whether it has an NVIDIA GPU is not known; run every check to see it")]
    if present:
        return _advice_fix(advise(f), label)[:1]
    cmds = cpu_install(f)
    if not cmds:
        unknown = "; ".join(environment_unknowns(f))
        return [fix(f"{label}: which build fits is not known ({unknown}); run every check to see it")]
    if externally_managed(f):
        label += f" ({t.python_executable} is externally managed (PEP 668): pip installs into a new venv)"
    return [fix(label, *cmds)]


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _advice_fix(advice: Advice, label: str) -> list[Fix]:
    out = []
    if advice.snippet:
        where = advice.snippet_file or "pyproject.toml"
        out.append(fix(f"{label} ({advice.note}): add to {where}", *advice.snippet, lang="toml"))
        label = "Then sync the project"
    if advice.commands:
        out.append(fix(f"{label} ({advice.note})" if not advice.snippet else label, *advice.commands))
    if advice.driver_upgrade:
        out.append(
            fix(
                f"Or {_lower_first(advice.upgrade_label or 'Upgrade the NVIDIA driver')}, then keep newer builds",
                *advice.upgrade_commands,
            )
        )
    if not out and advice.unknown:
        # no command rather than a guess: `check` with every probe learns what is missing
        unknown = "; ".join(advice.unknown)
        out.append(fix(f"{label}: which build fits is not known ({unknown}); run every check to see it"))
    elif not out:
        out.append(fix(f"{advice.note}: see https://pytorch.org/get-started/previous-versions/"))
    return out


_NO_DRIVER_TO_HANG = (
    "No NVIDIA driver or GPU is in use here, so no driver hung: importing torch outlasted the bound "
    "(a --timeout shorter than the check's own, a slow or network file system)."
)


def evaluate(f: Facts) -> list[Finding]:
    t = f.torch
    if t is None:
        return []
    if t.timed_out:
        # a stuck driver is a likely reason only where a driver with a GPU is in use (or that is unknown)
        driver = driver_with_gpu(f) is not False
        return [
            TORCH_PROBE_FAILED.finding(
                title="The torch child process did not finish in time"
                + (" (CUDA initialisation hung)" if t.version and t.is_available is None else ""),
                why=None if driver else f"{TORCH_PROBE_FAILED.explanation} {_NO_DRIVER_TO_HANG}",
                fix=[
                    fix(
                        "Try it by hand and see where it stops",
                        shell.word(t.python_executable, lead=True)
                        + ' -c "import torch; print(torch.cuda.is_available())"',
                    ),
                    *(
                        [fix("Look for driver errors", "sudo dmesg -T | grep -i -E 'NVRM|Xid' | tail")]
                        if driver
                        else []
                    ),
                ],
            )
        ]
    if t.import_error and t.installed:
        detail = import_failure_detail(f)
        return [
            IMPORT_FAILED.finding(
                title=f"import torch fails: {detail[0] if detail else t.import_error}",
                why=f"{IMPORT_FAILED.explanation} {detail[1]} The error: {t.import_error}" if detail else None,
                fix=[
                    *(detail[2] if detail else []),
                    fix(
                        "Reinstall torch cleanly in this environment",
                        f"{shell.word(t.python_executable, lead=True)} -m pip uninstall -y torch",
                        *advise(f).commands[-1:],
                    ),
                ],
            )
        ]
    if t.installed is None:
        # the child never said whether torch imports: its own failure, never "not installed"
        if t.child_error:
            return [TORCH_PROBE_FAILED.finding(title=f"The torch check did not finish: {t.child_error}")]
        if t.version is None:
            return []  # nothing known about torch: nothing to say
    if t.installed is False:
        return [
            NOT_INSTALLED.finding(
                title=f"PyTorch is not installed in {t.python_executable}",
                fix=[
                    *_install_fix(f, t),
                    fix(
                        "Or diagnose the environment where torch is installed",
                        "cudadoctor check --python /path/to/venv/bin/python",
                    ),
                ],
            )
        ]
    if t.child_error and not t.version:
        return [TORCH_PROBE_FAILED.finding(title=f"The torch check failed: {t.child_error}")]
    out: list[Finding] = []
    if t.child_error and not t.complete:
        # it crashed (or flooded, or printed garbage) after the CUDA-free facts: say so, judge what came back
        out.append(
            TORCH_PROBE_FAILED.finding(
                title=f"The torch check failed part-way: {t.child_error}",
                fix=[
                    fix(
                        "Run the same steps by hand and see where it stops",
                        shell.word(t.python_executable, lead=True)
                        + ' -c "import torch; print(torch.cuda.is_available())"',
                    )
                ],
            )
        )
    if t.hip and gpu_presence(f) is not True:
        return out  # a ROCm build where no NVIDIA GPU is known: an AMD machine, not cudadoctor's to judge
    if t.hip:
        out.append(
            ROCM_BUILD.finding(
                title=f"{_name(t)} is a ROCm {t.hip} build", fix=_advice_fix(advise(f), "Install a CUDA build")
            )
        )
        return out
    if t.cuda_built is False:
        out += _cpu_build(f, t)
    elif t.cuda_built is True:
        out += _cuda_build(f, t)
    out += _cudnn(f, t)
    if t.cuda_built and t.is_available and not t.kernel_error and not any(x.severity is Severity.ERROR for x in out):
        out.insert(0, _torch_ok(t))
    out += _nvcc(f, t)
    no_gpu_at_all = gpu_presence(f) is False
    mps = f.system is not None and f.system.os == "Darwin" and t.mps_available
    # with no GPU at all, CD108 already gives the same code advice
    if t.is_available is False and not mps and not no_gpu_at_all:
        out.append(
            CODE_ADVICE.finding(
                fix=[
                    fix(
                        "Pick the device at run time",
                        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
                    ),
                    fix("Load checkpoints saved on a GPU", "torch.load(path, map_location='cpu')"),
                ]
            )
        )
    return out


def _cpu_build(f: Facts, t: TorchFacts) -> list[Finding]:
    if t.libraries is not None and t.libraries.jetson and not _gpus_present(f):
        return []  # CD225 (rules/libraries.py): a Jetson's integrated GPU, which the PCI scan does not show
    if _gpus_present(f):
        advice = advise(f)
        why = CPU_ONLY.explanation
        note = wheels.platform_note(f.system.os, f.system.machine) if f.system is not None else None
        if note:
            why += " " + note
        return [
            CPU_ONLY.finding(
                title=f"{_name(t)} is a CPU-only build, but this machine has an NVIDIA GPU",
                why=why,
                fix=_advice_fix(advice, "Install the CUDA build for this driver"),
            )
        ]
    if f.system is not None and f.system.os == "Darwin":
        return [
            CPU_NO_GPU.finding(title=f"{_name(t)} on macOS: MPS {'available' if t.mps_available else 'not available'}")
        ]
    if gpu_presence(f) is None:
        return [
            CPU_NO_GPU.finding(
                title=f"{_name(t)} is a CPU-only build; whether this machine has an NVIDIA GPU is unknown",
                why="The driver and PCI checks did not run or did not finish, so the doctor cannot tell whether "
                "a CUDA build would help here.",
            )
        ]
    return [CPU_NO_GPU.finding(title=f"{_name(t)} is a CPU-only build, and there is no NVIDIA GPU to use")]


def _name(t: TorchFacts) -> str:
    """ "torch 2.5.1+cu124", or "torch" where a paste did not show the version."""
    return named("torch", t.version)


def _torch_ok(t: TorchFacts) -> Finding:
    names = ", ".join(sorted({d.name or "?" for d in t.devices}))
    cudnn = cudnn_int_to_str(t.cudnn_version)
    built = ", ".join(x for x in (named("CUDA", t.cuda), named("cuDNN", cudnn)) if x not in ("CUDA", "cuDNN"))
    torch = named("torch", t.version) + (f" ({built})" if built else "")
    if t.device_count is None and not t.devices:
        # a paste (collect_env) says CUDA is available but not which devices torch sees: unknown, not zero
        return TORCH_OK.finding(title=f"{torch} can use CUDA: torch.cuda.is_available() is True")
    return TORCH_OK.finding(
        title=f"{torch} uses {plural(t.device_count if t.device_count is not None else len(t.devices), 'GPU')}"
        + (f": {names}" if names else ""),
    )


def _wheel_cuda(t: TorchFacts) -> tuple[int, int] | None:
    v = parse_version(t.cuda)
    return (v[0], v[1]) if v and len(v) >= 2 else None


def _cuda_build(f: Facts, t: TorchFacts) -> list[Finding]:
    out: list[Finding] = []
    drv = driver_view(f)
    wheel = _wheel_cuda(t)
    if wheel is not None and _gpus_present(f):
        compat = drv.runs(wheel)
        have = f"{drv.cuda[0]}.{drv.cuda[1]}" if drv.cuda else "unknown"
        if compat is None:
            need = full_minimum(*wheel, windows=drv.windows) or major_floor(wheel[0], drv.windows)
            advice = advise(f)
            label, upgrade = driver_upgrade_fix(f, need or "")
            out.append(
                DRIVER_TOO_OLD.finding(
                    title=f"{_name(t)} needs CUDA {t.cuda}; {named('driver', drv.version)} supports CUDA up to {have}",
                    fix=[
                        fix(f"{label}: CUDA {t.cuda}", *upgrade),
                        *_advice_fix(advice, "Or install the build this driver runs")[:1],
                    ],
                )
            )
        elif compat == "minor":
            out.append(
                MINOR_COMPAT.finding(
                    title=f"torch CUDA {t.cuda} on a driver for CUDA {have}: works through minor-version compatibility",
                )
            )
    out += _arch(f, t)
    if t.kernel_error:
        out.append(
            NO_KERNEL.finding(
                title=f"A kernel on cuda:0 failed: {t.kernel_error}",
                fix=_advice_fix(advise(f), "Install a build compiled for this GPU"),
            )
        )
    return out


def _arch(f: Facts, t: TorchFacts) -> list[Finding]:
    out: list[Finding] = []
    machine = f.system.machine if f.system else None
    flags = t.arch_flags
    if not flags:  # unknown (or an empty list, which says nothing): an official wheel's list is in the tables
        flags = wheels.official_arch_flags(t.version, machine)
    if not flags:
        return out
    release = wheels.release_of(t.version)
    if release not in wheels.RELEASES:
        release = wheels.newest_release()
    here = parse_version(release)
    for name, cc in dict.fromkeys(gpu_capabilities(f)):  # identical GPUs: one finding
        how = wheels.coverage(flags, cc)
        if how in ("sm", None):
            continue
        label = f"{name} (compute capability {cc}, {arch_name(cc)})"
        # releases (newest first) with a build that has real kernels for this GPU
        covering = {
            r: names
            for r in wheels.releases_newest_first()
            if (names := [v.name for v in wheels.variants(r, machine) if wheels.coverage(v.arch_flags, cc) == "sm"])
        }
        same = covering.get(release, [])
        newer = [r for r in covering if parse_version(r) > here]  # type: ignore[operator]
        if same:
            where = f"torch {release} builds with kernels for it: {', '.join(same)}."
        elif newer:
            where = f"No torch {release} build has kernels for it; torch {min(newer, key=parse_version)} and newer do."
        else:
            where = ""
        reason = arch_reason(name, cc, machine)
        if reason:
            where = f"{reason}. {where}".strip()
        targets = (
            msg("This build targets: {flags}.", flags=" ".join(flags))
            if t.arch_flags
            else msg("This build targets: {flags} (its wheel's list).", flags=" ".join(flags))
        )
        fixes = _advice_fix(advise(f), "Install a build compiled for this GPU")
        if how == "ptx":
            out.append(
                PTX_ONLY.finding(
                    title=msg("{torch} runs on {gpu} only through PTX JIT", torch=_name(t), gpu=label),
                    why=msg("{page} {targets} {where}", page=msg(PTX_ONLY.explanation), targets=targets, where=where),
                    fix=fixes,
                )
            )
        elif same or newer:
            out.append(
                ARCH_UNSUPPORTED.finding(
                    title=msg("{torch} has no kernels for {gpu}", torch=_name(t), gpu=label),
                    why=msg(
                        "{page} {targets} {where}", page=msg(ARCH_UNSUPPORTED.explanation), targets=targets, where=where
                    ),
                    fix=fixes,
                )
            )
        elif covering:
            last = next(iter(covering))
            short = (reason or "").split("; the last that does")[0]  # the sentence below names the release
            why = (
                f"{GPU_TOO_OLD.explanation} {short + '. ' if short else ''}The newest torch with a build for {cc} "
                f"is {last} ({covering[last][0]})."
            )
            out.append(
                GPU_TOO_OLD.finding(
                    title=f"{label} is older than every current torch build",
                    why=why,
                    fix=_advice_fix(advise(f), f"Install torch {last}"),
                )
            )
        else:
            why = f"{GPU_TOO_OLD.explanation} {where} No PyTorch release in cudadoctor's tables supports it."
            out.append(
                GPU_TOO_OLD.finding(
                    title=f"{label} is not supported by any known torch build",
                    why=why,
                    fix=[fix("Use the CPU", "device = torch.device('cpu')")],
                )
            )
    return out


def _cudnn(f: Facts, t: TorchFacts) -> list[Finding]:
    out: list[Finding] = []
    if t.cuda_built and t.is_available and t.cudnn_present is False and not t.cudnn_error:
        # the same torch again, from its own index: without its version and CUDA there is no such line
        again = (
            [
                f"{shell.word(t.python_executable, lead=True)} -m pip install --force-reinstall "
                f"--no-deps torch=={t.version.split('+')[0]} --index-url "
                f"{wheels.INDEX_URL.format(variant=wheels.variant_name(t.cuda))}"
            ]
            if t.version and t.cuda
            else []
        )
        out.append(
            CUDNN_PROBLEM.finding(
                title=f"{_name(t)} finds no cuDNN",
                fix=[fix("Install the wheel's cuDNN again", *again)] if again else [],
            )
        )
    if t.cudnn_error:
        out.append(
            CUDNN_PROBLEM.finding(
                title=f"cuDNN: {t.cudnn_error}",
                fix=[
                    fix(
                        "Use the cuDNN that came with the wheel: drop system cuDNN paths",
                        "echo $LD_LIBRARY_PATH",
                        "unset LD_LIBRARY_PATH",
                    ),
                    fix(
                        "Reinstall the wheel's cuDNN",
                        f"{shell.word(t.python_executable, lead=True)} -m pip install --force-reinstall "
                        "--no-deps $(pip list 2>/dev/null | grep -o '^nvidia-cudnn-cu[0-9]*')",
                    ),
                ],
            )
        )
    # CD208 (a library from outside the environment shadows the wheel's own), for every library
    # family and one finding per place the copies came from: rules/libraries.py.
    return out


def _nvcc(f: Facts, t: TorchFacts) -> list[Finding]:
    tk = f.toolkit
    if tk is None or not tk.nvcc_version or not t.cuda:
        return []
    if tk.nvcc_version == t.cuda:
        return []
    return [
        NVCC_DIFFERS.finding(
            title=f"nvcc is CUDA {tk.nvcc_version}, torch carries CUDA {t.cuda}: not a problem for running torch",
            why=f"{NVCC_DIFFERS.explanation} Only when compiling CUDA extensions for this torch should nvcc's major "
            f"version ({tk.nvcc_version.split('.')[0]}) match torch's ({t.cuda.split('.')[0]}).",
        )
    ]


def _ranked_causes(f: Facts, findings: list[Finding]) -> list[Finding]:
    """The errors that can explain is_available() being False, the likeliest first: the torch build's own
    errors and the driver-level root causes, then the rest. A GPU lost while another is healthy
    (CD105) is no cause (torch would still see the healthy one), nor is what follows from a cause."""
    devices = f.driver.devices if f.driver is not None else []
    some_healthy = any(d.error is None for d in devices)
    causes = [
        x
        for x in findings
        if x.severity is Severity.ERROR
        and x.code != NOT_AVAILABLE.code
        and not beside_torch(x.code)
        and not (x.code == GPU_LOST.code and some_healthy)
        and (not rests_on(x.code) or breaks(x.code))
    ]
    # the torch build's own errors (TORCH_BUILD) and the driver-level root causes first
    first = [x for x in causes if breaks(x.code)]
    return first + [x for x in causes if x not in first]


def summarize(f: Facts, findings: list[Finding]) -> list[Finding]:
    """CD210: one finding that names the root cause when NVML sees GPUs but torch cannot use them."""
    t = f.torch
    if t is None or not _gpus_present(f) or t.is_available is not False:
        return []
    causes = _ranked_causes(f, findings)
    if causes:
        why = "Cause: " + "; ".join(f"{c.code} {c.title}" for c in causes[:3]) + "."
    else:
        warnings = "; ".join(t.availability_warnings) or "torch gave no warning"
        why = f"No other check explains it. torch said: {warnings}"
    return [
        NOT_AVAILABLE.finding(
            cause=causes[0].code if causes else None,
            title="torch.cuda.is_available() is False although the driver sees "
            f"{plural(f.driver.device_count or 0, 'GPU')}",  # type: ignore[union-attr]
            why=why,
            fix=[fix("Start with the first cause above", *(f"cudadoctor explain {c.code}" for c in causes[:1]))]
            if causes
            else [
                fix(
                    "See what CUDA itself says",
                    f'{shell.word(t.python_executable, lead=True)} -c "import torch; torch.cuda.init()"',
                )
            ],
        )
    ]
