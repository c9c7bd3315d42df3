"""`nvcc --version` (or `-V`): the CUDA toolkit's compiler, which is not what a pip or conda torch
runs on ("Cuda compilation tools, release 12.1, V12.1.105")."""

from __future__ import annotations

import re

from cudadoctor.backends.paste.model import Partial
from cudadoctor.backends.paste.text import where

_RELEASE = re.compile(r"Cuda compilation tools, release (\d+\.\d+), V(\d+\.\d+[.\d]*)")


def detect(all_lines: list[str]) -> bool:
    return any(_RELEASE.search(line) for line in all_lines)


def parse(all_lines: list[str]) -> Partial:
    p = Partial("nvcc --version")
    for n, line in enumerate(all_lines):
        m = _RELEASE.search(line)
        if m:
            p.set("nvcc_version", m.group(1), where(n, line))
            break
    return p
