"""The command line: one click group whose commands are loaded only when called (as pip's command table
does), so `cudadoctor gpus` never imports what `check` needs. One usage-error style everywhere: one line
on stderr, exit 2."""

from __future__ import annotations

import importlib
import inspect
import itertools
import os
import sys
from typing import Any, NoReturn

import click

from cudadoctor import locale as i18n
from cudadoctor.exitcodes import EXIT_INCOMPLETE, EXIT_USAGE
from cudadoctor.locale import _
from cudadoctor.version import __version__

# name -> (module:attribute, one line for `cudadoctor --help`)
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("cudadoctor.commands.check:check", "Diagnose this machine; every problem with its fix."),
    "bench": ("cudadoctor.commands.check:bench", "check --full: also measure copy bandwidth and train."),
    "gpus": ("cudadoctor.commands.gpus:gpus", "The GPUs, who holds their memory; --pick N for CUDA_VISIBLE_DEVICES."),
    "triage": ("cudadoctor.commands.triage:triage", "Diagnose a paste: collect_env, nvidia-smi, errors."),
    "explain": ("cudadoctor.commands.explain:explain", "The page of a finding code, with its fixes."),
    "ckpt": ("cudadoctor.commands.ckpt:ckpt", "Why torch.load fails on a checkpoint, and a fixed copy."),
    "fit": ("cudadoctor.commands.fit:fit", "Will a model fit: its memory by precision against each GPU's free memory."),
    "watch": ("cudadoctor.commands.watch:watch", "Run a training command; say why its GPU idles, with fixes."),
    "fleet": ("cudadoctor.commands.fleet:fleet", "The nodes of a job checked side by side; it starts torchrun."),
    "mcp": ("cudadoctor.commands.mcp:mcp", "Serve the doctor to coding agents (Model Context Protocol, stdio)."),
    "completion": ("cudadoctor.commands.completion:completion", "Print the shell completion script."),
}


class Seconds(click.FloatRange):
    """A time bound in seconds: finite ("nan" and "inf" would remove the bound), at least `min` and at most
    a million (a deadline further off overflows the platform's time_t in waits)."""

    name = "number of seconds"  # click's "'x' is not a valid {name}."
    MOST = 1e6

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import math

        result = super().convert(value, param, ctx)
        if not math.isfinite(result):
            self.fail(_("{value} is not a finite number of seconds").format(value=repr(value)), param, ctx)
        if result > self.MOST:
            self.fail(
                _("{value} is more than {most} seconds").format(value=repr(value), most=f"{self.MOST:g}"), param, ctx
            )
        return result


class UsageError(click.UsageError):
    """A usage error whose message is printed as one line."""


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """The one usage-error style: `cudadoctor: message` on stderr, exit 2, in the user's language (a
    message not written with `_()` is translated here, by its template: locale/usage.py)."""
    click.echo(f"cudadoctor: {_usage(message)}", err=True)
    sys.exit(code)


def _usage(message: str) -> str:
    if i18n.current() == i18n.ENGLISH:
        return message  # without importing the templates
    from cudadoctor.locale.usage import translate

    return translate(message)


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


