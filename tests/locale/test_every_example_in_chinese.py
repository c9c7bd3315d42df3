"""Issue 25: every finding's title, page and fix labels are templates written where they are raised, and in
zh_CN no English phrase is left, measured over every example of every code (rules/examples/table.py).

What stays English by design is the facts a message shows as they are (names, paths, versions, a library's
own error text: tools/message_coverage.verbatim) and the few texts listed here, each with its reason."""

from __future__ import annotations

import importlib.util

from cudadoctor import locale as i18n
from cudadoctor.model import Message
from tests.conftest import ROOT

# English in a zh_CN rendering that is right as it is: (code, the phrase, why)
BY_DESIGN = {
    ("CD227", "Visual Studio Build Tools"): "a product's name, as its installer shows it",
    ("CD912", "Torch not compiled with"): "torch's own error text, quoted so that it can be searched for",
}


def _coverage():
    spec = importlib.util.spec_from_file_location("message_coverage", ROOT / "tools" / "message_coverage.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_every_example_finding_is_templates_and_reads_as_chinese() -> None:
    from cudadoctor.render.localize import finding as localized

    cov = _coverage()
    findings = cov.findings()
    assert len({f.code for f in findings}) >= 190
    untemplated, english = [], []
    for f in findings:
        with i18n.use("zh_CN"):
            zh = localized(f)
        for (field, text), (_, shown) in zip(cov.texts(f), cov.texts(zh), strict=True):
            if not (isinstance(text, Message) or cov.static(f.code, field, text)):
                untemplated.append((f.code, field, str(text)[:100]))
            left = [p for p in cov.english_left(cov.without_facts(shown, text)) if (f.code, p) not in BY_DESIGN]
            if left:
                english.append((f.code, field, left))
    assert untemplated == []
    assert english == []
