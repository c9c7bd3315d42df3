from __future__ import annotations

from typing import TYPE_CHECKING

from cudadoctor.probes import Context

if TYPE_CHECKING:
    from cudadoctor.facts import DriverFacts

# Backends are imported when the probe runs, on its own thread: `check` reaches the slow torch child
# sooner when nothing heavy is imported before the probes start.


def collect(ctx: Context) -> DriverFacts:
    from cudadoctor.backends.nvml import query_driver

    return query_driver(with_processes=True)