def _translate_click() -> None:
    """click translates its own words with the stdlib's global gettext domain, which --lang never reaches:
    its modules look their words up in our catalogue instead (identity in English)."""
    import click.core
    import click.decorators
    import click.exceptions
    import click.formatting
    import click.parser
    import click.types

    for module in (click.core, click.decorators, click.exceptions, click.formatting, click.parser, click.types):
        if hasattr(module, "_"):
            module._ = _click_words  # type: ignore[attr-defined]
        if hasattr(module, "ngettext"):
            module.ngettext = i18n.ngettext  # type: ignore[attr-defined]
    # help wraps by display width in a language with wide characters (click counts characters)
    english_wrap, english_len = click.formatting.wrap_text, click.formatting.term_len

    def wrap_text(text: str, width: int = 78, initial_indent: str = "", subsequent_indent: str = "", **kw: Any) -> str:
        if i18n.current() == i18n.ENGLISH:
            return english_wrap(text, width, initial_indent, subsequent_indent, **kw)
        from cudadoctor.render.layout import wrap

        out = []
        for para in text.split("\n\n") if kw.get("preserve_paragraphs") else [text]:
            flat = " ".join(line.strip() for line in para.replace("\b", "").splitlines() if line.strip())
            lines = wrap(flat, width - max(len(initial_indent), len(subsequent_indent)))
            out.append("\n".join((subsequent_indent if i else initial_indent) + ln for i, ln in enumerate(lines)))
        return "\n\n".join(out)

    def term_len(text: str) -> int:
        if i18n.current() == i18n.ENGLISH:
            return english_len(text)
        from cudadoctor.render.layout import display_width

        return display_width(click.unstyle(text))

    click.formatting.wrap_text = wrap_text  # type: ignore[assignment]
    click.formatting.term_len = term_len  # type: ignore[assignment]


class _ClickMessage(str):
    """A translated click message whose placeholders may hold click's own words (a type's name in "'x' is
    not a valid {number_type}."): they are translated too when click formats it."""

    WORDS = ("number_type", "param_type")

    def format(self, *args: Any, **kwargs: Any) -> str:
        words = {k: i18n._(v) for k, v in kwargs.items() if k in self.WORDS and isinstance(v, str)}
        return str.format(self, *args, **{**kwargs, **words})


def _click_words(message: str) -> str:
    return _ClickMessage(i18n._(message))


_translate_click()


def _machine_output(args: list[str]) -> bool:
    """JSON on stdout: machines read it, so it stays English unless --lang says otherwise (files written
    with --output and --junit are the commands' business: check writes them in English)."""
    return any(a in ("--json", "--format=json") for a in args) or any(
        a == "--format" and b == "json" for a, b in itertools.pairwise(args)
    )


