"""Redaction for reports that leave the machine (--redact): host names (full and short), user names and
GPU/MIG UUIDs (prefixed, shortened or bare). Fix commands are rewritten only where a user name is a path
segment (/home/alice/…): a bare word in a command may be a package name (a user called `torch`)."""

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


def redact(data: Any, hostname: str | None, user: str | None) -> Any:
    """A copy of JSON-ready data with identifying strings replaced; structure and numbers kept."""
    scrub = make_scrub(hostname, user)

    def walk(v: Any, command: bool = False) -> Any:
        if isinstance(v, str):
            return scrub(v, command)
        if isinstance(v, list):
            return [walk(x, command) for x in v]
        if isinstance(v, dict):
            return {k: walk(x, command or k == "commands") for k, x in v.items()}
        return v

    out = walk(data)
    if isinstance(out, dict):
        system = (out.get("facts") or {}).get("system")
        if isinstance(system, dict):
            system["hostname"] = "<host>" if system.get("hostname") else None
            system["user"] = "<user>" if system.get("user") else None
    return out


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
