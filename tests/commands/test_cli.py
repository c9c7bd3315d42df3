"""The check/explain commands in process: exit codes, JSON contract, --output, --from, Markdown,
and a probe that crashes or hangs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from cudadoctor.cli import cli
from cudadoctor.probes import REGISTRY, Probe
from cudadoctor.probes import names as probe_names
from cudadoctor.report import EXIT_INCOMPLETE, EXIT_PROBLEMS, EXIT_USAGE, SCHEMA_VERSION
from cudadoctor.version import __version__
from tests.conftest import H100_HEALTHY, ROOT, real_driver_present
from tests.helpers import PY, doctor


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_version(runner):
    r = runner.invoke(cli, ["--version"])
    assert r.exit_code == 0 and __version__ in r.output


def test_python_m_entry_point():
    p = subprocess.run(
        [sys.executable, "-m", "cudadoctor", "--version"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert p.returncode == 0 and __version__ in p.stdout


@pytest.mark.parametrize(
    "args", [["check", "--bogus"], ["check", "--format", "xml"], ["nope"], ["check", "--timeout", "0"]]
)
def test_usage_errors_exit_2(runner, args):
    r = runner.invoke(cli, args)
    assert r.exit_code == EXIT_USAGE
    assert "Traceback" not in r.output


def test_unwritable_output_is_one_line(runner, tmp_path):
    r = runner.invoke(cli, ["check", "--output", str(tmp_path / "missing" / "r.json")])
    assert r.exit_code == EXIT_USAGE
    assert r.output.strip().count("\n") == 0
    assert "cannot write --output" in r.output


def test_json_contract(runner):
    r = runner.invoke(cli, ["check", "--json"])
    data = json.loads(r.output)
    assert data["schema_version"] == SCHEMA_VERSION == 2
    assert data["tool"] == "cudadoctor" and data["version"] == __version__
    assert set(data) >= {
        "schema_version",
        "tool",
        "version",
        "created",
        "command",
        "verdict",
        "status",
        "scope",
        "exit_code",
        "facts",
        "probes",
        "findings",
    }
    # one facts field per probe in the registry, filled by name
    assert set(probe_names()) <= set(data["facts"])
    assert data["exit_code"] == r.exit_code
    for f in data["findings"]:
        assert set(f) == {"code", "severity", "section", "title", "why", "fix", "docs", "tables", "cause"}
        assert f["severity"] in ("error", "warning", "info", "ok")
        for fx in f["fix"]:
            assert isinstance(fx["when"], str) and all(isinstance(c, str) for c in fx["commands"])


def test_output_file_and_terminal_report(runner, tmp_path):
    out = tmp_path / "report.json"
    r = runner.invoke(cli, ["check", "--skip", "torch", "--output", str(out)])
    assert "Explain a code" in r.output  # the terminal report still shows
    data = json.loads(out.read_text())
    assert data["exit_code"] == r.exit_code


def test_from_replays_the_rules_on_saved_facts(runner, tmp_path):
    out = tmp_path / "report.json"
    first = runner.invoke(cli, ["check", "--output", str(out)])
    again = runner.invoke(cli, ["check", "--from", str(out), "--json"])
    assert again.exit_code == first.exit_code
    saved = json.loads(out.read_text())
    assert [f["code"] for f in json.loads(again.output)["findings"]] == [f["code"] for f in saved["findings"]]


@pytest.mark.parametrize(
    "content,message",
    [
        ("not json", "not JSON"),
        ('{"hello": 1}', "not a cudadoctor JSON report"),
        (
            '{"tool": "cudadoctor", "schema_version": 1, "facts": {"driver": {"library_loaded": "yes"}}}',
            "$.facts.driver",
        ),
    ],
)
def test_from_rejects_foreign_files_in_one_line(runner, tmp_path, content, message):
    p = tmp_path / "bad.json"
    p.write_text(content)
    r = runner.invoke(cli, ["check", "--from", str(p)])
    assert r.exit_code == EXIT_USAGE
    assert message in r.output and "Traceback" not in r.output


def test_from_missing_file(runner, tmp_path):
    r = runner.invoke(cli, ["check", "--from", str(tmp_path / "nope.json")])
    assert r.exit_code == EXIT_USAGE and "--from: cannot read" in r.output and "Traceback" not in r.output


def test_a_report_saved_by_schema_1_still_replays(runner):
    """tests/fixtures/report_v1.json was written by cudadoctor 0.1 (schema 1) on a fake 2xA100 machine
    with a CPU torch and CUDA_VISIBLE_DEVICES=1,0: the same verdict comes back, marked as a replay."""
    path = ROOT / "tests" / "fixtures" / "report_v1.json"
    saved = json.loads(path.read_text())
    assert saved["schema_version"] == 1
    r = runner.invoke(cli, ["check", "--from", str(path), "--json"])
    data = json.loads(r.output)
    assert r.exit_code == saved["exit_code"] == EXIT_PROBLEMS
    codes = [f["code"] for f in data["findings"]]
    assert {"CD100", "CD202", "CD210", "CD300"} <= set(codes)
    assert data["source"]["path"] == str(path) and data["source"]["created"] == saved["created"]
    text = runner.invoke(cli, ["check", "--from", str(path)]).output
    assert f"Replay of {path}" in text and "host vm" in text


def test_markdown_masks_secrets_and_redacts_ids(runner, monkeypatch):
    import socket

    monkeypatch.setenv("CUDA_API_TOKEN", "s3cr3t-value")
    monkeypatch.setenv("PIP_INDEX_URL", "https://bob:hunter2@pypi.example.com/simple")
    r = runner.invoke(cli, ["check", "--skip", "torch", "--format", "markdown", "--redact"])
    assert "s3cr3t-value" not in r.output and "hunter2" not in r.output
    assert '"CUDA_API_TOKEN": "***"' in r.output
    assert "https://***@pypi.example.com/simple" in r.output
    assert "## cudadoctor" in r.output and "**Verdict:**" in r.output
    assert f'"hostname": "{socket.gethostname()}"' not in r.output
    assert '"hostname": "<host>"' in r.output


def _crash(ctx):
    raise RuntimeError("boom in probe")


def _hang(ctx):
    time.sleep(30)


@pytest.mark.parametrize("collect,code,status", [(_crash, "CD001", "crashed"), (_hang, "CD002", "timeout")])
def test_a_probe_that_crashes_or_hangs_becomes_a_finding(runner, monkeypatch, collect, code, status):
    replaced = Probe("toolkit", collect, timeout=0.5)
    injected = {"probes": [replaced if p.name == "toolkit" else p for p in REGISTRY]}
    start = time.monotonic()
    r = runner.invoke(cli, ["check", "--skip", "torch", "--json"], obj=injected)
    assert time.monotonic() - start < 15
    assert r.exit_code == EXIT_INCOMPLETE
    data = json.loads(r.output)
    assert code in [f["code"] for f in data["findings"]]
    assert {"name": "toolkit", "status": status}.items() <= next(
        o for o in data["probes"] if o["name"] == "toolkit"
    ).items()
    assert data["facts"]["system"] is not None  # the other probes still reported
    text = runner.invoke(cli, ["check", "--skip", "torch"], obj=injected)
    assert "Traceback" not in text.output and code in text.output
    if status == "crashed":
        verbose = runner.invoke(cli, ["check", "--skip", "torch", "-v"], obj=injected)
        assert "Traceback" in verbose.output and "boom in probe" in verbose.output


def test_explain(runner):
    r = runner.invoke(cli, ["explain", "cd103"])
    assert r.exit_code == 0 and "driver-library-mismatch" in r.output and "kernel module" in r.output
    assert runner.invoke(cli, ["explain", "CD999"]).exit_code == EXIT_USAGE


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    e = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "cudadoctor", *args], capture_output=True, text=True, env=e, timeout=60
    )


def test_explain_list_is_every_code_with_its_severity_and_summary_in_80_columns():
    from cudadoctor.render.layout import display_width
    from cudadoctor.rules import CATALOGUE

    r = _cli("explain", "--list")
    assert r.returncode == 0 and r.stderr == ""
    lines = r.stdout.splitlines()
    assert [ln.split()[0] for ln in lines] == sorted(CATALOGUE)  # every code, once, in order
    assert "CD103  error    Driver/library version mismatch" in lines
    assert "CD711  info     " + CATALOGUE["CD711"].summary in lines
    assert all(len(ln) <= 80 for ln in lines) and any(ln.endswith("…") for ln in lines)
    zh = _cli("--lang", "zh_CN", "explain", "--list")
    assert zh.returncode == 0 and "CD103  错误  " in zh.stdout
    assert all(display_width(ln) <= 80 for ln in zh.stdout.splitlines())
    both = _cli("explain", "--list", "CD101")
    assert both.returncode == EXIT_USAGE and both.stderr == "cudadoctor: give a code or --list, not both\n"
    none = _cli("explain")
    assert none.returncode == EXIT_USAGE and "cudadoctor explain --list" in none.stderr
    assert none.stderr.count("\n") == 1


def _complete(words: str, shell: str = "bash") -> list[str]:
    """What the shell offers at the end of `words`, as its completion script asks click for it."""
    cword = str(len(words.split()) - (0 if words.endswith(" ") else 1))
    env = {"_CUDADOCTOR_COMPLETE": f"{shell}_complete", "COMP_WORDS": words, "COMP_CWORD": cword}
    r = _cli(env=env)
    assert r.returncode == 0, r.stderr
    return [ln.split(",", 1)[1] for ln in r.stdout.splitlines() if ln.startswith("plain,")]


def test_completion_of_probe_names_and_finding_codes():
    assert _complete("cudadoctor check --only dri") == ["driver"]
    assert _complete("cudadoctor check --only driver,to") == ["driver,torch", "driver,toolkit"]
    # a name already in the list is not offered again
    offered = _complete("cudadoctor check --skip torch,")
    assert "torch,driver" in offered and "torch,torch" not in offered and len(offered) == len(probe_names()) - 1
    assert _complete("cudadoctor check --only ") == probe_names()
    codes = _complete("cudadoctor explain CD10")
    assert codes[:3] == ["CD100", "CD101", "CD102"] and all(c.startswith("CD10") for c in codes)
    assert _complete("cudadoctor explain cd70") == codes_starting("CD70")
    # zsh shows each code's summary beside it
    env = {"_CUDADOCTOR_COMPLETE": "zsh_complete", "COMP_WORDS": "cudadoctor explain CD103", "COMP_CWORD": "2"}
    assert _cli(env=env).stdout.splitlines()[:3] == ["plain", "CD103", "Driver/library version mismatch"]


def codes_starting(prefix: str) -> list[str]:
    from cudadoctor.rules import CATALOGUE

    return sorted(c for c in CATALOGUE if c.startswith(prefix))


def test_check_never_imports_torch():
    code = (
        "import sys; from cudadoctor.cli import cli\n"
        "try:\n    cli(['check', '--json'])\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write('TORCH=%s' % ('torch' in sys.modules))"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert "TORCH=False" in p.stderr


@pytest.mark.skipif(real_driver_present(), reason="this machine has an NVIDIA driver")
def test_real_no_driver_path_of_this_machine(runner):
    """These machines have no NVIDIA driver; some have a CUDA toolkit. The report must say exactly that."""
    r = runner.invoke(cli, ["check", "--json"])
    data = json.loads(r.output)
    assert r.exit_code == EXIT_PROBLEMS
    assert data["facts"]["driver"]["init_status"] == "LIBRARY_NOT_FOUND"
    codes = [f["code"] for f in data["findings"]]
    assert "CD108" in codes or "CD101" in codes
    assert data["facts"]["cuda_driver"]["library_found"] is False
    if data["facts"]["toolkit"]["nvcc_path"]:
        tk = next(f for f in data["findings"] if f["code"] == "CD130")
        assert "a toolkit is not a driver" in tk["title"]


def test_findings_catalogue_is_up_to_date():
    from tools.catalogue import render

    assert (ROOT / "docs" / "findings.md").read_text() == render(), (
        "docs/findings.md is stale: python -m tools.catalogue docs/findings.md"
    )


def test_readme_and_help_name_every_probe_from_the_registry(runner):
    """--only/--skip, their help and the README list the same probes: the registry's."""

    readme = (ROOT / "README.md").read_text()
    row = next(line for line in readme.splitlines() if "--only driver,torch" in line)
    listed = re.findall(r"`(\w+)`", row.split("Run some probes only")[1])
    assert listed == probe_names()
    help_text = runner.invoke(cli, ["check", "--help"]).output
    assert all(name in " ".join(help_text.split()) for name in probe_names())


