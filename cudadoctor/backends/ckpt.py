"""Checkpoint files as bytes: what format a file is, and what its pickle holds, WITHOUT torch and
WITHOUT unpickling.

The pickle is read opcode by opcode (pickletools) by a small symbolic machine: a GLOBAL becomes a name,
a REDUCE a record of "this name called with these arguments", a persistent id (a torch storage) a
record of its type, key, location and size. Nothing is imported, called or built, so a malicious
pickle is read like any other; every read is bounded (bytes, opcodes, depth).

Formats, as torch.serialization and safetensors write them:
- torch zip (torch >= 1.6): `<archive>/data.pkl` + `<archive>/data/<key>` records; TorchScript has
  `constants.pkl` (torch.serialization._is_torchscript_zip).
- legacy torch pickle: pickles in a row: MAGIC_NUMBER 0x1950a86a20f9469cfc6c, protocol version, sys
  info, the object, the storage keys; then raw storages (torch.serialization._legacy_save).
- safetensors: 8-byte little-endian header length N, N bytes of JSON header, data (the format's spec);
  the library refuses N > 100,000,000 with "HeaderTooLarge".
- DCP: a directory with `.metadata` (a pickle of torch.distributed.checkpoint.metadata.Metadata) and
  `*.distcp` files. HF sharded: `*.index.json` with `weight_map` {key: shard file}.
- Git LFS pointer: "version https://git-lfs.github.com/spec/v1", "oid sha256:…", "size N".
"""

from __future__ import annotations

import json
import math
import os
import pickletools
import re
import stat
import struct
import zipfile
from dataclasses import dataclass, field
from typing import Any

from cudadoctor.facts.ckpt import CkptFacts, CkptTensor, Content

# Bounds: a state dict's pickle is a few MB even for a 70B model (it holds names and shapes, not data).
PICKLE_LIMIT = 256 << 20
OPCODE_LIMIT = 20_000_000
DEPTH_LIMIT = 64
TENSOR_LIMIT = 200_000
SAFETENSORS_MAX_HEADER = 100_000_000  # safetensors' MAX_HEADER_SIZE
SNIFF = 4096

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C

