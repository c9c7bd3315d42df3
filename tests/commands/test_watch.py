"""`cudadoctor watch`: verdicts as pure rules over hand-written timelines (no timing), the sampler on real
child processes, and the command end to end on the fake NVML with a scripted timeline."""

from __future__ import annotations

import dataclasses
import json
import os
import pty
import select
import shlex
import signal
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cudadoctor.facts.watch import MAIN, WORKER, ProcSample, Timeline
from cudadoctor.model import Severity
from cudadoctor.rules import watch as rules
from cudadoctor.rules.catalogue import CATALOGUE
from cudadoctor.rules.examples.training import timeline
from cudadoctor.rules.watch import clocks
from cudadoctor.rules.watch.stats import suggest_workers
from tests.conftest import LIBRARY_DIRS, fake_machine_env

GiB = 1 << 30
ROOT = Path(__file__).resolve().parents[2]


# ---- hand-written timelines ------------------------------------------------------------------------------


SWING = [0, 20, 70, 95, 0, 10, 90, 95, 0, 5, 80, 0]


def codes(tl: Timeline) -> list[str]:
    return [f.code for f in rules.evaluate(tl)]


def the(tl: Timeline, code: str):  # type: ignore[no-untyped-def]
    found = [f for f in rules.evaluate(tl) if f.code == code]
    assert len(found) == 1, [f.code for f in rules.evaluate(tl)]
    return found[0]


def fix_text(finding) -> str:  # type: ignore[no-untyped-def]
    return "\n".join([r.when for r in finding.fix] + [c for r in finding.fix for c in r.commands])


def test_entries_are_in_the_training_section_and_range() -> None:
    mine = [e for e in CATALOGUE.values() if e.name.startswith("watch-")]
    assert len(mine) >= 10
    assert all(e.section == "Training" and 700 <= int(e.code[2:]) <= 749 for e in mine)


def test_too_short_says_so_and_nothing_else() -> None:
    assert codes(timeline([0, 0])) == ["CD711"]


def test_input_bound_swinging_gpu_with_main_process_saturated() -> None:
    f = the(timeline(SWING, main=99.0), "CD701")
    assert f.severity is Severity.WARNING
    assert "swung between idle and busy" in f.title and "main process" in f.title
    text = fix_text(f)
    # 16 cores, 20 % busy: 12.8 idle; no worker yet: suggest 4
    assert "num_workers=4" in text and "pin_memory=True" in text and "persistent_workers=True" in text
    assert "prefetch_factor" in text and "non_blocking=True" in text
    assert "12.8 of 16 cores were idle" in text


def test_input_bound_with_saturated_workers_suggests_more_from_free_cores() -> None:
    f = the(timeline([40] * 10, main=30.0, workers=[98.0, 97.0], cpu_busy=50.0, cpu_count=32), "CD701")
    assert "2 DataLoader workers" in f.title and "averaged 40 %" in f.title
    assert "num_workers=4" in fix_text(f)  # twice the current, well within 16 idle cores


def test_input_bound_with_no_core_free_says_to_make_batches_cheaper() -> None:
    f = the(timeline([40] * 10, main=30.0, workers=[98.0] * 8, cpu_busy=99.0, cpu_count=8), "CD701")
    text = fix_text(f)
    assert "num_workers=" not in text and "Every core is busy" in text


def test_suggest_workers() -> None:
    assert suggest_workers(0, 12.8, 16) == 4
    assert suggest_workers(4, 20.0, 32) == 8
    assert suggest_workers(2, 1.5, 4) == 3
    assert suggest_workers(8, 0.4, 8) is None
    assert suggest_workers(0, None, 8) == 4
    assert suggest_workers(0, None, None) is None


def test_on_an_oversubscribed_machine_a_fair_share_is_cpu_limited() -> None:
    # 2 cores, load 8: the scheduler gives each runnable process about 25 % of a core
    f = the(timeline(SWING, main=24.0, cpu_busy=100.0, load=8.0, cpu_count=2), "CD701")
    assert "Every core is busy" in fix_text(f)
    assert "CD701" not in codes(timeline(SWING, main=8.0, cpu_busy=100.0, load=8.0, cpu_count=2))
    assert "CD701" not in codes(timeline(SWING, main=24.0, cpu_busy=40.0, load=1.0, cpu_count=2))
    assert "CD700" in codes(timeline([0] * 8, main=24.0, on_gpu=0, cpu_busy=100.0, load=8.0, cpu_count=2))


