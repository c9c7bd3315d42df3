"""Checkpoint errors in a paste: CUDA tensors loaded where CUDA is not, a wrapper's key prefix, and the texts
(an LFS pointer, a truncated file, weights_only, shapes, missing and unexpected keys) whose codes are
`cudadoctor ckpt`'s.
"""

from __future__ import annotations

from cudadoctor.facts.paste import PasteHit
from cudadoctor.model import Finding, Fix, msg
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.paste.entries import DESERIALIZE, STATE_DICT_PREFIX


def deserialize(h: PasteHit) -> Finding:
    dev, count = h.detail.get("dev"), h.detail.get("count")
    title = DESERIALIZE.summary
    if dev is not None and count is not None:
        title = msg(
            "A checkpoint saved on cuda:{device} is loaded where torch sees 1 GPU"
            if count == "1"
            else "A checkpoint saved on cuda:{device} is loaded where torch sees {n} GPUs",
            device=dev,
            n=count,
        )
    return DESERIALIZE.finding(
        title=title,
        fix=[
            fix("Load onto the CPU (then move the model)", "torch.load(path, map_location='cpu')"),
            fix("Or onto the first GPU of this machine", "torch.load(path, map_location='cuda:0')"),
        ],
    )


def state_dict(h: PasteHit) -> Finding:
    prefix = h.detail.get("prefix", "module.")
    return STATE_DICT_PREFIX.finding(
        title=msg("The state dict keys differ by the prefix '{prefix}'", prefix=prefix),
        fix=[
            fix(
                msg("Strip '{prefix}' from the checkpoint's keys before loading", prefix=prefix),
                "from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present",
                f"consume_prefix_in_state_dict_if_present(state_dict, '{prefix}')",
                "model.load_state_dict(state_dict)",
            ),
            fix("Or save the unwrapped model next time", "torch.save(model.module.state_dict(), path)"),
        ],
    )


def checkpoint_errors(kinds: dict[str, list[PasteHit]], windows: bool = False) -> list[Finding]:
    """Checkpoint errors whose text names the cause; the codes are `cudadoctor ckpt`'s."""
    from cudadoctor.rules.ckpt import entries as ckpt

    out = []
    if "ckpt-lfs-pointer" in kinds:
        out.append(
            ckpt.LFS_POINTER.finding(
                title=msg(
                    "The checkpoint is a Git LFS pointer, not the weights: {error}",
                    error=kinds["ckpt-lfs-pointer"][0].text,
                ),
                fix=[
                    fix(msg("Fetch the real files with Git LFS"), "git lfs install", "git lfs pull"),
                    fix(msg("See what the file is (a pointer is about 130 bytes of text)"), "head -c 200 FILE"),
                ],
            )
        )
    elif "ckpt-header-too-large" in kinds:
        out.append(
            ckpt.HEADER_TOO_LARGE.finding(
                fix=[
                    fix(msg("See what the file is: a Git LFS pointer or an HTML page is text"), "head -c 200 FILE"),
                    fix(msg("Fetch the real files with Git LFS, or download the file again"), "git lfs pull"),
                ]
            )
        )
    if "ckpt-truncated" in kinds:
        h = kinds["ckpt-truncated"][0]
        out.append(
            ckpt.TRUNCATED.finding(
                title=msg("The checkpoint file is truncated or damaged: {error}", error=h.text),
                fix=[
                    fix(
                        "Download or copy it again, then check it",
                        "certutil -hashfile FILE SHA256" if windows else "sha256sum FILE",
                        "cudadoctor ckpt inspect FILE",
                    )
                ],
            )
        )
    if "ckpt-weights-only" in kinds:
        h = kinds["ckpt-weights-only"][0]
        name = h.detail.get("global")
        out.append(
            ckpt.UNSAFE_GLOBALS.finding(
                title=msg(
                    "torch.load(weights_only=True) refuses {name} in this checkpoint", name=name or msg("a global")
                ),
                fix=[
                    fix(
                        msg("If the file is trusted: allow exactly that global"),
                        "import torch.serialization",
                        f"torch.serialization.add_safe_globals([{name or 'GLOBAL'}])  # import it first",
                    ),
                    fix(msg("Or, for a file you trust, load it the old way"), "torch.load(path, weights_only=False)"),
                ],
            )
        )
    if "ckpt-shape-mismatch" in kinds:
        h = kinds["ckpt-shape-mismatch"][0]
        out.append(
            ckpt.SHAPES.finding(
                title=msg(
                    "{key}: the checkpoint has shape {saved}, the model {model}: a different model configuration",
                    key=h.detail.get("key", "?"),
                    saved=h.detail.get("saved", "?"),
                    model=h.detail.get("model", "?"),
                ),
                fix=[
                    fix(
                        msg("Build the model as the checkpoint was trained (e.g. its number of classes)"),
                        "model = Net(num_classes=N)  # N: the checkpoint's first dimension",
                    ),
                    fix(
                        msg("Or load the rest and replace the layer that differs"),
                        "model.load_state_dict({k: v for k, v in sd.items() if not k.startswith('fc.')}, strict=False)",
                    ),
                ],
            )
        )
    if "state-dict-prefix" not in kinds:  # a wrapper's prefix explains the key lists (CD908, said first)
        out += _key_lists(kinds)
    return out


def _compare_keys() -> Fix:
    return fix(
        msg("Compare the two key lists: a renamed layer, another model or configuration"),
        "sd = torch.load(path, map_location='cpu')",
        "print(sorted(set(model.state_dict()) ^ set(sd)))",
    )


def _key_lists(kinds: dict[str, list[PasteHit]]) -> list[Finding]:
    """load_state_dict's "Missing key(s)" and "Unexpected key(s)" lists (CD640, CD641): what they name."""
    from cudadoctor.rules.ckpt import entries as ckpt

    out = []
    if "ckpt-missing-keys" in kinds:
        h = kinds["ckpt-missing-keys"][0]
        out.append(
            ckpt.MISSING.finding(
                title=msg(
                    "The model has keys the checkpoint lacks ({n}): {keys}",
                    n=h.detail["n"],  # backends/paste/errors._keys always sets both
                    keys=h.detail["keys"],
                ),
                fix=[
                    _compare_keys(),
                    fix(
                        "Only if the missing part is meant to start fresh (a new head): load the rest",
                        "result = model.load_state_dict(sd, strict=False)",
                        "print(result.missing_keys)",
                    ),
                ],
            )
        )
    if "ckpt-unexpected-keys" in kinds:
        h = kinds["ckpt-unexpected-keys"][0]
        out.append(
            ckpt.UNEXPECTED.finding(
                title=msg(
                    "The checkpoint has keys the model does not ({n}): {keys}",
                    n=h.detail["n"],  # backends/paste/errors._keys always sets both
                    keys=h.detail["keys"],
                ),
                fix=[
                    _compare_keys(),
                    fix(
                        "Only if those are meant to be dropped",
                        "result = model.load_state_dict(sd, strict=False)",
                        "print(result.unexpected_keys)",
                    ),
                ],
            )
        )
    return out
