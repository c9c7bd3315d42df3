"""The one guarded NVML call every NVML reader goes through (backends/nvml.py for a snapshot,
backends/sampler.py for `watch`), shaped after nvitop's `nvmlQuery` (XuehaiPan/nvitop,
nvitop/api/libnvml.py): the function is looked up by name in the binding, called, and an NVML error
becomes a value instead of an exception. What an error then means is the caller's policy:

- `RecordFacts` (a snapshot): the error is named in the facts, on the GPU it concerns or for the
  system, and a GPU that fell off the bus stops its own query (`DeviceLost`);
- `SkipAfterError` (a watch, asking again every interval): a query the GPU does not support, or a
  function the driver lacks, is not asked again; a lost GPU reads as unknown from then on.

A function the binding or the driver lacks (no attribute, FUNCTION_NOT_FOUND, a library mismatch) is
`missing` under either policy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from cudadoctor.facts.nvml import LOST_ERRORS, DriverFacts, NvmlDevice

# system queries whose NOT_SUPPORTED is a failure, not a feature this driver lacks
MUST_ANSWER = frozenset({"nvmlDeviceGetCount"})


def error_names(nv: Any) -> dict[int, str]:
    """NVML return codes -> their names without the NVML_ERROR_ prefix, as the binding defines them."""
    return {getattr(nv, n): n[len("NVML_ERROR_") :] for n in dir(nv) if n.startswith("NVML_ERROR_")}


def text(value: Any) -> str:
    # nvidia-ml-py >= 11.515.48 returns str; the old pynvml fork returned bytes.
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


class Policy(Protocol):
    """What a failed call means to one caller. `at` is where the call was made: the caller's own key
    (a device record, a GPU index), handed back as it was given."""

    def asks(self, fn_name: str, at: Any) -> bool:
        """Whether to call at all (False: the call answers None without reaching NVML)."""
        ...

    def missing(self, fn_name: str, at: Any) -> None:
        """The binding or the driver lacks the function."""
        ...

    def failed(self, fn_name: str, at: Any, error: str) -> None:
        """NVML answered the error named `error`; may raise to stop the caller's query."""
        ...

    def broken(self, fn_name: str, at: Any, exc: Exception) -> None:
        """The call raised something that is not an NVML error; may raise it on."""
        ...

    def mark(self) -> object:
        """What `answered` needs to forget the errors of newer versions of a function an older one answers."""
        ...

    def answered(self, mark: object) -> None: ...

    def try_older(self, fn_name: str, at: Any) -> bool:
        """After `fn_name` gave nothing: whether its older version is worth a call."""
        ...


class DeviceLost(Exception):
    """The GPU a snapshot was reading fell off the bus or needs a reset (`RecordFacts`): its query stops."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class RecordFacts:
    """A snapshot's policy: every error becomes a fact. `at` is (the NvmlDevice being read or None for a
    system query, the key its errors are filed under in the device's `unsupported`)."""

    def __init__(self, facts: DriverFacts) -> None:
        self.facts = facts

    def asks(self, fn_name: str, at: Any) -> bool:
        return True

    def missing(self, fn_name: str, at: Any) -> None:
        if fn_name not in self.facts.missing_functions:
            self.facts.missing_functions.append(fn_name)

    def failed(self, fn_name: str, at: Any, error: str) -> None:
        device: NvmlDevice | None
        device, what = at if at is not None else (None, "")
        if device is None:
            if error != "NOT_SUPPORTED" or fn_name in MUST_ANSWER:
                self.facts.query_errors[fn_name] = error
        elif error in LOST_ERRORS:
            raise DeviceLost(error) from None
        else:
            device.unsupported[what or fn_name] = error

    def broken(self, fn_name: str, at: Any, exc: Exception) -> None:
        raise exc  # not NVML's answer: the isolated query (nvml_isolated.py) reports the crash

    def mark(self) -> object:
        return len(self.facts.missing_functions), dict(self.facts.query_errors)

    def answered(self, mark: object) -> None:
        # an older fallback answered: the newer one is not worth reporting as missing or failed
        missing_before, errors_before = mark  # type: ignore[misc]
        del self.facts.missing_functions[missing_before:]
        self.facts.query_errors = errors_before

    def try_older(self, fn_name: str, at: Any) -> bool:
        return True


