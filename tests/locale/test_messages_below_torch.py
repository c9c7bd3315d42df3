"""The findings of the rules below torch (driver, kernel module, libcuda, WSL, containers, GPU health,
visible devices, multi-GPU, the gate, the probes, toolkit, system) read as Chinese in zh_CN: every title,
page and fix label on the example machines (cudadoctor.rules.examples) is a template or a catalogue text,
and its zh_CN rendering leaves no English phrase (tools/message_coverage.py measures the same)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from cudadoctor import locale as i18n
from cudadoctor.model import Finding, Message
from cudadoctor.rules import (
    containers,
    cuda_driver,
    driver,
    health,
    kernel_module,
    multi_gpu,
    probe_failures,
    requirements,
    system,
    toolkit,
    visible,
    wsl,
)
from cudadoctor.rules.catalogue import Entry

MODULES = (containers, cuda_driver, driver, health, kernel_module, multi_gpu, probe_failures, requirements)
MODULES += (system, toolkit, visible, wsl)
CODES = {v.code for m in MODULES for v in vars(m).values() if isinstance(v, Entry)}


def _coverage():
    path = Path(__file__).resolve().parents[2] / "tools" / "message_coverage.py"
    spec = importlib.util.spec_from_file_location("message_coverage", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _findings() -> list[Finding]:
    """What `check`, the gate and the probe failures say on the example machines (a fleet adds its own
    node labels to these titles: its rules, not these)."""
    from cudadoctor.rules.examples import examples

    out: list[Finding] = []
    for ex in examples().values():
        if ex.command.startswith(("ckpt", "fleet")):
            continue
        out += [f for f in ex.findings() if f.code in CODES]
    return out


def test_every_code_of_these_rules_is_on_an_example() -> None:
    seen = {f.code for f in _findings()}
    assert len(seen) >= 60, sorted(CODES - seen)


def test_these_rules_speak_chinese_with_the_facts_verbatim() -> None:
    from cudadoctor.render.localize import finding as localized

    cov = _coverage()
    untemplated, english = [], []
    for f in _findings():
        with i18n.use("zh_CN"):
            zh = localized(f)
        for (field, text), (_, shown) in zip(cov.texts(f), cov.texts(zh), strict=True):
            if not (isinstance(text, Message) or cov.static(f.code, field, text)):
                untemplated.append((f.code, field, str(text)))
            if cov.english_left(cov.without_facts(shown, text)):
                english.append((f.code, field, shown))
    assert untemplated == []
    assert english == []
