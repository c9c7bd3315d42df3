"""Laying text out in columns of the terminal: display widths (a CJK character takes two columns),
wrapping with a hanging indent, and tables that fit a width by shortening their widest column."""

from __future__ import annotations

import unicodedata

from cudadoctor.report import Table


def char_width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    return sum(char_width(c) for c in text)


def cut(text: str, width: int) -> str:
    """At most `width` columns, with an ellipsis when shortened."""
    if display_width(text) <= width:
        return text
    out, used = [], 0
    for ch in text:
        w = char_width(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"


def cut_left(text: str, width: int) -> str:
    """At most `width` columns, keeping the end (of a path) behind an ellipsis."""
    if display_width(text) <= width:
        return text
    out, used = [], 0
    for ch in reversed(text):
        w = char_width(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "…" + "".join(reversed(out))


def pad(text: str, width: int, right: bool = False) -> str:
    fill = " " * max(0, width - display_width(text))
    return fill + text if right else text + fill


def _split_long(words: list[str], width: int) -> list[str]:
    """A word wider than a whole line (a long path or URL in prose) is cut into line-sized pieces, so
    the text keeps to its width. Commands are never wrapped at all (the renderers print them whole)."""
    out: list[str] = []
    for word in words:
        while display_width(word) > width:
            piece, used = "", 0
            for ch in word:
                if used + char_width(ch) > width:
                    break
                piece += ch
                used += char_width(ch)
            out.append(piece)
            word = word[len(piece) :]
        out.append(word)
    return out


def wrap(text: str, width: int, hang: int = 0) -> list[str]:
    """Words into lines of at most `width` columns; lines after the first are indented by `hang`."""
    width = max(20, width)
    lines: list[str] = []
    for para in text.split("\n"):
        line, used = "", 0
        for word in _split_long(_words(para), width - hang):
            w = display_width(word)
            limit = width - (hang if lines else 0)
            if line and used + w > limit:
                lines.append(line.rstrip())
                line, used = "", 0
                word = word.lstrip()
                w = display_width(word)
            line += word
            used += w
        lines.append(line.rstrip())
    return [(" " * hang + ln if i else ln) for i, ln in enumerate(lines)]


# CJK punctuation that never starts a line (it stays with what comes before) or never ends one
_NO_LINE_START = frozenset("，。、；：！？）」』】》〉")
_NO_LINE_END = frozenset("（「『【《〈")


def _words(text: str) -> list[str]:
    """Split after spaces and between CJK characters (which may break anywhere, except before closing
    punctuation)."""
    out: list[str] = []
    cur = ""
    for ch in text:
        if ch in _NO_LINE_START and (cur or out):
            if cur:
                out.append(cur + ch)
                cur = ""
            else:
                out[-1] += ch
        elif ch in _NO_LINE_END:
            if cur and cur[-1] not in _NO_LINE_END:
                out.append(cur)
                cur = ""
            cur += ch
        elif char_width(ch) == 2:
            if cur and cur[-1] in _NO_LINE_END:
                out.append(cur + ch)
            else:
                if cur:
                    out.append(cur)
                out.append(ch)
            cur = ""
        elif ch == " ":
            out.append(cur + ch)
            cur = ""
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


def column_name(column: str) -> str:
    """A table column's header without its layout mark (">" right-aligned, "<" cut from the left)."""
    return column.rstrip("<>")


def table_lines(table: Table, width: int) -> list[str]:
    """Header and rows in aligned columns within `width`, shortening the widest column first.
    Columns whose header ends with ">" are right-aligned; those ending with "<" (paths) are shortened
    from the left, keeping their end (neither mark is shown)."""
    right = [c.endswith(">") for c in table.columns]
    left_cut = [c.endswith("<") for c in table.columns]
    header = [column_name(c) for c in table.columns]
    rows = [[str(x) for x in r] for r in table.rows]
    widths = [
        max([display_width(header[i])] + [display_width(r[i]) for r in rows if i < len(r)]) for i in range(len(header))
    ]
    gap = 2
    while sum(widths) + gap * (len(widths) - 1) > width and max(widths) > 6:
        widest = widths.index(max(widths))
        widths[widest] -= 1
    out = []
    for cells in [header, *rows]:
        parts = [
            pad(
                (cut_left if left_cut[i] and cells is not header else cut)(
                    cells[i] if i < len(cells) else "", widths[i]
                ),
                widths[i],
                right[i],
            )
            for i in range(len(widths))
        ]
        out.append((" " * gap).join(parts).rstrip())
    return out
