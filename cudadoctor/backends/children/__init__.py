"""The scripts that run alone in the TARGET interpreter (torch, measure, compile, ckpt, fleet, the torch
session), and `_cudadoctor_child`, the stdlib-only module they share. Each is run by path with this
folder first on sys.path, so none imports cudadoctor: the target interpreter may not have it, and may be
an older Python (pyproject's ruff per-file-ignores)."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def script(name: str) -> Path:
    """The path of the child script `name` ("torch_child.py"), to run as `python PATH`."""
    return HERE / name
