"""The score of `cudadoctor triage` on real posts: tests/triage_corpus/real/ holds verbatim public posts
(one .txt each) and manifest.json gives each its URL, the cause its thread established and the codes a
right answer raises, and the issue's title where it was found (378 of 400). Every post is triaged with the
`triage --json` command a user runs, twice: with its title first, as the GitHub recipe hands an issue over
(docs/examples/triage_issue.py), and its body alone, as a maintainer may paste it.

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

import importlib.util
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "triage_corpus" / "real"
RIGHT_FLOOR = 381  # of 400, each post with its issue title, as the GitHub recipe reads it
BODY_RIGHT_FLOOR = 361  # of 400, the bodies alone
# The goal: >= 95 % right (381 of 400 is 95.25 %) and no false alarm, either way
FALSE_ALARM_CEILING = 0
BODY_FALSE_ALARM_CEILING = 0


def triage_json(path: Path, title: str | None = None) -> tuple[int, dict[str, Any]]:
    """`cudadoctor triage --json` of the post; with its title first, as the GitHub recipe hands it over
    (docs/examples/triage_issue.py)."""
    from cudadoctor.cli import cli

    if title:
        text = f"{title}\n\n{path.read_text(encoding='utf-8')}"
        r = CliRunner().invoke(cli, ["triage", "--json", "-"], input=text.encode("utf-8"))
    else:
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


def score(with_titles: bool = True) -> tuple[int, int, list[str]]:
    """The score of the posts as the GitHub recipe reads them (the issue's title, where the manifest has it,
    then the body), or of the bodies alone."""
    manifest = json.loads((REAL / "manifest.json").read_text(encoding="utf-8"))
    right, alarms, wrong = 0, 0, []
    for name, entry in sorted(manifest.items()):
        code, data = triage_json(REAL / name, entry.get("title") if with_titles else None)
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


def test_triage_corpus_score_of_the_bodies_alone() -> None:
    """A maintainer who pastes only the body gives triage less: its own floor, and never a false alarm."""
    manifest = json.loads((REAL / "manifest.json").read_text(encoding="utf-8"))
    right, alarms, wrong = score(with_titles=False)
    print(f"\ntriage corpus, bodies alone: {right}/{len(manifest)} right, {alarms} false alarms")
    assert right >= BODY_RIGHT_FLOOR, "\n".join(wrong)
    assert alarms <= BODY_FALSE_ALARM_CEILING, "\n".join(wrong)


def test_every_post_is_in_the_manifest_with_its_source() -> None:
    manifest = json.loads((REAL / "manifest.json").read_text(encoding="utf-8"))
    assert {p.name for p in REAL.glob("*.txt")} == set(manifest)
    for entry in manifest.values():
        assert entry["url"].startswith("http") and entry["cause"] and entry["expected_codes"]


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_triage", ROOT / "benchmarks" / "bench_triage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("kind", ["long_log", "worst_case"])
def test_a_1mb_paste_is_triaged_within_a_bound(kind: str, tmp_path: Path) -> None:
    """benchmarks/bench_triage.py measures the target (under 1 s); here the bound is 2 s of CPU for the
    real command line, so a slowdown fails while a busy shared machine (wall time) does not."""
    path = tmp_path / "paste.txt"
    path.write_text(getattr(_bench(), kind)(1 << 20), encoding="utf-8")
    assert path.stat().st_size >= 1_000_000
    # the child runs without coverage's tracer (README's test command measures every process the tests start),
    # which alone doubled its CPU time and made this bound fail on a loaded machine
    untraced = {k: v for k, v in os.environ.items() if k not in ("COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(
        [sys.executable, "-m", "cudadoctor", "triage", str(path), "--json"],
        capture_output=True,
        timeout=60,
        cwd=ROOT,
        env=untraced,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    data = json.loads(r.stdout)
    assert r.returncode in (0, 1, 3) and data["findings"], r.stderr
    assert cpu < 2.0, f"triage of a 1 MB paste took {cpu:.2f} s of CPU"


if __name__ == "__main__":  # python tests/commands/test_triage_corpus.py: the score and every miss
    r, a, w = score()
    print("\n".join(w))
    n = len(json.loads((REAL / "manifest.json").read_text(encoding="utf-8")))
    print(f"triage corpus: {r}/{n} right, {a} false alarms")
