"""What the checkpoint holds (CD609), and whether torch.load(weights_only=True) reads it: the globals its
pickle names, read statically (CD620–CD622)."""

from __future__ import annotations

from cudadoctor.facts.ckpt import CkptFacts
from cudadoctor.knowledge.units import format_size
from cudadoctor.model import Finding, Fix, Severity, Table, msg, msg_n
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.ckpt.entries import DANGEROUS, SUMMARY, UNSAFE_GLOBALS, WEIGHTS_ONLY_OK
from cudadoctor.rules.ckpt.loading import fix_cmd, load_lines, script, unlocated, unsafe
from cudadoctor.rules.ckpt.text import comma_list, sh, size, tensors


def _format_name(f: CkptFacts) -> str:
    n = len(f.shards or [])
    names = {
        "torch-zip": msg("torch zip"),
        "torch-legacy": msg("legacy torch pickle"),
        "safetensors": "safetensors",
        "hf-index": msg_n("sharded ({n} shard)", "sharded ({n} shards)", n, n=n),
        "dcp": msg("DCP directory"),
        "pickle": msg("pickle"),
    }
    return names.get(f.format or "", f.format or "?")


def summary(f: CkptFacts) -> list[Finding]:
    parts = [_format_name(f), size(f.size)]
    if f.tensor_count is not None:
        parts.append(
            msg("{tensors} ({size})", tensors=tensors(f.tensor_count), size=format_size(f.tensor_bytes))
            if f.tensor_bytes is not None
            else tensors(f.tensor_count)
        )
        if f.storage_count is not None and 0 < f.storage_count < f.tensor_count and f.format != "safetensors":
            parts.append(msg("{n} sharing storage (tied weights or views)", n=f.tensor_count - f.storage_count))
    rows = [[k, str(v)] for k, v in sorted((f.dtypes or {}).items(), key=lambda kv: -kv[1])]
    tables = [Table(["dtype", "tensors"], rows)] if rows else []
    if f.contents and not (len(f.contents) == 1 and f.contents[0].key == ""):
        tables.append(
            Table(["entry", "holds"], [[c.key, c.kind + (f": {c.detail}" if c.detail else "")] for c in f.contents])
        )
    return [SUMMARY.finding(title=msg("Checkpoint: {what}", what=comma_list(parts)), tables=tables)]


def audit(f: CkptFacts) -> list[Finding]:
    if f.format in ("dcp", "safetensors"):
        return []  # DCP: CD606 says how to read it; safetensors holds no pickle at all
    if f.format == "hf-index" and all(s.endswith(".safetensors") for s in f.shards or []):
        return []
    t = f.torch
    refused = unsafe(f)
    if refused is None:
        return []
    dangerous = f.dangerous_globals or []
    if t is not None and t.weights_only_ok is True and not dangerous:
        return [WEIGHTS_ONLY_OK.finding()]  # torch's own restricted load succeeded: that is the answer
    if dangerous:
        return [
            DANGEROUS.finding(
                title=msg("The pickle calls {names}: it runs code when loaded", names=", ".join(dangerous[:3])),
                tables=[Table(["global"], [[g] for g in dangerous])],
                fix=[fix("Do not load it; get the weights from a source you trust", f"rm {sh(f.path)}")],
            )
        ]
    if not refused:
        if t is not None and t.weights_only_ok is False:
            return [
                UNSAFE_GLOBALS.finding(
                    title=msg("torch.load(weights_only=True) fails on this checkpoint"),
                    why=msg(
                        "{page} torch says: {error}", page=msg(UNSAFE_GLOBALS.explanation), error=t.weights_only_error
                    ),
                )
            ]
        return [WEIGHTS_ONLY_OK.finding()]
    default_on = t.weights_only_default if t is not None else None
    severity = Severity.ERROR if default_on in (True, None) else Severity.WARNING
    n = len(refused)
    title = msg_n(
        "torch.load(weights_only=True) will refuse this checkpoint: {n} global not allow-listed",
        "torch.load(weights_only=True) will refuse this checkpoint: {n} globals not allow-listed",
        n,
        n=n,
    )
    if default_on is False and t is not None:
        title = msg(
            "{title} (torch {version} still defaults to weights_only=False; 2.6+ will refuse)",
            title=title,
            version=t.version,
        )
    return [
        UNSAFE_GLOBALS.finding(
            title=title,
            severity=severity,
            tables=[Table(["global", "note"], [[g, _note(f, g)] for g in refused])],
            fix=_allow_fixes(f),
        )
    ]


def _allow_fixes(f: CkptFacts) -> list[Fix]:
    fixes = []
    if any(c.kind == "model object" for c in f.contents or []):
        fixes.append(
            fix(
                "The whole model object was pickled (torch.save(model)); in the training script, save its "
                "state dict instead, and load that with model.load_state_dict",
                "import torch",
                "torch.save(model.state_dict(), 'weights.pt')",
            )
        )
    load = load_lines(f, "ckpt") or []
    if load and unlocated(f):
        fixes.append(
            fix("You trust the file: allow exactly these globals (YOUR_SCRIPT: the script defining them)", *load)
        )
    elif load:  # no loading lines for this format (.bin shards of an index): no fix that shows nothing
        fixes.append(fix("You trust the file: allow exactly these globals", *load))
    cmd = fix_cmd(f, " --state-dict-only")
    if cmd:
        fixes.append(fix("Or write a copy with tensors only, once (runs the pickle: only for files you trust)", cmd))
    return fixes


def _note(f: CkptFacts, name: str) -> str:
    """A short note on a global (the table fits 80 columns): where a class of the saving script is."""
    if not name.startswith("__main__."):
        return ""
    where = (f.main_definitions or {}).get(name[9:])
    several = (f.main_ambiguous or {}).get(name[9:])
    if several:  # which one saved the file is unknown: named, never guessed
        return "defined in " + " and ".join(f"{script(p)[1]}.py" for p in several[:3])
    return f"defined in {script(where)[1]}.py" if where else "defined in no .py file here"
