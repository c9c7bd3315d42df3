"""`cudadoctor gpus` on fake NVML machines (subprocess) and its selection logic (pure)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from cudadoctor.cli import cli
from cudadoctor.commands.gpus_pick import export_lines, pick, sort_devices
from cudadoctor.facts import NvmlDevice
from cudadoctor.knowledge.visibility import parse
from cudadoctor.render.gpus_table import unique_prefixes
from cudadoctor.report import EXIT_NOT_ENOUGH_GPUS, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from tests.conftest import H100_HEALTHY, ROOT, fake_machine_env

GiB = 1 << 30

EIGHT = """\
driver 580.95.05
cuda 13000
device name="NVIDIA H100 80GB HBM3" cc=9.0 total=85899345920 used=42949672960 util=80 temp=60
device name="NVIDIA H100 80GB HBM3" cc=9.0 total=85899345920 used=1073741824 util=5 temp=35
device name="NVIDIA H100 80GB HBM3" cc=9.0 total=85899345920 used=0 util=0 temp=30 gen=4/5 width=8/16
device name="NVIDIA H100 80GB HBM3" cc=9.0 total=85899345920 used=0 util=3 temp=31
device name="NVIDIA A100-SXM4-40GB" cc=8.0 error=15
process gpu=0 pid={mypid} mem=42949672960
process gpu=1 pid=999999 mem=1073741824
"""


def machine(**kw) -> str:
    return EIGHT.replace("{mypid}", str(kw.get("pid", os.getpid())))


def test_table_sorted_by_free_shows_processes_and_lost_gpu(run_cli):
    r = run_cli("gpus", "--sort-by-free", machine=machine())
    # a lost GPU is a problem, as check's CD105 says: exit 1, named on stderr; the others are shown
    assert r.code == EXIT_PROBLEMS, r.stderr
    assert "GPU 4 (GPU_IS_LOST)" in r.stderr and "cudadoctor check" in r.stderr
    lines = r.stdout.splitlines()
    rows = [ln for ln in lines if ln[:1].isdigit() or ln.startswith(("hidden", "lost"))]
    # GPUs 2 and 3 are both empty: the tie keeps NVML order; the lost GPU sorts last
    assert [row.split()[1] for row in rows] == ["2", "3", "1", "0", "4"]
    assert "ERROR: GPU_IS_LOST" in rows[-1] and rows[-1].startswith("lost")  # its own state word, not "hidden"
    assert max(len(ln) for ln in lines) <= 80  # a pipe gets 80 columns: less important columns dropped
    wide = run_cli("gpus", "--sort-by-free", "--wide", machine=machine()).stdout
    assert "Gen4x8/Gen5x16" in wide and "NVIDIA H100 80GB HBM3" in wide  # --wide keeps every column whole
    procs = [ln for ln in lines if ln.strip().startswith("pid")]
    mine = next(p for p in procs if f"pid {os.getpid()}" in p)
    assert "pytest" in mine or "python" in mine  # psutil named our own process
    gone = next(p for p in procs if "999999" in p)
    assert gone.split()[2] == "N/A"  # a vanished process is N/A, not a crash


def test_reverse_and_other_keys(run_cli):
    r = run_cli("gpus", "--sort-by", "util", "--reverse", "--json", machine=machine())
    order = [g["index"] for g in r.json["gpus"]]
    assert order == [4, 2, 3, 1, 0]


def test_pick_by_uuid_default(run_cli):
    r = run_cli("gpus", "--pick", "2", machine=machine())
    assert r.code == EXIT_OK
    assert r.stdout.strip() == (
        "export CUDA_VISIBLE_DEVICES=GPU-00000000-0000-0000-0000-000000000002,GPU-00000000-0000-0000-0000-000000000003"
    )


def test_pick_by_index_sets_pci_order(run_cli):
    r = run_cli("gpus", "--pick", "1", "--by", "index", machine=machine())
    assert r.stdout.strip() == "export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2"


@pytest.mark.parametrize(
    "shell,expected",
    [
        ("fish", "set -gx CUDA_VISIBLE_DEVICES GPU-00000000-0000-0000-0000-000000000002"),
        ("powershell", '$env:CUDA_VISIBLE_DEVICES="GPU-00000000-0000-0000-0000-000000000002"'),
        ("cmd", "set CUDA_VISIBLE_DEVICES=GPU-00000000-0000-0000-0000-000000000002"),
    ],
)
def test_pick_other_shells(run_cli, shell, expected):
    assert run_cli("gpus", "--pick", "1", "--shell", shell, machine=machine()).stdout.strip() == expected


def test_pick_with_constraints_and_too_few(run_cli):
    r = run_cli("gpus", "--pick", "3", "--min-free", "79.5GiB", "--max-util", "50", machine=machine())
    assert r.code == EXIT_NOT_ENOUGH_GPUS
    assert r.stdout == ""
    assert "only 2 of 5 GPUs qualify, 3 requested" in r.stderr
    assert "GPU 4: GPU_IS_LOST" in r.stderr and "GPU 0: too little free memory" in r.stderr


def test_mig_instances_are_listed_and_not_picked(run_cli):
    m = (
        'driver 550.54.14\ndevice name="NVIDIA A100-SXM4-40GB" cc=8.0 total=42949672960 mig=1\n'
        "mig gpu=0 uuid=MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee total=10737418240 used=1073741824\n"
    )
    r = run_cli("gpus", machine=m)
    assert "MIG 0: MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee" in r.stdout
    r = run_cli("gpus", "--pick", "1", machine=m)
    assert r.code == EXIT_NOT_ENOUGH_GPUS and "MIG mode" in r.stderr


def test_missing_v3_symbols_fall_back(run_cli):
    m = machine() + "missing nvmlDeviceGetComputeRunningProcesses_v3 nvmlDeviceGetGraphicsRunningProcesses_v3\n"
    r = run_cli("gpus", "--json", machine=m)
    gpu0 = next(g for g in r.json["gpus"] if g["index"] == 0)
    assert gpu0["processes"][0]["pid"] == os.getpid()


def test_json_has_cuda_ordinals(run_cli):
    r = run_cli("gpus", "--json", machine=machine(), env={"CUDA_VISIBLE_DEVICES": "3,1"})
    ordinals = {g["index"]: g["cuda_ordinal"] for g in r.json["gpus"]}
    assert ordinals == {0: None, 1: 1, 2: None, 3: 0, 4: None}
    assert r.json["command"] == "gpus" and r.json["schema_version"] == 2


def test_no_driver_is_one_line_with_checks_code(run_cli):
    r = run_cli("gpus", machine="init_error 18\n")
    assert r.code == EXIT_PROBLEMS
    assert r.stderr.strip().startswith("cudadoctor: CD103") and r.stderr.strip().count("\n") == 0


@pytest.mark.parametrize(
    "args",
    [
        ["--pick", "0"],
        ["--pick", "-2"],
        ["--sort-by", "name"],
        ["--pick", "1", "--min-free", "lots"],
        ["--min-free", "8G"],
        ["--pick", "1", "--max-util", "101"],
    ],
)
def test_usage_errors(run_cli, args):
    r = run_cli("gpus", *args, machine=machine())
    assert r.code == EXIT_USAGE and "Traceback" not in r.stderr


def test_watch_refreshes_and_ctrl_c_exits_cleanly(fake_libs, tmp_path):
    path = tmp_path / "m.txt"
    path.write_text(machine())
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FAKE_NVML_MACHINE": str(path), "LD_LIBRARY_PATH": str(fake_libs[0])}
    p = subprocess.Popen(
        [sys.executable, "-m", "cudadoctor", "gpus", "--watch", "0.2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(2.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=10)
    assert p.returncode == 130  # Ctrl-C ends --watch like any command: exit 130, no traceback
    assert out.count("Ctrl-C to stop") >= 2
    assert "Traceback" not in err


def test_gpus_never_imports_torch_nor_the_check_machinery(fake_libs, tmp_path):
    """Commands load lazily: `gpus` imports neither torch nor check's rules, renderers or rich."""
    path = tmp_path / "m.txt"
    path.write_text(machine())
    code = (
        "import os, sys\nsys.argv = ['cudadoctor', 'gpus']\nfrom cudadoctor.__main__ import main\n"
        "real_exit, me = os._exit, os.getpid()\n"
        "# gpus ends its process with os._exit: look at the modules first (its NVML child exits for real)\n"
        "os._exit = lambda code: sys.exit(code) if os.getpid() == me else real_exit(code)\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('torch', 'rich', 'cudadoctor.rules', 'cudadoctor.commands.check', 'cudadoctor.report')\n"
        "heavy += ('json',) if 'coverage' not in sys.modules else ()  # coverage itself imports json\n"
        "sys.stderr.write('HEAVY=%s' % [m for m in heavy if m in sys.modules])"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FAKE_NVML_MACHINE": str(path), "LD_LIBRARY_PATH": str(fake_libs[0])}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "HEAVY=[]" in p.stderr
    assert "H100 80GB HBM3" in p.stdout


def test_gpus_through_the_click_group_too(fake_libs, tmp_path, monkeypatch):

    assert CliRunner().invoke(cli, ["gpus", "--pick", "0"]).exit_code == EXIT_USAGE
    assert "Usage: cli gpus" in CliRunner().invoke(cli, ["gpus", "--help"]).output


def d(i: int, free_gib: float, util: int | None = 0, **kw) -> NvmlDevice:
    return NvmlDevice(
        index=i,
        uuid=f"GPU-{i}",
        memory_total=80 * GiB,
        memory_free=int(free_gib * GiB),
        memory_used=int((80 - free_gib) * GiB),
        utilization_gpu=util,
        **kw,
    )


def test_pick_prefers_free_then_idle_then_index():
    devs = [d(0, 40, 0), d(1, 70, 50), d(2, 70, 10), d(3, 70, 10)]
    assert [x.index for x in pick(devs, 3).chosen] == [2, 3, 1]


def test_pick_unknown_util_fails_a_util_limit():
    assert pick([d(0, 70, None)], 1, max_util=50).chosen == []
    assert [x.index for x in pick([d(0, 70, None)], 1).chosen] == [0]


def test_sort_unknown_values_last():
    devs = [d(0, 10), NvmlDevice(index=1, error="GPU_IS_LOST"), d(2, 20)]
    assert [x.index for x in sort_devices(devs, "free")] == [2, 0, 1]


def test_export_lines_by_index():
    assert export_lines([d(3, 1), d(1, 1)], by="index", shell="fish") == [
        "set -gx CUDA_DEVICE_ORDER PCI_BUS_ID",
        "set -gx CUDA_VISIBLE_DEVICES 3,1",
    ]
    assert json.dumps(export_lines([d(3, 1)], by="index", shell="powershell")) == json.dumps(
        ['$env:CUDA_DEVICE_ORDER="PCI_BUS_ID"', '$env:CUDA_VISIBLE_DEVICES="3"']
    )


@pytest.mark.parametrize("platform", ["linux", "darwin"])
def test_process_names_and_vanished_processes(monkeypatch, platform):
    """/proc on Linux, psutil elsewhere; a process that exited (NoSuchProcess) stays N/A."""
    import psutil  # noqa: F401  (imported for real before the platform is pretended)

    from cudadoctor.backends import procinfo
    from cudadoctor.facts.nvml import GpuProcess

    monkeypatch.setattr(procinfo.sys, "platform", platform)
    mine, gone = GpuProcess(pid=os.getpid(), used_memory=1), GpuProcess(pid=2**22 + 12345, used_memory=None)
    procinfo.describe_processes([mine, gone])
    assert mine.name and mine.user and "python" in (mine.command or "") + mine.name
    assert (gone.name, gone.user, gone.command) == (None, None, None)


def test_a_gpu_with_more_processes_than_the_first_read_has_room_for(run_cli):
    """The process list is read with room for 64 at the first call; more makes NVML ask for a larger
    buffer, and every process is still listed, in the JSON and as table rows (graphics ones too)."""
    lines = [machine()]
    lines += [f"process gpu=2 pid={100000 + i} mem={(i + 1) << 20}" for i in range(150)]
    lines += ["process gpu=2 pid=200000 mem=1048576 kind=graphics"]
    r = run_cli("gpus", "--json", machine="\n".join(lines) + "\n")
    assert r.code == EXIT_PROBLEMS, r.stderr  # GPU 4 is lost
    gpu2 = next(g for g in r.json["gpus"] if g["index"] == 2)
    assert len(gpu2["processes"]) == 151
    assert {p["kind"] for p in gpu2["processes"]} == {"compute", "graphics"}
    table = run_cli("gpus", machine="\n".join(lines) + "\n").stdout
    shown = {int(ln.split()[1]) for ln in table.splitlines() if ln.strip().startswith("pid ")}
    assert set(range(100000, 100150)) | {200000} <= shown
    assert max(len(ln) for ln in table.splitlines()) <= 80


def test_a_prefetched_query_is_replaced_when_the_guess_was_wrong(run_cli):
    """`gpus` starts its NVML query before the command line is parsed, guessing from the words; a value
    that looks like --pick ("--redact" is not --pick) or a --pick given as --pick=N still gets what it asked."""
    m = machine()
    r = run_cli("gpus", "--pick=1", "--by", "index", machine=m)
    assert r.code == EXIT_OK and r.stdout.strip().endswith("CUDA_VISIBLE_DEVICES=2"), r.stdout
    r = run_cli("gpus", "--pick", "1", "--json", machine=m)  # --json with --pick: with process details
    assert r.code == EXIT_OK and any(g["processes"] for g in r.json["gpus"])


def test_a_usage_error_leaves_no_nvml_child_behind(fake_libs, tmp_path):
    """The prefetched child dies with the doctor even when the command never takes it over: here NVML
    hangs and the options are wrong."""
    path = tmp_path / "m.txt"
    path.write_text(machine() + "hang_in nvmlDeviceGetName\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), **fake_machine_env(path, [fake_libs[0]])}
    p = subprocess.Popen(
        [sys.executable, "-m", "cudadoctor", "gpus", "--min-free", "8GiB"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    _, err = p.communicate(timeout=30)
    assert p.returncode == EXIT_USAGE and "--pick" in err
    deadline = time.monotonic() + 5
    left = ["?"]
    while left and time.monotonic() < deadline:
        ps = subprocess.run(["ps", "-o", "pid=,stat=", "-s", str(p.pid)], capture_output=True, text=True).stdout
        left = [ln for ln in ps.splitlines() if ln.split() and "Z" not in ln.split()[1]]
        time.sleep(0.1)
    assert left == []


FOUR = """\
driver 580.95.05
cuda 13000
device name="NVIDIA H100 80GB HBM3" cc=9.0 used=1073741824 uuid=GPU-aaaa0000-0000-0000-0000-000000000000
device name="NVIDIA H100 80GB HBM3" cc=9.0 used=2147483648 uuid=GPU-bbbb0000-0000-0000-0000-000000000000
device name="NVIDIA H100 80GB HBM3" cc=9.0 used=3221225472 uuid=GPU-cccc0000-0000-0000-0000-000000000000
device name="NVIDIA H100 80GB HBM3" cc=9.0 used=4294967296 uuid=GPU-dddd0000-0000-0000-0000-000000000000
"""


@pytest.mark.parametrize(
    "sick,how,state",
    [
        ("crash_in nvmlDeviceGetName gpu=2", "crashed (SIGSEGV)", "crashed"),
        ("hang_in nvmlDeviceGetName gpu=2", "hung", "hung"),
        ("crash_in nvmlDeviceGetMemoryInfo gpu=2", "crashed (SIGSEGV)", "crashed"),
    ],
)
def test_one_sick_gpu_does_not_hide_the_gpus_after_it(run_cli, sick, how, state):
    """GPU 2 of 4 crashes or hangs inside an NVML call: it is named with its call, and GPU 3 is still
    read (by a fresh child), not "2 GPU(s) not shown". The query keeps its one bound: a GPU that takes
    half of it counts as hung, and the GPUs after it are read in the other half."""
    call = sick.split()[1]
    start = time.monotonic()
    r = run_cli("gpus", "--timeout", "2", machine=FOUR + sick + "\n")
    assert time.monotonic() - start < 2 + 3  # the bound, and the interpreter's start-up
    assert r.code == 3, r.stderr  # the doctor could not read GPU 2: exit-codes.md
    rows = {ln.split()[1]: ln for ln in r.stdout.splitlines() if ln[:1].isdigit() or ln.startswith(("?", state))}
    assert sorted(rows) == ["0", "1", "2", "3"]
    assert rows["2"].startswith(state) and call in rows["2"]
    assert all("H100 80GB HBM3" in rows[i] for i in ("0", "1", "3"))
    # CUDA may or may not count the sick GPU: the other GPUs' cuda:N is unknown, never a guess
    assert all(rows[i].split()[0] == "?" for i in ("0", "1", "3"))
    assert "CUDA ?: a GPU's NVML query crashed or hung" in r.stdout  # the table says what "?" means
    assert max(len(ln) for ln in r.stdout.splitlines()) <= 80
    err = r.stderr.strip()
    assert err.count("\n") == 0 and how in err and call in err and "GPU 2" in err and "not shown" not in err
    j = run_cli("gpus", "--json", "--timeout", "2", machine=FOUR + sick + "\n")
    gpus = {g["index"]: g for g in j.json["gpus"]}
    assert j.code == 3 and sorted(gpus) == [0, 1, 2, 3]
    assert gpus[2]["error"] == state.upper() and call in gpus[2]["failure"] and how in gpus[2]["failure"]
    assert gpus[3]["uuid"] == "GPU-dddd0000-0000-0000-0000-000000000000" and gpus[3]["cuda_ordinal"] is None


def test_the_first_gpu_crashing_is_that_gpus_problem_not_nvmls(run_cli):
    """A crash in GPU 0 used to read as "the driver library itself failed" with no table at all."""
    r = run_cli("gpus", machine=FOUR + "crash_in nvmlDeviceGetUUID gpu=0\n")
    assert r.code == 3
    lines = r.stdout.splitlines()
    assert lines[2].startswith("crashed") and "nvmlDeviceGetUUID" in lines[2]
    assert sum("H100 80GB HBM3" in ln for ln in lines) == 3
    assert "GPU 0" in r.stderr and "the other GPUs are shown" in r.stderr


def test_every_gpu_hanging_is_bounded_and_counts_what_was_not_read(run_cli):
    """The same call hangs on every GPU: the whole query still ends within its one bound, and what is
    unread then is counted, never left out silently."""
    start = time.monotonic()
    r = run_cli("gpus", "--timeout", "2", machine=FOUR + "hang_in nvmlDeviceGetName\n")
    assert time.monotonic() - start < 2 + 3
    assert r.code == 3
    assert "hung" in r.stderr and "GPU 0" in r.stderr and "GPU 1" in r.stderr and "2 GPU(s) not shown" in r.stderr
    assert r.stdout.splitlines()[2].startswith("hung")


def test_a_lost_gpu_says_lost_and_fails(run_cli):
    """A GPU fallen off the bus is a problem (check's CD105): its own word in the CUDA column, not
    "hidden" (which means CUDA_VISIBLE_DEVICES hides it), named on stderr, exit 1; the others are shown."""
    m = FOUR.replace("used=3221225472 uuid=GPU-cccc0000-0000-0000-0000-000000000000", "error=15")
    r = run_cli("gpus", machine=m)
    assert r.code == EXIT_PROBLEMS
    row = next(ln for ln in r.stdout.splitlines() if ln.split()[1:2] == ["2"])
    assert row.split()[0] == "lost" and "GPU_IS_LOST" in row
    assert "hidden" not in r.stdout
    assert r.stderr.strip() == "cudadoctor: GPU 2 (GPU_IS_LOST) cannot be used: run `cudadoctor check` for the fix"
    assert run_cli("gpus", "--json", machine=m).code == EXIT_PROBLEMS
    # exit-codes.md says so
    assert "`lost`" in (ROOT / "docs" / "exit-codes.md").read_text()


def test_health_letters_are_explained_under_the_table_and_in_help(run_cli):
    m = (
        "driver 580.95.05\ncuda 13000\n"
        'device name="NVIDIA H100 80GB HBM3" cc=9.0 ecc=2/9 compute_mode=3\n'
        'device name="NVIDIA H100 80GB HBM3" cc=9.0 clocks_event=0x40\n'
        'device name="NVIDIA H100 80GB HBM3" cc=9.0\n'
    )
    r = run_cli("gpus", machine=m)
    lines = r.stdout.splitlines()
    assert [ln.split()[-1] for ln in lines[2:5]] == ["EX", "T", "ok"]
    legend = " ".join(ln.strip() for ln in lines[5:])
    assert legend.startswith("HEALTH: ")
    assert "E uncorrectable ECC errors" in legend and "X exclusive or prohibited compute mode" in legend
    assert "T thermal slowdown" in legend and "P power brake" not in legend  # only the letters shown
    assert max(len(ln) for ln in lines) <= 80
    helptext = run_cli("gpus", "--help").stdout
    for letter in ("L lost", "E uncorrectable ECC", "T thermal", "X exclusive", "? not reported"):
        assert letter in helptext
    assert "X exclusive or prohibited compute mode" in (ROOT / "README.md").read_text()
    clean = run_cli("gpus", machine=H100_ONLY).stdout
    assert "HEALTH:" not in clean  # nothing to explain


H100_ONLY = 'driver 580.95.05\ncuda 13000\ndevice name="NVIDIA H100 80GB HBM3" cc=9.0\n'


def test_process_rows_have_a_header(run_cli):
    r = run_cli("gpus", machine=machine())
    lines = r.stdout.splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.strip().startswith("pid "))
    header = lines[first - 1]
    assert header.split() == ["PROCESS", "USER", "GPU", "MEMORY", "COMMAND"]
    row = lines[first]
    # each header word starts where its column does (the memory column is right-aligned: ends there)
    assert header.index("PROCESS") == row.index("pid")
    assert header.index("COMMAND") == row.index("  ", row.index("GiB")) + 2
    assert header.index("MEMORY") + len("MEMORY") == row.index("GiB") + len("GiB")
    assert sum(ln.strip().startswith("PROCESS") for ln in lines) == 1  # once, not per GPU


def test_a_column_that_shows_a_problem_is_never_dropped_at_80_columns(run_cli):
    """At 80 columns TEMP went first, even on a 92 C GPU; a narrowed PCIe link and HEALTH letters too."""
    cool = (
        "driver 580.95.05\ncuda 13000\n"
        'device name="NVIDIA H100 80GB HBM3" cc=9.0 temp=40\n'
        'device name="NVIDIA H100 80GB HBM3" cc=9.0 temp=41\n'
    )
    plain = run_cli("gpus", machine=cool).stdout.splitlines()
    assert "TEMP" not in plain[1]  # nothing wrong: the least important columns go to fit 80
    hot = run_cli("gpus", machine=cool.replace("temp=41", "temp=92")).stdout.splitlines()
    assert "TEMP" in hot[1].split() and "92C" in hot[3] and max(len(ln) for ln in hot) <= 80
    narrow = run_cli("gpus", machine=cool.replace("temp=41", "width=8/16")).stdout.splitlines()
    assert "PCIE" in narrow[1].split() and "x8/" in narrow[3] and max(len(ln) for ln in narrow) <= 80


def test_gpus_redact_is_the_redaction_check_makes(run_cli, tmp_path):
    """`gpus --redact` kept the user name `check --redact` replaces (a process owner: root is a user name
    too) and every host name: both commands now use render/redact.py's one field_scrub."""
    import getpass
    import socket

    user, host = getpass.getuser(), socket.gethostname()
    named = re.compile(rf"(?<![\w.-]){re.escape(host)}(?![\w-])").search  # the host name as a word
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", f"--master-addr={host}", f"/home/{user}/data"]
    )
    try:
        time.sleep(0.3)
        m = H100_ONLY + f"process gpu=0 pid={sleeper.pid} mem=1073741824\n"
        table = run_cli("gpus", "--redact", "--wide", machine=m).stdout
        row = next(ln for ln in table.splitlines() if f"pid {sleeper.pid}" in ln)
        assert row.split()[2] == "<user>"
        assert "--master-addr=<host>" in row and "/home/<user>/data" in row
        assert f" {user} " not in row and not named(row)
        data = run_cli("gpus", "--redact", "--json", machine=m).json
        proc = data["gpus"][0]["processes"][0]
        assert proc["user"] == "<user>" and not named(proc["command"]) and f"/home/{user}/" not in proc["command"]
        check = run_cli("check", "--skip", "torch", "--redact", "--json", machine=m).json
        assert check["facts"]["system"]["user"] == "<user>" and check["facts"]["system"]["hostname"] == "<host>"
        assert not named(json.dumps(data)) and not named(json.dumps(check))
    finally:
        sleeper.kill()
        sleeper.wait()


# --- gpus --pick N --wait: a shared box whose memory frees ------------------------------------------------

BUSY = (
    "driver 550.54.14\ncuda 12040\n"
    'device name="NVIDIA A100-SXM4-80GB" cc=8.0 total=85899345920 used=85000000000 util=95 temp=60\n'
    'device name="NVIDIA A100-SXM4-80GB" cc=8.0 total=85899345920 used=84000000000 util=90 temp=60\n'
)
FREED = BUSY.replace("used=84000000000 util=90", "used=1073741824 util=0")


def _free_later(path, seconds: float) -> None:
    """Another user's job ends: the machine description changes under the waiting doctor."""
    import threading

    def write() -> None:
        time.sleep(seconds)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(FREED)
        tmp.replace(path)

    threading.Thread(target=write, daemon=True).start()


def test_wait_returns_the_selection_once_memory_frees(run_cli, tmp_path):
    (tmp_path / "machine.txt").write_text(BUSY)
    _free_later(tmp_path / "machine.txt", 1.5)
    start = time.monotonic()
    r = run_cli("gpus", "--pick", "1", "--min-free", "40GiB", "--wait", "60", machine=BUSY)
    took = time.monotonic() - start
    assert r.code == EXIT_OK, r.stderr
    # the GPU whose memory was freed, by UUID, as --pick prints it; within a poll or two of it freeing
    assert r.stdout.strip() == "export CUDA_VISIBLE_DEVICES=GPU-00000000-0000-0000-0000-000000000001"
    assert took < 15
    assert r.stderr == ""  # no status line in a pipe


def test_wait_that_runs_out_says_how_long_and_exits_4(run_cli):
    start = time.monotonic()
    r = run_cli("gpus", "--pick", "1", "--min-free", "40GiB", "--wait", "1", machine=BUSY)
    assert r.code == EXIT_NOT_ENOUGH_GPUS and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith("cudadoctor: waited ") and "for 1 GPU to qualify" in lines[0]
    assert lines[1].startswith("cudadoctor: only 0 of 2 GPUs qualify, 1 requested")
    assert time.monotonic() - start < 20


def test_wait_without_pick_is_a_usage_error(run_cli):
    r = run_cli("gpus", "--wait", "5", machine=BUSY)
    assert r.code == EXIT_USAGE and "--wait go with --pick N" in r.stderr


def test_wait_shows_a_status_line_on_a_terminal_and_ctrl_c_is_130(fake_libs, tmp_path):
    import pty

    path = tmp_path / "m.txt"
    path.write_text(BUSY)
    env = {**os.environ, "PYTHONPATH": str(ROOT), **fake_machine_env(path, [str(fake_libs[0])])}
    leader, follower = pty.openpty()
    p = subprocess.Popen(
        [sys.executable, "-m", "cudadoctor", "gpus", "--pick", "1", "--min-free", "40GiB", "--wait"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=follower,
        text=True,
        start_new_session=True,
    )
    os.close(follower)
    time.sleep(3)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=15)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert p.returncode == 130 and out == ""
    text = seen.decode(errors="replace")
    assert "Waiting for 1 GPUs: 0 of 2 qualify now" in text and "of 3600 s, Ctrl-C to stop" in text
    assert "Traceback" not in text
    # nothing is left running: no NVML child of the doctor survives it
    leftover = subprocess.run(["pgrep", "-s", str(p.pid)], capture_output=True, text=True).stdout.split()
    assert leftover == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pick", "3"], "3 GPUs requested but only 2 can ever qualify (of 2 here): waiting cannot help"),
        (["--pick", "1", "--min-free", "90GiB"], "no GPU here can ever qualify (2 GPUs seen): waiting cannot help"),
        (["--pick", "1", "--min-cc", "9.0"], "no GPU here can ever qualify (2 GPUs seen): waiting cannot help"),
    ],
)
def test_wait_for_what_can_never_be_says_so_at_once(run_cli, args, message):
    """More GPUs than the machine shows, more memory than a GPU has, a newer GPU than there is: no wait helps."""
    start = time.monotonic()
    r = run_cli("gpus", *args, "--wait", machine=BUSY)
    assert r.code == EXIT_NOT_ENOUGH_GPUS and r.stdout == ""
    assert r.stderr.startswith("cudadoctor: " + message) and len(r.stderr.strip().splitlines()) == 1
    assert time.monotonic() - start < 15  # not the default hour


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
    f = next(f for f in r.json["findings"] if f["code"] == "CD129")
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


