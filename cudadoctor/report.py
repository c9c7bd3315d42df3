"""The one Report whose Status is computed here, once, from the findings and probe outcomes (their types
are in model.py). Exit code, verdict, colours, JUnit, annotations and the
pytest plugin all read `Report.status`; nothing else re-derives it."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cudadoctor.locale import _, ngettext
from cudadoctor.model import (  # noqa: F401  (re-exported until every import takes them from cudadoctor.model)
    COLUMN_MARKS,
    FIX_LANGUAGES,
    Finding,
    Fix,
    ProbeOutcome,
    Severity,
    Source,
    Status,
    Table,
    decide,
    language,
    plural,
)
from cudadoctor.version import __version__

if TYPE_CHECKING:
    from cudadoctor.facts import Facts

# Exit codes, the same in every command: their own module, which `gpus` imports without this one
from cudadoctor.exitcodes import (  # noqa: F401  (re-exported: report.EXIT_* is what callers use)
    EXIT_HANGUP,
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_NOT_ENOUGH_GPUS,
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_TERMINATED,
    EXIT_USAGE,
)

# Bump on any change that breaks a reader of the JSON report; every older version keeps a reader
# (facts/codec.py) and a replay test.
SCHEMA_VERSION = 2


@dataclass
class Report:
    command: str
    facts: Facts
    probes: list[ProbeOutcome]
    findings: list[Finding]
    status: Status
    exit_code: int
    verdict: str
    scope: str | None = None  # "3 of 6 checks ran: …" when not everything ran
    fail_on: str = "error"
    requirements: Any = None  # the gate's Requirements, when any were given
    source: Source | None = None
    schema_version: int = SCHEMA_VERSION
    tool: str = "cudadoctor"
    version: str = __version__
    created: str = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))


def describe_scope(outcomes: list[ProbeOutcome], expected: list[str]) -> str | None:
    """None when every expected check ran; otherwise which ran and which did not, and why."""
    by_name = {o.name: o for o in outcomes}
    ran = [n for n in expected if n in by_name and by_name[n].status == "ok"]
    if len(ran) == len(expected):
        return None
    parts = [
        ngettext("{ran} of {n} check ran", "{ran} of {n} checks ran", len(expected)).format(
            ran=len(ran), n=len(expected)
        )
        + (_(": {names}").format(names=", ".join(ran)) if ran else "")
    ]
    failed = [f"{n} {by_name[n].status}" for n in expected if n in by_name and by_name[n].failed]
    skipped = [n for n in expected if n not in ran and not (n in by_name and by_name[n].failed)]
    if failed:
        parts.append(_("failed: {names}").format(names=", ".join(failed)))
    if skipped:
        parts.append(_("not checked: {names}").format(names=", ".join(skipped)))
    return _("; ").join(parts)


def verdict_line(
    status: Status,
    findings: list[Finding],
    scope: str | None,
    fail_on: Severity,
    undecided: str | None = None,
    nothing_checked: bool = False,
) -> str:
    errors = [f for f in findings if f.severity is Severity.ERROR]
    warnings = [f for f in findings if f.severity is Severity.WARNING]
    counts = _("{errors}, {warnings}").format(
        errors=ngettext("{n} error", "{n} errors", len(errors)).format(n=len(errors)),
        warnings=ngettext("{n} warning", "{n} warnings", len(warnings)).format(n=len(warnings)),
    )
    # the first root cause: a finding that follows from another one is never the headline
    # and the root cause other findings point at comes before one nothing else follows from
    named = {f.cause for f in findings if f.cause}
    first = (
        next((f for f in errors if f.cause is None and f.code in named), None)
        or next((f for f in errors if f.cause is None), None)
        or (errors or warnings or [None])[0]
    )
    if undecided is not None:
        text = _("NOT ENOUGH TO TELL: {why}").format(why=undecided)
    elif status is Status.INCOMPLETE:
        text = _("INCOMPLETE: the doctor could not finish every check")
        if first is not None:
            text += _(" ({counts}): {title}").format(counts=counts, title=first.title)
    elif status is Status.PROBLEMS:
        text = _("PROBLEMS ({counts}): {title}").format(counts=counts, title=first.title if first else "")
    elif status is Status.WARNINGS:
        text = _("USABLE WITH WARNINGS ({counts}): {title}").format(counts=counts, title=first.title if first else "")
    elif nothing_checked:
        # a paste of one harmless warning: nothing is wrong in it, but no layer of the setup was seen
        text = _("NOTHING TO FIX in what was shown; the setup itself was not seen")
    else:
        text = _("HEALTHY: no problems found")
    if scope:
        text += f" [{scope}]"
    return text


def build(
    command: str,
    facts: Facts,
    outcomes: list[ProbeOutcome],
    findings: list[Finding],
    fail_on: Severity = Severity.ERROR,
    expected: list[str] | None = None,
    requirements: Any = None,
    source: Source | None = None,
    undecided: str | None = None,
) -> Report:
    """`findings` as they are shown, already in the current language (render/localize.py; the verdict
    quotes the first one's title). `undecided`: why the facts cannot support a verdict at all (a paste that
    shows too little): the status is then INCOMPLETE, unless an error was found anyway."""
    status = decide(findings, outcomes, fail_on)
    if undecided is not None and status is not Status.PROBLEMS:
        status = Status.INCOMPLETE
    else:
        undecided = None
    scope = describe_scope(outcomes, expected) if expected is not None else None
    ran = {o.name for o in outcomes if o.status == "ok"}
    nothing_checked = expected is not None and not ran.intersection(expected)
    return Report(
        command=command,
        facts=facts,
        probes=outcomes,
        findings=findings,
        status=status,
        exit_code=status.exit_code,
        verdict=verdict_line(status, findings, scope, fail_on, undecided, nothing_checked),
        scope=scope,
        fail_on=fail_on.value,
        requirements=requirements,
        source=source,
    )
