"""What a real H200 said (issue 30), replayed without a GPU: tests/fixtures/real_h200/README.md says how each
file was made. Each test holds a difference the real machine showed and the fakes had not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

REAL = ROOT / "tests" / "fixtures" / "real_h200"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_VISIBLE")} | {"PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "cudadoctor", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_triage_of_the_h200s_own_collect_env_is_healthy_and_reads_nothing_into_its_runpy_warning() -> None:
    """collect_env run as `python -m` prints "<frozen runpy>:128: RuntimeWarning" first: "frozen" there is
    where Python keeps a module, not a frozen program; and its "nvcc 13.0" says no path to show."""
    p = cli("triage", "--json", str(REAL / "collect_env.txt"))
    report = json.loads(p.stdout)
    assert p.returncode == 0 and report["status"] == "healthy"
    assert "hang" not in {h["kind"] for h in report["facts"]["paste"]["hits"]}
    titles = {f["code"]: f["title"] for f in report["findings"]}
    assert titles["CD200"].startswith("torch 2.11.0+cu130 (CUDA 13.0) can use CUDA")
    assert titles["CD131"] == "CUDA toolkit: nvcc 13.0"  # not "nvcc 13.0 at nvcc"


def test_triage_of_the_h200s_nvidia_smi_reads_the_driver_and_the_gpu() -> None:
    report = json.loads(cli("triage", "--json", str(REAL / "nvidia_smi.txt")).stdout)
    titles = {f["code"]: f["title"] for f in report["findings"]}
    assert titles["CD100"] == "NVIDIA driver 580.159.04 (supports CUDA up to 13.0), 1 GPU: NVIDIA H200"
    assert report["status"] != "healthy"  # no torch in an nvidia-smi paste: not enough to call it healthy


def test_triage_of_a_real_out_of_memory_explains_it_from_the_message() -> None:
    """The process itself held 84 GiB and asked for 69.9 more of a 139.8 GiB card: the job does not fit,
    nothing is fragmented (0 bytes reserved but unallocated), and the stack ran."""
    report = json.loads(cli("triage", "--json", str(REAL / "oom.txt")).stdout)
    found = {f["code"]: f for f in report["findings"]}
    assert found["CD909"]["severity"] == "warning" and "CD914" in found
    assert "139.8 GiB" in found["CD909"]["title"] and "69.9 GiB" in found["CD909"]["title"]
    assert "expandable_segments" not in json.dumps(found["CD909"]["fix"])  # nothing reserved to defragment
    assert not [f for f in report["findings"] if f["severity"] == "error"]


def test_the_real_starved_run_says_which_samples_its_cpu_figure_covers() -> None:
    """The H200 run's timeline averaged the main process at 69 % of a core over the whole run (the import
    included) while CD714 said 48 %, over the samples on the GPU: the title now names that window."""
    from cudadoctor.facts.codec import from_jsonable
    from cudadoctor.facts.watch import Timeline
    from cudadoctor.render.timeline import timeline_lines
    from cudadoctor.rules.watch import evaluate

    data = json.loads((REAL / "watch_starved.json").read_text())
    tl = from_jsonable(Timeline, data["timeline"])
    found = {f.code: f for f in evaluate(tl)}
    title = str(found["CD714"].title)
    assert "while the command was on it" in title and "meanwhile" in title
    lines = timeline_lines(tl)
    pcie = next(line for line in lines if "PCIe" in line)
    assert "peak 0.0 GB/s" not in pcie and "GB/s" in pcie


def test_a_trickle_of_pcie_traffic_draws_low_bars_and_a_peak_that_is_not_zero() -> None:
    """The GPU-bound H200 run moved about 40 MB/s over PCIe: it was drawn as half-height bars beside
    "peak 0.0 GB/s". The PCIe row is scaled to at least 1 GB/s and says the peak in digits that show it."""
    from cudadoctor.render.timeline import _gbps, sparkline

    assert _gbps(40e6) == "0.04" and _gbps(3e6) == "< 0.01" and _gbps(12.34e9) == "12.3"
    assert set(sparkline([0.0, 40e6, 38e6, 40e6], max(40e6, 1e9))) == {"▁"}


# onlysm80 as the H200's `check --json` read it: an nvcc-built .so for sm_80 only, installed with a
# dist-info beside torch (benchmarks/real_gpu.sh, step ext_build)
ONLY_SM80 = {
    "name": "onlysm80",
    "version": "0.1",
    "torch_requirement": "torch==2.11.0",
    "libraries": [
        {"path": "onlysm80/_C.so", "sass": ["sm_80"], "ptx": [], "needed": [], "torch_symbols": 0, "error": None}
    ],
}


def test_on_the_real_h200_only_the_package_without_hopper_kernels_is_flagged(tmp_path: Path) -> None:
    """torchvision, torchaudio, cupy and jax there carry sm_90 (or PTX below it); the sm_80-only package
    is the one CD240 names, and its fix rebuilds for 9.0 in that environment's installer."""
    report = json.loads((REAL / "check.json").read_text())
    codes = {f["code"] for f in report["findings"]}
    assert "CD243" in codes and "CD240" not in codes  # what the H200 said without the planted package
    report["facts"]["extensions"]["packages"].insert(0, ONLY_SM80)
    saved = tmp_path / "with_onlysm80.json"
    saved.write_text(json.dumps(report))
    again = json.loads(cli("check", "--from", str(saved), "--json").stdout)
    flagged = [f for f in again["findings"] if f["code"] in ("CD240", "CD241", "CD244")]
    assert [f["code"] for f in flagged] == ["CD240"]
    assert flagged[0]["title"] == "onlysm80 0.1 has no kernels for NVIDIA H200 (compute capability 9.0, Hopper)"
    commands = [c for fx in flagged[0]["fix"] for c in fx["commands"]]
    assert any(c.startswith('TORCH_CUDA_ARCH_LIST="9.0" ') and "onlysm80==0.1" in c for c in commands)
    assert "Or install" not in flagged[0]["why"]
    # the table of every extension, at 80 columns: each package named in full (two jax packages differ
    # only after "jax-cuda13-p") and the kernel that runs on this GPU, or "-"
    text = cli("check", "--from", str(saved)).stdout
    table = text[text.index("CD243") : text.index("Visible devices")].splitlines()
    assert all(len(line) <= 80 for line in table)
    rows = {line.split()[0]: line.split() for line in table if line.startswith(" " * 8) and "…" not in line[:30]}
    assert {"jax-cuda13-pjrt", "jax-cuda13-plugin", "torchvision", "cupy-cuda13x"} <= set(rows)
    assert rows["onlysm80"][-1] == "-" and rows["torchvision"][-1] == rows["cupy-cuda13x"][-1] == "sm_90"


