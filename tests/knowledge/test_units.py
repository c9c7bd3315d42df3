"""Sizes as a user writes them (8GiB, 0.5TB) and as the doctor prints them."""

from __future__ import annotations

import pytest

from cudadoctor.knowledge.units import format_size, parse_size


@pytest.mark.parametrize(
    "text,expected",
    [
        ("8GiB", 8 << 30),
        ("8G", 8 << 30),
        ("8192MiB", 8 << 30),
        ("0.5TB", 500_000_000_000),
        ("8GB", 8_000_000_000),
        ("1024B", 1024),
        (" 2 gib ", 2 << 30),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "eight", "8XB", "-1G", "1.2.3G"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError, match="is not a size"):
        parse_size(text)


def test_format_size():
    assert format_size(64 * 1024 * 1024) == "64.0 MiB"
    assert format_size(None) == "N/A"
