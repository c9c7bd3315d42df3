"""Builds the fake libnvidia-ml.so.1 (and libcuda.so.1) with the system C compiler.

Used by the tests and the benchmarks. Returns None where no compiler exists, so callers skip.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent


def compiler() -> str | None:
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def build(outdir: Path) -> tuple[Path, Path] | None:
    """(dir with libnvidia-ml.so.1, dir with libcuda.so.1); separate so either can be left out."""
    cc = compiler()
    if cc is None:
        return None
    nvml_dir, cuda_dir = outdir / "nvml", outdir / "cuda"
    for d, src, soname in (
        (nvml_dir, "fake_nvml.c", "libnvidia-ml.so.1"),
        (cuda_dir, "fake_cuda.c", "libcuda.so.1"),
    ):
        d.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                cc,
                "-shared",
                "-fPIC",
                "-O1",
                "-Wall",
                "-o",
                str(d / soname),
                f"-Wl,-soname,{soname}",
                str(HERE / src),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
    return nvml_dir, cuda_dir
