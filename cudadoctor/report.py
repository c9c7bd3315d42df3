"""What rules produce and renderers show: findings with their fixes and tables, probe outcomes, and the
one Report whose Status is computed here, once. Exit code, verdict, colours, JUnit, annotations and the
pytest plugin all read `Report.status`; nothing else re-derives it."""

from __future__ import annotations

import datetime as dt
import enum
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cudadoctor import __version__
from cudadoctor.locale import _, ngettext

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


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    OK = "ok"

    @property
    def rank(self) -> int:
        """Higher is worse."""
        return _RANK[self.value]


_RANK = {"ok": 0, "info": 1, "warning": 2, "error": 3}


class Status(str, enum.Enum):
    HEALTHY = "healthy"
    WARNINGS = "warnings"
    PROBLEMS = "problems"
    INCOMPLETE = "incomplete"

    @property
    def exit_code(self) -> int:
        return {"healthy": EXIT_OK, "warnings": EXIT_OK, "problems": EXIT_PROBLEMS, "incomplete": EXIT_INCOMPLETE}[
            self.value
        ]

    @property
    def severity(self) -> Severity:
        """How a renderer colours the verdict."""
        return {
            "healthy": Severity.OK,
            "warnings": Severity.WARNING,
            "problems": Severity.ERROR,
            "incomplete": Severity.WARNING,
        }[self.value]


# What a fix's lines are, so that every renderer labels them by it (a Markdown fence, a heading): lines for a
# POSIX shell, for PowerShell (the default Windows terminal), Python code, or lines of a TOML or YAML file.
FIX_LANGUAGES = ("sh", "powershell", "python", "toml", "yaml")

# A Python statement, never a shell command line: `import x`, `from x import y`, an assignment `a, b = …` or
# `n *= 2` (a shell assignment has no spaces around its `=`), a call `torch.load(…)` whose name touches its
# parenthesis, a block statement, or an indented line of a block.
_PYTHON_LINE = re.compile(
    r"^(?:import [\w.]+|from [\w.]+ import \w"
    r"|[A-Za-z_][\w.]*(?:\[[^\]]*\])?(?:\s*,\s*[A-Za-z_][\w.]*)*\s*(?:[-+*/%@&|^]|//|\*\*|<<|>>)?=\s"
    r"|[A-Za-z_][\w.]*\(|(?:with|for|if|elif|else|try|except|finally|def|class)\b.*:$|\s)"
)
# A PowerShell line: a quoted program run with `&`, a program given by a Windows path, `start URL`.
_POWERSHELL_LINE = re.compile(r"^(?:& |[A-Za-z]:\\|\\\\|start https?://)")
# A YAML mapping (a Kubernetes snippet): `key: value`, which no command line starts with.
_YAML_LINE = re.compile(r"^[A-Za-z_][\w.-]*: ")


def language(commands: list[str]) -> str:
    """What these lines are when their author did not say: Python (or YAML) when every line is, PowerShell
    when a line runs a Windows program, else shell."""
    lines = [c for c in commands if c.strip()]
    if lines and all(_PYTHON_LINE.match(c) for c in lines) and not _PYTHON_LINE.match(lines[0]).group().isspace():
        return "python"
    if lines and all(_YAML_LINE.match(c) for c in lines):
        return "yaml"
    if any(_POWERSHELL_LINE.match(c) for c in lines):
        return "powershell"
    return "sh"


@dataclass(frozen=True)
class Fix:
    """One way to fix a finding: when it applies, the commands to paste, and what they are (`lang`, one of
    FIX_LANGUAGES; told by `language` when not given, so a fix read from an older report has it too)."""

    when: str
    commands: list[str] = field(default_factory=list)
    lang: str = ""

    def __post_init__(self) -> None:
        if self.lang not in FIX_LANGUAGES:
            object.__setattr__(self, "lang", language(self.commands))


COLUMN_MARKS = "<>!?"  # right-aligned, cut from the left, identifies the row, may be left out


@dataclass
class Table:
    """Details as data; renderers lay it out (terminal width, Markdown, JSON arrays). A column's header
    may end in layout marks (COLUMN_MARKS, render/layout.py), which no renderer shows."""

    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)


@dataclass
class Finding:
    code: str
    severity: Severity
    section: str
    title: str
    why: str = ""
    fix: list[Fix] = field(default_factory=list)
    docs: str = ""
    tables: list[Table] = field(default_factory=list)
    cause: str | None = None  # the code of the root-cause finding this one follows from


@dataclass
class ProbeOutcome:
    """How a probe ended: ok, skipped, crashed (it raised) or timeout; never raised to the user."""

    name: str
    status: str
    seconds: float
    error: str | None = None
    traceback: str | None = None
    bound: float | None = None  # a timeout: the seconds it had (--timeout, or its own)
    default_bound: float | None = None  # … and the seconds it gets by default, without --timeout

    @property
    def failed(self) -> bool:
        """Crashed or timed out; a probe skipped on request is not a failure."""
        return self.status in ("crashed", "timeout")


@dataclass
class Source:
    """Where the facts came from when they are not this machine's, now (`check --from`)."""

    path: str
    created: str | None = None
    host: str | None = None
    version: str | None = None  # the cudadoctor that made it


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


def plural(n: int, word: str, many: str | None = None) -> str:
    """ "1 GPU", "2 GPUs", "1 process", "3 processes"."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def decide(findings: list[Finding], outcomes: list[ProbeOutcome], fail_on: Severity = Severity.ERROR) -> Status:
    """The one place a report's status is decided. A failed probe makes any report INCOMPLETE: it
    cannot call a machine healthy, and a half-seen machine's errors may have another cause."""
    if any(o.failed for o in outcomes):
        return Status.INCOMPLETE
    if any(f.severity.rank >= max(fail_on.rank, Severity.WARNING.rank) for f in findings):
        return Status.PROBLEMS
    if any(f.severity is Severity.WARNING for f in findings):
        return Status.WARNINGS
    return Status.HEALTHY


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
    status: Status, findings: list[Finding], scope: str | None, fail_on: Severity, undecided: str | None = None
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
    """`undecided`: why the facts cannot support a verdict at all (a paste that shows too little): the
    status is then INCOMPLETE, unless an error was found anyway."""
    from cudadoctor.locale.localize import findings as localized

    findings = localized(findings)  # the current language's titles, pages, fix labels and table headers
    status = decide(findings, outcomes, fail_on)
    if undecided is not None and status is not Status.PROBLEMS:
        status = Status.INCOMPLETE
    else:
        undecided = None
    scope = describe_scope(outcomes, expected) if expected is not None else None
    return Report(
        command=command,
        facts=facts,
        probes=outcomes,
        findings=findings,
        status=status,
        exit_code=status.exit_code,
        verdict=verdict_line(status, findings, scope, fail_on, undecided),
        scope=scope,
        fail_on=fail_on.value,
        requirements=requirements,
        source=source,
    )
