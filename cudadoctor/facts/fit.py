"""What `cudadoctor fit` learned: the model's size, and the GPUs' free memory now."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FitGpu:
    index: int
    name: str | None = None
    memory_total: int | None = None  # bytes
    memory_free: int | None = None


@dataclass
class ModelSize:
    path: str
    source: str  # "checkpoint" (tensors read from the file) or "config" (an architecture's formula)
    parameters: int | None = None  # None: could not be told
    exact: bool = False  # counted from every tensor, not estimated from a config
    weights_bytes: int | None = None  # in the dtypes the file holds
    dtype: str | None = None  # the dtype most of the weights are in
    architecture: str | None = None  # config.json's model_type
    why_unknown: str | None = None  # what kept the parameter count unknown
    hf_dir: str | None = None  # the Hugging Face model directory (config.json, shards) it came from


@dataclass
class FitFacts:
    model: ModelSize
    training: bool = False
    gpus: list[FitGpu] | None = None  # None: NVML could not tell
    gpu_error: str | None = None
    notes: list[str] = field(default_factory=list)
