"""Phase 0, whether the ranks met and finished: nodes and ranks that never arrived, gloo and torch
versions, hangs and failed ranks, a run that could not finish."""

from __future__ import annotations

from collections import Counter

from cudadoctor.facts.fleet import FleetFacts
from cudadoctor.model import Finding, Fix, Severity, Table, msg, msg_n
from cudadoctor.rules.catalogue import entry, fix
from cudadoctor.rules.fleet.labels import S, nodes_text, ranks_text

NODES_MISSING = entry(
    "CD803",
    "fleet-nodes-missing",
    Severity.ERROR,
    S,
    "Fewer nodes joined than expected",
    """torchrun's rendezvous closed with fewer nodes than --expect-nodes (an elastic --nnodes MIN:MAX
    range lets it start without them). The missing nodes never reached the rendezvous endpoint.""",
)
NEVER_ARRIVED = entry(
    "CD804",
    "fleet-ranks-never-arrived",
    Severity.ERROR,
    S,
    "Ranks never arrived",
    """These ranks were started by torchrun but never reported to the rendezvous store within
    --join-timeout: their node's check hung, the worker crashed at start, or the node cannot reach
    the store on MASTER_ADDR:MASTER_PORT.""",
)
GLOO_FAILED = entry(
    "CD805",
    "fleet-gloo-failed",
    Severity.ERROR,
    S,
    "The ranks reach the store but not each other",
    """Every rank reached the rendezvous store, but the gloo process group (direct TCP connections
    between all ranks) failed. Usually a firewall between nodes, or gloo picking an interface the
    other nodes cannot route to (docker0, a management network).""",
)
MIXED_TORCH = entry(
    "CD806",
    "fleet-mixed-torch",
    Severity.WARNING,
    S,
    "Ranks run different torch versions",
    """torch.distributed only promises that ranks of the same torch (and NCCL) talk to each other:
    the rendezvous, gloo and NCCL wire formats change between releases. Mixed versions fail at
    init, hang in the first collective, or silently disagree.""",
)
HANG = entry(
    "CD807",
    "fleet-hang",
    Severity.ERROR,
    S,
    "A collective did not finish in time",
    """Every collective fleet runs has a time bound. When one expires, the ranks that never arrived
    are named from the rendezvous store; when all of them arrived, the collective itself hung, which
    on one node usually means PCIe ACS or the IOMMU breaking peer-to-peer copies (nccl#631, #2079).""",
)
RANK_FAILED = entry(
    "CD808",
    "fleet-rank-failed",
    Severity.ERROR,
    S,
    "Ranks stopped before the end",
    """A rank died or stopped with an error, so the collectives it belonged to failed for everyone.
    The rank that never reported back is the root cause; the others' errors follow from it.""",
)
INCOMPLETE = entry(
    "CD810",
    "fleet-incomplete",
    Severity.ERROR,
    S,
    "fleet could not finish",
    """Rank 0's measurement child did not finish within its time bound or could not start, so part of
    the fleet was not checked. What it learnt before is reported.""",
)


def nodes_and_ranks(ff: FleetFacts) -> list[Finding]:
    out: list[Finding] = []
    if ff.expected_nodes is not None and ff.nodes and len(ff.nodes) < ff.expected_nodes:
        out.append(
            NODES_MISSING.finding(
                title=msg(
                    "{n} of {expected} nodes joined: {nodes}",
                    n=len(ff.nodes),
                    expected=ff.expected_nodes,
                    nodes=nodes_text([n.label for n in ff.nodes], len(ff.nodes)),
                ),
                fix=[
                    fix(
                        "find the nodes that are not in the list and look at their torchrun output; from a missing "
                        "node, the rendezvous endpoint must answer",
                        "nc -zv " + (ff.endpoint.replace(":", " ") if ff.endpoint else "HOST PORT  # --rdzv-endpoint"),
                    )
                ],
            )
        )
    if ff.never_arrived:
        out.append(
            NEVER_ARRIVED.finding(
                title=msg("{ranks} never arrived", ranks=ranks_text(ff, ff.never_arrived)),
                fix=[
                    fix(
                        "run the node check by hand on that node; if it is healthy, give slow nodes longer",
                        "cudadoctor check",
                        "torchrun … -m cudadoctor fleet --join-timeout 300",
                    )
                ],
            )
        )
    return out


def _torch_versions(ff: FleetFacts) -> tuple[Counter, dict[str, list[int]]]:
    by_version: dict[str, list[int]] = {}
    for i in ff.ranks:
        if i.torch:
            by_version.setdefault(i.torch, []).append(i.rank)
    return Counter({v: len(r) for v, r in by_version.items()}), by_version


