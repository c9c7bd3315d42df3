"""How this report loads the file, one way for all its findings.

Every finding of one report that says how to load the file, or to run `ckpt fix` on it, says it the
same way: with the safe_globals the audit found (the default weights_only=True refuses the file
otherwise), with --trust where `ckpt fix` needs it, and not at all where CD621 says never to load it."""

from __future__ import annotations

from cudadoctor.facts.ckpt import CkptFacts
from cudadoctor.rules.ckpt.text import py, sh

PICK_DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")'
# what a script that loads a checkpoint imports a class pickled from __main__ from, when no .py file
# here defines it (the doctor cannot know the saving script's name)
YOUR_SCRIPT = "YOUR_SCRIPT"


def unsafe(f: CkptFacts) -> list[str] | None:
    """The globals weights_only=True refuses; the target torch's own list (its version's allow-list)
    wins over the doctor's table. None: unknown."""
    t = f.torch
    if t is not None and t.unsafe_globals is not None:
        return sorted(set(t.unsafe_globals) | set(f.dangerous_globals or []))
    return f.unsafe_globals


def needs_globals(f: CkptFacts) -> list[str]:
    """What a torch.load of this file must allow-list ([]: a plain torch.load reads it)."""
    if f.format in ("dcp", "safetensors") or (f.torch is not None and f.torch.weights_only_ok is True):
        return []
    return unsafe(f) or []


def never_load(f: CkptFacts) -> bool:
    """CD621's file (it runs code), or one torch's restricted load refuses for no global it names."""
    t = f.torch
    refused = t is not None and t.weights_only_ok is False and not needs_globals(f)
    return bool(f.dangerous_globals) or refused


def unlocated(f: CkptFacts) -> list[str]:
    """Classes pickled from the saving script (__main__.X) that no .py file here defines."""
    found = f.main_definitions or {}
    return [g.partition(".")[2] for g in needs_globals(f) if g.startswith("__main__.") and g[9:] not in found]


def trusting(f: CkptFacts) -> bool:
    """`ckpt fix` refuses this file without --trust."""
    return bool(f.unsafe_globals or needs_globals(f))


def fix_cmd(f: CkptFacts, flags: str) -> str | None:
    """The `ckpt fix` line, with --trust where it refuses the file without it; None where it cannot
    succeed: a file never to load, or a class of the saving script nowhere to be found. A copy of a file
    that needs --trust is the weights alone (--state-dict-only): with the objects weights_only=True
    refuses, the copy would not load as a user loads it, and `fix` says it did not verify."""
    if never_load(f) or unlocated(f):
        return None
    trust = ""
    if trusting(f):
        if f.state_dict_key is None:
            return None
        trust = " --trust" if "--state-dict-only" in flags else " --state-dict-only --trust"
    base = f.path.rsplit(".", 1)[0] if "." in f.path.rsplit("/", 1)[-1] else f.path
    return f"cudadoctor ckpt fix {sh(f.path)} --out {sh(base + '.fixed.pt')}{flags}{trust}"


def _import_line(name: str) -> tuple[str | None, str]:
    """(the import, the expression) for a global "module.name"."""
    module, _, attr = name.rpartition(".")
    if module in ("builtins", "__builtin__"):
        return None, attr
    return f"from {module} import {attr}", attr


def _imports(f: CkptFacts, names: list[str]) -> tuple[list[str], list[str]]:
    """(the import lines, the safe_globals entries) for these globals. A class pickled from the saving
    script is `__main__.X`: it is imported from the .py file that defines it, and allow-listed under the
    name the pickle uses, (X, '__main__.X')."""
    head = ["import torch"]
    imports: list[str] = []
    exprs: list[str] = []
    found = f.main_definitions or {}
    for n in names:
        module, _, attr = n.rpartition(".")
        if module == "__main__":
            where = found.get(attr)
            if where:
                folder, name = script(where)
                if "import sys" not in head:
                    head.insert(0, "import sys")
                path_line = f"sys.path.insert(0, {py(folder)})"
                if path_line not in imports:
                    imports.insert(0, path_line)
                imports.append(f"from {name} import {attr}")
            else:
                imports.append(f"from {YOUR_SCRIPT} import {attr}")
            exprs.append(f"({attr}, {n!r})")
            continue
        imp, expr = _import_line(n)
        if imp and imp not in imports:
            imports.append(imp)
        exprs.append(expr)
    return head + imports, exprs


def load_lines(f: CkptFacts, var: str, map_location: str = "'cpu'", before: tuple[str, ...] = ()) -> list[str] | None:
    """`var = torch.load(...)` as this report advises it, imports included; None: never load it."""
    if never_load(f) or f.format in ("hf-index", "dcp"):
        return None  # shards and DCP directories load through their own libraries (CD606, from_pretrained)
    if f.format == "safetensors":
        return ["from safetensors.torch import load_file", f"{var} = load_file({py(f.path)})"]
    load = f"{var} = torch.load({py(f.path)}, map_location={map_location})"
    names = needs_globals(f)
    if not names:
        return ["import torch", *before, load]
    imports, exprs = _imports(f, names)
    return [*imports, *before, f"with torch.serialization.safe_globals([{', '.join(exprs)}]):", "    " + load]


def script(path: str) -> tuple[str, str]:
    """(folder, module name) of a .py file's path, with either separator."""
    cut = max(path.rfind("/"), path.rfind("\\"))
    return path[:cut], path[cut + 1 :].removesuffix(".py")


def _entry_kind(f: CkptFacts) -> str | None:
    key = f.state_dict_key
    return next((c.kind for c in f.contents or [] if c.key == key), None)


def state_expr(f: CkptFacts, var: str) -> str:
    """The model's state dict inside the loaded object `var`: an entry of a dict, or the whole file; a
    pickled nn.Module is not a state dict, its .state_dict() is."""
    key = f.state_dict_key
    expr = f"{var}[{key!r}]" if key else var
    return expr + ".state_dict()" if _entry_kind(f) == "model object" else expr
