"""`cudadoctor fleet`: a torchrun worker that checks every node of a job side by side.

    torchrun --nnodes N --nproc-per-node G --rdzv-backend c10d --rdzv-endpoint HOST:PORT \\
        -m cudadoctor fleet [--full | --quick] [--expect-gpus G] [--expect-nodes N]

This process stays torch-free: each node's local rank 0 runs the same probes as `check` (the torch probe
in its own child), then every worker starts backends/fleet_child.py, which does the rendezvous, the
gloo group, the measurements and the collectives under time bounds. Rank 0 renders the one report;
the other ranks print nothing on stdout and exit with rank 0's code (with several nodes) or 0: a non-zero
exit of their own would make torchrun tear down the node's other workers, rank 0 among them, before it
has reported. The exception is a rank that cannot reach rank 0 at all: one line on stderr, exit 3.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from cudadoctor import probes
from cudadoctor.cli import Seconds, echo, fail, names_option, run_command, size_option
from cudadoctor.locale import _
from cudadoctor.report import EXIT_INCOMPLETE, EXIT_OK, ProbeOutcome, Severity

if TYPE_CHECKING:
    from cudadoctor.backends.fleet import Launch
    from cudadoctor.facts.fleet import FleetFacts
    from cudadoctor.report import Finding, Report

FORMATS = ("text", "json", "markdown", "junit")
MiB = 1 << 20
GiB = 1 << 30
# --quick: a Slurm prolog or HealthCheckProgram is killed after 60 s (cuda-facts §12)
# The bounds add up to about 35 s, so start-up and a loaded node still leave a wide margin under 60 s.
QUICK = {"check": 12.0, "join": 15.0, "timeout": 8.0, "size": 64 * MiB}


def sizes(max_size: int, full: bool, quick: bool) -> list[int]:
    """1 MiB, 2 MiB, … up to max_size (nccl-tests' -b 1M -e 1G -f 2); --quick: one size."""
    if quick:
        return [min(QUICK["size"], max_size)] if max_size >= MiB else [max_size]
    if not full:
        return []
    out, s = [], MiB
    while s <= max_size:
        out.append(s)
        s *= 2
    return out or [max_size]


def child_config(opts: dict[str, Any], nodes: int, check_bound: float) -> tuple[dict[str, Any], float]:
    """What the child does, and how long its parent lets it run."""
    full, quick = opts["full"], opts["quick"]
    timeout, join = opts["timeout"], opts["join_timeout"]
    szs = sizes(opts["max_size"], full, quick)
    groups = ["node", "world"] if full else (["world"] if nodes > 1 else ["node"])
    cfg: dict[str, Any] = {
        "timeout": timeout,
        "join_timeout": join,
        # the others wait for rank 0, which runs its node's check first
        "wait_rank0": check_bound + join + 15,
        "gpu": full,
        "sizes": szs,
        "groups": groups,
        "lag_iters": 20 if full else 0,
        "pairs": "always" if opts["pairwise"] else bool(full),
        "busbw_floor": opts["min_busbw"],
        "backend": opts["backend"],
        "warmup": 3 if full else 1,
        "iters": 10 if full else 3,
        # several nodes: the other ranks wait for rank 0's exit code (see run_fleet)
        "verdict_wait": 60 if nodes > 1 else 0,
    }
    steps = 4 + len(szs) * len(groups) + (1 if cfg["lag_iters"] else 0) + (max(nodes - 1, 0) if full else 0)
    bound = cfg["wait_rank0"] + join + timeout * steps + (180 if full else 0) + cfg["verdict_wait"] + 30
    return cfg, bound


def _check_bound(skip: set[str], timeout: float | None) -> float:
    """How long a node's check may take: --check-timeout, or the longest bound of the probes it runs."""
    chosen = probes.select(set(), skip, False)
    if not chosen:
        return 0.0
    return timeout if timeout is not None else max(p.timeout for p in chosen)


def _node_check(skip: set[str], timeout: float | None) -> tuple[str | None, float]:
    """This node's check report as JSON text, as `check` would save it, and the probes' longest bound."""
    from cudadoctor.commands.check import collect, diagnose
    from cudadoctor.render.redact import report_data

    chosen = probes.select(set(), skip, False)
    bound = _check_bound(skip, timeout)
    if not chosen:
        return None, 0.0
    facts, outcomes = collect(chosen, sys.executable, timeout)
    rep = diagnose(facts, outcomes)
    return json.dumps(report_data(rep, False)), bound


def _redact_labels(ff: FleetFacts) -> list[tuple[str | None, str | None]]:
    """Node names out of the facts before any rule writes them into a title; returns what to scrub."""
    identities = []
    for node in ff.nodes:
        system = getattr(node.facts, "system", None)
        identities.append((node.host, getattr(system, "user", None)))
        node.label, node.host = f"node{node.node_rank}", None
    for info in ff.ranks:
        info.host = None
    return identities


def per_node(ff: FleetFacts, findings: list[Finding]) -> dict[str, list[Finding]]:
    """The findings that name each node (in their title or tables), for one JUnit testcase per node."""
    out: dict[str, list[Finding]] = {n.label: [] for n in ff.nodes}
    for label in out:
        pattern = re.compile(rf"(?<![\w.-]){re.escape(label)}(?![\w.-])")
        for f in findings:
            text = " ".join([f.title, *(" ".join(map(str, row)) for t in f.tables for row in t.rows)])
            if pattern.search(text) or (len(out) == 1 and f.severity is not Severity.OK):
                out[label].append(f)
    return out


def outcomes_of(ff: FleetFacts, run_error: str | None, timed_out: bool, full: bool, quick: bool) -> list[ProbeOutcome]:
    from cudadoctor.rules.fleet import node_outcomes

    def phase(name: str, wanted: bool, done: bool) -> ProbeOutcome:
        if not wanted:
            return ProbeOutcome(name, "skipped", 0.0)
        if done or (ff.hang is not None and not timed_out) or ff.never_arrived or ff.gloo_errors:
            return ProbeOutcome(name, "ok", 0.0)
        status = "timeout" if timed_out else "crashed"
        return ProbeOutcome(name, status, 0.0, error=run_error or "did not report")

    ended = run_error is None
    out = [
        phase("inventory", True, "inventory" in ff.phases),
        phase("gpu", full, "gpu" in ff.phases or ended),
        phase("nccl", full or quick, "nccl" in ff.phases or ended),
    ]
    return out + node_outcomes(ff)


MAX_WORLD = 1 << 20  # ranks: far above the largest jobs, and within the C int torch takes


def _shown(value: str) -> str:
    return value if value and value.isprintable() and len(value) <= 40 else repr(value[:40])


def check_environ(environ: Mapping[str, str]) -> None:
    """The launcher's variables (torchrun's, or set by hand), before anything uses them: a bad one is one
    line naming it and exit 2, not a wait for a rank that cannot exist or a pybind error as the verdict."""

    def integer(name: str, low: int, high: int, limit: str | None = None) -> int | None:
        raw = environ.get(name)
        if raw is None:
            return None
        text = raw.strip()
        if text.isascii() and text.isdigit() and len(text) <= 12 and low <= int(text) <= high:
            return int(text)
        args = {"name": name, "value": _shown(raw), "low": low, "high": high, "limit": limit}
        if limit is None:
            fail(_("{name}={value} in the environment is not an integer from {low} to {high}").format(**args))
        fail(_("{name}={value} in the environment is not an integer from {low} to {high} ({limit})").format(**args))

    def size_of(name: str) -> str:
        return f"{name}={environ[name].strip()}" if name in environ else _("{name} is not set").format(name=name)

    world = integer("WORLD_SIZE", 1, MAX_WORLD) or 1
    integer("RANK", 0, world - 1, size_of("WORLD_SIZE"))
    local_world = integer("LOCAL_WORLD_SIZE", 1, world, size_of("WORLD_SIZE"))
    if local_world is not None:
        integer("LOCAL_RANK", 0, local_world - 1, size_of("LOCAL_WORLD_SIZE"))
    else:
        integer("LOCAL_RANK", 0, world - 1, size_of("WORLD_SIZE"))
    nodes = integer("GROUP_WORLD_SIZE", 1, world, size_of("WORLD_SIZE"))
    integer("GROUP_RANK", 0, (nodes or world) - 1, size_of("GROUP_WORLD_SIZE" if nodes else "WORLD_SIZE"))
    integer("MASTER_PORT", 1, 65535)
    if world > 1:
        for name in ("MASTER_ADDR", "MASTER_PORT"):
            if not environ.get(name, "").strip():
                fail(
                    _("WORLD_SIZE={world} but {name} is not set: the ranks meet at MASTER_ADDR:MASTER_PORT").format(
                        world=world, name=name
                    )
                )


def run_fleet(**o: Any) -> int:
    from cudadoctor.backends import fleet as backend

    check_environ(os.environ)
    lau = backend.launch(os.environ)
    fmt = "json" if o["as_json"] else o["fmt"]
    if o["full"] and o["quick"]:
        fail(_("--full and --quick do not go together"))
    if o["quick"]:
        o["timeout"] = o["timeout"] or QUICK["timeout"]
        o["join_timeout"] = o["join_timeout"] or QUICK["join"]
    o["timeout"] = o["timeout"] or 60.0
    o["join_timeout"] = o["join_timeout"] or 120.0
    skip = names_option("--skip", o["skip"], probes.names())
    if lau.rank == 0:
        from cudadoctor.commands.check import _check_writable

        for option, path in (("--output", o["output"]), ("--junit", o["junit"])):
            if path is not None:
                _check_writable(path, option)
    check_timeout = QUICK["check"] if o["quick"] else o["check_timeout"]
    payload, check_bound = None, _check_bound(skip, check_timeout)
    if lau.local_rank == 0:
        try:
            payload, check_bound = _node_check(skip, check_timeout)
        except Exception as exc:  # the node is still part of the fleet; rank 0 says its check failed
            payload = json.dumps({"node_check_error": f"{type(exc).__name__}: {exc}"})
    _config_limits(o)
    cfg, bound = child_config(o, lau.nodes or 1, check_bound)
    cfg["connect_timeout"] = connect_timeout(o["join_timeout"], check_bound, lau, os.environ)
    run = backend.run(cfg, payload, bound, os.environ, lau)
    lost = backend.unreachable(run)
    if lost is not None:
        # a rank that cannot join leaves the check of its node undone: not healthy, and not silent
        if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
            line = _(
                "cudadoctor fleet: rank {rank}: could not reach torchrun's rendezvous store at {endpoint}"
                " (MASTER_ADDR:MASTER_PORT) within {seconds:g} s (--join-timeout)"
            )
        else:
            line = _(
                "cudadoctor fleet: rank {rank}: could not reach rank 0 at {endpoint} (MASTER_ADDR:MASTER_PORT)"
                " within {seconds:g} s (--join-timeout): is rank 0 running, and is that address open from here?"
            )
        line = line.format(rank=lau.rank, endpoint=lost["endpoint"], seconds=lost["seconds"])
        echo(line, err=True)
        backend.write_error_file(os.environ, line)
        return EXIT_INCOMPLETE
    if lau.rank != 0:
        if run.error:
            echo(f"cudadoctor fleet: rank {lau.rank}: {run.error}", err=True)
        # exit as rank 0 does: a node whose workers all succeed would wait in torchrun's exit barrier
        code = backend.verdict_of(run) or EXIT_OK
        if code != EXIT_OK:
            backend.write_error_file(os.environ, f"cudadoctor fleet: rank 0 exited {code}; its output has the report")
        return code
    if o["verbose"]:
        start = next((e["t"] for e in run.events if isinstance(e.get("t"), (int, float))), 0.0)
        for e in run.events:
            what = e.get("step") or ", ".join(k for k in e if k not in ("event", "t"))
            echo(f"fleet: {float(e.get('t', start)) - start:7.2f} s  {e.get('event')}  {what}", err=True)
        echo(f"fleet: rank 0 child started at {start:.3f} (epoch)", err=True)
    ff = backend.assemble(run, lau, o["expect_nodes"], o["expect_gpus"])
    ff.endpoint = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}" if "MASTER_PORT" in os.environ else None
    ff.limits = {
        k: float(o[k]) for k in ("min_tflops", "min_memory_gbps", "min_h2d_gbps", "min_busbw") if o[k] is not None
    }
    rep = report(ff, run.error, run.timed_out, o)
    emit(rep, ff, fmt, o)
    if rep.exit_code != EXIT_OK:
        backend.write_error_file(os.environ, f"cudadoctor fleet: {rep.verdict}")
    if (lau.nodes or 1) > 1 and run.end is not None:
        # the report is out before the others may exit (and torchrun may stop this worker)
        sys.stdout.flush()
        backend.publish_verdict(rep.exit_code, os.environ)
    return rep.exit_code


