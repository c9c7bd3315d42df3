"""The pytest plugin, in inner pytest sessions (subprocesses) on fake NVML machines."""

from __future__ import annotations

import os

import pytest

from tests.conftest import H100_HEALTHY, ROOT, fake_machine_env

# The inner sessions leave the torch probe out (--cudadoctor-skip torch: the CPU torch here would make
# every fake GPU machine fail on CD202).

TESTS = """
import pytest


@pytest.mark.cuda(gpus=1)
def test_one_gpu():
    pass


@pytest.mark.cuda(min_free="100GiB")
def test_huge():
    pass


@pytest.mark.cuda(capability="9.0", gpus=2)
def test_two_hoppers():
    pass


def test_plain():
    pass
"""


def _load_plugin() -> list[str]:
    """The plugin's pytest11 entry point loads it where cudadoctor is installed; a plain checkout on
    PYTHONPATH has none, so the inner session loads it by name (both at once would be an error)."""
    from importlib.metadata import entry_points

    autoload = not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    if autoload and any(ep.value == "cudadoctor.pytest_plugin" for ep in entry_points(group="pytest11")):
        return []
    return ["-p", "cudadoctor.pytest_plugin"]


@pytest.fixture
def inner(pytester, fake_libs, monkeypatch):
    pytester.makepyfile(test_inner=TESTS)

    def run(machine: str, *args: str):
        path = pytester.path / "machine.txt"
        path.write_text(machine)
        for key, value in fake_machine_env(path, fake_libs).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        return pytester.runpytest_subprocess(
            "-rs", "-p", "no:cacheprovider", *_load_plugin(), "--cudadoctor-skip", "torch", *args
        )

    return run


def test_marker_skips_with_the_doctors_reason_and_collects_once(inner):
    result = inner(H100_HEALTHY)
    result.assert_outcomes(passed=2, skipped=2)
    out = result.stdout.str()
    assert "cudadoctor: CD501 0 of 1 visible GPU qualify; 1 required; CD502 GPU 0 (NVIDIA H100 80GB HBM3) has " in out
    assert "has less than 100GiB free" in out
    assert "cudadoctor: CD501 1 of 1 visible GPU qualify; 2 required" in out
    assert out.count("facts collected once for the session") == 1


def test_gate_fails_the_session_with_the_findings(inner):
    result = inner("init_error 18\n", "--cudadoctor")
    assert result.ret == 1
    out = result.stdout.str() + result.stderr.str()
    assert "cudadoctor gate failed" in out and "CD103" in out
    assert "passed" not in out  # no test ran


def test_gate_passes_and_warns(inner):
    warn = H100_HEALTHY + "missing nvmlSystemGetNVMLVersion\n"
    result = inner(warn, "--cudadoctor")
    assert result.ret == 0
    out = result.stdout.str()
    assert "warning CD106" in out
    assert out.count("facts collected once for the session") == 1  # the gate and the markers share one collection
    failed = inner(warn, "--cudadoctor", "--cudadoctor-fail-on", "warning")
    assert failed.ret == 1 and "CD106" in failed.stdout.str() + failed.stderr.str()


def test_gate_reads_requirements_from_pyproject(inner, pytester):
    pytester.makepyprojecttoml("[tool.cudadoctor]\nrequire-gpus = 4\n")
    result = inner(H100_HEALTHY, "--cudadoctor")
    assert result.ret == 1 and "CD501" in result.stdout.str() + result.stderr.str()


def test_bad_marker_is_a_usage_error(inner, pytester):
    pytester.makepyfile(test_bad="import pytest\n@pytest.mark.cuda(min_free='lots')\ndef test_x():\n    pass\n")
    result = inner(H100_HEALTHY, "test_bad.py")
    assert result.ret != 0 and "cuda marker" in result.stdout.str() + result.stderr.str()
