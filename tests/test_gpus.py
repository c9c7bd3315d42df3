"""`cudadoctor gpus` on fake NVML machines (subprocess) and its selection logic (pure)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from cudadoctor.commands.gpus_pick import export_lines, pick, sort_devices
from cudadoctor.facts import NvmlDevice
from cudadoctor.report import EXIT_NOT_ENOUGH_GPUS, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from tests.conftest import ROOT, fake_machine_env

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
    assert r.code == EXIT_OK, r.stderr
    lines = r.stdout.splitlines()
    rows = [ln for ln in lines if ln[:1].isdigit() or ln.startswith("hidden")]
    # GPUs 2 and 3 are both empty: the tie keeps NVML order; the lost GPU sorts last
    assert [row.split()[1] for row in rows] == ["2", "3", "1", "0", "4"]
    assert "ERROR: GPU_IS_LOST" in rows[-1] and rows[-1].startswith("hidden")
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
    r = run_cli("gpus", "--pick", "1", "--format", "index", machine=machine())
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
    from click.testing import CliRunner

    from cudadoctor.cli import cli

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
    assert r.code == EXIT_OK, r.stderr
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
    r = run_cli("gpus", "--pick=1", "--format", "index", machine=m)
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
