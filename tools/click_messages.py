"""click's own words that a cudadoctor user meets (usage lines, help sections, usage errors), marked here
for extraction (babel.cfg): click looks them up in our catalogue (cli._translate_click). Build time only:
nothing in the package imports it."""

from __future__ import annotations

from cudadoctor.locale import N_, ngettext

MESSAGES = (
    N_("Usage:"),
    N_("Options"),
    N_("Commands"),
    N_("Show this message and exit."),
    N_("Show the version and exit."),
    N_("%(prog)s, version %(version)s"),
    N_("Error: {message}"),
    N_("Try '{command} {option}' for help."),
    N_("No such option {name!r}."),
    N_("No such command {name!r}."),
    N_("Missing argument"),
    N_("Missing option"),
    N_("Missing parameter"),
    N_("Missing command."),
    N_("Missing {param_type}"),
    N_("Invalid value for {param_hint}: {message}"),
    N_("Invalid value: {message}"),
    N_("Option {name!r} does not take a value."),
    N_("{value} is not in the range {range}."),
    N_("{value!r} is not a valid {number_type}."),
    N_("default: {default}"),
    N_("Aborted!"),
    N_("Positional arguments"),
    N_("Choose from:\n\t{choices}"),
    N_("Missing parameter: {param_name}"),
    N_("Argument {name!r} takes {nargs} values."),
    N_("Takes {nargs} values but 1 was given."),
    N_("Value must be an iterable."),
    N_("{value!r} is not a valid boolean. Recognized values: {states}"),
    N_("env var: {var}"),
    N_("(dynamic)"),
    # the types' names, in "'x' is not a valid {number_type}." (cli._ClickMessage translates them)
    N_("integer"),
    N_("integer range"),
    N_("float"),
    N_("float range"),
    N_("number of seconds"),
)


def _plurals(n: int) -> tuple[str, ...]:
    return (
        ngettext("Got unexpected extra argument ({args})", "Got unexpected extra arguments ({args})", n),
        ngettext("Option {name!r} requires an argument.", "Option {name!r} requires {nargs} arguments.", n),
        ngettext("{value!r} is not {choice}.", "{value!r} is not one of {choices}.", n),
        ngettext("Did you mean {possibility}?", "(Did you mean one of: {possibilities}?)", n),
    )
