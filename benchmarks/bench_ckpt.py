"""Peak memory and time of `cudadoctor ckpt inspect` on a >= 1 GB checkpoint, against torch.load itself.

    python benchmarks/bench_ckpt.py [--size 1.2GiB] [--dir /tmp] [--keep]

Writes a training-style checkpoint (many float32/bfloat16 tensors, an optimizer-sized second copy,
an epoch) once, then measures, one after the other on the same file:
- `cudadoctor ckpt inspect FILE --json` (the doctor's static read plus its torch child, meta loading);
- the static read alone (backends/ckpt.inspect_path: no torch, no unpickling);
- `torch.load(FILE, map_location="cpu", weights_only=True)` (what a user's script pays);
- `torch.load(FILE, mmap=True, weights_only=True)` (the cheapest real load).
Peak memory is the largest resident set of the process tree (the doctor and its torch child
together), sampled every 10 ms with psutil. The target (issue 15): inspect in a few hundred
MB however big the file is, i.e. a ratio to torch.load's peak far below 1.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def make(path: Path, size: int) -> None:
    import torch

    per = 16 << 20  # 16 MiB tensors, like the layers of a mid-sized model
    n = max(1, size // 2 // per)
    model = {f"module.layers.{i}.weight": torch.randn(per // 4) for i in range(n)}
    opt = {"state": {i: {"exp_avg": torch.zeros(per // 4)} for i in range(n)}, "param_groups": [{"lr": 1e-3}]}
    torch.save({"model": model, "optimizer": opt, "epoch": 3}, path)


def measure(argv: list[str]) -> tuple[float, int, int]:
    """(seconds, sampled peak RSS of the process tree, return code)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
    ps = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            tree = [ps, *ps.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.01)
    return time.perf_counter() - start, peak, proc.returncode


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def main() -> None:
    from cudadoctor.knowledge.units import format_size, parse_size

    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="1.2GiB")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    path = Path(args.dir) / "cudadoctor-bench-ckpt.pt"
    if not path.exists():
        t = time.perf_counter()
        make(path, parse_size(args.size))
        print(f"wrote {path} ({format_size(path.stat().st_size)}) in {time.perf_counter() - t:.1f} s")
    size = path.stat().st_size
    runs = {
        "cudadoctor ckpt inspect": [sys.executable, "-m", "cudadoctor", "ckpt", "inspect", str(path), "--json"],
        "static read only (the doctor, no torch)": [
            sys.executable,
            "-c",
            f"from cudadoctor.backends.ckpt import inspect_path; inspect_path({str(path)!r})",
        ],
        "torch.load(map_location='cpu')": [
            sys.executable,
            "-c",
            f"import torch; torch.load({str(path)!r}, map_location='cpu', weights_only=True)",
        ],
        "torch.load(mmap=True)": [
            sys.executable,
            "-c",
            f"import torch; torch.load({str(path)!r}, mmap=True, weights_only=True)",
        ],
        "python -c 'import torch' (floor)": [sys.executable, "-c", "import torch"],
    }
    results = {}
    print(f"checkpoint: {format_size(size)}")
    for name, argv in runs.items():
        seconds, peak, rc = measure(argv)
        results[name] = (seconds, peak)
        print(f"{name:<40} {seconds:6.2f} s  peak RSS {format_size(peak):>10}  rc={rc}")
    ours = results["cudadoctor ckpt inspect"][1]
    full = results["torch.load(map_location='cpu')"][1]
    print(f"peak memory ratio inspect/torch.load = {ours / full:.2f} (target: a few hundred MB, ratio << 1)")
    if not args.keep:
        path.unlink()


if __name__ == "__main__":
    main()
