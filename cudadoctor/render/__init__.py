"""Renderers turn a report into text, JSON or Markdown; they never collect or decide anything."""

from cudadoctor.locale import _

# How a fix's lines are named beside its heading; shell lines, the usual case, go unnamed in text.
LANGUAGE_NAMES = {"powershell": "PowerShell", "python": "Python", "toml": "TOML", "yaml": "YAML"}


def fix_heading(when: str, lang: str, commands: bool = True) -> str:
    """ "Fix — WHEN:", naming the language when the lines are not for a POSIX shell (Python code pasted
    into a terminal fails, and so do shell lines pasted into a script); "Fix — WHEN." when no command
    follows (a colon would promise one)."""
    if not commands:
        return _("Fix — {when}.").format(when=when.rstrip("."))
    name = LANGUAGE_NAMES.get(lang)
    if name is None:
        return _("Fix — {when}:").format(when=when)
    return _("Fix — {when} ({language}):").format(when=when, language=name)
