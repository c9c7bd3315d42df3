from __future__ import annotations

from cudadoctor.backends.cuda import query_libcuda
from cudadoctor.facts import CudaDriverFacts
from cudadoctor.probes import Context


def collect(ctx: Context) -> CudaDriverFacts:
    return query_libcuda(timeout=ctx.child_timeout)
