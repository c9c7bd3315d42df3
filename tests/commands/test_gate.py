"""The CI health gate: requirements, config files, exit codes, JUnit and GitHub annotations."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from cudadoctor.cli import cli
from cudadoctor.commands.config import ConfigError, Requirements, find_config, from_mapping
from cudadoctor.report import EXIT_INCOMPLETE, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from cudadoctor.rules.requirements import evaluate
from tests.facts_fixtures import GiB, gpu, healthy, torch_cuda
from tests.helpers import codes, doctor

H100_FAKE = """\
driver 580.95.05
cuda 13000
device name="NVIDIA H100 80GB HBM3" cc=9.0 total=85899345920 used=81604378624
device name="NVIDIA H100 80GB HBM3" cc=9.0 total=85899345920 used=0
"""


def two_gpus():
    devs = [gpu(0, "NVIDIA A100-SXM4-80GB", "8.0", used_gib=76), gpu(1, "Tesla T4", "7.5", total_gib=16)]
    facts = healthy(devs)
    facts.torch = torch_cuda("2.13.0+cu126", "12.6", "5.0 6.0 7.0 7.5 8.0 8.6 9.0", devs)
    return facts


def test_requirements_met():
    assert codes(evaluate(two_gpus(), Requirements(require_gpus=2))) == ["CD500"]


def test_free_memory_and_capability_per_gpu():
    found = evaluate(two_gpus(), Requirements(require_gpus=2, min_free_memory=8 * GiB, min_compute_capability="8.0"))
    assert codes(found) == ["CD501", "CD502", "CD503"]
    assert found[0].title == "0 of 2 visible GPUs qualify; 2 required"
    assert found[1].title == "GPU 0 (NVIDIA A100-SXM4-80GB) has less than 8GiB free (4.0 GiB)"
    # no selection of these two GPUs can meet it: no `gpus --pick 2` (it would exit 4), but what would
    assert not any("--pick" in c for f in found for x in f.fix for c in x.commands)
    assert [x.when for x in found[0].fix] == [
        "Run the job on a node with 2 GPUs that have 8GiB free and compute capability 8.0 or higher: this one has 2"
    ]


def test_gate_suggestions_keep_decimal_units():
    """10GB is also 9765625KiB: the suggestion says what the user typed."""
    found = evaluate(two_gpus(), Requirements(min_free_memory=10 * 10**9))
    cd502 = next(f for f in found if f.code == "CD502")
    assert "less than 10GB free" in cd502.title
    # the T4 has it: selecting the one GPU that qualifies can succeed
    assert cd502.fix[-1].commands == ['eval "$(cudadoctor gpus --pick 1 --min-free 10GB)"']


def test_identical_gpus_that_fail_alike_are_one_finding():
    from tests.facts_fixtures import gpu, healthy

    facts = healthy([gpu(i, "Tesla T4", "7.5", total_gib=16) for i in range(4)])
    found = evaluate(facts, Requirements(min_compute_capability="8.0", min_free_memory=8 * 10**9))
    assert codes(found).count("CD503") == 1
    cd503 = next(f for f in found if f.code == "CD503")
    assert cd503.title == "GPUs 0, 1, 2, 3 (Tesla T4) have compute capability 7.5; 8.0 required"
    # without a count the limit holds for every visible GPU: the T4 fails the gate, and CD500 is not shown
    found = evaluate(two_gpus(), Requirements(min_compute_capability="8.0"))
    assert codes(found) == ["CD503"] and found[0].severity.value == "error"
    # with a count, one qualifying GPU is enough: met, and CD500 says which one qualifies
    found = evaluate(two_gpus(), Requirements(require_gpus=1, min_compute_capability="8.0"))
    assert codes(found) == ["CD500"]
    assert (
        found[0].title
        == "Every requirement is met: 1 of 2 visible GPUs qualify (GPU 0 (NVIDIA A100-SXM4-80GB)); 1 required"
    )


def test_hidden_gpus_do_not_count():
    facts = two_gpus()
    facts.system.env["CUDA_VISIBLE_DEVICES"] = "1"
    assert codes(evaluate(facts, Requirements(require_gpus=2))) == ["CD501"]


def test_torch_expectations():
    facts = two_gpus()
    found = evaluate(facts, Requirements(expect_torch_cuda="12.8", require_cudnn=True))
    assert codes(found) == ["CD504"]
    assert "built for CUDA 12.6" in found[0].title
    # the newest release the wheel table has for cu128, in the environment's installer (not a bare
    # `pip install torch`, which names no release)
    install = found[0].fix[0].commands[-1]
    assert install.endswith("install torch==2.11.0 --index-url https://download.pytorch.org/whl/cu128"), install
    facts.torch.cudnn_version = None
    assert "CD505" in codes(evaluate(facts, Requirements(require_cudnn=True)))


def test_bandwidth_requirement_without_a_measurement_fails():
    found = evaluate(two_gpus(), Requirements(min_h2d_gbps=20))
    assert codes(found) == ["CD506"] and "not measured" in found[0].title


def test_config_errors_name_file_and_key():
    with pytest.raises(ConfigError, match=r"^f.toml: unknown key 'min-free'"):
        from_mapping("f.toml", {"min-free": "8G"})
    with pytest.raises(ConfigError, match=r"^f.toml: require-gpus: 'two' is not a whole number"):
        from_mapping("f.toml", {"require-gpus": "two"})
    with pytest.raises(ConfigError, match=r"^f.toml: min-free-memory: 'lots' is not a size"):
        from_mapping("f.toml", {"min-free-memory": "lots"})
    with pytest.raises(ConfigError, match="fail-on"):
        from_mapping("f.toml", {"fail-on": "info"})
    req = from_mapping("f.toml", {"min-compute-capability": 8.0, "min-free-memory": "8GiB", "require-cudnn": True})
    assert (req.min_compute_capability, req.min_free_memory, req.require_cudnn) == ("8.0", 8 * GiB, True)


def test_config_discovery(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.cudadoctor]\nrequire-gpus = 2\n")
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    source, data = find_config(str(sub))
    assert source.endswith("pyproject.toml [tool.cudadoctor]") and data == {"require-gpus": 2}
    (tmp_path / "a" / "cudadoctor.toml").write_text('fail-on = "warning"\n')
    source, data = find_config(str(sub))
    assert source.endswith("cudadoctor.toml") and data == {"fail-on": "warning"}


def test_exit_code_0_when_requirements_met(run_cli):
    r = run_cli(
        "check", "--json", "--skip", "torch", "--require-gpus", "1", "--min-free-memory", "70GiB", machine=H100_FAKE
    )
    assert r.code == EXIT_OK, r.stdout
    assert r.json["requirements"]["require_gpus"] == 1


def test_exit_code_1_when_a_requirement_fails(run_cli):
    r = run_cli(
        "check", "--json", "--skip", "torch", "--require-gpus", "2", "--min-free-memory", "70GiB", machine=H100_FAKE
    )
    assert r.code == EXIT_PROBLEMS
    assert (
        r.codes()[-3:] == ["CD501", "CD502", "CD100"][:0] + [c for c in r.codes() if c.startswith("CD5")][-2:]
        or "CD501" in r.codes()
    )


def test_fail_on_warning(run_cli):
    warn = H100_FAKE + "missing nvmlSystemGetNVMLVersion\n"
    assert run_cli("check", "--skip", "torch", machine=warn).code == EXIT_OK
    r = run_cli("check", "--skip", "torch", "--fail-on", "warning", machine=warn)
    assert r.code == EXIT_PROBLEMS and "PROBLEMS" in r.stdout


def test_exit_code_2_for_bad_config_and_values(run_cli, tmp_path):
    bad = tmp_path / "cudadoctor.toml"
    bad.write_text('min-free-memory = "lots"\n')
    r = run_cli("check", "--skip", "torch", "--config", str(bad), machine=H100_FAKE)
    assert r.code == EXIT_USAGE
    assert (
        r.stderr.strip()
        == f"cudadoctor: {bad}: min-free-memory: 'lots' is not a size (examples: 8GiB, 8G, 8192MiB, 0.5TB)"
    )
    assert run_cli("check", "--skip", "torch", "--require-gpus", "zero", machine=H100_FAKE).code == EXIT_USAGE
    assert (
        run_cli("check", "--skip", "torch", "--min-compute-capability", "eight", machine=H100_FAKE).code == EXIT_USAGE
    )


def test_config_file_is_found_in_the_working_directory(run_cli, tmp_path):
    (tmp_path / "cudadoctor.toml").write_text("require-gpus = 3\n")
    r = run_cli("check", "--json", "--skip", "torch", machine=H100_FAKE)  # run_cli runs in tmp_path
    assert r.code == EXIT_PROBLEMS and "CD501" in r.codes()
    r = run_cli("check", "--json", "--skip", "torch", "--require-gpus", "1", machine=H100_FAKE)
    assert r.code == EXIT_OK  # options override the file


def test_exit_code_3_is_documented_for_incomplete(run_cli):
    r = run_cli("check", "--skip", "torch", "--timeout", "1", machine=H100_FAKE + "init_sleep 30\n")
    assert r.code == EXIT_INCOMPLETE


def test_junit_and_github_annotations(run_cli, tmp_path):
    junit = tmp_path / "out" / "cd.xml"
    junit.parent.mkdir()
    r = run_cli(
        "check",
        "--skip",
        "torch",
        "--require-gpus",
        "2",
        "--min-free-memory",
        "70GiB",
        "--junit",
        str(junit),
        machine=H100_FAKE,
        env={"GITHUB_ACTIONS": "true"},
    )
    assert r.code == EXIT_PROBLEMS
    suite = ET.parse(junit).getroot()
    names = {c.get("name") for c in suite.iter("testcase")}
    assert {"system", "driver", "torch"} <= names
    torch_case = next(c for c in suite.iter("testcase") if c.get("name") == "torch")
    assert torch_case.find("skipped") is not None
    failures = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert any(c.get("name").startswith("CD501") for c in failures)
    assert int(suite.get("failures")) == len(failures)
    annotations = [ln for ln in r.stdout.splitlines() if ln.startswith("::error")]
    assert any("title=cudadoctor CD501::" in ln for ln in annotations)


def test_unwritable_junit(run_cli, tmp_path):
    r = run_cli("check", "--skip", "torch", "--junit", str(tmp_path / "nope" / "x.xml"), machine=H100_FAKE)
    assert r.code == EXIT_USAGE and "cannot write --junit" in r.stderr


def test_fleet_expected_figures_from_config(tmp_path):
    from cudadoctor.commands.config import ConfigError, find_config, fleet_limits

    (tmp_path / "pyproject.toml").write_text(
        "[tool.cudadoctor]\nrequire-gpus = 8\n[tool.cudadoctor.fleet]\nmin-tflops = 600\nmin-busbw = 350.5\n"
    )
    found = find_config(str(tmp_path))
    assert fleet_limits(found) == {"min_tflops": 600.0, "min_busbw": 350.5}
    assert from_mapping(*found).require_gpus == 8  # the gate's keys are read as before
    (tmp_path / "pyproject.toml").write_text("[tool.cudadoctor.fleet]\nmin-tflops = 'fast'\n")
    with pytest.raises(ConfigError, match=r"fleet\.min-tflops"):
        fleet_limits(find_config(str(tmp_path)))


# four A100s: GPUs 1 and 3 have 10 and 20 GiB free, held by one process each
FOUR_A100 = """\
driver 580.95.05
cuda 13000
device name="NVIDIA A100-SXM4-80GB" cc=8.0 total=85899345920 used=1073741824
device name="NVIDIA A100-SXM4-80GB" cc=8.0 total=85899345920 used=75161927680
device name="NVIDIA A100-SXM4-80GB" cc=8.0 total=85899345920 used=1073741824
device name="NVIDIA A100-SXM4-80GB" cc=8.0 total=85899345920 used=64424509440
process gpu=1 pid=4242 mem=75161927680 kind=compute
process gpu=3 pid=4343 mem=64424509440 kind=compute
"""


def _picked(run_cli, command: str, **kw) -> dict:
    """Run the `cudadoctor gpus --pick …` inside a proposed `eval "$(…)"` as the user would: its exit code and
    the CUDA_VISIBLE_DEVICES it sets."""
    import shlex

    inner = command.removeprefix('eval "$(').removesuffix(')"')
    args = shlex.split(inner)
    assert args[:2] == ["cudadoctor", "gpus"]
    r = run_cli(*args[1:], **kw)
    words = shlex.split(r.stdout.strip()) if r.code == 0 else []
    return {"code": r.code, "env": dict(w.split("=", 1) for w in words if "=" in w)}


def test_a_requirement_that_fails_fails_the_gate(run_cli):
    """Issue 24: `! CD502 GPUs 1, 3 … have less than 50GiB free`, then `✓ CD500 Every requirement is met`,
    exit 0. Without --require-gpus the limit holds for every GPU a job sees."""
    r = run_cli("check", "--only", "driver", "--min-free-memory", "50GiB", machine=FOUR_A100)
    assert r.code == EXIT_PROBLEMS, r.stdout
    assert "✗ CD502 GPUs 1, 3 (NVIDIA A100-SXM4-80GB) have less than 50GiB free" in r.stdout
    assert "CD500" not in r.stdout and "Every requirement is met" not in r.stdout
    # who holds the memory, and a selection that can succeed: the two GPUs that have it
    assert "4242" in r.stdout and "4343" in r.stdout
    pick = 'eval "$(cudadoctor gpus --pick 2 --min-free 50GiB)"'
    assert pick in r.stdout
    picked = _picked(run_cli, pick, machine=FOUR_A100)
    assert picked["code"] == 0
    # after the fix, the same gate passes
    r = run_cli("check", "--only", "driver", "--min-free-memory", "50GiB", machine=FOUR_A100, env=picked["env"])
    assert r.code == EXIT_OK and "✓ CD500 Every requirement is met" in r.stdout, r.stdout
    # with a count, two GPUs that have it are enough: met, and CD500 says which ones; no CD502 beside it
    r = run_cli("check", "--only", "driver", "--require-gpus", "2", "--min-free-memory", "50GiB", machine=FOUR_A100)
    assert r.code == EXIT_OK
    assert (
        "Every requirement is met: 2 of 4 visible GPUs qualify (GPUs 0, 2 (NVIDIA A100-SXM4-80GB)); 2 required"
        in " ".join(r.stdout.split())
    )
    assert "CD502" not in r.stdout


def test_gate_fixes_can_succeed_on_the_machine_they_name(run_cli, tmp_path):
    """Issue 24: CD501 proposed `gpus --pick 3` where only 2 GPUs qualify (it exits 4), and `--pick 8` on a
    replay of a 4-GPU machine. A selection is proposed only where it can succeed; otherwise what would."""
    r = run_cli("check", "--only", "driver", "--require-gpus", "3", "--min-free-memory", "50GiB", machine=FOUR_A100)
    assert r.code == EXIT_PROBLEMS
    assert "✗ CD501 2 of 4 visible GPUs qualify; 3 required" in r.stdout
    assert "--pick" not in r.stdout
    assert _picked(run_cli, "cudadoctor gpus --pick 3 --min-free 50GiB", machine=FOUR_A100)["code"] == 4
    flat = " ".join(r.stdout.split())
    assert "Free memory on GPUs 1, 3 (NVIDIA A100-SXM4-80GB): stop the processes that hold it" in flat
    assert "Run the job on a node with 3 GPUs that have 50GiB free: this one has 4" in flat

    saved = tmp_path / "four.json"
    assert run_cli("check", "--only", "driver", "--output", str(saved), machine=FOUR_A100).code == EXIT_OK
    r = run_cli("check", "--from", str(saved), "--require-gpus", "8", "--min-free-memory", "1GiB")
    assert r.code == EXIT_PROBLEMS and "✗ CD501 4 of 4 visible GPUs qualify; 8 required" in r.stdout
    assert "--pick" not in r.stdout
    assert "Run the job on a node with 8 GPUs that have 1GiB free: this one has 4" in " ".join(r.stdout.split())

    # GPUs hidden by CUDA_VISIBLE_DEVICES: show them, then select; both commands succeed here
    hidden = {"CUDA_VISIBLE_DEVICES": "1,3"}
    r = run_cli("check", "--only", "driver", "--json", "--require-gpus", "2", "--min-free-memory", "50GiB",
                machine=FOUR_A100, env=hidden)  # fmt: skip
    cd501 = next(f for f in r.json["findings"] if f["code"] == "CD501")
    assert cd501["fix"][0]["commands"] == [
        "unset CUDA_VISIBLE_DEVICES",
        'eval "$(cudadoctor gpus --pick 2 --min-free 50GiB)"',
    ]
    assert _picked(run_cli, cd501["fix"][0]["commands"][1], machine=FOUR_A100)["code"] == 0


def test_gate_findings_follow_only_from_a_real_cause(run_cli):
    """Issue 24: with libcuda missing (CD121), CD501/CD502 said "Follows from CD121: fix that first"; the free
    memory NVML reads does not depend on libcuda. What rests on NVML follows from a broken driver."""
    args = ("check", "--require-gpus", "3", "--min-free-memory", "50GiB")
    r = run_cli(*args, "--json", machine=FOUR_A100, libcuda=False)
    found = {f["code"]: f for f in r.json["findings"]}
    assert found["CD121"]["severity"] == "error"
    assert found["CD501"]["cause"] is None and found["CD502"]["cause"] is None
    text = run_cli(*args, machine=FOUR_A100, libcuda=False).stdout
    requirements = text[text.index("\nRequirements") :]
    assert "Follows from" not in requirements and "✗ CD502" in requirements
    # the kernel module not loaded: NVML reports no GPU, and the gate's failure does follow from it
    r = run_cli(*args, "--skip", "torch", "--json", machine="init_error 9\n")
    found = {f["code"]: f for f in r.json["findings"]}
    assert found["CD102"]["severity"] == "error" and found["CD501"]["cause"] == "CD102"


def test_a_bare_number_is_not_a_size(run_cli, tmp_path):
    """Issue 24: `--min-free-memory 8` was taken as 8 bytes, a gate every GPU passes."""
    r = run_cli("check", "--only", "driver", "--min-free-memory", "8", machine=FOUR_A100)
    assert r.code == EXIT_USAGE and r.stdout == ""
    assert r.stderr == "cudadoctor: --min-free-memory: '8' has no unit: write 8GiB, 8GB or 8MiB (8B for bytes)\n"
    r = run_cli("gpus", "--pick", "1", "--min-free", "8", machine=FOUR_A100)
    assert r.code == EXIT_USAGE and "'8' has no unit: write 8GiB" in r.stderr and len(r.stderr.splitlines()) == 1
    (tmp_path / "cudadoctor.toml").write_text("min-free-memory = 8\n")
    r = run_cli("check", "--only", "driver", machine=FOUR_A100)
    assert r.code == EXIT_USAGE
    assert r.stderr.startswith(f"cudadoctor: {tmp_path / 'cudadoctor.toml'}: min-free-memory: 8 has no unit")
    (tmp_path / "cudadoctor.toml").write_text('min-free-memory = "8B"\n')  # bytes, said so
    assert run_cli("check", "--only", "driver", machine=FOUR_A100).code == EXIT_OK


def test_a_config_file_that_is_not_utf8_is_an_error(run_cli, tmp_path):
    """Issue 24: a cudadoctor.toml in another encoding was read silently, its bytes replaced."""
    path = tmp_path / "cudadoctor.toml"
    path.write_bytes('# réglages\nrequire-gpus = 1\nmin-free-memory = "8GiB"\n'.encode("latin-1"))
    r = run_cli("check", "--only", "driver", machine=FOUR_A100)
    assert r.code == EXIT_USAGE and r.stdout == ""
    assert r.stderr == f"cudadoctor: {path} is not UTF-8 (byte 0xe9 on line 1); a config file must be UTF-8\n"
    r = run_cli("check", "--only", "driver", "--config", str(path), machine=FOUR_A100)
    assert r.code == EXIT_USAGE and len(r.stderr.splitlines()) == 1 and str(path) in r.stderr


def test_a_hidden_gpus_fix_selects_only_after_showing_them(run_cli):
    """CD301's `gpus --pick 1` chose among the GPUs CUDA_VISIBLE_DEVICES=-1 shows: none, exit 4."""
    r = run_cli("check", "--skip", "torch", "--json", machine=FOUR_A100, env={"CUDA_VISIBLE_DEVICES": "-1"})
    cd301 = next(f for f in r.json["findings"] if f["code"] == "CD301")
    for proposed in cd301["fix"]:
        assert proposed["commands"][0] == "unset CUDA_VISIBLE_DEVICES"  # every fix starts by showing them
    select = cd301["fix"][-1]["commands"]
    assert select[-1] == 'eval "$(cudadoctor gpus --pick 1)"'
    assert _picked(run_cli, select[-1], machine=FOUR_A100)["code"] == 0  # after the unset: it succeeds
    hidden = _picked(run_cli, select[-1], machine=FOUR_A100, env={"CUDA_VISIBLE_DEVICES": "-1"})
    assert hidden["code"] == 4  # why it may not come alone


