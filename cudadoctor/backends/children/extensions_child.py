"""Run as a script in the TARGET interpreter (stdlib only): lists the installed distributions' shared
objects with importlib.metadata and prints one JSON line. Nothing is imported but the standard library:
the extensions themselves are never loaded (the parent reads their files: backends/extensions.py).
"""

import json
import os
import re
import sys

# the helper beside this script (also under PYTHONSAFEPATH); leave_path() takes this directory off again
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from _cudadoctor_child import leave_path

leave_path()

MARK = "CUDADOCTOR_EXTENSION_FILES "
MAX_DISTRIBUTIONS = 5000
MAX_FILES = 4000  # shared objects in all
# torch's own kernels are checked against its arch list (CD208); nvidia-* wheels are NVIDIA's libraries
SKIP = re.compile(r"^(torch|nvidia-.*)$")
SHARED = re.compile(r"\.(so(\.[0-9]+)*|pyd)$")


def _normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def main(argv):
    from importlib import metadata

    out = {"distributions": 0, "packages": [], "truncated": False, "location": None}
    files = 0
    seen = set()
    for dist in metadata.distributions():
        if out["distributions"] >= MAX_DISTRIBUTIONS or files >= MAX_FILES:
            out["truncated"] = True
            break
        try:
            name = dist.metadata["Name"] or ""
        except Exception:
            continue
        key = _normal(name)
        if not key or key in seen or SKIP.match(key):
            continue
        seen.add(key)  # the first on sys.path is the one imported
        out["distributions"] += 1
        libs = []
        for f in dist.files or ():
            if SHARED.search(str(f)):
                if files >= MAX_FILES:
                    out["truncated"] = True
                    break
                libs.append([str(f), str(dist.locate_file(f))])
                files += 1
        if not libs:
            continue
        torch = [r for r in (dist.requires or ()) if re.match(r"torch\b(?![-_.\w])", r) and _applies(r)]
        if out["location"] is None:
            out["location"] = str(dist.locate_file(""))
        out["packages"].append({"name": name, "version": dist.version, "torch": torch[:8], "files": libs})
    sys.stdout.write(MARK + json.dumps(out) + "\n")
    sys.stdout.flush()


def _applies(requirement: str) -> bool:
    """Whether a requirement's environment marker holds in this interpreter ("torch==2.1; sys_platform ==
    'win32'" does not on Linux). Without a marker evaluator (packaging, or pip's copy) a marked requirement
    is left out: its pin stays unknown rather than one meant for another platform."""
    if ";" not in requirement:
        return True
    marker = requirement.split(";", 1)[1].strip()
    if "extra" in marker:
        return False
    for module in ("packaging.markers", "pip._vendor.packaging.markers"):
        try:
            evaluator = __import__(module, fromlist=["Marker"]).Marker
        except Exception:
            continue
        try:
            return bool(evaluator(marker).evaluate())
        except Exception:
            return False
    return False


if __name__ == "__main__":
    main(sys.argv[1:])
