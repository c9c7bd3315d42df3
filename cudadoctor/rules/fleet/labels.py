"""How a fleet's nodes and ranks are named in findings: by label, grouped, bounded in length. The names
are message templates (model.msg) where they hold words, so a translation names them in its language."""

from __future__ import annotations

from collections.abc import Iterable

from cudadoctor.facts.fleet import FleetFacts
from cudadoctor.model import Message, msg, msg_n

S = "Fleet"


def joined(parts: list[str], sep: str = ", ") -> str:
    """The parts in a list. Names and numbers are joined as they are; where a part is a template (words a
    translation shows in its language), the separator is one too, so the translation joins them its way."""
    if not any(isinstance(p, Message) for p in parts):
        return sep.join(parts)
    out = parts[-1]
    for part in reversed(parts[:-1]):
        out = msg("{first}; {rest}" if sep == "; " else "{first}, {rest}", first=part, rest=out)
    return out


def nodes_text(labels: list[str], total: int) -> str:
    if total > 1 and len(labels) == total:
        return msg("all {n} nodes", n=total)
    if len(labels) > 6:
        return msg("{names} and {n} more", names=", ".join(labels[:6]), n=len(labels) - 6)
    return ", ".join(labels)


def ranks_text(ff: FleetFacts, ranks: Iterable[int]) -> str:
    ranks = sorted(ranks)
    by_node: dict[str, list[int]] = {}
    for r in ranks:
        info = next((i for i in ff.ranks if i.rank == r), None)
        by_node.setdefault(ff.label(info.node_rank) if info else _guess_node(ff, r), []).append(r)
    parts = [msg("{ranks} ({node})", ranks=", ".join(map(str, rs)), node=node) for node, rs in by_node.items()]
    return msg_n("rank {ranks}", "ranks {ranks}", len(ranks), ranks=joined(parts, "; "))


def _guess_node(ff: FleetFacts, rank: int) -> str:
    # torchrun numbers ranks node by node: with the same --nproc-per-node everywhere, rank // that
    if ff.local_world_size:
        return msg("node rank {n}", n=rank // ff.local_world_size)
    return msg("node unknown")
