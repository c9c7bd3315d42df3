"""`check --format openmetrics` and `--metrics-file`: what node_exporter's textfile collector and Prometheus
read. Parsed with the official prometheus-client parsers, both the Prometheus text format one (what the
textfile collector speaks) and the strict OpenMetrics one."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.conftest import H100_HEALTHY, ROOT

prom_parser = pytest.importorskip("prometheus_client.parser")
om_parser = pytest.importorskip("prometheus_client.openmetrics.parser")

pytestmark = pytest.mark.fakenvml

TWO_GPUS = """\
driver 550.54.14
cuda 12040
device name="NVIDIA H100 80GB HBM3" cc=9.0 total=85520809984 used=1073741824 util=12 temp=41 gen=5/5 width=16/16
device name="NVIDIA H100 80GB HBM3" cc=9.0 total=85520809984 used=85000000000 util=100 temp=92 gen=5/5 width=16/16
"""


def samples(text: str) -> dict[str, list]:
    """Every sample by metric name, parsed by both parsers (which must agree)."""
    strict = {f.name: f.samples for f in om_parser.text_string_to_metric_families(text)}
    loose = {f.name: f.samples for f in prom_parser.text_string_to_metric_families(text)}
    assert {k: [(s.labels, s.value) for s in v] for k, v in strict.items()} == {
        k: [(s.labels, s.value) for s in v] for k, v in loose.items()
    }
    return strict


def value(found: dict[str, list], name: str, **labels: str) -> float:
    hits = [s.value for s in found[name] if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(hits) == 1, (name, labels, found.get(name))
    return hits[0]


def test_metrics_of_a_two_gpu_machine_parse_and_carry_the_verdict(run_cli):
    r = run_cli("check", "--skip", "torch", "--format", "openmetrics", machine=TWO_GPUS)
    assert r.stdout.endswith("# EOF\n")
    found = samples(r.stdout)
    as_json = run_cli("check", "--skip", "torch", "--json", machine=TWO_GPUS).json
    # the status series says the same as the JSON report, and the exit code is the report's
    assert value(found, "cudadoctor_status", status=as_json["status"]) == 1
    assert sum(s.value for s in found["cudadoctor_status"]) == 1
    assert r.code == as_json["exit_code"] == value(found, "cudadoctor_exit_code")
    # one series per finding, with its code and severity
    codes = sorted(s.labels["code"] for s in found["cudadoctor_finding"])
    assert codes == sorted(f["code"] for f in as_json["findings"])
    # per GPU: memory in bytes, temperature, utilisation as a ratio
    assert value(found, "cudadoctor_gpu_memory_total_bytes", gpu="1") == 85520809984
    assert value(found, "cudadoctor_gpu_memory_used_bytes", gpu="1") == 85000000000
    assert value(found, "cudadoctor_gpu_temperature_celsius", gpu="1") == 92
    assert value(found, "cudadoctor_gpu_utilization_ratio", gpu="0") == pytest.approx(0.12)
    assert value(found, "cudadoctor_gpus") == 2
    assert value(found, "cudadoctor_driver_info", driver_version="550.54.14", cuda_driver_version="12.4") == 1


def test_an_unknown_fact_is_no_sample_never_zero(run_cli):
    """The torch probe did not run: no torch series at all (0 would say 'CUDA unavailable')."""
    r = run_cli("check", "--skip", "torch", "--format", "openmetrics", machine=H100_HEALTHY)
    found = samples(r.stdout)
    assert "cudadoctor_torch_cuda_available" not in found
    assert "cudadoctor_torch_info" not in found
    assert not any(s.labels.get("probe") == "torch" for s in found["cudadoctor_probe_ok"])
    assert "None" not in r.stdout and "null" not in r.stdout


def test_a_process_list_nvml_did_not_give_is_no_sample_never_zero(run_cli):
    """NVML failed to list the processes (every list function answered an error): no gpu_processes series
    (0 would say "nobody uses this GPU"), while the GPUs themselves are still reported."""
    machine = TWO_GPUS + "".join(
        f"fail_in nvmlDevice{kind}RunningProcesses_{v} 999\n"
        for kind in ("GetCompute", "GetGraphics")
        for v in ("v3", "v2")
    )
    found = samples(run_cli("check", "--skip", "torch", "--format", "openmetrics", machine=machine).stdout)
    assert "cudadoctor_gpu_processes" not in found
    assert value(found, "cudadoctor_gpu_memory_used_bytes", gpu="1") == 85000000000
    # the same machine with its lists answered: one process on GPU 0, none on GPU 1 (a real 0)
    listed = TWO_GPUS + "process gpu=0 pid=4242 mem=1048576 kind=compute\n"
    found = samples(run_cli("check", "--skip", "torch", "--format", "openmetrics", machine=listed).stdout)
    assert value(found, "cudadoctor_gpu_processes", gpu="0") == 1
    assert value(found, "cudadoctor_gpu_processes", gpu="1") == 0


def test_process_count_is_left_out_only_for_the_gpu_whose_list_failed():
    """One GPU's compute list failed (backends/nvml.py names it in `unsupported`), or a report says null."""
    from cudadoctor.render.openmetrics import render

    devices = [
        {"index": 0, "processes": [{"pid": 1}], "unsupported": {}},
        {"index": 1, "processes": [], "unsupported": {"compute_processes": "UNKNOWN"}},
        {"index": 2, "processes": None, "unsupported": {}},
        {"index": 3, "processes": [], "unsupported": {"temperature": "NOT_SUPPORTED"}},
    ]
    found = samples(render({"status": "healthy", "facts": {"driver": {"devices": devices}}}))
    assert {s.labels["gpu"]: s.value for s in found["cudadoctor_gpu_processes"]} == {"0": 1, "3": 0}


