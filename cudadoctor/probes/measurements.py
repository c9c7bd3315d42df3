from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from cudadoctor.probes import Context

if TYPE_CHECKING:
    from cudadoctor.backends.measure import SharedMeasurement
    from cudadoctor.facts import BandwidthFacts, SmokeFacts

_LOCK = threading.Lock()


def _measurement(ctx: Context) -> SharedMeasurement:
    # one child per run, kept on the run's Context: whichever of the two probes asks first starts it
    from cudadoctor.backends.measure import SharedMeasurement

    with _LOCK:
        if "measurement" not in ctx.shared:
            ctx.shared["measurement"] = SharedMeasurement(
                ctx.python, ctx.measurements, timeout=ctx.measure_timeout, size=ctx.transfer_size
            )
        return ctx.shared["measurement"]


def collect_bandwidth(ctx: Context) -> BandwidthFacts:
    return _measurement(ctx).bandwidth()


def collect_smoke(ctx: Context) -> SmokeFacts:
    return _measurement(ctx).smoke()
