"""Real-GPU paths: run with `pytest -m gpu` on a machine with an NVIDIA GPU and driver; skipped elsewhere.

Set CUDADOCTOR_SAVE_REPORT=path to keep the real report (tests/fixtures/real_gpu_report.json is one).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cudadoctor.report import EXIT_OK, EXIT_PROBLEMS
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "real_gpu_report.json"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cudadoctor", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=600,
    )


@pytest.mark.gpu
def test_check_full_on_a_real_gpu():
    p = cli("check", "--full", "--json")
    report = json.loads(p.stdout)
    if os.environ.get("CUDADOCTOR_SAVE_REPORT"):
        with open(os.environ["CUDADOCTOR_SAVE_REPORT"], "w") as fh:
            fh.write(p.stdout)
    codes = [f["code"] for f in report["findings"]]
    assert "CD100" in codes and "CD120" in codes, codes
    torch = report["facts"]["torch"]
    assert torch["is_available"] is True and torch["device_count"] >= 1
    assert "CD200" in codes
    bw = report["facts"]["bandwidth"]
    pinned = [t for t in bw["transfers"] if t["direction"] == "h2d" and t["memory"] == "pinned"]
    assert pinned and all(t["gbps"] and t["gbps"] > 1 for t in pinned)
    smoke = report["facts"]["smoke"]
    assert {s["device"] for s in smoke["steps"]} == {"cpu", "cuda:0"}
    assert smoke["max_loss_difference"] < 1e-3 and smoke["amp_finite"] and smoke["checkpoint_ok"]
    assert p.returncode in (EXIT_OK, EXIT_PROBLEMS)


@pytest.mark.gpu
def test_gpus_on_a_real_gpu():
    p = cli("gpus", "--json")
    data = json.loads(p.stdout)
    assert p.returncode == EXIT_OK and data["gpus"]
    assert all(g["memory_total"] and g["uuid"].startswith("GPU-") for g in data["gpus"])
    pick = cli("gpus", "--pick", "1")
    assert pick.stdout.startswith("export CUDA_VISIBLE_DEVICES=GPU-")


@pytest.mark.skipif(not FIXTURE.exists(), reason="no real GPU report kept yet")
def test_real_report_replays_to_the_same_findings():
    saved = json.loads(FIXTURE.read_text())
    p = cli("check", "--from", str(FIXTURE), "--json")
    again = json.loads(p.stdout)
    # the same findings; their order follows the report's sections, which may change (torch.compile has
    # its own section since the report was saved)
    assert sorted(f["code"] for f in again["findings"]) == sorted(f["code"] for f in saved["findings"])
