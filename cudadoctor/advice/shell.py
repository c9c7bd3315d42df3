"""A path as one word of a fix command. The paths come from the machine (or from a report someone else
saved: `check --from`), and a fix is pasted as it is: a space must not split it, and `; curl … | sh` in a
replayed report's interpreter path must stay a name, never run."""

from __future__ import annotations

import re
import shlex

_WINDOWS_PATH = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")
_WINDOWS_SAFE = re.compile(r"^[\w\\/:.\-]+$")


def word(text: str, lead: bool = False) -> str:
    """`text` quoted for the shell that will run it when it needs quoting. A Windows path is quoted for
    PowerShell, the default Windows terminal, which runs a quoted program only after `&` (`lead`: the word
    is the command's program)."""
    if _WINDOWS_PATH.match(text):
        if _WINDOWS_SAFE.match(text):
            return text
        quoted = '"' + text.replace('"', "") + '"'  # no Windows path holds a double quote
        return f"& {quoted}" if lead else quoted
    return shlex.quote(text)
