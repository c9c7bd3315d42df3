"""Redaction for reports that leave the machine (--redact): host names (full and short), user names and
GPU/MIG UUIDs (prefixed, shortened or bare). Fix commands are rewritten only where a user name is a path
segment (/home/alice/…): a bare word in a command may be a package name (a user called `torch`).

One mechanism for every command: field_scrub(hostname, user) says what any field becomes, and both
`check --redact` (redact() of the report's data) and `gpus --redact` (its table and its JSON) use it. A
field that holds a user or host name is replaced whole, whoever it names (root, another user's GPU
process): a name is identifying wherever it appears."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# GPU-/MIG- UUIDs whole or shortened (tables show GPU-1a2b3c4d), and bare 8-4-4-4-12 UUIDs (torch's)
_UUID = re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{4}[0-9a-fA-F-]*")
_BARE_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")


def make_scrub(hostname: str | None, user: str | None) -> Callable[[str, bool], str]:
    names = []
    if hostname:
        names.append(hostname)
        short = hostname.split(".")[0]
        if short != hostname:
            names.append(short)
    host_re = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(n) for n in names) + r")(?![\w-])") if names else None
    user_path = re.compile(rf"(?<=/home/){re.escape(user)}\b|(?<=/Users/){re.escape(user)}\b") if user else None
    user_word = re.compile(rf"(?<![\w./-]){re.escape(user)}(?![\w-])") if user and user != "root" else None

    def scrub(text: str, command: bool = False) -> str:
        text = _UUID.sub(lambda m: f"{m.group(1)}-<redacted>", text)
        text = _BARE_UUID.sub("<uuid>", text)
        if host_re is not None and not command:
            text = host_re.sub("<host>", text)
        if user_path is not None:
            text = user_path.sub("<user>", text)
        if user_word is not None and not command:
            text = user_word.sub("<user>", text)
        return text

    return scrub


# fields whose whole value is a name: facts.system.user and .hostname, a GPU process's owner
WHOLE = {"user": "<user>", "hostname": "<host>"}


def field_scrub(hostname: str | None, user: str | None) -> Callable[[str, str], str]:
    """scrub(field, text): what a field's text becomes under --redact. "commands" (fix commands) are
    rewritten only where the user name is a path segment; a name field (WHOLE) is replaced whole."""
    scrub = make_scrub(hostname, user)

    def apply(key: str, text: str) -> str:
        if key in WHOLE:
            return WHOLE[key] if text else text
        return scrub(text, key == "commands")

    return apply


def redact(data: Any, hostname: str | None, user: str | None) -> Any:
    """A copy of JSON-ready data with identifying strings replaced; structure and numbers kept."""
    scrub = field_scrub(hostname, user)

    def walk(v: Any, key: str = "") -> Any:
        if isinstance(v, str):
            return scrub(key, v)
        if isinstance(v, list):
            return [walk(x, key) for x in v]
        if isinstance(v, dict):
            # inside a fix's "commands" every string is a command
            return {k: walk(x, key if key == "commands" else k) for k, x in v.items()}
        return v

    return walk(data)


def _identity(report: Any) -> tuple[str | None, str | None]:
    s = getattr(report.facts, "system", None)
    return (s.hostname, s.user) if s is not None else (None, None)


def scrubber(report: Any, redact_ids: bool) -> Callable[[str, bool], str]:
    """What the text renderer passes every line through: identity when not redacting."""
    if not redact_ids:
        return lambda text, command=False: text
    return make_scrub(*_identity(report))


def report_data(report: Any, redact_ids: bool) -> Any:
    """The report as JSON-ready data, redacted when asked: what both JSON and Markdown render."""
    from cudadoctor.facts.codec import to_jsonable

    data = to_jsonable(report)
    if not redact_ids:
        return data
    return redact(data, *_identity(report))