def test_measurements_of_a_replayed_real_h100_report_become_bandwidth_and_smoke_series(run_cli):
    report = ROOT / "tests" / "fixtures" / "real_gpu_report.json"
    r = run_cli("check", "--from", str(report), "--format", "openmetrics")
    found = samples(r.stdout)
    h2d = value(found, "cudadoctor_copy_bandwidth_bytes_per_second", gpu="0", direction="h2d", memory="pinned")
    assert 1e9 < h2d < 1e11  # a PCIe Gen5 x16 link: tens of GB/s, in bytes per second
    assert all(s.value > 0 for s in found["cudadoctor_smoke_steps_per_second"])


def test_label_values_are_escaped():
    """A GPU name or a replayed report may hold a quote, a backslash or a newline."""
    from cudadoctor.render.openmetrics import render

    odd = 'H100 \\ "odd"\nfake{x="1"} 2'
    data = {"status": "healthy", "facts": {"driver": {"devices": [{"index": 0, "name": odd}]}}}
    found = samples(render(data))
    assert [s.labels["name"] for s in found["cudadoctor_gpu_info"]] == [odd]
    assert "fake" not in found


def test_metrics_file_is_written_whole_readable_and_beside_any_format(run_cli, tmp_path: Path):
    target = tmp_path / "textfile" / "cudadoctor.prom"
    target.parent.mkdir()
    target.write_text("old\n")
    r = run_cli("check", "--skip", "torch", "--metrics-file", str(target), machine=H100_HEALTHY)
    assert "CD100" in r.stdout  # the terminal report still shows
    text = target.read_text()
    assert text.endswith("# EOF\n")
    samples(text)
    # readable by a collector running as another user, and no temporary file left behind
    assert stat.S_IMODE(os.stat(target).st_mode) & 0o044 == 0o044
    assert sorted(p.name for p in target.parent.iterdir()) == ["cudadoctor.prom"]


def test_metrics_file_in_a_missing_directory_is_a_usage_error(run_cli, tmp_path: Path):
    r = run_cli("check", "--skip", "torch", "--metrics-file", str(tmp_path / "nope" / "m.prom"), machine=H100_HEALTHY)
    assert r.code == 2
    assert r.stderr.strip().startswith("cudadoctor: cannot write --metrics-file")
    assert len(r.stderr.strip().splitlines()) == 1


def test_promtool_accepts_the_metrics_where_it_is_installed(run_cli):
    """`promtool check metrics` (Prometheus's own linter; Debian's `prometheus` package) finds nothing to say."""
    import shutil
    import subprocess

    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed")
    report = ROOT / "tests" / "fixtures" / "real_gpu_report.json"
    for args in (("check", "--skip", "torch"), ("check", "--from", str(report))):
        text = run_cli(*args, "--format", "openmetrics", machine=TWO_GPUS if "--skip" in args else None).stdout
        p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and p.stdout == "" and p.stderr == "", (p.stdout, p.stderr)
