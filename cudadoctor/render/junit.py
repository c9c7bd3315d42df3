"""JUnit XML for CI systems: each probe a testcase, each finding a testcase (failure at or above
--fail-on, skipped for lower warnings, passed otherwise)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from cudadoctor.report import Report, Severity


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
            fixes = "\n".join(f"{r.when}:\n" + "\n".join(f"  {c}" for c in r.commands) for r in f.fix)
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