@pytest.mark.parametrize(
    "text,words",
    [
        ("tool = 5\n", "tool: expected a table"),
        ("[tool.cudadoctor]\nmin-free-memory = -5\n", "min-free-memory"),
        ("[tool.cudadoctor]\nmin-free-memory = '-8GiB'\n", "min-free-memory"),
        ("[tool.cudadoctor]\nmin-compute-capability = '².0'\n", "min-compute-capability"),
        ("[tool.cudadoctor]\nrequire-gpus = '²'\n", "require-gpus"),
    ],
)
def test_bad_config_is_one_line_naming_file_and_key(tmp_path, text, words):
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(text)
    r = doctor("check", "--skip", "torch", "--config", str(cfg))
    assert r.returncode == 2 and words in r.stderr and str(cfg) in r.stderr and "Traceback" not in r.stderr


def test_a_config_that_is_not_a_regular_file_is_refused_at_once(tmp_path):
    """--config /dev/zero grew to 24 GB; a FIFO hung. The nearest cudadoctor.toml that is not a file is
    passed over with a warning, not read."""
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo)):
        r = doctor("check", "--skip", "torch", "--config", path, timeout=20)
        assert r.returncode == 2 and "not a regular file" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / "cudadoctor.toml").symlink_to("/dev/zero")
    r = doctor("check", "--only", "system", cwd=tmp_path, timeout=20)
    assert r.returncode == 0 and "ignoring" in r.stderr and "not a regular file" in r.stderr


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_bandwidth_gate_of_nan_or_inf_is_refused(tmp_path, value):
    """nan compares false with every rate: the gate would never fail."""
    r = CliRunner().invoke(cli, ["check", "--skip", "torch", "--min-h2d-gbps", value])
    assert r.exit_code == 2 and "not a positive number of GB/s" in r.output
    cfg = tmp_path / "cudadoctor.toml"
    cfg.write_text(f"min-h2d-gbps = {value}\n")
    r = doctor("check", "--skip", "torch", "--config", str(cfg))
    assert r.returncode == 2 and "min-h2d-gbps" in r.stderr and str(cfg) in r.stderr


