"""Every example machine for `check`'s codes, by story, in report order (the modules beside this one)."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.rules.examples import drivers, extensions, gpus, pastes, platforms, torch_stack, working


def machines() -> dict[str, Facts]:
    """name -> facts, for every example `check` evaluates (rules/examples/table.py names them by code)."""
    return {
        **drivers.examples(),
        **platforms.examples(),
        **gpus.examples(),
        **torch_stack.examples(),
        **extensions.extension_machines(),
        **pastes.examples(),
        **working.examples(),
    }
