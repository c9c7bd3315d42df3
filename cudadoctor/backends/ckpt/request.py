"""What the torch child in the target interpreter is asked, and where `__main__` classes live."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from cudadoctor.backends.children import script
from cudadoctor.facts.ckpt import CkptFacts

# ----------------------------------------------------------------------- classes pickled from __main__

MAIN_SCAN_FILES = 200  # .py files read per directory
MAIN_SCAN_BYTES = 1 << 20  # of each


def locate_main_definitions(
    names: list[str], dirs: list[str], attributes: list[str] | None = None
) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Where the classes a pickle names as `__main__.X` are defined: ({X: path of the .py file}, {X: the
    paths when several files define it and nothing tells them apart}).

    torch.save(model) run from a script pickles the script's classes as `__main__.X`; loading needs X
    importable again. The script usually sits beside the checkpoint or in the current directory: each
    directory's *.py files (bounded in number and size) are searched for a top-level `class X` or
    `def X`, first directory first. When several files of one directory define X, the one that assigns
    the pickled model's own attributes (`self.fc1 = …` for the state dict's `fc1.weight`) is taken only
    if it alone does; otherwise X is ambiguous, never guessed. Text only: nothing is imported or run."""
    wanted = [n.partition(".")[2] for n in names if n.startswith("__main__.") and n.count(".") == 1]
    attrs = sorted({a for a in attributes or [] if a.isidentifier()})
    found: dict[str, str] = {}
    ambiguous: dict[str, list[str]] = {}
    seen: set[str] = set()
    for d in dirs:
        d = os.path.abspath(d)
        if d in seen:
            continue
        seen.add(d)
        try:
            files = sorted(n for n in os.listdir(d) if n.endswith(".py") and n[:-3].isidentifier())
        except OSError:
            continue
        here: dict[str, list[tuple[str, str]]] = {}
        for n in files[:MAIN_SCAN_FILES]:
            missing = [w for w in wanted if w not in found and w not in ambiguous]
            if not missing:
                break
            if not os.path.isfile(os.path.join(d, n)):
                continue  # a FIFO or a device named *.py would block the read
            try:
                with open(os.path.join(d, n), encoding="utf-8", errors="replace") as fh:
                    text = fh.read(MAIN_SCAN_BYTES)
            except OSError:
                continue
            for w in missing:
                if re.search(rf"^(?:class|def)\s+{re.escape(w)}\b", text, re.MULTILINE):
                    here.setdefault(w, []).append((os.path.join(d, n), text))
        for w, candidates in here.items():
            if len(candidates) == 1:
                found[w] = candidates[0][0]
                continue
            score = {path: sum(bool(re.search(rf"\bself\.{a}\s*=", text)) for a in attrs) for path, text in candidates}
            best = max(score.values())
            top = [path for path, s in score.items() if s == best]
            if best > 0 and len(top) == 1:
                found[w] = top[0]
            else:
                ambiguous[w] = [path for path, _text in candidates]
        if all(w in found or w in ambiguous for w in wanted):
            break
    return found, ambiguous


# ---------------------------------------------------------------------------------- the torch child

CHILD = str(script("ckpt_child.py"))
CHILD_MARK = "CUDADOCTOR_CKPT "


def child_request(facts: CkptFacts, action: str, **extra: Any) -> dict:
    static = None
    if facts.state_dict_keys is not None and facts.tensors is not None:
        head = f"{facts.state_dict_key}." if facts.state_dict_key else ""
        static = {t.name[len(head) :]: t.shape for t in facts.tensors if t.name.startswith(head)}
    return {
        "action": action,
        "path": facts.path,
        "format": facts.format,
        "trust": facts.trust,
        "state_dict_key": facts.state_dict_key,
        "static_keys": static,
        "prefixes": facts.prefixes or [],
        "index_file": facts.index_file,
        "shards": facts.shards,
        "main_definitions": facts.main_definitions or {},
        "cwd": os.getcwd(),
        **extra,
    }


def run_child_request(python: str, request: dict, timeout: float) -> tuple[dict | None, str | None, bool]:
    """(the child's answer, why there is none, timed out)."""
    from cudadoctor.backends.child import run_child

    res = run_child([python, CHILD], timeout=timeout, stdin=json.dumps(request))
    payloads = [ln[len(CHILD_MARK) :] for ln in res.stdout.splitlines() if ln.startswith(CHILD_MARK)]
    if payloads:
        try:
            return json.loads(payloads[-1]), None, res.timed_out
        except ValueError as exc:
            return None, f"unreadable output from the checkpoint child: {exc}", res.timed_out
    if res.timed_out:
        return None, f"the checkpoint child did not finish within {timeout:g} s", True
    last = res.stderr.strip().splitlines()[-1:] if res.stderr.strip() else []
    return None, res.error or (last[0][:300] if last else f"exit code {res.returncode}"), False
