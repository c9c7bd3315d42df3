"""The torch checks of one run share ONE child of the target interpreter (issue 11: torch is imported
once): each stage keeps its own time bound, and a stage that overruns or crashes is named while the
stages before it keep their facts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cudadoctor.backends.child import ChildResult, run_stages
from cudadoctor.report import EXIT_INCOMPLETE
from tests.conftest import ROOT

PY = sys.executable
TORCH_WORK = "torch,bandwidth,smoke,compile"

# Stands in for the target interpreter: passes the doctor's Python 3 check, logs every other start,
# and plays the shared torch child's part (the stages it is given, in order), doing `act` in one stage.
FAKE = """\
#!{py}
import json, os, signal, sys, time
if sys.argv[1:2] == ["-c"]:
    print(3)
    sys.exit(0)
with open({log!r}, "a") as fh:
    fh.write(" ".join(os.path.basename(a) for a in sys.argv[1:2]) + "\\n")
FACTS = {{
    "torch": "CUDADOCTOR_TORCH_FACTS " + json.dumps({{"installed": True, "version": "2.13.0+cpu", "complete": True,
        "is_available": False, "device_count": 0, "cuda_built": False}}),
    "bandwidth": "CUDADOCTOR_MEASURE_FACTS " + json.dumps({{"bandwidth": {{"skipped": "no usable CUDA device"}}}}),
    "smoke": "CUDADOCTOR_MEASURE_FACTS " + json.dumps({{"smoke": {{"steps": [{{"device": "cpu", "model": "mlp",
        "losses": [2.0, 1.0]}}], "dataloader_ok": True, "checkpoint_ok": True}}}}),
    "compile": "CUDADOCTOR_COMPILE_FACTS " + json.dumps({{"torch_version": "2.13.0+cpu", "cpu_ok": True,
        "cpu_seconds": 1.0, "complete": True}}),
}}
for name, *_ in json.loads(sys.argv[2]):
    if name == {stage!r}:
        {act}
    print(FACTS[name])
    print("CUDADOCTOR_STAGE_END " + name, flush=True)