# torch's weights_only allow-list (torch._weights_only_unpickler._get_allowed_globals, torch 2.6-2.13),
# as "module.name" strings; the child asks the target torch itself when it can.
_STORAGES = {
    # legacy typed storage class -> (dtype, itemsize)
    "FloatStorage": ("float32", 4),
    "DoubleStorage": ("float64", 8),
    "HalfStorage": ("float16", 2),
    "BFloat16Storage": ("bfloat16", 2),
    "LongStorage": ("int64", 8),
    "IntStorage": ("int32", 4),
    "ShortStorage": ("int16", 2),
    "CharStorage": ("int8", 1),
    "ByteStorage": ("uint8", 1),
    "BoolStorage": ("bool", 1),
    "ComplexFloatStorage": ("complex64", 8),
    "ComplexDoubleStorage": ("complex128", 16),
    "QInt8Storage": ("qint8", 1),
    "QUInt8Storage": ("quint8", 1),
    "QInt32Storage": ("qint32", 4),
    "QUInt4x2Storage": ("quint4x2", 1),
    "QUInt2x4Storage": ("quint2x4", 1),
}
_TENSOR_TYPES = ("Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte", "Bool")
ITEMSIZE = {
    **{d: s for d, s in _STORAGES.values()},
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "complex32": 4,
    "float8_e4m3fn": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2": 1,
    "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1,
    "float4_e2m1fn_x2": 1,
    "bits8": 1,
    "bits16": 2,
    "bits1x8": 1,
    "bits2x4": 1,
    "bits4x2": 1,
}
_DTYPES = set(ITEMSIZE) | {f"int{i}" for i in range(1, 8)} | {f"uint{i}" for i in range(1, 8)}
REBUILDERS = (
    "_rebuild_parameter",
    "_rebuild_parameter_with_state",
    "_rebuild_qtensor",
    "_rebuild_tensor",
    "_rebuild_tensor_v2",
    "_rebuild_tensor_v3",
    "_rebuild_sparse_tensor",
    "_rebuild_meta_tensor_no_storage",
    "_rebuild_nested_tensor",
    "_rebuild_wrapper_subclass",
    "_rebuild_device_tensor_from_numpy",
    "_rebuild_device_tensor_from_cpu_tensor",
)
SAFE_GLOBALS = frozenset(
    {
        "collections.OrderedDict",
        "collections.Counter",
        "torch.nn.parameter.Parameter",
        "torch.serialization._get_layout",
        "torch.Size",
        "torch.Tensor",
        "torch.device",
        "_codecs.encode",
        "builtins.bytearray",
        "builtins.set",
        "builtins.complex",
        # protocol-2 pickles name builtins "__builtin__"; torch's unpickler maps them (get_unsafe_globals agrees)
        "__builtin__.bytearray",
        "__builtin__.set",
        "__builtin__.complex",
        "torch._tensor._rebuild_from_type_v2",
        "torch.storage.TypedStorage",
        "torch.storage.UntypedStorage",
        *(f"torch.{d}" for d in _DTYPES),
        *(f"torch.{s}" for s in _STORAGES),
        *(f"torch.cuda.{s}" for s in _STORAGES if not s.startswith("Q")),
        *(f"{m}.{t}Tensor" for m in ("torch", "torch.cuda") for t in _TENSOR_TYPES),
        *(f"{m}.{t}Tensor" for m in ("torch.sparse", "torch.cuda.sparse") for t in _TENSOR_TYPES if t != "Bool"),
        *(f"torch.{q}" for q in ("qint8", "quint8", "qint32", "quint4x2", "quint2x4")),
        *(
            f"torch.{q}"
            for q in (
                "per_tensor_affine",
                "per_tensor_symmetric",
                "per_channel_affine",
                "per_channel_symmetric",
                "per_channel_affine_float_qparams",
            )
        ),
        *(f"torch._utils.{r}" for r in REBUILDERS),
    }
)
# Globals that run code or touch the system when called: never allow-list these, never trust the file.
DANGEROUS = re.compile(
    r"^((builtins|__builtin__)\.(eval|exec|compile|open|__import__|getattr|setattr|delattr|globals|locals|vars"
    r"|input|breakpoint)|os\.|posix\.|nt\.|subprocess\.|sys\.|shutil\.|socket\.|importlib\.|runpy\.|pty\.|ctypes\."
    r"|pickle\.|_pickle\.|marshal\.|code\.|codeop\.|webbrowser\.|urllib\.|requests\.|http\.|pdb\.|timeit\."
    r"|operator\.(attrgetter|methodcaller)|functools\.partial|torch\.(load|hub|jit\.load|ops\.)|numpy\.load"
    r"|numpy\.testing\._private\.utils\.runstring)"
)


class InputError(ValueError):
    """A one-line reason why the path cannot be inspected at all (missing, unreadable, not a checkpoint)."""


# ----------------------------------------------------------------------------------------------- pickles


@dataclass(eq=False)
class Global:
    module: str
    name: str

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass(eq=False)
class Call:
    """`func(*args)` as the pickle asks for it; never performed."""

    func: Any
    args: Any = ()
    state: Any = None
    items: dict = field(default_factory=dict)  # SETITEM(S) on the result (OrderedDict, dict subclasses)
    appended: list = field(default_factory=list)  # APPEND(S) on the result


@dataclass(eq=False)
class Persistent:
    pid: Any


class PickleError(ValueError):
    pass


class _Bounded:
    """A reader that refuses to go past `limit` bytes, so a huge length prefix cannot fill memory."""

    def __init__(self, fh: Any, limit: int) -> None:
        self.fh, self.left = fh, limit

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0 or n > self.left:
            if self.left <= 0 or (n is not None and n > self.left):
                raise PickleError("the pickle is larger than the audit reads")
            n = self.left
        data = self.fh.read(n)
        self.left -= len(data)
        return data

    def readline(self, size: int = -1) -> bytes:
        line = self.fh.readline(min(self.left, 1 << 20))
        self.left -= len(line)
        return line


@dataclass
class PickleScan:
    root: Any = None
    globals: list[str] = field(default_factory=list)
    error: str | None = None  # the pickle could not be read to its end (truncated, unknown opcode, too big)
    dynamic: bool = False  # opcodes that fetch objects the audit cannot name (EXT*)


def _hashable(x: Any) -> Any:
    try:
        hash(x)
        return x
    except TypeError:
        return repr(type(x))


