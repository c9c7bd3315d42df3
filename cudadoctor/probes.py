"""Probes collect facts; they never print and never decide what a fact means.

One registry: every probe's name (the Facts field it fills), its collector, its time bound, where it
runs and a line of help. `--only`/`--skip`, their help text, the README table (tested), the child
processes' time bounds and the report's scope all derive from it. The runner bounds every probe in
time; a crash or an overrun becomes a ProbeOutcome, never an exception.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cudadoctor.model import ProbeOutcome

if TYPE_CHECKING:
    from cudadoctor.facts import (
        BandwidthFacts,
        CompileFacts,
        CudaDriverFacts,
        DriverFacts,
        ExtensionFacts,
        PciFacts,
        PlatformFacts,
        SmokeFacts,
        SystemFacts,
        ToolkitFacts,
        TorchFacts,
    )

# Where a probe runs: in the doctor's process ("here"), in a child of the interpreter being diagnosed
# ("target", --python), or in a measurement child of that interpreter ("measure"). When more than one
# probe with a `stage` runs, they share ONE child of the target interpreter instead (torch is imported
# once), each as a stage bounded by its own time, in registry order.
HERE, TARGET, MEASURE = "here", "target", "measure"

# A child process gets this share of its probe's bound, so its partial output still arrives in time.
CHILD_SHARE = 0.8


@dataclass
class Context:
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    python: str = sys.executable  # the interpreter whose torch is diagnosed
    timeout: float | None = None  # --timeout: one bound for every probe instead of each one's own
    transfer_size: int = 256 << 20
    shared: dict[str, Any] = field(default_factory=dict)  # per-run state probes share (one child)
    bounds: dict[str, float] = field(default_factory=dict)  # probe name -> its bound in this run
    session: list[Probe] = field(default_factory=list)  # the stages of the shared torch child, if any

    def child_timeout(self, probe: str) -> float:
        """How long a child started by this probe may run."""
        return max(0.5, self.bounds.get(probe, self.timeout or 20.0) * CHILD_SHARE)


@dataclass(frozen=True)
class Probe:
    name: str  # the field of Facts it fills
    collect: Callable[[Context], Any]
    timeout: float  # seconds; far above a healthy run and far below a hung one
    where: str = HERE
    default: bool = True  # part of a plain `check`; False: only with --full / --only
    help: str = ""
    # its child's work as a stage of the shared torch child: (script, function, args)
    stage: Callable[[Context], tuple[str, str, list[Any]]] | None = None


# Backends are imported when a probe runs, on its own thread: `check` reaches the slow torch child
# sooner when nothing heavy is imported before the probes start.


def collect_torch(ctx: Context) -> TorchFacts:
    from cudadoctor.backends.libraries import enrich
    from cudadoctor.backends.torchenv import query_torch, torch_facts

    session = _session(ctx)
    if session is not None:
        return enrich(torch_facts(ctx.python, session.result("torch")))
    return enrich(query_torch(ctx.python, timeout=ctx.child_timeout("torch"), env=dict(ctx.environ)))


def stage_torch(ctx: Context) -> tuple[str, str, list[Any]]:
    from cudadoctor.backends.torchenv import STAGE

    return STAGE


def collect_compile(ctx: Context) -> CompileFacts:
    from cudadoctor.backends.compile import compile_facts, query_compile

    session = _session(ctx)
    if session is not None:
        return compile_facts(ctx.python, session.result("compile"))
    return query_compile(ctx.python, timeout=ctx.child_timeout("compile"), env=dict(ctx.environ))


def stage_compile(ctx: Context) -> tuple[str, str, list[Any]]:
    from cudadoctor.backends.compile import STAGE

    return STAGE


def collect_system(ctx: Context) -> SystemFacts:
    from cudadoctor.backends.host import system_facts

    return system_facts(ctx.environ)


def collect_pci(ctx: Context) -> PciFacts:
    from cudadoctor.backends.host import pci_facts

    return pci_facts(timeout=ctx.child_timeout("pci"))


def collect_driver(ctx: Context) -> DriverFacts:
    from cudadoctor.backends.nvml_isolated import query

    # in a child: a crash inside the driver library becomes a fact naming the call, not the doctor's end
    return query(with_processes=True, with_binding=True, timeout=ctx.child_timeout("driver"))


def collect_cuda_driver(ctx: Context) -> CudaDriverFacts:
    from cudadoctor.backends.cuda import query_libcuda

    return query_libcuda(timeout=ctx.child_timeout("cuda_driver"))


def collect_platform(ctx: Context) -> PlatformFacts:
    from cudadoctor.backends.hostfs import Host
    from cudadoctor.backends.platform_facts import platform_facts

    # several short programs (dmesg, modinfo, systemctl): each gets a share of the probe's bound
    return platform_facts(Host(environ=ctx.environ), timeout=min(3.0, ctx.child_timeout("platform") / 4))


def collect_toolkit(ctx: Context) -> ToolkitFacts:
    from cudadoctor.backends.host import toolkit_facts

    return toolkit_facts(ctx.environ, timeout=ctx.child_timeout("toolkit"))


def collect_extensions(ctx: Context) -> ExtensionFacts:
    from cudadoctor.backends.extensions import query_extensions

    # its own small child (the standard library only): no torch to import, so no stage of the torch child
    return query_extensions(ctx.python, timeout=ctx.child_timeout("extensions"), env=dict(ctx.environ))


def collect_bandwidth(ctx: Context) -> BandwidthFacts:
    return _measure(ctx, "bandwidth")


def collect_smoke(ctx: Context) -> SmokeFacts:
    return _measure(ctx, "smoke")


def _measure(ctx: Context, name: str) -> Any:
    from cudadoctor.backends.measure import SharedMeasurement, child_data, part_facts

    session = _session(ctx)
    if session is not None:
        return part_facts(name, child_data(session.result(name)))
    alone = SharedMeasurement(ctx.python, [name], timeout=ctx.child_timeout(name), size=ctx.transfer_size)
    return alone.bandwidth() if name == "bandwidth" else alone.smoke()


def stage_measure(ctx: Context, name: str) -> tuple[str, str, list[Any]]:
    from cudadoctor.backends.measure import stage

    return stage(name, ctx.transfer_size)


_SESSION_LOCK = threading.Lock()


def _session(ctx: Context) -> Any:
    """The run's one shared torch child (backends/torch_session.py), or None when only one torch
    probe runs (it starts its own child, as it always did). Whichever probe asks first creates it."""
    if len(ctx.session) < 2:
        return None
    from cudadoctor.backends.torch_session import Stage, TorchSession

    with _SESSION_LOCK:
        if "torch_session" not in ctx.shared:
            stages = [Stage(p.name, *p.stage(ctx), ctx.child_timeout(p.name)) for p in ctx.session if p.stage]
            ctx.shared["torch_session"] = TorchSession(ctx.python, stages, env=dict(ctx.environ))
        return ctx.shared["torch_session"]


# The slowest starts first; the report orders its sections itself. The shared torch child runs its
# stages in this order: the torch facts first, the measurements next (before compiling can leave
# inductor's workers about), the compile check (the slowest, the likeliest to hang) last.
REGISTRY: tuple[Probe, ...] = (
    Probe(
        "torch",
        collect_torch,
        60,
        TARGET,
        help="torch in the target interpreter: build, CUDA, arch list, devices",
        stage=stage_torch,
    ),
    Probe("system", collect_system, 10, help="OS, distribution, container, WSL, /dev/shm, environment"),
    Probe("pci", collect_pci, 10, help="NVIDIA GPUs on the PCI bus, whatever the driver"),
    Probe("driver", collect_driver, 15, help="the NVIDIA driver and every GPU through NVML"),
    Probe("cuda_driver", collect_cuda_driver, 25, help="libcuda and cuInit, in a child process"),
    Probe("toolkit", collect_toolkit, 10, help="the CUDA toolkit on disk (nvcc, libcudart)"),
    Probe("platform", collect_platform, 15, help="below torch: WSL, kernel module, device nodes, container, Xid"),
    Probe(
        "extensions",
        collect_extensions,
        30,
        TARGET,
        help="third-party CUDA extensions: the GPU archs and torch they were built for (files read, never loaded)",
    ),
    Probe(
        "bandwidth",
        collect_bandwidth,
        120,
        MEASURE,
        False,
        "host-device copy bandwidth per GPU (--full)",
        lambda ctx: stage_measure(ctx, "bandwidth"),
    ),
    Probe(
        "smoke",
        collect_smoke,
        120,
        MEASURE,
        False,
        "a CPU-vs-GPU training smoke test (--full)",
        lambda ctx: stage_measure(ctx, "smoke"),
    ),
    Probe(
        "compile",
        collect_compile,
        150,
        TARGET,
        False,
        "torch.compile of a tiny function on the GPU, or the CPU without one (--full)",
        stage_compile,
    ),
)


def names() -> list[str]:
    return [p.name for p in REGISTRY]


def by_name(name: str) -> Probe:
    return next(p for p in REGISTRY if p.name == name)


def bounds_text() -> str:
    """The --timeout help: every probe's own bound, from the registry."""
    return ", ".join(f"{p.name} {p.timeout:g} s" for p in REGISTRY)


