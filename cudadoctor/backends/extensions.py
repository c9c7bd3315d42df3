"""Third-party CUDA extensions of the TARGET interpreter: extensions_child.py lists the installed
distributions' shared objects there (importlib.metadata, stdlib only, bounded in time and output); this
process then reads each file's `.nv_fatbin` and dynamic section (backends/fatbin.py). Nothing is imported
or loaded: an extension built for another GPU or torch is exactly what must not crash the doctor."""

from __future__ import annotations

import re
import time
from typing import Any

from cudadoctor.backends.child import marked_json, run_child
from cudadoctor.backends.children import script
from cudadoctor.backends.fatbin import NotElf, read_archs, read_links
from cudadoctor.facts.extensions import ExtensionFacts, ExtensionLibrary, ExtensionPackage

CHILD = script("extensions_child.py")
MARK = "CUDADOCTOR_EXTENSION_FILES "
MAX_CHILD_OUTPUT = 4 << 20  # 4,000 paths at most: well under this
MAX_UNREADABLE = 20  # reasons kept for files that could not be read

# "torch==2.5.1", "torch (==2.5.1)", "torch>=2.1,<2.6; platform_system == 'Linux'"; not under an extra
_REQUIREMENT = re.compile(r"^torch(?![\w.-])\s*\(?\s*(?P<spec>[^;()]*)\)?\s*(?:;(?P<marker>.*))?$")


def torch_requirement(lines: list[Any]) -> str | None:
    """A distribution's own Requires-Dist on torch as `torch<spec>` ("torch" when unpinned), or None. The
    child keeps only the requirements whose markers hold here; several lines all apply (PEP 508), so their
    specifiers are joined."""
    specs: list[str] = []
    found = False
    for line in lines:
        m = _REQUIREMENT.match(str(line).strip())
        if m and "extra" not in (m.group("marker") or ""):
            found = True
            if spec := re.sub(r"\s+", "", m.group("spec")):
                specs.append(spec)
    return "torch" + ",".join(specs) if found else None


def read_library(relative: str, path: str) -> ExtensionLibrary | None:
    """The library's CUDA device code and links; None when it has no `.nv_fatbin` (or is no ELF).
    OSError passes up: the caller records the file as unreadable."""
    try:
        archs = read_archs(path)
    except NotElf:
        return None  # a Windows .pyd (PE) or a Mach-O: no ELF fatbin to read
    if archs is None or not (archs.sass or archs.ptx or archs.error):
        return None  # no device code (an empty fat binary launches nothing)
    lib = ExtensionLibrary(relative, archs.sass, archs.ptx, error=archs.error)
    try:
        links = read_links(path)
        lib.needed, lib.torch_symbols = links.needed, links.torch_symbols
    except (OSError, NotElf):
        pass  # the archs stand; links stay unknown
    return lib


def extension_facts(python: str, data: dict[str, Any] | None, deadline: float) -> ExtensionFacts:
    """Read every listed shared object until `deadline` (time.monotonic())."""
    facts = ExtensionFacts(python_executable=python)
    if not isinstance(data, dict):
        return facts
    facts.distributions = data.get("distributions") if isinstance(data.get("distributions"), int) else None
    facts.truncated = bool(data.get("truncated"))
    facts.location = data.get("location") if isinstance(data.get("location"), str) else None
    read = 0
    for pkg in data.get("packages") or []:
        libs: list[ExtensionLibrary] = []
        for relative, path in pkg.get("files") or []:
            if time.monotonic() > deadline:
                facts.timed_out = True
                break
            read += 1
            try:
                lib = read_library(str(relative), str(path))
            except OSError as exc:
                if len(facts.unreadable) < MAX_UNREADABLE:
                    facts.unreadable.append(f"{relative}: {exc.strerror or exc}")
                continue
            if lib is not None:
                libs.append(lib)
        if libs:
            facts.packages.append(
                ExtensionPackage(
                    str(pkg.get("name")),
                    pkg.get("version") if isinstance(pkg.get("version"), str) else None,
                    torch_requirement(pkg.get("torch") or []),
                    libs,
                )
            )
        if facts.timed_out:
            break
    facts.files_read = read
    return facts


def query_extensions(python: str, timeout: float, env: dict[str, str] | None = None) -> ExtensionFacts:
    start = time.monotonic()
    # the listing gets half the bound; reading the files (header reads only) gets the rest
    res = run_child([python, str(CHILD)], timeout=timeout / 2, env=env, max_stdout=MAX_CHILD_OUTPUT)
    data = marked_json(res, MARK)
    facts = extension_facts(python, data, start + timeout)
    if data is None:
        facts.timed_out = res.timed_out
        facts.child_error = res.failure() or "the package listing printed nothing"
    return facts
