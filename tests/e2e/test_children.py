"""The children the doctor starts, run through the CLI: bounded, their failures named, and ended with the
doctor by any signal (issue 11: each defect found by trying the tool hard, with its regression test)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import H100_HEALTHY, ROOT, fake_machine_env
from tests.helpers import PY, doctor, without_gpu_settings


def fake_python(tmp_path: Path, body: str) -> str:
    """An "interpreter" that passes the doctor's Python 3 check, then does `body` as the torch child."""
    path = tmp_path / "python"
    path.write_text(f'#!/bin/sh\nif [ "$1" = "-c" ]; then echo 3; exit 0; fi\n{body}\n')
    path.chmod(0o755)
    return str(path)


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
        env={**without_gpu_settings(), "PYTHONPATH": str(ROOT), **fake_machine_env(machine, fake_libs)},
    )
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=20)
    if "init_import_site" in err:
        pytest.skip("the signal came during the interpreter's own start-up")
    assert p.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


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
