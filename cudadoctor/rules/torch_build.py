"""The torch build against the driver and each GPU: the heart of the diagnosis. Whether torch is installed,
imports and is a CUDA build at all is rules/torch_install.py, which evaluate() asks first."""

from __future__ import annotations

from cudadoctor.advice import shell
from cudadoctor.advice.driver import driver_upgrade_fix, driver_view
from cudadoctor.advice.gpus import arch_reason, gpu_capabilities
from cudadoctor.advice.install import advise, cudnn_reinstall, torch_reinstall
from cudadoctor.advice.text import joined
from cudadoctor.facts import Facts, TorchFacts
from cudadoctor.knowledge import wheels
from cudadoctor.knowledge.architectures import arch_name
from cudadoctor.knowledge.driver_minimums import full_minimum, major_floor
from cudadoctor.knowledge.versions import cudnn_int_to_str, parse_version
from cudadoctor.model import Finding, Message, Severity, msg, msg_n
from cudadoctor.rules.catalogue import CUDA, TORCH_BUILD, entry, fix, named
from cudadoctor.rules.driver import GPU_LOST
from cudadoctor.rules.story import beside_torch, breaks, rests_on
from cudadoctor.rules.torch_install import (
    advice_fix,
    code_advice,
    cpu_build,
    gpus_present,
    install_findings,
)
from cudadoctor.rules.torch_install import torch_name as _name

