"""Findings in the current language, translated where they are shown.

A title, page text, fix label or table header is a template where the rule raised it (model.msg): its
template is translated and filled with its arguments, which are shown as they are unless they are
templates themselves. A plain text is translated when the catalogue holds it (a catalogue summary or page,
a literal label). A plain title that is neither (an older rule's text) keeps its English detail after the
translated summary; nothing is matched back from English. Codes, commands and table cells are never
touched.
"""

from __future__ import annotations

import dataclasses
import re

from cudadoctor.locale import ENGLISH, _, current, ngettext
from cudadoctor.model import COLUMN_MARKS, Finding, Fix, Message, Table

SEPARATOR = "："  # between a translated summary and an English detail


def message(m: Message) -> str:
    """A message in the current language: its template translated, then filled with its arguments, each
    shown as it is unless it is a message itself. A translation whose placeholders do not fit its template
    (a catalogue error) shows the English rather than fail the report."""
    if current() == ENGLISH:
        return str(m)
    template = ngettext(m.template, m.plural, m.count or 0) if m.plural is not None else _(m.template)
    if not m.args:
        return template
    try:
        return template.format(**{k: message(v) if isinstance(v, Message) else v for k, v in m.args.items()})
    except (KeyError, IndexError, ValueError):
        return str(m)


def title(code: str, text: str) -> str:
    if isinstance(text, Message):
        return message(text)
    from cudadoctor.rules.catalogue import CATALOGUE

    entry = CATALOGUE.get(code)
    translated = _(text)
    if translated != text:
        return translated
    if entry is None:
        return text
    summary = _(entry.summary)
    if summary == entry.summary:
        return text
    if text.startswith(entry.summary):
        rest = text[len(entry.summary) :]
        if rest[:1] in (":", ";", ","):
            return summary + SEPARATOR + _(rest[1:].strip())
        return summary + rest
    return f"{summary}{SEPARATOR}{text}"


def label(text: str, depth: int = 0) -> str:
    """A fix label: exact, by template (its values translated in turn), sentence by sentence, or part by
    part ("; ")."""
    if current() == ENGLISH:
        return text
    if isinstance(text, Message):
        return message(text)
    translated = _(text)
    if translated != text or depth > 3:
        return translated
    if "; " in text:
        # a list of parts ("loss fell on cpu, cuda:0; AMP bfloat16 ok; ..."): part by part when each has a
        # translation, so no template's last placeholder swallows the parts after it
        parts = text.split("; ")
        done = [label(part, depth + 1) for part in parts]
        if all(d != part for d, part in zip(done, parts, strict=True)):
            return _("; ").join(done)
    sentences = re.split(r"(?<=[a-z0-9)]\.) (?=[A-Za-z])", text)  # facts a rule adds to a page, one sentence each
    if len(sentences) > 1:
        out = ""
        for sentence in (label(x, depth + 1) for x in sentences):
            out += sentence if not out or (out.endswith("。") and not sentence.isascii()) else " " + sentence
        return out
    if text.endswith(".") and (whole := label(text[:-1], depth + 1)) != text[:-1]:
        return whole + "。"
    if "; " in text:
        return _("; ").join(label(part, depth + 1) for part in text.split("; "))
    cited = re.fullmatch(r"(CD\d{3}) (.+)", text, re.DOTALL)  # "CD202 <its title>", as a cause is named
    if cited:
        return f"{cited[1]} {title(cited[1], cited[2])}"
    return text


def why(code: str, text: str) -> str:
    from cudadoctor.rules.catalogue import CATALOGUE

    if not text:
        return text
    if isinstance(text, Message):
        return message(text)
    translated = _(text)
    entry = CATALOGUE.get(code)
    if translated != text or entry is None:
        return translated
    explanation = _(entry.explanation)
    if explanation == entry.explanation:
        return text
    if text.startswith(entry.explanation):  # the page with this machine's facts after it
        rest = text[len(entry.explanation) :].strip()
        return f"{explanation}\n{label(rest)}" if rest else explanation
    # facts the page cannot know: the translated page, then this machine's detail as the rule wrote it
    return f"{explanation}\n{label(text)}"


def column(name: str) -> str:
    bare = name.rstrip(COLUMN_MARKS)  # the layout marks (render/layout.py) stay
    if isinstance(name, Message):  # a header built from facts ("all {n} nodes")
        return message(name).rstrip(COLUMN_MARKS) + name[len(bare) :]
    return _(bare) + name[len(bare) :]


def finding(f: Finding) -> Finding:
    return dataclasses.replace(
        f,
        title=title(f.code, f.title),
        why=why(f.code, f.why),
        fix=[Fix(when=label(x.when), commands=list(x.commands), lang=x.lang) for x in f.fix],
        tables=[Table([column(c) for c in t.columns], t.rows) for t in f.tables],
    )


def findings(items: list[Finding]) -> list[Finding]:
    """`items` in the current language (the same list in English)."""
    if current() == ENGLISH:
        return items
    return [finding(f) for f in items]