def test_low_gpu_with_idle_cpu_is_not_input_bound() -> None:
    assert "CD701" not in codes(timeline(SWING, main=5.0))


def test_busy_gpu_is_gpu_bound_not_input_bound() -> None:
    c = codes(timeline([97, 95, 99, 98, 96, 97], main=100.0))
    assert "CD710" in c and "CD701" not in c


def test_trains_on_cpu() -> None:
    tl = timeline([0] * 8, main=380.0, on_gpu=0, tree_mem=None)
    f = the(tl, "CD700")
    assert ".to(device)" in fix_text(f) and "torch.cuda.is_available()" in fix_text(f)
    tl.cuda_visible_devices = ""
    assert "unset CUDA_VISIBLE_DEVICES" in fix_text(the(tl, "CD700"))


def test_trains_on_cpu_needs_a_busy_cpu_and_a_known_process_list() -> None:
    assert "CD700" not in codes(timeline([0] * 8, main=3.0, on_gpu=0))  # idle, not training
    assert "CD700" not in codes(timeline([0] * 8, main=380.0, on_gpu=None))  # process list unknown


def test_hidden_pids_are_unknown_not_cpu_training() -> None:
    tl = timeline([50] * 8, main=380.0, on_gpu=0, others=1)
    for s in tl.samples:
        s.gpus[0].unseen_processes = 1
        s.gpus[0].tree_memory = None
    c = codes(tl)
    assert "CD713" in c and "CD700" not in c


def hidden_pids(tl: Timeline, libcuda: bool | None) -> Timeline:
    """NVML lists a PID of another namespace on GPU 0 and none of the tree's; each process maps libcuda or not."""
    for s in tl.samples:
        s.gpus[0].unseen_processes, s.gpus[0].tree_processes, s.gpus[0].tree_memory = 1, 0, None
        for p in s.procs:
            p.libcuda = libcuda
    return tl


def test_hidden_pids_but_no_libcuda_anywhere_is_cpu_training() -> None:
    tl = hidden_pids(timeline([50] * 8, main=380.0, on_gpu=0, others=1), libcuda=False)
    f = the(tl, "CD700")
    assert "CD713" not in codes(tl) and "No process of the command loaded libcuda" in f.why
    # one process whose maps could not be read: unknown again, as before
    tl.samples[3].procs[0].libcuda = None
    assert "CD713" in codes(tl) and "CD700" not in codes(tl)
    # a process that maps libcuda used CUDA: NVML's hidden PIDs keep its GPU use unknown
    tl.samples[3].procs[0].libcuda = True
    assert "CD713" in codes(tl) and "CD700" not in codes(tl)
    assert "CD700" not in codes(hidden_pids(timeline([50] * 8, main=3.0, on_gpu=0, others=1), libcuda=False))


def test_the_same_verdict_on_every_rank_is_one_finding() -> None:
    tl = timeline(SWING, main=99.0)
    for s in tl.samples:
        s.gpus.append(dataclasses.replace(s.gpus[0], index=1))
        s.procs.append(ProcSample(101, MAIN, "python", 99.0, GiB))
    tl.gpus.append(dataclasses.replace(tl.gpus[0], index=1))  # type: ignore[union-attr]
    assert codes(tl).count("CD701") == 1
    assert the(tl, "CD701").title.endswith("(also GPU 1)")


def test_memory_underused_and_near_limit() -> None:
    f = the(timeline([97] * 6, tree_mem=4 * GiB), "CD702")
    assert "peak 4.0 GiB of 80.0 GiB" in f.title and "batch" in fix_text(f)
    f = the(timeline([97] * 6, tree_mem=70 * GiB, used=79 * GiB, others=1), "CD703")
    assert "other processes held" in f.title
    assert "expandable_segments" in fix_text(f) and "autocast" in fix_text(f)
    assert not {"CD702", "CD703"} & set(codes(timeline([97] * 6, tree_mem=50 * GiB)))


def test_copies_dominate() -> None:
    f = the(timeline([30] * 8, main=20.0, rx=12 * 10**9), "CD704")
    assert "of 31.5" in f.title and "non_blocking=True" in fix_text(f)
    assert "CD704" not in codes(timeline([30] * 8, main=20.0, rx=10**8))  # a trickle
    assert "CD704" not in codes(timeline([95] * 8, main=20.0, rx=12 * 10**9))  # copies overlap compute


