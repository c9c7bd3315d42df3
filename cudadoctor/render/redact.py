"""Redaction for reports that leave the machine: host and user names, GPU and MIG UUIDs."""

from __future__ import annotations

import re
from typing import Any

# whole UUIDs, and the shortened ones tables show (GPU-1a2b3c4d-)
_UUID = re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{4}[0-9a-fA-F-]*")


def redact(data: Any, hostname: str | None, user: str | None) -> Any:
    """A copy of JSON-ready data with identifying strings replaced; structure and numbers kept."""

    def scrub(text: str) -> str:
        text = _UUID.sub(lambda m: f"{m.group(1)}-<redacted>", text)
        if hostname and len(hostname) > 1:
            text = re.sub(rf"\b{re.escape(hostname)}\b", "<host>", text)
        if user and len(user) > 1:
            text = re.sub(rf"(?<=/home/){re.escape(user)}\b", "<user>", text)
            text = re.sub(rf"(?<=/Users/){re.escape(user)}\b", "<user>", text)
            text = re.sub(rf"\b{re.escape(user)}\b", "<user>", text) if user != "root" else text
        return text

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return scrub(v)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    out = walk(data)
    if isinstance(out, dict):
        system = (out.get("facts") or {}).get("system")
        if isinstance(system, dict):
            system["hostname"] = "<host>" if system.get("hostname") else None
            system["user"] = "<user>" if system.get("user") else None
    return out


def report_data(report: Any, redact_ids: bool) -> Any:
    """The report as JSON-ready data, redacted when asked: what both JSON and Markdown render."""
    from cudadoctor.serial import to_jsonable

    data = to_jsonable(report)
    if not redact_ids:
        return data
    s = report.facts.system
    return redact(data, s.hostname if s else None, s.user if s else None)