os._exit(0)
"""


def fake_python(tmp_path: Path, stage: str = "", act: str = "pass") -> tuple[str, Path]:
    log = tmp_path / "starts.log"
    path = tmp_path / "python"
    path.write_text(FAKE.format(py=PY, log=str(log), stage=stage, act=act))
    path.chmod(0o755)
    return str(path), log


def doctor(*args: str) -> tuple[int, dict]:
    p = subprocess.run(
        [PY, "-m", "cudadoctor", *args, "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, json.loads(p.stdout)


def titles(report: dict) -> str:
    return "\n".join(f["title"] for f in report["findings"])


def status(report: dict) -> dict[str, str]:
    return {p["name"]: p["status"] for p in report["probes"]}


def test_the_torch_checks_start_the_target_interpreter_once(tmp_path):
    python, log = fake_python(tmp_path)
    _, report = doctor("check", "--only", TORCH_WORK, "--python", python)
    assert log.read_text().split() == ["torch_session_child.py"]  # one process for four checks
    assert {"torch", "bandwidth", "smoke", "compile"} <= {n for n, s in status(report).items() if s == "ok"}
    assert report["facts"]["torch"]["version"] == "2.13.0+cpu" and report["facts"]["compile"]["cpu_ok"]


def test_check_full_starts_the_real_interpreter_once_for_torch(tmp_path):
    pytest.importorskip("torch")
    log = tmp_path / "starts.log"
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\necho "$1" >> {log}\nexec {PY} "$@"\n')
    wrapper.chmod(0o755)
    code, report = doctor("check", "--full", "--python", str(wrapper))
    assert code != EXIT_INCOMPLETE, titles(report)
    starts = [Path(a).name for a in log.read_text().split()]
    # the interpreter check, then one torch process (and the extensions listing, which imports no torch)
    assert starts[0] == "-c" and sorted(starts[1:]) == ["extensions_child.py", "torch_session_child.py"]
    st = status(report)
    assert all(st[n] == "ok" for n in ("torch", "bandwidth", "smoke", "compile")), st
    assert report["facts"]["torch"]["complete"] and report["facts"]["smoke"]["steps"]


def test_one_torch_check_alone_runs_its_own_child_as_before(tmp_path):
    python, log = fake_python(tmp_path)
    doctor("check", "--only", "torch", "--python", python)
    assert log.read_text().split() == ["torch_child.py"]


def test_a_stage_that_overruns_is_named_and_the_stages_before_it_keep_their_facts(tmp_path):
    python, _ = fake_python(tmp_path, "bandwidth", "time.sleep(300)")
    code, report = doctor("check", "--only", TORCH_WORK, "--python", python, "--timeout", "2")
    assert code == EXIT_INCOMPLETE
    st = status(report)
    assert st["torch"] == "ok" and report["facts"]["torch"]["version"] == "2.13.0+cpu"
    assert st["bandwidth"] == "timeout" and report["facts"]["bandwidth"]["timed_out"]
    text = titles(report)
    # the stages after it did not run, and say why: never "not installed"
    assert "Smoke test: not run: the bandwidth check before it" in text and "did not finish within" in text
    assert "torch.compile check timed out while starting: not run: the bandwidth check" in text
    assert "not installed" not in text


def test_a_crash_mid_way_names_the_stage_that_crashed(tmp_path):
    python, _ = fake_python(tmp_path, "smoke", "os.kill(os.getpid(), signal.SIGSEGV)")
    _, report = doctor("check", "--only", TORCH_WORK, "--python", python)
    st = status(report)
    assert st["torch"] == "ok" and st["bandwidth"] == "ok"  # reported before the crash: kept
    assert report["facts"]["bandwidth"]["skipped"] == "no usable CUDA device"
    text = titles(report)
    assert "Smoke test: crashed (SIGSEGV)" in text
    assert "not run: the smoke check before it, in the same process, failed: crashed (SIGSEGV)" in text
    assert "not installed" not in text


@pytest.mark.parametrize(
    "act,words",
    [
        ("print('garbage'); os._exit(0)", "exited before this check finished"),
        ("raise RuntimeError('boom')", "The torch check did not finish: RuntimeError: boom"),
    ],
)
def test_a_torch_stage_that_dies_is_a_failed_check_not_a_missing_torch(tmp_path, act, words):
    python, _ = fake_python(tmp_path, "torch", act)
    code, report = doctor("check", "--only", TORCH_WORK, "--python", python)
    assert code == EXIT_INCOMPLETE
    text = titles(report)
    assert "CD201" not in [f["code"] for f in report["findings"]] and "CD212" in json.dumps(report)
    assert words in text


# -- the runner itself, with a small stand-in child -----------------------------------------------------

CHILD = textwrap.dedent(
    """
    import os, signal, sys, time
    for name in sys.argv[1:]:
        print("line of", name, flush=True)
        if name == "hang":
            time.sleep(300)
        if name == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if name == "flood":
            while True:
                print("x" * 1000)
        if name == "raise":
            print("END raise ValueError: no", flush=True)
            continue
        if name == "unfinished":  # a stage that leaves its last line open; the end line comes after a newline
            sys.stdout.write("a warning without its newline")
        print("\\nEND " + name, flush=True)
    os._exit(0)
    """
)


def stages(*names: str, bound: float = 20.0, **kw) -> dict[str, ChildResult]:
    got: dict[str, ChildResult] = {}
    run_stages([PY, "-c", CHILD, *names], [(n, bound) for n in names], "END ", got.__setitem__, **kw)
    assert list(got) == list(names)  # every stage gets exactly one result, in order
    return got


def test_each_stage_gets_its_own_lines_and_a_failed_stage_does_not_stop_the_rest():
    got = stages("one", "raise", "two")
    assert got["one"].ok and got["one"].stdout == "line of one"
    assert not got["raise"].ok and got["raise"].failure() == "ValueError: no"
    assert got["two"].ok and got["two"].stdout == "line of two"


def test_a_stage_that_leaves_a_line_unfinished_ends_where_it_ends():
    """A second read found the end mark glued to a stage's unfinished line: that stage then took in every
    later stage's output, and the later stages were reported as not run."""
    got = stages("one", "unfinished", "two")
    assert got["unfinished"].ok and got["unfinished"].stdout == "line of unfinished\na warning without its newline"
    assert got["two"].ok and got["two"].stdout == "line of two"


