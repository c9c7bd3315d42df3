"""`cudadoctor watch -- COMMAND…` / `cudadoctor watch --pid PID`: sample a training run's process tree and
say what its timeline means (rules/watch/).

The command runs as it would without the doctor: same stdin, stdout and stderr (its output is never
read), same process group, its exit status returned. Ctrl-C in a terminal reaches it from the terminal
itself (the whole foreground process group gets SIGINT), so the doctor does not send a second one; a
SIGINT, SIGTERM, SIGHUP or SIGQUIT sent to the doctor alone (`kill`, `timeout`, a scheduler) is forwarded.
Which is which comes from the signal's si_code (SI_KERNEL for the terminal), read with sigtimedwait,
which is also how the sampler sleeps: the loop wakes at once on a signal or on the child's exit.
When the command dies by a signal the doctor ends itself with the same signal, so the calling shell sees
what it would have seen.

The doctor's own output goes to stderr: the live status line (only on a terminal, in a reserved bottom
line, as apt draws its progress bar), then the summary. `--json FILE` writes the timeline and verdicts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import IO, Any

import click

from cudadoctor.commands.options import Seconds, build
from cudadoctor.commands.output import echo, fail, run_command
from cudadoctor.locale import _

FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")
SI_KERNEL = 0x80  # si_code of a signal the kernel sent (the terminal's Ctrl-C, Ctrl-\, hang-up)
JSON_SCHEMA = 1


@dataclass(frozen=True)
class WatchOptions:
    """What `watch` was asked: one field per option, and the command to run."""

    interval: float = 1.0
    pid: int | None = None
    json_path: str | None = None
    plot_path: str | None = None
    show_status: bool = True
    command: tuple[str, ...] = ()


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "--interval",
    type=Seconds(min=0.05, max=3600),
    default=1.0,
    show_default=True,
    metavar="S",
    help="Seconds between samples.",
)
@click.option(
    "--pid", type=click.IntRange(min=1), metavar="PID", help="Watch a running process (and its children) instead."
)
@click.option("--json", "json_path", metavar="FILE", help="Write the timeline and the verdicts as JSON (- for stdout).")
@click.option(
    "--plot", "plot_path", metavar="FILE", help="Draw the timeline to an image (PNG, SVG, PDF; needs matplotlib)."
)
@click.option("--status/--no-status", "show_status", default=True, help="The live status line (terminals only).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def watch(**options: Any) -> None:
    """Run COMMAND (after --) and say why its GPU is idle, or that it is not.

    \b
    cudadoctor watch -- python train.py --epochs 3
    cudadoctor watch --interval 0.5 --json run.json -- python train.py
    cudadoctor watch --pid 12345

    Samples GPU utilisation and memory, PCIe traffic, power and clock event reasons (NVML) and the CPU of
    the main process and each DataLoader worker; at the end (or Ctrl-C), timelines and verdicts with
    fixes. The command's output, exit code and Ctrl-C behave as without watch.
    """
    o = build(WatchOptions, options)
    if o.pid is not None and o.command:
        fail(_("give either --pid PID or a command after --, not both"))
    if o.pid is None and not o.command:
        fail(_("nothing to watch: give a command after -- (cudadoctor watch -- python train.py) or --pid PID"))
    if o.plot_path is not None:
        _plot_module()  # a missing extra is a usage error before anything runs
    run_command(_watch, o)


def _plot_module() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        line = _("--plot needs matplotlib in the Python that runs cudadoctor: {command}")
        fail(line.format(command=install_matplotlib()))
    return plt


def install_matplotlib() -> str:
    """The install of matplotlib into the doctor's own interpreter. Not the `cudadoctor[plot]` extra:
    that resolves only where cudadoctor itself is on the index. A venv without pip is uv's; a system
    Python that refuses pip (PEP 668) got cudadoctor past that refusal, and matplotlib goes the same way."""
    import importlib.util
    import site
    import sysconfig

    from cudadoctor.advice.shell import word

    if importlib.util.find_spec("pip") is None:
        return f"uv pip install --python {word(sys.executable)} matplotlib"
    flags = ""
    if sys.prefix == sys.base_prefix and os.path.exists(
        os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")
    ):
        user = site.ENABLE_USER_SITE and __file__.startswith(site.getusersitepackages())
        flags = (" --user" if user else "") + " --break-system-packages"
    return f"{word(sys.executable, lead=True)} -m pip install{flags} matplotlib"


class StatusLine:
    """One line at the bottom of the terminal, kept out of the command's output by a scroll region."""

    def __init__(self, stream: IO[str], enabled: bool) -> None:
        self.stream = stream
        self.rows = 0
        self.enabled = enabled and _is_terminal(stream) and os.environ.get("TERM", "") not in ("", "dumb")

    def _size(self) -> int:
        try:
            return os.get_terminal_size(self.stream.fileno()).lines
        except (OSError, ValueError):
            return 0

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False

    def start(self) -> None:
        if not self.enabled:
            return
        self.rows = self._size()
        if self.rows < 3:
            self.enabled = False
            return
        # room for the line, then the scroll region above it (apt's progress bar does the same)
        self._write(f"\n\0337\033[1;{self.rows - 1}r\0338\033[1A")

    def show(self, text: str) -> None:
        if not self.enabled:
            return
        rows = self._size()
        if rows != self.rows and rows >= 3:
            self.rows = rows
            self._write(f"\0337\033[1;{rows - 1}r\0338")
        self._write(f"\0337\033[{self.rows};1H\033[2K{text}\0338")

    def stop(self) -> None:
        if not self.enabled:
            return
        self._write(f"\0337\033[1;{self.rows}r\033[{self.rows};1H\033[2K\0338")
        self.enabled = False


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class _Signals:
    """Catches the forwarded signals for the lifetime of the watch, replacing the doctor's default
    handler (which kills children and exits 130) inside this command only."""

    def __init__(self) -> None:
        self.sigs = {getattr(signal, n) for n in FORWARDED if hasattr(signal, n)}
        self.early: list[int] = []
        self.saved: dict[int, Any] = {}
        self.blocked = False
        self.child: int | None = None

    def install(self) -> None:
        for sig in self.sigs:
            self.saved[sig] = signal.signal(sig, self._record)

    def _record(self, signum: int, frame: object) -> None:
        self.early.append(signum)
        # without sigtimedwait (macOS, Windows) the source is unknown: Ctrl-C and Ctrl-\ came from the
        # terminal (which signalled the command too); SIGTERM came from a process
        if self.child is not None and signum == getattr(signal, "SIGTERM", None):
            try:
                os.kill(self.child, signum)
            except OSError:
                pass

    def block(self) -> None:
        """From here on signals wait for sigtimedwait (after the child started: it must not inherit the mask)."""
        if hasattr(signal, "pthread_sigmask") and hasattr(signal, "sigtimedwait"):
            signal.pthread_sigmask(signal.SIG_BLOCK, self.sigs | {signal.SIGCHLD})
            self.blocked = True

    def wait(self, seconds: float) -> Any:
        if self.blocked:
            return signal.sigtimedwait(self.sigs | {signal.SIGCHLD}, max(0.0, seconds))
        time.sleep(max(0.0, min(seconds, 0.05)))
        return None

    def unblock(self) -> None:
        if self.blocked:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, self.sigs | {signal.SIGCHLD})
            self.blocked = False


