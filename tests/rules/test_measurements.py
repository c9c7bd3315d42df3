"""Bandwidth and smoke-test findings on hand-written facts, and the CPU half on the real CPU torch."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cudadoctor.backends import measure
from cudadoctor.cli import cli
from cudadoctor.facts import (
    BandwidthFacts,
    Facts,
    SmokeFacts,
    SmokeStep,
    Transfer,
)
from cudadoctor.knowledge.pcie import link_gbps
from cudadoctor.model import Severity
from cudadoctor.report import EXIT_PROBLEMS
from cudadoctor.rules import evaluate as evaluate_all
from cudadoctor.rules.measurements import evaluate
from tests.facts_fixtures import gpu, healthy
from tests.helpers import by_code


def copies(dev, h2d_pinned, d2h_pinned, h2d_page, d2h_page):
    values = {
        ("h2d", "pinned"): h2d_pinned,
        ("d2h", "pinned"): d2h_pinned,
        ("h2d", "pageable"): h2d_page,
        ("d2h", "pageable"): d2h_page,
    }
    return [Transfer(dev, d, m, gbps=v, samples=[v] * 5, size=256 << 20) for (d, m), v in values.items()]


def h100(**link):
    link = {"pcie_gen_current": 5, "pcie_gen_max": 5, "pcie_width_current": 16, "pcie_width_max": 16, **link}
    return healthy([gpu(0, "NVIDIA H100 80GB HBM3", "9.0", **link)])


def test_pcie_table():
    assert link_gbps(5, 16) == pytest.approx(63.0, abs=0.1)
    assert link_gbps(3, 16) == pytest.approx(15.76, abs=0.1)
    assert link_gbps(None, 16) is None


def test_healthy_h100_bandwidth_is_information_only():
    facts = h100()
    facts.bandwidth = BandwidthFacts(transfers=copies(0, 55.4, 57.3, 26.0, 22.0))
    found = evaluate(facts)
    assert [f.code for f in found] == ["CD400"]
    # pinned rates as a share of the Gen5 x16 link (63 GB/s): what "healthy is 75-88 %" is read against
    assert found[0].tables[0].rows[0] == ["cuda:0", "55.4 (88%)", "57.3 (91%)", "26.0", "22.0", "Gen5x16 63.0"]


def test_pinned_not_faster_and_far_below_link():
    facts = h100()
    facts.bandwidth = BandwidthFacts(transfers=copies(0, 12.0, 13.0, 11.0, 10.0))
    found = by_code(evaluate(facts))
    assert "pinned host-to-device 12.0 GB/s vs pageable 11.0 GB/s" in found["CD402"].title
    assert "19% of the Gen5 x16 link (63.0 GB/s)" in found["CD403"].title
    commands = [c for r in found["CD403"].fix for c in r.commands]
    assert "nvidia-smi topo -m" in commands
    assert any("pin_memory=True" in c for c in commands)


def test_narrow_link_is_a_warning():
    facts = h100(pcie_width_current=8, pcie_gen_current=4)
    facts.bandwidth = BandwidthFacts(transfers=copies(0, 24.0, 25.0, 12.0, 12.0))
    f = by_code(evaluate(facts))["CD401"]
    assert f.title.endswith("PCIe link x8 of x16 (Gen4 of Gen5)")


def test_bandwidth_error_and_skip():
    facts = h100()
    facts.bandwidth = BandwidthFacts(
        transfers=[Transfer(0, "h2d", "pinned", error="RuntimeError: CUDA error: out of memory")]
    )
    assert "out of memory" in by_code(evaluate(facts))["CD404"].title
    facts.bandwidth = BandwidthFacts(skipped="no usable CUDA device")
    assert by_code(evaluate(facts))["CD405"].title == "Bandwidth skipped: no usable CUDA device"


def smoke_ok(**kw):
    steps = [
        SmokeStep("cpu", "cnn", [2.31, 2.2], 10.0),
        SmokeStep("cuda:0", "cnn", [2.31, 2.2], 400.0),
        SmokeStep("cpu", "mlp", [2.35, 2.1], 900.0),
        SmokeStep("cuda:0", "mlp", [2.35, 2.1], 3000.0),
    ]
    base = dict(
        steps=steps,
        max_loss_difference=2e-6,
        amp_dtype="bfloat16",
        amp_finite=True,
        dataloader_ok=True,
        checkpoint_ok=True,
    )
    base.update(kw)
    return SmokeFacts(**base)


def test_smoke_summary_reports_speedup():
    facts = h100()
    facts.smoke = smoke_ok()
    f = by_code(evaluate(facts))["CD406"]
    assert "CNN 40.0x faster on the GPU" in f.title and "AMP bfloat16 ok" in f.title
    assert "within 0.0002%" in f.title


@pytest.mark.parametrize(
    "change,code",
    [
        ({"max_loss_difference": 0.05}, "CD408"),
        ({"amp_finite": False, "amp_error": None}, "CD409"),
        (
            {
                "dataloader_ok": False,
                "dataloader_error": "RuntimeError: DataLoader worker (pid 7) is killed by signal: Bus error.",
            },
            "CD410",
        ),
        ({"checkpoint_ok": False}, "CD411"),
    ],
)
def test_smoke_failures(change, code):
    facts = h100()
    facts.smoke = smoke_ok(**change)
    found = by_code(evaluate(facts))
    assert code in found and "CD406" not in found
    if code == "CD410":
        assert any("--shm-size" in c for r in found[code].fix for c in r.commands)


def test_loss_not_falling_and_no_kernel_image():
    facts = h100()
    facts.smoke = smoke_ok(
        steps=[
            SmokeStep("cuda:0", "cnn", [2.3, 2.4], 10.0),
            SmokeStep(
                "cuda:0",
                "mlp",
                error="RuntimeError: CUDA error: no kernel image is available for execution on the device",
            ),
        ]
    )
    found = by_code(evaluate(facts))
    assert "2.3000 -> 2.4000" in found["CD407"].title
    assert "cudadoctor explain CD205" in [c for r in found["CD412"].fix for c in r.commands]


def test_cpu_half_on_the_real_torch_in_one_child(monkeypatch):
    pytest.importorskip("torch")
    calls = []
    real = measure.run_child

    def counting(*a, **kw):
        calls.append(a)
        return real(*a, **kw)

    monkeypatch.setattr(measure, "run_child", counting)
    import sys

    shared = measure.SharedMeasurement(sys.executable, ["bandwidth", "smoke"], timeout=240, steps=4)
    bw, smoke = shared.bandwidth(), shared.smoke()
    assert len(calls) == 1  # one child for both
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: see the gpu tests")
    assert bw.skipped and "is_available() is False" in bw.skipped
    assert smoke.gpu_skipped and {s.device for s in smoke.steps} == {"cpu"}
    assert all(s.losses[-1] < s.losses[0] for s in smoke.steps)
    assert smoke.dataloader_ok and smoke.checkpoint_ok
    facts = healthy([])
    facts.bandwidth, facts.smoke = bw, smoke
    codes = [f.code for f in evaluate(facts)]
    assert codes.count("CD405") == 2 and "CD406" in codes


def test_measurement_child_timeout_is_a_finding(monkeypatch, tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexec sleep 30\n")
    fake.chmod(0o755)
    shared = measure.SharedMeasurement(str(fake), ["smoke"], timeout=1)
    facts = healthy([])
    facts.smoke = shared.smoke()
    assert facts.smoke.timed_out
    assert "did not finish in time" in by_code(evaluate(facts))["CD412"].title


def test_bench_and_gate_on_this_machine():
    pytest.importorskip("torch")
    r = CliRunner().invoke(cli, ["bench", "--json"])
    data = json.loads(r.output)
    # bench is check --full: every check runs, so it reaches check's verdict, plus the measurements
    ran = {p["name"] for p in data["probes"] if p["status"] == "ok"}
    assert {"system", "pci", "driver", "cuda_driver", "toolkit", "torch", "bandwidth", "smoke"} <= ran
    # whatever this machine is, the status is the one its findings make (no GPU here: problems)
    assert data["command"] == "bench" and data["status"] == _status_of(data)
    assert data["facts"]["smoke"]["steps"]
    # a requirement no machine meets: not measurable here, or measured and below it on a GPU machine
    r = CliRunner().invoke(cli, ["check", "--json", "--skip", "torch,smoke", "--min-h2d-gbps", "100000"])
    data = json.loads(r.output)
    assert r.exit_code == EXIT_PROBLEMS
    assert data["facts"]["bandwidth"] is not None  # the requirement brought the measurement in
    assert "CD506" in [f["code"] for f in data["findings"]]


def _status_of(data: dict) -> str:
    """report.decide's rule, from the JSON: a failed check, then the worst finding."""
    if any(p["status"] in ("crashed", "timeout") for p in data["probes"]):
        return "incomplete"
    worst = {f["severity"] for f in data["findings"]}
    return "problems" if "error" in worst else "warnings" if "warning" in worst else "healthy"


