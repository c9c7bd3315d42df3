"""How a fleet's nodes and ranks are named in findings: by label, grouped, bounded in length."""

from __future__ import annotations

from collections.abc import Iterable

from cudadoctor.facts.fleet import FleetFacts

S = "Fleet"


def nodes_text(labels: list[str], total: int) -> str:
    if total > 1 and len(labels) == total:
        return f"all {total} nodes"
    if len(labels) > 6:
        return ", ".join(labels[:6]) + f" and {len(labels) - 6} more"
    return ", ".join(labels)


def ranks_text(ff: FleetFacts, ranks: Iterable[int]) -> str:
    ranks = sorted(ranks)
    by_node: dict[str, list[int]] = {}
    for r in ranks:
        info = next((i for i in ff.ranks if i.rank == r), None)
        by_node.setdefault(ff.label(info.node_rank) if info else _guess_node(ff, r), []).append(r)
    parts = [f"{', '.join(map(str, rs))} ({node})" for node, rs in by_node.items()]
    return ("rank " if len(ranks) == 1 else "ranks ") + "; ".join(parts)


def _guess_node(ff: FleetFacts, rank: int) -> str:
    # torchrun numbers ranks node by node: with the same --nproc-per-node everywhere, rank // that
    if ff.local_world_size:
        return f"node rank {rank // ff.local_world_size}"
    return "node unknown"
