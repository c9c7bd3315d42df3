"""Free-threaded Python (CD230): a 3.13t/3.14t interpreter installs only cp3XXt or py3-none wheels, and some
torch companions publish none (knowledge/free_threaded.py): pip and uv build those from source (a compiler
and the CUDA toolkit, or a failure), on every install and upgrade."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.knowledge import free_threaded
from cudadoctor.model import Finding, Message, Severity, msg
from cudadoctor.rules.catalogue import entry, fix

FREE_THREADED = entry(
    "CD230",
    "free-threaded-companions-without-wheels",
    Severity.INFO,
    "PyTorch",
    "Installed packages have no build for free-threaded Python",
    """This Python is a free-threaded build (3.13t, 3.14t; PEP 703). It installs only wheels tagged for it
    (cp313t, cp314t) or for any Python (py3-none): a wheel for the regular ABI or the limited API (abi3)
    does not fit. For a package without such a wheel, pip and uv build it from its source on every install
    or upgrade, which needs a C++ compiler and often the CUDA toolkit, and fails without them; a package
    built that way may also turn the GIL back on when it is imported. Each package named here comes with
    what its own tracker says; a package not named is not known either way.""",
)


def evaluate(f: Facts) -> list[Finding]:
    t = f.torch
    if t is None or not t.free_threaded or not t.free_threaded_packages:
        return []
    os_name = f.system.os if f.system is not None else None
    missing = free_threaded.missing_builds(t.free_threaded_packages, os_name)
    if not missing:
        return []
    names = ", ".join(name for name, _version, _row in missing)
    rows = [
        msg("{package} {version}: {what} ({source}).", package=name, version=version, what=row.what, source=row.source)
        for name, version, row in missing
    ]
    regular = (t.python_version or "").rsplit(".", 1)[0]
    label = (
        msg("Use a regular (GIL) Python {version} for these packages: it installs their wheels", version=regular)
        if regular
        else msg("Use a regular (GIL) Python for these packages: it installs their wheels")
    )
    return [
        FREE_THREADED.finding(
            title=msg("No build for free-threaded Python: {names}", names=names),
            why=msg("{page} {rows}", page=msg(FREE_THREADED.explanation), rows=sentences(rows)),
            fix=[fix(label)],
        )
    ]


def sentences(parts: list[Message]) -> Message:
    """Messages one after another, each translated on its own (a separator inside a template, never a
    join of English)."""
    if len(parts) == 1:
        return parts[0]
    return msg("{first} {rest}", first=parts[0], rest=sentences(parts[1:]))