def _watch(o: WatchOptions) -> int:
    from cudadoctor.backends.sampler import Sampler, cpu_count
    from cudadoctor.facts.watch import Timeline

    interval, pid, command = o.interval, o.pid, list(o.command)

    signals = _Signals()
    signals.install()
    child: subprocess.Popen[bytes] | None = None
    if command:
        try:
            child = subprocess.Popen(command)  # inherits stdin, stdout, stderr and the process group
        except FileNotFoundError:
            echo("cudadoctor: " + _("command not found: {command}").format(command=command[0]), err=True)
            return 127
        except PermissionError:
            echo("cudadoctor: " + _("permission denied: {command}").format(command=command[0]), err=True)
            return 126
        except OSError as exc:
            line = _("cannot run {command}: {error}").format(command=command[0], error=exc.strerror or exc)
            echo(f"cudadoctor: {line}", err=True)
            return 126
        root = child.pid
        signals.child = root
    else:
        assert pid is not None
        root = pid
    signals.block()  # before the sampling thread starts: it inherits the mask, so only sigtimedwait sees them
    if child is None and not _exists(root):
        signals.unblock()
        fail(_("no process with PID {pid}").format(pid=root))
    wall0 = time.monotonic()
    tl = Timeline(
        command=_masked(command) if command else None,  # it shows in a fix and the JSON: no tokens
        pid=root,
        interval=interval,
        cpu_count=cpu_count(),
        cuda_visible_devices=_visible_devices(root, child is not None),
    )
    status = StatusLine(sys.stderr, o.show_status)
    try:
        sampling: _SamplingThread | None = _SamplingThread(
            Sampler(root), tl, interval, status, watch_root=child is None
        )
    except Exception as exc:  # psutil missing or broken: the command still runs to its end
        line = _("cannot sample ({error}); running the command unwatched").format(error=f"{type(exc).__name__}: {exc}")
        echo(f"cudadoctor: {line}", err=True)
        sampling = None
    status.start()
    try:
        if sampling is not None:
            sampling.start()
        _wait(tl, child, sampling, signals)
    finally:
        if sampling is not None:
            sampling.finish(timeout=interval + 2)
            if sampling.is_alive() and tl.nvml is None:
                tl.nvml = "TIMEOUT"  # nvmlInit never returned: a hung driver
        status.stop()
    if sampling is not None and sampling.error:
        line = _("sampling stopped early ({error}); the verdicts use what was sampled").format(error=sampling.error)
        echo(f"cudadoctor: {line}", err=True)
    tl.duration = round(time.monotonic() - wall0, 3)
    tl.samples = list(tl.samples)  # a snapshot: a sampler stuck in the driver cannot change it now
    tl.interrupted = tl.interrupted or bool(signals.early)
    if child is not None:
        tl.exit_code = child.wait()
        signals.child = None  # reaped: its PID may be reused
    signals.unblock()
    return _finish(tl, o.json_path, o.plot_path)


