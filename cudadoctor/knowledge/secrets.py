"""What a secret looks like, so that none reaches any output: environment variables named like one,
command-line options that take one, well-known token formats, credentials in URLs and in query strings.

Token formats: Hugging Face user access tokens (hf_…), OpenAI keys (sk-…), AWS access key IDs (AKIA…),
GitHub tokens (ghp_/gho_/ghs_/ghu_/github_pat_…), Slack tokens (xox?-…): each provider's documented prefix.
"""

from __future__ import annotations

import re

SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE")
MASK = "***"

_OPTION = re.compile(r"(?i)(--?[\w-]*(?:token|api[-_]?key|secret|password|passwd|credential|auth)[\w-]*)(=|\s+)(\S+)")
_TOKENS = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{10,}|sk-[A-Za-z0-9_-]{10,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,})"
)
_URL_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]+@")
_QUERY = re.compile(r"(?i)([?&](?:access_token|token|api_key|apikey|key|secret|password|sig|signature)=)[^&\s#]+")


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


def mask_secrets(text: str) -> str:
    """`text` with every secret-looking part replaced by ***; the rest kept as it was."""
    text = _OPTION.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = _TOKENS.sub(MASK, text)
    text = _URL_CREDENTIALS.sub(MASK + "@", text)
    return _QUERY.sub(lambda m: m.group(1) + MASK, text)


def mask_value(name: str, value: str) -> str:
    """An environment variable's value as reports show it: masked whole when its name says secret."""
    return MASK if is_secret_name(name) else mask_secrets(value)
