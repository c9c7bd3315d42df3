"""`cudadoctor fleet`: a torchrun worker that checks every node of a job side by side.

    cudadoctor fleet --nnodes N --nproc-per-node G --rdzv-backend c10d --rdzv-endpoint HOST:PORT \\
        [--full | --quick] [--expect-gpus G] [--expect-nodes N]
    torchrun --nnodes N --nproc-per-node G … -m cudadoctor fleet [--full | --quick] …   (the same, under torchrun)

Given torchrun's options, fleet starts torchrun's launcher itself (run_launcher): in a child of this
interpreter (backends/children/fleet_launch_child.py), whose workers are this same command without those options.
The doctor then prints rank 0's report and exits with its code; torchrun's own ChildFailedError traceback,
which follows a failed gate when torchrun is the launcher, never comes.

This process stays torch-free: each node's local rank 0 runs the same probes as `check` (the torch probe
in its own child), then every worker starts backends/children/fleet_child.py, which does the rendezvous, the
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
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import click

from cudadoctor import probes
from cudadoctor.commands.options import Seconds, build, names_option, size_option
from cudadoctor.commands.output import check_writable, echo, fail, run_command, write
from cudadoctor.locale import _
from cudadoctor.model import ProbeOutcome, Severity
from cudadoctor.report import EXIT_INCOMPLETE, EXIT_OK

if TYPE_CHECKING:
    from cudadoctor.backends.fleet import Launch
    from cudadoctor.facts.fleet import FleetFacts
    from cudadoctor.model import Finding
    from cudadoctor.report import Report

FORMATS = ("text", "json", "markdown", "junit")
MiB = 1 << 20
GiB = 1 << 30
# --quick: a Slurm prolog or HealthCheckProgram is killed after 60 s (cuda-facts §12)
# The bounds add up to about 35 s, so start-up and a loaded node still leave a wide margin under 60 s.
QUICK = {"check": 12.0, "join": 15.0, "timeout": 8.0, "size": 64 * MiB}
LIMITS = ("min_tflops", "min_memory_gbps", "min_h2d_gbps", "min_busbw")  # expected figures (config: [fleet])


@dataclass(frozen=True)
class FleetOptions:
    """What `fleet` was asked, but torchrun's launcher options (LAUNCH_OPTIONS): one field per option."""

    full: bool = False
    quick: bool = False
    expect_gpus: int | None = None
    expect_nodes: int | None = None
    fmt: str = "text"
    as_json: bool = False
    output: str | None = None
    junit: str | None = None
    redact: bool = False
    fail_on: str | None = None
    timeout: float | None = None
    join_timeout: float | None = None
    check_timeout: float | None = None
    skip: str | None = None
    max_size: int = 1 << 30
    pairwise: bool = False
    backend: str | None = None
    min_tflops: float | None = None
    min_memory_gbps: float | None = None
    min_h2d_gbps: float | None = None
    min_busbw: float | None = None
    verbose: bool = False

    @property
    def format(self) -> str:
        return "json" if self.as_json else self.fmt

    def bounded(self) -> FleetOptions:
        """With the collectives' and the join's bounds set: the option's, --quick's, or the default."""
        timeout = self.timeout or (QUICK["timeout"] if self.quick else 60.0)
        return replace(
            self, timeout=timeout, join_timeout=self.join_timeout or (QUICK["join"] if self.quick else 120.0)
        )


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


def child_config(opts: FleetOptions, nodes: int, check_bound: float) -> tuple[dict[str, Any], float]:
    """What the child does, and how long its parent lets it run (`opts` with its bounds set)."""
    full, quick = opts.full, opts.quick
    timeout, join = opts.timeout or 0.0, opts.join_timeout or 0.0
    szs = sizes(opts.max_size, full, quick)
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
        "pairs": "always" if opts.pairwise else bool(full),
        "busbw_floor": opts.min_busbw,
        "backend": opts.backend,
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