def scan_pickle(fh: Any, limit: int = PICKLE_LIMIT) -> PickleScan:
    """Read one pickle from `fh` symbolically: its globals and the structure it would build."""
    out = PickleScan()
    seen: dict[str, None] = {}
    stack: list[Any] = []
    marks: list[int] = []
    memo: dict[Any, Any] = {}

    def pop_mark() -> list[Any]:
        if not marks:
            raise PickleError("MARK missing")
        at = marks.pop()
        items = stack[at:]
        del stack[at:]
        return items

    def add_global(module: Any, name: Any) -> Global:
        g = Global(str(module), str(name))
        seen.setdefault(g.dotted, None)
        return g

    def setitems(target: Any, pairs: list[Any]) -> None:
        if isinstance(target, dict):
            for k, v in zip(pairs[::2], pairs[1::2], strict=False):
                target[_hashable(k)] = v
        elif isinstance(target, Call):
            for k, v in zip(pairs[::2], pairs[1::2], strict=False):
                target.items[_hashable(k)] = v

    def extend(target: Any, values: list[Any]) -> None:
        if isinstance(target, list):
            target.extend(values)
        elif isinstance(target, Call):
            target.appended.extend(values)

    try:
        for count, (op, arg, _pos) in enumerate(pickletools.genops(_Bounded(fh, limit))):
            if count > OPCODE_LIMIT:
                raise PickleError("too many opcodes")
            name = op.name
            if name in ("PROTO", "FRAME"):
                continue
            if name == "STOP":
                out.root = stack.pop() if stack else None
                break
            if name == "MARK":
                marks.append(len(stack))
            elif name in ("NONE",):
                stack.append(None)
            elif name in ("NEWTRUE", "NEWFALSE"):
                stack.append(name == "NEWTRUE")
            elif op.arg is not None and name not in _STRUCTURAL:
                stack.append(arg)  # INT, LONG*, FLOAT, strings, bytes
            elif name == "EMPTY_DICT":
                stack.append({})
            elif name == "EMPTY_LIST":
                stack.append([])
            elif name == "EMPTY_TUPLE":
                stack.append(())
            elif name == "EMPTY_SET":
                stack.append(set())
            elif name == "TUPLE":
                stack.append(tuple(pop_mark()))
            elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
                n = int(name[-1])
                items = tuple(stack[-n:])
                del stack[-n:]
                stack.append(items)
            elif name == "LIST":
                stack.append(pop_mark())
            elif name == "DICT":
                items = pop_mark()
                d: dict = {}
                setitems(d, items)
                stack.append(d)
            elif name == "FROZENSET":
                stack.append(frozenset(_hashable(x) for x in pop_mark()))
            elif name == "APPEND":
                v = stack.pop()
                extend(stack[-1], [v])
            elif name == "APPENDS":
                items = pop_mark()
                extend(stack[-1], items)
            elif name == "SETITEM":
                v = stack.pop()
                k = stack.pop()
                setitems(stack[-1], [k, v])
            elif name == "SETITEMS":
                items = pop_mark()
                setitems(stack[-1], items)
            elif name == "ADDITEMS":
                pop_mark()
            elif name == "GLOBAL":
                module, _, attr = str(arg).partition(" ")
                stack.append(add_global(module, attr))
            elif name == "STACK_GLOBAL":
                attr = stack.pop()
                module = stack.pop()
                stack.append(add_global(module, attr))
            elif name in ("INST",):
                module, _, attr = str(arg).partition(" ")
                stack.append(Call(add_global(module, attr), tuple(pop_mark())))
            elif name == "OBJ":
                items = pop_mark()
                stack.append(Call(items[0] if items else None, tuple(items[1:])))
            elif name == "REDUCE":
                args = stack.pop()
                func = stack.pop()
                stack.append(Call(func, args))
            elif name == "NEWOBJ":
                args = stack.pop()
                cls = stack.pop()
                stack.append(Call(cls, args))
            elif name == "NEWOBJ_EX":
                kwargs = stack.pop()
                args = stack.pop()
                cls = stack.pop()
                stack.append(Call(cls, (args, kwargs)))
            elif name == "BUILD":
                state = stack.pop()
                if isinstance(stack[-1], Call):
                    stack[-1].state = state
            elif name in ("PERSID", "BINPERSID"):
                stack.append(Persistent(arg if name == "PERSID" else stack.pop()))
            elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[arg] = stack[-1]
            elif name == "MEMOIZE":
                memo[len(memo)] = stack[-1]
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                stack.append(memo.get(arg))
            elif name == "POP":
                if stack:
                    stack.pop()
            elif name == "POP_MARK":
                pop_mark()
            elif name == "DUP":
                stack.append(stack[-1])
            elif name in ("EXT1", "EXT2", "EXT4"):
                out.dynamic = True
                seen.setdefault(f"copyreg extension #{arg}", None)
                stack.append(None)
            elif name in ("NEXT_BUFFER", "READONLY_BUFFER"):
                stack.append(None)
            else:
                raise PickleError(f"unexpected opcode {name}")
        else:
            out.error = "the pickle ends before its STOP opcode (truncated)"
    except PickleError as exc:
        out.error = str(exc)
    except (ValueError, EOFError, IndexError, struct.error) as exc:
        out.error = f"unreadable pickle ({type(exc).__name__}: {str(exc)[:120]})"
    except MemoryError:
        out.error = "the pickle is larger than the audit reads"
    out.globals = list(seen)
    return out


