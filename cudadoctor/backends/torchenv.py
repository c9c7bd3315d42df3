"""torch facts from the TARGET interpreter: torch_child.py runs there as a child process, so torch
is never imported (nor CUDA initialised) in the doctor's own process."""

from __future__ import annotations

import json
from pathlib import Path

from cudadoctor.backends.child import run_child
from cudadoctor.facts import TorchFacts
from cudadoctor.serial import FormatError, from_jsonable

CHILD = Path(__file__).with_name("torch_child.py")
MARK = "CUDADOCTOR_TORCH_FACTS "


def check_interpreter(python: str, timeout: float = 15.0) -> str | None:
    """None when `python` runs as a Python 3 interpreter; otherwise why it cannot be used."""
    res = run_child([python, "-c", "import sys; print(sys.version_info[0])"], timeout=timeout)
    if res.error:
        return res.error
    if res.timed_out:
        return f"{python} did not answer within {timeout:g} s"
    if res.returncode != 0 or res.stdout.strip() != "3":
        return f"{python} is not a Python 3 interpreter"
    return None


def query_torch(python: str, timeout: float, env: dict[str, str] | None = None) -> TorchFacts:
    # -I would drop PYTHONPATH and user site-packages that the target may rely on for torch;
    # -S is not used either: site-packages is where torch lives.
    res = run_child([python, str(CHILD)], timeout=timeout, env=env)
    payloads = [ln[len(MARK) :] for ln in res.stdout.splitlines() if ln.startswith(MARK)]
    facts = TorchFacts(python_executable=python)
    if payloads:
        try:
            facts = from_jsonable(TorchFacts, {"python_executable": python, **json.loads(payloads[-1])})
        except (json.JSONDecodeError, FormatError) as exc:
            facts.child_error = f"unreadable output from the torch child: {exc}"
    if res.timed_out:
        facts.timed_out = True
    elif not res.ok and not facts.complete and facts.import_error is None:
        last = res.stderr.strip().splitlines()[-1:] if res.stderr.strip() else []
        facts.child_error = res.error or (last[0] if last else f"exit code {res.returncode}")
    return facts