def gloo_and_torch(ff: FleetFacts) -> list[Finding]:
    out: list[Finding] = []
    counts, by_version = _torch_versions(ff)
    mixed = len(counts) > 1
    broken = bool(ff.gloo_errors) or ff.hang is not None or bool(ff.rank_errors)
    if mixed:
        common = counts.most_common(1)[0][0]
        rows = [[v, ranks_text(ff, rs)] for v, rs in sorted(by_version.items(), key=lambda x: -len(x[1]))]
        base = common.split("+")[0]
        variant = common.partition("+")[2]
        index = f" --index-url https://download.pytorch.org/whl/{variant}" if variant.startswith("cu") else ""
        out.append(
            MIXED_TORCH.finding(
                title=msg(
                    "Ranks run {n} torch versions: {versions}", n=len(counts), versions=", ".join(sorted(counts))
                ),
                severity=Severity.ERROR if broken else Severity.WARNING,
                tables=[Table(["torch", "Ranks"], rows)],
                fix=[
                    fix(
                        msg("install the fleet's most common torch ({version}) on the others", version=common),
                        f"python -m pip install 'torch=={base}'{index}",
                    )
                ],
            )
        )
    if ff.gloo_errors:
        rows = [[ranks_text(ff, [r]), e] for r, e in sorted(ff.gloo_errors.items())]
        out.append(
            GLOO_FAILED.finding(
                title=msg(
                    "The gloo process group failed on {ranks}",
                    ranks=msg_n("{n} rank", "{n} ranks", len(ff.gloo_errors), n=len(ff.gloo_errors)),
                ),
                tables=[Table(["Rank", "Error"], rows)],
                cause=MIXED_TORCH.code if mixed else None,
                fix=[
                    fix(
                        "name the interface the nodes reach each other on (ip -br addr shows them), for gloo and NCCL",
                        "export GLOO_SOCKET_IFNAME=eth0 NCCL_SOCKET_IFNAME=eth0",
                    ),
                    fix(
                        "allow TCP between the nodes (gloo and NCCL bootstrap use ephemeral ports)",
                        "sudo iptables -S | grep -iE 'drop|reject'",
                    ),
                ],
            )
        )
    return out


def hang_and_failures(ff: FleetFacts) -> list[Finding]:
    out: list[Finding] = []
    if ff.hang is not None:
        h = ff.hang
        bound = msg(" within {seconds} s", seconds=f"{h.seconds:g}") if h.seconds else ""
        late = {r: s for r, s in h.not_arrived.items()}
        if late:
            rows = [[ranks_text(ff, [r]), s or "never started"] for r, s in sorted(late.items())]
            out.append(
                HANG.finding(
                    title=msg(
                        "{step} did not finish{bound}: {ranks} never arrived",
                        step=h.step,
                        bound=bound,
                        ranks=ranks_text(ff, late),
                    ),
                    tables=[Table(["Rank", "Last step reached"], rows)],
                    fix=[
                        fix(
                            "look at the late ranks' node: its torchrun output, and its own check",
                            "cudadoctor check",
                            "sudo dmesg | grep -iE 'NVRM: Xid|oom'",
                        )
                    ],
                )
            )
        else:
            nccl = ff.backend in ("nccl", None)
            out.append(
                HANG.finding(
                    title=msg(
                        "{step} did not finish{bound}: every rank reached it, so the collective itself hung"
                        if h.seconds
                        else "{step} did not finish",
                        step=h.step,
                        bound=bound,
                    ),
                    fix=_hang_fix() if nccl else [],
                )
            )
    dead = dict(ff.unfinished)
    errors = {r: e for r, e in ff.rank_errors.items() if r not in dead}
    if dead or errors:
        rows = [[ranks_text(ff, [r]), f"never reported back (last step: {s or 'unknown'})"] for r, s in dead.items()]
        rows += [[ranks_text(ff, [r]), e] for r, e in sorted(errors.items())]
        if dead:
            title = msg(
                "{ranks} died or hung; {others} failed after it" if errors else "{ranks} died or hung",
                ranks=ranks_text(ff, dead),
                others=msg_n("{n} other rank", "{n} other ranks", len(errors), n=len(errors)),
            )
        else:
            first = next(iter(errors.values()))
            title = msg("{ranks} stopped with an error: {error}", ranks=ranks_text(ff, errors), error=first)
        out.append(
            RANK_FAILED.finding(
                title=title,
                tables=[Table(["Rank", "What happened"], rows)],
                cause=HANG.code if ff.hang is not None else None,
                fix=[
                    fix(
                        "read the failing rank's own output in its node's torchrun log, and check the node",
                        "cudadoctor check",
                    )
                ],
            )
        )
    if ff.child_error and ff.hang is None and not dead and not errors:
        out.append(INCOMPLETE.finding(title=msg("fleet could not finish: {error}", error=ff.child_error)))
    return out


def _hang_fix() -> list[Fix]:
    return [
        fix(
            "confirm that peer-to-peer copies are the cause: if fleet passes with P2P off, PCIe ACS or the IOMMU "
            "breaks them",
            "NCCL_P2P_DISABLE=1 torchrun … -m cudadoctor fleet --full",
        ),
        fix(
            "then fix it for good: the IOMMU in passthrough (kernel command line), or ACS off in the BIOS",
            "sudo grubby --update-kernel=ALL --args=iommu=pt   # RHEL/Fedora; Debian/Ubuntu: /etc/default/grub",
            "sudo lspci -vvv | grep -i 'ACSCtl:.*SrcValid+'",
        ),
        fix("see where NCCL stops", "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P,NET torchrun … -m cudadoctor fleet"),
    ]
