"""The Markdown report (render/markdown.py): what a maintainer posts as it is."""

from __future__ import annotations

from cudadoctor import locale as i18n


def test_a_page_with_facts_on_lines_of_their_own_stays_in_its_list_item() -> None:
    """zh_CN puts this machine's facts on a line after the page (CD205 on an RTX 5090 with a cu126 wheel):
    every line of it is indented under the finding, so the list item does not end halfway."""
    from cudadoctor.render.localize import findings as localized
    from cudadoctor.render.markdown import render
    from cudadoctor.render.redact import report_data
    from cudadoctor.report import build
    from cudadoctor.rules import evaluate
    from cudadoctor.rules.examples import own_example

    facts = own_example("CD205").facts
    with i18n.use("zh_CN"):
        found = localized(evaluate(facts, []))
        out = render(report_data(build("check", facts, [], found), False))
    why = next(f.why for f in found if f.code == "CD205")
    assert "\n" in why  # the page, then the build's targets on a line of their own
    item = out.split("**CD205**", 1)[1].split("\n- ", 1)[0]
    assert "此构建的目标架构" in item
    assert all(not ln.strip() or ln.startswith(("  ", "|")) for ln in item.splitlines()[1:]), item
