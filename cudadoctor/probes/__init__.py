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
    timeout: float | None = None  # --timeout: one bound for every probe instead of each one's own
    measurements: list[str] = field(default_factory=list)  # "bandwidth", "smoke": run in one child
    transfer_size: int = 256 << 20
    shared: dict[str, Any] = field(default_factory=dict)  # per-run state probes share (one child)

    @property
    def child_timeout(self) -> float:
        """A child process must end before its probe's bound, so its partial output still counts."""
        return 20.0 if self.timeout is None else max(0.5, self.timeout * 0.8)

    @property
    def measure_timeout(self) -> float:
        return 110.0 if self.timeout is None else max(0.5, self.timeout * 0.8)

    @property
    def torch_timeout(self) -> float:
        return 50.0 if self.timeout is None else max(0.5, self.timeout * 0.8)


@dataclass
class Probe:
    name: str  # the field of Facts it fills
    collect: Callable[[Context], Any]
    timeout: float
