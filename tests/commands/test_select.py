"""`check --select CODE,…` / `--ignore CODE,…` (and `select`/`ignore` in the config file), as ruff selects
rules: a finding that does not count never changes the exit code, is shown as ignored (one line each), and
stays in the JSON with `"ignored": true`. The machine: a healthy H100 asked for more free memory than it
has: its two errors are CD501 (no GPU qualifies) and CD502 (too little free memory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import H100_HEALTHY
from tests.e2e.test_pytest_plugin import inner  # noqa: F401  (the fixture: an inner pytest session)

pytestmark = pytest.mark.fakenvml

GATE = ("check", "--skip", "torch", "--min-free-memory", "100GiB")


def _ignored(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("ignored:")]


def test_without_select_or_ignore_the_unmet_requirement_fails(run_cli):
    r = run_cli(*GATE, machine=H100_HEALTHY)
    assert r.code == 1 and "CD501" in r.stdout and not _ignored(r.stdout)


def test_an_ignored_error_passes_and_is_shown_as_ignored(run_cli):
    r = run_cli(*GATE, "--ignore", "CD501", machine=H100_HEALTHY)
    assert r.code == 1 and "PROBLEMS (1 error, 0 warnings): GPU 0 (NVIDIA H100 80GB HBM3) has less" in r.stdout
    assert _ignored(r.stdout) == ["ignored: CD501 0 of 1 visible GPU qualify; 1 required (--ignore)"]
    r = run_cli(*GATE, "--ignore", "CD501,CD502", machine=H100_HEALTHY)
    assert r.code == 0, r.stdout + r.stderr
    lines = _ignored(r.stdout)
    assert lines[0] == "ignored: CD501 0 of 1 visible GPU qualify; 1 required (--ignore)"
    assert lines[1].startswith("ignored: CD502 GPU 0 (NVIDIA H100 80GB HBM3) has less than 100GiB free")
    assert all(len(line) <= 80 for line in r.stdout.splitlines())
    assert "None" not in r.stdout


def test_an_ignored_error_stays_in_json_marked_ignored(run_cli):
    r = run_cli(*GATE, "--ignore", "cd50", "--json", machine=H100_HEALTHY)  # a prefix, in any case
    assert r.code == 0 and r.json["exit_code"] == 0 and r.json["status"] == "healthy"
    found = {f["code"]: f for f in r.json["findings"]}
    for code in ("CD501", "CD502"):
        assert found[code]["ignored"] is True and found[code]["ignored_by"] == "--ignore"
        assert found[code]["severity"] == "error" and found[code]["fix"]  # the whole finding, not a stub
    assert all("ignored" not in f for c, f in found.items() if not c.startswith("CD50"))


def test_select_keeps_only_the_codes_it_names(run_cli):
    r = run_cli(*GATE, "--select", "CD1", "--json", machine=H100_HEALTHY)
    assert r.code == 0
    ignored = {f["code"]: f["ignored_by"] for f in r.json["findings"] if f.get("ignored")}
    assert ignored["CD501"] == ignored["CD502"] == "not in --select"
    assert all(c.startswith("CD1") for c in r.codes() if c not in ignored)
    text = run_cli(*GATE, "--select", "CD1", machine=H100_HEALTHY)
    assert text.code == 0 and any(line.endswith("(not in --select)") for line in _ignored(text.stdout))


def test_the_more_specific_code_wins_as_in_ruff(run_cli):
    # CD501 is selected by name though its prefix is ignored: it counts, and fails the check; CD502 does not
    r = run_cli(*GATE, "--select", "CD501", "--ignore", "CD5", machine=H100_HEALTHY)
    assert r.code == 1 and "PROBLEMS (1 error, 0 warnings): 0 of 1 visible GPU" in r.stdout
    assert [line.split()[1] for line in _ignored(r.stdout)] == ["CD502"]
    # and the other way round
    r = run_cli(*GATE, "--select", "CD5", "--ignore", "CD50", machine=H100_HEALTHY)
    assert r.code == 0 and [line.split()[1] for line in _ignored(r.stdout)] == ["CD501", "CD502"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--ignore", "CD501,CD5999"), "cudadoctor: --ignore: unknown finding code CD5999"),
        (("--select", "XX"), "cudadoctor: --select: unknown finding code XX"),
    ],
)
def test_an_unknown_code_is_a_usage_error_naming_it(run_cli, args, message):
    r = run_cli(*GATE, *args, machine=H100_HEALTHY)
    assert r.code == 2 and r.stdout == ""
    assert r.stderr.startswith(message) and len(r.stderr.strip().splitlines()) == 1


def test_the_config_file_ignores_too_and_the_line_says_where(run_cli, tmp_path: Path):
    config = tmp_path / "cudadoctor.toml"  # run_cli runs in tmp_path: the nearest config file
    config.write_text('min-free-memory = "100GiB"\nignore = ["CD501", "CD502"]\n')
    r = run_cli("check", "--skip", "torch", machine=H100_HEALTHY)
    assert r.code == 0, r.stdout + r.stderr
    assert f"(ignorein{config})" in "".join(r.stdout.split())  # however the path is wrapped
    r = run_cli("check", "--skip", "torch", "--json", machine=H100_HEALTHY)
    assert r.code == 0 and {f["ignored_by"] for f in r.json["findings"] if f.get("ignored")} == {f"ignore in {config}"}
    # an option given on the command line replaces the file's list
    r = run_cli("check", "--skip", "torch", "--ignore", "CD106", machine=H100_HEALTHY)
    assert r.code == 1


def test_an_unknown_code_in_the_config_names_the_file_and_key(run_cli, tmp_path: Path):
    config = tmp_path / "cudadoctor.toml"
    config.write_text('select = "CD1,CD77x"\n')
    r = run_cli("check", "--skip", "torch", machine=H100_HEALTHY)
    assert r.code == 2
    assert r.stderr.strip().startswith(f"cudadoctor: {config}: select: unknown finding code CD77X")


def test_the_ignored_line_is_in_chinese_with_lang(run_cli):
    r = run_cli(*GATE, "--ignore", "CD50", "--lang", "zh_CN", machine=H100_HEALTHY)
    assert r.code == 0
    line = next(line for line in r.stdout.splitlines() if "CD501" in line and "--ignore" in line)
    assert line.startswith("已忽略：CD501 ")
    r = run_cli(*GATE, "--select", "CD1", "--lang", "zh_CN", machine=H100_HEALTHY)
    assert any("不在 --select 中" in line for line in r.stdout.splitlines())


def test_the_pytest_gate_honours_the_configs_ignore(inner, pytester):  # noqa: F811
    pytester.makepyprojecttoml('[tool.cudadoctor]\nmin-free-memory = "100GiB"\nignore = ["CD50"]\n')
    result = inner(H100_HEALTHY, "--cudadoctor")
    out = result.stdout.str()
    assert result.ret == 0, out + result.stderr.str()
    assert "ignored CD501 " in out and "(ignore in " in out
