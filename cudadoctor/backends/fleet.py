"""Start fleet_child.py for this torchrun worker, bounded in time, and read what rank 0's child learnt
into FleetFacts. The worker process itself never imports torch (the house rule): the child does the
rendezvous, the gloo group, the measurements and the collectives."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudadoctor.backends.child import run_child
from cudadoctor.backends.children import script
from cudadoctor.facts.fleet import AllReduce, FleetFacts, GpuPerf, Hang, NodeFacts, RankInfo

CHILD = script("fleet_child.py")
MARK = "CUDADOCTOR_FLEET "
MAX_EVENT = 64 << 20  # one node report is tens of KB; a thousand nodes fit


@dataclass
class Launch:
    """Where this worker sits in the job, from torchrun's environment."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int
    nodes: int | None  # GROUP_WORLD_SIZE: how many nodes torchrun started


def launch(environ: Mapping[str, str]) -> Launch:
    def num(name: str, default: int | None) -> int | None:
        try:
            return int(environ[name])
        except (KeyError, ValueError):
            return default

    return Launch(
        rank=num("RANK", 0) or 0,
        world_size=num("WORLD_SIZE", 1) or 1,
        local_rank=num("LOCAL_RANK", 0) or 0,
        local_world_size=num("LOCAL_WORLD_SIZE", 1) or 1,
        node_rank=num("GROUP_RANK", 0) or 0,
        nodes=num("GROUP_WORLD_SIZE", None),
    )


@dataclass
class ChildRun:
    events: list[dict[str, Any]] = field(default_factory=list)
    timed_out: bool = False
    error: str | None = None  # the child could not start, or ended without its end event
    environ: dict[str, str] = field(default_factory=dict)  # variables fleet set for the child

    @property
    def end(self) -> dict[str, Any] | None:
        return next((e for e in reversed(self.events) if e.get("event") == "end"), None)


def child_environ(environ: Mapping[str, str], lau: Launch) -> tuple[dict[str, str], dict[str, str]]:
    """The child's environment, and what fleet added: across nodes NCCL must use rings, or it may pick
    tree/NVLS on two nodes and measure NVLink instead of the network (nccl-tests#196)."""
    env = dict(environ)
    added: dict[str, str] = {}
    if (lau.nodes or 1) > 1 and "NCCL_ALGO" not in env:
        added["NCCL_ALGO"] = "Ring"
    env.update(added)
    return env, added


def run(
    config: dict[str, Any],
    payload: str | None,
    timeout: float,
    environ: Mapping[str, str],
    lau: Launch,
    python: str | None = None,
) -> ChildRun:
    env, added = child_environ(environ, lau)
    cfg = dict(config, payload=payload is not None)
    res = run_child(
        [python or sys.executable, str(CHILD), json.dumps(cfg)],
        timeout,
        env=env,
        stdin=payload or "",
        max_stdout=MAX_EVENT,
    )
    out = ChildRun(environ=added, timed_out=res.timed_out)
    for line in res.stdout.splitlines():
        if line.startswith(MARK) and len(line) < MAX_EVENT:
            try:
                event = json.loads(line[len(MARK) :])
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict):
                out.events.append(event)
    if res.error:
        out.error = res.error
    elif res.timed_out:
        out.error = f"the fleet child did not finish within {timeout:g} s"
    elif out.end is None:
        tail = [ln for ln in res.stderr.strip().splitlines() if ln.strip()][-1:]
        out.error = (tail[0][:300] if tail else "") or f"the fleet child exited with code {res.returncode}"
    return out


def unreachable(run: ChildRun) -> dict[str, Any] | None:
    """{"endpoint": "HOST:PORT", "seconds": bound, "detail": …} when the child could not reach the
    rendezvous store (rank 0's, or torchrun's agent) within its bound; None otherwise."""
    end = run.end
    result = end.get("result") if end else None
    info = result.get("unreachable") if isinstance(result, dict) else None
    if not isinstance(info, dict) or not isinstance(info.get("seconds"), (int, float)):
        return None
    return {"endpoint": str(info.get("endpoint")), "seconds": float(info["seconds"]), "detail": info.get("detail")}