# errors that will not change between samples: the query is not asked of that GPU again
SKIPPED_ERRORS = ("NOT_SUPPORTED", "FUNCTION_NOT_FOUND", "NO_PERMISSION", "ARGUMENT_VERSION_MISMATCH")
GONE_ERRORS = ("GPU_IS_LOST", "RESET_REQUIRED", "GPU_NOT_FOUND", "UNINITIALIZED")


class SkipAfterError:
    """A watch's policy: no fact is kept, but what cannot answer is not asked again. `at` is the GPU's
    index (-1 for a system query)."""

    def __init__(self) -> None:
        self.skip: set[tuple[int, str]] = set()  # (device, function) not worth asking again
        self.gone: set[int] = set()

    def asks(self, fn_name: str, at: Any) -> bool:
        return (at, fn_name) not in self.skip and at not in self.gone

    def missing(self, fn_name: str, at: Any) -> None:
        self.skip.add((at, fn_name))

    def failed(self, fn_name: str, at: Any, error: str) -> None:
        if error in SKIPPED_ERRORS:
            self.skip.add((at, fn_name))
        elif error in GONE_ERRORS and at >= 0:
            self.gone.add(at)

    def broken(self, fn_name: str, at: Any, exc: Exception) -> None:
        self.skip.add((at, fn_name))  # a ctypes surprise: this query is unknown, now and later

    def mark(self) -> object:
        return None

    def answered(self, mark: object) -> None:
        pass  # the newer version stays skipped: the next sample goes straight to the one that answers

    def try_older(self, fn_name: str, at: Any) -> bool:
        return (at, fn_name) in self.skip


class Guard:
    """NVML calls by function name, each through `policy`. `resolve` finds the function (default: the
    binding's attribute); `trace` is told each call's name first, so a crash or hang inside it can be named."""

    def __init__(
        self,
        nv: Any,
        policy: Policy,
        trace: Callable[[str], None] | None = None,
        resolve: Callable[[str], Callable[..., Any] | None] | None = None,
    ) -> None:
        self.nv = nv
        self.policy = policy
        self.names = error_names(nv)
        self.trace = trace
        self.resolve = resolve or (lambda name: getattr(nv, name, None))
        self.mismatch: Any = getattr(nv, "NVMLLibraryMismatchError", ())

    def call(self, fn_name: str, *args: Any, at: Any = None) -> Any:
        """The function's answer, or None when NVML gave none (what that means: the policy's)."""
        if not self.policy.asks(fn_name, at):
            return None
        fn = self.resolve(fn_name)
        if fn is None:
            self.policy.missing(fn_name, at)
            return None
        if self.trace is not None:
            self.trace(fn_name)
        try:
            return fn(*args)
        except UnicodeDecodeError as exc:  # the binding decodes strictly; a name the driver filled with
            return exc.object.decode(errors="replace")  # other bytes is still that GPU's name
        except self.nv.NVMLError as exc:
            name = self.names.get(exc.value, f"CODE_{exc.value}")
            if name == "FUNCTION_NOT_FOUND":
                self.policy.missing(fn_name, at)
            else:
                self.policy.failed(fn_name, at, name)
            return None
        except self.mismatch:  # the binding's struct version is newer than the driver's function
            self.policy.missing(fn_name, at)
            return None
        except Exception as exc:
            self.policy.broken(fn_name, at, exc)
            return None

    def first(self, names: Iterable[str], *args: Any, at: Any = None) -> Any:
        """The newest of several versioned functions (`_v3`, `_v2`, ...) that answers."""
        mark = self.policy.mark()
        for name in names:
            value = self.call(name, *args, at=at)
            if value is not None:
                self.policy.answered(mark)
                return value
            if not self.policy.try_older(name, at):
                return None
        return None
