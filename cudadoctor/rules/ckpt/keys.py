"""The state dict's keys: where the model's weights are in the file (CD625), a wrapper's prefix on every key
(CD630, CD631), and, with --model, the keys and shapes against the model's (CD632, CD640–CD644)."""

from __future__ import annotations

from cudadoctor.facts.ckpt import CkptFacts
from cudadoctor.model import Finding, Severity, Table, msg, msg_n
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.ckpt.entries import (
    MISSING,
    MODEL_ERROR,
    MODEL_OK,
    MODEL_WRAPPED,
    PREFIX_COMPILE,
    PREFIX_MODULE,
    SHAPES,
    TRAINING,
    UNEXPECTED,
)
from cudadoctor.rules.ckpt.loading import fix_cmd, load_lines, state_expr, trusting

# entries that only training saves: with one of these, the file is a training checkpoint, not released
# weights beside their config
_TRAINING_KINDS = ("optimizer", "scheduler", "grad scaler")
_TRAINING_KEYS = ("epoch", "step", "global_step", "iteration", "iter", "best_acc", "best_loss")


def contents(f: CkptFacts) -> list[Finding]:
    out = []
    prefixes = f.prefixes or []
    cmp = f.model
    if cmp is not None and cmp.error is None:
        prefixes = cmp.strip  # what actually stands between the keys and the model
    others = [c for c in f.contents or [] if c.key and c.key != f.state_dict_key and c.kind != "dcp entry"]
    if f.state_dict_key and others:
        kinds = ", ".join(f"{c.key} ({c.kind})" for c in others[:6])
        training = any(c.kind in _TRAINING_KINDS or c.key.lower() in _TRAINING_KEYS for c in others)
        title = msg(
            "A training checkpoint: the model's weights are in [{key}], beside {entries}"
            if training
            else "The model's weights are in [{key}], beside {entries}",
            key=repr(f.state_dict_key),
            entries=kinds,
        )
        fixes = []
        load = load_lines(f, "ckpt")
        if load and prefixes:  # the entry keeps the wrapper's prefix (the finding below): a plain model refuses it
            fixes.append(
                fix(
                    msg("Load the model's entry without its {prefix} prefix", prefix=repr("".join(prefixes))),
                    *load,
                    f"state = {state_expr(f, 'ckpt')}",
                    "from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present",
                    *(f"consume_prefix_in_state_dict_if_present(state, {p!r})" for p in prefixes),
                    "model.load_state_dict(state)",
                )
            )
        elif load:
            fixes.append(fix("Load the model's entry", *load, f"model.load_state_dict({state_expr(f, 'ckpt')})"))
        cmd = fix_cmd(f, " --state-dict-only")
        if cmd and trusting(f):
            fixes.append(fix("Or write the weights alone (runs the pickle: only for files you trust)", cmd))
        elif cmd:
            fixes.append(fix("Or write the weights alone", cmd))
        out.append(TRAINING.finding(title=title, fix=fixes))
    if prefixes:
        out.append(_prefix_finding(f, prefixes, with_model=cmp is not None and cmp.error is None))
    return out


def _drop_mismatched(cmp: object) -> list[str]:
    """strict=False does not skip a tensor of another shape (load_state_dict still raises "size mismatch"):
    where the comparison found some, the snippet drops them first."""
    if not getattr(cmp, "mismatched", None):
        return []
    return [
        "shapes = {k: v.shape for k, v in model.state_dict().items()}",
        "same = {k: v for k, v in state.items() if k not in shapes or v.shape == shapes[k]}",
    ]


def _loaded(cmp: object) -> str:
    """What the strict=False snippet loads: the state, or its tensors of the model's shapes."""
    return "same" if getattr(cmp, "mismatched", None) else "state"


