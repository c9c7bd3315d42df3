"""`cudadoctor watch` on a real GPU: run with `pytest -m gpu` on a machine with an NVIDIA GPU; skipped elsewhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.mark.gpu
def test_real_gpu_training_is_seen_on_its_gpu(tmp_path: Path) -> None:
    probe = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.cuda.is_available())"], capture_output=True, text=True
    )
    if probe.stdout.strip() != "True":
        pytest.skip("no CUDA torch here")
    code = (
        "import torch, time\nx = torch.randn(4096, 4096, device='cuda')\nend = time.time() + 3\n"
        "while time.time() < end:\n    y = x @ x\ntorch.cuda.synchronize()\n"
    )
    out = tmp_path / "w.json"
    argv = [sys.executable, "-m", "cudadoctor", "watch", "--interval", "0.2", "--json", str(out), "--"]
    p = subprocess.run([*argv, sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert p.returncode == 0
    tl = json.loads(out.read_text())["timeline"]
    assert tl["nvml"] == "ok"
    on_gpu = [g for s in tl["samples"] for g in s["gpus"] if g["tree_processes"]]
    assert on_gpu and max(g["tree_memory"] or 0 for g in on_gpu) > 64 << 20
    assert max(g["util"] or 0 for g in on_gpu) > 50