def test_an_unrelated_broken_pyproject_is_a_warning(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project\nname = broken")
    r = doctor("check", "--skip", "torch", cwd=tmp_path)
    assert r.returncode in (0, 1)  # not a usage error
    assert "warning: ignoring" in r.stderr and "pyproject.toml" in r.stderr


def test_a_gate_on_facts_without_the_environment_says_what_it_did_not_read() -> None:
    """A saved report without the environment (CUDA_VISIBLE_DEVICES unknown): the limits hold on the driver's
    GPUs, and CD500 says which GPUs a job sees was not read instead of claiming that it sees them."""
    facts = healthy([gpu(0, "NVIDIA A100-SXM4-80GB", "8.0"), gpu(1, "NVIDIA A100-SXM4-80GB", "8.0")])
    facts.system.env = None
    (met,) = evaluate(facts, Requirements(require_gpus=2))
    assert met.code == "CD500"
    assert "which GPUs a job sees is unknown (CUDA_VISIBLE_DEVICES was not read)" in met.title
    facts.system.env = {}
    (met,) = evaluate(facts, Requirements(require_gpus=2))
    assert met.code == "CD500" and "unknown" not in met.title


def test_a_gpu_list_saved_as_null_is_not_zero_gpus(run_cli, tmp_path) -> None:
    """`driver.devices: null` beside `device_count: 4` in a saved report is not "0 of 0 GPUs qualify"."""
    import json

    from cudadoctor.facts.codec import to_jsonable

    facts = healthy([gpu(i, "NVIDIA A100-SXM4-80GB", "8.0") for i in range(4)])
    data = {"tool": "cudadoctor", "schema_version": 2, "facts": to_jsonable(facts)}
    data["facts"]["driver"]["devices"] = None
    saved = tmp_path / "report.json"
    saved.write_text(json.dumps(data))
    r = run_cli("check", "--from", str(saved), "--require-gpus", "2", "--json")
    titles = [f["title"] for f in r.json["findings"] if f["code"].startswith("CD5")]
    assert titles == ["Needs 2 GPUs; not checked (the driver counts 4 GPUs, but what they are is unknown)"]
    assert "0 of 0" not in run_cli("check", "--from", str(saved), "--require-gpus", "2").stdout
