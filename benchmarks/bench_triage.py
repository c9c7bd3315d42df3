"""Time of `cudadoctor triage` on a 1 MB paste, against `python -c pass` measured in the same run.

    python benchmarks/bench_triage.py [--size 1MiB] [--runs 3]

Two pastes of the given size are written to a temporary directory:
- "issue with a long log": what a 1 MB issue body is made of - the real collect_env and nvidia-smi
  of tests/triage_corpus, a training log (progress lines, losses, a warning repeated every epoch) and a
  real out-of-memory traceback at the end;
- "worst case": every real post of tests/triage_corpus/real one after the other, repeated: a paste
  where nearly every line names a GPU, a driver, a version or an error.
Each is triaged by the real command line (`python -m cudadoctor triage FILE --json`), best of --runs;
the ratio is that time over `python -c pass`. The target (issue 27): under 1 s for a 1 MB paste.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "triage_corpus"
sys.path.insert(0, str(ROOT))


def long_log(size: int) -> str:
    """A realistic 1 MB issue body: environment reports, a training log, the error at the end."""
    head = "\n\n".join(
        (CORPUS / name).read_text(encoding="utf-8")
        for name in ("collect_env_2.11_real_h100.txt", "nvidia_smi_580_real_h100.txt")
    )
    tail = (CORPUS / "real" / "cyclegan_962_oom_shared_gpu.txt").read_text(encoding="utf-8")
    lines = []
    step = 0
    while sum(len(x) + 1 for x in lines) < size - len(head) - len(tail) - 200:
        step += 1
        if step % 500 == 0:
            lines.append(
                "/usr/lib/python3.10/site-packages/torch/utils/data/dataloader.py:558: UserWarning: This "
                "DataLoader will create 16 worker processes in total."
            )
        lines.append(
            f"Epoch {step // 500:3d} | step {step:7d} | loss {1 / (1 + step % 977):.6f} | lr 3.0e-04 | "
            f"{step % 100:3d}%|{'#' * (step % 40):<40}| {step % 977}/977 [00:{step % 60:02d}<00:00]"
        )
    return f"{head}\n\n```\n" + "\n".join(lines) + f"\n```\n\n{tail}"


def worst_case(size: int) -> str:
    blob = "\n\n".join(p.read_text(encoding="utf-8") for p in sorted((CORPUS / "real").glob("*.txt")))
    return (blob * (size // len(blob) + 1))[:size]


def best(argv: list[str], runs: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child), best of `runs`: CPU time shows the cost where the
    machine is shared and wall time waits for other processes."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, check=False)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(walls), min(cpus)


def main() -> None:
    from cudadoctor.knowledge.units import format_size, parse_size

    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="1MiB")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    size = parse_size(args.size)
    base_wall, base_cpu = best([sys.executable, "-c", "pass"], args.runs)
    print(f"python -c pass: {base_wall:.3f} s wall, {base_cpu:.3f} s CPU (load average {os.getloadavg()[0]:.1f})")
    with tempfile.TemporaryDirectory() as tmp:
        for label, text in (("issue with a long log", long_log(size)), ("worst case", worst_case(size))):
            path = Path(tmp) / "paste.txt"
            path.write_text(text, encoding="utf-8")
            wall, cpu = best([sys.executable, "-m", "cudadoctor", "triage", str(path), "--json"], args.runs)
            verdict = "under 1 s" if min(wall, cpu) < 1 else "OVER 1 s"
            print(
                f"triage, {label} ({format_size(path.stat().st_size)}): {wall:.3f} s wall "
                f"({wall / base_wall:.1f}x python -c pass), {cpu:.3f} s CPU ({cpu / max(base_cpu, 1e-3):.1f}x): "
                f"{verdict}"
            )


if __name__ == "__main__":
    main()
