"""What `cudadoctor watch` costs the machine it watches: the sampler's own CPU time per second of a run.

    python benchmarks/bench_watch.py [--seconds 20] [--interval 0.5] [--workers 4] [--gpus 2] [--busy]

Runs `cudadoctor watch --interval 0.5 --json … -- python workload.py`, where the workload is a main
process with N multiprocessing workers (a DataLoader's shape), on the fake NVML (tests/fakenvml) with
GPUs whose utilisation, memory and PCIe traffic follow a script, or on the real driver with --real.
Reports the sampler's CPU seconds (open + every sample: NVML, psutil over the process tree, /dev/shm)
divided by the run's wall time, as a percentage of one core. Goal (issue 17): < 2 % at 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORKLOAD = textwrap.dedent(
    """
    import multiprocessing as mp, sys, time
    def work(seconds, busy):
        end = time.time() + seconds
        while time.time() < end:
            if busy:
                sum(range(20000))
            else:
                time.sleep(0.05)
    if __name__ == "__main__":
        seconds, workers, busy = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
        ps = [mp.Process(target=work, args=(seconds, busy)) for _ in range(workers)]
        for p in ps:
            p.start()
        work(seconds, busy)
        for p in ps:
            p.join()
    """
)


def machine(gpus: int, seconds: float) -> str:
    lines = ["driver 550.54.14", "cuda 12040"]
    for i in range(gpus):
        lines.append(f'device name="NVIDIA A100-SXM4-80GB" total=85899345920 gen=4/4 width=16/16 util=0 used={i}')
        lines.append(f"process gpu={i} pid=child mem=8589934592")
        for k in range(int(seconds * 2) + 2):
            lines.append(f"timeline gpu={i} t={k / 2} util={(k * 37) % 100} rx={k * 1000} tx=100 clocks_event=0x4")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--interval", type=float, default=0.5)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--busy", action="store_true", help="workers burn CPU instead of sleeping")
    ap.add_argument("--real", action="store_true", help="use this machine's NVML, not the fake one")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        where = "this machine's NVML"
        if not args.real:
            from tests.fakenvml.build import build

            built = build(work / "fake")
            if built is None:
                sys.exit("no C compiler for the fake NVML; use --real on a GPU machine")
            (work / "machine.txt").write_text(machine(args.gpus, args.seconds))
            env.update(FAKE_NVML_MACHINE=str(work / "machine.txt"), LD_LIBRARY_PATH=str(built[0]))
            where = f"fake NVML, {args.gpus} GPUs"
        (work / "workload.py").write_text(WORKLOAD)
        out = work / "watch.json"
        argv = [sys.executable, "-m", "cudadoctor", "watch", "--interval", str(args.interval), "--json", str(out)]
        argv += ["--", sys.executable, str(work / "workload.py"), str(args.seconds), str(args.workers)]
        argv += ["1" if args.busy else "0"]
        import psutil

        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        doctor = psutil.Process(proc.pid)
        whole = 0.0
        while proc.poll() is None:  # the doctor's own CPU (not its children's), read until it exits
            try:
                t = doctor.cpu_times()
                whole = t.user + t.system
            except psutil.Error:
                break
            time.sleep(0.2)
        _, err = proc.communicate(timeout=args.seconds + 120)
        if proc.returncode != 0 or not out.exists():
            sys.exit(f"watch failed ({proc.returncode}): {err[-2000:]}")
        tl = json.loads(out.read_text())["timeline"]
    n = len(tl["samples"])
    cpu, wall = tl["sampler_cpu_seconds"], tl["duration"]
    procs = max(len(s["procs"]) for s in tl["samples"])
    print(f"watch --interval {args.interval}: {n} samples over {wall:.1f} s ({where}, {procs} processes in the tree)")
    print(f"sampler CPU  {cpu:.3f} s = {cpu / wall * 100:.2f} % of one core (goal < 2 %)")
    print(f"per sample   {cpu / max(n, 1) * 1000:.2f} ms")
    print(f"whole doctor process {whole:.2f} s CPU, including Python start-up and imports")


if __name__ == "__main__":
    main()
