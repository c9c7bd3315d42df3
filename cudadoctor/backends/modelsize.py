"""How many parameters a model has: counted from a checkpoint's tensors (read without running its
pickle, through backends/ckpt/), or computed from a Hugging Face config.json for the architectures
whose layer shapes the config fixes. Nothing is downloaded and no model code is imported."""

from __future__ import annotations

import json
import math
import os
import stat
from collections import Counter
from typing import Any

from cudadoctor.facts.fit import ModelSize
from cudadoctor.knowledge.memory import DTYPE_BYTES

CONFIG_LIMIT = 4 << 20  # a config.json is a few KB


class InputError(Exception):
    """A path that cannot be read as a model: one line for the user."""


def model_size(path: str) -> ModelSize:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        config = os.path.join(path, "config.json")
        weights = [n for n in os.listdir(path) if n.endswith((".safetensors", ".bin", ".pt", ".pth", ".index.json"))]
        if weights:
            size = _from_checkpoint(path)
        elif os.path.isfile(config):
            size = _from_config(config)
        else:
            raise InputError(f"{path} holds neither weights (*.safetensors, *.bin, *.pt) nor a config.json")
        if os.path.isfile(config):
            size.hf_dir = os.path.abspath(path)
        return size
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"cannot read {path}: not a regular file")
    if path.endswith(".json") and not path.endswith(".index.json"):
        size = _from_config(path)
        size.hf_dir = os.path.dirname(os.path.abspath(path))
        return size
    return _from_checkpoint(path)


# --------------------------------------------------------------------------------- from a checkpoint


def _from_checkpoint(path: str) -> ModelSize:
    from cudadoctor.backends.ckpt import InputError as CkptInputError
    from cudadoctor.backends.ckpt import inspect_path

    try:
        facts = inspect_path(path)
    except CkptInputError as exc:
        raise InputError(str(exc)) from None
    size = ModelSize(path=os.path.abspath(path), source="checkpoint")
    if not facts.tensors:
        size.why_unknown = (
            f"the file is {facts.format or 'of an unknown format'} and shows no tensors"
            if facts.format not in ("lfs-pointer",)
            else "the file is a Git LFS pointer, not the weights: run `git lfs pull` first"
        )
        return size
    prefix = f"{facts.state_dict_key}." if facts.state_dict_key else ""
    tensors = [t for t in facts.tensors if t.name.startswith(prefix)] or facts.tensors
    params = 0
    weight_bytes = 0.0
    by_dtype: Counter[str] = Counter()
    for t in tensors:
        if t.shape is None or t.dtype is None:
            size.why_unknown = f"tensor {t.name} has no known shape or dtype"
            return size
        n = math.prod(t.shape)
        params += n
        weight_bytes += n * DTYPE_BYTES.get(t.dtype, 0)
        by_dtype[t.dtype] += n
    size.parameters = params
    size.exact = not facts.tensors_truncated
    if facts.tensors_truncated:
        size.why_unknown = "the file holds more tensors than were read: the count is a lower bound"
    elif facts.state_dict_key is None:
        # which entry is the model is unknown: optimizer states, if any, are counted too
        size.exact = False
        size.why_unknown = "which entry holds the model is not known: every tensor in the file is counted"
    size.weights_bytes = int(weight_bytes) if all(d in DTYPE_BYTES for d in by_dtype) else None
    size.dtype = by_dtype.most_common(1)[0][0] if by_dtype else None
    return size


# ------------------------------------------------------------------------------------ from a config


def _read_config(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(CONFIG_LIMIT + 1)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > CONFIG_LIMIT:
        raise InputError(f"{path} is over {CONFIG_LIMIT >> 20} MiB: not a config.json")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{path} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"{path} is not a model config (a JSON object)")
    # multimodal configs keep the language model's shapes under text_config
    text = data.get("text_config")
    if isinstance(text, dict) and "hidden_size" not in data:
        data = {**text, "model_type": data.get("model_type"), "torch_dtype": data.get("torch_dtype")}
    return data


def _int(cfg: dict[str, Any], *names: str, default: int | None = None) -> int:
    for name in names:
        value = cfg.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    if default is not None:
        return default
    raise KeyError(names[0])


