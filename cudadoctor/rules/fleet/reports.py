"""Each node's own `cudadoctor check` findings, reported once with the nodes they were found on."""

from __future__ import annotations

from cudadoctor.facts.fleet import FleetFacts
from cudadoctor.model import Finding, Message, Severity, Table, msg
from cudadoctor.rules.catalogue import entry
from cudadoctor.rules.fleet.labels import S, nodes_text

NODE_REPORT = entry(
    "CD809",
    "fleet-node-report-missing",
    Severity.WARNING,
    S,
    "A node's own check did not arrive",
    """The node's local rank 0 could not run `cudadoctor check` or send its report, so the node is
    only known by what its ranks said (host, torch, NCCL).""",
)


def node_reports(ff: FleetFacts) -> tuple[list[Finding], dict[int, list[Finding]]]:
    """Each node's own check findings, one line per finding with the nodes it was found on."""
    from cudadoctor.rules.check import evaluate

    per_node: dict[int, list[Finding]] = {}
    missing = []
    for node in ff.nodes:
        if node.facts is None:
            missing.append(node)
            continue
        per_node[node.node_rank] = evaluate(node.facts, node.outcomes)
    out: list[Finding] = []
    if missing:
        reasons = [[n.label, n.report_error or "no report arrived"] for n in missing]
        out.append(
            NODE_REPORT.finding(
                title=msg("No check report from {nodes}", nodes=nodes_text([n.label for n in missing], len(ff.nodes))),
                tables=[Table(["Node", "Why"], reasons)],
            )
        )
    groups: dict[tuple[str, str, Severity], tuple[Finding, list[str]]] = {}
    for node in ff.nodes:
        for f in per_node.get(node.node_rank, []):
            if f.severity is Severity.OK:
                continue
            key = (f.code, f.title, f.severity)
            if key not in groups:
                groups[key] = (f, [])
            groups[key][1].append(node.label)
    for f, labels in groups.values():
        if len(ff.nodes) == 1:
            out.append(f)
            continue
        where = nodes_text(labels, len(ff.nodes))
        out.append(
            Finding(
                code=f.code,
                severity=f.severity,
                section=f.section,
                # a title that is a plain text (a catalogue summary) is translated as it is
                title=msg(
                    "{title} [{where}]", title=f.title if isinstance(f.title, Message) else msg(f.title), where=where
                ),
                why=f.why,
                fix=f.fix,
                docs=f.docs,
                tables=f.tables,
                cause=f.cause,
            )
        )
    return out, per_node
