"""NVML where a crash or a hang inside the driver library cannot take the doctor down.

The query runs in a child that names every NVML call before it makes it and reports the facts so far
after each GPU. A segfault in the library then becomes "crashed (SIGSEGV) in nvmlDeviceGetName" with
every GPU read before it; a call that never returns (even nvmlShutdown) is cut off and named, and the
GPUs already read are kept. `gpus` forks (cheap: the child shares what the doctor imported); `check`,
whose probes run on threads where fork is unsafe, starts a fresh interpreter.

`cudadoctor gpus` forks first thing (prefetch, from __main__), before click and the command are even
imported: the child imports pynvml and queries while the parent imports and parses, and the command
takes the answer over. So this module imports next to nothing at its top.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cudadoctor.facts.nvml import DriverFacts

CALL = "CUDADOCTOR_NVML_CALL "  # the call about to be made
SYSTEM = "CUDADOCTOR_NVML_SYSTEM "  # the driver facts without the devices, as they stand
DEVICE = "CUDADOCTOR_NVML_DEVICE "  # one GPU, once it is read: the output grows linearly with the GPUs
DONE = "CUDADOCTOR_NVML_DONE"
MAX_OUTPUT = 16 << 20
SHUTDOWN_GRACE = 1.0  # every GPU is read and only nvmlShutdown is left: wait this long, not the bound


def _pack(obj: Any) -> str:
    # The child is the doctor's own code in the same interpreter: its reports travel as pickles (a
    # generic JSON round trip of 128 GPUs x 50 processes took over a second). Never user data.
    import base64
    import pickle

    return base64.b64encode(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)).decode()


def _unpack(text: str) -> Any:
    import base64
    import pickle

    return pickle.loads(base64.b64decode(text))


STALL_SHARE = 0.5  # of the bound: how long one GPU's calls may take before the GPU counts as hung


def _watchdog(stall: float) -> None:
    """(Re)arm SIGALRM: unless the next GPU is read within `stall` seconds, the kernel ends this child
    (SIGALRM's default action; a Python handler could not run while a driver call blocks). The parent
    reads that as "hung" in the call under way and has time left to read the GPUs after it."""
    import signal

    if stall > 0 and hasattr(signal, "setitimer"):
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.setitimer(signal.ITIMER_REAL, stall)


def _run_query(
    write: Any, with_processes: bool, with_binding: bool, trace: Any = None, first: int = 0, stall: float = 0.0
) -> None:
    """Query and report through `write`; `trace` is told each call's name first (default: a CALL line);
    the GPUs before `first` are not read; each GPU (from the count on) must be read within `stall`."""
    import dataclasses

    from cudadoctor.backends.nvml import query_driver

    sent = 0

    def system(facts: DriverFacts) -> None:
        write(SYSTEM + _pack(dataclasses.replace(facts, devices=[])))

    def progress(facts: DriverFacts) -> None:
        nonlocal sent
        if sent == 0:
            system(facts)
        for dev in facts.devices[sent:]:
            write(DEVICE + _pack(dev))
        sent = len(facts.devices)
        _watchdog(stall)

    if trace is None:
        trace = lambda name: write(CALL + name)  # noqa: E731
    facts = query_driver(with_processes, with_binding, trace=trace, progress=progress, first=first)
    progress(facts)
    system(facts)
    write(DONE)


def main(argv: list[str] | None = None) -> None:
    """The fresh-interpreter child: `python -m cudadoctor.backends.nvml_isolated [--processes] [--binding]
    [--from N]`."""
    args = sys.argv[1:] if argv is None else argv
    first = int(args[args.index("--from") + 1]) if "--from" in args else 0
    stall = float(args[args.index("--stall") + 1]) if "--stall" in args else 0.0

    def write(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    _run_query(write, "--processes" in args, "--binding" in args, first=first, stall=stall)


def _parse(lines: list[str], first: int = 0) -> tuple[DriverFacts | None, str | None, bool, bool]:
    """(facts so far, the last call named, whether it finished, whether every GPU from `first` was read)."""
    import dataclasses

    from cudadoctor.facts.nvml import DriverFacts

    system: Any = None
    devices: list = []
    call = None
    done = False
    for line in lines:
        try:
            if line.startswith(CALL):
                call = line[len(CALL) :].strip()
            elif line.startswith(DEVICE):
                devices.append(_unpack(line[len(DEVICE) :]))
            elif line.startswith(SYSTEM):
                system = _unpack(line[len(SYSTEM) :])
            elif line.strip() == DONE:
                done = True
        except Exception:  # a line cut short by a crash: what came before still counts
            continue
    facts = dataclasses.replace(system, devices=devices) if isinstance(system, DriverFacts) else None
    complete = facts is not None and facts.device_count is not None and first + len(facts.devices) >= facts.device_count
    return facts, call, done, complete


def _result(lines: list[str], ended: str | None, last_call: str | None = None, first: int = 0) -> DriverFacts:
    """Facts from the child's lines; `ended` says how it ended when it did not finish; `last_call`, the
    call it was in as the forked child left it in shared memory (else the last CALL line)."""
    from cudadoctor.facts.nvml import DriverFacts

    facts, call, done, complete = _parse(lines, first)
    if done and facts is not None:
        return facts
    call = last_call or call
    where = f" in {call}" if call else ""
    failure = f"{ended or 'stopped'}{where}"
    if facts is None:  # nothing was read: NVML itself could not start
        # not NVML's own TIMEOUT: that is an answer from the driver, this is a child that never answered
        status = "HUNG" if failure.startswith("hung") else "CRASHED"
        return DriverFacts(
            binding=None, library_loaded=True, init_status=status, init_message=failure, query_failure=failure
        )
    facts.query_failure = failure if not (complete and call == "nvmlShutdown") else f"{failure} (after every GPU)"
    return facts


def _signal_name(status: int, stall: float = 0.0) -> str:
    import signal

    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == getattr(signal, "SIGALRM", None) and stall:
        return f"hung (no answer within {stall:g} s)"  # its own watchdog (_watchdog)
    if os.WIFSIGNALED(status):
        try:
            return f"crashed ({signal.Signals(os.WTERMSIG(status)).name})"
        except ValueError:
            return f"crashed (signal {os.WTERMSIG(status)})"
    return f"exited with code {os.WEXITSTATUS(status)}"


class _Started:
    """A query under way in a forked child."""

    __slots__ = ("fd", "first", "pid", "shared", "stall", "started", "with_binding", "with_processes")

    def __init__(
        self,
        pid: int,
        fd: int,
        started: float,
        with_processes: bool,
        with_binding: bool,
        shared: Any,
        first: int = 0,
        stall: float = 0.0,
    ) -> None:
        self.pid, self.fd = pid, fd  # fd: the read end of the child's pipe
        self.started = started  # time.monotonic() at the fork: --timeout bounds the query from there
        self.with_processes, self.with_binding = with_processes, with_binding
        self.shared = shared  # the mmap where the child names the call under way
        self.first = first  # the first GPU it reads (those before were read by an earlier child)
        self.stall = stall  # how long one GPU may take (its watchdog)


_PREFETCHED: _Started | None = None


def _die_with_parent(parent: int) -> None:
    """Linux: the kernel kills this child when the doctor ends, however it ends (a usage error before the
    command took the prefetched query over, a signal, os._exit), so a hung NVML call never outlives it."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the doctor ended before prctl took effect
        os._exit(1)


CALL_ROOM = 256  # bytes of shared memory for the name of the call under way


def _start(with_processes: bool, with_binding: bool, first: int = 0, stall: float = 0.0) -> _Started:
    import mmap

    r, w = os.pipe()
    # The child names each call in shared memory, not on the pipe: a write and a wake-up of the parent
    # per call would be ~25 a GPU. Only nvmlShutdown is also announced on the pipe (see _collect).
    shared = mmap.mmap(-1, CALL_ROOM)
    parent = os.getpid()
    started = time.monotonic()
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        shared.close()
        raise
    if pid == 0:  # the child: query, report, and leave without running the parent's exit handlers
        code = 0
        try:
            import _signal

            for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGALRM"):  # the parent's handlers are not the child's
                _signal.signal(getattr(_signal, name), _signal.SIG_DFL)
            os.close(r)
            _die_with_parent(parent)

            def write(line: str) -> None:
                os.write(w, (line + "\n").encode())

            def trace(name: str) -> None:
                data = (name + "\n").encode()[:CALL_ROOM]
                shared[: len(data)] = data
                if name == "nvmlShutdown":
                    write(CALL + name)

            _run_query(write, with_processes, with_binding, trace, first, stall)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    if not sys.platform.startswith("linux") or "cudadoctor.backends.child" in sys.modules:
        from cudadoctor.backends.child import remember_pid

        remember_pid(pid)  # a signal that ends the doctor kills this child too (Linux: _die_with_parent)
    return _Started(pid, r, started, with_processes, with_binding, shared, first, stall)


def _forget(pid: int) -> None:
    child = sys.modules.get("cudadoctor.backends.child")
    if child is not None:
        child.forget_pid(pid)


def _all_read(chunks: list[bytes], first: int = 0) -> bool:
    """Whether the child reported every GPU from `first` on, as the SYSTEM line counts them."""
    lines = b"".join(chunks).decode(errors="replace").splitlines()
    devices = sum(1 for ln in lines if ln.startswith(DEVICE))
    system = next((ln for ln in reversed(lines) if ln.startswith(SYSTEM)), None)
    try:
        count = _unpack(system[len(SYSTEM) :]).device_count if system else None
    except Exception:
        return False
    return count is not None and first + devices >= count


def _collect(job: _Started, timeout: float) -> DriverFacts:
    import select

    r, pid = job.fd, job.pid
    chunks: list[bytes] = []  # joined once at the end (bytes += bytes copies everything each time)
    size = 0
    tail = b""
    ended = None
    deadline = job.started + timeout
    limit = deadline
    shutdown = f"{CALL}nvmlShutdown\n".encode()
    try:
        while True:
            if limit == deadline and tail == shutdown and _all_read(chunks, job.first):
                # every GPU is read; only nvmlShutdown is left: a short grace, not the whole bound
                limit = min(deadline, time.monotonic() + SHUTDOWN_GRACE)
            now = time.monotonic()
            ready, _, _ = select.select([r], [], [], max(0.0, min(limit - now, 0.25)))
            if ready:
                chunk = os.read(r, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                tail = (tail + chunk)[-len(shutdown) :]
                if size > MAX_OUTPUT:
                    ended = "printed too much"
                    break
            elif time.monotonic() >= limit:
                ended = f"hung (no answer within {timeout:g} s)" if limit == deadline else "hung"
                break
    finally:
        os.close(r)
        if ended is not None:
            _kill(pid)
        status = _wait(pid)
        if status is None and ended is None:  # the pipe closed but the child goes on: end it
            _kill(pid)
            status = _wait(pid)
        if status is not None:
            _forget(pid)
    if status is None:
        ended = ended or "did not exit"
    elif ended is None and status != 0:
        ended = _signal_name(status, job.stall)
    last_call = job.shared[:].split(b"\n", 1)[0].decode(errors="replace") or None
    job.shared.close()
    facts = _result(b"".join(chunks).decode(errors="replace").splitlines(), ended, last_call, job.first)
    if status is None:  # still there after SIGKILL: worth knowing, a GPU whose driver call never returns
        stuck = "; the process could not be stopped (stuck in the driver)"
        facts.query_failure = (facts.query_failure or "") + stuck
        if facts.init_status == "HUNG" and facts.init_message:
            facts.init_message += stuck
    return facts


KILL_GRACE = 2.0  # seconds a killed child gets to go


def _wait(pid: int) -> int | None:
    """The child's exit status; None when it is still there after `grace` seconds. SIGKILL takes effect
    only when a call in the kernel returns, and a hung GPU's driver call may never: the doctor then goes
    on without it (init reaps it when it finally ends)."""
    deadline = time.monotonic() + KILL_GRACE
    delay = 0.0005  # a child that has just closed its pipe is usually gone within a millisecond
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        time.sleep(min(delay, left))
        delay = min(delay * 2, 0.05)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, 9)  # SIGKILL
    except OSError:
        pass


def _discard(job: _Started) -> None:
    os.close(job.fd)
    _kill(job.pid)
    if _wait(job.pid) is not None:
        _forget(job.pid)
    job.shared.close()


def prefetch(with_processes: bool, timeout: float = 15.0) -> None:
    """Start the query `cudadoctor gpus` is about to make, before its command line is parsed: the doctor's
    imports then overlap with the child's. query() takes it over when its arguments agree; when the
    command never asks (a usage error), the child dies with the doctor (_die_with_parent)."""
    global _PREFETCHED
    if _PREFETCHED is None and hasattr(os, "fork") and sys.platform.startswith("linux"):
        # what both sides need is imported once, before the fork (dataclasses pulls in inspect and re)
        import cudadoctor.facts.nvml  # noqa: F401

        try:
            _PREFETCHED = _start(with_processes, False, stall=timeout * STALL_SHARE)
        except OSError:  # no fork now (a process limit): the command queries the usual way
            _PREFETCHED = None


def _forked(
    with_processes: bool, with_binding: bool, timeout: float, first: int = 0, stall: float = 0.0
) -> DriverFacts:
    import pynvml  # noqa: F401  (the Python module only, shared by every fork: `gpus --watch` forks often)

    return _collect(_start(with_processes, with_binding, first, stall), timeout)


def _subprocess(
    with_processes: bool, with_binding: bool, timeout: float, first: int = 0, stall: float = 0.0
) -> DriverFacts:
    import signal

    from cudadoctor.backends.child import run_child

    argv = [sys.executable, "-m", "cudadoctor.backends.nvml_isolated"]
    argv += ["--processes"] if with_processes else []
    argv += ["--binding"] if with_binding else []
    argv += ["--from", str(first)] if first else []
    argv += ["--stall", f"{stall:g}"] if stall else []
    res = run_child(argv, timeout=timeout)
    ended = None
    if res.timed_out:
        ended = f"hung (no answer within {timeout:g} s)"
    elif stall and res.returncode == -getattr(signal, "SIGALRM", 0):  # its own watchdog (_watchdog)
        ended = f"hung (no answer within {stall:g} s)"
    elif not res.ok:
        ended = res.failure()
    return _result(res.stdout.splitlines(), ended, first=first)


def _sick_gpu(facts: DriverFacts) -> int | None:
    """The GPU the query crashed or hung in, when it did so inside one GPU's calls (the GPUs before it
    were read, the count is known, and it was not nvmlShutdown after every GPU)."""
    failure = facts.query_failure
    if facts.init_status != "ok" or facts.device_count is None or not failure or "(after every GPU)" in failure:
        return None
    if not failure.startswith(("crashed", "hung")) or len(facts.devices) >= facts.device_count:
        return None
    return len(facts.devices)


def _past_sick_gpus(facts: DriverFacts, query_from: Any, end: float) -> DriverFacts:
    """One sick GPU never hides the healthy ones: a GPU whose query crashed or hung is kept as a device
    with error CRASHED or HUNG and the call named, and a fresh child reads the GPUs after it, until `end`
    (time.monotonic(), the one bound of the whole query). A hung GPU is cut at half the bound by its
    child's watchdog, so there is time left for the others; what is unread at the end is counted."""
    from cudadoctor.facts.nvml import NvmlDevice

    failures: list[str] = []
    while (sick := _sick_gpu(facts)) is not None:
        failure = facts.query_failure or ""
        state = "HUNG" if failure.startswith("hung") else "CRASHED"
        facts.devices.append(NvmlDevice(index=sick, error=state, failure=failure))
        failures.append(f"{failure} on GPU {sick}")
        facts.query_failure = None
        left = end - time.monotonic()
        if sick + 1 >= (facts.device_count or 0):
            break
        if left <= 0:
            facts.query_failure = f"no time left to read GPU {sick + 1} and after"
            break
        rest = query_from(sick + 1, left)
        if rest.init_status != "ok" or rest.device_count != facts.device_count:  # a different machine now
            facts.query_failure = rest.query_failure or rest.init_message or f"NVML {rest.init_status}"
            break
        facts.devices += rest.devices
        facts.query_errors.update(rest.query_errors)
        facts.missing_functions += [f for f in rest.missing_functions if f not in facts.missing_functions]
        facts.query_failure = rest.query_failure
    if failures:
        facts.query_failure = "; ".join(failures + ([facts.query_failure] if facts.query_failure else []))
    return facts


def query(with_processes: bool, with_binding: bool, timeout: float) -> DriverFacts:
    """NVML facts, isolated. Without the binding there is nothing to isolate: say so at once."""
    global _PREFETCHED
    job, _PREFETCHED = _PREFETCHED, None
    if job is not None:
        if (job.with_processes, job.with_binding, job.stall) == (with_processes, with_binding, timeout * STALL_SHARE):
            # without the binding, the child says BINDING_MISSING
            facts = _collect(job, timeout)
            return _past_sick_gpus(
                facts, _rest(_forked, with_processes, with_binding, job.stall), job.started + timeout
            )
        _discard(job)
    import importlib.util
    import threading

    from cudadoctor.facts.nvml import DriverFacts

    if importlib.util.find_spec("pynvml") is None:
        return DriverFacts(binding=None, library_loaded=False, init_status="BINDING_MISSING")
    end = time.monotonic() + timeout
    stall = timeout * STALL_SHARE
    if hasattr(os, "fork") and threading.active_count() == 1:
        run = _forked
    elif sys.platform == "win32":  # no fork, and a fresh interpreter per query is slow there: in process
        from cudadoctor.backends.nvml import query_driver

        return query_driver(with_processes, with_binding)
    else:
        run = _subprocess
    facts = run(with_processes, with_binding, timeout, 0, stall)
    return _past_sick_gpus(facts, _rest(run, with_processes, with_binding, stall), end)


def _rest(run: Any, with_processes: bool, with_binding: bool, stall: float) -> Any:
    """The query of the GPUs from an index on, within what is left of the bound: (first, left) -> facts."""
    return lambda first, left: run(with_processes, with_binding, left, first, min(stall, left))


if __name__ == "__main__":
    main()
