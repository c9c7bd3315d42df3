"""What a symbolically read pickle would build: its tensors, storages, contents and state dict."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from cudadoctor.backends.ckpt.pickles import ITEMSIZE, STORAGES, Call, Global, Persistent
from cudadoctor.facts.ckpt import CkptFacts, CkptTensor, Content

DEPTH_LIMIT = 64
TENSOR_LIMIT = 200_000


def _numel(shape: Any) -> int | None:
    if not isinstance(shape, (tuple, list)) or not all(isinstance(x, int) for x in shape):
        return None
    return math.prod(shape)


def _size(x: Any) -> Any:
    # torch.Size(...) pickles as a REDUCE of torch.Size on a tuple
    if isinstance(x, Call) and isinstance(x.func, Global) and x.func.dotted == "torch.Size" and x.args:
        return x.args[0]
    return x


def _storage(p: Any) -> tuple[str | None, str | None, str | None, int | None]:
    """(dtype, key, location, numel) of a persistent storage id."""
    pid = p.pid if isinstance(p, Persistent) else None
    if not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage":
        return None, None, None, None
    stype = pid[1]
    dtype = None
    if isinstance(stype, Global) and stype.name in STORAGES:
        dtype = STORAGES[stype.name][0]
    location = pid[3] if isinstance(pid[3], str) else None
    return dtype, str(pid[2]), location, pid[4] if isinstance(pid[4], int) else None


def tensor_of(x: Any) -> dict | None:
    """A tensor's dtype, shape, device and storage key when `x` is a torch rebuild call."""
    if not isinstance(x, Call) or not isinstance(x.func, Global):
        return None
    f = x.func.dotted
    args = x.args if isinstance(x.args, tuple) else ()
    if f in ("torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state") and args:
        return tensor_of(args[0])
    if f == "torch._tensor._rebuild_from_type_v2" and len(args) > 2 and isinstance(args[2], tuple) and args[2]:
        return tensor_of(args[2][0])
    if f == "torch._utils._rebuild_device_tensor_from_cpu_tensor" and args:
        inner = tensor_of(args[0])
        if inner is not None and len(args) > 2 and isinstance(args[2], str):
            inner["device"] = args[2]
        return inner
    if f in ("torch._utils._rebuild_tensor", "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor_v3"):
        if len(args) < 3:
            return None
        sdtype, key, location, numel = _storage(args[0])
        dtype = sdtype
        if f.endswith("_v3") and len(args) > 6 and isinstance(args[6], Global):
            dtype = args[6].name  # its storage is untyped: numel counts bytes
        return {
            "dtype": dtype,
            "shape": _size(args[2]),
            "device": location,
            "storage": key,
            "storage_numel": numel,
            "storage_dtype": sdtype,
        }
    if f == "torch._utils._rebuild_qtensor" and len(args) > 2:
        sdtype, key, location, numel = _storage(args[0])
        return {
            "dtype": sdtype,
            "shape": _size(args[2]),
            "device": location,
            "storage": key,
            "storage_numel": numel,
            "storage_dtype": sdtype,
        }
    if f == "torch._utils._rebuild_meta_tensor_no_storage" and len(args) > 1:
        dtype = args[0].name if isinstance(args[0], Global) else None
        return {"dtype": dtype, "shape": _size(args[1]), "device": "meta", "storage": None, "storage_numel": None}
    if f.startswith("torch._utils._rebuild_"):
        return {"dtype": None, "shape": None, "device": None, "storage": None, "storage_numel": None}
    return None


def _items(x: Any) -> dict | None:
    if isinstance(x, dict):
        return x
    if isinstance(x, Call) and isinstance(x.func, Global) and x.func.dotted in ("collections.OrderedDict",):
        return x.items
    if isinstance(x, Call) and x.items and not tensor_of(x):
        return x.items  # a dict subclass
    return None


def _module_state(x: Any) -> dict | None:
    """The state of a pickled nn.Module (torch.save(model)): its _parameters/_buffers/_modules."""
    if isinstance(x, Call) and isinstance(x.state, dict) and "_parameters" in x.state and "_modules" in x.state:
        return x.state
    return None


@dataclass
class Walk:
    tensors: list[CkptTensor] = field(default_factory=list)
    storages: dict[str, tuple[str | None, int | None, str | None]] = field(default_factory=dict)
    truncated: bool = False


def _child(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _walk(x: Any, path: str, out: Walk, depth: int, seen: set[int]) -> None:
    if depth > DEPTH_LIMIT or len(out.tensors) >= TENSOR_LIMIT:
        out.truncated = True
        return
    t = tensor_of(x)
    if t is not None:
        shape = _size(t["shape"])
        shape = list(shape) if isinstance(shape, (tuple, list)) and all(isinstance(s, int) for s in shape) else None
        out.tensors.append(CkptTensor(name=path, dtype=t["dtype"], shape=shape, device=t["device"]))
        if t["storage"] is not None:
            out.storages[t["storage"]] = (t.get("storage_dtype"), t["storage_numel"], t["device"])
        return
    if id(x) in seen:
        return
    seen.add(id(x))
    module = _module_state(x)
    if module is not None:
        for group in ("_parameters", "_buffers"):
            for k, v in (_items(module.get(group)) or {}).items():
                if v is not None:
                    _walk(v, _child(path, k), out, depth + 1, seen)
        for k, v in (_items(module.get("_modules")) or {}).items():
            if v is not None:
                _walk(v, _child(path, k), out, depth + 1, seen)
        return
    items = _items(x)
    if items is not None:
        for k, v in items.items():
            _walk(v, _child(path, k), out, depth + 1, seen)
        return
    if isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            _walk(v, _child(path, i), out, depth + 1, seen)
        return
    if isinstance(x, Call):
        # any other object (an EMA helper, a config): its attributes and items may hold tensors too
        state = x.state
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], dict):
            state = {**(state[0] if isinstance(state[0], dict) else {}), **state[1]}  # (dict, slots)
        if isinstance(state, dict):
            for k, v in state.items():
                _walk(v, _child(path, k), out, depth + 1, seen)
        for i, v in enumerate(x.appended):
            _walk(v, _child(path, i), out, depth + 1, seen)


