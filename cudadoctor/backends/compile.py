"""torch.compile in the TARGET interpreter: compile_child.py runs there as a child process."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from cudadoctor.backends.child import run_child
from cudadoctor.facts.codec import FormatError, from_jsonable
from cudadoctor.facts.libraries import CompileFacts

CHILD = Path(__file__).with_name("compile_child.py")
MARK = "CUDADOCTOR_COMPILE_FACTS "


def query_compile(python: str, timeout: float, env: Mapping[str, str] | None = None) -> CompileFacts:
    res = run_child([python, str(CHILD)], timeout=timeout, env=env)
    payloads = [ln[len(MARK) :] for ln in res.stdout.splitlines() if ln.startswith(MARK)]
    facts = CompileFacts(python_executable=python)
    if payloads:
        try:
            facts = from_jsonable(CompileFacts, {**json.loads(payloads[-1]), "python_executable": python})
        except (json.JSONDecodeError, FormatError) as exc:
            facts.child_error = f"unreadable output from the compile child: {exc}"
    if res.timed_out:
        facts.timed_out = True
    elif not res.ok and not facts.complete:
        last = res.stderr.strip().splitlines()[-1:] if res.stderr.strip() else []
        facts.child_error = res.error or (last[0] if last else f"exit code {res.returncode}")
    return facts