def _block(text: str, head: str) -> str:
    """One finding of a text report: its title line and everything indented under it, on one line."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if head in ln)
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("      ")), len(lines))
    return " ".join(" ".join(lines[start:end]).split())


def test_a_timeout_says_what_ran_out_and_the_likely_reason(run_cli, tmp_path):
    """Issue 24: `check --timeout 0.5` on a machine with no GPU blamed "the NVIDIA driver itself hangs" and
    offered `dmesg … Xid`, when torch's import outlasted the bound."""
    slow = tmp_path / "slowtorch" / "torch"
    slow.mkdir(parents=True)
    (slow / "__init__.py").write_text("import time\ntime.sleep(20)\n")  # an import that outlasts the bound, always
    no_driver = tmp_path / "no-driver"
    no_driver.mkdir()
    env = {"PYTHONPATH": f"{slow.parent}{os.pathsep}{ROOT}", "CUDADOCTOR_LIBRARY_DIRS": str(no_driver)}
    r = run_cli("check", "--timeout", "0.5", env=env)
    assert r.code == EXIT_INCOMPLETE
    cd002 = _block(r.stdout, "CD002 The torch probe")
    assert cd002.startswith("✗ CD002 The torch probe did not finish within 0.5 s It was importing torch")
    assert "The bound, 0.5 s, is less than the 60 s this check gets by default: it was most likely still" in cd002
    assert cd002.endswith(
        "Fix — Run it without --timeout, so that each check has its own bound (60 s for this one): cudadoctor check"
    )
    assert "Xid" not in cd002 and "dmesg" not in cd002 and "driver itself hangs" not in cd002
    # another interpreter's torch (--python): the fix re-runs that one, not the doctor's own
    other = tmp_path / "venv" / "bin" / "python"
    other.parent.mkdir(parents=True)
    other.symlink_to(sys.executable)
    r = run_cli("check", "--timeout", "0.5", "--python", str(other), env=env)
    cd002 = _block(r.stdout, "CD002 The torch probe")
    assert cd002.endswith(f"cudadoctor check --python {other}"), cd002
    # a longer bound: the torch child is stopped at its share of it, and says so without blaming a driver
    r = run_cli("check", "--timeout", "3", env=env)
    assert r.code == EXIT_INCOMPLETE
    cd212 = _block(r.stdout, "CD212 The torch child process did not finish in time")
    assert "No NVIDIA driver or GPU is in use here, so no driver hung: importing torch outlasted" in cd212
    assert "Xid" not in cd212 and "dmesg" not in cd212
    # every probe's own bound is in --help
    help_text = " ".join(run_cli("check", "--help").stdout.split())
    assert all(f"{p.name} {p.timeout:g} s" in help_text for p in REGISTRY), help_text


