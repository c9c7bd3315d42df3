"""torch.compile in the TARGET interpreter: compile_child.py runs there as a child process."""

from __future__ import annotations

import json
from collections.abc import Mapping

from cudadoctor.backends.child import ChildResult, run_child
from cudadoctor.backends.children import script
from cudadoctor.facts.codec import FormatError, from_jsonable
from cudadoctor.facts.libraries import CompileFacts

CHILD = script("compile_child.py")
MARK = "CUDADOCTOR_COMPILE_FACTS "


def query_compile(python: str, timeout: float, env: Mapping[str, str] | None = None) -> CompileFacts:
    return compile_facts(python, run_child([python, str(CHILD)], timeout=timeout, env=env))


# The same work as one stage of the shared torch child (backends/torch_session.py): script, function, args.
STAGE = (CHILD.name, "main", [])


def compile_facts(python: str, res: ChildResult) -> CompileFacts:
    """The facts of a compile child (or of its stage in the shared child), however it ended."""
    payloads = [ln[len(MARK) :] for ln in res.stdout.splitlines() if ln.startswith(MARK)]
    facts = CompileFacts(python_executable=python)
    if payloads:
        try:
            facts = from_jsonable(CompileFacts, {**json.loads(payloads[-1]), "python_executable": python})
        except (json.JSONDecodeError, FormatError) as exc:
            facts.child_error = f"unreadable output from the compile child: {exc}"
    if res.timed_out:
        facts.timed_out = True
        if res.error:  # never started: an earlier stage of the shared child ran out of time
            facts.child_error = res.error
    elif not res.ok and not facts.complete:
        facts.child_error = res.failure()
    return facts
