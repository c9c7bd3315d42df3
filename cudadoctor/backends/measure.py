"""Bandwidth and the training smoke test, measured by measure_child.py in the target interpreter.

In a run with other torch checks each measurement is a stage of the one shared torch child
(backends/torch_session.py); alone, SharedMeasurement runs measure_child.py for it. Either way the
smoke test never runs on the GPU while copies are being timed.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from cudadoctor.backends.child import ChildResult, marked_json, run_child
from cudadoctor.backends.children import script
from cudadoctor.facts import BandwidthFacts, SmokeFacts
from cudadoctor.facts.codec import FormatError, from_jsonable

CHILD = script("measure_child.py")
MARK = "CUDADOCTOR_MEASURE_FACTS "

DEFAULT_SIZE = 256 << 20  # large enough to saturate a PCIe Gen5 x16 link with one copy
DEFAULT_REPEATS = 5
DEFAULT_STEPS = 10


class SharedMeasurement:
    """Runs the child once, on first use, for every task asked for; later callers get the same result."""

    def __init__(
        self,
        python: str,
        tasks: list[str],
        timeout: float,
        size: int = DEFAULT_SIZE,
        repeats: int = DEFAULT_REPEATS,
        steps: int = DEFAULT_STEPS,
    ) -> None:
        self.python, self.tasks, self.timeout = python, tasks, timeout
        self.config = {"tasks": tasks, "size": size, "repeats": repeats, "steps": steps}
        self._lock = threading.Lock()
        self._result: dict[str, Any] | None = None

    def result(self) -> dict[str, Any]:
        with self._lock:
            if self._result is None:
                self._result = self._run()
            return self._result

    def _run(self) -> dict[str, Any]:
        return child_data(run_child([self.python, str(CHILD), json.dumps(self.config)], timeout=self.timeout))

    def bandwidth(self) -> BandwidthFacts:
        return part_facts("bandwidth", self.result())

    def smoke(self) -> SmokeFacts:
        return part_facts("smoke", self.result())


def stage(task: str, size: int = DEFAULT_SIZE) -> tuple[str, str, list[Any]]:
    """One measurement as a stage of the shared torch child (backends/torch_session.py)."""
    return CHILD.name, "stage", [task, {"size": size, "repeats": DEFAULT_REPEATS, "steps": DEFAULT_STEPS}]


def child_data(res: ChildResult) -> dict[str, Any]:
    """What a measurement child (or its stage in the shared child) reported, with how it ended."""
    data = marked_json(res, MARK) or {}
    if res.timed_out:
        data["timed_out"] = True
        if res.error:  # never started: an earlier stage of the shared child ran out of time
            data.setdefault("error", res.error)
    elif not res.ok:
        data.setdefault("error", res.failure())
    return data


def part_facts(name: str, data: dict[str, Any]) -> Any:
    cls = BandwidthFacts if name == "bandwidth" else SmokeFacts
    part = data.get(name)
    if part is None:
        facts = cls()
        facts.timed_out = bool(data.get("timed_out"))
        facts.error = data.get("error") or ("did not finish in time" if facts.timed_out else "no result")
        return facts
    try:
        return from_jsonable(cls, part)
    except FormatError as exc:
        return cls(error=f"unreadable result: {exc}")
