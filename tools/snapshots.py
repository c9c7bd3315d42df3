"""Each finding code's snapshot: its own example's finding (rules/examples/table.py), rendered as the
terminal report shows it, in English and in zh_CN, one file per code in tests/snapshots/CODE.txt.

tests/rules/test_examples.py compares every file with what the rules say now. After a change that is
meant to change what a finding says (a title, a fix, a translation), regenerate them and review the diff
as part of the change (like ruff's snapshots):

    python tools/snapshots.py --update        # rewrite every snapshot, remove the ones without a code
    python tools/snapshots.py --update CD101  # only these codes
    python tools/snapshots.py                 # say which snapshots differ, change nothing (exit 1 if any)
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = ROOT / "tests" / "snapshots"
LANGUAGES = ("en", "zh_CN")
UPDATE = "python tools/snapshots.py --update"


def _render(finding: object) -> str:
    from cudadoctor.render.text import _finding, _Writer, make_console

    buf = io.StringIO()
    console = make_console(buf)
    _finding(_Writer(console, 80, False, lambda text, command: text), finding)  # type: ignore[arg-type]
    return buf.getvalue()


def snapshot(code: str) -> str:
    """The text of CODE's snapshot: which example, then the finding in each language."""
    from cudadoctor import locale as i18n
    from cudadoctor.render.localize import finding as localized
    from cudadoctor.rules.examples import own_example

    ex = own_example(code)
    if ex is None:
        raise LookupError(f"{code}: no example names it in cudadoctor/rules/examples/table.py")
    found = [f for f in ex.findings() if f.code == code]
    if not found:
        raise LookupError(f"{code}: its example {ex.name} does not raise it")
    parts = [f"{code}: example {ex.name!r} (cudadoctor {ex.command})\n"]
    for language in LANGUAGES:
        with i18n.use(language):
            text = "".join(_render(localized(f)) for f in found)
        parts.append(f"--- {language} ---\n{text}")
    return "\n".join(parts)


def path(code: str) -> Path:
    return SNAPSHOTS / f"{code}.txt"


def orphans() -> list[Path]:
    """Snapshot files whose code the catalogue no longer has."""
    from cudadoctor.rules import CATALOGUE

    return sorted(p for p in SNAPSHOTS.glob("*.txt") if p.stem not in CATALOGUE)


def main(argv: list[str]) -> int:
    from cudadoctor.rules import CATALOGUE

    update = "--update" in argv
    codes = [a.upper() for a in argv if not a.startswith("-")] or sorted(CATALOGUE)
    differ = []
    SNAPSHOTS.mkdir(parents=True, exist_ok=True)
    for code in codes:
        text = snapshot(code)
        p = path(code)
        if p.is_file() and p.read_text(encoding="utf-8") == text:
            continue
        differ.append(code)
        if update:
            p.write_text(text, encoding="utf-8")
    stale = orphans()
    if update:
        for p in stale:
            p.unlink()
    verb = "updated" if update else "differ"
    print(f"{len(differ)} of {len(codes)} snapshots {verb}" + (f": {' '.join(differ)}" if differ else ""))
    if stale:
        print(f"{'removed' if update else 'without a code'}: {' '.join(p.name for p in stale)}")
    return 0 if update or not (differ or stale) else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