def connect_timeout(join: float, check_bound: float, lau: Launch, environ: Mapping[str, str]) -> float:
    """How long this rank waits to reach the rendezvous store: --join-timeout. Outside torchrun rank 0
    opens the store itself, after its node check: a rank that ran no check of its own (local rank > 0)
    also waits for that check."""
    own_store = environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True"
    return join + (check_bound if own_store and lau.local_rank != 0 else 0.0)


def _config_limits(o: dict[str, Any]) -> None:
    """Expected figures from the config's [fleet] table, where no option gave them."""
    from cudadoctor.commands.config import ConfigError, find_config, fleet_limits

    try:
        limits = fleet_limits(find_config())
    except ConfigError as exc:
        fail(str(exc))
    for key, value in limits.items():
        if o.get(key) is None:
            o[key] = value


def report(ff: FleetFacts, run_error: str | None, timed_out: bool, o: dict[str, Any]) -> Report:
    from cudadoctor.report import build
    from cudadoctor.rules.fleet import evaluate

    if o["redact"]:
        o["_identities"] = _redact_labels(ff)
    findings = evaluate(ff)
    outcomes = outcomes_of(ff, run_error, timed_out, o["full"], o["quick"])
    expected = [x.name for x in outcomes if x.status != "skipped" and "/" not in x.name]
    return build("fleet", ff, outcomes, findings, Severity(o["fail_on"] or "error"), expected=expected)


