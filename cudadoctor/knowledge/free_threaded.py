"""Free-threaded Python (3.13t, 3.14t: PEP 703, `Py_GIL_DISABLED`): which torch companions publish builds
for it. A wheel built for the regular ABI (cp313, cp314) or the limited API (abi3) does not install on a
free-threaded interpreter (tag cp313t/cp314t), so pip or uv builds the package from its sdist, which needs
a compiler and the CUDA toolkit, or fails. Every row says only what its source says; a package not here is
unknown, and unknown says nothing.

Sources (issue threads of each project; docs/notes/issue28-leads.md §7 has the quotes):
- torch: Linux 3.13t wheels from 2.6 (pytorch#130249's support matrix); "3.14t" in the release build
  matrix (pytorch/test-infra tools/scripts/generate_binary_build_matrix.py @61a77570).
- torchvision: cp313t and cp314t wheels on download.pytorch.org for 0.24.x (the index listing quoted in
  pytorch/vision#9330).
- torchcodec: free-threaded wheels on Linux only; macOS and Windows asked for (meta-pytorch/torchcodec#1266,
  open, 2026-06-04).
- torchao: no cp313t wheel on the CUDA index for 0.14.1 (pytorch/ao#3243, open).
- bitsandbytes: its wheels are tagged py3-none and install on free-threaded Python as they are
  (bitsandbytes-foundation/bitsandbytes#1981, a maintainer, 2026-06-29).
Not found in a source, so not here: flash-attn, xformers, torchaudio.
"""

from __future__ import annotations

from dataclasses import dataclass

from cudadoctor.model import Message, msg


@dataclass(frozen=True)
class Builds:
    package: str  # the distribution name, as pip shows it
    platforms: tuple[str, ...] | None  # OSes (platform.system()) with free-threaded wheels; None: any (py3-none)
    what: Message  # what the source says, for the report
    source: str  # the URL that says it


BUILDS: dict[str, Builds] = {
    b.package: b
    for b in (
        Builds(
            "torchvision",
            ("Linux", "Windows", "Darwin"),
            msg("cp313t and cp314t wheels on download.pytorch.org (0.24.x)"),
            "https://github.com/pytorch/vision/issues/9330",
        ),
        Builds(
            "torchcodec",
            ("Linux",),
            msg("free-threaded wheels on Linux only"),
            "https://github.com/meta-pytorch/torchcodec/issues/1266",
        ),
        Builds(
            "torchao",
            (),
            msg("no cp313t wheel on the CUDA index (0.14.1)"),
            "https://github.com/pytorch/ao/issues/3243",
        ),
        Builds(
            "bitsandbytes",
            None,
            msg("py3-none wheels, which install on any Python"),
            "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1981",
        ),
    )
}

# The distributions the target interpreter is asked about (torch_child.py keeps the same list: it runs
# with the stdlib only and cannot import this module).
PACKAGES: tuple[str, ...] = (
    "torchvision",
    "torchaudio",
    "torchcodec",
    "torchao",
    "bitsandbytes",
    "flash-attn",
    "xformers",
)


def missing_builds(installed: dict[str, str], os_name: str | None) -> list[tuple[str, str, Builds]]:
    """(package, version, row) of the installed companions a source says have no free-threaded build on
    this OS. An unknown OS or a package without a row says nothing."""
    out = []
    for name, version in sorted(installed.items()):
        row = BUILDS.get(name)
        if row is None or row.platforms is None:
            continue
        if row.platforms and os_name is None:
            continue  # some OSes have them: which one this is decides
        if os_name not in row.platforms:
            out.append((name, version, row))
    return out
