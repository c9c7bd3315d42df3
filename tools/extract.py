"""Babel extractors for the texts that are not `_()` calls (babel.cfg names them; docs/translating.md).

- `catalogue`: every finding's summary and page, the usual fixes' labels, the section names and the
  severity words, read from the rules' catalogue as it is at run time (pages are whitespace-normalised
  there, so the source text would not match); and the knowledge tables' sentences the rules quote.
- `rules`: in the rule modules, the labels of `fix("label", ...)`, the columns of `Table([...])` and the
  literal `title=` / `why=` of `.finding(...)`; f-strings are built from facts and are left out.

Used only when extracting (pybabel, with PYTHONPATH=. so that `tools` imports); nothing at run time
imports this module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from cudadoctor.model import COLUMN_MARKS

Extracted = Iterator[tuple[int, str | None, str, list[str]]]

SEVERITIES = ("error", "warning", "info", "ok")


def extract_catalogue(fileobj: Any, keywords: Any, comment_tags: Any, options: Any) -> Extracted:
    import cudadoctor.rules  # noqa: F401  (every rule module declares its entries)
    from cudadoctor.rules.catalogue import CATALOGUE, SECTIONS

    for section in SECTIONS:
        yield 1, None, section, ["section name"]
    for severity in SEVERITIES:
        yield 1, None, severity, ["severity word"]
    for e in sorted(CATALOGUE.values(), key=lambda e: e.code):
        yield 1, None, e.summary, [f"{e.code} summary"]
        yield 1, None, e.explanation, [f"{e.code} page"]
        for f in e.fixes:
            yield 1, None, f.when, [f"{e.code} fix label"]
    yield from _knowledge()
    if fileobj is not None:  # the msg() templates written in catalogue.py itself (named())
        yield from _messages(ast.parse(fileobj.read().decode("utf-8")))


def _knowledge() -> Extracted:
    """What the rules quote from the knowledge tables into titles and pages: what a cuInit result and an
    NVML return code mean, each Xid's name and advice, and how each platform gets a CUDA torch."""
    from cudadoctor.knowledge.cuda_errors import CU_INIT_ERRORS, NVML_ERRORS
    from cudadoctor.knowledge.xid import XIDS

    for number, (name, meaning) in sorted(CU_INIT_ERRORS.items()):
        yield 1, None, meaning, [f"cuInit {number} {name}"]
    for name, (_number, meaning, _advice) in NVML_ERRORS.items():
        yield 1, None, meaning, [f"NVML {name}"]
    for xid in XIDS.values():
        yield 1, None, xid.title, [f"Xid {xid.code} name"]
        yield 1, None, xid.action, [f"Xid {xid.code} advice"]
    from cudadoctor.knowledge.wheels import platform_note

    for where in ((None, None, True), ("Windows", None, False), ("Darwin", None, False), ("Linux", "aarch64", False)):
        if note := platform_note(*where):
            yield 1, None, note, ["platform note"]


def _literal(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value else None


def _literals(node: ast.AST) -> list[str]:
    """A template argument: a literal, or each branch of `"a" if x else "b"`."""
    if isinstance(node, ast.IfExp):
        return _literals(node.body) + _literals(node.orelse)
    text = _literal(node)
    return [text] if text else []


def _messages(tree: ast.AST) -> Extracted:
    """`msg("template", ...)` and `msg_n("one", "many", n, ...)` (model.msg): the templates where a finding's
    title, page or fix label is raised."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _name(node)
        if name == "msg" and node.args:
            for text in _literals(node.args[0]):
                yield node.lineno, None, text, ["message"]
        elif name == "msg_n" and len(node.args) >= 2:
            for one, many in zip(_literals(node.args[0]), _literals(node.args[1]), strict=False):
                yield node.lineno, "ngettext", (one, many), ["message"]  # type: ignore[misc]


def _name(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _babel_python(source: bytes, keywords: Any, comment_tags: Any, options: Any) -> Extracted:
    from io import BytesIO

    from babel.messages.extract import DEFAULT_KEYWORDS
    from babel.messages.extract import extract_python as babel_python

    yield from babel_python(BytesIO(source), keywords or DEFAULT_KEYWORDS, comment_tags or (), options or {})


def extract_python(fileobj: Any, keywords: Any, comment_tags: Any, options: Any) -> Extracted:
    """Babel's Python extractor (`_()`, `N_()`, `ngettext()`), and the `msg()` templates."""
    source = fileobj.read()
    yield from _babel_python(source, keywords, comment_tags, options)
    yield from _messages(ast.parse(source.decode("utf-8")))


def extract_rules(fileobj: Any, keywords: Any, comment_tags: Any, options: Any) -> Extracted:
    source = fileobj.read()
    tree = ast.parse(source.decode(options.get("encoding", "utf-8") if options else "utf-8"))
    yield from _babel_python(source, keywords, comment_tags, options)
    yield from _messages(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _name(node)
        if name == "fix" and node.args and (text := _literal(node.args[0])):
            yield node.lineno, None, text, ["fix label"]
        elif name == "Table" and node.args and isinstance(node.args[0], ast.List):
            for column in node.args[0].elts:
                if text := _literal(column):
                    yield node.lineno, None, text.rstrip(COLUMN_MARKS), ["table column"]
        elif name == "finding":
            for kw in node.keywords:
                if kw.arg in ("title", "why") and (text := _literal(kw.value)):
                    yield node.lineno, None, text, [kw.arg]


def extract_click(fileobj: Any, keywords: Any, comment_tags: Any, options: Any) -> Extracted:
    """A command module: its `_()` calls (Babel's Python extractor), and its click help texts: `help=`
    and `short_help=` literals, the docstrings of the command functions (cleaned, as `cli._localize_help` looks them up)
    and the short helps of the command table (`COMMANDS`)."""
    source = fileobj.read()
    yield from extract_python(__import__("io").BytesIO(source), keywords, comment_tags, options)
    tree = ast.parse(source.decode("utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if getattr(node.func, "id", "") == "fail" and node.args and (text := _literal(node.args[0])):
                yield node.lineno, None, text, ["usage error"]  # commands/output.fail translates it
            for kw in node.keywords:
                if kw.arg in ("help", "short_help") and (text := _literal(kw.value)):
                    yield node.lineno, None, text, ["help text"]
        elif isinstance(node, ast.FunctionDef) and node.decorator_list:
            decorators = ast.unparse(node.decorator_list[-1]) + ast.unparse(node.decorator_list[0])
            if "command" in decorators or "group" in decorators:
                doc = ast.get_docstring(node, clean=True)
                if doc:
                    yield node.lineno, None, doc, ["help text"]
        elif isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "COMMANDS":
            for value in getattr(node.value, "values", []):
                if isinstance(value, ast.Tuple) and len(value.elts) == 2 and (text := _literal(value.elts[1])):
                    yield value.lineno, None, text, ["command summary"]
