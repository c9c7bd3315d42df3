"""`cudadoctor fleet` under real torchrun, gloo standing in for NCCL, on localhost: two "nodes" (two
torchrun commands) of two workers, each node on its own fake NVIDIA machine; a straggler, a rank that
dies, a rank that never arrives and a node that never joins. The scenarios run at the same time (most
of each is waiting), every process is bounded and killed in a finally, and nothing may be left over."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from cudadoctor.facts import Facts
from cudadoctor.model import Severity
from cudadoctor.render.layout import display_width
from cudadoctor.report import build
from tests.conftest import ROOT, fake_machine_env
from tests.helpers import by_code, commands

# the node check probes that need nothing but NVML and the OS: fast, and all the mismatch table needs
SKIP = "torch,pci,cuda_driver,toolkit,platform"
MACHINE_A = """\
driver 550.54.14
cuda 12040
device name="NVIDIA H100 80GB HBM3" cc=9.0
device name="NVIDIA H100 80GB HBM3" cc=9.0
"""
MACHINE_B = """\
driver 535.104.05
cuda 12020
device name="NVIDIA H100 80GB HBM3" cc=9.0
"""
DEADLINE = 150  # seconds for all scenarios together; a healthy run takes a fraction


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Node:
    proc: subprocess.Popen
    out: Path
    err: Path

    @property
    def stdout(self) -> str:
        return self.out.read_text()

    @property
    def stderr(self) -> str:
        return self.err.read_text()


@dataclass
class Scenario:
    nodes: list[Node]
    tag: str

    @property
    def rank0(self) -> Node:
        """The torchrun whose node got rank 0: the one that printed the report."""
        found = [n for n in self.nodes if n.stdout.strip()]
        assert len(found) == 1, [n.stderr[-2000:] for n in self.nodes]
        return found[0]

    @property
    def json(self) -> dict:
        return json.loads(self.rank0.stdout)

    def finding(self, code: str) -> dict:
        found = [f for f in self.json["findings"] if f["code"] == code]
        assert found, (code, [(f["code"], f["title"]) for f in self.json["findings"]])
        return found[0]

    def codes(self) -> list[str]:
        return [f["code"] for f in self.json["findings"]]


def _leftovers(tag: str) -> list[int]:
    """Processes still carrying this scenario's tag in their environment."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if tag.encode() in (entry / "environ").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@pytest.fixture(scope="module")