_STRUCTURAL = {
    "GLOBAL",
    "INST",
    "PUT",
    "BINPUT",
    "LONG_BINPUT",
    "GET",
    "BINGET",
    "LONG_BINGET",
    "EXT1",
    "EXT2",
    "EXT4",
    "PERSID",
    "PROTO",
    "FRAME",
}


def audit_globals(names: list[str]) -> tuple[list[str], list[str]]:
    """(unsafe, dangerous): globals torch's weights_only unpickler refuses, and those that run code."""
    unsafe = [n for n in names if n not in SAFE_GLOBALS]
    dangerous = [n for n in unsafe if DANGEROUS.match(n) or n.startswith("copyreg extension")]
    return unsafe, dangerous


# -------------------------------------------------------------------------------- structure of a pickle


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
    if isinstance(stype, Global) and stype.name in _STORAGES:
        dtype = _STORAGES[stype.name][0]
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


# ---------------------------------------------------------------------------------------------- sniffing


def _read_head(path: str, n: int = SNIFF) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(n)


def is_lfs_pointer(head: bytes) -> bool:
    return head.startswith(b"version https://git-lfs.github.com/spec/")


def _lfs(head: bytes, facts: CkptFacts) -> None:
    text = head.decode("utf-8", "replace")
    oid = re.search(r"^oid sha256:([0-9a-f]{64})", text, re.M)
    size = re.search(r"^size (\d+)", text, re.M)
    facts.lfs_oid = oid.group(1) if oid else None
    facts.lfs_size = int(size.group(1)) if size else None


def _texty(head: bytes) -> bool:
    if not head or b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # a multi-byte character cut at the end is fine
            return False
    return True


def _html(head: bytes) -> bool:
    lowered = head[:1024].lstrip().lower()
    return lowered.startswith((b"<!doctype html", b"<html", b"<head", b"<?xml")) or b"<html" in lowered[:512]


def _title(head: bytes) -> str | None:
    m = re.search(rb"<title[^>]*>(.*?)</title>", head, re.S | re.I)
    if not m:
        return None
    return " ".join(m.group(1).decode("utf-8", "replace").split())[:120] or None