def test_throttling_reasons() -> None:
    assert "CD705" in codes(timeline([95] * 6, clocks=clocks.HW_THERMAL))
    f = the(timeline([95] * 6, clocks=clocks.SW_POWER_CAP), "CD706")
    assert f.severity is Severity.INFO
    assert "CD707" in codes(timeline([95] * 6, clocks=clocks.HW_SLOWDOWN))
    assert not {"CD705", "CD706", "CD707"} & set(codes(timeline([95] * 6, clocks=0x1)))
    # an idle GPU lowers clocks for no harm: not counted
    assert "CD705" not in codes(timeline([5] * 6, clocks=clocks.SW_THERMAL))


def test_busy_gpu_while_another_is_free() -> None:
    f = the(timeline([60] * 8, main=20.0, others=1, second_gpu=True), "CD708")
    text = fix_text(f)
    assert "GPU 1 was free" in f.title
    assert 'eval "$(cudadoctor gpus --pick 1 --min-free 36GiB)"' in text
    assert "CUDA_VISIBLE_DEVICES=GPU-bbbb python train.py" in text
    assert "CD708" not in codes(timeline([60] * 8, main=20.0, others=0, second_gpu=True))
    assert "CD708" not in codes(timeline([60] * 8, main=20.0, others=1, second_gpu=False))


def test_shm_nearly_full() -> None:
    f = the(timeline([97] * 6, shm=(63 << 20, 64 << 20)), "CD709")
    assert "--shm-size" in fix_text(f) and "container" in f.why
    assert "CD709" not in codes(timeline([97] * 6, shm=(1 << 20, 64 << 20)))


def test_no_nvml_is_info_only() -> None:
    tl = timeline([None] * 6)
    tl.nvml, tl.gpus = "LIBRARY_NOT_FOUND", None
    for s in tl.samples:
        s.gpus = []
    assert codes(tl) == ["CD712"]


def _blank(tl: Timeline, keep: set[str]) -> Timeline:
    tl = dataclasses.replace(tl, samples=[dataclasses.replace(s) for s in tl.samples])
    for s in tl.samples:
        s.gpus = [
            dataclasses.replace(g, **{f.name: None for f in dataclasses.fields(g) if f.name not in keep | {"index"}})
            for g in s.gpus
        ]
        s.procs = [dataclasses.replace(p, cpu=None) if "cpu" not in keep else p for p in s.procs]
        s.procs = [dataclasses.replace(p, libcuda=None) if "libcuda" not in keep else p for p in s.procs]
        s.cpu_busy = None
    return tl


@pytest.mark.parametrize(
    "tl",
    [
        timeline(SWING, main=99.0, tree_mem=4 * GiB),
        timeline([30] * 8, main=20.0, rx=12 * 10**9, clocks=clocks.HW_THERMAL, others=1, second_gpu=True),
        timeline([0] * 8, main=380.0, on_gpu=0),
        hidden_pids(timeline([50] * 8, main=380.0, on_gpu=0, others=1), libcuda=False),
    ],
)
@pytest.mark.parametrize(
    "keep", [set(), {"tree_processes"}, {"tree_processes", "util"}, {"cpu"}, {"cpu", "libcuda"}, {"libcuda"}]
)
def test_knowing_less_never_adds_a_warning(tl: Timeline, keep: set[str]) -> None:
    full = {f.code for f in rules.evaluate(tl) if f.severity.rank >= Severity.WARNING.rank}
    less = {f.code for f in rules.evaluate(_blank(tl, keep)) if f.severity.rank >= Severity.WARNING.rank}
    assert less <= full


# ---- rendering ------------------------------------------------------------------------------------------


def test_sparkline_and_ascii_fallback() -> None:
    from cudadoctor.render.timeline import sparkline, summary

    assert sparkline([0, 50, 100, None], 100) == "▁▅█ "
    assert sparkline([0, 50, 100], 100, unicode=False) == ".+@"
    assert len(sparkline(list(range(1000)), width=40)) == 40
    tl = timeline(SWING, main=99.0, workers=[90.0, 91.0])
    findings = rules.evaluate(tl)
    text = summary(tl, findings, "ascii")
    text.encode("ascii")
    assert "GPU 0 util" in text and "CPU main" in text and "CPU worker 2" in text and "CD701" in text
    assert max(len(ln) for ln in text.splitlines() if not ln.startswith(" " * 10)) <= 80
    assert "█" in summary(tl, findings, "utf-8")