def fleet_runs(fake_libs, tmp_path_factory) -> dict[str, Scenario]:
    pytest.importorskip("torch.distributed")
    nvml_dir, cuda_dir = fake_libs
    tmp = tmp_path_factory.mktemp("fleet")
    started: dict[str, Scenario] = {}

    def torchrun(name: str, scenario: str, nnodes: str, nproc: int, port: int, args: list[str], **kw) -> Node:
        env = environ(name, scenario, **kw)
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            nnodes,
            "--nproc-per-node",
            str(nproc),
            "--rdzv-backend",
            "c10d",
            "--rdzv-endpoint",
            f"127.0.0.1:{port}",
            "--max-restarts",
            "0",
            *kw.get("torchrun", []),
            "-m",
            "cudadoctor",
            "fleet",
            "--json",
            "--skip",
            SKIP,
            *args,
        ]
        return start(name, scenario, cmd, env)

    def doctor(name: str, scenario: str, args: list[str], **kw) -> Node:
        """`cudadoctor fleet ARGS`: fleet starting torchrun's launcher itself."""
        cmd = [sys.executable, "-m", "cudadoctor", "fleet", "--skip", SKIP, *args]
        return start(name, scenario, cmd, environ(name, scenario, **kw))

    def environ(name: str, scenario: str, **kw) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_VISIBLE", "FAKE_NVML", "NCCL_"))}
        env["PYTHONPATH"] = str(ROOT)
        env["OMP_NUM_THREADS"] = "1"
        env["CUDADOCTOR_FLEET_TEST"] = json.dumps({"tag": started[scenario].tag, **kw.get("test", {})})
        if not kw.get("machine"):
            # gloo on the CPU on any machine: with a real GPU the ranks would take cuda:LOCAL_RANK
            env["CUDA_VISIBLE_DEVICES"] = ""
        else:
            path = tmp / f"{name}.machine"
            path.write_text(kw["machine"])
            env.update(fake_machine_env(path, [nvml_dir, cuda_dir], env.get("LD_LIBRARY_PATH", "")))
        return env

    def start(name: str, scenario: str, cmd: list[str], env: dict[str, str]) -> Node:
        out, err = tmp / f"{name}.out", tmp / f"{name}.err"
        with open(out, "w") as o, open(err, "w") as e:
            proc = subprocess.Popen(cmd, stdout=o, stderr=e, env=env, cwd=tmp, start_new_session=True)
        node = Node(proc, out, err)
        started[scenario].nodes.append(node)
        return node

    for name in ("pair", "dies", "hangs", "stuck", "alone", "names", "prolog"):
        started[name] = Scenario([], f"cudadoctor-fleet-test-{uuid.uuid4().hex}")
    try:
        port = free_port()
        full = ["--full", "--max-size", "2MiB", "--expect-gpus", "2", "--timeout", "30", "--join-timeout", "90"]
        junit = str(tmp / "fleet.xml")
        straggler = {"delay": {"3": 0.05}}
        torchrun("a", "pair", "2", 2, port, [*full, "--junit", junit], machine=MACHINE_A, test=straggler)
        torchrun("b", "pair", "2", 2, port, [*full, "--junit", junit], machine=MACHINE_B, test=straggler)
        quick = ["--full", "--max-size", "1MiB", "--timeout", "4", "--join-timeout", "60"]
        torchrun("dies", "dies", "1", 2, free_port(), quick, test={"exit": {"1": "all-reduce node 1048576"}})
        torchrun("hangs", "hangs", "1", 2, free_port(), quick, test={"hang": {"1": "all-reduce node 1048576"}})
        stuck = ["--quick", "--max-size", "1MiB", "--timeout", "3"]
        torchrun("stuck", "stuck", "1", 2, free_port(), stuck, test={"block": {"0": "all-reduce node 1048576"}})
        torchrun(
            "alone",
            "alone",
            "1:2",
            1,
            free_port(),
            ["--expect-nodes", "2"],
            torchrun=["--rdzv-conf", "last_call_timeout=1"],
        )
        # three nodes with long host names, through fleet's own launcher; the third has no NVIDIA driver
        names = ["--nnodes", "3", "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-id", "names"]
        names += ["--rdzv-endpoint", f"127.0.0.1:{free_port()}", "--join-timeout", "90"]
        for n, host in enumerate(LONG_HOSTS):
            doctor(f"names{n}", "names", names, machine=MACHINE_A if n < 2 else None, test={"host": host})

        def wait_for(nodes: list) -> None:
            deadline = time.monotonic() + DEADLINE
            running = list(nodes)
            while running and time.monotonic() < deadline:
                for node in [n for n in running if n.proc.poll() is not None]:
                    node.ended = time.monotonic()  # type: ignore[attr-defined]
                    running.remove(node)
                time.sleep(0.1)
            assert not running, [n.proc.args for n in running]

        wait_for([n for sc in started.values() for n in sc.nodes])
        # A prolog runs alone on its node: started once the scenarios above are done, so that its 60 s are
        # its own and not five concurrent torchruns' on 2 cores.
        # the Slurm prolog recipe of docs/fleet.md as written, on one "GPU" (this machine has none)
        prolog = next(c for c in doc_commands() if "--quick" in c)
        assert prolog[:2] == ["cudadoctor", "fleet"]  # fleet starts torchrun's launcher itself
        argv = [sys.executable, "-m", "cudadoctor", *substitute(prolog[1:], {"--nproc-per-node": "1"})]
        argv = [a for a in argv if not a.startswith("--expect-gpus") and a != "8"]
        argv[argv.index("--output") + 1] = str(tmp / "prolog.json")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_VISIBLE", "FAKE_NVML", "NCCL_"))}
        env.update(PYTHONPATH=str(ROOT), CUDADOCTOR_FLEET_TEST=json.dumps({"tag": started["prolog"].tag}))
        env["CUDA_VISIBLE_DEVICES"] = ""  # the CPU path on any machine, as on this GPU-less one
        out, err = tmp / "prolog.out", tmp / "prolog.err"
        with open(out, "w") as o, open(err, "w") as e:
            proc = subprocess.Popen(argv, stdout=o, stderr=e, env=env, cwd=tmp, start_new_session=True)
        started["prolog"].nodes.append(Node(proc, out, err))
        started["prolog"].began = time.monotonic()  # type: ignore[attr-defined]
        wait_for(started["prolog"].nodes)
        time.sleep(0.5)
        for scenario in started.values():
            scenario.leftover = _leftovers(scenario.tag)  # type: ignore[attr-defined]
        yield started
    finally:
        for scenario in started.values():
            for node in scenario.nodes:
                if node.proc.poll() is None:
                    try:
                        os.killpg(node.proc.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    node.proc.wait(timeout=10)
            _kill(_leftovers(scenario.tag))


LONG_HOSTS = [f"dgx-h100-sxm5-rack12-node034{n}.cluster.example.com" for n in (5, 6, 7)]
DOC = ROOT / "docs" / "fleet.md"
VARS = {
    "$SLURM_NNODES": "4",
    "$head": "node01",
    "$SLURM_JOB_ID": "4242",
    "$(MASTER_ADDR)": "fleet-master-0",
    "$(MASTER_PORT)": "23456",
}


def substitute(argv: list[str], replace: dict[str, str] | None = None) -> list[str]:
    out = []
    for i, a in enumerate(argv):
        for k, v in VARS.items():
            a = a.replace(k, v)
        if i and replace and argv[i - 1] in replace:
            a = replace[argv[i - 1]]
        out.append(a)
    return out


def doc_commands() -> list[list[str]]:
    """Every fleet command line in docs/fleet.md (`cudadoctor fleet …` or `torchrun … -m cudadoctor fleet …`):
    shell blocks and Kubernetes `command:` lists."""
    text = DOC.read_text()
    found: list[list[str]] = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            starts = [line.find(w) for w in ("torchrun ", "cudadoctor fleet") if w in line]
            if starts and not line.lstrip().startswith("#"):
                found.append(shlex.split(line[min(starts) :]))
    try:
        import yaml  # not a test dependency: without it the Kubernetes recipes are not read
    except ImportError:
        return found
    for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
        for doc in yaml.safe_load_all(block):
            for c in _containers(doc):
                if c.get("command", [None])[0] in ("torchrun", "cudadoctor"):
                    found.append([str(x) for x in c["command"]])
    return found


def _containers(doc: dict) -> list[dict]:
    out = []

    def walk(v: object) -> None:
        if isinstance(v, dict):
            if "containers" in v and isinstance(v["containers"], list):
                out.extend(v["containers"])
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(doc)
    return out


def test_every_recipe_parses_for_torchrun_and_for_fleet():
    pytest.importorskip("yaml")
    pytest.importorskip("torch.distributed")
    from torch.distributed.run import get_args_parser

    from cudadoctor.commands.fleet import LAUNCH_OPTIONS, fleet, launcher_argv, worker_args

    recipes = doc_commands()
    # intro (fleet's own and under torchrun), one node, Slurm batch, Slurm prolog, Indexed Job, PyTorchJob x 2
    assert len(recipes) == 8 and sum(r[0] == "torchrun" for r in recipes) == 1
    for argv in recipes:
        if argv[0] == "cudadoctor":  # the torchrun arguments fleet gives its launcher
            ctx = fleet.make_context("fleet", substitute(argv[2:]))
            launch = {name: ctx.params[name] for _, name in LAUNCH_OPTIONS}
            argv = ["torchrun", *launcher_argv(launch, worker_args(ctx), "/tmp/logs")]
        args = get_args_parser().parse_args(substitute(argv[1:]))
        assert args.module and args.training_script == "cudadoctor", argv
        assert args.training_script_args[0] == "fleet"
        fleet.make_context("fleet", list(args.training_script_args[1:]))  # raises on an unknown option


def test_the_prolog_recipe_runs_within_slurms_60_seconds(fleet_runs):
    run = fleet_runs["prolog"]
    node = run.nodes[0]
    assert node.ended - run.began < 60, node.stderr[-2000:]  # type: ignore[attr-defined]
    data = json.loads((Path(node.out).parent / "prolog.json").read_text())
    assert data["command"] == "fleet" and node.proc.returncode in (0, 1)
    assert data["status"] in ("healthy", "warnings", "problems", "incomplete")
    assert any(p["name"] == "nccl" and p["status"] == "ok" for p in data["probes"])  # the 64 MiB all-reduce ran


def _node_label(run: Scenario, driver: str) -> str:
    for node in run.json["facts"]["nodes"]:
        if node["facts"]["driver"]["driver_version"] == driver:
            return node["label"]
    raise AssertionError(driver)


def test_two_nodes_report_once_with_their_differences(fleet_runs):
    run = fleet_runs["pair"]
    data = run.json
    assert data["command"] == "fleet" and data["status"] == "problems" and data["exit_code"] == 1
    assert run.rank0.proc.returncode == 1  # torchrun fails when rank 0 does
    a, b = _node_label(run, "550.54.14"), _node_label(run, "535.104.05")
    assert a != b
    inventory = run.finding("CD800")
    assert inventory["title"] == "2 nodes, 4 ranks reported"
    rows = {r[0]: r for r in inventory["tables"][0]["rows"]}
    assert rows[a][2] == "2" and rows[b][2] == "1"  # GPUs per node, from each node's own NVML
    mismatch = run.finding("CD801")
    assert "driver" in mismatch["title"] and "GPUs" in mismatch["title"]
    table = mismatch["tables"][0]["rows"]
    assert ["driver", "550.54.14", a] in table and ["driver", "535.104.05", b] in table
    assert ["CUDA (driver)", "12.2", b] in table
    count = run.finding("CD802")
    assert count["severity"] == "error" and b in count["title"] and "1 of 2 GPUs" in count["title"]
    # the other ranks printed nothing: the report is on rank 0's node only
    other = next(n for n in run.nodes if n is not run.rank0)
    assert other.stdout == ""


def test_same_finding_on_every_node_is_one_line_naming_them(fleet_runs):
    run = fleet_runs["pair"]
    titles = [f["title"] for f in run.json["findings"] if f["code"] == "CD824"]
    assert len(titles) == 1 and "4 ranks" in titles[0]  # phase 1 skipped everywhere: no CUDA here
    node_findings = [f for f in run.json["findings"] if not f["code"].startswith("CD8")]
    for f in node_findings:
        assert f["title"].endswith("]"), f["title"]  # "[all 2 nodes]" or the node list
    by_code: dict[str, list[str]] = {}
    for f in node_findings:
        by_code.setdefault(f["code"] + f["title"], []).append(f["title"])
    assert all(len(v) == 1 for v in by_code.values())


def test_gloo_stands_in_for_nccl_and_bus_bandwidth_is_nccl_tests(fleet_runs):
    run = fleet_runs["pair"]
    assert run.json["facts"]["backend"] == "gloo"
    assert "CD835" in run.codes()
    table = run.finding("CD830")["tables"][0]
    assert table["columns"][-1] == "all 2 nodes"
    assert [r[0] for r in table["rows"]] == ["1.0 MiB", "2.0 MiB"]
    runs = run.json["facts"]["allreduce"]
    world = [r for r in runs if r["group"] == "world"]
    assert {r["size"] for r in world} == {1 << 20, 2 << 20} and all(r["ranks"] == 4 for r in world)
    for r in runs:
        n = r["ranks"]
        assert r["busbw"] == pytest.approx(r["algbw"] * 2 * (n - 1) / n)
        assert r["algbw"] == pytest.approx(r["size"] / r["seconds"] / 1e9)
    assert {r["group"] for r in runs} == {"node", "world"}


def test_straggler_is_named(fleet_runs):
    run = fleet_runs["pair"]
    f = run.finding("CD833")
    assert f["title"].startswith("rank 3 (")
    lateness = {row[0].split()[1]: float(row[1]) for row in f["tables"][0]["rows"]}
    assert lateness["3"] >= 30  # the 50 ms test delay, in ms
    assert all(v < lateness["3"] / 2 for k, v in lateness.items() if k != "3")


def test_junit_has_one_testcase_per_node(fleet_runs, tmp_path_factory):
    run = fleet_runs["pair"]
    xml_path = Path(run.rank0.proc.args[run.rank0.proc.args.index("--junit") + 1])
    suite = ET.parse(xml_path).getroot()
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    a, b = _node_label(run, "550.54.14"), _node_label(run, "535.104.05")
    assert set(cases) == {a, b, "all"}
    failure = cases[b].find("failure")
    assert failure is not None and "CD802" in failure.text
    assert cases["all"].find("failure") is not None


def test_a_rank_that_dies_is_named_and_nothing_hangs(fleet_runs):
    run = fleet_runs["dies"]
    f = run.finding("CD808")
    assert f["severity"] == "error"
    assert f["title"].startswith("rank 1 (") and "died or hung" in f["title"]
    rows = f["tables"][0]["rows"]
    assert rows[0][0].startswith("rank 1") and "never reported back" in rows[0][1]
    assert run.json["exit_code"] == 1


def test_a_rank_that_never_arrives_ends_the_collective_with_its_name(fleet_runs):
    run = fleet_runs["hangs"]
    f = run.finding("CD807")
    assert f["title"].startswith("all-reduce node 1048576 did not finish within 4 s: rank 1 (")
    assert f["tables"][0]["rows"][0][1] == "groups"  # the last step rank 1 reached
    assert run.json["exit_code"] == 1


def test_a_collective_stuck_inside_torch_is_ended_by_the_watchdog(fleet_runs):
    run = fleet_runs["stuck"]  # rank 0 never returns from its call, as in a blocking NCCL set-up
    f = run.finding("CD807")
    assert f["title"] == (
        "all-reduce node 1048576 did not finish within 8 s: every rank reached it, so the collective itself hung"
    )
    assert f["fix"] == []  # gloo hung here: the NCCL advice (P2P, ACS, IOMMU) is for NCCL only
    from cudadoctor.facts.fleet import Hang

    ff = _ff(1, 2, backend="nccl", hang=Hang("all-reduce node 1048576", 65.0, {}))
    fixes = _codes(ff)["CD807"].fix
    assert fixes[0].commands == ["NCCL_P2P_DISABLE=1 torchrun … -m cudadoctor fleet --full"]


def test_a_node_that_never_joins(fleet_runs):
    run = fleet_runs["alone"]
    f = run.finding("CD803")
    assert f["title"].startswith("1 of 2 nodes joined")
    assert run.json["facts"]["world_size"] == 1


def test_at_80_columns_the_node_table_keeps_each_node_and_its_status(fleet_runs):
    run = fleet_runs["names"]
    out = run.rank0.stdout
    assert all(display_width(line) <= 80 for line in out.splitlines()), out
    table = out[out.index("CD800 3 nodes, 3 ranks reported") :].splitlines()
    assert table[1].split() == ["Node", "GPUs", "Driver", "CUDA", "Check"]
    rows = {line.split()[0]: line.split() for line in table[2:5]}
    short = [h.split(".")[0] for h in LONG_HOSTS]  # the domain every node shares is left out
    assert rows[short[0]] == [short[0], "2", "550.54.14", "12.4", "healthy"]
    assert rows[short[1]] == [short[1], "2", "550.54.14", "12.4", "healthy"]
    assert rows[short[2]][1:4] == ["?", "?", "?"] and rows[short[2]][4:] == ["problems", "(1E)"]
    assert table[5].strip().startswith("In every row: Ranks 1, torch ")  # the versions it had no room for
    # the gate failed: every node's doctor exits 1, rank 0's with the report, none with a traceback
    assert [n.proc.returncode for n in run.nodes] == [1, 1, 1]
    for node in run.nodes:
        assert "Traceback" not in node.stdout + node.stderr and "ChildFailedError" not in node.stderr


def test_nothing_is_left_running(fleet_runs):
    for name, scenario in fleet_runs.items():
        assert all(n.proc.returncode is not None for n in scenario.nodes), name
        assert scenario.leftover == [], name  # type: ignore[attr-defined]


# -- the rules and tables on hand-written facts (no torchrun) ---------------------------------------


def _ff(nodes: int = 2, per_node: int = 2, **kw):
    from cudadoctor.facts.fleet import FleetFacts, NodeFacts, RankInfo

    ff = FleetFacts(world_size=nodes * per_node, local_world_size=per_node, **kw)
    for n in range(nodes):
        ff.nodes.append(NodeFacts(node_rank=n, label=f"gpu{n:02d}", host=f"gpu{n:02d}"))
        for lr in range(per_node):
            r = n * per_node + lr
            ff.nodes[-1].ranks.append(r)
            ff.ranks.append(RankInfo(rank=r, node_rank=n, local_rank=lr, host=f"gpu{n:02d}", torch="2.13.0+cu130"))
    return ff


def _codes(ff) -> dict[str, dict]:
    from cudadoctor.rules.fleet import evaluate

    return {f.code: f for f in evaluate(ff)}


def test_outliers_need_ten_percent_and_the_spread():
    from cudadoctor.rules.fleet import outliers

    assert outliers({0: 700.0, 1: 705.0, 2: 698.0, 3: 560.0}) == [3]
    assert outliers({0: 700.0, 1: 650.0, 2: 640.0}) == []  # within 10 % of the median
    assert outliers({0: 700.0, 1: 500.0}) == []  # two GPUs: no median to speak of


def test_a_slow_gpu_is_named_against_its_fleet_and_its_sku():
    from cudadoctor.facts.fleet import GpuPerf

    ff = _ff(2, 4, phases=["inventory", "gpu"])
    for r in range(8):
        tflops = 420.0 if r == 5 else 700.0 + r
        ff.gpus.append(GpuPerf(r, r // 4, r % 4, "NVIDIA H100 80GB HBM3", tflops, 2900.0, 55.0))
    found = _codes(ff)
    assert "gpu01 GPU 1 (rank 5)" in found["CD821"].title and "420" in found["CD821"].title
    assert "CD822" not in found  # one story: the outlier is not also "below its SKU"
    for g in ff.gpus:
        g.gemm_tflops = 400.0  # every GPU under half of the H100's 989 dense bf16 TFLOP/s
    found = _codes(ff)
    assert "CD821" not in found and found["CD822"].title.startswith("Every GPU's bf16 GEMM is below 495")
    ff.limits = {"min_tflops": 300.0}
    assert "CD822" not in _codes(ff)  # the override wins


def test_gpu_table_rows_and_sources():
    from cudadoctor.knowledge import gpu_perf

    assert gpu_perf.lookup("NVIDIA H100 80GB HBM3").sku == "H100 SXM"
    assert gpu_perf.lookup("NVIDIA H100 PCIe").sku == "H100 PCIe"
    assert gpu_perf.lookup("NVIDIA A100-SXM4-80GB").sku == "A100 SXM 80GB"
    assert gpu_perf.lookup("NVIDIA H200").sku == "H200 SXM"
    assert gpu_perf.lookup("NVIDIA GeForce GTX 1080") is None
    assert all(row.source for row in gpu_perf.TABLE)
    e = gpu_perf.expected("NVIDIA H100 80GB HBM3", 8)
    # ring all-reduce (no NVLS) reaches ~370 on NVLink4 (nccl-tests#212); Azure check_gpu_bw 48 (H2D)
    assert e.node_busbw == pytest.approx(370 * gpu_perf.BUSBW_SHARE) and e.h2d_gbps == 48
    assert gpu_perf.expected("NVIDIA H100 80GB HBM3", 4).node_busbw is None  # the floor is for 8 GPUs
    assert gpu_perf.expected(None, 8, min_busbw=100).node_busbw == 100


def test_the_bad_host_is_slow_in_every_pair():
    from cudadoctor.facts.fleet import AllReduce

    ff = _ff(4, 1, backend="nccl", phases=["inventory", "nccl"])
    fast, slow = 45.0, 12.0
    for a, b in ((0, 1), (2, 3), (0, 2), (1, 3), (0, 3), (1, 2)):
        bw = slow if 2 in (a, b) else fast
        ff.allreduce.append(AllReduce("pair", [a, b], 1 << 30, 2, 1.0, bw, bw))
    f = _codes(ff)["CD832"]
    assert f.title.startswith("gpu02: slow in every pair")


def test_stragglers_from_waits_without_a_shared_clock():
    from cudadoctor.rules.fleet import lags

    waits = {0: [0.06, 0.061, 0.059], 1: [0.060, 0.06, 0.062], 2: [0.011, 0.01, 0.012]}
    late, step = lags(waits)
    assert late[2] == pytest.approx(0.05, abs=0.002) and late[0] < 0.003 and step == pytest.approx(0.061, abs=0.002)
    ff = _ff(3, 1, backend="nccl", waits=waits)
    ff.allreduce = []
    from cudadoctor.rules.fleet.performance import _stragglers

    assert _stragglers(ff)[0].title.startswith("rank 2 (gpu02) arrive 50 ms late")
    ff.waits = {0: [0.01] * 3, 1: [0.0102] * 3, 2: [0.0101] * 3}
    assert _stragglers(ff) == []


def test_knowing_less_adds_no_problem():
    ff = _ff(2, 2)  # no node reports, no measurements: nothing to compare
    found = _codes(ff)
    assert {f.severity.value for f in found.values()} <= {"ok", "info", "warning"}
    assert "CD801" not in found and "CD802" not in found
    assert found["CD809"].severity.value == "warning"  # the reports that did not arrive are named


def test_mixed_torch_is_an_error_when_it_broke_the_group():
    ff = _ff(2, 1)
    ff.ranks[1].torch = "2.4.0+cu121"
    assert _codes(ff)["CD806"].severity.value == "warning"
    ff.gloo_errors = {0: "RuntimeError: Connection reset by peer", 1: "timeout"}
    found = _codes(ff)
    assert found["CD806"].severity.value == "error" and found["CD805"].cause == "CD806"
    assert "torch==2.13.0" in found["CD806"].fix[0].commands[0] and "whl/cu130" in found["CD806"].fix[0].commands[0]


def test_events_of_a_hang_name_who_never_arrived():
    from cudadoctor.backends.fleet import ChildRun, Launch, assemble

    rank = {"node_rank": 0, "host": "gpu00", "torch": "2.13.0", "local_rank": 0}
    events = [
        {"event": "arrived", "ranks": {"0": rank, "1": dict(rank, local_rank=1)}, "missing": []},
        {"event": "gloo", "ranks": {"0": {"ok": True}, "1": {"ok": True}}, "missing": []},
        {"event": "step", "step": "all-reduce node 1048576"},
        {
            "event": "end",
            "result": {"rank": 0, "hang": "all-reduce node 1048576", "error": "… did not finish within 60 s"},
            "ranks": {"0": {"rank": 0}},
            "missing": [1],
            "last": {"0": "all-reduce node 1048576", "1": "groups"},
        },
    ]
    lau = Launch(0, 2, 0, 2, 0, 1)
    ff = assemble(ChildRun(events=events), lau, None, None)
    assert ff.hang.not_arrived == {1: "groups"} and ff.hang.seconds == 60
    found = _codes(ff)
    assert found["CD807"].title == "all-reduce node 1048576 did not finish within 60 s: rank 1 (gpu00) never arrived"
    assert found["CD808"].cause == "CD807"
    # the child killed by its parent's bound: the last step rank 0 announced is what hung
    ff = assemble(ChildRun(events=events[:3], timed_out=True, error="did not finish within 300 s"), lau, None, None)
    assert ff.hang.step == "all-reduce node 1048576"


def test_a_rank_beyond_the_visible_gpus_gets_no_device_but_a_finding():
    """2 ranks per node, 1 GPU visible: rank 1 must not try cuda:1 ("invalid device ordinal")."""
    from cudadoctor.backends.children.fleet_child import cuda_ordinal, short_ranks
    from cudadoctor.backends.fleet import ChildRun, Launch, assemble

    assert [cuda_ordinal(lr, 1) for lr in range(2)] == [0, None]
    assert cuda_ordinal(3, 8) == 3 and cuda_ordinal(0, 0) is None and cuda_ordinal(0, None) is None
    rank = {"node_rank": 0, "host": "gpu00", "torch": "2.13.0", "local_rank": 0, "gpus": 1}
    ranks = {0: rank, 1: dict(rank, local_rank=1), 2: dict(rank, node_rank=1, host="gpu01", local_rank=0, gpus=0)}
    assert short_ranks(ranks) == [1]  # a node with no GPU at all is gloo's case (CD835), not this one
    ranks[2]["gpus"] = None
    assert short_ranks(ranks) == [1]
    events = [{"event": "arrived", "ranks": {"0": rank, "1": dict(rank, local_rank=1)}, "missing": []}]
    ff = assemble(ChildRun(events=events), Launch(0, 2, 0, 2, 0, 1), None, None)
    assert [i.visible_gpus for i in ff.ranks] == [1, 1]
    f = _codes(ff)["CD811"]
    assert f.severity.name == "ERROR"
    assert f.title == "gpu00: --nproc-per-node 2 exceeds the 1 GPU this node shows"
    assert f.tables[0].rows == [["gpu00", "2", "1", "1"]]
    assert f.fix[0].commands == ["torchrun --nproc-per-node 1 …"]
    ff = _ff(2, 4)
    for i in ff.ranks:
        i.visible_gpus = 8
    assert "CD811" not in _codes(ff)  # as many GPUs as ranks, or more: nothing to say
    for i in ff.ranks:
        i.visible_gpus = 2
    assert _codes(ff)["CD811"].title == "2 nodes run more ranks than the GPUs they show"


def test_never_arrived_ranks_are_named_by_node():
    ff = _ff(1, 2, never_arrived=[2, 3])
    ff.world_size = 4
    assert _codes(ff)["CD804"].title == "ranks 2, 3 (node rank 1) never arrived"


def test_node_pairs_rounds_meet_every_pair_once():
    from cudadoctor.backends.children.fleet_child import rounds

    for n in (3, 4, 5, 8):
        seen = [p for r in rounds(n) for p in r]
        assert sorted(seen) == sorted((a, b) for a in range(n) for b in range(a + 1, n))
        for r in rounds(n):
            members = [x for p in r for x in p]
            assert len(members) == len(set(members))  # disjoint: a round runs at once


def test_the_odd_node_gets_the_others_versions():
    from cudadoctor.facts import DriverFacts, Facts, NvmlDevice, SystemFacts

    ff = _ff(3, 1)
    for node in ff.nodes:
        odd = node.node_rank == 2
        env = {"NCCL_IB_DISABLE": "1"} if odd else {}
        node.facts = Facts(
            system=SystemFacts(os="Linux", os_id="ubuntu", env=env),
            driver=DriverFacts(
                binding="nvidia-ml-py",
                library_loaded=True,
                init_status="ok",
                driver_version="535.104.05" if odd else "550.54.14",
                device_count=1,
                devices=[NvmlDevice(index=0, name="NVIDIA H100 80GB HBM3", persistence_mode=not odd)],
            ),
        )
        node.packages = {"nvidia-nccl-cu12": "2.20.5" if odd else "2.21.5"}
    f = _codes(ff)["CD801"]
    assert f.title == "The nodes differ in driver, persistence mode, nvidia-nccl-cu12, NCCL_IB_DISABLE"
    assert ["driver", "535.104.05", "gpu02"] in f.tables[0].rows
    assert ["NCCL_IB_DISABLE", "(unset)", "gpu00, gpu01"] in f.tables[0].rows
    cmds = {fx.when.split(":")[1].strip(): fx.commands for fx in f.fix}
    assert all(fx.when.startswith("on gpu02:") for fx in f.fix)
    assert cmds["the driver of the other nodes (550.54.14), then reboot"] == [
        "sudo apt-get install -y cuda-drivers-550   # NVIDIA's CUDA repository",
        "sudo reboot",
    ]
    assert ["python -m pip install 'nvidia-nccl-cu12==2.21.5'"] in cmds.values()
    assert ["unset NCCL_IB_DISABLE"] in cmds.values() and ["sudo nvidia-smi -pm 1"] in cmds.values()


# -- the launcher's environment: a rank that cannot join, variables that cannot be right -------------------

LAUNCH_VARS = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "GROUP_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
)


def _fleet_alone(env: dict[str, str], *args: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    """`python -m cudadoctor fleet ARGS` as one worker started by hand, with only `env` as its launch variables."""
    e = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS and not k.startswith(("TORCHELASTIC", "CUDA_VIS"))}
    e.update(PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="", **env)
    start = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "cudadoctor", "fleet", *args], capture_output=True, text=True, env=e, timeout=timeout
    )
    return p, time.monotonic() - start


