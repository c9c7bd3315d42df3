"""`cudadoctor fleet`: the nodes of a torchrun job side by side (phase 0), each GPU against its SKU and its
fleet (phase 1), all-reduce bus bandwidth inside and across nodes, node pairs and stragglers (phase 2),
and how a run that did not finish ended. Each node's own check findings are reported once, with the
list of nodes they were found on.

- `inventory`: what the nodes are (phase 0); `liveness`: whether the ranks met and finished (phase 0);
- `performance`: GPUs, bus bandwidth, pairs and stragglers (phases 1 and 2);
- `reports`: each node's own check findings; `labels`: how nodes and ranks are named.
"""

from __future__ import annotations

from cudadoctor.facts.fleet import FleetFacts
from cudadoctor.model import Finding, ProbeOutcome
from cudadoctor.rules.fleet.inventory import gpu_count, inventory, mismatch, too_many_ranks
from cudadoctor.rules.fleet.liveness import gloo_and_torch, hang_and_failures, nodes_and_ranks
from cudadoctor.rules.fleet.performance import lags, outliers, phase1, phase2
from cudadoctor.rules.fleet.reports import node_reports


def node_outcomes(ff: FleetFacts) -> list[ProbeOutcome]:
    """The nodes' failed probes, named by node: a fleet with a half-checked node is incomplete."""
    out = []
    for node in ff.nodes:
        for o in node.outcomes:
            if o.failed:
                out.append(ProbeOutcome(f"{node.label}/{o.name}", o.status, o.seconds, o.error))
    return out


def evaluate(ff: FleetFacts) -> list[Finding]:
    from cudadoctor.rules.catalogue import SECTIONS

    found, per_node = node_reports(ff)
    findings: list[Finding] = []
    if ff.nodes:
        findings.append(inventory(ff, per_node))
    findings += nodes_and_ranks(ff)
    findings += gloo_and_torch(ff)
    findings += hang_and_failures(ff)
    findings += gpu_count(ff)
    findings += too_many_ranks(ff)
    findings += mismatch(ff)
    findings += phase1(ff)
    findings += phase2(ff)
    findings += found
    order = {s: i for i, s in enumerate(SECTIONS)}
    findings.sort(key=lambda x: (order[x.section], -x.severity.rank))
    return findings


__all__ = ["evaluate", "lags", "node_outcomes", "outliers"]
