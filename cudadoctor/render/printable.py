"""Text from outside the doctor (a process's command line, a replayed report, an environment variable)
made safe for a terminal: control characters, terminal escapes and bidirectional overrides are shown as
their escapes ("\\x1b", "\\u202e"), so they can neither drive the terminal (set its title, clear it), nor
fake a line of the report, nor reorder what the user reads. Stdlib only: `gpus` imports it at start-up."""

from __future__ import annotations

import re

# DEL and C1 controls, zero-width and bidi marks, line/paragraph separators; C0 (with or without newline)
_OTHERS = "\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x1f{_OTHERS}]")
_UNSAFE_BUT_NEWLINE = re.compile(f"[\x00-\x09\x0b-\x1f{_OTHERS}]")


def _escape(m: re.Match[str]) -> str:
    return m.group().encode("unicode_escape").decode("ascii")


def printable(text: str, newlines: bool = False) -> str:
    """`text` with what a terminal would act on escaped; `newlines` keeps line breaks (a paragraph)."""
    if text.isprintable():  # nearly always: one pass in C
        return text
    return (_UNSAFE_BUT_NEWLINE if newlines else _UNSAFE).sub(_escape, text)