NO_PROBES = "torch,system,pci,driver,cuda_driver,toolkit,platform,bandwidth,smoke,compile"


def test_a_rank_that_cannot_reach_rank_0_says_so_within_join_timeout(tmp_path):
    pytest.importorskip("torch.distributed")
    port = free_port()  # nothing listens there: no rank 0 anywhere
    error_file = tmp_path / "error.json"
    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    env["TORCHELASTIC_ERROR_FILE"] = str(error_file)
    p, took = _fleet_alone(env, "--join-timeout", "1", "--timeout", "1", "--skip", NO_PROBES)
    assert p.returncode == 3, p.stderr  # the node's check is incomplete: it never joined
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and p.stdout == "", p.stderr
    assert f"rank 1: could not reach rank 0 at 127.0.0.1:{port}" in lines[0] and "within 1 s" in lines[0]
    assert took < 20  # torch's import and 1 s, not torch's own client retrying for twice its timeout
    assert json.loads(error_file.read_text())["message"] == lines[0]  # torchrun's failure summary quotes it


def test_a_rank_waits_for_a_store_that_opens_late_and_no_longer():
    import threading

    from cudadoctor.backends.children.fleet_child import reachable

    port = free_port()
    start = time.monotonic()
    assert not reachable("127.0.0.1", port, time.monotonic() + 0.5)
    assert 0.3 < time.monotonic() - start < 3
    server = socket.socket()
    try:
        server.bind(("127.0.0.1", port))
        threading.Timer(0.5, server.listen).start()  # rank 0 opens its store after its node check
        assert reachable("127.0.0.1", port, time.monotonic() + 5)
    finally:
        server.close()


