"""Translations: the language of the output, and `_()` / `ngettext()` to translate with (stdlib gettext only).

Which language, first match wins: `--lang`, then `CUDADOCTOR_LANG`, then LANGUAGE / LC_ALL / LC_MESSAGES /
LANG (the first one that is set, as gettext reads them), then on Windows the user's UI language (gettext never
sees it there: those variables are usually unset), else English. Codes, commands, paths and JSON keys are
never translated; JSON and JUnit stay English unless `--lang` was given (`explicit()`), because machines
read them.

The catalogues are cudadoctor/locale/<lang>/LC_MESSAGES/cudadoctor.po, compiled to .mo and shipped as
package data; docs/translating.md gives the Babel workflow (extract, update, compile).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

DOMAIN = "cudadoctor"
LOCALEDIR = os.path.dirname(os.path.abspath(__file__))
ENGLISH = "en"
LANGUAGES = (ENGLISH, "zh_CN")  # what --lang accepts
ENV = "CUDADOCTOR_LANG"
GETTEXT_ENV = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


class _Identity:
    def gettext(self, message: str) -> str:
        return message

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        return singular if n == 1 else plural


_translation: Any = _Identity()
_language = ENGLISH
_explicit = False


def normalize(value: str | None) -> str | None:
    """A supported language for a locale name ("zh_CN.UTF-8", "zh-Hans-CN", "zh", "en_US", "C"), else None.
    Traditional Chinese (zh_TW, zh_HK, zh_Hant) is not Simplified Chinese: None."""
    if not value:
        return None
    name = value.strip().split(".")[0].split("@")[0].replace("-", "_").lower()
    if name in ("c", "posix") or name == "en" or name.startswith("en_"):
        return ENGLISH
    parts = name.split("_")
    if parts[0] == "zh":
        rest = set(parts[1:])
        if rest & {"tw", "hk", "mo", "hant"}:
            return None
        return "zh_CN"
    return None


def windows_ui_language() -> str | None:
    """The Windows user's UI language as a locale name ("zh_CN"), or None off Windows or when unknown."""
    try:
        import ctypes
        import locale as _locale

        lcid = ctypes.windll.kernel32.GetUserDefaultUILanguage()  # type: ignore[attr-defined]
    except (ImportError, AttributeError, OSError, ValueError):
        return None
    return _locale.windows_locale.get(lcid)


def detect(
    environ: Mapping[str, str] | None = None,
    platform: str | None = None,
    ui_language: Callable[[], str | None] = windows_ui_language,
) -> str:
    """The language to use when --lang is not given (see the module docstring for the order)."""
    environ = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    chosen = normalize(environ.get(ENV))
    if chosen:
        return chosen
    for var in GETTEXT_ENV:
        value = environ.get(var)
        if value:  # as gettext: the first one set decides; LANGUAGE may list several, first supported wins
            for item in value.split(":"):
                chosen = normalize(item)
                if chosen:
                    return chosen
            return ENGLISH
    if platform == "win32":
        return normalize(ui_language()) or ENGLISH
    return ENGLISH


def set_language(language: str | None, explicit: bool = False) -> str:
    """Use `language` (None: detect it) from now on; returns the language in use."""
    global _translation, _language, _explicit
    lang = normalize(language) if language else detect()
    lang = lang or ENGLISH
    if lang == ENGLISH:
        _translation = _Identity()
    else:
        import gettext

        _translation = gettext.translation(DOMAIN, LOCALEDIR, [lang], fallback=True)
    _language, _explicit = lang, explicit
    return lang


def current() -> str:
    return _language


def explicit() -> bool:
    """Whether the language was asked for with --lang (machine outputs follow it only then)."""
    return _explicit


@contextmanager
def use(language: str, explicit: bool = False) -> Iterator[None]:
    """Temporarily another language (machine outputs in English)."""
    before = (_translation, _language, _explicit)
    set_language(language, explicit)
    try:
        yield
    finally:
        _restore(before)


def _restore(state: tuple[Any, str, bool]) -> None:
    global _translation, _language, _explicit
    _translation, _language, _explicit = state


def _(message: str) -> str:
    """The translation of `message` in the current language (itself when there is none)."""
    return _translation.gettext(message) if message else message


def ngettext(singular: str, plural: str, n: int) -> str:
    return _translation.ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Marks a message for extraction without translating it here (it is translated where it is shown)."""
    return message
