"""NVML where a crash or a hang inside the driver library cannot take the doctor down.

The query runs in a child that names every NVML call before it makes it and reports the facts so far
after each GPU. A segfault in the library then becomes "crashed (SIGSEGV) in nvmlDeviceGetName" with
every GPU read before it; a call that never returns (even nvmlShutdown) is cut off and named, and the
GPUs already read are kept. `gpus` forks (cheap: the child shares what the doctor imported); `check`,
whose probes run on threads where fork is unsafe, starts a fresh interpreter.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import pickle
import select
import signal
import sys
import threading
import time
from typing import Any

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
    return base64.b64encode(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)).decode()


def _unpack(text: str) -> Any:
    return pickle.loads(base64.b64decode(text))


def _run_query(write: Any, with_processes: bool, with_binding: bool) -> None:
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

    facts = query_driver(with_processes, with_binding, trace=lambda name: write(CALL + name), progress=progress)
    progress(facts)
    system(facts)
    write(DONE)


def main(argv: list[str] | None = None) -> None:
    """The fresh-interpreter child: `python -m cudadoctor.backends.nvml_isolated [--processes] [--binding]`."""
    args = sys.argv[1:] if argv is None else argv

    def write(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    _run_query(write, "--processes" in args, "--binding" in args)


def _parse(lines: list[str]) -> tuple[DriverFacts | None, str | None, bool, bool]:
    """(facts so far, the last call named, whether it finished, whether every GPU was read)."""
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
    complete = facts is not None and facts.device_count is not None and len(facts.devices) >= facts.device_count
    return facts, call, done, complete


def _result(lines: list[str], ended: str | None) -> DriverFacts:
    """Facts from the child's lines; `ended` says how it ended when it did not finish."""
    facts, call, done, complete = _parse(lines)
    if done and facts is not None:
        return facts
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


def _signal_name(status: int) -> str:
    if os.WIFSIGNALED(status):
        try:
            return f"crashed ({signal.Signals(os.WTERMSIG(status)).name})"
        except ValueError:
            return f"crashed (signal {os.WTERMSIG(status)})"
    return f"exited with code {os.WEXITSTATUS(status)}"


def _forked(with_processes: bool, with_binding: bool, timeout: float) -> DriverFacts:
    import pynvml  # noqa: F401  (the Python module only: the library loads in the child, at nvmlInit)

    from cudadoctor.backends.child import forget_pid, remember_pid

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: query, report, and leave without running the parent's exit handlers
        code = 0
        try:
            for name in ("SIGINT", "SIGTERM", "SIGHUP"):  # the parent's handlers are not the child's
                signal.signal(getattr(signal, name), signal.SIG_DFL)
            os.close(r)

            def write(line: str) -> None:
                os.write(w, (line + "\n").encode())

            _run_query(write, with_processes, with_binding)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    remember_pid(pid)  # a signal that ends the doctor kills this child too
    os.close(w)
    buf = b""
    ended = None
    deadline = time.monotonic() + timeout
    limit = deadline
    try:
        while True:
            if limit == deadline and buf.endswith(f"{CALL}nvmlShutdown\n".encode()):
                if _parse(buf.decode(errors="replace").splitlines())[3]:
                    # every GPU is read; only nvmlShutdown is left: a short grace, not the whole bound
                    limit = min(deadline, time.monotonic() + SHUTDOWN_GRACE)
            now = time.monotonic()
            ready, _, _ = select.select([r], [], [], max(0.0, min(limit - now, 0.25)))
            if ready:
                chunk = os.read(r, 65536)
                if not chunk:
                    break
                buf += chunk
                if len(buf) > MAX_OUTPUT:
                    ended = "printed too much"
                    break
            elif time.monotonic() >= limit:
                ended = f"hung (no answer within {timeout:g} s)" if limit == deadline else "hung"
                break
    finally:
        os.close(r)
        if ended is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _, status = os.waitpid(pid, 0)
        forget_pid(pid)
    if ended is None and status != 0:
        ended = _signal_name(status)
    return _result(buf.decode(errors="replace").splitlines(), ended)


def _subprocess(with_processes: bool, with_binding: bool, timeout: float) -> DriverFacts:
    from cudadoctor.backends.child import run_child

    argv = [sys.executable, "-m", "cudadoctor.backends.nvml_isolated"]
    argv += ["--processes"] if with_processes else []
    argv += ["--binding"] if with_binding else []
    res = run_child(argv, timeout=timeout)
    ended = None
    if res.timed_out:
        ended = f"hung (no answer within {timeout:g} s)"
    elif not res.ok:
        ended = res.failure()
    return _result(res.stdout.splitlines(), ended)


def query(with_processes: bool, with_binding: bool, timeout: float) -> DriverFacts:
    """NVML facts, isolated. Without the binding there is nothing to isolate: say so at once."""
    import importlib.util

    if importlib.util.find_spec("pynvml") is None:
        return DriverFacts(binding=None, library_loaded=False, init_status="BINDING_MISSING")
    if hasattr(os, "fork") and threading.active_count() == 1:
        return _forked(with_processes, with_binding, timeout)
    if sys.platform == "win32":  # no fork, and a fresh interpreter per query is slow there: in process
        from cudadoctor.backends.nvml import query_driver

        return query_driver(with_processes, with_binding)
    return _subprocess(with_processes, with_binding, timeout)


if __name__ == "__main__":
    main()