def _prefix_finding(f: CkptFacts, prefixes: list[str], with_model: bool) -> Finding:
    compiled = "_orig_mod." in prefixes
    joined = "".join(prefixes)
    title = msg(
        "Every state-dict key starts with {prefix} (torch.compile)"
        if compiled
        else "Every state-dict key starts with {prefix} (DataParallel/DDP)",
        prefix=repr(joined),
    )
    if with_model:
        title = msg("{title}: load_state_dict fails with Missing/Unexpected key(s)", title=title)
    first = (f.state_dict_keys or [""])[0]
    fixes = []
    state = state_expr(f, "ckpt")
    load = load_lines(f, "ckpt") if state != "ckpt" else load_lines(f, "state")
    if load:
        fixes.append(
            fix(
                "Strip the prefix while loading (never k[7:]: it corrupts keys without the prefix)",
                *load,
                *([f"state = {state}"] if state != "ckpt" else []),
                "from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present",
                *(f"consume_prefix_in_state_dict_if_present(state, {p!r})" for p in prefixes),
                "model.load_state_dict(state)",
            )
        )
    cmd = fix_cmd(f, " --strip-prefix")
    if cmd and trusting(f):
        fixes.append(fix("Or write the weights alone, stripped (runs the pickle: only for files you trust)", cmd))
    elif cmd:
        fixes.append(fix("Or write a stripped copy once", cmd))
    return (PREFIX_COMPILE if compiled else PREFIX_MODULE).finding(
        title=title,
        severity=Severity.ERROR if with_model else None,
        tables=[Table(["first key", "after stripping"], [[first, first[len(joined) :]]])] if first else [],
        fix=fixes,
    )


def against_model(f: CkptFacts) -> list[Finding]:
    cmp = f.model
    if cmp is None:
        return []
    if cmp.error:
        return [
            MODEL_ERROR.finding(
                title=msg("--model {factory}: {error}", factory=cmp.factory, error=cmp.error),
                fix=[
                    fix(
                        "Check that it imports and builds in the target interpreter",
                        f"python -c 'import {cmp.factory.partition(':')[0]}'",
                    )
                ],
            )
        ]
    out = []
    if cmp.add:
        out.append(
            MODEL_WRAPPED.finding(
                title=msg("The model's keys start with {prefix}, the checkpoint's do not", prefix=repr(cmp.add)),
                fix=[
                    fix(
                        "Load into the wrapped model's inner module",
                        f"model.{cmp.add.rstrip('.')}.load_state_dict(state)",
                    ),
                    fix("Or load before wrapping (DataParallel/DDP/torch.compile)", "model.load_state_dict(state)"),
                ],
            )
        )
    if cmp.missing:
        n = len(cmp.missing)
        out.append(
            MISSING.finding(
                title=msg_n(
                    "{n} key of the model missing from the checkpoint",
                    "{n} keys of the model missing from the checkpoint",
                    n,
                    n=n,
                ),
                tables=[Table(["missing key"], [[k] for k in cmp.missing[:50]])],
                fix=[
                    fix(
                        "Only if the missing part is meant to start fresh (a new head): load the rest",
                        *_drop_mismatched(cmp),
                        f"result = model.load_state_dict({_loaded(cmp)}, strict=False)",
                        "print(result.missing_keys)",
                    )
                ],
            )
        )
    if cmp.unexpected:
        n = len(cmp.unexpected)
        out.append(
            UNEXPECTED.finding(
                title=msg_n(
                    "{n} key in the checkpoint that the model does not have",
                    "{n} keys in the checkpoint that the model does not have",
                    n,
                    n=n,
                ),
                tables=[Table(["unexpected key"], [[k] for k in cmp.unexpected[:50]])],
                fix=[
                    fix(
                        "Only if those are meant to be dropped",
                        *_drop_mismatched(cmp),
                        f"result = model.load_state_dict({_loaded(cmp)}, strict=False)",
                        "print(result.unexpected_keys)",
                    )
                ],
            )
        )
    if cmp.mismatched:
        n = len(cmp.mismatched)
        out.append(
            SHAPES.finding(
                title=msg_n(
                    "{n} tensor with another shape than the model's",
                    "{n} tensors with another shape than the model's",
                    n,
                    n=n,
                ),
                tables=[Table(["key", "checkpoint", "model"], [list(r) for r in cmp.mismatched[:50]])],
                fix=[fix("Build the model with the configuration the checkpoint was trained with (its shapes above)")],
            )
        )
    if not (out or cmp.strip):
        n = cmp.matched or 0
        out.append(
            MODEL_OK.finding(
                title=msg_n(
                    "Keys and shapes match {factory}() ({n} tensor)",
                    "Keys and shapes match {factory}() ({n} tensors)",
                    n,
                    factory=cmp.factory,
                    n=n,
                )
            )
        )
    return out