def test_the_join_bound_covers_rank_0s_node_check_only_where_rank_0_opens_the_store():
    from cudadoctor.backends.fleet import Launch
    from cudadoctor.commands.fleet import connect_timeout

    leader, other = Launch(1, 4, 0, 2, 1, None), Launch(3, 4, 1, 2, 1, None)
    assert connect_timeout(5.0, 12.0, leader, {}) == 5.0  # it ran the same check as rank 0 did
    assert connect_timeout(5.0, 12.0, other, {}) == 17.0  # it ran none: rank 0 opens the store after its own
    assert connect_timeout(5.0, 12.0, other, {"TORCHELASTIC_USE_AGENT_STORE": "True"}) == 5.0  # torchrun's is open


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"RANK": "5", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29535"}, "RANK=5"),
        ({"WORLD_SIZE": "99999999999999999999", "MASTER_PORT": "99999"}, "WORLD_SIZE=99999999999999999999"),
        ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "99999"}, "MASTER_PORT=99999"),
        ({"RANK": "one", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29535"}, "RANK=one"),
        ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "-1", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "LOCAL_RANK=-1"),
        ({"RANK": "1", "WORLD_SIZE": "2"}, "MASTER_ADDR is not set"),
    ],
)
def test_launch_variables_are_checked_before_anything_waits(env, named):
    p, took = _fleet_alone(env, "--join-timeout", "1", "--skip", NO_PROBES)
    assert p.returncode == 2 and p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cudadoctor: ") and named in lines[0], p.stderr
    assert took < 15  # no node check, no child, no wait