# torchrun's launcher options that `cudadoctor fleet` takes itself: (option, its parameter name)
LAUNCH_OPTIONS = (
    ("--nnodes", "nnodes"),
    ("--nproc-per-node", "nproc_per_node"),
    ("--rdzv-backend", "rdzv_backend"),
    ("--rdzv-endpoint", "rdzv_endpoint"),
    ("--rdzv-id", "rdzv_id"),
    ("--rdzv-conf", "rdzv_conf"),
    ("--standalone", "standalone"),
    ("--node-rank", "node_rank"),
    ("--master-addr", "master_addr"),
    ("--master-port", "master_port"),
)
RDZV_JOIN = 600.0  # torchrun's c10d join_timeout when --rdzv-conf does not set one


def _validate(o: FleetOptions, rank0: bool) -> set[str]:
    """The options every worker checks before it starts, and the launcher before it starts any."""
    if o.full and o.quick:
        fail(_("--full and --quick do not go together"))
    skip = names_option("--skip", o.skip, probes.names())
    if rank0:
        for option, path in (("--output", o.output), ("--junit", o.junit)):
            if path is not None:
                check_writable(path, option)
    return skip


def worker_args(ctx: click.Context) -> list[str]:
    """This command's own options as given (not the launcher's), for the workers' command line."""
    launch = {name for _, name in LAUNCH_OPTIONS}
    out: list[str] = []
    for param in ctx.command.params:
        name = param.name or ""
        source = ctx.get_parameter_source(name)
        if name in launch or not isinstance(param, click.Option) or source is None:
            continue
        if source.name in ("DEFAULT", "DEFAULT_MAP"):
            continue
        value = ctx.params.get(name)
        flag = max(param.opts, key=len)  # the long form
        if param.is_flag:
            out += [flag] if value else []
        elif value is not None:
            out.append(f"{flag}={_option_text(value, param.callback is size_option)}")
    if ctx.find_root().get_parameter_source("lang") is click.core.ParameterSource.COMMANDLINE:
        from cudadoctor.locale import current

        out.append(f"--lang={current()}")  # the group's option: the report is in the language asked for
    return out


def _option_text(value: Any, size: bool = False) -> str:
    if size and isinstance(value, int):
        from cudadoctor.knowledge.units import exact_size

        return exact_size(value)  # a size with its unit: a bare number is refused as bytes-by-accident
    return repr(value) if isinstance(value, float) else str(value)


def launcher_argv(launch: dict[str, Any], workers: list[str], log_dir: str) -> list[str]:
    """torchrun's arguments: the launcher options as given, no restarts (a gate runs once), then the
    workers: this command again."""
    argv: list[str] = []
    for option, name in LAUNCH_OPTIONS:
        value = launch.get(name)
        if value is True:
            argv.append(option)
        elif value not in (None, False):
            argv.append(f"{option}={value}")
    return [*argv, "--max-restarts=0", f"--log-dir={log_dir}", "-m", "cudadoctor", "fleet", *workers]


def _rdzv_join(conf: str | None) -> float:
    for item in (conf or "").split(","):
        key, _sep, value = item.partition("=")
        if key.strip() == "join_timeout":
            try:
                return float(value)
            except ValueError:
                break
    return RDZV_JOIN


def launch_bound(o: FleetOptions, launch: dict[str, Any], skip: set[str]) -> float:
    """How long the launcher may run: torchrun's rendezvous, then the slowest worker (its node check
    and its own child), with room for the interpreters to start."""
    nodes = str(launch.get("nnodes") or "1").rpartition(":")[2]
    check_timeout = QUICK["check"] if o.quick else o.check_timeout
    check = _check_bound(skip, check_timeout)
    _cfg, child = child_config(o.bounded(), int(nodes) if nodes.isdigit() else 1, check)
    return _rdzv_join(launch.get("rdzv_conf")) + check + child + 30 + 120


def _terminal_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """Rank 0 writes into a pipe: tell its console the width and colours of the doctor's own."""
    from cudadoctor.render import text

    console = text.make_console()
    if not console.is_terminal:
        return {}
    env = {"COLUMNS": str(console.width)}
    if console.color_system and "NO_COLOR" not in environ:
        env["FORCE_COLOR"] = "1"
    return env


def exit_code(failures: Mapping[int, int | None]) -> int:
    """The gate's one exit code from the workers': rank 0's (with several nodes the other ranks exit with
    it too); a worker ended by a signal, or one that said nothing, leaves the gate incomplete."""
    if not failures:
        return EXIT_OK
    code = failures.get(0, failures[min(failures)])
    return code if code is not None and 0 < code < 128 else EXIT_INCOMPLETE