TORCH_OK = entry(
    "CD200",
    "torch-cuda-ok",
    Severity.OK,
    "PyTorch",
    "PyTorch can use the GPU",
    """torch imported in the target interpreter, CUDA initialised, and a small kernel ran on the GPU.""",
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


def evaluate(f: Facts) -> list[Finding]:
    t = f.torch
    if t is None:
        return []
    out, done = install_findings(f, t)
    if done:
        return out
    if t.cuda_built is False:
        out += cpu_build(f, t)
    elif t.cuda_built is True:
        out += _cuda_build(f, t)
    out += _cudnn(f, t)
    if t.cuda_built and t.is_available and not t.kernel_error and not any(x.severity is Severity.ERROR for x in out):
        out.insert(0, _torch_ok(t))
    out += _nvcc(f, t)
    out += code_advice(f, t)
    return out


def _torch_ok(t: TorchFacts) -> Finding:
    names = ", ".join(sorted({d.name or "?" for d in t.devices}))
    cudnn = cudnn_int_to_str(t.cudnn_version)
    built = ", ".join(x for x in (named("CUDA", t.cuda), named("cuDNN", cudnn)) if x not in ("CUDA", "cuDNN"))
    torch = named("torch", t.version) + (f" ({built})" if built else "")  # names and versions only
    if t.device_count is None and not t.devices:
        # a paste (collect_env) says CUDA is available but not which devices torch sees: unknown, not zero
        return TORCH_OK.finding(title=msg("{torch} can use CUDA: torch.cuda.is_available() is True", torch=torch))
    n = t.device_count if t.device_count is not None else len(t.devices)
    title = (
        msg_n("{torch} uses {n} GPU: {names}", "{torch} uses {n} GPUs: {names}", n, torch=torch, n=n, names=names)
        if names
        else msg_n("{torch} uses {n} GPU", "{torch} uses {n} GPUs", n, torch=torch, n=n)
    )
    return TORCH_OK.finding(title=title)


def _wheel_cuda(t: TorchFacts) -> tuple[int, int] | None:
    v = parse_version(t.cuda)
    return (v[0], v[1]) if v and len(v) >= 2 else None


def _cuda_build(f: Facts, t: TorchFacts) -> list[Finding]:
    out: list[Finding] = []
    drv = driver_view(f)
    wheel = _wheel_cuda(t)
    if wheel is not None and gpus_present(f):
        compat = drv.runs(wheel)
        have = f"{drv.cuda[0]}.{drv.cuda[1]}" if drv.cuda else msg("unknown")
        if compat is None:
            need = full_minimum(*wheel, windows=drv.windows) or major_floor(wheel[0], drv.windows)
            advice = advise(f)
            label, upgrade = driver_upgrade_fix(f, need or "")
            title = msg(
                "{torch} needs CUDA {cuda}; driver {driver} supports CUDA up to {have}"
                if drv.version
                else "{torch} needs CUDA {cuda}; driver supports CUDA up to {have}",
                torch=_name(t),
                cuda=t.cuda,
                driver=drv.version,
                have=have,
            )
            fixes = [
                fix(msg("{label}: CUDA {cuda}", label=label, cuda=t.cuda), *upgrade),
                *advice_fix(advice, msg("Or install the build this driver runs"))[:1],
            ]
            out.append(DRIVER_TOO_OLD.finding(title=title, fix=fixes))
        elif compat == "minor":
            title = msg(
                "torch CUDA {cuda} on a driver for CUDA {have}: works through minor-version compatibility",
                cuda=t.cuda,
                have=have,
            )
            out.append(MINOR_COMPAT.finding(title=title))
    out += _arch(f, t)
    if t.kernel_error:
        out.append(
            NO_KERNEL.finding(
                title=msg("A kernel on cuda:0 failed: {error}", error=t.kernel_error),
                fix=advice_fix(advise(f), msg("Install a build compiled for this GPU")),
            )
        )
    return out


def _where(release: str, same: list[str], newer: list[str], reason: Message | None) -> Message | None:
    """Which torch builds have kernels for a GPU, after why it needs them (advice/gpus.arch_reason)."""
    where = None
    if same:
        where = msg(
            "torch {release} builds with kernels for it: {variants}.", release=release, variants=", ".join(same)
        )
    elif newer:
        where = msg(
            "No torch {release} build has kernels for it; torch {newer} and newer do.",
            release=release,
            newer=min(newer, key=parse_version),
        )
    if reason and where:
        return msg("{reason}. {where}", reason=reason, where=where)
    return msg("{reason}.", reason=reason) if reason else where


def _page(page: str, *parts: Message | None) -> Message:
    """A catalogue page with this machine's facts after it, each a sentence."""
    out = msg(page)
    for part in parts:
        if part:
            out = msg("{page} {facts}", page=out, facts=part)
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
        label = msg("{gpu} (compute capability {cc}, {arch})", gpu=name, cc=cc, arch=arch_name(cc))
        # releases (newest first) with a build that has real kernels for this GPU
        covering = {
            r: names
            for r in wheels.releases_newest_first()
            if (names := [v.name for v in wheels.variants(r, machine) if wheels.coverage(v.arch_flags, cc) == "sm"])
        }
        same = covering.get(release, [])
        newer = [r for r in covering if parse_version(r) > here]  # type: ignore[operator]
        where = _where(release, same, newer, arch_reason(name, cc, machine))
        targets = (
            msg("This build targets: {flags}.", flags=" ".join(flags))
            if t.arch_flags
            else msg("This build targets: {flags} (its wheel's list).", flags=" ".join(flags))
        )
        fixes = advice_fix(advise(f), msg("Install a build compiled for this GPU"))
        if how == "ptx":
            out.append(
                PTX_ONLY.finding(
                    title=msg("{torch} runs on {gpu} only through PTX JIT", torch=_name(t), gpu=label),
                    why=_page(PTX_ONLY.explanation, targets, where),
                    fix=fixes,
                )
            )
        elif same or newer:
            out.append(
                ARCH_UNSUPPORTED.finding(
                    title=msg("{torch} has no kernels for {gpu}", torch=_name(t), gpu=label),
                    why=_page(ARCH_UNSUPPORTED.explanation, targets, where),
                    fix=fixes,
                )
            )
        elif covering:
            last = next(iter(covering))
            short = arch_reason(name, cc, machine, last=False)  # the sentence below names the release
            newest = msg(
                "The newest torch with a build for {cc} is {release} ({variant}).",
                cc=cc,
                release=last,
                variant=covering[last][0],
            )
            out.append(
                GPU_TOO_OLD.finding(
                    title=msg("{gpu} is older than every current torch build", gpu=label),
                    why=_page(GPU_TOO_OLD.explanation, msg("{reason}.", reason=short) if short else None, newest),
                    fix=advice_fix(advise(f), msg("Install torch {release}", release=last)),
                )
            )
        else:
            none = msg("No PyTorch release in cudadoctor's tables supports it.")
            out.append(
                GPU_TOO_OLD.finding(
                    title=msg("{gpu} is not supported by any known torch build", gpu=label),
                    why=_page(GPU_TOO_OLD.explanation, where, none),
                    fix=[fix("Use the CPU", "device = torch.device('cpu')")],
                )
            )
    return out


def _cudnn(f: Facts, t: TorchFacts) -> list[Finding]:
    out: list[Finding] = []
    if t.cuda_built and t.is_available and t.cudnn_present is False and not t.cudnn_error:
        # the same torch again, from its own index, in the environment's installer (advice/install.py)
        again = torch_reinstall(f)
        out.append(
            CUDNN_PROBLEM.finding(
                title=msg("{torch} finds no cuDNN", torch=_name(t)),
                fix=[fix("Install the wheel's cuDNN again", *again)] if again else [],
            )
        )
    if t.cudnn_error:
        reinstall = cudnn_reinstall(f)  # in the environment's installer: a uv venv has no pip
        out.append(
            CUDNN_PROBLEM.finding(
                title=msg("cuDNN: {error}", error=t.cudnn_error),
                fix=[
                    fix(
                        "Use the cuDNN that came with the wheel: drop system cuDNN paths",
                        "echo $LD_LIBRARY_PATH",
                        "unset LD_LIBRARY_PATH",
                    ),
                    *([fix("Reinstall the wheel's cuDNN", *reinstall)] if reinstall else []),
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
    majors = {"nvcc": tk.nvcc_version.split(".")[0], "torch": t.cuda.split(".")[0]}
    return [
        NVCC_DIFFERS.finding(
            title=msg(
                "nvcc is CUDA {nvcc}, torch carries CUDA {cuda}: not a problem for running torch",
                nvcc=tk.nvcc_version,
                cuda=t.cuda,
            ),
            why=_page(
                NVCC_DIFFERS.explanation,
                msg(
                    "Only when compiling CUDA extensions for this torch should nvcc's major version ({nvcc}) match "
                    "torch's ({torch}).",
                    **majors,
                ),
            ),
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


def _as_message(title: str) -> str:
    """A cause's title as a message: one already, or a catalogue summary (translated as it is)."""
    return title if isinstance(title, Message) else msg(title)


def summarize(f: Facts, findings: list[Finding]) -> list[Finding]:
    """CD210: one finding that names the root cause when NVML sees GPUs but torch cannot use them."""
    t = f.torch
    if t is None or not gpus_present(f) or t.is_available is not False:
        return []
    causes = _ranked_causes(f, findings)
    if causes:
        cited = [msg("{code} {title}", code=c.code, title=_as_message(c.title)) for c in causes[:3]]
        why = msg("Cause: {causes}.", causes=joined(cited))
    elif t.availability_warnings:
        why = msg("No other check explains it. torch said: {warnings}", warnings="; ".join(t.availability_warnings))
    else:
        why = msg("No other check explains it. torch said: torch gave no warning")
    n = f.driver.device_count or 0  # type: ignore[union-attr]
    return [
        NOT_AVAILABLE.finding(
            cause=causes[0].code if causes else None,
            title=msg_n(
                "torch.cuda.is_available() is False although the driver sees {n} GPU",
                "torch.cuda.is_available() is False although the driver sees {n} GPUs",
                n,
                n=n,
            ),
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
