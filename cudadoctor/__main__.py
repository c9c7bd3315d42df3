"""The console entry point (`cudadoctor`, `python -m cudadoctor`).

Signals are handled before anything heavy is imported, so even Ctrl-C in the first milliseconds is a
plain exit 130 with no traceback; SIGTERM is 143 and SIGHUP 129. Every child process the doctor started
(and what they started: each runs in its own process group) is killed first.
"""

from __future__ import annotations

# _signal, not signal: the Python module builds enums at import, long enough for a Ctrl-C to land in it
import _signal
import os
import sys


def _on_signal(signum: int, frame: object) -> None:
    # the module may be half-imported when the signal lands: nothing here may raise
    kill_all = getattr(sys.modules.get("cudadoctor.backends.child"), "kill_all", None)
    try:
        if kill_all is not None:
            kill_all()
    finally:
        os._exit(128 + signum)


def install_signal_handlers() -> None:
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(_signal, name, None)
        if sig is not None:
            _signal.signal(sig, _on_signal)


def _prefetch_gpus(args: list[str]) -> None:
    """`cudadoctor gpus`: start its NVML query now, in a child, so that it runs while click and the command
    are imported and parsed (backends/nvml_isolated.py). A wrong guess costs nothing but the child: the
    command then discards it and queries again."""
    if args[:1] != ["gpus"] or any(a in ("-h", "--help") or a.startswith("--watch") for a in args):
        return
    pick = any(a == "--pick" or a.startswith("--pick=") for a in args)
    from cudadoctor.backends.nvml_isolated import prefetch

    prefetch(with_processes=not pick or "--json" in args, timeout=_timeout_guess(args))  # --pick: no processes


def _timeout_guess(args: list[str]) -> float:
    """gpus --timeout, as far as the words say before click parses them (a wrong guess: see above)."""
    for i, a in enumerate(args):
        value = a[len("--timeout=") :] if a.startswith("--timeout=") else args[i + 1] if a == "--timeout" else None
        if value is not None:
            try:
                return float(value)
            except ValueError:
                return 15.0
    return 15.0


# set by main(): the process is the doctor's own, so a command may end it without the interpreter's
# teardown (commands/gpus.py); a caller of cli.main() in its own process keeps a normal exit
ENTRY_POINT = False


def main() -> None:
    global ENTRY_POINT
    ENTRY_POINT = True
    install_signal_handlers()
    _prefetch_gpus(sys.argv[1:])
    from cudadoctor.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