def test_a_hang_is_blamed_on_what_the_facts_allow():
    """A torch check that used its full bound: a hung driver only where a driver and a GPU are in use."""
    from cudadoctor.model import ProbeOutcome
    from cudadoctor.rules.probe_failures import evaluate
    from tests.facts_fixtures import gpu, healthy

    hung = ProbeOutcome("torch", "timeout", 60.0, "did not finish within 60 s", bound=60.0, default_bound=60.0)
    facts = healthy([gpu(0, "NVIDIA H100 80GB HBM3", "9.0")])
    facts.torch = None
    (with_gpu,) = evaluate([hung], facts)
    assert "Xid" in with_gpu.why and "dmesg" in with_gpu.fix[0].commands[0]
    facts.driver.init_status, facts.driver.devices = "driver_not_loaded", []
    (without,) = evaluate([hung], facts)
    assert "Importing torch hangs or is very slow" in without.why and "Xid" not in without.why
    assert without.fix[0].commands == ["cudadoctor check --only torch --timeout 240"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--format", "markdown", "--json"], "cudadoctor: --json and --format markdown ask for two formats: give one"),
        (
            ["--only", "driver", "--full"],
            "cudadoctor: --only picks the checks, --full adds the measurements to all: give one "
            "(--only driver,bandwidth,smoke,compile)",
        ),
        (
            ["--only", "driver", "--transfer-size", "1GiB"],
            "cudadoctor: --transfer-size sizes the bandwidth measurement, which does not run: "
            "add --full or --only bandwidth",
        ),
        (
            ["--from", "r.json", "--timeout", "5", "--only", "driver"],
            "cudadoctor: --from replays a saved report, which runs no probe: it does not go with --only, --timeout",
        ),
    ],
)
def test_conflicting_options_are_a_usage_error(run_cli, args, message):
    """Issue 24: `check --format markdown --json` silently printed JSON."""
    r = run_cli("check", *args, machine=H100_HEALTHY)
    assert (r.code, r.stdout, r.stderr) == (EXIT_USAGE, "", message + "\n")
    # the same format twice is no conflict
    assert run_cli("check", "--only", "driver", "--format", "json", "--json", machine=H100_HEALTHY).json


