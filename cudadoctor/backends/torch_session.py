"""The torch checks of one run in ONE child of the target interpreter: torch_session_child.py imports
torch once (seconds per process) and runs each check's own child code as a stage, in order.

Each stage is bounded by its own probe's time and its facts are handed on as soon as it ends, so a
probe waits only for the stages up to its own. A stage that overruns or crashes ends the child: it is
reported as its own child's timeout or crash would be, and the stages after it as not run, saying why
(backends/child.run_stages).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cudadoctor.backends.child import ChildResult, run_stages
from cudadoctor.backends.children import script

CHILD = script("torch_session_child.py")
END = "CUDADOCTOR_STAGE_END "


@dataclass(frozen=True)
class Stage:
    name: str  # the probe's
    script: str  # a child script beside this file
    function: str  # its function that does the work and prints the facts
    args: list[Any]  # JSON
    bound: float  # seconds, from the end of the stage before


class TorchSession:
    """Starts the child on first use; result(name) waits for that stage only."""

    def __init__(self, python: str, stages: Sequence[Stage], env: Mapping[str, str] | None = None) -> None:
        self.python, self.stages, self.env = python, list(stages), env
        self._lock = threading.Lock()
        self._started = False
        self._done = {s.name: threading.Event() for s in self.stages}
        self._results: dict[str, ChildResult] = {}

    def result(self, name: str) -> ChildResult:
        with self._lock:
            if not self._started:
                self._started = True
                threading.Thread(target=self._run, name="torch-session", daemon=True).start()
        self._done[name].wait()
        return self._results[name]

    def _run(self) -> None:
        import json

        plan = [[s.name, s.script, s.function, s.args] for s in self.stages]
        try:
            run_stages(
                [self.python, str(CHILD), json.dumps(plan)],
                [(s.name, s.bound) for s in self.stages],
                END,
                self._finished,
                env=self.env,
            )
        finally:
            for name in self._done:  # only if the runner itself failed: nobody waits forever
                if name not in self._results:
                    self._finished(name, ChildResult(None, "", "", error="the shared torch child did not report"))

    def _finished(self, name: str, result: ChildResult) -> None:
        self._results.setdefault(name, result)
        self._done[name].set()
