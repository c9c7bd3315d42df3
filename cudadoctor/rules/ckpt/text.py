"""Pieces of the checkpoint findings' text, as templates (model.msg) so they are shown translated: a size
that may be unknown, a count of tensors, a list of parts; and the quoting of a path in a fix's lines."""

from __future__ import annotations

import shlex

from cudadoctor.knowledge.units import format_size
from cudadoctor.model import Message, msg, msg_n


def py(path: str) -> str:
    """A path as a Python literal (a fix's Python lines)."""
    return repr(path)


def sh(path: str) -> str:
    """A path as one shell word (a fix's shell lines)."""
    return shlex.quote(path)


def size(n: int | None) -> str:
    return format_size(n) if n is not None else msg("unknown size")


def tensors(n: int) -> Message:
    return msg_n("{n} tensor", "{n} tensors", n, n=n)


def comma_list(parts: list[str]) -> str:
    """ "a, b, c": the separator is a template too, so a translation joins the parts its own way."""
    out = parts[0]
    for part in parts[1:]:
        out = msg("{list}, {item}", list=out, item=part)
    return out


def semicolon_list(parts: list[str]) -> str:
    """ "a; b; c", as comma_list."""
    out = parts[0]
    for part in parts[1:]:
        out = msg("{list}; {item}", list=out, item=part)
    return out
