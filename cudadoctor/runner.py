"""Runs probes concurrently, each time-bounded; a crash or overrun becomes an outcome."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from cudadoctor.model import ProbeOutcome
from cudadoctor.probes import Context, Probe


def run_probes(
    probes: Sequence[Probe], ctx: Context, meanwhile: Callable[[], object] | None = None
) -> tuple[dict[str, Any], list[ProbeOutcome]]:
    """Each finished probe's result under its name, and how every probe ended.

    `meanwhile` runs on the calling thread while the probes work (the CLI imports its rules and
    renderers there, so that start-up overlaps the slow torch child)."""
    results: dict[str, Any] = {}
    errors: dict[str, tuple[str, str]] = {}
    finished: dict[str, float] = {}

    def work(probe: Probe) -> None:
        start = time.monotonic()
        try:
            results[probe.name] = probe.collect(ctx)
        except BaseException as exc:  # a probe must never take the report down
            import traceback  # only on this path: start-up time matters for `cudadoctor gpus`

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
        limit = ctx.timeout if ctx.timeout is not None else probe.timeout
        t.join(max(0.0, start + limit - time.monotonic()))
        if t.is_alive():
            outcomes.append(
                ProbeOutcome(
                    probe.name,
                    "timeout",
                    round(time.monotonic() - start, 3),
                    error=f"did not finish within {limit:g} s",
                )
            )
        elif probe.name in errors:
            message, tb = errors[probe.name]
            outcomes.append(ProbeOutcome(probe.name, "crashed", round(finished[probe.name], 3), message, tb))
        else:
            facts[probe.name] = results[probe.name]
            outcomes.append(ProbeOutcome(probe.name, "ok", round(finished[probe.name], 3)))
    return facts, outcomes
