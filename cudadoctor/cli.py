"""The command line: one click group whose commands are loaded only when called (as pip's command table
does), so `cudadoctor gpus` never imports what `check` needs. One usage-error style everywhere: one line
on stderr, exit 2."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, NoReturn

import click

from cudadoctor import __version__
from cudadoctor.report import EXIT_INCOMPLETE, EXIT_USAGE

# name -> (module:attribute, one line for `cudadoctor --help`)
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("cudadoctor.commands.check:check", "Diagnose this machine; every problem with its fix."),
    "bench": ("cudadoctor.commands.check:bench", "check --full: also measure copy bandwidth and train."),
    "gpus": ("cudadoctor.commands.gpus:gpus", "The GPUs, who holds their memory; --pick N for CUDA_VISIBLE_DEVICES."),
    "explain": ("cudadoctor.commands.explain:explain", "The page of a finding code, with its fixes."),
    "completion": ("cudadoctor.commands.completion:completion", "Print the shell completion script."),
}


class UsageError(click.UsageError):
    """A usage error whose message is printed as one line."""


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """The one usage-error style: `cudadoctor: message` on stderr, exit 2."""
    click.echo(f"cudadoctor: {message}", err=True)
    sys.exit(code)


def echo(text: str, err: bool = False, nl: bool = True) -> None:
    """Output that survives a closed pipe or a full disk: one line on stderr instead of a traceback."""
    try:
        click.echo(text, err=err, nl=nl)
    except BrokenPipeError:
        _quiet_exit()
    except UnicodeEncodeError:
        stream = sys.stderr if err else sys.stdout
        encoding = getattr(stream, "encoding", None) or "ascii"
        click.echo(text.encode(encoding, errors="replace").decode(encoding), err=err, nl=nl)


def _quiet_exit() -> NoReturn:
    # the reader went away (`| head`): nothing more can be said on stdout, and nothing is wrong
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    os._exit(0)


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, _, attr = COMMANDS[name][0].partition(":")
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # from the table: listing the commands imports none of them
        with formatter.section("Commands"):
            formatter.write_dl([(name, short) for name, (_, short) in COMMANDS.items()])


@click.group(
    cls=LazyGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 80},
)
@click.version_option(__version__, "-V", "--version", prog_name="cudadoctor")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Why PyTorch cannot use your NVIDIA GPU, or how well it can, and what to type to fix it.

    Exit codes: 0 healthy, 1 problems found, 2 usage error, 3 the doctor could not finish,
    4 `gpus --pick` found too few GPUs, 130 interrupted (docs/exit-codes.md).
    """
    if ctx.invoked_subcommand is None:
        echo(ctx.get_help())
        ctx.exit(0)


def names_option(option: str, value: str | None, known: list[str]) -> set[str]:
    """A comma-separated list of names, each one checked against `known`."""
    names = {n.strip() for n in (value or "").split(",") if n.strip()}
    unknown = sorted(names - set(known))
    if unknown:
        raise click.BadParameter(
            f"unknown name {', '.join(unknown)}; choose from {', '.join(known)}", param_hint=option
        )
    return names


def size_option(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    from cudadoctor.knowledge.units import parse_size

    if value is None:
        return None
    try:
        size = parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    if size <= 0:
        raise click.BadParameter(f"{value!r} is not a positive size")
    return size


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    verbose = "-v" in args or "--verbose" in args
    try:
        cli.main(args=args, prog_name="cudadoctor", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:  # usage errors: one line, exit 2
        message = exc.format_message().replace("\n", " ")
        if isinstance(exc, click.UsageError) and exc.ctx is not None and not isinstance(exc, UsageError):
            message += f" (see `{exc.ctx.command_path} --help`)"
        echo(f"cudadoctor: {message}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        sys.exit(130)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        _quiet_exit()
    except SystemExit:
        raise
    except OSError as exc:
        echo(f"cudadoctor: cannot write output: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_INCOMPLETE)
    except Exception as exc:  # the last line of defence: no traceback unless asked for
        if verbose:
            import traceback

            traceback.print_exc()
        echo(f"cudadoctor: internal error: {type(exc).__name__}: {exc} (run with -v for details)", err=True)
        sys.exit(EXIT_INCOMPLETE)
    _flush()


def _flush() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_exit()
    except OSError as exc:
        echo(f"cudadoctor: cannot write output: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_INCOMPLETE)


def run_command(fn: Any, *args: Any, **kwargs: Any) -> NoReturn:
    """Run a command body and exit with its code, flushing stdout where errors still can be caught."""
    code = fn(*args, **kwargs)
    _flush()
    sys.exit(code)
