"""A pickle read opcode by opcode (pickletools) by a small symbolic machine, never executed.

A GLOBAL becomes a name, a REDUCE a record of "this name called with these arguments", a persistent id
(a torch storage) a record of its type, key, location and size. Nothing is imported, called or built,
so a malicious pickle is read like any other; every read is bounded (bytes, opcodes). The names a
pickle holds are audited against torch's weights_only allow-list.
"""

from __future__ import annotations

import pickletools
import re
import struct
from dataclasses import dataclass, field
from typing import Any

# Bounds: a state dict's pickle is a few MB even for a 70B model (it holds names and shapes, not data).
PICKLE_LIMIT = 256 << 20
OPCODE_LIMIT = 20_000_000

# torch's weights_only allow-list (torch._weights_only_unpickler._get_allowed_globals, torch 2.6-2.13),
# as "module.name" strings; the child asks the target torch itself when it can.
STORAGES = {
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
    **{d: s for d, s in STORAGES.values()},
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
        *(f"torch.{s}" for s in STORAGES),
        *(f"torch.cuda.{s}" for s in STORAGES if not s.startswith("Q")),
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
