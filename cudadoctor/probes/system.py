from __future__ import annotations

from typing import TYPE_CHECKING

from cudadoctor.probes import Context

if TYPE_CHECKING:
    from cudadoctor.facts import PciFacts, SystemFacts, ToolkitFacts

# Backends are imported when the probe runs, on its own thread: `check` reaches the slow torch child
# sooner when nothing heavy is imported before the probes start.


def collect_system(ctx: Context) -> SystemFacts:
    from cudadoctor.backends.host import system_facts

    return system_facts(ctx.environ)


def collect_pci(ctx: Context) -> PciFacts:
    from cudadoctor.backends.host import pci_facts

    return pci_facts()


def collect_toolkit(ctx: Context) -> ToolkitFacts:
    from cudadoctor.backends.host import toolkit_facts

    return toolkit_facts(ctx.environ)
