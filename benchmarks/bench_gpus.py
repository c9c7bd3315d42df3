"""Wall time and peak memory of `cudadoctor gpus` against `nvitop --once` (and gpustat) on the same
fake 8-GPU NVML, runs alternating, in one process.

    pip install nvitop gpustat        # benchmark-only; not project dependencies
    python benchmarks/bench_gpus.py [--repeats 15]

The fake libnvidia-ml.so.1 is built from tests/fakenvml with the system C compiler. Peak RSS is each
child's own ru_maxrss (os.wait4). Targets (issue 4): wall <= 0.8x nvitop's, peak RSS below nvitop's and
<= 40 MB.
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


def machine_file(path: Path) -> None:
    lines = ["driver 580.95.05", "cuda 13000"]
    for i in range(8):
        used = (i * 9) << 30
        lines.append(
            f'device name="NVIDIA H100 80GB HBM3" cc=9.0 total={80 << 30} used={used} util={i * 10} '
            f"temp={30 + i} gen=5/5 width=16/16"
        )
        lines.append(f"process gpu={i} pid={os.getpid()} mem={used}")
    path.write_text("\n".join(lines) + "\n")


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    start = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {p.returncode}")
    return wall, usage.ru_maxrss / 1024  # KiB -> MiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-gpus-"))
    built = build(tmp)
    if built is None:
        raise SystemExit("no C compiler: cannot build the fake NVML")
    machine_file(tmp / "machine.txt")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "FAKE_NVML_MACHINE": str(tmp / "machine.txt"),
        "LD_LIBRARY_PATH": str(built[0]),
    }
    tools = {"cudadoctor gpus": [sys.executable, "-m", "cudadoctor", "gpus"]}
    if shutil.which("nvitop"):
        tools["nvitop --once"] = [sys.executable, "-m", "nvitop", "--once"]
    if shutil.which("gpustat"):
        tools["gpustat"] = [sys.executable, "-m", "gpustat"]
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in tools}
    for argv in tools.values():  # warm the page cache once
        run_once(argv, env)
    for _ in range(args.repeats):
        for name, argv in tools.items():
            results[name].append(run_once(argv, env))
    print(f"fake 8-GPU NVML, {args.repeats} alternating runs each, {os.cpu_count()} CPUs")
    print(f"{'tool':<18} {'median wall':>12} {'peak RSS (max)':>15}")
    for name, rows in results.items():
        print(f"{name:<18} {statistics.median(w for w, _ in rows):>10.3f} s {max(r for _, r in rows):>12.1f} MiB")
    if "nvitop --once" in results:
        ours = statistics.median(w for w, _ in results["cudadoctor gpus"])
        theirs = statistics.median(w for w, _ in results["nvitop --once"])
        rss_ours = max(r for _, r in results["cudadoctor gpus"])
        rss_theirs = max(r for _, r in results["nvitop --once"])
        print(f"wall ratio cudadoctor/nvitop = {ours / theirs:.2f}x (target <= 0.80x)")
        print(f"peak RSS {rss_ours:.1f} MiB vs nvitop {rss_theirs:.1f} MiB (target: below nvitop and <= 40 MB)")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