# -- `cudadoctor fleet --nproc-per-node …`: the doctor starts torchrun's launcher itself ------------------

LAUNCH_ENV = {"OMP_NUM_THREADS": "1"}


def _no_traceback(run) -> None:
    for stream in (run.stdout, run.stderr):
        assert "Traceback" not in stream and "ChildFailedError" not in stream, stream[-3000:]


def test_fleet_launches_torchrun_itself_and_ends_with_the_report(run_cli):
    pytest.importorskip("torch.distributed")
    # what Kubeflow's PyTorchJob sets on every pod: the launcher gives its workers their own
    pod = {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}
    run = run_cli(
        "fleet", "--nproc-per-node", "2", "--expect-gpus", "2", "--skip", SKIP, machine=MACHINE_A, env=LAUNCH_ENV | pod
    )
    assert run.code == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "CD800 1 node, 2 ranks reported" in run.stdout
    assert run.stdout.rstrip().endswith("Exit code: 0")  # the report is the last thing printed
    _no_traceback(run)
    assert run.stderr == ""  # neither torchrun's banner nor its OMP_NUM_THREADS notice


def test_a_failed_gate_is_the_report_and_exit_1_without_torchruns_traceback(run_cli):
    pytest.importorskip("torch.distributed")
    run = run_cli(
        "fleet", "--nproc-per-node", "2", "--expect-gpus", "2", "--skip", SKIP, machine=MACHINE_B, env=LAUNCH_ENV
    )
    assert run.code == 1, run.stdout[-3000:] + run.stderr[-3000:]
    assert "CD802" in run.stdout and "1 of 2 GPUs" in run.stdout  # the node that shows too few GPUs
    assert run.stdout.rstrip().endswith("Exit code: 1")
    _no_traceback(run)
    assert run.stderr == ""