# --- unknown is not false: `null` in a saved report, None in a fact ---------------------------------


def _null_collections(tp: type, data: dict, keep_items: bool) -> None:
    """Every list and dict field under `data` set to null (docs/json.md: null means unknown); with
    `keep_items`, lists of objects stay and the fields inside each item are nulled instead."""
    import dataclasses
    import types
    import typing

    for f in dataclasses.fields(tp):  # type: ignore[arg-type]
        if not isinstance(data, dict) or data.get(f.name) is None:
            continue
        hint = typing.get_type_hints(tp)[f.name]
        if typing.get_origin(hint) in (typing.Union, types.UnionType):
            hint = next(a for a in typing.get_args(hint) if a is not type(None))
        origin = typing.get_origin(hint)
        if origin is list and keep_items and dataclasses.is_dataclass(item := typing.get_args(hint)[0]):
            for value in data[f.name]:
                _null_collections(item, value, keep_items)
        elif origin in (list, dict):
            data[f.name] = None
        elif dataclasses.is_dataclass(hint):
            _null_collections(hint, data[f.name], keep_items)


@pytest.mark.parametrize("keep_items", [False, True], ids=["outer", "inner"])
def test_from_reads_null_for_every_list_and_mapping(runner, tmp_path, keep_items):
    """`facts.driver.devices: null` (and every other list or mapping) is unknown, not a format error."""
    from cudadoctor.facts import Facts

    saved = json.loads((ROOT / "tests" / "fixtures" / "real_gpu_report.json").read_text())
    _null_collections(Facts, saved["facts"], keep_items)
    assert saved["facts"]["driver"]["devices"] is None or keep_items
    path = tmp_path / "nulls.json"
    path.write_text(json.dumps(saved))
    for fmt in ("text", "markdown"):
        r = runner.invoke(cli, ["check", "--from", str(path), "--format", fmt])
        assert r.exit_code != EXIT_USAGE and "expected a list" not in r.output, r.output
        assert "Replay of" in r.output if fmt == "text" else "## cudadoctor" in r.output
        assert not _shows_none(r.output), _shows_none(r.output)


