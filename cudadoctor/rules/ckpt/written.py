"""What `cudadoctor ckpt fix` wrote: the fixed copy, verified by loading it back (CD645), or why it could not
be written or did not verify (CD646)."""

from __future__ import annotations

from cudadoctor.facts.ckpt import CkptFacts
from cudadoctor.model import Finding, Table, msg, msg_n
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.ckpt.entries import FIX_FAILED, FIX_WRITTEN
from cudadoctor.rules.ckpt.text import py, semicolon_list, size, tensors


def written(f: CkptFacts) -> list[Finding]:
    r = f.fix
    if r is None:
        return []
    if not r.ok or r.verified is False:
        return [
            FIX_FAILED.finding(
                title=msg("Could not write {path}: {error}", path=r.out, error=r.error)
                if not r.ok
                else msg("{path} did not verify: {error}", path=r.out, error=r.verify_error),
            )
        ]
    did: list[str] = []
    if r.mapped_from:
        did.append(msg("storages from {devices} mapped to cpu", devices=", ".join(r.mapped_from)))
    if r.stripped:
        did.append(msg("prefix {prefix} stripped", prefix=repr("".join(r.stripped))))
    if r.state_dict_only:
        did.append(msg("state dict extracted"))
    if r.copied_shared:
        n = len(r.copied_shared)
        did.append(msg_n("{n} shared tensor written as copies", "{n} shared tensors written as copies", n, n=n))
    title = msg(
        "Wrote {path} ({format}, {tensors}, {size})",
        path=r.out,
        format=r.format,
        tensors=tensors(r.tensors or 0),
        size=size(r.bytes_written),
    )
    if did:
        title = msg("{title}: {done}", title=title, done=semicolon_list(did))
    if r.verified:
        title = msg("{title} — verified", title=title)
    load = (
        ["import torch", f"state = torch.load({py(r.out)})"]
        if r.format == "torch"
        else ["from safetensors.torch import load_file", f"state = load_file({py(r.out)})"]
    )
    return [
        FIX_WRITTEN.finding(
            title=title,
            tables=[Table(["shared tensor"], [[s] for s in r.copied_shared])] if r.copied_shared else [],
            fix=[fix("Load it", *load)],
        )
    ]
