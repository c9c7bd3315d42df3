"""Probes collect facts. They never print and never decide what a fact means."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Context:
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    python: str = sys.executable  # the interpreter whose torch is diagnosed
    child_timeout: float = 20.0


@dataclass
class Probe:
    name: str  # the field of Facts it fills
    collect: Callable[[Context], Any]
    timeout: float