def _int_keys(d: Any) -> dict[int, Any]:
    out: dict[int, Any] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            try:
                out[int(k)] = v
            except (TypeError, ValueError):
                continue
    return out


def _labels(ranks: dict[int, dict[str, Any]]) -> dict[int, tuple[str | None, str]]:
    """node rank -> (host, label): the host's short name where that still tells the nodes apart (the
    domain every node shares says nothing, and it costs the node table its width), "host[N]" for two
    nodes on one host."""
    hosts: dict[int, str | None] = {}
    for info in ranks.values():
        hosts.setdefault(int(info.get("node_rank", 0)), info.get("host"))
    counts: dict[str | None, int] = {}
    for h in hosts.values():
        counts[h] = counts.get(h, 0) + 1
    distinct = {h for h in hosts.values() if h}
    short = {h: _short_host(h) for h in distinct}
    if len(set(short.values())) < len(distinct):
        short = {h: h for h in distinct}
    return {
        n: (h, short[h] if h and counts[h] == 1 else f"{short[h] if h else 'node'}[{n}]")
        for n, h in sorted(hosts.items())
    }


def _short_host(host: str) -> str:
    """gpu07.cluster.example.com -> gpu07; an IP address stays whole."""
    import ipaddress

    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        return host.split(".", 1)[0] or host


def _node_report(text: str | None) -> tuple[Any, list[Any], str | None]:
    if not text:
        return None, [], None
    from cudadoctor.facts.codec import FormatError, load_report

    if text.startswith('{"node_check_error"'):
        try:
            return None, [], f"the node check failed: {json.loads(text)['node_check_error']}"
        except (ValueError, KeyError, TypeError):
            pass
    try:
        facts, outcomes, _ = load_report(text)
    except (FormatError, ValueError) as exc:
        return None, [], str(exc)
    return facts, outcomes, None


def assemble(run: ChildRun, lau: Launch, expected_nodes: int | None, expected_gpus: int | None) -> FleetFacts:
    """Rank 0's events → FleetFacts. What an event did not say stays unknown."""
    ff = FleetFacts(expected_nodes=expected_nodes, expected_gpus=expected_gpus, environ=run.environ)
    ff.world_size, ff.local_world_size = lau.world_size, lau.local_world_size
    by_kind: dict[str, dict[str, Any]] = {}
    steps: list[str] = []
    for e in run.events:
        by_kind[e.get("event", "")] = e
        if e.get("event") == "step":
            steps.append(str(e.get("step")))
    arrived = by_kind.get("arrived")
    if arrived is not None:
        ff.phases.append("inventory")
        ranks = {r: v for r, v in _int_keys(arrived.get("ranks")).items() if isinstance(v, dict)}
        ff.never_arrived = sorted(int(r) for r in arrived.get("missing") or [])
        labels = _labels(ranks)
        for r, info in sorted(ranks.items()):
            ff.ranks.append(
                RankInfo(
                    rank=r,
                    node_rank=int(info.get("node_rank", 0)),
                    local_rank=int(info.get("local_rank", 0)),
                    host=info.get("host"),
                    torch=info.get("torch"),
                    torch_cuda=info.get("torch_cuda"),
                    nccl=info.get("nccl"),
                    visible_gpus=info["gpus"] if isinstance(info.get("gpus"), int) else None,
                )
            )
        for n, (host, label) in labels.items():
            node = NodeFacts(node_rank=n, label=label, host=host, ranks=[i.rank for i in ff.ranks if i.node_rank == n])
            mine = [v for _, v in sorted(ranks.items()) if int(v.get("node_rank", 0)) == n]
            local0 = next((v for v in mine if v.get("local_rank") == 0), mine[0] if mine else None)
            if local0 is not None:
                packages = local0.get("packages")
                node.packages = {str(k): str(v) for k, v in packages.items()} if isinstance(packages, dict) else None
                node.facts, node.outcomes, node.report_error = _node_report(local0.get("report"))
            ff.nodes.append(node)
    gloo = by_kind.get("gloo")
    if gloo is not None:
        for r, v in _int_keys(gloo.get("ranks")).items():
            if isinstance(v, dict) and not v.get("ok"):
                ff.gloo_errors[r] = str(v.get("error") or "failed")
    end = run.end
    if end is not None:
        _read_end(ff, end)
    if run.error:
        ff.child_error = run.error
        if end is None and steps and ff.hang is None:
            ff.hang = Hang(step=steps[-1], seconds=None)
    return ff


