"""What reaches the terminal: a closed pipe or a full disk is one line, consoles without the marks get
ASCII, the report fits 80 columns, and nothing hostile (a command line, a replayed report) drives it."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from tests.conftest import H100_HEALTHY, ROOT, fake_machine_env
from tests.helpers import PY, doctor, without_gpu_settings


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
    r = doctor("check", "--skip", "torch", env=env, base=without_gpu_settings())
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