def _shows_none(out: str) -> list[str]:
    """Lines a user reads that show None/null: not the JSON facts a Markdown report folds away (JSON may
    hold null), not a redirection to /dev/null, not the Python value a page names."""

    out = re.sub(r"```json\n.*?\n```", "", out, flags=re.DOTALL)
    out = out.replace("/dev/null", "").replace("torch.version.cuda is None", "")
    return [line for line in out.splitlines() if re.search(r"\b(?:None|null)\b", line)]


def test_no_example_machine_shows_none(runner, tmp_path):
    """Every example machine (rules/examples), replayed from its saved report as text and Markdown."""
    from cudadoctor.render.redact import report_data
    from cudadoctor.report import build
    from cudadoctor.rules import evaluate
    from cudadoctor.rules.examples import machines

    path = tmp_path / "machine.json"
    for i, facts in enumerate(machines()):
        path.write_text(json.dumps(report_data(build("check", facts, [], evaluate(facts, [])), False)))
        for fmt in ("text", "markdown"):
            r = runner.invoke(cli, ["check", "--from", str(path), "--format", fmt])
            assert r.exit_code != EXIT_USAGE, (i, r.output)
            assert not _shows_none(r.output), (i, fmt, _shows_none(r.output))


def test_from_never_turns_a_null_list_into_a_finding(runner, tmp_path):
    """An empty list would state a fact: null GPUs on the bus are not "no NVIDIA GPU" (CD108), and a
    null process list on a GPU whose memory is in use is not "memory held by hidden processes" (CD147)."""
    saved = json.loads((ROOT / "tests" / "fixtures" / "real_gpu_report.json").read_text())
    saved["facts"]["pci"]["nvidia_gpus"] = []
    saved["facts"]["driver"] = {"binding": "nvidia-ml-py", "library_loaded": False, "init_status": "LIBRARY_NOT_FOUND"}
    saved["facts"]["platform"] = saved["facts"]["system"]["in_container"] = None  # a host, not a container
    path = tmp_path / "report.json"
    path.write_text(json.dumps(saved))

    def codes() -> set[str]:
        data = json.loads(runner.invoke(cli, ["check", "--from", str(path), "--json"]).output)
        return {f["code"] for f in data["findings"]}

    assert "CD108" in codes()  # an empty bus, read: no GPU
    saved["facts"]["pci"]["nvidia_gpus"] = None
    path.write_text(json.dumps(saved))
    assert "CD108" not in codes()  # a bus whose GPUs are unknown
    saved = json.loads((ROOT / "tests" / "fixtures" / "real_gpu_report.json").read_text())
    gpu = saved["facts"]["driver"]["devices"][0]
    gpu["memory_used"], gpu["processes"], gpu["unsupported"] = 20 << 30, [], {}
    path.write_text(json.dumps(saved))
    assert "CD147" in codes()  # 20 GiB in use and no process: a hidden one
    gpu["processes"] = None
    path.write_text(json.dumps(saved))
    assert "CD147" not in codes()


