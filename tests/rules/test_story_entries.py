"""Causes are declared on the catalogue entries (`entry(..., breaks=…, rests_on=…, beside_torch=…)`), not
kept in lists of code strings: the declarations are consistent, and every cause the examples' reports
link (a finding that follows from a root cause) is one the entries declare."""

from __future__ import annotations

import re
from pathlib import Path

from cudadoctor.model import Severity
from cudadoctor.rules import CATALOGUE, story
from cudadoctor.rules.catalogue import CUDA, LAYERS, NVML, TORCH_BUILD
from cudadoctor.rules.examples import examples

ROOT = Path(__file__).resolve().parents[2]


def test_story_keeps_no_codes_of_its_own() -> None:
    source = (ROOT / "cudadoctor" / "rules" / "story.py").read_text()
    assert not re.search(r"CD\d{3}", source.split('"""', 2)[2]), "story.py reads causes from the entries"
    build = (ROOT / "cudadoctor" / "rules" / "torch_build.py").read_text()
    assert not re.search(r"\(\s*\"CD\d{3}\",\s*\"CD\d{3}\"", build), "a tuple of codes in torch_build.py"


def test_every_layer_something_rests_on_is_broken_by_a_root_cause_and_back() -> None:
    broken = {layer for e in CATALOGUE.values() for layer in e.breaks}
    rested = {layer for e in CATALOGUE.values() for layer in e.rests_on}
    assert rested <= broken == set(LAYERS)
    assert {NVML, CUDA} <= rested  # TORCH_BUILD only ranks the causes of is_available() being False


def test_declarations_do_not_contradict() -> None:
    for e in CATALOGUE.values():
        assert not (e.beside_torch and e.breaks), f"{e.code}: beside torch yet a root cause of torch's trouble"
        if e.breaks - {TORCH_BUILD}:
            assert e.severity is Severity.ERROR, f"{e.code}: a root cause below torch is an error"
        if e.rests_on:
            assert e.severity is Severity.ERROR, f"{e.code}: only an error follows from a root cause"
    # the driver-level causes: no driver, no GPU, the module not loaded break everything above them
    assert CATALOGUE["CD101"].breaks == {NVML, CUDA} and CATALOGUE["CD121"].breaks == {CUDA}


def test_in_every_example_what_rests_on_a_broken_layer_points_at_a_root_cause() -> None:
    """From the declarations alone: an error that rests on a layer an error in the same report breaks
    follows from a root cause (rules may link a finer cause at the raise site, e.g. CD102 to the kernel
    module's finding); every cause is an error in the same report."""
    linked = 0
    for ex in examples().values():
        found = ex.findings()
        by_code = {f.code: f for f in found}
        broken = {layer for f in found if f.severity is Severity.ERROR for layer in story.breaks(f.code)}
        for f in found:
            if f.cause is not None:
                cause = by_code.get(f.cause)
                assert cause is not None and cause.severity is Severity.ERROR, (ex.name, f.code, f.cause)
            if f.severity is Severity.ERROR and story.rests_on(f.code) & (broken - story.breaks(f.code)):
                assert f.cause is not None, f"{ex.name}: {f.code} rests on a broken layer yet names no cause"
                linked += 1
    assert linked  # e.g. libcuda missing: torch cannot use CUDA follows from it