def inspect_path(path: str) -> CkptFacts:
    """Everything that can be known about `path` without torch; InputError for unusable input."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        return _inspect_dir(path)
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"cannot read {path}: not a regular file")
    facts = CkptFacts(path=os.path.abspath(path), size=st.st_size)
    try:
        head = _read_head(path)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not head:
        facts.format = "empty"
        return facts
    if is_lfs_pointer(head):
        facts.format = "lfs-pointer"
        _lfs(head, facts)
        return facts
    if head.startswith(b"PK"):
        _inspect_zip(path, facts)
        return facts
    if path.endswith(".json") or head.lstrip().startswith(b"{"):
        if _hf_index_file(path, head, facts):
            return facts
    if (len(head) >= 9 and head[8:9] == b"{") or path.endswith(".safetensors"):
        _inspect_safetensors(path, head, facts)
        if facts.format == "safetensors" or path.endswith(".safetensors"):
            return facts
    if head[:1] == b"\x80":
        _inspect_legacy(path, facts)
        return facts
    if _html(head):
        facts.format = "html"
        facts.text_title = _title(head)
        return facts
    if _texty(head):
        facts.format = "text"
        facts.text_head = head[:200].decode("utf-8", "replace").strip().splitlines()[0][:120] if head.strip() else ""
        return facts
    if head.startswith(b"\x1f\x8b"):
        facts.format = "unknown"
        facts.detail = "a gzip archive"
        return facts
    facts.format = "unknown"
    return facts


def _inspect_zip(path: str, facts: CkptFacts) -> None:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        facts.format = "corrupt"
        facts.detail = f"a zip archive that cannot be opened ({exc}): truncated or damaged"
        facts.expected_format = "torch zip"
        return
    with zf:
        names = zf.namelist()
        data_pkl = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
        if any(n.endswith("constants.pkl") for n in names):
            facts.format = "torchscript"
            facts.detail = f"{len(names)} records"
            return
        if not data_pkl:
            facts.format = "unknown"
            facts.detail = "a zip archive without data.pkl (not written by torch.save)"
            return
        facts.format = "torch-zip"
        prefix = data_pkl[0][: -len("data.pkl")]
        for info in zf.infolist():
            end = info.header_offset + info.compress_size + 30 + len(info.filename.encode()) + len(info.extra)
            if end > (facts.size or 0):
                facts.format = "corrupt"
                facts.expected_format = "torch zip"
                facts.detail = f"record {info.filename} ends past the end of the file: truncated"
                return
        try:
            with zf.open(data_pkl[0]) as fh:
                scan = scan_pickle(fh)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            facts.format = "corrupt"
            facts.expected_format = "torch zip"
            facts.detail = f"data.pkl cannot be read ({exc})"
            return
        storages = _apply_scan(scan, facts)
        if facts.format == "corrupt":
            return
        sizes = {n[len(prefix) + 5 :]: zf.getinfo(n).file_size for n in names if n.startswith(prefix + "data/")}
        facts.tensor_bytes = sum(sizes.values()) if sizes else facts.tensor_bytes
        missing = [k for k in storages if k not in sizes]
        if missing:
            facts.format = "corrupt"
            facts.expected_format = "torch zip"
            facts.detail = f"{len(missing)} storage record(s) missing from the archive (data/{missing[0]})"


def _apply_scan(scan: PickleScan, facts: CkptFacts) -> dict:
    facts.globals = scan.globals
    facts.unsafe_globals, facts.dangerous_globals = audit_globals(scan.globals)
    facts.audit_dynamic = scan.dynamic
    if scan.error:
        facts.format = "corrupt"
        facts.expected_format = facts.expected_format or "torch zip"
        facts.detail = f"the pickle cannot be read: {scan.error}"
        return {}
    return structure(scan.root, facts)


def _inspect_legacy(path: str, facts: CkptFacts) -> None:
    with open(path, "rb") as fh:
        magic = scan_pickle(fh, limit=1 << 16)
        if magic.error or magic.root != LEGACY_MAGIC:
            fh.seek(0)
            scan = scan_pickle(fh)
            facts.format = "pickle"
            facts.detail = "a plain pickle, not written by torch.save"
            _apply_scan(scan, facts)
            if scan.error:
                facts.expected_format = "pickle"
            return
        facts.format = "torch-legacy"
        for _ in range(2):  # protocol version, sys_info
            part = scan_pickle(fh, limit=1 << 16)
            if part.error:
                facts.format = "corrupt"
                facts.expected_format = "torch legacy"
                facts.detail = f"the header cannot be read: {part.error}"
                return
        scan = scan_pickle(fh)
        storages = _apply_scan(scan, facts)
        if facts.format == "corrupt":
            facts.expected_format = "torch legacy"
            return
        keys = scan_pickle(fh, limit=64 << 20)
        if keys.error:
            facts.format = "corrupt"
            facts.expected_format = "torch legacy"
            facts.detail = "the storage list after the object cannot be read: truncated"
            return
        data_start = fh.tell()
    # each storage follows as an 8-byte element count and its bytes
    need = sum(8 + (n or 0) * ITEMSIZE.get(d or "", 1) for d, n, _ in storages.values())
    if facts.size is not None and data_start + need > facts.size:
        facts.format = "corrupt"
        facts.expected_format = "torch legacy"
        facts.detail = f"the storages need {need} bytes after the header but the file has {facts.size - data_start}"


def _inspect_safetensors(path: str, head: bytes, facts: CkptFacts) -> None:
    size = facts.size or 0
    if len(head) < 8:
        facts.format = "corrupt"
        facts.expected_format = "safetensors"
        facts.detail = "shorter than the 8-byte header length"
        return
    (n,) = struct.unpack("<Q", head[:8])
    facts.safetensors_header_len = n
    if n > SAFETENSORS_MAX_HEADER:
        facts.format = "corrupt"
        facts.expected_format = "safetensors"
        facts.header_too_large = True
        facts.detail = f"the header length field says {n} bytes (safetensors: HeaderTooLarge)"
        return
    if 8 + n > size:
        facts.format = "corrupt"
        facts.expected_format = "safetensors"
        facts.detail = f"the header needs {8 + n} bytes but the file has {size}: truncated"
        return
    with open(path, "rb") as fh:
        fh.seek(8)
        raw = fh.read(n)
    try:
        header = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        facts.format = "corrupt"
        facts.expected_format = "safetensors"
        facts.detail = f"the JSON header is invalid ({str(exc)[:80]})"
        return
    if not isinstance(header, dict):
        facts.format = "corrupt"
        facts.expected_format = "safetensors"
        facts.detail = "the JSON header is not an object"
        return
    facts.format = "safetensors"
    meta = header.pop("__metadata__", None)
    facts.safetensors_metadata = {str(k): str(v)[:200] for k, v in meta.items()} if isinstance(meta, dict) else None
    tensors = []
    end = 0
    total = 0
    for name, info in header.items():
        if not isinstance(info, dict):
            continue
        offsets = info.get("data_offsets") or [0, 0]
        shape = info.get("shape")
        dtype = _ST_DTYPES.get(str(info.get("dtype")), str(info.get("dtype")).lower())
        tensors.append(
            CkptTensor(name=name, dtype=dtype, shape=shape if isinstance(shape, list) else None, device=None)
        )
        if isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets):
            end = max(end, offsets[1])
            total += offsets[1] - offsets[0]
    facts.tensors = tensors
    facts.tensor_count = len(tensors)
    facts.tensor_bytes = total
    facts.storage_count = len(tensors)
    facts.dtypes = {}
    for t in tensors:
        facts.dtypes[t.dtype or "unknown"] = facts.dtypes.get(t.dtype or "unknown", 0) + 1
    facts.storage_devices = {}
    facts.globals = []
    facts.unsafe_globals = []
    facts.dangerous_globals = []
    facts.contents = [Content(key="", kind="state dict", detail=None)]
    facts.state_dict_key = ""
    facts.state_dict_keys = [t.name for t in tensors]
    facts.prefixes = detect_prefixes(facts.state_dict_keys)
    if 8 + n + end > size:
        facts.format = "corrupt"
        facts.expected_format = "safetensors"
        facts.detail = f"the header describes {8 + n + end} bytes but the file has {size}: truncated"


_ST_DTYPES = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U8": "uint8",
    "U16": "uint16",
    "U32": "uint32",
    "U64": "uint64",
    "BOOL": "bool",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "C64": "complex64",
}


def _hf_index_file(path: str, head: bytes, facts: CkptFacts) -> bool:
    if not path.endswith(".index.json"):
        return False
    try:
        if (facts.size or 0) > 64 << 20:
            return False
        with open(path, "rb") as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict) or not isinstance(data.get("weight_map"), dict):
        return False
    _hf_index(path, data, facts)
    return True


def _hf_index(index_path: str, data: dict, facts: CkptFacts) -> None:
    facts.format = "hf-index"
    facts.index_file = os.path.abspath(index_path)
    base = os.path.dirname(os.path.abspath(index_path))
    weight_map = {str(k): str(v) for k, v in data["weight_map"].items()}
    shards = sorted(set(weight_map.values()))
    facts.shards = shards
    facts.missing_shards = [s for s in shards if not os.path.isfile(os.path.join(base, s))]
    total = (data.get("metadata") or {}).get("total_size") if isinstance(data.get("metadata"), dict) else None
    facts.tensor_bytes = total if isinstance(total, int) and total > 0 else None
    present = [os.path.join(base, s) for s in shards if s not in facts.missing_shards]
    facts.size = sum(os.path.getsize(p) for p in present) + (facts.size or 0)
    # per-shard problems (an LFS pointer for a shard, a truncated shard)
    tensors: list[CkptTensor] = []
    bad: list[str] = []
    for s in shards:
        if s in facts.missing_shards:
            continue
        try:
            shard = inspect_path(os.path.join(base, s))
        except InputError:
            bad.append(f"{s}: unreadable")
            continue
        if shard.format not in ("safetensors", "torch-zip", "torch-legacy"):
            why = "a Git LFS pointer" if shard.format == "lfs-pointer" else (shard.detail or shard.format)
            bad.append(f"{s}: {why}")
            if shard.format == "lfs-pointer":
                facts.lfs_shards = (facts.lfs_shards or 0) + 1
        else:
            tensors.extend(shard.tensors or [])
            if facts.tensor_bytes is None or not isinstance(total, int) or total <= 0:
                facts.tensor_bytes = (facts.tensor_bytes or 0) + (shard.tensor_bytes or 0)
            for name in shard.unsafe_globals or []:
                if name not in (facts.unsafe_globals or []):
                    facts.unsafe_globals = [*(facts.unsafe_globals or []), name]
            for dev, n in (shard.storage_devices or {}).items():
                facts.storage_devices = facts.storage_devices or {}
                facts.storage_devices[dev] = facts.storage_devices.get(dev, 0) + n
    facts.bad_shards = bad
    if facts.unsafe_globals is None and not bad and not facts.missing_shards:
        facts.unsafe_globals = []
        facts.dangerous_globals = []
    elif facts.unsafe_globals is not None:
        facts.dangerous_globals = audit_globals(facts.unsafe_globals)[1]
    by_name = {t.name: t for t in tensors}
    facts.tensors = [by_name.get(k) or CkptTensor(name=k, dtype=None, shape=None, device=None) for k in weight_map]
    facts.tensor_count = len(weight_map)
    facts.dtypes = {}
    for t in facts.tensors:
        facts.dtypes[t.dtype or "unknown"] = facts.dtypes.get(t.dtype or "unknown", 0) + 1
    facts.contents = [Content(key="", kind="state dict", detail=f"{len(shards)} shards")]
    facts.state_dict_key = ""
    facts.state_dict_keys = list(weight_map)
    facts.prefixes = detect_prefixes(facts.state_dict_keys)


def _inspect_dir(path: str) -> CkptFacts:
    facts = CkptFacts(path=os.path.abspath(path))
    try:
        names = os.listdir(path)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if ".metadata" in names:
        facts.format = "dcp"
        files = [n for n in names if n.endswith(".distcp")]
        facts.shards = sorted(files)
        facts.size = sum(os.path.getsize(os.path.join(path, n)) for n in [*files, ".metadata"])
        try:
            with open(os.path.join(path, ".metadata"), "rb") as fh:
                scan = scan_pickle(fh)
        except OSError as exc:
            raise InputError(f"cannot read {path}/.metadata: {exc.strerror or exc}") from None
        facts.globals = scan.globals
        if scan.error:
            facts.format = "corrupt"
            facts.expected_format = "dcp"
            facts.detail = f".metadata cannot be read: {scan.error}"
            return facts
        _dcp_tensors(scan.root, facts)
        return facts
    indexes = sorted(n for n in names if n.endswith(".index.json"))
    if indexes:
        # prefer safetensors when both are there, as transformers does
        pick = next((n for n in indexes if "safetensors" in n), indexes[0])
        index_path = os.path.join(path, pick)
        try:
            with open(index_path, "rb") as fh:
                data = json.loads(fh.read(64 << 20))
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read {index_path}: {exc}") from None
        if isinstance(data, dict) and isinstance(data.get("weight_map"), dict):
            _hf_index(index_path, data, facts)
            return facts
    singles = [
        n
        for n in ("model.safetensors", "pytorch_model.bin", "model.pt", "model.pth", "checkpoint.pt")
        if os.path.isfile(os.path.join(path, n))
    ]
    if singles:
        inner = inspect_path(os.path.join(path, singles[0]))
        return inner
    raise InputError(f"{path} is a directory without a checkpoint (no .metadata, *.index.json or model file)")


def _dcp_tensors(root: Any, facts: CkptFacts) -> None:
    state = root.state if isinstance(root, Call) else None
    sdm = _items(state.get("state_dict_metadata")) if isinstance(state, dict) else None
    if sdm is None:
        return
    tensors = []
    for fqn, meta in sdm.items():
        ms = meta.state if isinstance(meta, Call) and isinstance(meta.state, dict) else {}
        props = ms.get("properties")
        ps = props.state if isinstance(props, Call) else None
        first = ps.get("dtype") if isinstance(ps, dict) else (ps[0] if isinstance(ps, tuple) and ps else None)
        dtype = first.name if isinstance(first, Global) else None
        size = _size(ms.get("size"))
        shape = list(size) if isinstance(size, (list, tuple)) else None
        if shape is None and "size" not in ms:
            continue  # a BytesStorageMetadata: not a tensor
        tensors.append(CkptTensor(name=str(fqn), dtype=dtype, shape=shape, device=None))
    facts.tensors = tensors
    facts.tensor_count = len(tensors)
    facts.dtypes = {}
    total = 0
    for t in tensors:
        facts.dtypes[t.dtype or "unknown"] = facts.dtypes.get(t.dtype or "unknown", 0) + 1
        if t.shape is not None and t.dtype in ITEMSIZE:
            total += (_numel(t.shape) or 0) * ITEMSIZE[t.dtype]
    facts.tensor_bytes = total
    heads = sorted({t.name.split(".", 1)[0] for t in tensors})
    facts.contents = [Content(key=h, kind="dcp entry", detail=None) for h in heads]
    if "model" in heads:
        facts.state_dict_key = "model"
    elif len(heads) > 1 or not tensors:
        facts.state_dict_key = None
    else:
        facts.state_dict_key = ""
    facts.state_dict_keys = state_dict_keys(facts)
    facts.prefixes = detect_prefixes(facts.state_dict_keys)


# ----------------------------------------------------------------------- classes pickled from __main__

MAIN_SCAN_FILES = 200  # .py files read per directory
MAIN_SCAN_BYTES = 1 << 20  # of each


def locate_main_definitions(names: list[str], dirs: list[str]) -> dict[str, str]:
    """Where the classes a pickle names as `__main__.X` are defined: {X: path of the .py file}.

    torch.save(model) run from a script pickles the script's classes as `__main__.X`; loading needs X
    importable again. The script usually sits beside the checkpoint or in the current directory: each
    directory's *.py files (bounded in number and size) are searched for a top-level `class X` or
    `def X`, first directory first. Text only: nothing is imported or run."""
    wanted = [n.partition(".")[2] for n in names if n.startswith("__main__.") and n.count(".") == 1]
    found: dict[str, str] = {}
    seen: set[str] = set()
    for d in dirs:
        d = os.path.abspath(d)
        if d in seen:
            continue
        seen.add(d)
        try:
            files = sorted(n for n in os.listdir(d) if n.endswith(".py") and n[:-3].isidentifier())
        except OSError:
            continue
        for n in files[:MAIN_SCAN_FILES]:
            missing = [w for w in wanted if w not in found]
            if not missing:
                return found
            try:
                with open(os.path.join(d, n), encoding="utf-8", errors="replace") as fh:
                    text = fh.read(MAIN_SCAN_BYTES)
            except OSError:
                continue
            for w in missing:
                if re.search(rf"^(?:class|def)\s+{re.escape(w)}\b", text, re.MULTILINE):
                    found[w] = os.path.join(d, n)
    return found


# ---------------------------------------------------------------------------------- the torch child

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ckpt_child.py")
CHILD_MARK = "CUDADOCTOR_CKPT "


def _request(facts: CkptFacts, action: str, **extra: Any) -> dict:
    static = None
    if facts.state_dict_keys is not None and facts.tensors is not None:
        head = f"{facts.state_dict_key}." if facts.state_dict_key else ""
        static = {t.name[len(head) :]: t.shape for t in facts.tensors if t.name.startswith(head)}
    return {
        "action": action,
        "path": facts.path,
        "format": facts.format,
        "trust": facts.trust,
        "state_dict_key": facts.state_dict_key,
        "static_keys": static,
        "prefixes": facts.prefixes or [],
        "index_file": facts.index_file,
        "shards": facts.shards,
        "main_definitions": facts.main_definitions or {},
        "cwd": os.getcwd(),
        **extra,
    }


def run_child_request(python: str, request: dict, timeout: float) -> tuple[dict | None, str | None, bool]:
    """(the child's answer, why there is none, timed out)."""
    from cudadoctor.backends.child import run_child

    res = run_child([python, CHILD], timeout=timeout, stdin=json.dumps(request))
    payloads = [ln[len(CHILD_MARK) :] for ln in res.stdout.splitlines() if ln.startswith(CHILD_MARK)]
    if payloads:
        try:
            return json.loads(payloads[-1]), None, res.timed_out
        except ValueError as exc:
            return None, f"unreadable output from the checkpoint child: {exc}", res.timed_out
    if res.timed_out:
        return None, f"the checkpoint child did not finish within {timeout:g} s", True
    last = res.stderr.strip().splitlines()[-1:] if res.stderr.strip() else []
    return None, res.error or (last[0][:300] if last else f"exit code {res.returncode}"), False