# ---- the sampler on real processes -----------------------------------------------------------------------


def test_classify_roles() -> None:
    from cudadoctor.backends.sampler import classify

    py = ("python", "train.py")
    roles = classify(
        [1, 2, 3, 4, 5],
        parents={1: 0, 2: 1, 3: 2, 4: 2, 5: 2},
        names={1: "bash", 2: "python", 3: "pt_data_worker", 4: "python", 5: "python"},
        cmdlines={
            1: ("bash", "run.sh"),
            2: py,
            3: py,
            4: py,
            5: ("python", "-c", "from multiprocessing.resource_tracker import main;main(5)"),
        },
        root=1,
    )
    assert roles == {1: "other", 2: MAIN, 3: WORKER, 4: WORKER, 5: "helper"}
    # torchrun: the ranks holding the GPU are the main processes, not the launcher
    roles = classify(
        [1, 2, 3],
        parents={1: 0, 2: 1, 3: 1},
        names={1: "torchrun", 2: "python", 3: "python"},
        cmdlines={1: ("/usr/bin/python", "/usr/bin/torchrun", "t.py"), 2: ("python", "t.py"), 3: ("python", "t.py")},
        gpu_pids={2, 3},
        root=1,
    )  # fmt: skip
    assert roles == {1: "other", 2: MAIN, 3: MAIN}


WORKERS_SCRIPT = textwrap.dedent(
    """
    import multiprocessing as mp, sys, time
    def burn(seconds):
        end = time.time() + seconds
        while time.time() < end:
            pass
    if __name__ == "__main__":
        mp.set_start_method(sys.argv[1])
        ps = [mp.Process(target=burn, args=(float(sys.argv[2]),)) for _ in range(2)]
        for p in ps:
            p.start()
        time.sleep(float(sys.argv[2]))
        for p in ps:
            p.join()
    """
)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_sampler_tells_workers_from_an_idle_main(tmp_path: Path, method: str) -> None:
    from cudadoctor.backends.sampler import Sampler

    script = tmp_path / "w.py"
    script.write_text(WORKERS_SCRIPT)
    child = subprocess.Popen([sys.executable, str(script), method, "2.5"])
    try:
        sampler = Sampler(child.pid)
        sampler.open()
        samples = []
        for _ in range(8):
            time.sleep(0.2)
            samples.append(sampler.sample())
        sampler.close()
    finally:
        child.wait(timeout=20)
    last = [s for s in samples if sum(p.role == WORKER for p in s.procs) == 2]
    assert last, [[(p.role, p.name) for p in s.procs] for s in samples]
    s = last[-1]
    main = [p for p in s.procs if p.role == MAIN]
    assert [p.pid for p in main] == [child.pid]
    assert main[0].cpu is not None and main[0].cpu < 30
    assert all(p.rss for p in s.procs)
    # cores shared with whatever else runs (this machine's load can be 10 on 2 cores): the burning
    # workers, over the run, used clearly more CPU than the sleeping main process
    worker_cpu = [p.cpu for x in samples for p in x.procs if p.role == WORKER and p.cpu is not None]
    main_cpu = [p.cpu for x in samples for p in x.procs if p.role == MAIN and p.cpu is not None]
    assert worker_cpu and main_cpu
    assert sum(worker_cpu) / len(worker_cpu) > sum(main_cpu) / len(main_cpu) + 2
    assert s.shm_total is None or s.shm_total > 0


DATALOADER = textwrap.dedent(
    """
    import time, torch
    from torch.utils.data import DataLoader, Dataset
    class Slow(Dataset):
        def __len__(self):
            return 10**6
        def __getitem__(self, i):
            end = time.time() + 0.01
            while time.time() < end:
                pass
            return torch.zeros(4)
    if __name__ == "__main__":
        end = time.time() + 1.5
        for batch in DataLoader(Slow(), batch_size=8, num_workers=2):
            if time.time() > end:
                break
    """
)


