"""What a secret looks like, so that none reaches any output: environment variables named like one,
command-line options and VAR=value assignments that carry one, HTTP auth headers, well-known token formats,
credentials in URLs and in query strings.

Token formats: Hugging Face user access tokens (hf_…), OpenAI keys (sk-…), AWS access key IDs (AKIA…),
GitHub tokens (ghp_/gho_/ghs_/ghu_/github_pat_…), Slack tokens (xox?-…): each provider's documented prefix.
"""

from __future__ import annotations

import re

SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE")
MASK = "***"

# A name is judged by its last word (`--access-key`, `HF_TOKEN`, `X-Amz-Credential`), so `--tokenizer`,
# `--max-tokens`, `--key-file`, `--author` and `TOKENIZERS_PARALLELISM` keep their values.
_SECRET_LAST = frozenset(
    {"token", "key", "apikey", "secret", "password", "passwd", "credential", "credentials", "auth", "cookie", "bearer"}
)
_SECRET_SUFFIXES = ("password", "passwd", "apikey", "secret")  # PGPASSWORD, --apikey, clientsecret
# Query strings also sign with these (Azure SAS `sig=`, S3 presigned `X-Amz-Signature=`).
_QUERY_LAST = _SECRET_LAST | {"sig", "signature", "pass", "pwd"}
# ML tools name tokenizer specials and dataset fields this way: `--pad-token "<pad>"`, `--text-key caption`.
_HARMLESS_BEFORE = frozenset(
    {"pad", "bos", "eos", "unk", "sep", "cls", "mask", "special", "start", "end", "stop", "sort", "text", "image",
     "label", "caption", "metric", "monitor", "input", "output", "target", "column", "field", "prompt", "audio",
     "video", "cache"}
)  # fmt: skip

_VALUE = r"""(?:'[^']*'|"[^"]*"|[^\s'"]+)"""
# `--name=value` or `--name value`; a following `--flag` is never taken for the value (argparse does not either).
_OPTION = re.compile(rf"(?<![\w-])(--?[A-Za-z][\w.-]*)(=|\s+(?!-))({_VALUE})")
# NAME=value as a word of its own (`env HF_TOKEN=…`, `-e AWS_SECRET_ACCESS_KEY=…`, hydra `+hf_token=…`);
# shlex.join quotes a value with spaces as the whole word: 'PASSWORD=a b'.
_ASSIGN = re.compile(r"""(?<![^\s+=])(?:(['"])([A-Za-z_][\w.]*)=([^'"]*)(?=\1)|([A-Za-z_][\w.]*)=([^\s'"]+))""")
_AUTH_HEADER = re.compile(
    r"(?i)(?<![\w-])((?:proxy-)?authorization\s*:\s*)"
    r"(?:(bearer|basic|token|digest|negotiate|ntlm|sharedkey|bot|aws4-hmac-sha256)(\s+))?([^\s'\"]+)"
)
_HEADER = re.compile(r"""(?<![\w.-])([A-Za-z][\w-]*)(:[ \t]*)([^\s'"]+)""")  # X-API-Key: …, Private-Token: …
_TOKENS = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{10,}|sk-[A-Za-z0-9_-]{10,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,})"
)
# A URL ends where another begins: UV_INDEX and friends may list several.
_URL = re.compile(r"""(?i)\b([a-z][\w+.-]{0,30}://)((?:(?![a-z][\w+.-]{0,30}://)[^\s'"<>])+)""")
_QUERY = re.compile(r"""([?&#;])([\w.-]+)=([^&;#\s'"]+)""")
# A file path with an extension names where a secret is, not the secret (base64 and hex have no dot).
_PATH = re.compile(r"(?:~|\.{1,2})?/[\w./-]*\.[A-Za-z]\w{0,4}")


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


def _words(name: str) -> list[str]:
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name.lstrip("-+"))  # apiKey -> api_Key
    return [w for w in re.split(r"[-_.]+", name.lower()) if w]


def _names_secret(name: str, last_words: frozenset[str] = _SECRET_LAST) -> bool:
    words = _words(name)
    if not words or words[0] == "no":  # --no-auth is a switch
        return False
    last = words[-1]
    if last in ("token", "key") and len(words) > 1 and words[-2] in _HARMLESS_BEFORE:
        return False
    return last in last_words or last.endswith(_SECRET_SUFFIXES)


def _hides(value: str) -> bool:
    return value != MASK and not _PATH.fullmatch(value.strip("'\""))


def _option(m: re.Match[str]) -> str:
    name, sep, value = m.groups()
    return f"{name}{sep}{MASK}" if _names_secret(name) and _hides(value) else m.group(0)


def _assign(m: re.Match[str]) -> str:
    quote, qname, qvalue, name, value = m.groups()
    if quote:
        return f"{quote}{qname}={MASK}" if _names_secret(qname) and _hides(qvalue) else m.group(0)
    return f"{name}={MASK}" if _names_secret(name) and _hides(value) else m.group(0)


def _auth_header(m: re.Match[str]) -> str:
    head, scheme, space, _ = m.groups()
    return f"{head}{scheme}{space}{MASK}" if scheme else f"{head}{MASK}"


def _header(m: re.Match[str]) -> str:
    name, sep, _ = m.groups()
    return f"{name}{sep}{MASK}" if _names_secret(name) else m.group(0)


def _url(m: re.Match[str]) -> str:
    """user:password@ masked, whatever the password holds: `/`, `@`, `#`, `?` (unencoded, as people type them)."""
    scheme, rest = m.groups()
    head = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if "@" in head:
        end = head.rindex("@")
    else:
        _, colon, after = head.partition(":")
        # host:port/… or [v6]:port/… is an address; only a user:password pair can run past the first `/`,
        # and then up to its last `@` before a query (masking a path with an @ beats showing a password).
        if not colon or after.isdigit() or head.startswith("[") or "@" not in rest:
            return m.group(0)
        first = rest.index("@")
        stop = re.search(r"[?#]", rest[first:])
        end = rest.rindex("@", 0, first + stop.start() if stop else len(rest))
    return f"{scheme}{MASK}@{rest[end + 1 :]}"


def _query(m: re.Match[str]) -> str:
    sep, name, _ = m.groups()
    return f"{sep}{name}={MASK}" if _names_secret(name, _QUERY_LAST) else m.group(0)


def mask_secrets(text: str) -> str:
    """`text` with every secret-looking part replaced by ***; the rest kept as it was."""
    text = _URL.sub(_url, text)
    text = _QUERY.sub(_query, text)
    text = _AUTH_HEADER.sub(_auth_header, text)
    text = _HEADER.sub(_header, text)
    text = _OPTION.sub(_option, text)
    text = _ASSIGN.sub(_assign, text)
    return _TOKENS.sub(MASK, text)


def mask_value(name: str, value: str) -> str:
    """An environment variable's value as reports show it: masked whole when its name says secret, else its
    URL credentials and query tokens masked (PIP_*/UV_* index URLs, UV_INDEX=name=url, several per value)."""
    return MASK if is_secret_name(name) else mask_secrets(value)
