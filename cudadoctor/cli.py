"""The command line, the dispatcher only: one click group whose commands are loaded only when called (as
pip's command table does), so `cudadoctor gpus` never imports what `check` needs; the group's own options
(--lang, --version); click's words in the user's language; and the exit codes of whatever escapes a
command (one usage-error style everywhere: one line on stderr, exit 2). The option types and output
helpers the commands share are in commands/options.py and commands/output.py."""

from __future__ import annotations

import importlib
import inspect
import itertools
import sys
from typing import Any

import click

from cudadoctor import locale as i18n
from cudadoctor.commands.output import UsageError, echo, flush_output, quiet_exit, usage
from cudadoctor.exitcodes import EXIT_INCOMPLETE
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
            exc.message = usage(exc.message)  # our own words inside click's frame ("Invalid value for …")
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
        quiet_exit()
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
