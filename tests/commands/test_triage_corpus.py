"""The score of `cudadoctor triage` on real posts: tests/triage_corpus/real/ holds verbatim public posts
(one .txt each) and manifest.json gives each its URL, the cause its thread established and the codes a
right answer raises. Every post is triaged with the `triage --json` command a user runs.

What counts:

- A problem post (``healthy: false``) is **right** when at least one of its ``expected_codes`` is
  raised at warning or error severity and no error-severity finding has a code outside them (an
  error that contradicts the thread's cause).
- "To be sure, ask for:" (CD901) is raised when it is the verdict: triage shows it as the NOT ENOUGH
  TO TELL status (exit 3), its finding kept at info severity.
- A healthy control (``healthy: true``: a working stack whose problem is elsewhere - out of memory, a
  bug in the user's code, a harmless warning) is **right** when triage raises no error-severity
  finding and its verdict is the stack is fine or a run-time problem (exit 0: status healthy, or
  warnings that are not set-up problems); "not enough to tell" (exit 3) is not right.
- A **false alarm** is an error-severity finding whose code is not among the post's expected codes
  (counted once per post). One exception, by the report's own marking: a finding whose ``cause`` is
  an expected code ("Follows from CD112: fix that first", JSON ``cause: "CD112"``) states the
  thread's cause, so it is neither a contradiction nor a false alarm.

The floors below are what triage reaches now: the score may rise, never fall.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

REAL = Path(__file__).resolve().parents[1] / "triage_corpus" / "real"
RIGHT_FLOOR = 145  # of 153
FALSE_ALARM_CEILING = 0


def triage_json(path: Path) -> tuple[int, dict[str, Any]]:
    from cudadoctor.cli import cli

    r = CliRunner().invoke(cli, ["triage", "--json", str(path)])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    try:
        return r.exit_code, json.loads(r.stdout)
    except ValueError:
        return r.exit_code, {}


def judge(entry: dict[str, Any], code: int, data: dict[str, Any]) -> tuple[bool, list[str]]:
    """(right, codes of false alarms) for one post, as the module docstring defines them."""
    found = {f["code"]: f["severity"] for f in data.get("findings", [])}
    expected = set(entry["expected_codes"])
    follows = {f["code"] for f in data.get("findings", []) if f.get("cause") in expected}
    errors = {c for c, s in found.items() if s == "error"} - follows
    alarms = sorted(errors - expected)
    if entry["healthy"]:
        return code == 0 and not errors, alarms
    raised = {c for c, s in found.items() if s in ("warning", "error")}
    if code == 3 and "CD901" in found:
        raised.add("CD901")
    return bool(raised & expected) and not alarms, alarms


def score() -> tuple[int, int, list[str]]:
    manifest = json.loads((REAL / "manifest.json").read_text(encoding="utf-8"))
    right, alarms, wrong = 0, 0, []
    for name, entry in sorted(manifest.items()):
        code, data = triage_json(REAL / name)
        ok, bad = judge(entry, code, data)
        right += ok
        alarms += bool(bad)
        if not ok:
            got = sorted(f"{f['code']}:{f['severity'][0]}" for f in data.get("findings", []) if f["severity"] != "info")
            wrong.append(f"{name}: exit {code}, expected {entry['expected_codes']}, got {got}")
    return right, alarms, wrong


def test_triage_corpus_score() -> None:
    manifest = json.loads((REAL / "manifest.json").read_text(encoding="utf-8"))
    right, alarms, wrong = score()
    print(f"\ntriage corpus: {right}/{len(manifest)} right, {alarms} false alarms")
    print("\n".join(wrong))
    assert len(manifest) >= 150
    assert right >= RIGHT_FLOOR, "\n".join(wrong)
    assert alarms <= FALSE_ALARM_CEILING, "\n".join(wrong)


def test_every_post_is_in_the_manifest_with_its_source() -> None:
    manifest = json.loads((REAL / "manifest.json").read_text(encoding="utf-8"))
    assert {p.name for p in REAL.glob("*.txt")} == set(manifest)
    for entry in manifest.values():
        assert entry["url"].startswith("http") and entry["cause"] and entry["expected_codes"]


if __name__ == "__main__":  # python tests/commands/test_triage_corpus.py: the score and every miss
    r, a, w = score()
    print("\n".join(w))
    print(f"triage corpus: {r}/153 right, {a} false alarms")