def run_launcher(launch: dict[str, Any], workers: list[str], o: FleetOptions) -> int:
    import shutil
    import tempfile

    from cudadoctor.backends import fleet as backend

    # torchrun marks its workers so; RANK alone is no sign (Kubeflow's PyTorchJob sets it on every pod)
    if "TORCHELASTIC_RUN_ID" in os.environ:
        given = next(option for option, name in LAUNCH_OPTIONS if launch.get(name) not in (None, False))
        fail(
            _(
                "{option} is torchrun's option, and this is already a torchrun worker: run either"
                " `cudadoctor fleet {option} …` or `torchrun {option} … -m cudadoctor fleet`"
            ).format(option=given)
        )
    skip = _validate(o, rank0=True)
    o = _config_limits(o)
    env = {**os.environ, **_terminal_environ(os.environ)}
    log_dir = tempfile.mkdtemp(prefix="cudadoctor-fleet-")  # torchrun's per-worker error files
    try:
        run = backend.start_launcher(launcher_argv(launch, workers, log_dir), launch_bound(o, launch, skip), env)
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
    if run.stderr.strip():
        echo(run.stderr.rstrip("\n"), err=True)
    if run.report:
        echo(run.report, nl=False)
    if run.error is not None:
        echo(_("cudadoctor fleet: torchrun's launcher failed: {error}").format(error=run.error), err=True)
        return EXIT_INCOMPLETE
    return exit_code(run.failures)


def run_fleet(o: FleetOptions) -> int:
    from cudadoctor.backends import fleet as backend

    check_environ(os.environ)
    backend.bind_to_launcher(os.environ)
    lau = backend.launch(os.environ)
    skip = _validate(o, rank0=lau.rank == 0)
    o = o.bounded()
    check_timeout = QUICK["check"] if o.quick else o.check_timeout
    payload, check_bound = None, _check_bound(skip, check_timeout)
    if lau.local_rank == 0:
        try:
            payload, check_bound = _node_check(skip, check_timeout)
        except Exception as exc:  # the node is still part of the fleet; rank 0 says its check failed
            payload = json.dumps({"node_check_error": f"{type(exc).__name__}: {exc}"})
    o = _config_limits(o)
    cfg, bound = child_config(o, lau.nodes or 1, check_bound)
    cfg["connect_timeout"] = connect_timeout(o.join_timeout or 0.0, check_bound, lau, os.environ)
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
    if o.verbose:
        start = next((e["t"] for e in run.events if isinstance(e.get("t"), (int, float))), 0.0)
        for e in run.events:
            what = e.get("step") or ", ".join(k for k in e if k not in ("event", "t"))
            echo(f"fleet: {float(e.get('t', start)) - start:7.2f} s  {e.get('event')}  {what}", err=True)
        echo(f"fleet: rank 0 child started at {start:.3f} (epoch)", err=True)
    ff = backend.assemble(run, lau, o.expect_nodes, o.expect_gpus)
    ff.endpoint = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}" if "MASTER_PORT" in os.environ else None
    ff.limits = {k: float(getattr(o, k)) for k in LIMITS if getattr(o, k) is not None}
    identities = _redact_labels(ff) if o.redact else []
    rep = report(ff, run.error, run.timed_out, o)
    emit(rep, ff, o, identities)
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


def _config_limits(o: FleetOptions) -> FleetOptions:
    """Expected figures from the config's [fleet] table, where no option gave them."""
    from cudadoctor.commands.config import ConfigError, find_config, fleet_limits

    try:
        limits = fleet_limits(find_config())
    except ConfigError as exc:
        fail(str(exc))
    return replace(o, **{key: value for key, value in limits.items() if getattr(o, key) is None})


def report(ff: FleetFacts, run_error: str | None, timed_out: bool, o: FleetOptions) -> Report:
    """The fleet's report (with --redact, `_redact_labels` has taken the node names out of `ff` first)."""
    from cudadoctor.report import build
    from cudadoctor.rules.fleet import evaluate

    findings = evaluate(ff)
    outcomes = outcomes_of(ff, run_error, timed_out, o.full, o.quick)
    expected = [x.name for x in outcomes if x.status != "skipped" and "/" not in x.name]
    from cudadoctor.render.localize import findings as localized

    findings = localized(findings)  # the current language's titles, pages, fix labels, table headers
    return build("fleet", ff, outcomes, findings, Severity(o.fail_on or "error"), expected=expected)


