from __future__ import annotations

from cudadoctor.backends.host import pci_facts, system_facts, toolkit_facts
from cudadoctor.facts import PciFacts, SystemFacts, ToolkitFacts
from cudadoctor.probes import Context


def collect_system(ctx: Context) -> SystemFacts:
    return system_facts(ctx.environ)


def collect_pci(ctx: Context) -> PciFacts:
    return pci_facts()


def collect_toolkit(ctx: Context) -> ToolkitFacts:
    return toolkit_facts(ctx.environ)