def test_the_workers_get_the_fleet_options_as_given_and_none_of_the_launchers():
    from cudadoctor.commands.fleet import LAUNCH_OPTIONS, fleet, worker_args

    given = ["--nnodes=1:2", "--nproc-per-node", "2", "--standalone", "--full", "-vo", "r.json", "--max-size", "2MiB"]
    given += ["--min-busbw", "12.5", "--timeout", "7", "--skip", "torch", "--expect-gpus", "2", "--format", "junit"]
    ctx = fleet.make_context("fleet", list(given))
    workers = worker_args(ctx)
    assert not any(w.startswith(option) for w in workers for option, _ in LAUNCH_OPTIONS)
    again = fleet.make_context("fleet", list(workers)).params
    launch = {name for _, name in LAUNCH_OPTIONS}
    mine = {k: v for k, v in ctx.params.items() if k not in launch}
    assert mine == {k: v for k, v in again.items() if k not in launch}


def test_the_launcher_options_inside_a_torchrun_worker_are_one_line():
    env = {"RANK": "0", "WORLD_SIZE": "1", "TORCHELASTIC_RUN_ID": "x"}  # as torchrun starts a worker
    p, _took = _fleet_alone(env, "--nproc-per-node", "2", "--skip", NO_PROBES)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        "cudadoctor: --nproc-per-node is torchrun's option, and this is already a torchrun worker: run either"
        " `cudadoctor fleet --nproc-per-node …` or `torchrun --nproc-per-node … -m cudadoctor fleet`"
    ]
    bad = _fleet_alone({}, "--nnodes", "2:1")[0]
    assert bad.returncode == 2 and "'2:1' is not N or MIN:MAX" in bad.stderr and len(bad.stderr.splitlines()) == 1