@pytest.mark.parametrize(
    "make,message",
    [
        (lambda p: p.write_text("[" * 1000 + "]" * 1000), "nested too deeply"),
        (
            lambda p: p.write_text('{"tool":"cudadoctor","schema_version":2,"facts":' + "[" * 900 + "]" * 900 + "}"),
            "deeply",
        ),
        (lambda p: os.mkfifo(p), "not a regular file"),
        (lambda p: p.write_bytes(b"\0\1\2binary"), "binary"),
        (lambda p: p.write_text('{"tool":"cudadoctor","schema_version":99,"facts":{}}'), "newer than"),
    ],
)
def test_from_hostile_files_is_one_line_within_a_bound(tmp_path, make, message):
    path = tmp_path / "report.json"
    make(path)
    start = time.monotonic()
    r = doctor("check", "--from", str(path), timeout=20)
    assert time.monotonic() - start < 10
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("text", ["[" * 100 + "]" * 100, '{"tool":"cudadoctor","facts":' + "[" * 100 + "]" * 100 + "}"])
def test_nesting_beyond_the_bound_is_refused_on_every_python(text):
    """100 levels parse on every Python (no RecursionError), so the bound is the reader's own."""
    from cudadoctor.facts.codec import FormatError, load_report

    with pytest.raises(FormatError, match="nested too deeply"):
        load_report(text)


