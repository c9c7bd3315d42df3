"""JUnit XML for CI systems: each probe a testcase, each finding a testcase (failure at or above
--fail-on, skipped for lower warnings, passed otherwise)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from cudadoctor.model import Finding, Fix, Severity
from cudadoctor.render import LANGUAGE_NAMES
from cudadoctor.report import Report


def render(report: Report) -> str:
    fail_on = Severity(report.fail_on)
    suite = ET.Element("testsuite", name="cudadoctor", timestamp=report.created)
    failures = errors = skipped = 0
    for o in report.probes:
        case = ET.SubElement(suite, "testcase", classname="cudadoctor.probes", name=o.name, time=f"{o.seconds:.3f}")
        if o.failed:
            errors += 1
            el = ET.SubElement(case, "error", message=f"{o.name} {o.status}: {o.error}", type=o.status)
            el.text = o.traceback or o.error or ""
        elif o.status == "skipped":
            skipped += 1
            ET.SubElement(case, "skipped", message="skipped on request")
    for f in report.findings:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"cudadoctor.{f.section.lower().replace(' ', '_')}",
            name=f"{f.code} {f.title}",
            time="0",
        )
        if f.severity.rank >= fail_on.rank and f.severity.rank >= Severity.WARNING.rank:
            failures += 1
            el = ET.SubElement(case, "failure", message=f.title, type=f.severity.value)
            fixes = "\n".join(_heading(r) + "\n" + "\n".join(f"  {c}" for c in r.commands) for r in f.fix)
            el.text = f"{f.why}\n\n{fixes}".strip()
        elif f.severity is Severity.WARNING:
            skipped += 1
            ET.SubElement(case, "skipped", message=f"warning: {f.title}")
    suite.set("tests", str(len(report.probes) + len(report.findings)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def render_cases(report: Report, suite_name: str, cases: list[tuple[str, list[Finding]]]) -> str:
    """One testcase per named subject (a fleet's nodes): it fails when any of its findings reaches
    --fail-on, and the message lists them; a last testcase carries the report's own status."""
    fail_on = Severity(report.fail_on)
    suite = ET.Element("testsuite", name=suite_name, timestamp=report.created)
    failures = 0
    for name, found in [*cases, ("all", report.findings)]:
        case = ET.SubElement(suite, "testcase", classname=suite_name, name=name, time="0")
        bad = [f for f in found if f.severity.rank >= max(fail_on.rank, Severity.WARNING.rank)]
        if name == "all" and report.status.exit_code != 0 and not bad:
            el = ET.SubElement(case, "error", message=report.verdict, type=report.status.value)
            el.text = report.verdict
        elif bad:
            failures += 1
            el = ET.SubElement(case, "failure", message=bad[0].title, type=bad[0].severity.value)
            el.text = "\n".join(f"{f.code} {f.title}" for f in bad)
    suite.set("tests", str(len(cases) + 1))
    suite.set("failures", str(failures))
    suite.set("errors", str(sum(1 for c in suite if c.find("error") is not None)))
    suite.set("skipped", "0")
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def _heading(r: Fix) -> str:
    """The fix's label, and what its lines are when they are not shell lines (English, as the rest)."""
    name = LANGUAGE_NAMES.get(r.lang)
    return f"{r.when} ({name}):" if name else f"{r.when}:"