def _set_language(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    if value:
        return i18n.set_language(value, explicit=True)
    language = i18n.set_language(None)
    if language != i18n.ENGLISH and _machine_output(ctx.meta.get("cudadoctor.args", [])):
        language = i18n.set_language(i18n.ENGLISH)
    return language


def _hoist_lang(args: list[str]) -> list[str]:
    """`cudadoctor check --lang zh_CN` as well as `cudadoctor --lang zh_CN check`: --lang is the group's
    option, so it moves to the front wherever it is given (not after `--`, where a command's own argv starts)."""
    out, moved, i = [], [], 0
    while i < len(args):
        a = args[i]
        if a == "--":
            out += args[i:]
            break
        if a == "--lang" and i + 1 < len(args):
            moved += args[i : i + 2]
            i += 2
            continue
        if a.startswith("--lang="):
            moved.append(a)
        else:
            out.append(a)
        i += 1
    return moved + out


def _localize_help(command: click.Command) -> None:
    """Help texts in the current language; the English originals are kept for a later switch back."""
    helper = getattr(command, "_help_option", None)  # click makes --help once, maybe before --lang was read
    for obj in (command, *command.params, *([helper] if helper is not None else [])):
        for attr in ("help", "short_help"):
            text = getattr(obj, attr, None)
            if text is None:
                continue
            english = getattr(obj, "_cudadoctor_" + attr, None)
            if english is None:
                english = text
                setattr(obj, "_cudadoctor_" + attr, english)
            cleaned = inspect.cleandoc(english)  # the message as extracted (docstrings keep their indent)
            translated = _(cleaned)
            if translated == cleaned and i18n.current() != i18n.ENGLISH:
                from cudadoctor.render.localize import label

                translated = label(cleaned)  # a help text built with an f-string, by its template
            setattr(obj, attr, translated if translated != cleaned else english)
    for sub in getattr(command, "commands", {}).values():  # a group's own commands (ckpt inspect, ckpt fix)
        _localize_help(sub)


class LazyGroup(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        args = _hoist_lang(args)
        ctx.meta["cudadoctor.args"] = list(args)  # for _set_language: does the subcommand write JSON?
        return super().parse_args(ctx, args)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        _localize_help(self)
        super().format_help(ctx, formatter)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, _sep, attr = COMMANDS[name][0].partition(":")
        command = getattr(importlib.import_module(module), attr)
        _localize_help(command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # from the table: listing the commands imports none of them
        with formatter.section(_("Commands")):
            formatter.write_dl([(name, _(short)) for name, (_module, short) in COMMANDS.items()])


@click.group(
    cls=LazyGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 80},
)
@click.version_option(__version__, "-V", "--version", prog_name="cudadoctor")
@click.option(
    "--lang",
    type=click.Choice(i18n.LANGUAGES),
    is_eager=True,
    expose_value=False,
    callback=_set_language,
    help="Output language (default: CUDADOCTOR_LANG, then LANGUAGE/LC_ALL/LC_MESSAGES/LANG).",
)
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Why PyTorch cannot use your NVIDIA GPU, or how well it can, and what to type to fix it.

    Exit codes: 0 healthy, 1 problems found, 2 usage error, 3 no verdict (a check could not finish, or
    a paste shows too little), 4 `gpus --pick` found too few GPUs, 130 interrupted (docs/exit-codes.md).
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
            _("unknown name {names}; choose from {known}").format(names=", ".join(unknown), known=", ".join(known)),
            param_hint=option,
        )
    return names


def complete_probe_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion of a comma-separated list of probe names (`--only driver,to<TAB>`): the name being
    typed, after the ones already given, which it does not offer again."""
    from click.shell_completion import CompletionItem

    from cudadoctor import probes

    done, comma, last = incomplete.rpartition(",")
    given = {n.strip() for n in done.split(",")}
    return [CompletionItem(done + comma + n) for n in probes.names() if n.startswith(last) and n not in given]


def size_option(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    from cudadoctor.knowledge.units import parse_size

    if value is None:
        return None
    try:
        size = parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    if size <= 0:
        raise click.BadParameter(_("{value} is not a positive size").format(value=repr(value)))
    return size


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    i18n.set_language(None)  # before click parses: --help and usage errors already in the user's language
    verbose = "-v" in args or "--verbose" in args
    try:
        cli.main(args=args, prog_name="cudadoctor", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:  # usage errors: one line, exit 2
        if isinstance(exc, (click.BadParameter, UsageError)):
            exc.message = _usage(exc.message)  # our own words inside click's frame ("Invalid value for …")
        message = " ".join(exc.format_message().split())  # one line: click indents its choices with tabs
        if isinstance(exc, click.UsageError) and exc.ctx is not None and not isinstance(exc, UsageError):
            message += _(" (see `{command} --help`)").format(command=exc.ctx.command_path)
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
        echo("cudadoctor: " + _("cannot write output: {error}").format(error=exc.strerror or exc), err=True)
        sys.exit(EXIT_INCOMPLETE)
    except Exception as exc:  # the last line of defence: no traceback unless asked for
        if verbose:
            import traceback

            traceback.print_exc()
        detail = f"{type(exc).__name__}: {exc}"
        echo("cudadoctor: " + _("internal error: {detail} (run with -v for details)").format(detail=detail), err=True)
        sys.exit(EXIT_INCOMPLETE)
    flush_output()


def flush_output() -> None:
    """Flush stdout where its errors can still be told: a closed pipe exits quietly, a full disk says so
    and exits 3."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_exit()
    except OSError as exc:
        echo("cudadoctor: " + _("cannot write output: {error}").format(error=exc.strerror or exc), err=True)
        sys.exit(EXIT_INCOMPLETE)


def run_command(fn: Any, *args: Any, **kwargs: Any) -> NoReturn:
    """Run a command body and exit with its code, flushing stdout where errors still can be caught."""
    code = fn(*args, **kwargs)
    flush_output()
    sys.exit(code)
