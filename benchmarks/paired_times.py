"""Wall and CPU time of commands run alternately on one machine, paired, so a load change cancels out.

    python benchmarks/paired_times.py --repeats 5 NAME='COMMAND' NAME='COMMAND' ...

The first command is the one measured; each other is a peer, and the figure given for it is the median of
the per-round ratios first/peer. CPU time is the child's own user + system time (os.wait4), so a tool that
waits on the GPU driver is not charged for the wait. Output goes to /dev/null: only the cost is measured.
Used on a real GPU by benchmarks/real_gpu.sh (`gpus` against `nvidia-smi` and `nvitop --once`).
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import time


def once(argv: list[str]) -> tuple[float, float, int]:
    """(wall s, CPU s, exit code) of one run."""
    start = time.perf_counter()
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(argv, stdout=null, stderr=null)
        _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, p.returncode


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("commands", nargs="+", help="NAME=COMMAND")
    args = ap.parse_args()
    named = [(c.split("=", 1)[0], shlex.split(c.split("=", 1)[1])) for c in args.commands]
    for _, argv in named:
        once(argv)  # warm: page cache, bytecode
    walls: dict[str, list[float]] = {n: [] for n, _ in named}
    cpus: dict[str, list[float]] = {n: [] for n, _ in named}
    codes: dict[str, set[int]] = {n: set() for n, _ in named}
    for _ in range(args.repeats):
        for name, argv in named:
            w, c, rc = once(argv)
            walls[name].append(w)
            cpus[name].append(c)
            codes[name].add(rc)
    first = named[0][0]
    print(f"{'command':<16} {'wall ms':>9} {'cpu ms':>9} {'wall ratio':>11} {'cpu ratio':>10}  exit")
    for name, _ in named:
        wr = statistics.median(a / b for a, b in zip(walls[first], walls[name], strict=True))
        pairs = [a / b for a, b in zip(cpus[first], cpus[name], strict=True) if b > 0]
        cr = statistics.median(pairs) if pairs else float("nan")
        print(
            f"{name:<16} {statistics.median(walls[name]) * 1000:9.0f} {statistics.median(cpus[name]) * 1000:9.0f}"
            f" {wr:10.2f}x {cr:9.2f}x  {sorted(codes[name])}"
        )
    print(f"(median of {args.repeats} alternating rounds; ratio = {first} / command, per round)")


if __name__ == "__main__":
    main()
