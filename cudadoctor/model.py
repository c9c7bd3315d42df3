"""The data types every layer shares: a finding's severity, fixes and tables, how a probe ended, where the
facts came from. Below everything: it imports nothing of cudadoctor, so backends, probes, rules, report,
render and the locale layer can all use it without importing each other."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from cudadoctor.exitcodes import EXIT_INCOMPLETE, EXIT_OK, EXIT_PROBLEMS


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


class Message(str):
    """English text that keeps the template and the arguments it was made from, so that a renderer can show
    it in another language (render/localize.py). It is a str: JSON, JUnit and every test read the English.

    Arguments are shown as they are (names, versions, paths, commands are never translated), except an
    argument that is itself a Message, which is translated in turn. `plural`/`count`: the template for a count
    other than 1,
    chosen by the language's plural rule (gettext's ngettext) when translated."""

    template: str
    plural: str | None
    count: int | None
    args: dict[str, object]

    def __new__(cls, template: str, plural: str | None = None, count: int | None = None, /, **args: object) -> Message:
        chosen = plural if plural is not None and count != 1 else template
        self = super().__new__(cls, chosen.format(**args) if args else chosen)
        self.template, self.plural, self.count, self.args = template, plural, count, args
        return self

    def __reduce__(self) -> tuple[object, ...]:  # copies and pickles keep the template
        return (_message, (self.template, self.plural, self.count, self.args))


def _message(template: str, plural: str | None, count: int | None, args: dict[str, object]) -> Message:
    return Message(template, plural, count, **args)


def msg(template: str, /, **args: object) -> Message:
    """A finding's title, page text or fix label, written as a template where it is raised:
    `msg("torch {version} has no kernels for {gpu}", version=v, gpu=name)`. The extractor (tools) collects
    the literal template for translation; a conditional (`"a" if x else "b"`) yields both."""
    return Message(template, **args)


def msg_n(singular: str, plural: str, n: int, /, **args: object) -> Message:
    """A message with plural forms: `msg_n("{n} GPU", "{n} GPUs", count, n=count)`."""
    return Message(singular, plural, n, **args)


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
    python: str | None = None  # a timeout in another interpreter (--python): the one it ran in

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


def plural(n: int, word: str, many: str | None = None) -> str:
    """ "1 GPU", "2 GPUs", "1 process", "3 processes"."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


# The one status of a report, decided in one place (report.build), and by fleet for each node's findings
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