@pytest.mark.parametrize("name", ["check.json", "check_full.json"])
def test_the_real_h200_reports_replay_to_the_same_findings(name: str) -> None:
    saved = json.loads((REAL / name).read_text())
    again = json.loads(cli("check", "--from", str(REAL / name), "--json").stdout)
    assert sorted(f["code"] for f in again["findings"]) == sorted(f["code"] for f in saved["findings"])
    assert again["status"] == saved["status"] == "healthy"


def test_with_no_gpu_known_the_extension_table_has_no_column_for_one(tmp_path: Path) -> None:
    """The same environment where neither NVML nor torch named a GPU: what would run "on GPU" is unknown,
    so the column is not there (rather than a "?" in every row)."""
    report = json.loads((REAL / "check.json").read_text())
    report["facts"]["driver"] = None
    report["facts"]["torch"]["devices"] = []
    saved = tmp_path / "no_gpu.json"
    saved.write_text(json.dumps(report))
    again = json.loads(cli("check", "--from", str(saved), "--json").stdout)
    seen = next(f for f in again["findings"] if f["code"] == "CD243")
    from cudadoctor.render.layout import column_name

    assert [column_name(c) for c in seen["tables"][0]["columns"]] == ["Package", "Libs", "Cubins", "PTX", "Links torch"]
    assert all(len(row) == 5 and "?" not in row[:4] for row in seen["tables"][0]["rows"])
