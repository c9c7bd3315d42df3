"""torch facts from the TARGET interpreter: torch_child.py runs there as a child process, so torch
is never imported (nor CUDA initialised) in the doctor's own process."""

from __future__ import annotations

import os
from dataclasses import dataclass

from cudadoctor.backends.child import ChildResult, marked_json, run_child
from cudadoctor.backends.children import script
from cudadoctor.facts import TorchFacts
from cudadoctor.facts.codec import FormatError, from_jsonable

CHILD = script("torch_child.py")
MARK = "CUDADOCTOR_TORCH_FACTS "


@dataclass(frozen=True)
class InterpreterProblem:
    """Why `--python` cannot be used; `failed`: it hung, crashed or flooded (the check could not finish,
    exit 3), not a path that is no Python (a usage error, exit 2)."""

    message: str
    failed: bool = False

    def __str__(self) -> str:
        return self.message


# Where an environment keeps its interpreter: venv and conda on POSIX, venv on Windows, conda on Windows.
ENV_INTERPRETERS = ("bin/python", "bin/python3", "Scripts/python.exe", "python.exe")


def interpreter_in(directory: str) -> str | None:
    """The interpreter of the venv or conda environment at `directory`, None when it holds none."""
    for rel in ENV_INTERPRETERS:
        path = os.path.join(directory, *rel.split("/"))
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def check_interpreter(python: str, timeout: float = 15.0) -> InterpreterProblem | None:
    """None when `python` runs as a Python 3 interpreter; otherwise why it cannot be used."""
    res = run_child([python, "-c", "import sys; print(sys.version_info[0])"], timeout=timeout, max_stdout=4096)
    if res.error:
        return InterpreterProblem(res.error)
    if res.timed_out:
        return InterpreterProblem(f"{python} did not answer within {timeout:g} s", failed=True)
    if res.flooded:
        return InterpreterProblem(f"{python} printed far more than a Python 3 interpreter would", failed=True)
    if res.signal is not None:
        return InterpreterProblem(f"{python} {res.failure()}", failed=True)
    if res.returncode != 0 or res.stdout.strip() != "3":
        return InterpreterProblem(f"{python} is not a Python 3 interpreter")
    return None


def query_torch(python: str, timeout: float, env: dict[str, str] | None = None) -> TorchFacts:
    # -I would drop PYTHONPATH and user site-packages that the target may rely on for torch;
    # -S is not used either: site-packages is where torch lives.
    return torch_facts(python, run_child([python, str(CHILD)], timeout=timeout, env=env))


# The same work as one stage of the shared torch child (backends/torch_session.py): script, function, args.
STAGE = (CHILD.name, "main", [])


def torch_facts(python: str, res: ChildResult) -> TorchFacts:
    """The facts of a torch child (or of its stage in the shared child), however it ended."""
    data = marked_json(res, MARK)
    facts = TorchFacts(python_executable=python)
    if data is not None:
        try:
            facts = from_jsonable(TorchFacts, {**data, "python_executable": python})
        except FormatError as exc:
            facts.child_error = f"unreadable output from the torch child: {exc}"
    elif res.ok:
        facts.child_error = "the torch child printed no facts"
    if res.timed_out:
        facts.timed_out = True
    elif not res.ok and not facts.complete:
        # a crash, a flood or garbage is the torch check failing, never "torch is not installed"
        facts.child_error = res.failure()
    return facts
