from __future__ import annotations

from cudadoctor.backends.nvml import query_driver
from cudadoctor.facts import DriverFacts
from cudadoctor.probes import Context


def collect(ctx: Context) -> DriverFacts:
    return query_driver(with_processes=True)