def test_sampler_names_real_dataloader_workers(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from cudadoctor.backends.sampler import Sampler

    script = tmp_path / "dl.py"
    script.write_text(DATALOADER)
    child = subprocess.Popen([sys.executable, str(script)])
    seen: set[tuple[int, str, str | None]] = set()
    try:
        sampler = Sampler(child.pid)
        sampler.open()
        end = time.time() + 60
        while child.poll() is None and time.time() < end:
            seen |= {(p.pid, p.role, p.name) for p in sampler.sample().procs}
            time.sleep(0.2)
        sampler.close()
    finally:
        child.kill()
        child.wait(timeout=20)
    workers = {pid for pid, role, name in seen if role == WORKER and name == "pt_data_worker"}
    assert len(workers) == 2, seen
    assert {pid for pid, role, _ in seen if role == MAIN} == {child.pid}


def test_sampler_without_nvml_is_a_value(tmp_path: Path) -> None:
    code = (
        "import os,sys,time; from cudadoctor.backends.sampler import Sampler; s=Sampler(os.getpid()); s.open();"
        "x=s.sample(); print(s.nvml_status, s.gpus, x.gpus)"
    )
    # an empty directory as the only place for libnvidia-ml, even where a real driver is installed
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LD_LIBRARY_PATH": str(tmp_path), LIBRARY_DIRS: str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=30)
    assert out.returncode == 0, out.stderr
    status, rest = out.stdout.split(" ", 1)
    assert status != "ok" and rest.strip() == "None []"


# ---- end to end on the fake NVML -------------------------------------------------------------------------

BURN = (
    "import time,sys\nend=time.time()+{s}\nwhile time.time()<end: pass\nprint('trained', flush=True)\nsys.exit({rc})\n"
)
SLEEP = "import time,sys\ntime.sleep({s})\nprint('trained', flush=True)\nsys.exit({rc})\n"


def watch_json(run_cli, tmp_path: Path, machine: str, script: str, *extra: str):  # type: ignore[no-untyped-def]
    (tmp_path / "train.py").write_text(script)
    out = tmp_path / "watch.json"
    r = run_cli(
        "watch", "--interval", "0.1", "--json", str(out), *extra, "--", sys.executable, "train.py", machine=machine
    )
    data = json.loads(out.read_text()) if out.exists() else None
    return r, data


def swing_timeline(gpu: int = 0, period: float = 0.3, points: int = 30) -> str:
    return "".join(f"timeline gpu={gpu} t={k * period:.2f} util={5 if k % 2 == 0 else 95}\n" for k in range(points))


def test_e2e_input_bound_and_underused_memory(run_cli, tmp_path: Path) -> None:
    machine = (
        'device name="NVIDIA A100-SXM4-80GB" total=85899345920 used=0 gen=4/4 width=16/16\n'
        f"process gpu=0 pid=child mem={3 * GiB}\n" + swing_timeline()
    )
    r, data = watch_json(run_cli, tmp_path, machine, BURN.format(s=1.8, rc=7))
    assert r.code == 7 and r.stdout == "trained\n", r.stderr
    codes = [f["code"] for f in data["findings"]]
    assert "CD701" in codes and "CD702" in codes, (codes, r.stderr)
    tl = data["timeline"]
    assert tl["exit_code"] == 7 and tl["gpus"][0]["name"] == "NVIDIA A100-SXM4-80GB"
    utils = {g["util"] for s in tl["samples"] for g in s["gpus"]}
    assert {5, 95} <= utils
    assert any(g["tree_memory"] == 3 * GiB for s in tl["samples"] for g in s["gpus"])
    assert "CD701" in r.stderr and "GPU 0 util" in r.stderr  # the summary is on stderr


def test_e2e_trains_on_cpu(run_cli, tmp_path: Path) -> None:
    machine = 'device name="NVIDIA RTX 4090" total=25757220864 used=500000000 util=0\n'
    r, data = watch_json(run_cli, tmp_path, machine, BURN.format(s=1.2, rc=0))
    assert r.code == 0 and r.stdout == "trained\n"
    assert [f["code"] for f in data["findings"]] == ["CD700"], r.stderr


HIDDEN = 'device name="NVIDIA A100" total=85899345920 used=4294967296\nprocess gpu=0 pid=4194000 mem=4294967296\n'
LOAD_LIBCUDA = "import ctypes\nctypes.CDLL('libcuda.so.1')\n"


def test_e2e_hidden_pids_and_a_tree_without_libcuda_is_cpu_training(run_cli, tmp_path: Path) -> None:
    # NVML lists a process this PID namespace cannot see (a container without --pid=host); the command never
    # loads libcuda, so it never used a GPU: CD700, not "its GPU use is unknown"
    r, data = watch_json(run_cli, tmp_path, HIDDEN, BURN.format(s=1.2, rc=0))
    assert r.code == 0 and r.stdout == "trained\n", r.stderr
    assert [f["code"] for f in data["findings"]] == ["CD700"], r.stderr
    assert "CD700 The command never used a GPU while its CPU was busy" in r.stderr and "CD713" not in r.stderr
    procs = [p for s in data["timeline"]["samples"] for p in s["procs"]]
    assert procs and all(p["libcuda"] is False for p in procs)


def test_e2e_hidden_pids_and_a_tree_with_libcuda_stays_unknown(run_cli, tmp_path: Path) -> None:
    r, data = watch_json(run_cli, tmp_path, HIDDEN, LOAD_LIBCUDA + BURN.format(s=1.2, rc=0))
    assert r.code == 0 and r.stdout == "trained\n", r.stderr
    codes = [f["code"] for f in data["findings"]]
    assert "CD713" in codes and "CD700" not in codes, r.stderr
    assert any(p["libcuda"] for s in data["timeline"]["samples"] for p in s["procs"])


def test_e2e_copies_throttling_and_busy_gpu(run_cli, tmp_path: Path) -> None:
    machine = textwrap.dedent(
        f"""\
        device name="NVIDIA A100" total=85899345920 gen=4/4 width=16/16 used={8 * GiB}
        device name="NVIDIA A100" uuid=GPU-11111111-2222-3333-4444-555555555555 total=85899345920 util=0 used=0
        process gpu=0 pid=child mem={4 * GiB}
        process gpu=0 pid=1 mem={4 * GiB}
        timeline gpu=0 t=0 util=30 rx=12000000 tx=200000 power=400000 clocks_event=0x40
        """
    )
    r, data = watch_json(run_cli, tmp_path, machine, SLEEP.format(s=1.2, rc=0))
    codes = [f["code"] for f in data["findings"]]
    assert {"CD704", "CD705", "CD708"} <= set(codes), (codes, r.stderr)
    assert "CD701" not in codes  # the command's CPU was idle: not the input pipeline
    busy = next(f for f in data["findings"] if f["code"] == "CD708")
    cmds = [c for fx in busy["fix"] for c in fx["commands"]]
    assert any(c.startswith('eval "$(cudadoctor gpus --pick 1') for c in cmds)
    assert any("CUDA_VISIBLE_DEVICES=GPU-11111111-2222-3333-4444-555555555555" in c for c in cmds)
    g = data["timeline"]["samples"][-1]["gpus"][0]
    assert g["rx"] == 12000000 * 1024 and g["power_mw"] == 400000 and g["clocks_event"] == 0x40
    assert g["other_processes"] == 1 and g["tree_processes"] == 1


def test_e2e_gpu_bound_near_limit_and_power(run_cli, tmp_path: Path) -> None:
    machine = textwrap.dedent(
        f"""\
        device name="NVIDIA H100" total=85899345920 gen=5/5 width=16/16
        process gpu=0 pid=child mem={GiB}
        timeline gpu=0 t=0 util=97 used={GiB} clocks_event=0x0
        timeline gpu=0 t=0 pid=child mem={GiB}
        timeline gpu=0 t=0.3 used={int(79.5 * GiB)} clocks_event=0xc
        timeline gpu=0 t=0.3 pid=child mem={int(79.5 * GiB)}
        """
    )
    r, data = watch_json(run_cli, tmp_path, machine, SLEEP.format(s=1.2, rc=0))
    codes = [f["code"] for f in data["findings"]]
    assert {"CD710", "CD703", "CD706", "CD707"} <= set(codes), (codes, r.stderr)
    mem = [g["tree_memory"] for s in data["timeline"]["samples"] for g in s["gpus"]]
    assert mem[0] == GiB and mem[-1] == int(79.5 * GiB)  # the process's memory follows the script


def test_e2e_pid_mode(run_cli, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SLEEP.format(s=2.5, rc=0))
    proc = subprocess.Popen([sys.executable, str(tmp_path / "train.py")], stdout=subprocess.DEVNULL)
    try:
        out = tmp_path / "w.json"
        r = run_cli("watch", "--interval", "0.1", "--pid", str(proc.pid), "--json", str(out), machine="")
    finally:
        proc.wait(timeout=20)
    assert r.code == 0, r.stderr
    data = json.loads(out.read_text())
    assert data["timeline"]["pid"] == proc.pid and data["timeline"]["command"] is None
    assert len(data["timeline"]["samples"]) >= 4


def test_secrets_on_the_command_line_stay_out_of_the_report(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "train.py").write_text(SLEEP.format(s=0.1, rc=0))
    out = tmp_path / "w.json"
    argv = ["watch", "--json", str(out), "--", sys.executable, "train.py", "--api-key", "sk-abcdef0123456789"]
    r = run_cli(*argv, machine="")
    assert r.code == 0 and r.stdout == "trained\n"
    assert "sk-abcdef0123456789" not in out.read_text() + r.stderr
    assert json.loads(out.read_text())["timeline"]["command"][-2:] == ["--api-key", "***"]


def test_a_hung_driver_does_not_hold_the_exit_code(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "train.py").write_text(SLEEP.format(s=0.3, rc=4))
    start = time.monotonic()
    r = run_cli("watch", "--interval", "0.1", "--", sys.executable, "train.py", machine="init_sleep 60\ndevice\n")
    assert r.code == 4 and r.stdout == "trained\n"
    assert time.monotonic() - start < 30
    assert "NVML: TIMEOUT" in r.stderr


def test_usage_errors(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("watch", machine="")
    assert r.code == 2 and r.stderr.startswith("cudadoctor: nothing to watch")
    r = run_cli("watch", "--pid", "1", "--", "true", machine="")
    assert r.code == 2 and "not both" in r.stderr
    r = run_cli("watch", "--", "no-such-command-xyz", machine="")
    assert r.code == 127 and "command not found" in r.stderr


def _env(fake_libs, tmp_path: Path, machine: str = "") -> dict[str, str]:  # type: ignore[no-untyped-def]
    path = tmp_path / "machine.txt"
    path.write_text(machine)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_VISIBLE", "FAKE_NVML"))}
    env.update(PYTHONPATH=str(ROOT), **fake_machine_env(path, [fake_libs[0]]))
    return env


def test_stdin_and_output_pass_through(fake_libs, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code = "import sys; data = sys.stdin.read(); sys.stdout.write(data.upper()); sys.stderr.write('err\\n')"
    argv = [sys.executable, "-m", "cudadoctor", "watch", "--interval", "0.1", "--", sys.executable, "-c", code]
    p = subprocess.run(argv, input="hello\n", capture_output=True, text=True, env=_env(fake_libs, tmp_path), timeout=30)
    assert p.returncode == 0 and p.stdout == "HELLO\n"
    assert p.stderr.startswith("err\n") and "cudadoctor watch: the command exited with 0" in p.stderr


COUNT_SIGINT = textwrap.dedent(
    """
    import signal, sys, time
    n = 0
    def on_int(signum, frame):
        global n
        n += 1
    signal.signal(signal.SIGINT, on_int)
    print("ready", flush=True)
    end = time.time() + 10
    while n == 0 and time.time() < end:
        time.sleep(0.01)
    time.sleep(0.7)  # a second SIGINT (one the doctor forwarded) would arrive now
    print(f"interrupts {n}", flush=True)
    sys.exit(5)
    """
)


def _wait_for(stream, text: bytes, seconds: float = 20) -> bytes:  # type: ignore[no-untyped-def]
    seen = b""
    end = time.time() + seconds
    fd = stream if isinstance(stream, int) else stream.fileno()
    while text not in seen and time.time() < end:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen


def test_sigint_sent_to_the_doctor_alone_is_forwarded_once(fake_libs, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "c.py").write_text(COUNT_SIGINT)
    argv = [
        sys.executable,
        "-m",
        "cudadoctor",
        "watch",
        "--interval",
        "0.1",
        "--",
        sys.executable,
        str(tmp_path / "c.py"),
    ]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(fake_libs, tmp_path))
    try:
        assert b"ready" in _wait_for(p.stdout, b"ready")
        p.send_signal(signal.SIGINT)  # kill -INT <doctor>: SI_USER, the child did not get it
        out, err = p.communicate(timeout=20)
    finally:
        p.kill()
    assert p.returncode == 5, err
    assert b"interrupts 1" in out
    assert b"(interrupted)" in err


def test_ctrl_c_in_a_terminal_reaches_the_command_once(fake_libs, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import fcntl
    import termios

    (tmp_path / "c.py").write_text(COUNT_SIGINT)
    argv = [
        sys.executable,
        "-m",
        "cudadoctor",
        "watch",
        "--interval",
        "0.1",
        "--",
        sys.executable,
        str(tmp_path / "c.py"),
    ]
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))

    def controlling_tty() -> None:  # a new session whose terminal is the pty, as a shell would give
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    env = {**_env(fake_libs, tmp_path), "TERM": "xterm"}
    p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True,
                         preexec_fn=controlling_tty)  # fmt: skip
    os.close(slave)
    try:
        seen = _wait_for(master, b"ready")
        assert b"ready" in seen
        os.write(master, b"\x03")  # Ctrl-C: the terminal sends SIGINT to the foreground process group
        seen += _wait_for(master, b"Explain a code")
        p.wait(timeout=20)
    finally:
        p.kill()
        os.close(master)
    assert p.returncode == 5, seen.decode(errors="replace")
    assert b"interrupts 1" in seen
    assert b"\x1b[1;" in seen  # the live status line reserved the bottom row ...
    assert b"(interrupted)" in seen


