from __future__ import annotations

from typing import TYPE_CHECKING

from cudadoctor.probes import Context

if TYPE_CHECKING:
    from cudadoctor.facts import TorchFacts

# Backends are imported when the probe runs, on its own thread: `check` reaches the slow torch child
# sooner when nothing heavy is imported before the probes start.


def collect(ctx: Context) -> TorchFacts:
    from cudadoctor.backends.torchenv import query_torch

    # torch import plus CUDA init can take several seconds on a cold cache: its own, longer bound.
    return query_torch(ctx.python, timeout=ctx.torch_timeout, env=dict(ctx.environ))
