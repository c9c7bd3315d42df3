"""The doctor's one-line usage errors in the current language.

Most are written with `_()` where they are raised. Some are built with f-strings in modules that raise
them as plain exceptions (the file readers, the config reader, `parse_size`) or pass them on
(`fail(str(exc))`): for those, TEMPLATES holds the message with named placeholders, and `translate`
matches a message against them, as `localize.title` does for finding titles. What fills a placeholder
(a path, an option, an OS error, a key) is shown as written, except `{message}`, a nested usage error,
which is translated in turn. A message no template matches stays as it was.
"""

from __future__ import annotations

import re
from functools import cache

from cudadoctor.locale import ENGLISH, N_, _, current

TEMPLATES: tuple[str, ...] = (
    # the file readers (backends/files.py, backends/ckpt/): triage, ckpt, check --from, --config
    N_("cannot read {path}: it is a directory"),
    N_("cannot read {path}: not a regular file"),
    N_("cannot read {path}: {error}"),
    # where a report or a copy is written (check --output, --junit)
    N_("{option}: an empty path"),
    N_("cannot write {option} {path}: it is a directory"),
    N_("cannot write {option} {path}: no such directory {parent}"),
    N_("cannot write {option} {path}: permission denied"),
    N_("cannot write {path}: {error}"),
    # check --python
    N_("{option} {path}: no such file"),
    # option values and the config file's settings (commands/config.py, knowledge/units.py)
    N_("{value} is not a size (examples: 8GiB, 8G, 8192MiB, 0.5TB)"),
    N_("{value} has no unit: write {n}GiB, {n}GB or {n}MiB ({n}B for bytes)"),
    N_('{value} has no unit: write "{n}GiB", "{n}GB" or "{n}MiB" ("{n}B" for bytes)'),
    N_("{value} is not a whole number"),
    N_("{value} is not a number"),
    N_("{value} is not a positive number"),
    N_("{path}: not valid TOML: {error}"),
    N_("{source}: unknown key {key} (known: {known})"),
    N_("{option}: {message}"),
)
# what a placeholder may hold: an option is `--word`, a value is quoted as repr() quotes it
_CLASSES = {"option": r"--[a-z][a-z0-9-]*", "value": r"'[^']*'|\"[^\"]*\"|\S+"}
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@cache
def _compiled() -> tuple[tuple[re.Pattern[str], str], ...]:
    out = []
    for template in sorted(TEMPLATES, key=lambda t: -len(_PLACEHOLDER.sub("", t))):  # the most literal first
        pattern, pos, seen = "", 0, set()
        for m in _PLACEHOLDER.finditer(template):
            # a placeholder that repeats ("{n}GiB, {n}GB") must hold the same text each time
            group = f"(?P={m[1]})" if m[1] in seen else f"(?P<{m[1]}>{_CLASSES.get(m[1], '.+?')})"
            seen.add(m[1])
            pattern += re.escape(template[pos : m.start()]) + group
            pos = m.end()
        out.append((re.compile(pattern + re.escape(template[pos:]), re.DOTALL), template))
    return tuple(out)


def translate(message: str, depth: int = 0) -> str:
    """`message` in the current language: exactly, or by the template it was built from."""
    if current() == ENGLISH or not message:
        return message
    translated = _(message)
    if translated != message or depth > 2:
        return translated
    for pattern, template in _compiled():
        m = pattern.fullmatch(message)
        if m is not None and _(template) != template:
            values = {k: translate(v, depth + 1) if k == "message" else v for k, v in m.groupdict().items()}
            return _(template).format(**values)
    return message
