"""What every command writes, one way: a report in its format, a usage error (one line on stderr, exit 2,
in the user's language), output that survives a closed pipe or a full disk, and files written whole."""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

import click

from cudadoctor import locale as i18n
from cudadoctor.exitcodes import EXIT_INCOMPLETE, EXIT_USAGE
from cudadoctor.locale import _


class UsageError(click.UsageError):
    """A usage error whose message is printed as one line."""


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """The one usage-error style: `cudadoctor: message` on stderr, exit 2, in the user's language (a
    message not written with `_()` is translated here, by its template: locale/usage.py)."""
    click.echo(f"cudadoctor: {usage(message)}", err=True)
    sys.exit(code)


def usage(message: str) -> str:
    """A usage error in the current language."""
    if i18n.current() == i18n.ENGLISH:
        return message  # without importing the templates
    from cudadoctor.locale.usage import translate

    return translate(message)


def echo(text: str, err: bool = False, nl: bool = True) -> None:
    """Output that survives a closed pipe or a full disk: one line on stderr instead of a traceback."""
    try:
        click.echo(text, err=err, nl=nl)
    except BrokenPipeError:
        quiet_exit()
    except UnicodeEncodeError:
        stream = sys.stderr if err else sys.stdout
        encoding = getattr(stream, "encoding", None) or "ascii"
        click.echo(text.encode(encoding, errors="replace").decode(encoding), err=err, nl=nl)


def quiet_exit() -> NoReturn:
    """The reader went away (`| head`): nothing more can be said on stdout, and nothing is wrong."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    os._exit(0)


def flush_output() -> None:
    """Flush stdout where its errors can still be told: a closed pipe exits quietly, a full disk says so
    and exits 3."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        quiet_exit()
    except OSError as exc:
        echo("cudadoctor: " + _("cannot write output: {error}").format(error=exc.strerror or exc), err=True)
        sys.exit(EXIT_INCOMPLETE)


def run_command(fn: Any, *args: Any, **kwargs: Any) -> NoReturn:
    """Run a command body and exit with its code, flushing stdout where errors still can be caught."""
    code = fn(*args, **kwargs)
    flush_output()
    sys.exit(code)


def check_writable(path: str, option: str) -> None:
    """A file an option names can be written (before any work is done): else a usage error."""
    if not path:
        fail(f"{option}: an empty path")
    if os.path.isdir(path):
        fail(f"cannot write {option} {path}: it is a directory")
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        fail(f"cannot write {option} {path}: no such directory {parent}")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        fail(f"cannot write {option} {path}: permission denied")


def write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}", code=3)


def write_atomically(path: str, text: str) -> None:
    """Write beside the target, then rename over it: a reader (node_exporter's textfile collector) sees
    the old file or the new one, never half of one."""
    import tempfile

    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = -1, ""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".cudadoctor-", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fd = -1
            fh.write(text)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the metrics from a collector running as another user
        os.replace(tmp, path)
    except OSError as exc:
        if fd >= 0:
            os.close(fd)
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        fail(f"cannot write {path}: {exc.strerror or exc}", code=3)


def show(rep: Any, fmt: str, redact: bool = False, verbose: bool = False) -> None:
    """A report on stdout in `fmt`: json, markdown, or text for a terminal."""
    if fmt in ("json", "markdown"):
        import json

        from cudadoctor.render import markdown
        from cudadoctor.render.redact import report_data

        data = report_data(rep, redact)
        echo(json.dumps(data, indent=2) if fmt == "json" else markdown.render(data))
    else:
        from cudadoctor.render import text

        text.render(rep, text.make_console(), verbose=verbose, redact=redact)