def test_from_dev_zero_is_refused_at_once():
    r = doctor("check", "--from", "/dev/zero", timeout=20)
    assert r.returncode == 2 and "not a regular file" in r.stderr


@pytest.mark.parametrize("args", [["check", "--timeout", "1e10"], ["gpus", "--watch", "1e10"]])
def test_a_time_bound_beyond_the_platform_is_a_usage_error(args):
    """A deadline 1e10 s away overflowed time_t: an internal error, exit 3."""
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2 and "more than 1e+06 seconds" in r.output


@pytest.mark.parametrize("args", [["--output", ""], ["--junit", ""], ["--python", ""], ["--config", ""]])
def test_empty_paths_are_usage_errors(args):
    r = CliRunner().invoke(cli, ["check", "--skip", "torch", *args])
    assert r.exit_code == 2 and "empty path" in r.output


def test_explain_prints_the_fixes_too():
    r = CliRunner().invoke(cli, ["explain", "cd103"])
    assert r.exit_code == 0 and "Fix —" in r.output and "sudo reboot" in r.output


def test_version_help_and_completion():
    runner = CliRunner()
    assert runner.invoke(cli, ["-V"]).output.startswith("cudadoctor, version")
    bare = runner.invoke(cli, [])
    assert bare.exit_code == 0 and "Commands" in bare.output and "gpus" in bare.output
    for shell in ("bash", "zsh", "fish"):
        r = runner.invoke(cli, ["completion", shell])
        assert r.exit_code == 0 and "_CUDADOCTOR_COMPLETE" in r.output


def test_completion_completes_commands_and_options():
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "_CUDADOCTOR_COMPLETE": "bash_complete",
        "COMP_WORDS": "cudadoctor gp",
        "COMP_CWORD": "1",
    }
    p = subprocess.run([PY, "-m", "cudadoctor"], capture_output=True, text=True, env=env, timeout=30)
    assert "gpus" in p.stdout
    env.update(COMP_WORDS="cudadoctor gpus --so", COMP_CWORD="2")
    p = subprocess.run([PY, "-m", "cudadoctor"], capture_output=True, text=True, env=env, timeout=30)
    assert "--sort-by" in p.stdout


def test_a_replay_is_visibly_a_replay(tmp_path):
    saved = tmp_path / "r.json"
    doctor("check", "--skip", "torch", "--output", str(saved))
    r = doctor("check", "--from", str(saved))
    assert r.stdout.splitlines()[1].startswith("Replay of")


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_time_bounds_must_be_finite(value):
    for args in (["gpus", "--timeout", value], ["gpus", "--watch", value], ["check", "--timeout", value]):
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 2 and "finite" in r.output


def test_a_hung_nvml_is_not_no_driver_so_a_torch_hang_may_be_the_drivers():
    """Second read: NVML that hung (or was refused) is not "no driver": the hang advice and dmesg stay."""
    from cudadoctor.model import ProbeOutcome
    from cudadoctor.rules.probe_failures import evaluate
    from tests.facts_fixtures import gpu, healthy

    hung = ProbeOutcome("torch", "timeout", 60.0, "did not finish within 60 s", bound=60.0, default_bound=60.0)
    facts = healthy([gpu(0, "NVIDIA H100 80GB HBM3", "9.0")])
    facts.torch = None
    facts.driver.init_status, facts.driver.devices = "HUNG", []
    (finding,) = evaluate([hung], facts)
    assert "Xid" in finding.why and "dmesg" in finding.fix[0].commands[0]
