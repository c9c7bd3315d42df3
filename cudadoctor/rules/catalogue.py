"""Every finding's stable code, severity, title and page; docs/findings.md is generated from here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cudadoctor.model import Finding, Fix, Severity, Table, msg

# Report order. Code ranges: CD0xx doctor, CD1xx driver/libcuda/toolkit/system (CD112-119, CD126-129,
# CD143-199 below torch: WSL, kernel module, containers, GPU health), CD2xx torch and its libraries,
# CD3xx visible devices, CD4xx measurements (CD226-228, the --full torch.compile check, in a section of its
# own), CD5xx requirements, CD6xx checkpoints, CD7xx training
# (watch), CD8xx fleet, CD9xx paste triage.
SECTIONS = (
    "Doctor",
    "Driver",
    "GPU health",
    "CUDA driver library",
    "Toolkit",
    "PyTorch",
    "CUDA libraries",
    "Visible devices",
    "Measurements",
    "torch.compile",
    "Multi-GPU",
    "Requirements",
    "Checkpoint",
    "Training",
    "Fleet",
    "Paste",
    "System",
)


# The layers a root cause breaks and a finding rests on (rules/story.py links them): NVML, the driver's
# management library (GPU counts, free memory); CUDA, libcuda and cuInit (anything that runs on a GPU);
# TORCH_BUILD, the torch build's own CUDA (an error of the build alone makes is_available() False).
NVML, CUDA, TORCH_BUILD = "nvml", "cuda", "torch-build"
LAYERS = (NVML, CUDA, TORCH_BUILD)


@dataclass(frozen=True)
class Entry:
    code: str
    name: str  # kebab-case slug, stable like the code
    severity: Severity
    section: str
    summary: str  # the catalogue's one-line title
    explanation: str  # the page: what it means and why it matters
    fixes: tuple[Fix, ...] = ()  # the usual fixes, for `explain` and the docs (findings give this machine's)
    # the story (rules/story.py): an error that breaks a layer is a root cause of every finding that rests on
    # it; one beside torch (torchvision, an extension) is real but never why torch cannot use CUDA
    breaks: frozenset[str] = frozenset()
    rests_on: frozenset[str] = frozenset()
    beside_torch: bool = False

    @property
    def docs(self) -> str:
        return f"docs/findings.md#{self.code.lower()}"

    def finding(
        self,
        title: str | None = None,
        why: str | None = None,
        fix: Iterable[Fix] = (),
        severity: Severity | None = None,
        tables: Iterable[Table] = (),
        cause: str | None = None,
    ) -> Finding:
        return Finding(
            code=self.code,
            severity=severity or self.severity,
            section=self.section,
            title=title or self.summary,
            why=why if why is not None else self.explanation,
            fix=list(fix),
            docs=self.docs,
            tables=list(tables),
            cause=cause,
        )


CATALOGUE: dict[str, Entry] = {}


def entry(
    code: str,
    name: str,
    severity: Severity,
    section: str,
    summary: str,
    explanation: str,
    fixes: Iterable[Fix] = (),
    *,
    breaks: Iterable[str] = (),
    rests_on: Iterable[str] = (),
    beside_torch: bool = False,
) -> Entry:
    """A code's entry. `breaks`: the layers (LAYERS) this error breaks, making it a root cause of what rests
    on them; `rests_on`: the layers whose failure this finding is what it looks like from higher up."""
    if code in CATALOGUE:
        raise ValueError(f"duplicate finding code {code}")
    if section not in SECTIONS:
        raise ValueError(f"{code}: unknown section {section!r}")
    unknown = (set(breaks) | set(rests_on)) - set(LAYERS)
    if unknown:
        raise ValueError(f"{code}: unknown layers {sorted(unknown)}")
    e = Entry(
        code,
        name,
        severity,
        section,
        summary,
        " ".join(explanation.split()),
        tuple(fixes),
        frozenset(breaks),
        frozenset(rests_on),
        beside_torch,
    )
    CATALOGUE[code] = e
    return e


def named(thing: str, value: object) -> str:
    """ "torch 2.5.1", or "torch" alone where the value is unknown: a title never shows None. A message
    (model.msg), so that a `thing` that is itself one ("NVIDIA driver") is translated where it is shown."""
    return thing if value is None or value == "" else msg("{thing} {value}", thing=thing, value=value)


def fix(when: str, *commands: str, lang: str = "") -> Fix:
    """`lang`: what the lines are (model.FIX_LANGUAGES); left out, model.language tells it from them."""
    return Fix(when=when, commands=list(commands), lang=lang)
