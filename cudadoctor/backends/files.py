"""Files the user hands the doctor (a saved report, a paste): read with a bound on size, and only when
they are regular files, so a FIFO or /dev/zero cannot hang it or fill its memory."""

from __future__ import annotations

import os
import stat
import sys


class InputError(ValueError):
    """A one-line reason why the input cannot be read."""


def read_text(path: str, limit: int, what: str = "file", utf8: bool = False) -> str:
    """The text of `path` (or stdin for "-"), at most `limit` bytes; InputError otherwise.

    `utf8`: the format is UTF-8 by definition (TOML): other bytes are an error, not replaced, so that a
    file saved in another encoding is never read as something it does not say."""
    if path == "-":
        data = sys.stdin.buffer.read(limit + 1)
    else:
        try:
            st = os.stat(path)
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"cannot read {path}: it is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"cannot read {path}: not a regular file")
        if st.st_size > limit:
            raise InputError(f"{path} is {st.st_size >> 20} MiB; a {what} is at most {limit >> 20} MiB")
        try:
            with open(path, "rb") as fh:
                data = fh.read(limit + 1)
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise InputError(f"{path}: a {what} is at most {limit >> 20} MiB")
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 with a BOM: Windows PowerShell's `>` writes it
        if utf8:
            raise InputError(f"{path} is UTF-16 text; a {what} must be UTF-8")
        return data.decode("utf-16", errors="replace")
    if b"\0" in data[:65536]:
        raise InputError(f"{path} is binary, not a {what}")
    if utf8:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise InputError(
                f"{path} is not UTF-8 (byte 0x{data[exc.start]:02x} on line {line}); a {what} must be UTF-8"
            ) from None
    return data.decode("utf-8", errors="replace")
