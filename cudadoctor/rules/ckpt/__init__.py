"""Checkpoints (`cudadoctor ckpt`): what the file is, whether torch.load will read it here, and what
to type when it will not. Facts: cudadoctor/facts/ckpt.py; sources: docs/ckpt.md and cuda-facts §6, §11
(torch.serialization, torch.nn.modules.utils.consume_prefix_in_state_dict_if_present, safetensors).

- `entries`: the codes (CD600–CD647); `formats`: what the file is, when torch.load cannot read it as it is;
- `audit`: what it holds, and whether weights_only=True reads it; `devices`: where its storages go;
- `keys`: the state dict's keys, prefixes and the --model comparison; `written`: what `ckpt fix` wrote;
- `loading`: how every finding says to load the file; `text`: sizes, counts and lists in the titles.
"""

from __future__ import annotations

from cudadoctor.facts.ckpt import CkptFacts
from cudadoctor.model import Finding, msg
from cudadoctor.rules.ckpt.audit import audit, summary
from cudadoctor.rules.ckpt.devices import devices
from cudadoctor.rules.ckpt.entries import CHILD_FAILED
from cudadoctor.rules.ckpt.formats import formats
from cudadoctor.rules.ckpt.keys import against_model, contents
from cudadoctor.rules.ckpt.written import written


def evaluate(f: CkptFacts) -> list[Finding]:
    out: list[Finding] = []
    out += formats(f)
    if f.format in ("torch-zip", "torch-legacy", "safetensors", "hf-index", "dcp"):
        out += summary(f)
        out += audit(f)
        out += devices(f)
        out += contents(f)
        out += against_model(f)
    out += _child(f)
    out += written(f)
    return out


def _child(f: CkptFacts) -> list[Finding]:
    """The target interpreter's torch could not be asked (CD647): what needs it was not checked."""
    t = f.torch
    if t is None or f.format in ("lfs-pointer", "html", "corrupt", "empty", "text", "unknown"):
        return []
    if t.import_error:
        why = msg(
            "torch could not be imported in {python}: {error}"
            if t.python
            else "torch could not be imported in the target interpreter: {error}",
            python=t.python,
            error=t.import_error,
        )
    elif t.timed_out:
        why = msg("the checkpoint child did not finish in time")
    elif t.child_error:
        why = t.child_error
    else:
        return []
    return [CHILD_FAILED.finding(title=msg("Not asked of torch: {why}", why=why))]


__all__ = ["evaluate"]
