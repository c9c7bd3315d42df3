from __future__ import annotations

from cudadoctor.backends.torchenv import query_torch
from cudadoctor.facts import TorchFacts
from cudadoctor.probes import Context


def collect(ctx: Context) -> TorchFacts:
    # torch import plus CUDA init can take several seconds on a cold cache: its own, longer bound.
    return query_torch(ctx.python, timeout=ctx.torch_timeout, env=dict(ctx.environ))