def help_text() -> str:
    """The --only/--skip help: every probe name, from the registry."""
    return ", ".join(p.name for p in REGISTRY)


def select(
    only: set[str],
    skip: set[str],
    full: bool,
    extra: set[str] | None = None,
    registry: Sequence[Probe] = REGISTRY,
) -> list[Probe]:
    """--only picks from every probe; otherwise the default checks, plus the others with --full; either
    way with `extra`, the probes a requirement needs to be judged at all; --skip removes."""
    extra = extra or set()
    if only:
        chosen = [p for p in registry if p.name in only or p.name in extra]
    else:
        chosen = [p for p in registry if p.default or full or p.name in extra]
    return [p for p in chosen if p.name not in skip]


def run_probes(
    probes: Sequence[Probe], ctx: Context, meanwhile: Callable[[], object] | None = None
) -> tuple[dict[str, Any], list[ProbeOutcome]]:
    """Each finished probe's result under its name, and how every probe ended.

    `meanwhile` runs on the calling thread while the probes work (the CLI imports its rules and
    renderers there, so that start-up overlaps the slow torch child)."""
    results: dict[str, Any] = {}
    errors: dict[str, tuple[str, str]] = {}
    finished: dict[str, float] = {}
    for p in probes:
        ctx.bounds[p.name] = ctx.timeout if ctx.timeout is not None else p.timeout
    # Two or more torch probes share one child, stage after stage: each waits for the stages before it.
    staged = [p for p in probes if p.stage is not None]
    ctx.session = staged if len(staged) > 1 else []
    waits = dict(ctx.bounds)
    usual = {p.name: float(p.timeout) for p in probes}  # what each would have had without --timeout
    for i, p in enumerate(ctx.session):
        waits[p.name] = sum(ctx.bounds[q.name] for q in ctx.session[: i + 1])
        usual[p.name] = sum(float(q.timeout) for q in ctx.session[: i + 1])

    def work(probe: Probe) -> None:
        start = time.monotonic()
        try:
            results[probe.name] = probe.collect(ctx)
        except Exception as exc:  # a probe must never take the report down
            import traceback  # only on this path: start-up time matters

            errors[probe.name] = (f"{type(exc).__name__}: {exc}", traceback.format_exc())
        finally:
            finished[probe.name] = time.monotonic() - start

    start = time.monotonic()
    # Daemon threads: a probe stuck in a C call cannot keep the process alive after the report.
    threads = [(p, threading.Thread(target=work, args=(p,), name=f"probe-{p.name}", daemon=True)) for p in probes]
    for _, t in threads:
        t.start()
    if meanwhile is not None:
        meanwhile()
    facts: dict[str, Any] = {}
    outcomes = []
    for probe, t in threads:
        limit = waits[probe.name]
        t.join(max(0.0, start + limit - time.monotonic()))
        if t.is_alive():
            outcomes.append(
                ProbeOutcome(
                    probe.name,
                    "timeout",
                    round(time.monotonic() - start, 3),
                    error=f"did not finish within {limit:g} s",
                    bound=limit,
                    default_bound=usual[probe.name],
                    # so that the fix re-runs the same interpreter's check, not the doctor's own
                    python=ctx.python if probe.where != HERE and ctx.python != sys.executable else None,
                )
            )
        elif probe.name in errors:
            message, tb = errors[probe.name]
            outcomes.append(ProbeOutcome(probe.name, "crashed", round(finished[probe.name], 3), message, tb))
        else:
            result = facts[probe.name] = results[probe.name]
            # a child that hung or crashed left partial facts: kept, but the check did not finish
            failure = result.incomplete() if hasattr(result, "incomplete") else None
            status = "ok" if failure is None else ("timeout" if "in time" in failure else "crashed")
            outcomes.append(ProbeOutcome(probe.name, status, round(finished[probe.name], 3), failure))
    return facts, outcomes
