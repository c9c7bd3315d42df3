"""The torch child script against the real torch of the test environment (a CPU build in CI)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv

import pytest
from click.testing import CliRunner

from cudadoctor.backends.torchenv import check_interpreter, query_torch
from cudadoctor.cli import cli
from cudadoctor.report import EXIT_INCOMPLETE, EXIT_PROBLEMS, EXIT_USAGE

torch = pytest.importorskip("torch")


def test_child_reports_the_real_torch():
    facts = query_torch(sys.executable, timeout=120)
    assert facts.complete and not facts.timed_out
    assert facts.version == torch.__version__
    assert facts.cuda == torch.version.cuda
    assert facts.cuda_built == torch.backends.cuda.is_built()
    assert facts.is_available == torch.cuda.is_available()
    if not facts.cuda_built:
        assert facts.arch_flags == [] and facts.cudnn_version is None


def test_child_does_not_initialise_cuda_in_this_process():
    query_torch(sys.executable, timeout=120)
    assert "torch" in sys.modules  # imported by this test module, not by the doctor
    code = (
        "import sys; from cudadoctor.backends.torchenv import query_torch; "
        "query_torch(sys.executable, 120); print('torch' in sys.modules)"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.stdout.strip() == "False"


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory):
    path = tmp_path_factory.mktemp("bare") / "venv"
    venv.EnvBuilder(with_pip=False).create(path)
    return path / "bin" / "python"


def test_another_interpreter_without_torch(bare_venv):
    facts = query_torch(str(bare_venv), timeout=60)
    assert facts.installed is False and "torch" in (facts.import_error or "")
    r = CliRunner().invoke(cli, ["check", "--json", "--python", str(bare_venv)])
    assert r.exit_code == EXIT_PROBLEMS
    assert '"CD201"' in r.output and str(bare_venv) in r.output


def test_bad_interpreter_paths(tmp_path):
    assert check_interpreter("/bin/sh") is not None
    r = CliRunner().invoke(cli, ["check", "--python", str(tmp_path / "nope")])
    assert r.exit_code == EXIT_USAGE and "no such file" in r.output


def test_hanging_torch_child_is_bounded(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexec sleep 30\n")
    fake.chmod(0o755)
    facts = query_torch(str(fake), timeout=1)
    assert facts.timed_out


def test_an_interpreter_that_hangs_is_incomplete_not_a_usage_error(tmp_path):
    """A --python that is no Python is the user's mistake (2); one that hangs is a check that could not
    finish (3), as docs/exit-codes.md says of every child."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexec sleep 30\n")
    fake.chmod(0o755)
    r = CliRunner().invoke(cli, ["check", "--python", str(fake), "--timeout", "1"])
    assert r.exit_code == EXIT_INCOMPLETE and "did not answer within 1 s" in r.output
    r = CliRunner().invoke(cli, ["check", "--python", "/bin/sh"])
    assert r.exit_code == EXIT_USAGE and "is not a Python 3 interpreter" in r.output


FAKE_CPU_TORCH = """import types
__version__ = "2.13.0"
version = types.SimpleNamespace(cuda=None, hip=None)
backends = types.SimpleNamespace(
    cuda=types.SimpleNamespace(is_built=lambda: False),
    cudnn=types.SimpleNamespace(is_available=lambda: False),
    mps=types.SimpleNamespace(is_built=lambda: False, is_available=lambda: False),
)
cuda = types.SimpleNamespace(is_available=lambda: False, device_count=lambda: 0)
"""


def test_a_torch_installed_as_a_wheel_variant_is_read_from_its_variant_json(bare_venv):
    """PEP 817: a variant wheel's *.dist-info/variant.json names the one variant it is (label -> namespace
    -> feature -> values). The child reads it with the standard library, next to INSTALLER."""
    site = next(bare_venv.parent.parent.glob("lib/python3*/site-packages"))
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text(FAKE_CPU_TORCH)
    info = site / "torch-2.13.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.13.0\n")
    (info / "INSTALLER").write_text("uv\n")
    variant = {"$schema": "https://variants-schema.wheelnext.dev/v0.0.3.json", "variants": {"null": {}}}
    (info / "variant.json").write_text(json.dumps(variant))
    try:
        facts = query_torch(str(bare_venv), timeout=60)
        assert facts.version == "2.13.0" and facts.cuda_built is False and facts.torch_installer == "uv"
        assert facts.torch_variant is not None and facts.torch_variant.label == "null"
        variant["variants"] = {"cu130": {"nvidia": {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["90_real"]}}}
        (info / "variant.json").write_text(json.dumps(variant))
        facts = query_torch(str(bare_venv), timeout=60)
        assert facts.torch_variant.label == "cu130"
        assert facts.torch_variant.properties == [
            "nvidia :: cuda_version_lower_bound :: 13.0",
            "nvidia :: sm_arch :: 90_real",
        ]
    finally:
        shutil.rmtree(site / "torch")
        shutil.rmtree(info)