def test_a_rendezvous_that_never_completes_is_one_line_and_exit_3():
    pytest.importorskip("torch.distributed")
    port = free_port()  # the other node never comes
    args = ["--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}"]
    p, _took = _fleet_alone({}, *args, "--rdzv-conf", "join_timeout=2", "--skip", NO_PROBES)
    assert p.returncode == 3 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        "cudadoctor fleet: torchrun's launcher failed: not all 2 nodes joined the rendezvous at"
        f" 127.0.0.1:{port} within join_timeout (2 s)"
    ]


def test_ctrl_c_on_the_launching_doctor_is_130_and_leaves_no_worker(fake_libs, tmp_path):
    pytest.importorskip("torch.distributed")
    tag = f"cudadoctor-fleet-test-{uuid.uuid4().hex}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_VISIBLE", "FAKE_NVML", "NCCL_"))}
    env.update(LAUNCH_ENV, PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="")  # gloo on the CPU, on any machine
    env["CUDADOCTOR_FLEET_TEST"] = json.dumps({"tag": tag, "hang": {"1": "all-reduce node 1048576"}})
    cmd = [sys.executable, "-m", "cudadoctor", "fleet", "--nproc-per-node", "2", "--full", "--max-size", "1MiB"]
    cmd += ["--timeout", "120", "--skip", NO_PROBES]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            children = [p for p in _leftovers(tag) if b"fleet_child" in Path(f"/proc/{p}/cmdline").read_bytes()]
            if len(children) == 2:  # both workers are inside their bounded child: mid-run
                break
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()
        time.sleep(1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 130, err.decode()[-2000:]
        assert b"Traceback" not in out + err
        end = time.monotonic() + 15  # the workers end on their launcher's death, and their children with them
        while _leftovers(tag) and time.monotonic() < end:
            time.sleep(0.2)
        assert _leftovers(tag) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _kill(_leftovers(tag))


def test_a_narrow_terminal_cuts_the_versions_before_the_node_and_its_status():
    import io

    from rich.console import Console

    from cudadoctor.facts import DriverFacts, Facts, NvmlDevice
    from cudadoctor.render import text
    from cudadoctor.rules.fleet import evaluate

    ff = _ff(3, 8)
    for node in ff.nodes:
        node.label = f"dgx-h100-sxm5-rack12-row07-node034{node.node_rank}"
        gpus = [NvmlDevice(index=i, name="NVIDIA H100 80GB HBM3") for i in range(8)]
        node.facts = Facts(
            driver=DriverFacts(
                binding="nvidia-ml-py",
                library_loaded=True,
                init_status="ok",
                driver_version="550.54.14",
                cuda_driver_version=12040,
                device_count=8,
                devices=gpus,
            )
        )
    buf = io.StringIO()  # no encoding: ASCII, where a cut cell ends in "..."
    console = Console(file=buf, width=60, force_terminal=True, color_system=None, highlight=False, soft_wrap=True)
    text.render(build("fleet", ff, [], evaluate(ff), Severity.ERROR), console, verbose=False, redact=False)
    lines = buf.getvalue().splitlines()
    assert all(display_width(line) <= 60 for line in lines)
    start = next(i for i, line in enumerate(lines) if "CD800" in line)
    assert lines[start + 1].split() == ["Node", "GPUs", "Driver", "Check"]
    for n in range(3):  # the end of the name tells the nodes apart: it stays, as does the status
        node, *_, status = lines[start + 2 + n].split()
        assert node.startswith("...") and node.endswith(f"rack12-row07-node034{n}") and status == "healthy"
    assert lines[start + 5].strip() == "In every row: Ranks 8, CUDA 12.4, torch 2.13.0+cu130"


def test_fleet_driver_on_an_unknown_os_is_a_label() -> None:
    from cudadoctor.facts import DriverFacts, NvmlDevice, SystemFacts
    from cudadoctor.facts.fleet import FleetFacts, NodeFacts, RankInfo
    from cudadoctor.rules.fleet import evaluate as fleet_evaluate

    ff = FleetFacts(world_size=3, local_world_size=1)
    for n in range(3):
        ff.nodes.append(NodeFacts(node_rank=n, label=f"gpu{n:02d}", host=f"gpu{n:02d}", ranks=[n]))
        ff.ranks.append(RankInfo(rank=n, node_rank=n, local_rank=0, host=f"gpu{n:02d}", torch="2.13.0+cu130"))
        ff.nodes[-1].facts = Facts(
            system=SystemFacts(os="Linux", os_id="gentoo", env={}),
            driver=DriverFacts(
                binding="nvidia-ml-py",
                library_loaded=True,
                init_status="ok",
                driver_version="535.104.05" if n == 2 else "550.54.14",
                device_count=1,
                devices=[NvmlDevice(index=0, name="NVIDIA H100 80GB HBM3")],
            ),
        )
    found = fleet_evaluate(ff)
    differ = by_code(found)["CD801"]
    assert not any(c.lstrip().startswith("#") for c in commands(found))
    driver = [r for r in differ.fix if "550.54.14" in r.when]
    assert driver == [driver[0]] and driver[0].commands == []
    assert driver[0].when == "on gpu02: install NVIDIA driver 550.54.14 (branch 550), as on the others, then reboot"