def _read_end(ff: FleetFacts, end: dict[str, Any]) -> None:
    results = {r: v for r, v in _int_keys(end.get("ranks")).items() if isinstance(v, dict)}
    mine = end.get("result") if isinstance(end.get("result"), dict) else {}
    results.setdefault(0, mine)
    last = {r: (None if v is None else str(v)) for r, v in _int_keys(end.get("last")).items()}
    if end.get("error"):
        ff.child_error = str(end["error"])
    node_of = {i.rank: i.node_rank for i in ff.ranks}
    for r in sorted(int(x) for x in end.get("missing") or []):
        if r not in ff.never_arrived:
            ff.unfinished[r] = last.get(r)
    if mine.get("hang"):
        step = str(mine["hang"])
        ff.hang = Hang(
            step=step,
            seconds=_seconds(mine.get("error")),
            not_arrived={r: s for r, s in sorted(last.items()) if s != step and r not in ff.never_arrived},
        )
    for r, res in sorted(results.items()):
        if res.get("error") and not (r == 0 and ff.hang is not None):
            ff.rank_errors[r] = str(res["error"])
        if res.get("backend"):
            ff.backend = str(res["backend"])
        gpu = res.get("gpu")
        if isinstance(gpu, dict):
            if "gpu" not in ff.phases:
                ff.phases.append("gpu")
            ff.gpus.append(
                GpuPerf(
                    rank=r,
                    node_rank=node_of.get(r, 0),
                    device=int(gpu.get("device", 0)),
                    name=gpu.get("name"),
                    gemm_tflops=_num(gpu.get("gemm_tflops")),
                    memory_gbps=_num(gpu.get("memory_gbps")),
                    h2d_gbps=_num(gpu.get("h2d_gbps")),
                    skipped=gpu.get("skipped"),
                    error=gpu.get("error"),
                )
            )
        if isinstance(res.get("waits"), list):
            ff.waits[r] = [float(x) for x in res["waits"] if isinstance(x, (int, float))]
    _read_allreduce(ff, results)


def _read_allreduce(ff: FleetFacts, results: dict[int, dict[str, Any]]) -> None:
    """One figure per group and size: the slowest rank's view (an all-reduce ends for all at once)."""
    node_of = {i.rank: i.node_rank for i in ff.ranks}
    seen: dict[tuple[str, tuple[int, ...], int], AllReduce] = {}
    for r, res in sorted(results.items()):
        for step, v in (res.get("steps") or {}).items():
            if not isinstance(v, dict):
                continue
            parts = step.split()
            if len(parts) < 3 or parts[0] != "all-reduce":
                continue
            kind = parts[1]
            if kind == "node":
                nodes: tuple[int, ...] = (node_of.get(r, 0),)
            elif kind == "pair":
                a, _, b = parts[2].partition("-")
                nodes = (int(a), int(b))
            else:
                nodes = tuple(sorted({i.node_rank for i in ff.ranks}))
            size = int(v.get("size", 0))
            ar = AllReduce(
                group=kind,
                nodes=list(nodes),
                size=size,
                ranks=int(v.get("ranks", 0)),
                seconds=float(v.get("seconds", 0.0)),
                algbw=float(v.get("algbw", 0.0)),
                busbw=float(v.get("busbw", 0.0)),
            )
            key = (kind, nodes, size)
            if key not in seen or ar.seconds > seen[key].seconds:
                seen[key] = ar
    if seen and "nccl" not in ff.phases:
        ff.phases.append("nccl")
    ff.allreduce = sorted(seen.values(), key=lambda a: (["node", "world", "pair"].index(a.group), a.nodes, a.size))


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) else None


def _seconds(message: Any) -> float | None:
    import re

    m = re.search(r"within ([0-9.]+) s", str(message or ""))
    return float(m.group(1)) if m else None


def environ() -> dict[str, str]:
    return dict(os.environ)


