"""Turning what people paste into lines the format parsers can read: line endings, ANSI colours,
Markdown fences and quotes, HTML details tags, overlong lines; and one joined form for error texts
that a narrow terminal or an issue editor wrapped."""

from __future__ import annotations

import re

MAX_LINE = 4000  # longer lines are cut: no format here has meaningful lines this long
MAX_LINES = 20_000  # a longer paste (a whole log) is read at its start and its end, where the report
# and the final traceback are

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_FENCE = re.compile(r"^\s*(?:```|~~~)[`~]*")
_INFO_STRING = re.compile(r"[\w+.#-]{1,30}(?:\s*\{[^}]*\})?")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_TAGS = re.compile(r"</?(?:details|summary|pre|code|br|p)\b[^>]*>", re.I)


# typographic quotes as people's editors and translated posts write them (‘ ’ ‚ ‛ ′ “ ” „ ″): every reader's
# patterns are written with ASCII quotes ("couldn't communicate", 'torchvision::nms')
_TYPOGRAPHIC = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u2032": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u2033": '"',
}


def _ascii_quotes(text: str) -> str:
    # str.replace per quote present: str.translate with a mapping costs tens of ms on a 1 MB paste
    for quote, ascii_quote in _TYPOGRAPHIC.items():
        if quote in text:
            text = text.replace(quote, ascii_quote)
    return text


def lines(text: str) -> list[str]:
    """The paste as lines: no CR, no colours, no fences, no quote markers, no tab surprises, ASCII quotes."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\ufeff", "")
    text = _ascii_quotes(text)
    text = _ANSI.sub("", text)
    raw_lines = text.split("\n")
    if len(raw_lines) > MAX_LINES:
        raw_lines = raw_lines[: MAX_LINES // 2] + raw_lines[-MAX_LINES // 2 :]
    out = []
    for raw in raw_lines:
        fence = _FENCE.match(raw)
        if fence:
            # a fence line is dropped, but not the text pasted on it ("```RuntimeError: CUDA out of memory…",
            # lllyasviel/ControlNet#301); a bare info string ("```python", "```sh") is no text
            raw = raw[fence.end() :].strip().rstrip("`~").strip()
            if not raw or _INFO_STRING.fullmatch(raw):
                continue
        line = _QUOTE.sub("", raw)
        line = _TAGS.sub("", line)
        out.append(line[:MAX_LINE].rstrip())
    return out


def joined(all_lines: list[str]) -> str:
    """One string with wrapped lines joined by single spaces, for texts a terminal wrapped."""
    return " ".join(" ".join(line.split()) for line in all_lines if line.strip())


def where(n: int, line: str) -> str:
    """Where a value was seen: "line 12" (1-based, in the paste as pasted)."""
    del line
    return f"line {n + 1}"


def short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def cuda_str_to_int(text: str | None) -> int | None:
    """ "12.2" -> 12020 (the NVML / cudaDriverGetVersion encoding)."""
    m = re.fullmatch(r"\s*(\d{1,2})\.(\d{1,2})(?:\.\d+)?\s*", text or "")
    return int(m.group(1)) * 1000 + int(m.group(2)) * 10 if m else None


def major_minor(text: str | None) -> str | None:
    """ "12.1.105" -> "12.1"; anything else None."""
    m = re.match(r"\s*(\d{1,3})\.(\d{1,3})", text or "")
    return f"{int(m.group(1))}.{int(m.group(2))}" if m else None


_UNKNOWN = {"", "n/a", "na", "none", "could not collect", "no cuda", "not installed", "unknown", "not found"}


def known(value: str | None) -> str | None:
    """The value, or None for the placeholders collect_env and friends print for "unknown"."""
    if value is None:
        return None
    v = value.strip()
    return None if v.lower() in _UNKNOWN else v


def platform_facts(text: str) -> dict[str, object]:
    """From a `platform.platform()` string: os, machine, kernel, wsl.

    "Linux-5.15.0-91-generic-x86_64-with-glibc2.35", "Windows-10-10.0.22631-SP0",
    "macOS-14.1-arm64-arm-64bit", "Linux-5.15.133.1-microsoft-standard-WSL2-x86_64-with-glibc2.35".
    """
    out: dict[str, object] = {}
    t = text.strip()
    if t.startswith("Linux-"):
        out["os"] = "Linux"
        m = re.match(r"Linux-(.+?)-(x86_64|aarch64|ppc64le|s390x|armv7l)(?:-with-|$)", t)
        if m:
            out["kernel"], out["machine"] = m.group(1), m.group(2)
        out["wsl"] = bool(re.search(r"microsoft-standard-WSL2|-WSL2", t, re.I)) or None
        if re.search(r"Microsoft-x86_64|-Microsoft-", t) and not out["wsl"]:
            out["wsl"] = None  # WSL1: no GPU at all; reported by the rule through the kernel string
    elif t.startswith("Windows-"):
        out["os"] = "Windows"
    elif t.startswith(("macOS-", "Darwin-")):
        out["os"] = "Darwin"
        m = re.search(r"-(arm64|x86_64)-", t)
        if m:
            out["machine"] = m.group(1)
    return {k: v for k, v in out.items() if v is not None}
