"""What `cudadoctor ckpt` learned about a checkpoint: from its bytes (backends/ckpt/, no torch) and
from the target interpreter's torch (backends/children/ckpt_child.py). None is unknown, as everywhere."""

from __future__ import annotations

from dataclasses import dataclass, field

from cudadoctor.facts.host import SystemFacts


@dataclass
class CkptTensor:
    name: str  # dotted path inside the checkpoint ("model.fc.weight")
    dtype: str | None = None  # torch dtype name without "torch.": float32, bfloat16
    shape: list[int] | None = None
    device: str | None = None  # the location tag its storage was saved with: cpu, cuda:0


@dataclass
class Content:
    """One top-level entry of what the file holds: a state dict, an optimizer, an epoch number."""

    key: str  # "" for the whole file
    kind: str  # state dict, optimizer, scheduler, grad scaler, number, model object, …
    detail: str | None = None


@dataclass
class CkptTorch:
    """The target interpreter's torch, and what it made of the file (never with unsafe unpickling unless
    the user passed --trust)."""

    python: str | None = None
    version: str | None = None  # torch.__version__
    import_error: str | None = None
    cuda_available: bool | None = None
    device_count: int | None = None
    weights_only_default: bool | None = None  # torch >= 2.6: torch.load(path) means weights_only=True
    weights_only_ok: bool | None = None  # torch.load(weights_only=True, map_location="meta") succeeded
    weights_only_error: str | None = None
    unsafe_globals: list[str] | None = None  # torch.serialization.get_unsafe_globals_in_checkpoint
    loaded_tensor_count: int | None = None
    timed_out: bool = False
    child_error: str | None = None


@dataclass
class ModelComparison:
    """The checkpoint's state dict against `MODULE:FACTORY()`.state_dict()."""

    factory: str
    error: str | None = None  # the factory could not be imported or called
    model_keys: int | None = None
    matched: int | None = None
    missing: list[str] = field(default_factory=list)  # in the model, not in the checkpoint
    unexpected: list[str] = field(default_factory=list)  # in the checkpoint, not in the model
    mismatched: list[list[str]] = field(default_factory=list)  # [key, checkpoint shape, model shape]
    strip: list[str] = field(default_factory=list)  # prefixes that, stripped from the checkpoint, make keys match
    add: str | None = None  # a prefix the model's keys have and the checkpoint's lack (a wrapped model)


@dataclass
class FixResult:
    out: str
    format: str  # torch or safetensors
    ok: bool = False
    error: str | None = None
    bytes_written: int | None = None
    tensors: int | None = None
    stripped: list[str] = field(default_factory=list)
    state_dict_only: bool = False
    mapped_from: list[str] = field(default_factory=list)  # the devices the storages were saved on
    copied_shared: list[str] = field(default_factory=list)  # safetensors: aliases written as copies
    verified: bool | None = None  # reloaded with weights_only=True, map_location=None and compared
    verify_error: str | None = None


@dataclass
class CkptFacts:
    path: str
    format: str | None = None  # torch-zip, torch-legacy, torchscript, safetensors, dcp, hf-index, lfs-pointer,
    # html, text, pickle, empty, corrupt, unknown
    expected_format: str | None = None  # for corrupt: what it was meant to be
    detail: str | None = None
    size: int | None = None
    # what it holds
    tensor_count: int | None = None
    tensors: list[CkptTensor] | None = None
    tensors_truncated: bool = False
    tensor_bytes: int | None = None
    storage_count: int | None = None
    dtypes: dict[str, int] | None = None
    storage_devices: dict[str, int] | None = None  # location tag -> number of storages
    contents: list[Content] | None = None
    state_dict_key: str | None = None  # where the model's state dict sits ("" = the whole file)
    state_dict_keys: list[str] | None = None
    prefixes: list[str] | None = None  # wrapper prefixes every state-dict key carries, outermost first
    # the static audit of the pickle
    globals: list[str] | None = None
    unsafe_globals: list[str] | None = None
    dangerous_globals: list[str] | None = None
    audit_dynamic: bool = False
    # classes pickled as __main__.X (saved from a script) -> the .py file beside the checkpoint or in the
    # current directory that defines X; None: not looked for
    main_definitions: dict[str, str] | None = None
    # classes several .py files here define, with nothing to tell which one saved the file: {X: paths}
    main_ambiguous: dict[str, list[str]] | None = None
    # format specifics
    lfs_oid: str | None = None
    lfs_size: int | None = None
    text_title: str | None = None
    text_head: str | None = None
    safetensors_header_len: int | None = None
    header_too_large: bool = False
    safetensors_metadata: dict[str, str] | None = None
    index_file: str | None = None
    shards: list[str] | None = None
    missing_shards: list[str] | None = None
    bad_shards: list[str] | None = None
    lfs_shards: int | None = None
    # from the target interpreter
    torch: CkptTorch | None = None
    model: ModelComparison | None = None
    fix: FixResult | None = None
    trust: bool = False
    system: SystemFacts | None = None
