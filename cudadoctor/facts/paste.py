"""What `cudadoctor triage` read in a paste: the formats it recognised, each fact with the line it
came from, and the error texts it recognised (facts.paste; None for a machine's own check)."""

from __future__ import annotations

from dataclasses import dataclass, field

# Hits that are a fact or a command line read from prose, not an error text (triage's header and the
# paste table list the errors apart from these).
NOT_ERRORS = frozenset(
    {
        "gpu-named",
        "install-index",
        "pip-install-torch",
        "conda-install",
        "container-context",
        "container-ran-smi",
        "docker-snap",
        "visible-devices-set",
        "windows-build",
        "linux-driver-install",
        "jetson",
        "p2p-disabled",
        "hang",
        "nproc-per-node",
        "says-cpu-build",
        "says-gpu-unsupported",
        "pypi-windows",
        "gpu-ran",
        "says-no-nvidia-gpu",
        "cuda-version-said",
        "p2p-fixes",
        "error-in-screenshot",
        "app-on-cpu",
        "extension-arch-flags",
        "kubernetes-context",
        "visible-devices-too-late",
    }
)


@dataclass
class PasteSeen:
    what: str  # "Driver version"
    value: str  # "535.104.05"
    where: str  # "nvidia-smi, line 3: | NVIDIA-SMI 535.104.05 …"


@dataclass
class PasteHit:
    kind: str  # "undefined-symbol", "deserialize-cuda", …
    text: str  # the matched text, shortened
    detail: dict[str, str] = field(default_factory=dict)

    @property
    def is_error(self) -> bool:
        """An error text a program printed; not a line read (NOT_ERRORS) nor a wish said in prose."""
        return self.kind not in NOT_ERRORS and self.detail.get("by") != "prose"


@dataclass
class PasteFacts:
    formats: list[str] = field(default_factory=list)  # "torch collect_env", "nvidia-smi -L", …
    seen: list[PasteSeen] = field(default_factory=list)
    hits: list[PasteHit] = field(default_factory=list)
    packages: dict[str, str] = field(default_factory=dict)  # pip/conda name -> version
    env: dict[str, str] = field(default_factory=dict)  # variables the paste printed (vLLM's collect_env)
    derived: list[PasteSeen] = field(default_factory=list)  # facts derived from what was seen, and how
    from_report: bool = False  # the facts came whole from a pasted cudadoctor report
