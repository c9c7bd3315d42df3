"""fleet's findings (CD8xx) are message templates where they are raised: shown in zh_CN, their titles, pages
and fix labels leave no English prose behind, and the English stays what it was. Measured over the example
jobs `explain` uses (rules/examples/fleets.py) and the jobs below, which raise the codes those do not."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from cudadoctor import locale as i18n
from cudadoctor.facts.fleet import AllReduce, GpuPerf, Hang
from cudadoctor.model import Finding, Message
from cudadoctor.rules import fleet
from cudadoctor.rules.examples import fleets
from cudadoctor.rules.examples.fleets import _fleet
from tests.conftest import ROOT


def _coverage() -> Any:
    spec = importlib.util.spec_from_file_location("message_coverage", ROOT / "tools" / "message_coverage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def extra_fleets() -> list[Any]:
    """Jobs that raise the fleet codes the catalogue's examples do not, and the other forms of the rest."""
    out = []
    # two nodes never sent their check; ranks died, and two never arrived from a node nobody knows
    lost = _fleet(3, expected_gpus=8)
    lost.nodes[1].facts = None
    lost.nodes[2].facts = None
    lost.nodes[2].report_error = "the report could not be read"
    lost.unfinished = {9: "gloo", 30: None}
    lost.rank_errors = {3: "RuntimeError: NCCL error"}
    lost.never_arrived = [41, 50]
    out.append(lost)
    # a run that hung with ranks missing, and one without a time bound; a node env that differs
    late = _fleet(2, hang=Hang("arrive", 120.0, {9: "gloo", 12: None}))
    late.nodes[1].facts.system.env["NCCL_IB_HCA"] = "mlx5_0"
    late.nodes[0].facts.driver.devices[0].persistence_mode = False
    late.nodes[1].facts.system.os_id = "rocky"
    late.nodes[1].facts.driver.driver_version = "550.90.07"
    late.nodes[0].packages = {"nvidia-nccl-cu12": "2.21.5"}
    late.nodes[1].packages = {"nvidia-nccl-cu12": "2.26.2"}
    out.append(late)
    out.append(_fleet(1, hang=Hang("all-reduce world 1048576")))
    out.append(_fleet(1, child_error="the measurement child did not start"))  # nothing else went wrong
    # two nodes short of GPUs and of ranks; a driver no package is known for
    short = _fleet(3, expected_gpus=8)
    for n in (1, 2):
        drv = short.nodes[n].facts.driver
        drv.devices, drv.device_count = drv.devices[:6], 6
        for info in short.ranks:
            if info.node_rank == n:
                info.visible_gpus = 6
    short.nodes[2].facts.system.os_id = "arch"
    short.nodes[2].facts.driver.driver_version = "560.28.03"
    short.nodes[1].facts.driver.driver_version = "560.28.03"
    out.append(short)
    # measurements: a failed GPU, skipped ranks, a whole fleet below its SKU, slow nodes inside and across
    slow = _fleet(5, phases=["inventory", "gpu", "nccl"], limits={"min_busbw": 300.0})
    slow.gpus = [GpuPerf(r, r // 8, r % 8, "NVIDIA H100 80GB HBM3", 300.0, 900.0, 20.0) for r in range(36)]
    slow.gpus += [
        GpuPerf(36, 4, 4, "NVIDIA H100 80GB HBM3", error="CUDA error: an illegal memory access"),
        GpuPerf(37, 4, 5, skipped="torch.cuda.is_available() is False"),
        GpuPerf(38, 4, 6, skipped="torch.cuda.is_available() is False"),
    ]
    for size in (1 << 20, 1 << 30):
        for n in range(5):
            bw = 150.0 if n == 3 else 390.0
            slow.allreduce.append(AllReduce("node", [n], size, 8, 0.01, bw * 0.57, bw))
        slow.allreduce.append(AllReduce("world", list(range(5)), size, 40, 0.1, 40.0, 70.0))
    out.append(slow)
    # one GPU below the rest and below its SKU, in a small fleet with a known node figure
    one = _fleet(1, phases=["inventory", "gpu", "nccl"])
    one.gpus = [GpuPerf(r, 0, r, "NVIDIA H100 80GB HBM3", 720.0, 2900.0, 20.0 if r == 2 else 50.0) for r in range(8)]
    one.allreduce.append(AllReduce("node", [0], 1 << 30, 8, 0.01, 100.0, 200.0))
    out.append(one)
    # gloo stood in for NCCL
    gloo = _fleet(2, phases=["inventory", "nccl"])
    gloo.backend = "gloo"
    gloo.allreduce.append(AllReduce("node", [0], 1 << 20, 8, 0.01, 1.0, 1.5))
    out.append(gloo)
    return out


def _findings() -> list[Finding]:
    return [f for ff in fleets() + extra_fleets() for f in fleet.evaluate(ff) if f.code.startswith("CD8")]


def _quoted(jobs: list[Any]) -> list[str]:
    """What findings quote as it came (errors torch, gloo or a child printed): English by nature, not prose."""
    out = []
    for ff in jobs:
        out += [g.error or g.skipped or "" for g in ff.gpus]
        out += [*ff.rank_errors.values(), *ff.gloo_errors.values(), ff.child_error or ""]
    return sorted({q for q in out if q}, key=len, reverse=True)


def _texts(f: Finding) -> list[tuple[str, str]]:
    return [(k, t) for k, t in [("title", f.title), ("why", f.why), *(("fix", x.when) for x in f.fix)] if t]


def test_the_jobs_raise_every_fleet_code_but_none_left_out():
    from cudadoctor.rules.catalogue import CATALOGUE

    assert {f.code for f in _findings()} == {c for c in CATALOGUE if c.startswith("CD8")}


def test_fleet_findings_in_zh_cn_leave_no_english_prose():
    from cudadoctor.render.localize import finding as localized

    english_left = _coverage().english_left
    quoted = _quoted(fleets() + extra_fleets())
    left = []
    for f in _findings():
        with i18n.use("zh_CN"):
            zh = localized(f)
        for (field, en), (_, text) in zip(_texts(f), _texts(zh), strict=True):
            # a title built from facts is a template, so the translation fills it rather than matching it back
            assert field != "title" or isinstance(en, Message) or en == fleet_summary(f.code), (f.code, en)
            for q in quoted:
                text = text.replace(q, " ")
            if english_left(text):
                left.append((f.code, field, text))
    assert not left, left


def fleet_summary(code: str) -> str:
    from cudadoctor.rules.catalogue import CATALOGUE

    return CATALOGUE[code].summary


def test_rank_0s_zh_cn_report_names_the_nodes_ranks_and_gpus_in_chinese(capsys):
    """What rank 0 prints for `cudadoctor --lang zh_CN fleet` (commands/fleet.py: report, then emit) on the
    slow example job. A run needs torchrun and nodes; tests/commands/test_fleet.py runs those in English."""
    from cudadoctor.commands.fleet import FleetOptions, emit, report

    job = fleets()[1]
    o = FleetOptions(full=True)
    with i18n.use("zh_CN"):
        emit(report(job, None, False, o), job, o, [])
    out = " ".join(capsys.readouterr().out.split())  # the terminal wraps lines
    assert "测量了 32 块 GPU" in out
    assert "gpu02 的 GPU 5（进程 13） 上的 bf16 GEMM：610.0 TFLOP/s，集群中位数为 721.0" in out
    assert "进程 21（gpu03） 在每次集合通信中迟到 49 ms" in out
    assert "来源：H100 SXM" in out
    for english in ("GPUs measured", "vs the fleet's median", "arrive 49 ms late", "Source:", "(rank 13)"):
        assert english not in out


@pytest.mark.parametrize(
    ("code", "english"),
    [
        ("CD800", "4 nodes, 32 ranks reported"),
        ("CD821", "bf16 GEMM on gpu02 GPU 5 (rank 13): 610.0 TFLOP/s vs the fleet's median 721.0"),
        ("CD833", "rank 21 (gpu03) arrive 49 ms late at each collective (step 60.0 ms)"),
    ],
)
def test_the_english_titles_are_the_same_text(code: str, english: str):
    assert english in [str(f.title) for f in _findings() if f.code == code]