def test_a_rate_beyond_the_pcie_link_shows_no_share():
    """A second read: on a GH200 host copies go over NVLink-C2C, not PCIe; a share of 600 % would mislead."""
    facts = h100()
    facts.bandwidth = BandwidthFacts(transfers=copies(0, 380.0, 55.0, 26.0, 22.0))
    row = evaluate(facts)[0].tables[0].rows[0]
    assert row[1] == "380.0" and row[2] == "55.0 (87%)"


def test_a_smoke_test_without_steps_is_not_ok() -> None:
    found = evaluate_all(Facts(smoke=SmokeFacts(steps=[])), [])
    assert "CD406" not in {f.code for f in found}
    assert not any(f.severity is Severity.OK and f.section == "Measurements" for f in found)
    skipped = by_code(found)["CD405"]
    assert skipped.severity is Severity.INFO and skipped.title == "Smoke test: no training step ran"
    no_losses = evaluate_all(Facts(smoke=SmokeFacts(steps=[SmokeStep("cpu", "mlp", [], None)])), [])
    assert "CD406" not in {f.code for f in no_losses}


def test_unknown_steps_per_second_is_na() -> None:
    smoke = SmokeFacts(steps=[SmokeStep("cpu", "mlp", [2.3, 2.0], None), SmokeStep("cpu", "cnn", [2.3, 1.9], 0.0)])
    ok = by_code(evaluate_all(Facts(smoke=smoke), []))["CD406"]
    assert [r[2] for r in ok.tables[0].rows] == ["N/A", "0.0"]
