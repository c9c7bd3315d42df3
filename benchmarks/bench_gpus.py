"""Wall time and peak memory of `cudadoctor gpus` against `nvitop --once` (and gpustat) on the same fake
NVML, over 1, 8 and 128 GPUs x 0 and 50 distinct processes (each holding memory on every GPU).

    pip install nvitop gpustat        # benchmark-only; not project dependencies
    python benchmarks/bench_gpus.py [--repeats 9] [--sizes 1x0,8x0,8x50,128x0,128x50] [--tools cudadoctor,nvitop]
                                    [--floors]

Runs are paired and alternate (cudadoctor, then nvitop, on the same machine file), and the figure
reported is the median of the per-pair ratios, so a load change between runs cancels out. The fake
libnvidia-ml.so.1 is built from tests/fakenvml with the system C compiler; the 50 processes are real
(`sleep`), so reading /proc is real work. Peak RSS is each child's own ru_maxrss (os.wait4).
Every tool runs from compiled bytecode, as after `pip install` (a private PYTHONPYCACHEPREFIX, filled by
the warm-up run): with PYTHONDONTWRITEBYTECODE set, a checkout would otherwise compile cudadoctor's
modules at every run while nvitop's come compiled. --floors adds what no Python CLI can go below here:
the bare interpreter, and importing click and pynvml (what `cudadoctor gpus` must import).
Goals (issue 11): <= 0.45x nvitop at 8 GPUs, <= 0.35x at 128 x 50.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakenvml.build import build  # noqa: E402


def machine_file(path: Path, gpus: int, pids: list[int]) -> None:
    lines = ["driver 580.95.05", "cuda 13000"]
    for i in range(gpus):
        used = (i % 9) << 30
        lines.append(
            f'device name="NVIDIA H100 80GB HBM3" cc=9.0 total={80 << 30} used={used} util={(i * 10) % 100} '
            f"temp={30 + i % 40} gen=5/5 width=16/16 uuid=GPU-{i:08x}-{i:04x}-4000-8000-{i:012x}"
        )
        for pid in pids:
            lines.append(f"process gpu={i} pid={pid} mem={64 << 20}")
    path.write_text("\n".join(lines) + "\n")


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    start = time.perf_counter()
    # in ROOT: `python -m cudadoctor` looks in the current directory first, so this is the checkout's doctor
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} exited {code}")
    return wall, usage.ru_maxrss / 1024  # KiB -> MiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--sizes", default="1x0,1x50,8x0,8x50,128x0,128x50")
    ap.add_argument("--tools", default="cudadoctor,nvitop,gpustat", help="which of them to run")
    ap.add_argument("--floors", action="store_true", help="also time the bare interpreter and click + pynvml")
    args = ap.parse_args()
    wanted = set(args.tools.split(","))
    tmp = Path(tempfile.mkdtemp(prefix="bench-gpus-"))
    built = build(tmp)
    if built is None:
        raise SystemExit("no C compiler: cannot build the fake NVML")
    tools = {"cudadoctor gpus": [sys.executable, "-m", "cudadoctor", "gpus"]}
    if shutil.which("nvitop") and "nvitop" in wanted:
        tools["nvitop --once"] = [sys.executable, "-m", "nvitop", "--once"]
    if shutil.which("gpustat") and "gpustat" in wanted:
        tools["gpustat"] = [sys.executable, "-m", "gpustat"]
    if args.floors:
        tools["python -c pass"] = [sys.executable, "-c", "pass"]
        tools["click+pynvml"] = [sys.executable, "-c", "import click, pynvml"]
    sleepers = [subprocess.Popen(["sleep", "3600"]) for _ in range(50)]
    print(f"fake NVML, {args.repeats} paired runs per size, {os.cpu_count()} CPUs")
    print(f"{'GPUs x procs':<13} {'tool':<16} {'median wall':>11} {'peak RSS':>9} {'ratio vs nvitop':>16}")
    try:
        for size in args.sizes.split(","):
            gpus, procs = (int(x) for x in size.split("x"))
            machine = tmp / f"machine-{size}.txt"
            machine_file(machine, gpus, [s.pid for s in sleepers[:procs]])
            env = {
                **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
                "PYTHONPYCACHEPREFIX": str(tmp / "pycache"),
                "PYTHONPATH": str(ROOT),
                "FAKE_NVML_MACHINE": str(machine),
                "LD_LIBRARY_PATH": str(built[0]),
                "COLUMNS": "80",
            }
            results: dict[str, list[tuple[float, float]]] = {name: [] for name in tools}
            for argv in tools.values():  # warm the page cache once
                run_once(argv, env)
            for _ in range(args.repeats):
                for name, argv in tools.items():
                    results[name].append(run_once(argv, env))
            for name, rows in results.items():
                ratio = ""
                if "nvitop --once" in results and name != "nvitop --once":
                    pairs = [o[0] / t[0] for o, t in zip(rows, results["nvitop --once"], strict=True)]
                    ratio = f"{statistics.median(pairs):.2f}x"
                wall = statistics.median(w for w, _ in rows)
                rss = max(r for _, r in rows)
                print(f"{size:<13} {name:<16} {wall:>9.3f} s {rss:>6.1f} MiB {ratio:>16}")
    finally:
        for s in sleepers:
            s.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
