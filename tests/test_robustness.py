"""Never falls over, fits the terminal, leaks nothing (issue 11): each defect found by trying the tool
hard, as a new user and as an attacker would, with its regression test."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudadoctor.cli import cli
from cudadoctor.facts import NvmlDevice
from cudadoctor.knowledge.secrets import mask_secrets, mask_value
from cudadoctor.knowledge.visibility import parse
from cudadoctor.render.gpus_table import unique_prefixes
from cudadoctor.render.redact import make_scrub
from tests.conftest import H100_HEALTHY, ROOT, fake_machine_env

PY = sys.executable


def fake_python(tmp_path: Path, body: str) -> str:
    """An "interpreter" that passes the doctor's Python 3 check, then does `body` as the torch child."""
    path = tmp_path / "python"
    path.write_text(f'#!/bin/sh\nif [ "$1" = "-c" ]; then echo 3; exit 0; fi\n{body}\n')
    path.chmod(0o755)
    return str(path)


def _without_gpu_settings() -> dict[str, str]:
    """This process's environment less what would point a fake machine's run at another set of GPUs."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_VISIBLE", "FAKE_NVML"))}


def doctor(
    *args: str, env: dict | None = None, timeout: float = 60, cwd: Path | None = None, base: dict | None = None
) -> subprocess.CompletedProcess:
    e = {**(os.environ if base is None else base), "PYTHONPATH": str(ROOT), **(env or {})}
    encoding = e.get("PYTHONIOENCODING", "utf-8")
    return subprocess.run(
        [PY, "-m", "cudadoctor", *args],
        capture_output=True,
        encoding=encoding,
        errors="replace",
        env=e,
        timeout=timeout,
        cwd=cwd,
    )


# -- children: bounded, and their failures named ----------------------------------------------------


def test_a_flooding_interpreter_is_stopped_and_memory_stays_bounded(tmp_path):
    python = fake_python(tmp_path, "exec yes CUDADOCTOR_FLOOD_LINE_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX")
    out = tmp_path / "out.json"
    # The doctor is started by a small wrapper: a process forked straight from this test process would
    # count this process's own memory (hundreds of MB once torch was imported) in its peak.
    wrapper = (
        "import os, subprocess, sys\n"
        "with open(sys.argv[1], 'w') as fh:\n"
        "    p = subprocess.Popen(sys.argv[2:], stdout=fh, stderr=subprocess.DEVNULL)\n"
        "    _, status, usage = os.wait4(p.pid, 0)\n"
        "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)\n"
    )
    argv = [PY, "-c", wrapper, str(out), PY, "-m", "cudadoctor", "check", "--only", "torch", "--python", python]
    done = subprocess.run(
        [*argv, "--json"], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    code, peak_kib = (int(x) for x in done.stdout.split())
    assert code == 3  # the torch check failed: incomplete, never "not installed"
    data = json.loads(out.read_text())
    codes = [f["code"] for f in data["findings"]]
    assert "CD201" not in codes and "CD212" in codes
    assert "printed more than" in json.dumps(data["findings"])
    assert peak_kib < 300 * 1024  # KiB: a few hundred MB at most, whatever the child prints


@pytest.mark.parametrize(
    "body,words",
    [
        ("kill -SEGV $$", "SIGSEGV"),
        ("echo 'CUDADOCTOR_TORCH_FACTS {not json at all'", "printed no facts"),
        ("echo garbage; exit 0", "printed no facts"),
    ],
)
def test_a_crashing_or_garbled_torch_child_is_a_failed_check_not_a_missing_torch(tmp_path, body, words):
    r = doctor("check", "--only", "torch", "--python", fake_python(tmp_path, body), "--json")
    assert r.returncode == 3, r.stderr
    data = json.loads(r.stdout)
    codes = [f["code"] for f in data["findings"]]
    assert "CD201" not in codes and "CD212" in codes, codes
    assert words in json.dumps(data)


def test_a_hung_torch_child_is_exit_3_within_the_timeout(tmp_path):
    start = time.monotonic()
    r = doctor("check", "--only", "torch", "--python", fake_python(tmp_path, "exec sleep 300"), "--timeout", "2")
    assert time.monotonic() - start < 15
    assert r.returncode == 3 and "Traceback" not in r.stderr + r.stdout
    assert "INCOMPLETE" in r.stdout


def test_the_interpreter_check_obeys_timeout(tmp_path):
    path = tmp_path / "python"
    path.write_text("#!/bin/sh\nexec sleep 300\n")
    path.chmod(0o755)
    start = time.monotonic()
    r = doctor("check", "--only", "torch", "--python", str(path), "--timeout", "1")
    assert time.monotonic() - start < 10  # was 15 s regardless
    assert r.returncode == 3 and "did not answer within 1 s" in r.stderr  # a hung child: incomplete


# -- signals ----------------------------------------------------------------------------------------


def _leftovers(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if marker in ln and "ps -eo" not in ln]


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)])
def test_signals_end_the_doctor_and_every_child_it_started(tmp_path, sig, code):
    marker = f"299.{sig.value}{os.getpid() % 1000}"
    python = fake_python(tmp_path, f"sleep {marker} & exec sleep {marker}")  # a child and a grandchild
    p = subprocess.Popen(
        [PY, "-m", "cudadoctor", "check", "--only", "torch", "--python", python],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    deadline = time.monotonic() + 20
    while not _leftovers(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _leftovers(marker), "the torch child never started"
    p.send_signal(sig)
    _, err = p.communicate(timeout=20)
    assert p.returncode == code
    assert "Traceback" not in err
    deadline = time.monotonic() + 5
    while _leftovers(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _leftovers(marker) == []


@pytest.mark.parametrize("delay", [0.35, 0.5, 0.7, 1.0])
def test_ctrl_c_during_start_up_is_130_without_a_traceback(delay, fake_libs, tmp_path):
    """Ctrl-C while the doctor imports and starts its probes. (A signal inside the interpreter's own
    start-up, before any of cudadoctor runs, is Python's to report: not ours to catch.) cuInit hangs on
    this fake machine, so however fast the machine the check is still running when the signal comes."""
    machine = tmp_path / "m.txt"
    machine.write_text(H100_HEALTHY + "cuda_init_sleep 30\n")
    p = subprocess.Popen(
        [PY, "-m", "cudadoctor", "check", "--skip", "torch"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**_without_gpu_settings(), "PYTHONPATH": str(ROOT), **fake_machine_env(machine, fake_libs)},
    )
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=20)
    if "init_import_site" in err:
        pytest.skip("the signal came during the interpreter's own start-up")
    assert p.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


# -- output errors and encodings ---------------------------------------------------------------------


def test_a_closed_pipe_ends_quietly(fake_libs, tmp_path):
    machine = tmp_path / "m.txt"
    machine.write_text(H100_HEALTHY)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        **fake_machine_env(machine, [fake_libs[0]]),
    }
    p = subprocess.run(
        f"{PY} -m cudadoctor gpus --watch 0.2 | head -3",
        shell=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert len(p.stdout.splitlines()) == 3
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["check", "--skip", "torch"], ["check", "--skip", "torch", "--json"]])
def test_a_full_disk_is_one_line(args):
    with open("/dev/full", "w") as full:
        p = subprocess.run(
            [PY, "-m", "cudadoctor", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=60,
        )
    assert p.returncode == 3
    assert "Traceback" not in p.stderr and "cannot write output" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("encoding", ["ascii", "gbk", "latin-1"])
def test_consoles_without_the_marks_get_ascii(encoding, fake_libs, tmp_path):
    machine = tmp_path / "m.txt"
    machine.write_text(H100_HEALTHY + "cuda_init 100\n")  # CD122, an error: a failing mark on any machine
    env = {"PYTHONIOENCODING": encoding, **fake_machine_env(machine, fake_libs)}
    r = doctor("check", "--skip", "torch", env=env, base=_without_gpu_settings())
    assert "Traceback" not in r.stderr
    assert r.returncode == 1
    if encoding == "ascii":
        assert "✗" not in r.stdout and "x CD122" in r.stdout  # the fallback mark
    if encoding != "gbk":  # GBK has the dash; ascii and latin-1 get "-", not "?"
        assert r.stdout.startswith("cudadoctor ") and " - " in r.stdout.splitlines()[0]
        assert "Fix - " in r.stdout and "Fix ? " not in r.stdout


def test_text_report_fits_80_columns_and_wraps_with_a_hanging_indent():
    r = doctor("check", "--skip", "torch")
    for line in r.stdout.splitlines():
        if line.startswith("          ") and ("torch" in line or "device" in line):
            continue  # fix commands are never wrapped: they must paste as they are
        assert len(line) <= 80, line


# -- hostile input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["²", "①", "٣", "1" * 100_000, "0,²", "GPU-²"])
def test_cuda_visible_devices_takes_ascii_digits_only(raw):
    devices = [NvmlDevice(index=i, name="A100", uuid=f"GPU-{i}aaa", compute_capability="8.0") for i in range(2)]
    vis = parse(raw, devices)
    first = raw.split(",")[0]
    assert vis.invalid_entry is not None
    if first != "0":
        assert vis.hides_all  # an invalid first entry hides every GPU, as in CUDA
    r = doctor("check", "--skip", "torch", "--json", env={"CUDA_VISIBLE_DEVICES": raw[:20000]})
    assert "Traceback" not in r.stderr and r.returncode in (0, 1)


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


@pytest.mark.parametrize("args", [["check", "--timeout", "1e10"], ["gpus", "--watch", "1e10"]])
def test_a_time_bound_beyond_the_platform_is_a_usage_error(args):
    """A deadline 1e10 s away overflowed time_t: an internal error, exit 3."""
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2 and "more than 1e+06 seconds" in r.output


def test_an_unrelated_broken_pyproject_is_a_warning(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project\nname = broken")
    r = doctor("check", "--skip", "torch", cwd=tmp_path)
    assert r.returncode in (0, 1)  # not a usage error
    assert "warning: ignoring" in r.stderr and "pyproject.toml" in r.stderr


@pytest.mark.parametrize("args", [["--output", ""], ["--junit", ""], ["--python", ""], ["--config", ""]])
def test_empty_paths_are_usage_errors(args):
    r = CliRunner().invoke(cli, ["check", "--skip", "torch", *args])
    assert r.exit_code == 2 and "empty path" in r.output


# -- leaks nothing --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command,secret",
    [
        ("python train.py --token abc123XYZ", "abc123XYZ"),
        ("python train.py --api-key=abc123XYZ", "abc123XYZ"),
        ("python x.py hf_abcdefghijklmnopqrstuv", "hf_abcdefghijklmnopqrstuv"),
        ("python x.py sk-proj-abcdefghijklmnop", "sk-proj-abcdefghijklmnop"),
        ("aws AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP"),
        ("git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123@github.com/x/y", "ghp_abcdefghijklmnopqrstuvwxyz0123"),
        ("pip install --index-url https://user:pa55w0rd@host/simple x", "pa55w0rd"),
        ("curl https://host/x?access_token=abc123XYZ&y=1", "abc123XYZ"),
    ],
)
def test_secret_looking_arguments_are_masked(command, secret):
    masked = mask_secrets(command)
    assert secret not in masked and "***" in masked
    assert masked.split()[0] == command.split()[0]  # the rest is kept


def test_query_string_credentials_in_the_environment_are_masked():
    assert (
        mask_value("PIP_EXTRA_INDEX_URL", "https://host/simple?access_token=SECRET")
        == "https://host/simple?access_token=***"
    )
    assert mask_value("HF_TOKEN", "hf_x") == "***"


def test_gpus_masks_process_command_lines(fake_libs, tmp_path):
    sleeper = subprocess.Popen(
        [PY, "-c", "import time; time.sleep(60)", "--token", "TOPSECRET123", "hf_abcdefghijklmnop"]
    )
    try:
        machine = tmp_path / "m.txt"
        machine.write_text(H100_HEALTHY + f"process gpu=0 pid={sleeper.pid} mem=1073741824\n")
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            **fake_machine_env(machine, [fake_libs[0]]),
        }
        for args in (["gpus"], ["gpus", "--json"], ["gpus", "--wide"]):
            p = subprocess.run([PY, "-m", "cudadoctor", *args], capture_output=True, text=True, env=env, timeout=30)
            assert p.returncode == 0, p.stderr
            assert "TOPSECRET123" not in p.stdout and "hf_abcdefghijklmnop" not in p.stdout
            if args != ["gpus"]:  # (the 80-column table cuts the command line before it)
                assert "--token ***" in p.stdout
    finally:
        sleeper.kill()


def test_redaction_keeps_fix_commands_and_takes_short_hosts_and_bare_uuids():
    scrub = make_scrub("gpu01.example.com", "torch")
    assert scrub("pip install torch==2.13.0", True) == "pip install torch==2.13.0"  # a user named torch
    assert (
        scrub("/home/torch/venv/bin/python -m pip install torch", True)
        == "/home/<user>/venv/bin/python -m pip install torch"
    )
    assert scrub("host gpu01 and gpu01.example.com", False) == "host <host> and <host>"
    assert scrub("uuid 3f1e9a2c-1111-2222-3333-444455556666", False) == "uuid <uuid>"
    assert scrub("GPU-3f1e9a2c", False) == "GPU-<redacted>"


def test_the_text_report_honours_redact():
    import socket

    host = socket.gethostname()
    r = doctor("check", "--skip", "torch", "--redact")
    assert r.returncode in (0, 1)
    if len(host) > 2:
        assert host not in r.stdout
    assert "<host>" in r.stdout.splitlines()[0]


# -- fits the terminal, speaks its conventions ----------------------------------------------------------


def test_unique_uuid_prefixes_tell_four_a100s_apart():
    uuids = [f"GPU-3f1e9a2c-{i}a00-4000-8000-00000000000{i}" for i in range(4)]
    shown = unique_prefixes(uuids)
    assert len(set(shown.values())) == 4
    assert all(len(v) < len(u) for u, v in shown.items())
    devices = [NvmlDevice(index=i, uuid=u) for i, u in enumerate(uuids)]
    for u, prefix in shown.items():  # CUDA_VISIBLE_DEVICES accepts the prefix as it is
        assert parse(prefix, devices).selected[0].device.uuid == u


def test_pick_chooses_within_cuda_visible_devices_and_by_capability(run_cli):
    machine = (
        "driver 580.95.05\ncuda 13000\n"
        'device name="Tesla T4" cc=7.5 used=0 total=16000000000\n'
        'device name="NVIDIA A100-SXM4-80GB" cc=8.0 used=60000000000\n'
        'device name="NVIDIA A100-SXM4-80GB" cc=8.0 used=0\n'
    )
    env = {"CUDA_VISIBLE_DEVICES": "0,1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    r = run_cli("gpus", "--pick", "1", machine=machine, env=env)
    assert r.code == 0 and r.stdout.strip().endswith("000000000001")  # GPU 2, the freest, is not visible
    r = run_cli("gpus", "--pick", "1", "--min-cc", "8.0", machine=machine, env=env)
    assert r.code == 0 and r.stdout.strip().endswith("000000000001")
    r = run_cli("gpus", "--pick", "2", "--min-cc", "8.0", machine=machine, env=env)
    assert r.code == 4 and "compute capability 7.5 below 8.0" in r.stderr and "hides 1" in r.stderr


def test_an_nvml_child_stuck_in_the_driver_does_not_hang_gpus(fake_libs, tmp_path):
    """SIGKILL lands only when a call in the kernel returns, and a hung GPU's may never: `gpus` then goes
    on without the child (here a kill that cannot land yet) and keeps the table."""
    machine = tmp_path / "machine.txt"
    machine.write_text(H100_HEALTHY + "hang_in nvmlShutdown\n")
    script = (
        "import sys\n"
        "from cudadoctor.backends import nvml_isolated\n"
        "stuck = []\n"
        "nvml_isolated._kill = stuck.append\n"
        "nvml_isolated.SHUTDOWN_GRACE, nvml_isolated.KILL_GRACE = 0.2, 0.5\n"
        "sys.argv = ['cudadoctor', 'gpus']\n"
        "from cudadoctor.cli import main\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        "    sys.stderr.write(f'STUCK {stuck}\\n')\n"
    )
    env = {**os.environ, **fake_machine_env(machine, list(fake_libs)), "COLUMNS": "80"}
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    stuck = [int(p) for p in re.findall(r"\d+", r.stderr.rsplit("STUCK", 1)[-1])]
    for pid in stuck:  # the test's own clean-up: the real child only sleeps in the fake library
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert time.monotonic() - start < 20 and stuck
    assert r.returncode == 0 and "H100" in r.stdout  # every GPU was read: the table stays
    assert "nvmlShutdown" in r.stderr and "could not be stopped (stuck in the driver)" in r.stderr


def test_a_gpu_name_that_is_not_utf8_keeps_the_table(fake_libs, tmp_path):
    """The binding decodes names strictly: one GPU's odd bytes threw away every GPU, blaming nvmlShutdown."""
    machine = tmp_path / "machine.txt"
    machine.write_bytes(
        b"driver 580.95.05\ncuda 13000\n"
        b'device name="NVIDIA \xff\xfe X" cc=9.0 total=85899345920 used=1073741824 uuid=GPU-1\n'
        b'device name="NVIDIA H100 80GB HBM3" cc=9.0 total=85899345920 used=1073741824 uuid=GPU-2\n'
    )
    env = {**os.environ, **fake_machine_env(machine, list(fake_libs)), "COLUMNS": "80"}
    r = subprocess.run([sys.executable, "-m", "cudadoctor", "gpus", "--json"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    names = [g["name"] for g in json.loads(r.stdout)["gpus"]]
    assert names == ["NVIDIA \ufffd\ufffd X", "NVIDIA H100 80GB HBM3"]


def test_a_count_query_nvml_does_not_support_is_named(run_cli):
    """NOT_SUPPORTED is the normal answer of optional queries, not of the GPU count."""
    r = run_cli("gpus", machine=H100_HEALTHY + "count_error 3\n")
    assert r.code == 3 and "nvmlDeviceGetCount: NOT_SUPPORTED" in r.stderr
    r = run_cli("check", "--skip", "torch", "--json", machine=H100_HEALTHY + "count_error 3\n")
    assert any("nvmlDeviceGetCount (NOT_SUPPORTED)" in f["title"] for f in r.json["findings"])
    assert r.json["status"] != "healthy"


def test_nvml_crash_and_hang_and_a_failing_count(run_cli):
    crash = H100_HEALTHY + "crash_in nvmlDeviceGetUUID\n"
    r = run_cli("gpus", machine=crash)
    assert r.code == 3 and "SIGSEGV" in r.stderr and "nvmlDeviceGetUUID" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    r = run_cli("check", "--skip", "torch", "--json", machine=crash)
    f = next(f for f in r.json["findings"] if f["code"] == "CD107")
    assert "nvmlDeviceGetUUID" in f["title"]
    start = time.monotonic()
    r = run_cli("gpus", machine=H100_HEALTHY + "hang_in nvmlShutdown\n")
    assert time.monotonic() - start < 10
    assert r.code == 0 and "H100" in r.stdout and "nvmlShutdown" in r.stderr  # the table survives
    r = run_cli("gpus", "--timeout", "2", machine=H100_HEALTHY + "hang_in nvmlDeviceGetMemoryInfo\n")
    assert r.code == 3 and "nvmlDeviceGetMemoryInfo" in r.stderr
    r = run_cli("gpus", machine=H100_HEALTHY + "count_error 999\n")
    assert r.code == 3 and "nvmlDeviceGetCount" in r.stderr  # not an empty table and exit 0
    r = run_cli("check", "--skip", "torch", "--json", machine=H100_HEALTHY + "count_error 999\n")
    assert any("nvmlDeviceGetCount" in f["title"] for f in r.json["findings"])


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


HOSTILE = ["line1\nFAKE ROW 0 H100", "\x1b]0;title\x07", "\u202eevil"]  # a fake row, the terminal's title, RLO


def test_a_hostile_command_line_cannot_drive_the_terminal(run_cli):
    """A GPU process's arguments are anyone's: shown as escapes, never as a new row or a terminal control."""
    sleeper = subprocess.Popen([PY, "-c", "import time; time.sleep(60)", *HOSTILE])
    try:
        time.sleep(0.3)  # its /proc/PID/cmdline is the new program's
        machine = H100_HEALTHY + f"process gpu=0 pid={sleeper.pid} mem=1048576\n"
        for args in (["gpus", "--wide"], ["gpus"]):
            r = run_cli(*args, machine=machine)
            assert r.code == 0, r.stderr
            assert "\x1b" not in r.stdout and "\u202e" not in r.stdout and "\x07" not in r.stdout
            assert not any(ln.startswith("FAKE ROW") for ln in r.stdout.splitlines())
        wide = run_cli("gpus", "--wide", machine=machine).stdout
        assert "line1\\nFAKE ROW 0 H100" in wide and "\\x1b]0;title\\x07" in wide and "\\u202eevil" in wide
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_replayed_report_cannot_drive_the_terminal_or_fake_a_line(tmp_path):
    saved = tmp_path / "r.json"
    doctor("check", "--skip", "torch", "--output", str(saved))
    data = json.loads(saved.read_text())
    data["facts"]["system"]["os_release"] = "\x1b]0;PWNED\x07\x1b[2J\nFAKE: HEALTHY"
    data["facts"]["system"]["hostname"] = "gpu-node-0123.cluster.internal.example.com"
    saved.write_text(json.dumps(data))
    r = doctor("check", "--from", str(saved))
    assert "\x1b" not in r.stdout and not any(ln.startswith("FAKE") for ln in r.stdout.splitlines())
    assert "\\x1b]0;PWNED" in r.stdout
    header = r.stdout.split("Replay of")[0].splitlines()
    assert len(header) == 2 and max(len(ln) for ln in header) <= 80  # the long host name wraps


def test_a_long_cuda_visible_devices_is_cut_in_the_gpus_header(run_cli):
    env = {"CUDA_VISIBLE_DEVICES": ",".join(["GPU-11111111-2222-3333-4444-555555555555"] * 3)}
    r = run_cli("gpus", machine=H100_HEALTHY, env=env)
    assert max(len(ln) for ln in r.stdout.splitlines()) <= 80 and "…" in r.stdout.splitlines()[0]
    wide = run_cli("gpus", "--wide", machine=H100_HEALTHY, env=env)
    assert env["CUDA_VISIBLE_DEVICES"] in wide.stdout.splitlines()[0]


def test_a_signal_kills_the_forked_nvml_child_too(fake_libs, tmp_path):
    machine = tmp_path / "m.txt"
    machine.write_text(H100_HEALTHY + "hang_in nvmlDeviceGetName\n")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        **fake_machine_env(machine, [fake_libs[0]]),
    }
    p = subprocess.Popen(
        [PY, "-m", "cudadoctor", "gpus", "--timeout", "60"], env=env, stderr=subprocess.PIPE, text=True
    )
    time.sleep(2.5)
    kids = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
    assert kids, "the NVML child was not running"
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=20)
    assert p.returncode == 130 and "Traceback" not in err
    time.sleep(0.5)
    for pid in kids:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_input_to_a_child_that_never_reads_it_is_inside_the_bound():
    from cudadoctor.backends.child import run_child

    start = time.monotonic()
    res = run_child(["sleep", "8"], timeout=1, stdin="x" * 300_000)
    assert time.monotonic() - start < 5 and res.timed_out


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_time_bounds_must_be_finite(value):
    for args in (["gpus", "--timeout", value], ["gpus", "--watch", value], ["check", "--timeout", value]):
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 2 and "finite" in r.output
