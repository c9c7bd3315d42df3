"""A cudadoctor report someone pasted: the JSON envelope (`check --format json`) or the Markdown
report (`check --format markdown`, whose "Facts (JSON)" block carries the facts). Its facts are the
machine's own, so they are taken whole, through the same readers as `check --from`."""

from __future__ import annotations

import json
import re
from typing import Any

_MD_HEAD = re.compile(r"^#+ cudadoctor \S+ report\s*$", re.M)
_FACTS_BLOCK = re.compile(r"<summary>Facts \(JSON\)</summary>\s*```json\s*(\{.*?\})\s*```", re.S)


def detect(raw: str) -> bool:
    return '"tool": "cudadoctor"' in raw or bool(_MD_HEAD.search(raw))


def parse(raw: str) -> tuple[Any, str, tuple[int, int]] | None:
    """(Facts, "cudadoctor JSON report" | "cudadoctor Markdown report", the report's span in raw), or
    None when no report's facts can be read. The span is taken out before the other formats are read:
    the report's own texts (a load error it recorded) are facts, not a new error."""
    from cudadoctor.facts import Facts
    from cudadoctor.facts.codec import FormatError, from_jsonable, load_report

    decoder = json.JSONDecoder()
    for tries, m in enumerate(re.finditer(r"\{", raw)):
        if tries >= 20 or '"tool"' not in raw[m.start() :]:
            break
        try:
            data, end = decoder.raw_decode(raw, m.start())
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(data, dict) and data.get("tool") == "cudadoctor" and "facts" in data:
            try:
                facts, _, _ = load_report(json.dumps(data))
            except (FormatError, RecursionError, TypeError, ValueError):
                return None
            return facts, "cudadoctor JSON report", (m.start(), end)
    block = _FACTS_BLOCK.search(raw)
    head = _MD_HEAD.search(raw)
    if block and head:
        try:
            data = json.loads(block.group(1))
            return from_jsonable(Facts, data, "$.facts"), "cudadoctor Markdown report", (head.start(), block.end())
        except (json.JSONDecodeError, FormatError, RecursionError, TypeError, ValueError):
            return None
    return None
