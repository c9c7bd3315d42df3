"""Time `cudadoctor check` against `python -m torch.utils.collect_env` on this machine, in one run.

    python benchmarks/bench_check.py [--repeats 5] [--with-compile]

Runs the commands alternately (so all see the same machine state), reports the median wall time of
each and the ratios. Targets: check <= 0.8x collect_env (issue 2); `check --full --skip compile` on a
CPU-only machine <= 2x plain check (issue 11: the torch checks share one child, which imports torch
once, and the smoke test's CPU half takes about a second); the driver probe's own timing (NVML in a
child since issue 11) reported beside. --with-compile also times the whole `check --full`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, p.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--with-compile", action="store_true", help="also time check --full with its compile check")
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    check = [sys.executable, "-m", "cudadoctor", "check", "--json"]
    # torch.compile readiness (issue 13) takes its own 10-30 s on 2 cores: measured apart, not here
    full = [sys.executable, "-m", "cudadoctor", "check", "--full", "--skip", "compile", "--json"]
    whole = [sys.executable, "-m", "cudadoctor", "check", "--full", "--json"]
    collect = [sys.executable, "-m", "torch.utils.collect_env"]
    ours, theirs, fulls, wholes, driver_probe = [], [], [], [], []
    for _ in range(args.repeats):
        t, out = timed(check, env)
        ours.append(t)
        probes = {p["name"]: p["seconds"] for p in json.loads(out)["probes"]}
        driver_probe.append(probes.get("driver", float("nan")))
        theirs.append(timed(collect, env)[0])
        fulls.append(timed(full, env)[0])
        if args.with_compile:
            wholes.append(timed(whole, env)[0])
    a, b, c = statistics.median(ours), statistics.median(theirs), statistics.median(fulls)
    print(f"cudadoctor check          median {a:.3f} s over {args.repeats} runs")
    print(f"torch collect_env         median {b:.3f} s over {args.repeats} runs")
    print(f"check --full (no compile) median {c:.3f} s over {args.repeats} runs")
    print(f"ratio check/collect_env = {a / b:.2f}x (target <= 0.80x)")
    print(f"ratio check --full/check = {c / a:.2f}x (target <= 2x on a CPU-only machine)")
    print(f"driver (NVML) probe       median {statistics.median(driver_probe):.3f} s")
    if wholes:
        d = statistics.median(wholes)
        print(f"check --full (compile)    median {d:.3f} s over {args.repeats} runs ({d / a:.2f}x check)")


if __name__ == "__main__":
    main()