def publish_verdict(code: int, environ: Mapping[str, str], timeout: float = 30.0, python: str | None = None) -> bool:
    """Rank 0's exit code into the rendezvous store, where the other ranks wait for it (a short child:
    this process never imports torch)."""
    res = run_child([python or sys.executable, str(CHILD), "--verdict", str(int(code))], timeout, env=dict(environ))
    return res.ok and MARK + '{"event": "verdict"' in res.stdout


def verdict_of(run: ChildRun) -> int | None:
    """What rank 0 told the other ranks to exit with (None: it never said)."""
    e = next((e for e in reversed(run.events) if e.get("event") == "verdict"), None)
    code = e.get("code") if e else None
    return code if isinstance(code, int) and 0 <= code < 256 else None


def write_error_file(environ: Mapping[str, str], message: str) -> None:
    """torchrun prints a worker's TORCHELASTIC_ERROR_FILE in its failure summary instead of "To enable
    traceback see …": put the verdict there (elastic/multiprocessing/errors: {"message", "timestamp"})."""
    import time

    path = environ.get("TORCHELASTIC_ERROR_FILE")
    if not path:
        return
    try:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump({"message": message, "timestamp": int(time.time())}, fh)
    except OSError:
        pass


# -- `cudadoctor fleet --nnodes … --nproc-per-node …`: torchrun's launcher in a child ---------------------

LAUNCH_CHILD = script("fleet_launch_child.py")
LAUNCH_MARK = "\n" + "CUDADOCTOR_FLEET_LAUNCH "
LAUNCHER = "CUDADOCTOR_FLEET_LAUNCHER"  # set by the launch child: its pid, in every worker's environment


@dataclass
class LaunchRun:
    """What the launch child and its workers said: rank 0's report (stdout), the workers' stderr, and how
    the workers ended: {global rank: exit code (negative: a signal; None: unknown)} for those that failed,
    or why the launcher itself could not finish."""

    report: str = ""
    stderr: str = ""
    failures: dict[int, int | None] = field(default_factory=dict)
    error: str | None = None


def start_launcher(argv: list[str], timeout: float, environ: Mapping[str, str], python: str | None = None) -> LaunchRun:
    """torch.distributed.run with torchrun's arguments `argv`, in a child of the target interpreter,
    bounded in time and output (its workers are bounded by their own child's bounds as well)."""
    env = dict(environ)
    here = str(Path(__file__).resolve().parents[2])  # the directory that holds this cudadoctor
    if here not in {str(Path(p or os.curdir).resolve()) for p in sys.path}:
        # a checkout run by path: the workers (`python -m cudadoctor`) must import this same copy
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    res = run_child(
        [python or sys.executable, str(LAUNCH_CHILD), json.dumps(argv)], timeout, env=env, max_stdout=MAX_EVENT
    )
    report, found, tail = res.stdout.rpartition(LAUNCH_MARK)
    out = LaunchRun(report=report if found else res.stdout, stderr=res.stderr)
    data: Any = None
    if found:
        try:
            data = json.loads(tail.splitlines()[0])
        except (json.JSONDecodeError, IndexError):
            data = None
    if res.timed_out:
        out.error = f"torchrun's launcher and its workers did not finish within {timeout:g} s"
    elif isinstance(data, dict) and isinstance(data.get("error"), str):
        out.error = data["error"]
    elif isinstance(data, dict) and isinstance(data.get("failures"), dict):
        for rank, code in _int_keys(data["failures"]).items():
            out.failures[rank] = code if isinstance(code, int) else None
    else:
        out.error = res.failure() or f"torchrun's launcher exited with code {res.returncode} and said nothing"
    return out


def bind_to_launcher(environ: Mapping[str, str]) -> None:
    """A worker of `cudadoctor fleet --nnodes …` ends (SIGTERM, which kills its own children) when its
    launcher does: torch starts each worker in a session of its own, so Ctrl-C on the doctor, which ends
    the launcher, would not reach the workers otherwise. Linux only; elsewhere the workers' own bounds hold."""
    pid = environ.get(LAUNCHER, "")
    if not pid.isdigit() or "TORCHELASTIC_RUN_ID" not in environ or not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != int(pid):  # the launcher ended before the line above
        os.kill(os.getpid(), signal.SIGTERM)