def test_an_overrun_stage_times_out_and_the_later_ones_say_why():
    got = stages("one", "hang", "two", bound=1.5)
    assert got["one"].ok
    assert got["hang"].timed_out and got["hang"].stdout == "line of hang"  # its partial output kept
    assert got["two"].timed_out and "the hang check before it" in (got["two"].error or "")


def test_a_crash_keeps_what_came_before():
    got = stages("one", "crash", "two")
    assert got["one"].ok and got["crash"].failure() == "crashed (SIGSEGV)"
    assert "failed: crashed (SIGSEGV)" in (got["two"].error or "") and not got["two"].timed_out


def test_a_flood_is_stopped_and_named_on_its_stage():
    got = stages("one", "flood", "two", max_stdout=1 << 20)
    assert got["one"].ok and got["flood"].flooded and "printed more than" in (got["two"].error or "")


def test_a_compile_hang_on_a_gpu_machine_says_it_was_compiling_for_the_gpu():
    """Where a GPU runs kernels only the GPU is compiled for (the CPU's C++ build took 57 of 63 s of
    `check --full` on an H100 machine): a hang there is not "while compiling on the CPU"."""
    from cudadoctor.facts.libraries import CompileFacts
    from cudadoctor.rules import evaluate
    from tests.facts_fixtures import gpu, healthy, torch_cuda

    h100 = gpu(0, "NVIDIA H100 80GB HBM3", "9.0")
    facts = healthy([h100])
    facts.torch = torch_cuda("2.13.0+cu126", "12.6", "8.0 9.0", [h100])
    facts.compile = CompileFacts(python_executable="/opt/venv/bin/python", torch_version="2.13.0", timed_out=True)
    titles = [f.title for f in evaluate(facts, []) if f.code == "CD228"]
    assert titles == ["The torch.compile check timed out while compiling on the GPU"]
    facts.torch = torch_cuda("2.13.0+cu126", "12.6", "8.0 9.0", [h100], available=False)
    assert "while compiling on the CPU" in next(f.title for f in evaluate(facts, []) if f.code == "CD228")


def test_child_scripts_never_shadow_the_targets_cuda_package(tmp_path):
    """A script run by path puts its directory first on sys.path, where a module of cudadoctor's named like
    a package of the target (backends/cuda.py and cuda-python's `cuda`) would shadow it: torch or Triton
    would import ours (and fail as "import torch fails"). Every child script takes its directory off the
    path first."""
    site = tmp_path / "site"
    (site / "cuda").mkdir(parents=True)
    (site / "cuda" / "__init__.py").write_text("WHO = 'cuda-python'\n")
    backends = ROOT / "cudadoctor" / "backends" / "children"

    def which_cuda(then: str) -> subprocess.CompletedProcess:
        """`import cuda` after `then` ran with the scripts' directory first on the path, as a script run by path."""
        code = (
            f"import runpy, sys; sys.path.insert(0, {str(backends)!r}); {then}; "
            f"print(any(p == {str(backends)!r} for p in sys.path) and 'still on the path' or ''); "
            "import cuda; print(cuda.WHO)"
        )
        env = {**os.environ, "PYTHONPATH": str(site)}
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)

    for script in (
        "torch_child",
        "measure_child",
        "compile_child",
        "torch_session_child",
        "fleet_child",
        "fleet_launch_child",
        "ckpt_child",
    ):
        out = which_cuda(f"runpy.run_path({str(backends / (script + '.py'))!r}, run_name='loaded')")
        assert out.stdout.strip() == "cuda-python", (script, out.stderr[-500:])
    # the shared child loads the stage scripts after importing the helper itself: each must still leave
    # the path clean (a second read found the directory back, three times, before torch was imported)
    out = which_cuda(
        f"g = runpy.run_path({str(backends / 'torch_session_child.py')!r}, run_name='loaded'); "
        "[g['load'](s) for s in ('torch_child.py', 'measure_child.py', 'compile_child.py')]"
    )
    assert out.stdout.strip() == "cuda-python", out.stderr[-500:]
