"""torchvision and torchaudio releases that pair with each torch release.

Sources:
- torchvision: the compatibility table of pytorch/vision README.md ("The following is the corresponding
  torchvision versions and supported Python versions"), read in a copy of the README at upstream commit
  447c9374be54 (rows up to torch 2.13 -> 0.28) ◐; older rows also in pytorch/vision@0a12c070 README ✅.
  Rule: torch 2.N pairs with torchvision 0.(N+15), the same patch number.
- torchaudio: pytorch/audio docs/source/installation.rst "Compatibility Matrix" ✅ (rows up to 2.6):
  torch 2.0.0 -> 2.0.1 and 2.0.1 -> 2.0.2; from 2.1 torchaudio carries torch's own version. Releases
  after 2.6 follow the same rule by the version numbers published on PyPI (❓ not in the table read).
- Both packages' wheels pin the torch they were built with in Requires-Dist (`torch==2.13.0`), and a
  CUDA build carries the same local tag (+cu126) as its torch: a pair from different indexes fails at
  import or at the first custom op ("operator torchvision::nms does not exist").
"""

from __future__ import annotations

from cudadoctor.facts.libraries import CompanionCheck

# torch release -> torchvision release (the table's rows)
TORCHVISION: dict[str, str] = {
    "1.13": "0.14",
    "2.0": "0.15",
    "2.1": "0.16",
    "2.2": "0.17",
    "2.3": "0.18",
    "2.4": "0.19",
    "2.5": "0.20",
    "2.6": "0.21",
    "2.7": "0.22",
    "2.8": "0.23",
    "2.9": "0.24",
    "2.10": "0.25",
    "2.11": "0.26",
    "2.12": "0.27",
    "2.13": "0.28",
}

# the exceptions to "torchaudio carries torch's version"
TORCHAUDIO_EXCEPTIONS: dict[str, str] = {"2.0.0": "2.0.1", "2.0.1": "2.0.2"}


def _base(version: str) -> str:
    return version.split("+")[0]


def _release(version: str) -> str:
    return ".".join(_base(version).split(".")[:2])


def local_tag(version: str | None) -> str | None:
    """ "2.13.0+cu126" -> "cu126"; None without a tag."""
    return version.split("+", 1)[1] if version and "+" in version else None


def torchvision_for(torch_version: str) -> str | None:
    """The torchvision that pairs with a torch version, patch included: 2.5.1 -> 0.20.1."""
    parts = _base(torch_version).split(".")
    release = _release(torch_version)
    vision = TORCHVISION.get(release)
    if vision is None and len(parts) >= 2 and parts[0] == "2" and parts[1].isdigit():
        vision = f"0.{int(parts[1]) + 15}"  # the table's rule, for releases newer than the table
    if vision is None:
        return None
    patch = parts[2] if len(parts) > 2 else "0"
    return f"{vision}.{patch}"


def torchaudio_for(torch_version: str) -> str | None:
    base = _base(torch_version)
    if len(base.split(".")) == 2:
        base += ".0"
    if base in TORCHAUDIO_EXCEPTIONS:
        return TORCHAUDIO_EXCEPTIONS[base]
    return base if base.startswith("2.") else None


def expected(package: str, torch_version: str) -> str | None:
    return torchvision_for(torch_version) if package == "torchvision" else torchaudio_for(torch_version)


def check(package: str, version: str, torch_version: str, requires_torch: str | None) -> CompanionCheck:
    """torchvision/torchaudio `version` against torch: its own Requires-Dist pin first (what it was built
    with), else the table; and the local tags (+cu126 vs +cu128, +cpu) must agree."""
    want = expected(package, torch_version)
    tag, torch_tag = local_tag(version), local_tag(torch_version)
    c = CompanionCheck(package, version, requires_torch=requires_torch, expected=want, local_tag=tag)
    ok: bool | None = None
    if requires_torch and requires_torch.startswith("=="):
        ok = _base(requires_torch[2:]) == _base(torch_version)
    elif want is not None:
        ok = _base(version) == want
    if ok is not False and tag is not None and torch_tag is not None and tag != torch_tag:
        ok = False
    c.ok = ok
    return c