def _classify(key: str, value: Any) -> str:
    """What a top-level entry of a training checkpoint is."""
    items = _items(value)
    lowered = key.lower()
    if _module_state(value) is not None:
        return "model object"
    if items is not None:
        keys = {str(k) for k in items}
        if {"state", "param_groups"} <= keys:
            return "optimizer"
        if "scale" in keys and "growth_factor" in keys:
            return "grad scaler"
        if "last_epoch" in keys or "_step_count" in keys or "sched" in lowered:
            return "scheduler"
        values = [v for k, v in items.items() if k != "_metadata"]
        if values and all(tensor_of(v) for v in values):
            return "state dict"
        if "ema" in lowered:
            return "ema"
        return "dict"
    if tensor_of(value) is not None:
        return "tensor"
    if isinstance(value, bool):
        return "flag"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, Call) and isinstance(value.func, Global):
        return "object"
    return "other"


def _describe(value: Any, kind: str) -> str | None:
    if kind == "number" or kind == "flag":
        return repr(value)
    if kind == "text":
        return repr(value[:40])
    return None


def structure(root: Any, facts: CkptFacts) -> dict[str, tuple[str | None, int | None, str | None]]:
    """Fill tensors, storages, contents and the main state dict from a scanned pickle's root; returns the
    storages (key -> dtype, numel, location)."""
    walk = Walk()
    _walk(root, "", walk, 0, set())
    facts.tensors = walk.tensors
    facts.tensors_truncated = walk.truncated
    facts.tensor_count = len(walk.tensors)
    _storage_totals(facts, walk.storages)
    top = _items(root)
    module = _module_state(root)
    if module is not None:
        facts.contents = [Content(key="", kind="model object", detail=_callee(root))]
        facts.state_dict_key = ""
    elif top is not None:
        contents = []
        for k, v in top.items():
            if k == "_metadata":
                continue
            kind = _classify(str(k), v)
            contents.append(Content(key=str(k), kind=kind, detail=_describe(v, kind) or _callee(v)))
        facts.contents = contents
        sd = [c for c in contents if c.kind == "tensor"]
        if sd and len(sd) == len(contents):
            facts.state_dict_key = ""  # a plain state dict
            facts.contents = [Content(key="", kind="state dict", detail=None)]
        else:
            best = None
            for c in contents:
                if c.kind in ("state dict", "model object"):
                    n = sum(1 for t in walk.tensors if t.name.startswith(c.key + "."))
                    preferred = c.key.lower() in ("model", "state_dict", "model_state_dict", "model_state", "net")
                    rank = (preferred, n)
                    if best is None or rank > best[0]:
                        best = (rank, c.key)
            facts.state_dict_key = best[1] if best else None
    elif tensor_of(root) is not None:
        facts.contents = [Content(key="", kind="tensor", detail=None)]
    facts.state_dict_keys = state_dict_keys(facts)
    facts.prefixes = detect_prefixes(facts.state_dict_keys)
    return walk.storages


def _callee(v: Any) -> str | None:
    if isinstance(v, Call) and isinstance(v.func, Global) and v.func.dotted != "collections.OrderedDict":
        return v.func.dotted
    return None


def state_dict_keys(facts: CkptFacts) -> list[str] | None:
    if facts.state_dict_key is None or facts.tensors is None:
        return None
    if facts.state_dict_key == "":
        return [t.name for t in facts.tensors]
    head = facts.state_dict_key + "."
    return [t.name[len(head) :] for t in facts.tensors if t.name.startswith(head)]


WRAPPER_PREFIXES = ("module.", "_orig_mod.")


def detect_prefixes(keys: list[str] | None) -> list[str] | None:
    """The wrapper prefixes every key carries, outermost first: ["_orig_mod.", "module."]."""
    if not keys:
        return None if keys is None else []
    found: list[str] = []
    rest = list(keys)
    while True:
        for p in WRAPPER_PREFIXES:
            if all(k.startswith(p) for k in rest):
                found.append(p)
                rest = [k[len(p) :] for k in rest]
                break
        else:
            return found


def _storage_totals(facts: CkptFacts, storages: dict[str, tuple[str | None, int | None, str | None]]) -> None:
    dtypes: dict[str, int] = {}
    for t in facts.tensors or []:
        key = t.dtype or "unknown"
        dtypes[key] = dtypes.get(key, 0) + 1
    facts.dtypes = dtypes
    devices: dict[str, int] = {}
    total = 0
    known = True
    for dtype, numel, location in storages.values():
        devices[location or "unknown"] = devices.get(location or "unknown", 0) + 1
        size = ITEMSIZE.get(dtype) if dtype is not None else 1  # untyped storages count bytes
        if numel is None or size is None:
            known = False
        else:
            total += numel * size
    facts.storage_count = len(storages)
    facts.storage_devices = devices
    if facts.tensor_bytes is None:
        facts.tensor_bytes = total if known else None