def _decoder(cfg: dict[str, Any], qkv_bias: bool) -> int:
    """Llama-family decoders (Llama, Mistral, Qwen2/3, Gemma, Phi-3, Mixtral): embeddings, per layer a
    grouped-query attention, a gated MLP (or E experts and a router), two RMSNorms; a final norm; an lm_head
    unless tied to the embeddings."""
    h = _int(cfg, "hidden_size")
    layers = _int(cfg, "num_hidden_layers")
    vocab = _int(cfg, "vocab_size")
    heads = _int(cfg, "num_attention_heads")
    kv = _int(cfg, "num_key_value_heads", default=heads)
    hd = _int(cfg, "head_dim", default=h // heads if heads else 0)
    experts = _int(cfg, "num_local_experts", "num_experts", default=0)
    inter = _int(cfg, "moe_intermediate_size", "intermediate_size") if experts else _int(cfg, "intermediate_size")
    attn = h * heads * hd + 2 * h * kv * hd + heads * hd * h
    if qkv_bias or cfg.get("attention_bias") is True:
        attn += heads * hd + 2 * kv * hd
    mlp = experts * 3 * h * inter + h * experts if experts else 3 * h * inter
    shared = _int(cfg, "shared_expert_intermediate_size", default=0)
    if experts and shared:
        mlp += 3 * h * shared + h  # the shared expert and its gate
    per_layer = attn + mlp + 2 * h
    # transformers' default when config.json leaves it out: tied for Gemma, untied for the others
    tied = cfg.get("tie_word_embeddings", cfg.get("model_type") in ("gemma", "gemma2")) is True
    return vocab * h + layers * per_layer + h + (0 if tied else vocab * h)


def _gpt2(cfg: dict[str, Any]) -> int:
    h = _int(cfg, "n_embd", "hidden_size")
    layers = _int(cfg, "n_layer", "num_hidden_layers")
    vocab = _int(cfg, "vocab_size")
    positions = _int(cfg, "n_positions", "max_position_embeddings")
    inner = _int(cfg, "n_inner", default=4 * h) if cfg.get("n_inner") is not None else 4 * h
    per_layer = 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + 2 * h + (h * inner + inner) + (inner * h + h)
    return vocab * h + positions * h + layers * per_layer + 2 * h


def _bert(cfg: dict[str, Any]) -> int:
    h = _int(cfg, "hidden_size")
    layers = _int(cfg, "num_hidden_layers")
    vocab = _int(cfg, "vocab_size")
    positions = _int(cfg, "max_position_embeddings")
    types = _int(cfg, "type_vocab_size", default=2)
    inter = _int(cfg, "intermediate_size")
    embeddings = vocab * h + positions * h + types * h + 2 * h
    per_layer = 4 * (h * h + h) + 2 * h + (h * inter + inter) + (inter * h + h) + 2 * h
    return embeddings + layers * per_layer + (h * h + h)  # the pooler


FORMULAS = {
    "llama": lambda c: _decoder(c, False),
    "mistral": lambda c: _decoder(c, False),
    "mixtral": lambda c: _decoder(c, False),
    "qwen2": lambda c: _decoder(c, True),
    "qwen2_moe": lambda c: _decoder(c, True),
    "qwen3": lambda c: _decoder(c, False),
    "qwen3_moe": lambda c: _decoder(c, False),
    "gemma": lambda c: _decoder(c, False),
    "gemma2": lambda c: _decoder(c, False),
    "phi3": lambda c: _decoder(c, False),
    "gpt2": _gpt2,
    "bert": _bert,
}


def _from_config(path: str) -> ModelSize:
    cfg = _read_config(path)
    arch = cfg.get("model_type") if isinstance(cfg.get("model_type"), str) else None
    size = ModelSize(path=os.path.abspath(path), source="config", architecture=arch)
    dtype = cfg.get("torch_dtype") or cfg.get("dtype")
    size.dtype = dtype if isinstance(dtype, str) and dtype in DTYPE_BYTES else None
    formula = FORMULAS.get(arch or "")
    if formula is None:
        size.why_unknown = (
            f"the shapes of a {arch} model are not computed from its config"
            if arch
            else "the config names no model_type"
        ) + "; point fit at the weights (a checkpoint, or the directory with the *.safetensors) to count them"
        return size
    try:
        size.parameters = formula(cfg)
    except (KeyError, ZeroDivisionError):
        size.why_unknown = f"the config lacks a field a {arch} model's shapes need"
        return size
    if size.dtype is not None and size.parameters is not None:
        size.weights_bytes = int(size.parameters * DTYPE_BYTES[size.dtype])
    return size