def test_a_long_cuda_visible_devices_is_cut_in_the_gpus_header(run_cli):
    env = {"CUDA_VISIBLE_DEVICES": ",".join(["GPU-11111111-2222-3333-4444-555555555555"] * 3)}
    r = run_cli("gpus", machine=H100_HEALTHY, env=env)
    assert max(len(ln) for ln in r.stdout.splitlines()) <= 80 and "…" in r.stdout.splitlines()[0]
    wide = run_cli("gpus", "--wide", machine=H100_HEALTHY, env=env)
    assert env["CUDA_VISIBLE_DEVICES"] in wide.stdout.splitlines()[0]


def test_format_means_the_report_format_everywhere_so_gpus_selects_with_by(run_cli):
    """Issue 24: one meaning per option name across commands; the old spelling still works, with a note."""
    new = run_cli("gpus", "--pick", "1", "--by", "index", machine=machine())
    old = run_cli("gpus", "--pick", "1", "--format", "index", machine=machine())
    assert new.code == old.code == EXIT_OK and new.stdout == old.stdout and "CUDA_DEVICE_ORDER=PCI_BUS_ID" in new.stdout
    assert new.stderr == "" and old.stderr.strip() == "cudadoctor: note: gpus --format index is now --by index"
    assert "--by [uuid|index]" in run_cli("gpus", "--help").stdout
    assert "--format" not in run_cli("gpus", "--help").stdout