class _SamplingThread(threading.Thread):
    """Samples every interval. A thread, so that a driver call that never returns (a hung GPU, a hung
    nvmlInit) cannot keep the doctor from returning the command's exit code: it is left behind."""

    def __init__(self, sampler: Any, tl: Any, interval: float, status: StatusLine, watch_root: bool) -> None:
        super().__init__(name="cudadoctor-watch-sampler", daemon=True)
        self.sampler, self.tl, self.interval, self.status, self.watch_root = sampler, tl, interval, status, watch_root
        self.stop = threading.Event()
        self.ended = threading.Event()  # --pid: the watched process is gone
        self.error: str | None = None

    def run(self) -> None:
        from cudadoctor.render.timeline import status_line

        try:
            self.sampler.open()
            self.tl.nvml, self.tl.gpus = self.sampler.nvml_status, self.sampler.gpus
            next_at = time.monotonic()
            while not self.stop.is_set():
                if self.watch_root and not self.sampler.alive():
                    break
                sample = self.sampler.sample()
                if self.stop.is_set():
                    break
                self.tl.samples.append(sample)
                self.status.show(status_line(self.tl, sample))
                next_at = max(next_at + self.interval, time.monotonic())
                self.stop.wait(next_at - time.monotonic())
        except Exception as exc:  # a crash is a line in the summary, never a traceback over the command's output
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.ended.set()
            self.sampler.close()
            self.tl.sampler_cpu_seconds = round(self.sampler.cpu_seconds, 4)

    def finish(self, timeout: float) -> None:
        self.stop.set()
        if self.is_alive():
            self.join(timeout)


def _wait(tl: Any, child: Any, sampling: _SamplingThread | None, signals: _Signals) -> None:
    """Until the command exits (or, with --pid, the process is gone or Ctrl-C): forward what the command
    would have received and the terminal did not already send it."""
    while True:
        if child is not None and child.poll() is not None:
            return
        if child is None and (sampling is None or sampling.ended.is_set()):
            return
        info = signals.wait(0.25)
        if info is None or info.si_signo == signal.SIGCHLD:
            continue
        tl.interrupted = True
        if child is None:
            return  # --pid: Ctrl-C ends the watch, not the process
        if info.si_code != SI_KERNEL or _own_group(child.pid) is False:
            # sent to the doctor alone (kill, timeout, a scheduler): the command would have got it
            try:
                os.kill(child.pid, info.si_signo)
            except OSError:
                pass


def _masked(command: list[str]) -> list[str]:
    import shlex

    from cudadoctor.knowledge.secrets import mask_secrets

    text = mask_secrets(shlex.join(command))
    try:
        return shlex.split(text)
    except ValueError:
        return [text]