def emit(rep: Report, ff: FleetFacts, fmt: str, o: dict[str, Any]) -> None:
    from cudadoctor.commands.check import _write
    from cudadoctor.render import markdown, text
    from cudadoctor.render.junit import render_cases
    from cudadoctor.render.redact import redact, report_data

    data = report_data(rep, False)
    for host, user in o.get("_identities", []):
        data = redact(data, host, user)
    json_text = json.dumps(data, indent=2) + "\n"
    junit_text = render_cases(rep, "cudadoctor.fleet", list(per_node(ff, rep.findings).items()))
    if o["output"]:
        _write(o["output"], json_text)
    if o["junit"]:
        _write(o["junit"], junit_text)
    if fmt == "json":
        echo(json_text, nl=False)
    elif fmt == "markdown":
        echo(markdown.render(data))
    elif fmt == "junit":
        echo(junit_text, nl=False)
    else:
        text.render(rep, text.make_console(), verbose=o["verbose"], redact=o["redact"])


def _float_option(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        v = float(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a number") from None
    if not v > 0:
        raise click.BadParameter(f"{value!r} is not a positive number")
    return v


@click.command()
@click.option("--full", is_flag=True, help="Also measure each GPU (phase 1) and NCCL all-reduce 1 MiB-1 GiB (phase 2).")
@click.option("--quick", is_flag=True, help="Inventory and one 64 MiB all-reduce, within 60 s (a Slurm prolog).")
@click.option("--expect-gpus", type=click.IntRange(min=1), metavar="G", help="GPUs every node must show.")
@click.option("--expect-nodes", type=click.IntRange(min=1), metavar="N", help="Nodes that must join.")
@click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="Report format (rank 0)."
)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--output", "-o", type=str, metavar="FILE", help="Also write the JSON report to FILE (rank 0).")
@click.option("--junit", type=str, metavar="FILE", help="Also write JUnit XML, one testcase per node, to FILE.")
@click.option("--redact", is_flag=True, help="Replace host and user names and GPU/MIG UUIDs in the output.")
@click.option("--fail-on", type=click.Choice(["error", "warning"]), help="Lowest severity that fails (default error).")
@click.option("--timeout", type=Seconds(min=0.5), metavar="SECONDS", help="Bound on each collective (default 60).")
@click.option(
    "--join-timeout",
    type=Seconds(min=0.5),
    metavar="SECONDS",
    help="How long rank 0 waits for every rank to arrive (default 120).",
)
@click.option("--check-timeout", type=Seconds(min=0.5), metavar="SECONDS", help="One bound for each node-check probe.")
@click.option("--skip", type=str, metavar="PROBES", help="Node-check probes to skip (comma-separated).")
@click.option(
    "--max-size",
    callback=size_option,
    default="1GiB",
    metavar="SIZE",
    show_default=True,
    help="Largest all-reduce (from 1 MiB, doubling).",
)
@click.option("--pairwise", is_flag=True, help="Always test node pairs (with --full they run when busbw is low).")
@click.option("--backend", type=click.Choice(["nccl", "gloo"]), help="Collectives backend (default nccl with CUDA).")
@click.option("--min-tflops", callback=_float_option, metavar="T", help="Expected bf16 GEMM TFLOP/s per GPU.")
@click.option("--min-memory-gbps", callback=_float_option, metavar="G", help="Expected device-memory GB/s.")
@click.option("--min-h2d-gbps", callback=_float_option, metavar="G", help="Expected pinned host-to-device GB/s.")
@click.option("--min-busbw", callback=_float_option, metavar="G", help="Expected all-reduce bus bandwidth GB/s.")
@click.option("-v", "--verbose", is_flag=True, help="Show rank 0's timeline (stderr) and the phase outcomes.")
def fleet(**options: Any) -> None:
    """Check the nodes of a torchrun job side by side: run it as the job's program.

    \b
    torchrun --nnodes N --nproc-per-node G --rdzv-backend c10d \\
        --rdzv-endpoint HOST:PORT -m cudadoctor fleet [--full] [--expect-gpus G]

    Rank 0 prints the report; its exit code is the status (torchrun exits 1 when rank 0 does).
    Recipes for Slurm and Kubernetes: docs/fleet.md.
    """
    run_command(run_fleet, **options)
