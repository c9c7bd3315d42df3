"""Example machines, checkpoints, torchrun jobs and training runs: each a named, real-world story with only
the facts that tell it (an Ubuntu venv, a Windows laptop, WSL, a container, a conda env, a shared multi-GPU
box, an HGX node, a Jetson, a paste from an issue, a checkpoint, a torchrun job, a `watch` timeline).

table.py names, for every code, the examples that raise it: the first is the code's own, whose finding is
its snapshot (tests/snapshots/CDxxx.txt) and whose fixes `explain CODE` prints. By story: drivers.py,
platforms.py, gpus.py, torch_stack.py, extensions.py, pastes.py (check), gate.py (the CI gate and the
doctor's own failures), checkpoints.py (ckpt), fits.py (fit), fleets.py (fleet), training.py (watch);
base.py holds the fact builders they share.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial

from cudadoctor.facts import Facts
from cudadoctor.model import Finding, Fix

# imported before the functions below are defined: a submodule imported later would not rebind the
# package's names `machines`, `checkpoints`, `fleets` to itself (they stay these functions)
from cudadoctor.rules.examples import checkpoints as _checkpoints
from cudadoctor.rules.examples import fleets as _fleets
from cudadoctor.rules.examples import machines as _machines

__all__ = ["Example", "checkpoints", "example_fixes", "examples", "fleets", "machines", "own_example"]


@dataclass(frozen=True)
class Example:
    name: str
    command: str  # what the user ran: check, check --require…, ckpt inspect, fit, fleet, watch
    run: Callable[[], list[Finding]]  # the rules on its facts, evaluated only when asked for
    facts: Facts | None = None  # the machine, for `check` examples: a fix's `cudadoctor` line runs against it
    subject: object = None  # what else the rules read: the checkpoint, the fleet, the timeline

    def findings(self) -> list[Finding]:
        return _evaluated(self.name)


def machines() -> list[Facts]:
    return list(_machines.machines().values())


def checkpoints() -> list:
    return list(_checkpoints.checkpoints().values())


def fleets() -> list:
    return list(_fleets.fleets().values())


@cache
def examples() -> dict[str, Example]:
    """Every example by name; building one is cheap, evaluating it is not (Example.findings, cached)."""
    from cudadoctor.rules import ckpt, evaluate, fit, fleet, watch
    from cudadoctor.rules.examples import fits, gate, training
    from cudadoctor.rules.examples.base import ubuntu_system

    out: list[Example] = []
    facts, req = gate._gate()
    out.append(Example("ci-gate-shared-box", "check --require-gpus 2", partial(evaluate, facts, [], req), facts))
    for name, (facts, req) in gate.gates().items():
        out.append(Example(name, "check --require-gpus 1", partial(evaluate, facts, [], req), facts))
    doctor = Facts(system=ubuntu_system())
    out.append(Example("doctor-probes-failed", "check", partial(evaluate, doctor, gate._failed_probes()), doctor))
    out += [Example(n, "check", partial(evaluate, f, []), f) for n, f in _machines.machines().items()]
    out += [
        Example(n, "ckpt inspect", partial(ckpt.evaluate, c), None, c) for n, c in _checkpoints.checkpoints().items()
    ]
    out += [Example(n, "fit", partial(fit.evaluate, f), None, f) for n, f in fits.fits().items()]
    out += [Example(n, "fleet", partial(fleet.evaluate, f), None, f) for n, f in _fleets.fleets().items()]
    out += [Example(n, "watch", partial(watch.evaluate, t), None, t) for n, t in training.timelines().items()]
    named = {e.name: e for e in out}
    assert len(named) == len(out), "two examples with one name"
    return named


@cache
def _evaluated(name: str) -> list[Finding]:
    return examples()[name].run()


def own_example(code: str) -> Example | None:
    """The example a code names first in table.py: its snapshot's, and the fixes `explain` shows."""
    from cudadoctor.rules.examples.table import BY_CODE

    names = BY_CODE.get(code)
    return examples()[names[0]] if names else None


def example_fixes(code: str) -> list[Fix]:
    """The fixes the rules give for `code` on its own example (only that example is evaluated)."""
    ex = own_example(code)
    if ex is None:
        return []
    return next((list(f.fix) for f in ex.findings() if f.code == code), [])
