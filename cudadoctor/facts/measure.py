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
class PeerTransfer:
    """A GPU-to-GPU copy (P2P over NVLink or PCIe, or through the host where P2P is off)."""

    src: int  # CUDA ordinals
    dst: int
    gbps: float | None = None  # median, GB/s (10^9 bytes)
    size: int = 0
    error: str | None = None


@dataclass
class BandwidthFacts:
    skipped: str | None = None  # why nothing was measured (no usable GPU, …)
    transfers: list[Transfer] = field(default_factory=list)
    device_names: dict[str, str] = field(default_factory=dict)  # CUDA ordinal -> name
    # with two or more GPUs: can_device_access_peer[i][j] (None: one GPU, or not measured) and copy rates
    p2p_access: list[list[bool]] | None = None
    p2p: list[PeerTransfer] = field(default_factory=list)
    error: str | None = None
    timed_out: bool = False

    def incomplete(self) -> str | None:
        return "the measurement child did not finish in time" if self.timed_out else None


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

    def incomplete(self) -> str | None:
        return "the measurement child did not finish in time" if self.timed_out else None
