"""Example machines the catalogue shows fixes from: `explain CODE` prints what the rules say on the first
example that raises CODE (a real fix for a typical machine, not a placeholder).

Each example is something people really run into (an Ubuntu venv, a Windows laptop, WSL, a container, a
conda env, a shared multi-GPU box, an HGX node, a Jetson, a paste from an issue, a checkpoint, a torchrun
job), with only the facts that tell its story. Order matters: the first example that raises a code gives
its fixes, so the most typical one for a code comes first. The CI gate's codes (CD5xx) need requirements,
the doctor's own (CD001/CD002) failed probes, checkpoints and fleets their own rules: `_runs()`.
By command: base.py (what they share), machines.py (check, the gate), checkpoints.py (ckpt), fleets.py.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, partial

from cudadoctor.facts import Facts
from cudadoctor.model import Finding, Fix
from cudadoctor.rules.examples.base import _ubuntu
from cudadoctor.rules.examples.checkpoints import checkpoints
from cudadoctor.rules.examples.fleets import fleets
from cudadoctor.rules.examples.machines import _failed_probes, _gate, machines

__all__ = ["checkpoints", "example_fixes", "fleets", "machines"]


# --- evaluating the examples, lazily -----------------------------------------------------------------

# (the code ranges a run is the example for, the run): a machine's `check` never raises the gate's or the
# doctor's codes, and the gate, checkpoint and fleet runs speak only for their own (a fleet also reports its
# nodes' findings), so `explain` of a code evaluates only the runs that can raise it (start-up time).
Run = tuple[tuple[str, ...], Callable[[], list[Finding]]]
_CHECK = ("CD1", "CD2", "CD3", "CD4", "CD9")


def _runs() -> list[Run]:
    from cudadoctor.rules import ckpt, evaluate, fleet

    facts, gate = _gate()
    return [
        (("CD5",), partial(evaluate, facts, [], gate)),
        (("CD0",), partial(evaluate, Facts(system=_ubuntu()), _failed_probes())),
        *((("CD6",), partial(ckpt.evaluate, c)) for c in checkpoints()),
        *((("CD8",), partial(fleet.evaluate, ff)) for ff in fleets()),
        *((_CHECK, partial(evaluate, m, [])) for m in machines()),
    ]


class _Examples:
    """Each code's fixes from the first run that gives them; runs are evaluated only when asked for."""

    def __init__(self) -> None:
        self.fixes: dict[str, list[Fix]] = {}
        self.pending = _runs()

    def find(self, code: str | None = None) -> None:
        """Evaluate runs until `code` has fixes or no run left can raise it (None: every run)."""
        while code is None or code not in self.fixes:
            run = next((r for r in self.pending if code is None or code.startswith(r[0])), None)
            if run is None:
                return
            self.pending.remove(run)
            codes, evaluate = run
            for finding in evaluate():
                if finding.fix and finding.code.startswith(codes):
                    self.fixes.setdefault(finding.code, finding.fix)


@cache
def _examples() -> _Examples:
    return _Examples()


def _all() -> dict[str, list[Fix]]:
    ex = _examples()
    ex.find()
    return ex.fixes


def example_fixes(code: str) -> list[Fix]:
    ex = _examples()
    ex.find(code)
    return list(ex.fixes.get(code, []))
