from __future__ import annotations

from typing import TYPE_CHECKING

from cudadoctor.probes import Context

if TYPE_CHECKING:
    from cudadoctor.facts import CudaDriverFacts

# Backends are imported when the probe runs, on its own thread: `check` reaches the slow torch child
# sooner when nothing heavy is imported before the probes start.


def collect(ctx: Context) -> CudaDriverFacts:
    from cudadoctor.backends.cuda import query_libcuda

    return query_libcuda(timeout=ctx.child_timeout)