def test_a_command_killed_by_sigint_ends_the_doctor_the_same_way(fake_libs, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code = "import time; print('ready', flush=True); time.sleep(10)"
    argv = [sys.executable, "-m", "cudadoctor", "watch", "--interval", "0.1", "--", sys.executable, "-c", code]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(fake_libs, tmp_path))
    try:
        assert b"ready" in _wait_for(p.stdout, b"ready")
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=20)
    finally:
        p.kill()
    # Python re-raises an unhandled KeyboardInterrupt as death by SIGINT: so does the doctor
    assert p.returncode == -signal.SIGINT, err
    assert b"KeyboardInterrupt" in err and b"cudadoctor watch: the command ended by signal 2" in err


def test_plot_without_matplotlib_is_one_usage_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "matplotlib.py").write_text("raise ImportError('no matplotlib here')\n")
    r = run_cli("watch", "--plot", "t.png", "--", "true", machine="", env={"PYTHONPATH": f"{shadow}:{ROOT}"})
    # matplotlib itself, into the interpreter that runs the doctor: not the cudadoctor[plot] extra, which
    # resolves only where cudadoctor is on the index
    install = f"{shlex.quote(sys.executable)} -m pip install matplotlib"
    want = f"cudadoctor: --plot needs matplotlib in the Python that runs cudadoctor: {install}\n"
    assert r.code == 2 and r.stderr == want
    assert not (tmp_path / "t.png").exists()
    pip = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr  # the printed command has a pip to run
    assert "matplotlib" in run_cli("watch", "--help", machine="").stdout.split("--plot")[1].split("--")[0]
    for doc in ("README.md", "docs/watch.md"):
        text = (ROOT / doc).read_text()
        assert "python -m pip install matplotlib" in text and "pip install 'cudadoctor[plot]'`)" not in text


