"""What the measurement child measured: copy bandwidth and the training smoke test."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Transfer:
    """One copy measurement: median of several timed repeats after a warm-up."""

    device: int  # CUDA ordinal
    direction: str  # h2d | d2h
    memory: str  # pinned | pageable
    gbps: float | None = None  # median, GB/s (10^9 bytes)
    samples: list[float] = field(default_factory=list)
    size: int = 0  # bytes per copy
    error: str | None = None


@dataclass
class BandwidthFacts:
    skipped: str | None = None  # why nothing was measured (no usable GPU, …)
    transfers: list[Transfer] = field(default_factory=list)
    device_names: dict[str, str] = field(default_factory=dict)  # CUDA ordinal -> name
    error: str | None = None
    timed_out: bool = False


@dataclass
class SmokeStep:
    device: str  # cpu | cuda:0
    model: str  # mlp | cnn
    losses: list[float] = field(default_factory=list)
    steps_per_s: float | None = None
    error: str | None = None


@dataclass
class SmokeFacts:
    gpu_skipped: str | None = None  # why the GPU half did not run
    steps: list[SmokeStep] = field(default_factory=list)
    max_loss_difference: float | None = None  # CPU vs GPU, same seed and weights, TF32 off
    amp_dtype: str | None = None  # bfloat16 | float16
    amp_finite: bool | None = None
    amp_error: str | None = None
    dataloader_ok: bool | None = None
    dataloader_error: str | None = None
    checkpoint_ok: bool | None = None
    checkpoint_error: str | None = None
    error: str | None = None
    timed_out: bool = False
