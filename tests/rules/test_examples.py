"""Each finding code is one unit with its own example: rules/examples/table.py names, for every code in
the catalogue, the examples that raise it, and the first one's finding, rendered as the terminal shows
it in English and in zh_CN, is the code's snapshot (tests/snapshots/CODE.txt). A code no example raises,
an example that does not raise the code it is named for, or a snapshot without a code fails here.

After a change meant to change what a finding says: `python tools/snapshots.py --update`, and review the diff."""

from __future__ import annotations

import pytest

from cudadoctor.rules import CATALOGUE
from cudadoctor.rules.examples import examples
from cudadoctor.rules.examples.table import BY_CODE
from tools import snapshots

CODES = sorted(CATALOGUE)


def test_every_code_names_an_example_and_every_named_example_exists() -> None:
    assert sorted(BY_CODE) == CODES, "codes without a line in rules/examples/table.py, or lines without a code"
    unknown = {n for names in BY_CODE.values() for n in names} - set(examples())
    assert not unknown, f"table.py names examples nobody defines: {sorted(unknown)}"
    assert all(BY_CODE[c] for c in CODES)


def test_no_snapshot_without_a_code() -> None:
    stale = snapshots.orphans()
    assert not stale, f"snapshots of codes the catalogue does not have: {stale}; run {snapshots.UPDATE}"


@pytest.mark.parametrize("code", CODES)
def test_the_code_s_examples_raise_it_and_its_snapshot_holds(code: str) -> None:
    for name in BY_CODE.get(code, ()):
        raised = {f.code for f in examples()[name].findings()}
        assert code in raised, f"example {name!r} is named for {code} but raises {sorted(raised)}"
    path = snapshots.path(code)
    assert path.is_file(), f"no snapshot {path.name}: run {snapshots.UPDATE} {code}"
    assert snapshots.snapshot(code) == path.read_text(encoding="utf-8"), (
        f"{code} renders differently from {path.name}: if that is meant, run {snapshots.UPDATE} {code} "
        "and review the diff"
    )


def test_a_snapshot_has_english_and_chinese() -> None:
    text = snapshots.path("CD101").read_text(encoding="utf-8")
    en, zh = text.split("--- en ---")[1].split("--- zh_CN ---")
    assert "CD101" in en and "CD101" in zh and en != zh
    assert any("\u4e00" <= ch <= "\u9fff" for ch in zh) and not any("\u4e00" <= ch <= "\u9fff" for ch in en)