def emit(rep: Report, ff: FleetFacts, o: FleetOptions, identities: list[tuple[str | None, str | None]]) -> None:
    """The report in its format on stdout, and the files asked for; `identities`: what --redact scrubs."""
    from cudadoctor.render import markdown, text
    from cudadoctor.render.junit import render_cases
    from cudadoctor.render.redact import redact, report_data

    fmt = o.format
    data = report_data(rep, False)
    for host, user in identities:
        data = redact(data, host, user)
    json_text = json.dumps(data, indent=2) + "\n"
    junit_text = render_cases(rep, "cudadoctor.fleet", list(per_node(ff, rep.findings).items()))
    if o.output:
        write(o.output, json_text)
    if o.junit:
        write(o.junit, junit_text)
    if fmt == "json":
        echo(json_text, nl=False)
    elif fmt == "markdown":
        echo(markdown.render(data))
    elif fmt == "junit":
        echo(junit_text, nl=False)
    else:
        text.render(rep, text.make_console(), verbose=o.verbose, redact=o.redact)


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


def _nnodes_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """torchrun's --nnodes: N, or MIN:MAX for an elastic job."""
    if value is None:
        return None
    parts = value.split(":")
    if len(parts) <= 2 and all(p.isascii() and p.isdigit() and int(p) > 0 for p in parts):
        if int(parts[0]) <= int(parts[-1]):
            return value
    raise click.BadParameter(_("{value} is not N or MIN:MAX (numbers of nodes)").format(value=repr(value)))


def _nproc_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """torchrun's --nproc-per-node: a number, or auto, gpu, cpu."""
    if value is None or value in ("auto", "gpu", "cpu") or (value.isascii() and value.isdigit() and int(value) > 0):
        return value
    raise click.BadParameter(_("{value} is not a number of ranks, auto, gpu or cpu").format(value=repr(value)))


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
@click.option("--nnodes", callback=_nnodes_option, metavar="N|MIN:MAX", help="torchrun: how many nodes join.")
@click.option(
    "--nproc-per-node",
    callback=_nproc_option,
    metavar="G",
    help="torchrun: ranks on this node, one per GPU (or auto, gpu, cpu).",
)
@click.option("--rdzv-backend", metavar="NAME", help="torchrun: the rendezvous (c10d, static).")
@click.option("--rdzv-endpoint", metavar="HOST:PORT", help="torchrun: where the nodes meet.")
@click.option("--rdzv-id", metavar="ID", help="torchrun: the job's rendezvous id.")
@click.option("--rdzv-conf", metavar="K=V,…", help="torchrun: rendezvous settings (join_timeout=…).")
@click.option("--standalone", is_flag=True, help="torchrun: one node, on a free local port.")
@click.option("--node-rank", type=click.IntRange(min=0), metavar="R", help="torchrun: static rank.")
@click.option("--master-addr", metavar="HOST", help="torchrun: node rank 0's address (static).")
@click.option("--master-port", type=click.IntRange(1, 65535), metavar="PORT", help="torchrun: its port (static).")
def fleet(**options: Any) -> None:
    """Check the nodes of a job side by side: torchrun's launcher, then the report.

    \b
    cudadoctor fleet --nnodes N --nproc-per-node G --rdzv-backend c10d \\
        --rdzv-endpoint HOST:PORT [--full] [--expect-gpus G]

    Run the same line on every node. Rank 0's node prints the report; the exit code is its status on
    every node. `torchrun … -m cudadoctor fleet` works too (torchrun then adds its own traceback when
    the gate fails). Recipes for Slurm and Kubernetes: docs/fleet.md.
    """
    launch = {name: options.pop(name) for _option, name in LAUNCH_OPTIONS}
    o = build(FleetOptions, options)
    if any(value not in (None, False) for value in launch.values()):
        run_command(run_launcher, launch, worker_args(click.get_current_context()), o)
    run_command(run_fleet, o)