def _exists(pid: int) -> bool:
    try:
        import psutil

        return psutil.pid_exists(pid)
    except ImportError:
        return True


def _own_group(pid: int) -> bool | None:
    """Whether the child is still in the doctor's process group (then the terminal signalled it too)."""
    try:
        return os.getpgid(pid) == os.getpgrp()
    except (OSError, AttributeError):
        return None


def _visible_devices(pid: int, ours: bool) -> str | None:
    if ours:
        return os.environ.get("CUDA_VISIBLE_DEVICES")
    try:
        import psutil

        return psutil.Process(pid).environ().get("CUDA_VISIBLE_DEVICES")
    except Exception:
        return None


def _finish(tl: Any, json_path: str | None, plot_path: str | None) -> int:
    from cudadoctor.render.timeline import summary
    from cudadoctor.rules.watch import evaluate

    findings = evaluate(tl)
    encoding = getattr(sys.stderr, "encoding", None)
    echo(summary(tl, findings, encoding), err=True, nl=False)
    if json_path is not None:
        _write_json(tl, findings, json_path)
    if plot_path is not None:
        _plot(tl, plot_path)
    code = tl.exit_code
    if code is None:
        return 130 if tl.interrupted else 0
    if code < 0:
        _die_like(-code)
        return 128 - code
    return code


def _write_json(tl: Any, findings: list[Any], path: str) -> None:
    import json

    from cudadoctor.facts.codec import to_jsonable
    from cudadoctor.version import __version__

    data = {
        "schema_version": JSON_SCHEMA,
        "tool": "cudadoctor",
        "version": __version__,
        "command": "watch",
        "timeline": to_jsonable(tl),
        "findings": to_jsonable(findings),
    }
    text = json.dumps(data, indent=1)
    if path == "-":
        echo(text)
        return
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    except OSError as exc:
        echo("cudadoctor: " + _("cannot write {path}: {error}").format(path=path, error=exc.strerror or exc), err=True)


def _plot(tl: Any, path: str) -> None:
    from cudadoctor.facts.watch import MAIN, WORKER

    plt = _plot_module()
    t = [s.t for s in tl.samples]
    fig, axes = plt.subplots(3, 1, sharex=True, figsize=(10, 7))
    used = sorted({g.index for s in tl.samples for g in s.gpus if g.tree_processes}) or sorted(
        {g.index for s in tl.samples for g in s.gpus}
    )
    for i in used:
        axes[0].plot(t, [next((g.util for g in s.gpus if g.index == i), None) for s in tl.samples], label=f"GPU {i}")
        axes[1].plot(
            t,
            [_gib(next((g.tree_memory for g in s.gpus if g.index == i), None)) for s in tl.samples],
            label=f"GPU {i}",
        )
    pids = {p.pid: p.role for s in tl.samples for p in s.procs if p.role in (MAIN, WORKER)}
    for n, (pid, role) in enumerate(pids.items()):
        axes[2].plot(
            t,
            [next((p.cpu for p in s.procs if p.pid == pid), None) for s in tl.samples],
            label="main" if role == MAIN else f"worker {n}",
        )
    for ax, title in zip(axes, ("GPU utilisation %", "GPU memory GiB (this run)", "CPU % of one core"), strict=True):
        ax.set_ylabel(title)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(loc="upper right", fontsize="small")
    axes[0].set_ylim(0, 105)
    axes[2].set_xlabel("seconds")
    fig.suptitle("cudadoctor watch: " + (" ".join(tl.command) if tl.command else f"PID {tl.pid}")[:90])
    try:
        fig.savefig(path)
    except (OSError, ValueError) as exc:
        echo("cudadoctor: " + _("cannot write {path}: {error}").format(path=path, error=exc), err=True)
    plt.close(fig)


def _gib(n: int | None) -> float | None:
    return None if n is None else n / (1 << 30)


def _die_like(sig: int) -> None:
    """End the doctor by the signal that ended the command, so the shell reports the same status."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        pass
    try:
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
    except (OSError, ValueError, AttributeError):
        pass  # SIGKILL and SIGSTOP keep their default
    try:
        os.kill(os.getpid(), sig)
        time.sleep(1)  # the signal is delivered before this returns; should it not be, exit 128 + N
    except (OSError, ValueError, AttributeError):
        pass
