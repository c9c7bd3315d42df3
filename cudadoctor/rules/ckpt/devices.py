"""The devices the checkpoint's storages were saved on, against the GPUs torch here can use (CD610–CD613):
torch.load without map_location puts every storage back where it was saved."""

from __future__ import annotations

import re

from cudadoctor.facts.ckpt import CkptFacts
from cudadoctor.model import Finding, Table, msg, msg_n
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.ckpt.entries import DEVICE_INDEX, DEVICES_OK, NO_CUDA_HERE, SAVED_ON_GPU
from cudadoctor.rules.ckpt.loading import PICK_DEVICE, fix_cmd, load_lines, trusting

_CUDA = re.compile(r"^cuda(?::(\d+))?$")


def devices(f: CkptFacts) -> list[Finding]:
    saved_on = f.storage_devices or {}
    cuda = {d: n for d, n in saved_on.items() if _CUDA.match(d)}
    if not cuda:
        return []
    t = f.torch
    table = Table(["saved on", "storages"], [[d, str(n)] for d, n in sorted(saved_on.items())])
    saved = ", ".join(sorted(cuda))
    anywhere = load_lines(f, "state", "device", before=(PICK_DEVICE,))
    if t is None or t.cuda_available is None:
        # unknown: say what was saved and how to load it anywhere, claim nothing about this machine
        return [
            SAVED_ON_GPU.finding(
                title=msg("Saved on {devices}; whether torch here can use it was not checked", devices=saved),
                tables=[table],
                fix=[fix("Load it on any machine", *anywhere)] if anywhere else [],
            )
        ]
    if not t.cuda_available:
        fixes = []
        if anywhere:
            fixes.append(fix("Pick the device once, and load onto it (runs on GPU and CPU machines)", *anywhere))
        cmd = fix_cmd(f, " --to cpu")
        if cmd and trusting(f):
            fixes.append(
                fix("Or write the weights alone to a CPU copy (runs the pickle: only for files you trust)", cmd)
            )
        elif cmd:
            fixes.append(fix("Or write a CPU copy that loads anywhere without map_location", cmd))
        return [
            NO_CUDA_HERE.finding(
                title=msg(
                    "Saved on {devices}, but torch here has no usable CUDA: torch.load needs map_location",
                    devices=saved,
                ),
                tables=[table],
                fix=fixes,
            )
        ]
    count = t.device_count or 0
    over = sorted(
        {int(m.group(1)) for d in cuda if (m := _CUDA.match(d)) and m.group(1) is not None and int(m.group(1)) >= count}
    )
    if over:
        remap = "{" + ", ".join(f"'cuda:{i}': 'cuda:0'" for i in over) + "}"
        onto, only = load_lines(f, "state", "'cuda:0'"), load_lines(f, "state", remap)
        return [
            DEVICE_INDEX.finding(
                title=msg_n(
                    "Saved on {devices}, but only {n} GPU visible here (cuda:0–cuda:{last})",
                    "Saved on {devices}, but only {n} GPUs visible here (cuda:0–cuda:{last})",
                    count,
                    devices=saved,
                    n=count,
                    last=count - 1,
                )
                if count
                else msg("Saved on {devices}, but no GPU is visible here", devices=saved),
                tables=[table],
                fix=[fix("Load onto the device you train on", *onto), fix("Or remap only those indices", *only)]
                if onto and only
                else [],
            )
        ]
    return [
        DEVICES_OK.finding(
            title=msg_n(
                "Saved on {devices}: {n} GPU usable here",
                "Saved on {devices}: {n} GPUs usable here",
                count,
                devices=saved,
                n=count,
            ),
            tables=[table],
        )
    ]
