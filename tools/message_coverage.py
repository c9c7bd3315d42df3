"""How much of what the examples' findings say is written as templates (model.msg) and shown in zh_CN.

For every finding every example raises (cudadoctor.rules.examples): is its title, page text and each fix
label a template (a Message), or a text the catalogue holds as it is; and does its zh_CN rendering still
show an English phrase (three or more English words in a row outside a command, path or name).

    python tools/message_coverage.py            # totals, and each code with what is still English
    python tools/message_coverage.py CD205 -v    # one code, with the texts
"""

from __future__ import annotations

import re
import sys

from cudadoctor import locale as i18n
from cudadoctor.model import Finding, Message

ENGLISH_PHRASE = re.compile(r"(?<![\w./\-'`=])(?:[A-Za-z][a-z]+[,;:]? ){2,}[A-Za-z][a-z]+\b")


def static(code: str, field: str, text: str) -> bool:
    """A text the catalogue (or the translation catalogue) holds as it is."""
    from cudadoctor.locale import _
    from cudadoctor.rules.catalogue import CATALOGUE

    e = CATALOGUE.get(code)
    if e is not None and text in (e.summary, e.explanation):
        return True
    with i18n.use("zh_CN"):
        return bool(text) and _(text) != text


def english_left(text: str) -> list[str]:
    # commands, quoted names and paths are English by design
    text = re.sub(r"`[^`]*`|\"[^\"]*\"|'[^']*'|\([^()]*\)|\S*[/\\]\S*", " ", text)
    return ENGLISH_PHRASE.findall(text)


def verbatim(text: object) -> list[str]:
    """The arguments a message shows as they are (facts: names, paths, a library's own error text), at any
    depth: English there is the machine's, not ours."""
    if not isinstance(text, Message):
        return []
    out: list[str] = []
    for value in text.args.values():
        out += verbatim(value) if isinstance(value, Message) else [str(value)]
    return out


def without_facts(shown: str, original: object) -> str:
    """`shown` with the verbatim arguments of `original` taken out, longest first."""
    for value in sorted(verbatim(original), key=len, reverse=True):
        if value:
            shown = shown.replace(value, " ")
    return shown


def texts(f: Finding) -> list[tuple[str, str]]:
    out = [("title", f.title), ("why", f.why)]
    out += [("fix", x.when) for x in f.fix]
    return [(k, v) for k, v in out if v]


def findings() -> list[Finding]:
    from cudadoctor.rules.examples import examples

    return [f for ex in examples().values() for f in ex.findings()]


def main(argv: list[str]) -> int:
    from cudadoctor.render.localize import finding as localized

    only = [a for a in argv if a.startswith("CD")]
    verbose = "-v" in argv
    total = templated = shown = 0
    seen: set[tuple[str, str, str]] = set()
    per_code: dict[str, list[str]] = {}
    for f in findings():
        if only and f.code not in only:
            continue
        with i18n.use("zh_CN"):
            zh = localized(f)
        zh_texts = dict(enumerate(t for _k, t in texts(zh)))
        for i, (field, text) in enumerate(texts(f)):
            key = (f.code, field, str(text))
            if key in seen:
                continue
            seen.add(key)
            total += 1
            ok_template = isinstance(text, Message) or static(f.code, field, text)
            templated += ok_template
            left = english_left(without_facts(zh_texts.get(i, ""), text))
            shown += not left
            if not ok_template or left:
                per_code.setdefault(f.code, []).append(
                    f"  {field}: {'template' if ok_template else 'f-string'}"
                    + (f"; English in zh: {left[:2]}" if left else "")
                    + (f"\n    {str(text)[:160]!r}" if verbose else "")
                )
    for code in sorted(per_code):
        print(code)
        print("\n".join(per_code[code]))
    print(f"texts: {total}; templates or catalogue texts: {templated}; no English phrase in zh_CN: {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
