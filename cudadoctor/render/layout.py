"""Laying text out in columns of the terminal: display widths (a CJK character takes two columns),
wrapping with a hanging indent, and tables that fit a width by cutting what matters least."""

from __future__ import annotations

import unicodedata

from cudadoctor.model import COLUMN_MARKS, Table


def char_width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    return sum(char_width(c) for c in text)


def cut(text: str, width: int, ellipsis: str = "…") -> str:
    """At most `width` columns, with an ellipsis when shortened ("..." where the output lacks "…")."""
    if display_width(text) <= width:
        return text
    out, used = [], 0
    for ch in text:
        w = char_width(ch)
        if used + w > width - len(ellipsis):
            break
        out.append(ch)
        used += w
    return "".join(out) + ellipsis


def cut_left(text: str, width: int, ellipsis: str = "…") -> str:
    """At most `width` columns, keeping the end (of a path) behind an ellipsis."""
    if display_width(text) <= width:
        return text
    out, used = [], 0
    for ch in reversed(text):
        w = char_width(ch)
        if used + w > width - len(ellipsis):
            break
        out.append(ch)
        used += w
    return ellipsis + "".join(reversed(out))


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


# layout marks at the end of a column's header (none is shown): ">" right-aligned; "<" cut from the left,
# keeping the end (paths); "!" identifies the row: cut only once no other column can give way; "?" may be
# left out when the table does not fit (fit_table says what it held)
FLOOR = 6  # no column is cut narrower than this


def column_name(column: str) -> str:
    """A table column's header without its layout marks."""
    return column.rstrip(COLUMN_MARKS)


def _marks(column: str) -> str:
    return column[len(column_name(column)) :]


def table_lines(table: Table, width: int) -> list[str]:
    """Header and rows in aligned columns within `width` (see fit_table)."""
    return fit_table(table, width)[0]


def fit_table(table: Table, width: int, ellipsis: str = "…") -> tuple[list[str], list[tuple[str, str | None]]]:
    """Header and rows in aligned columns within `width`, and the columns left out: (header, the value
    every row holds, or None where the rows differ). What matters least goes first: columns marked "?"
    (those whose rows all hold one value first, then the last first), then the widest unmarked column is
    shortened, and only then the identifying ones ("!")."""
    marks = [_marks(c) for c in table.columns]
    header = [column_name(c) for c in table.columns]
    rows = [[str(r[i]) if i < len(r) else "" for i in range(len(header))] for r in table.rows]
    natural = [max([display_width(header[i])] + [display_width(r[i]) for r in rows]) for i in range(len(header))]
    gap = 2
    shown = list(range(len(header)))

    def total(cols: list[int], ws: list[int]) -> int:
        return sum(ws[i] for i in cols) + gap * (len(cols) - 1)

    def uniform(i: int) -> str | None:
        values = {r[i] for r in rows}
        return values.pop() if len(values) == 1 else None

    optional = sorted((i for i in shown if "?" in marks[i]), key=lambda i: (uniform(i) is None, -i))
    left_out: list[tuple[str, str | None]] = []
    for i in optional:
        if total(shown, natural) <= width or len(shown) == 1:
            break
        shown.remove(i)
        left_out.append((header[i], uniform(i)))
    widths = list(natural)
    while total(shown, widths) > width:
        wide = [i for i in shown if widths[i] > FLOOR]
        if not wide:
            break
        others = [i for i in wide if "!" not in marks[i]]
        widest = max(others or wide, key=lambda i: widths[i])
        widths[widest] -= 1
    out = []
    for cells in [header, *rows]:
        parts = []
        for i in shown:
            shorten = cut_left if "<" in marks[i] and cells is not header else cut
            parts.append(pad(shorten(cells[i], widths[i], ellipsis), widths[i], ">" in marks[i]))
        out.append((" " * gap).join(parts).rstrip())
    return out, sorted(left_out, key=lambda c: header.index(c[0]))