def test_plot_without_matplotlib_or_pip_names_uv(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import importlib.util

    from cudadoctor.commands.watch import install_matplotlib

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pip" else real(name, *a))
    assert install_matplotlib() == f"uv pip install --python {shlex.quote(sys.executable)} matplotlib"


def test_plot_in_a_system_python_that_refuses_pip_says_how_cudadoctor_got_there(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import sysconfig

    from cudadoctor.commands.watch import install_matplotlib

    (tmp_path / "EXTERNALLY-MANAGED").write_text("[externally-managed]\n")  # PEP 668's marker
    monkeypatch.setattr(sys, "base_prefix", sys.prefix)  # not a venv
    monkeypatch.setattr(sysconfig, "get_path", lambda name, *a, **k: str(tmp_path))
    py = shlex.quote(sys.executable)
    assert install_matplotlib() == f"{py} -m pip install --break-system-packages matplotlib"


def test_plot_draws_the_timeline(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    mpl = pytest.importorskip("matplotlib")
    machine = f"device total=85899345920\nprocess gpu=0 pid=child mem={GiB}\n" + swing_timeline()
    (tmp_path / "train.py").write_text(SLEEP.format(s=0.8, rc=0))
    env = {"PYTHONPATH": f"{ROOT}{os.pathsep}{Path(mpl.__file__).parent.parent}", "MPLCONFIGDIR": str(tmp_path)}
    argv = ["watch", "--interval", "0.1", "--plot", str(tmp_path / "t.png"), "--", sys.executable, "train.py"]
    r = run_cli(*argv, machine=machine, env=env)
    assert r.code == 0, r.stderr
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
