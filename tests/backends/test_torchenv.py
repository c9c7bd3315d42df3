"""The torch child script against the real torch of the test environment (a CPU build in CI)."""

from __future__ import annotations

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
