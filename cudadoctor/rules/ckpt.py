"""Checkpoints (`cudadoctor ckpt`): what the file is, whether torch.load will read it here, and what
to type when it will not. Facts: cudadoctor/facts/ckpt.py; sources: docs/ckpt.md and cuda-facts §6, §11
(torch.serialization, torch.nn.modules.utils.consume_prefix_in_state_dict_if_present, safetensors)."""

from __future__ import annotations

import json
import re
import shlex

from cudadoctor.facts.ckpt import CkptFacts
from cudadoctor.knowledge.units import format_size
from cudadoctor.model import Finding, Severity, Table, plural
from cudadoctor.rules.catalogue import entry, fix

S = "Checkpoint"

LFS_POINTER = entry(
    "CD600",
    "ckpt-lfs-pointer",
    Severity.ERROR,
    S,
    "The file is a Git LFS pointer, not the checkpoint",
    """The repository was cloned without Git LFS (or with GIT_LFS_SKIP_SMUDGE=1), so the file holds the
    three-line pointer Git LFS stores in place of the real file. torch.load fails with "invalid load key,
    'v'" and safetensors with "HeaderTooLarge" (the text "version " read as a header length).""",
)
HTML_PAGE = entry(
    "CD601",
    "ckpt-html-page",
    Severity.ERROR,
    S,
    "The file is an HTML page, not a checkpoint",
    """The download saved a web page (a login page, a "blob" view, a quota or redirect page) under the
    checkpoint's name. torch.load fails with "invalid load key, '<'". Download the raw file instead:
    Hugging Face URLs use /resolve/ (not /blob/), GitHub uses raw.githubusercontent.com or ?raw=1, and
    Google Drive needs a tool that follows its confirmation page (gdown).""",
)
TRUNCATED = entry(
    "CD602",
    "ckpt-truncated",
    Severity.ERROR,
    S,
    "The checkpoint is truncated or damaged",
    """The file ends before its format says it should (an interrupted download or copy, a full disk
    while saving, a job killed during torch.save). torch.load fails with "PytorchStreamReader failed
    reading zip archive: failed finding central directory" or "Ran out of input". No loader can recover
    the missing bytes: download or copy it again and compare its size or checksum.""",
)
HEADER_TOO_LARGE = entry(
    "CD603",
    "ckpt-header-too-large",
    Severity.ERROR,
    S,
    "safetensors: HeaderTooLarge — the file is not a complete safetensors file",
    """A safetensors file starts with an 8-byte header length. A length over 100 MB (the library's
    limit) means the first bytes are not a safetensors header at all: almost always a Git LFS pointer or
    an incomplete download (transformers#27923).""",
)
NOT_A_CHECKPOINT = entry(
    "CD604",
    "ckpt-not-a-checkpoint",
    Severity.ERROR,
    S,
    "The file is not a checkpoint torch.load can read",
    """Its first bytes match none of the formats torch.load (zip or legacy pickle), torch.jit.load or
    safetensors read: it is empty, text, another archive, or a pickle not written by torch.save.""",
)
TORCHSCRIPT = entry(
    "CD605",
    "ckpt-torchscript",
    Severity.ERROR,
    S,
    "A TorchScript archive: load it with torch.jit.load, not torch.load",
    """torch.jit.save writes a zip with code and constants.pkl. Since torch 2.6 torch.load refuses it
    ("Cannot use weights_only=True with TorchScript archives passed to torch.load"); before, it
    dispatched to torch.jit.load with a warning. torch.jit.load reads it and takes map_location too.""",
)
DCP = entry(
    "CD606",
    "ckpt-dcp",
    Severity.INFO,
    S,
    "A torch.distributed.checkpoint (DCP) directory",
    """DCP writes one directory (.metadata plus *.distcp files) that torch.load cannot read. Load it with
    torch.distributed.checkpoint.load into a model's state dict, or convert it once to a single file with
    torch.distributed.checkpoint.format_utils.dcp_to_torch_save. Its .metadata is a pickle with DCP's
    own classes: read it only from a source you trust.""",
)
SHARDS = entry(
    "CD607",
    "ckpt-shards-missing",
    Severity.ERROR,
    S,
    "A sharded checkpoint with missing or broken shards",
    """The *.index.json maps every tensor to a shard file; from_pretrained and friends fail when a shard is
    absent, is a Git LFS pointer, or was cut short.""",
)
LEGACY = entry(
    "CD608",
    "ckpt-legacy-format",
    Severity.INFO,
    S,
    "Saved in the legacy (pre-1.6) torch format",
    """torch.load still reads it, but not with mmap=True, so loading it needs all of its bytes in
    memory at once. `cudadoctor ckpt fix` rewrites it in the zip format.""",
)
SUMMARY = entry(
    "CD609",
    "ckpt-summary",
    Severity.OK,
    S,
    "What the checkpoint holds",
    """Format, size, tensors, dtypes and what else the file carries, read without running any code from
    it.""",
)
NO_CUDA_HERE = entry(
    "CD610",
    "ckpt-cuda-not-available",
    Severity.ERROR,
    S,
    "Saved on a GPU, but torch here has no usable CUDA: load with map_location",
    """torch.save records the device of every storage, and torch.load puts each back there. Without a
    usable GPU, torch.load fails with "Attempting to deserialize object on a CUDA device but
    torch.cuda.is_available() is False". map_location moves the storages while loading; picking the device
    once (cuda when available, else cpu) makes the same code run on both kinds of machine.""",
)
DEVICE_INDEX = entry(
    "CD611",
    "ckpt-device-index",
    Severity.ERROR,
    S,
    "Saved on a GPU index this machine does not have",
    """torch.load restores each storage onto the device index it was saved from; with fewer GPUs visible it
    fails with "Attempting to deserialize object on CUDA device N but torch.cuda.device_count() is M".
    map_location remaps them.""",
)
DEVICES_OK = entry(
    "CD612",
    "ckpt-devices-usable",
    Severity.OK,
    S,
    "The devices the storages were saved on exist here",
    """torch.load without map_location puts every storage back on the device it was saved from; those
    devices are usable here.""",
)
UNSAFE_GLOBALS = entry(
    "CD620",
    "ckpt-unsafe-globals",
    Severity.ERROR,
    S,
    "torch.load(weights_only=True) will refuse this checkpoint",
    """Since torch 2.6, torch.load defaults to weights_only=True: a restricted unpickler that builds only
    tensors, containers and allow-listed types. This pickle names classes or functions outside that list,
    so loading fails with "Weights only load failed ... Unsupported global". Allow-list exactly those names
    with torch.serialization.safe_globals when you trust the file; weights_only=False runs whatever the
    pickle says. The audit reads the pickle's opcodes statically: nothing in it was run.""",
)
DANGEROUS = entry(
    "CD621",
    "ckpt-dangerous-globals",
    Severity.ERROR,
    S,
    "The pickle calls functions that run code or touch the system",
    """Loading it with weights_only=False (or allow-listing these names) executes them. A checkpoint has
    no reason to call these: treat the file as hostile, do not load it, and get the weights from a source
    you trust (prefer safetensors, which holds no code).""",
)
WEIGHTS_ONLY_OK = entry(
    "CD622",
    "ckpt-weights-only-ok",
    Severity.OK,
    S,
    "weights_only=True can read it: every global is on torch's allow-list",
    """Every global the pickle names is on torch's weights_only allow-list, so torch.load needs no
    safe_globals and no weights_only=False (where the target's torch was asked, its test load onto the
    meta device agreed).""",
)
SAVED_ON_GPU = entry(
    "CD613",
    "ckpt-saved-on-gpu",
    Severity.INFO,
    S,
    "Saved on a GPU: torch.load without map_location needs that device",
    """torch.load puts every storage back on the device it was saved from. Whether those devices exist
    where it will be loaded was not checked here (the target's torch could not be asked); map_location
    makes the load independent of them.""",
)
TRAINING = entry(
    "CD625",
    "ckpt-training-checkpoint",
    Severity.INFO,
    S,
    "The model's weights are one entry among others",
    """Training loops save a dict with the model's state dict beside the optimizer, scheduler, epoch and
    more; released weights often come in a dict beside their config. model.load_state_dict needs that one
    entry, not the whole dict; `ckpt fix --state-dict-only` writes it alone.""",
)
PREFIX_MODULE = entry(
    "CD630",
    "ckpt-prefix-module",
    Severity.WARNING,
    S,
    "Every key starts with 'module.' (saved from DataParallel/DistributedDataParallel)",
    """nn.DataParallel and DistributedDataParallel keep the model as .module, so a state dict saved from
    the wrapper prefixes every key with 'module.'. Loading it into the plain model fails with "Missing
    key(s) ... Unexpected key(s)". torch.nn.modules.utils.consume_prefix_in_state_dict_if_present strips
    it, metadata included; slicing keys with k[7:] corrupts any key that does not carry the prefix.""",
)
PREFIX_COMPILE = entry(
    "CD631",
    "ckpt-prefix-orig-mod",
    Severity.WARNING,
    S,
    "Every key starts with '_orig_mod.' (saved from a torch.compile'd model)",
    """torch.compile returns an OptimizedModule that holds the model as _orig_mod, so its state dict
    prefixes every key with '_orig_mod.' (with DDP too: '_orig_mod.module.'). Save model._orig_mod's state
    dict, or strip the prefix with consume_prefix_in_state_dict_if_present.""",
)
MODEL_WRAPPED = entry(
    "CD632",
    "ckpt-model-wrapped",
    Severity.ERROR,
    S,
    "The model is wrapped, the checkpoint is not",
    """The model's keys carry a wrapper's prefix ('module.' from DataParallel/DDP, '_orig_mod.' from
    torch.compile) that the checkpoint's lack. Load into the inner model (model.module or model._orig_mod)
    or before wrapping.""",
)
MISSING = entry(
    "CD640",
    "ckpt-missing-keys",
    Severity.ERROR,
    S,
    "The model has parameters the checkpoint lacks",
    """load_state_dict(strict=True) raises "Missing key(s) in state_dict". The checkpoint is for another
    architecture or configuration, or a part of the model was added after it was saved.""",
)
UNEXPECTED = entry(
    "CD641",
    "ckpt-unexpected-keys",
    Severity.ERROR,
    S,
    "The checkpoint has keys the model does not",
    """load_state_dict(strict=True) raises "Unexpected key(s) in state_dict". strict=False ignores them
    (and missing keys too: check what it returns).""",
)
SHAPES = entry(
    "CD642",
    "ckpt-shape-mismatch",
    Severity.ERROR,
    S,
    "Tensors whose shapes differ between the checkpoint and the model",
    """load_state_dict raises "size mismatch for KEY" even with strict=False: the model was built with
    another configuration (classes, vocabulary, hidden size) than the one that was saved.""",
)
MODEL_OK = entry(
    "CD643",
    "ckpt-model-matches",
    Severity.OK,
    S,
    "Keys and shapes match the model",
    """Every key the model expects is in the checkpoint with the same shape, and nothing else is.""",
)
MODEL_ERROR = entry(
    "CD644",
    "ckpt-model-error",
    Severity.ERROR,
    S,
    "The --model factory could not build the model",
    """--model MODULE:FACTORY is imported in the target interpreter (with the current directory on
    sys.path) and called without arguments, under torch.device("meta") first so no memory is spent on
    weights.""",
)
FIX_WRITTEN = entry(
    "CD645",
    "ckpt-fix-written",
    Severity.OK,
    S,
    "Fixed copy written and verified",
    """The copy was read back the way a user loads it (weights_only=True, no map_location) and its tensors
    compared byte for byte with the original's.""",
)
FIX_FAILED = entry(
    "CD646",
    "ckpt-fix-failed",
    Severity.ERROR,
    S,
    "The fixed copy could not be written or did not verify",
    """Nothing was left at the output path when writing failed; when the copy did not verify, it is left
    there for inspection and should not be used.""",
)
CHILD_FAILED = entry(
    "CD647",
    "ckpt-torch-unavailable",
    Severity.INFO,
    S,
    "The target interpreter's torch could not be asked",
    """torch is not installed in the target interpreter, or its child process failed. Everything read
    from the file's bytes is still reported; what needs torch (the devices usable here, a test load) is
    not.""",
)

_PICK_DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")'
# what a script that loads a checkpoint imports a class pickled from __main__ from, when no .py file
# here defines it (the doctor cannot know the saving script's name)
YOUR_SCRIPT = "YOUR_SCRIPT"


def _py(path: str) -> str:
    return repr(path)


def _sh(path: str) -> str:
    return shlex.quote(path)


def _size(n: int | None) -> str:
    return format_size(n) if n is not None else "unknown size"


def evaluate(f: CkptFacts) -> list[Finding]:
    out: list[Finding] = []
    out += _format(f)
    if f.format in ("torch-zip", "torch-legacy", "safetensors", "hf-index", "dcp"):
        out += _summary(f)
        out += _audit(f)
        out += _devices(f)
        out += _contents(f)
        out += _model(f)
    out += _child(f)
    out += _fix(f)
    return out


# ---------------------------------------------------------------------------------------------- format


def _format(f: CkptFacts) -> list[Finding]:
    p = f.path
    name = p.rsplit("/", 1)[-1]
    if f.format == "lfs-pointer":
        size = f" of {_size(f.lfs_size)}" if f.lfs_size else ""
        return [
            LFS_POINTER.finding(
                title=f"{name} is a Git LFS pointer ({_size(f.size)}), not the checkpoint{size}",
                fix=[
                    fix(
                        "Fetch the real file in the clone it came from",
                        "git lfs install",
                        f"git lfs pull --include {_sh(name)}",
                    ),
                    fix(
                        "From Hugging Face, download the file itself (the library resolves LFS)",
                        "hf download REPO_ID " + _sh(name) + " --local-dir .",
                    ),
                ],
                # the whole oid (sha256sum of the real file): a cut one identifies nothing; the real size
                # is in the title, so the table is that one column and fits 80 columns whole
                tables=[Table(["oid sha256"], [[f.lfs_oid]])] if f.lfs_oid else [],
            )
        ]
    if f.format == "html":
        return [
            HTML_PAGE.finding(
                title=f"{name} is an HTML page"
                + (f" ({f.text_title!r})" if f.text_title else "")
                + ", not a checkpoint",
                fix=[
                    fix(
                        "Download the raw file (Hugging Face: /resolve/, not /blob/)",
                        "curl -L -o " + _sh(name) + " https://huggingface.co/REPO_ID/resolve/main/" + _sh(name),
                    ),
                    fix("GitHub: the raw URL", "curl -L -o " + _sh(name) + " https://raw.githubusercontent.com/…"),
                ],
            )
        ]
    if f.format == "corrupt" and f.header_too_large:
        return [
            HEADER_TOO_LARGE.finding(
                why=HEADER_TOO_LARGE.explanation + f" Here: {f.detail}.",
                fix=[
                    fix("Download it again and compare the size", f"ls -l {_sh(p)}"),
                    fix(
                        "If it came from a Git LFS repository", "git lfs install", f"git lfs pull --include {_sh(name)}"
                    ),
                ],
            )
        ]
    if f.format == "corrupt":
        return [
            TRUNCATED.finding(
                title=f"{name} is truncated or damaged ({f.expected_format or 'checkpoint'}, {_size(f.size)})",
                why=TRUNCATED.explanation + (f" Here: {f.detail}." if f.detail else ""),
                fix=[
                    fix(
                        "Download or copy it again, then check it",
                        f"sha256sum {_sh(p)}",
                        f"cudadoctor ckpt inspect {_sh(p)}",
                    )
                ],
            )
        ]
    if f.format in ("empty", "text", "unknown"):
        what = {
            "empty": "an empty file",
            "text": "a text file" + (f" starting {f.text_head!r}" if f.text_head else ""),
            "unknown": f.detail or "in no format torch reads",
        }[f.format]
        fixes = []
        if f.detail and f.detail.startswith("a gzip"):
            fixes = [
                fix("Unpack it (a .tar.gz, or a plain gzip), then inspect what comes out", f"tar -xzf {_sh(p)}"),
                fix("A plain gzip file", f"gzip -dc {_sh(p)} > {_sh(p + '.unpacked')}"),
            ]
        elif f.detail and f.detail.startswith("a zip"):
            fixes = [fix("See what the archive holds", f"unzip -l {_sh(p)}")]
        return [NOT_A_CHECKPOINT.finding(title=f"{name} is {what}, not a checkpoint", fix=fixes)]
    if f.format == "pickle":
        return [
            NOT_A_CHECKPOINT.finding(
                title=f"{name} is a plain pickle, not written by torch.save",
                why=NOT_A_CHECKPOINT.explanation
                + ' torch.load fails with "Invalid magic number; corrupt file?"; read it with the tool that wrote it.',
            )
        ]
    if f.format == "torchscript":
        return [
            TORCHSCRIPT.finding(
                fix=[fix("Load it as TorchScript", f"model = torch.jit.load({_py(p)}, map_location='cpu')")]
            )
        ]
    if f.format == "dcp":
        return [
            DCP.finding(
                title=f"A DCP checkpoint directory ({plural(len(f.shards or []), 'shard file')}, {_size(f.size)})",
                fix=[
                    fix(
                        "Convert it to one torch.save file (only if you trust its source)",
                        "python -c "
                        + _sh(
                            "from torch.distributed.checkpoint.format_utils import dcp_to_torch_save; "
                            f"dcp_to_torch_save({json.dumps(p)}, {json.dumps(p.rstrip('/') + '.pt')})"
                        ),
                    )
                ],
            )
        ]
    if f.format == "hf-index":
        bad = [[s, "missing"] for s in f.missing_shards or []] + [list(b.split(": ", 1)) for b in f.bad_shards or []]
        if bad:
            return [
                SHARDS.finding(
                    title=f"{plural(len(bad), 'shard')} of {len(f.shards or [])} missing or broken",
                    tables=[Table(["shard", "problem"], bad)],
                    fix=[
                        fix(
                            "Fetch the shards (Git LFS clone)",
                            "git lfs install",
                            "git lfs pull",
                        ),
                        fix("Or download the repository's files", "hf download REPO_ID --local-dir ."),
                    ],
                )
            ]
    if f.format == "torch-legacy":
        cmd = _fix_cmd(f, "")
        if cmd is None:
            return [LEGACY.finding()]
        if _trusting(f):
            return [
                LEGACY.finding(
                    fix=[
                        fix(
                            "Write the weights alone in the zip format (runs the pickle: only for files you trust)", cmd
                        )
                    ]
                )
            ]
        return [LEGACY.finding(fix=[fix("Rewrite it in the zip format", cmd)])]
    return []


# ------------------------------------------------------------------------------ loading, one way for all
#
# Every finding of one report that says how to load the file, or to run `ckpt fix` on it, says it the
# same way: with the safe_globals the audit found (the default weights_only=True refuses the file
# otherwise), with --trust where `ckpt fix` needs it, and not at all where CD621 says never to load it.


def _unsafe(f: CkptFacts) -> list[str] | None:
    """The globals weights_only=True refuses; the target torch's own list (its version's allow-list)
    wins over the doctor's table. None: unknown."""
    t = f.torch
    if t is not None and t.unsafe_globals is not None:
        return sorted(set(t.unsafe_globals) | set(f.dangerous_globals or []))
    return f.unsafe_globals


def _needs_globals(f: CkptFacts) -> list[str]:
    """What a torch.load of this file must allow-list ([]: a plain torch.load reads it)."""
    if f.format in ("dcp", "safetensors") or (f.torch is not None and f.torch.weights_only_ok is True):
        return []
    return _unsafe(f) or []


def _never_load(f: CkptFacts) -> bool:
    """CD621's file (it runs code), or one torch's restricted load refuses for no global it names."""
    t = f.torch
    refused = t is not None and t.weights_only_ok is False and not _needs_globals(f)
    return bool(f.dangerous_globals) or refused


def _unlocated(f: CkptFacts) -> list[str]:
    """Classes pickled from the saving script (__main__.X) that no .py file here defines."""
    found = f.main_definitions or {}
    return [g.partition(".")[2] for g in _needs_globals(f) if g.startswith("__main__.") and g[9:] not in found]


def _trusting(f: CkptFacts) -> bool:
    """`ckpt fix` refuses this file without --trust."""
    return bool(f.unsafe_globals or _needs_globals(f))


def _fix_cmd(f: CkptFacts, flags: str) -> str | None:
    """The `ckpt fix` line, with --trust where it refuses the file without it; None where it cannot
    succeed: a file never to load, or a class of the saving script nowhere to be found. A copy of a file
    that needs --trust is the weights alone (--state-dict-only): with the objects weights_only=True
    refuses, the copy would not load as a user loads it, and `fix` says it did not verify."""
    if _never_load(f) or _unlocated(f):
        return None
    trust = ""
    if _trusting(f):
        if f.state_dict_key is None:
            return None
        trust = " --trust" if "--state-dict-only" in flags else " --state-dict-only --trust"
    base = f.path.rsplit(".", 1)[0] if "." in f.path.rsplit("/", 1)[-1] else f.path
    return f"cudadoctor ckpt fix {_sh(f.path)} --out {_sh(base + '.fixed.pt')}{flags}{trust}"


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
                folder, script = _script(where)
                if "import sys" not in head:
                    head.insert(0, "import sys")
                path_line = f"sys.path.insert(0, {_py(folder)})"
                if path_line not in imports:
                    imports.insert(0, path_line)
                imports.append(f"from {script} import {attr}")
            else:
                imports.append(f"from {YOUR_SCRIPT} import {attr}")
            exprs.append(f"({attr}, {n!r})")
            continue
        imp, expr = _import_line(n)
        if imp and imp not in imports:
            imports.append(imp)
        exprs.append(expr)
    return head + imports, exprs


def _load_lines(f: CkptFacts, var: str, map_location: str = "'cpu'", before: tuple[str, ...] = ()) -> list[str] | None:
    """`var = torch.load(...)` as this report advises it, imports included; None: never load it."""
    if _never_load(f) or f.format in ("hf-index", "dcp"):
        return None  # shards and DCP directories load through their own libraries (CD606, from_pretrained)
    if f.format == "safetensors":
        return ["from safetensors.torch import load_file", f"{var} = load_file({_py(f.path)})"]
    load = f"{var} = torch.load({_py(f.path)}, map_location={map_location})"
    names = _needs_globals(f)
    if not names:
        return ["import torch", *before, load]
    imports, exprs = _imports(f, names)
    return [*imports, *before, f"with torch.serialization.safe_globals([{', '.join(exprs)}]):", "    " + load]


def _script(path: str) -> tuple[str, str]:
    """(folder, module name) of a .py file's path, with either separator."""
    cut = max(path.rfind("/"), path.rfind("\\"))
    return path[:cut], path[cut + 1 :].removesuffix(".py")


def _entry_kind(f: CkptFacts) -> str | None:
    key = f.state_dict_key
    return next((c.kind for c in f.contents or [] if c.key == key), None)


def _state_expr(f: CkptFacts, var: str) -> str:
    """The model's state dict inside the loaded object `var`: an entry of a dict, or the whole file; a
    pickled nn.Module is not a state dict, its .state_dict() is."""
    key = f.state_dict_key
    expr = f"{var}[{key!r}]" if key else var
    return expr + ".state_dict()" if _entry_kind(f) == "model object" else expr


def _summary(f: CkptFacts) -> list[Finding]:
    fmt = {
        "torch-zip": "torch zip",
        "torch-legacy": "legacy torch pickle",
        "safetensors": "safetensors",
        "hf-index": f"sharded ({len(f.shards or [])} shards)",
        "dcp": "DCP directory",
        "pickle": "pickle",
    }.get(f.format or "", f.format or "?")
    parts = [fmt, _size(f.size)]
    if f.tensor_count is not None:
        data = f" ({format_size(f.tensor_bytes)})" if f.tensor_bytes is not None else ""
        parts.append(plural(f.tensor_count, "tensor") + data)
        if f.storage_count is not None and 0 < f.storage_count < f.tensor_count and f.format != "safetensors":
            parts.append(f"{f.tensor_count - f.storage_count} sharing storage (tied weights or views)")
    rows = [[k, str(v)] for k, v in sorted((f.dtypes or {}).items(), key=lambda kv: -kv[1])]
    tables = [Table(["dtype", "tensors"], rows)] if rows else []
    if f.contents and not (len(f.contents) == 1 and f.contents[0].key == ""):
        tables.append(
            Table(["entry", "holds"], [[c.key, c.kind + (f": {c.detail}" if c.detail else "")] for c in f.contents])
        )
    return [SUMMARY.finding(title="Checkpoint: " + ", ".join(parts), tables=tables)]


# ----------------------------------------------------------------------------------------------- audit


def _audit(f: CkptFacts) -> list[Finding]:
    if f.format in ("dcp", "safetensors"):
        return []  # DCP: CD606 says how to read it; safetensors holds no pickle at all
    if f.format == "hf-index" and all(s.endswith(".safetensors") for s in f.shards or []):
        return []
    t = f.torch
    unsafe = _unsafe(f)
    if unsafe is None:
        return []
    dangerous = f.dangerous_globals or []
    if t is not None and t.weights_only_ok is True and not dangerous:
        return [WEIGHTS_ONLY_OK.finding()]  # torch's own restricted load succeeded: that is the answer
    if dangerous:
        return [
            DANGEROUS.finding(
                title=f"The pickle calls {', '.join(dangerous[:3])}: it runs code when loaded",
                tables=[Table(["global"], [[g] for g in dangerous])],
                fix=[fix("Do not load it; get the weights from a source you trust", f"rm {_sh(f.path)}")],
            )
        ]
    if not unsafe:
        if t is not None and t.weights_only_ok is False:
            return [
                UNSAFE_GLOBALS.finding(
                    title="torch.load(weights_only=True) fails on this checkpoint",
                    why=UNSAFE_GLOBALS.explanation + f" torch says: {t.weights_only_error}",
                )
            ]
        return [WEIGHTS_ONLY_OK.finding()]
    default_on = t.weights_only_default if t is not None else None
    severity = Severity.ERROR if default_on in (True, None) else Severity.WARNING
    title = (
        f"torch.load(weights_only=True) will refuse this checkpoint: {plural(len(unsafe), 'global')} not allow-listed"
    )
    if default_on is False and t is not None:
        title += f" (torch {t.version} still defaults to weights_only=False; 2.6+ will refuse)"
    model_object = any(c.kind == "model object" for c in f.contents or [])
    fixes = []
    if model_object:
        fixes.append(
            fix(
                "The whole model object was pickled (torch.save(model)); in the training script, save its "
                "state dict instead, and load that with model.load_state_dict",
                "import torch",
                "torch.save(model.state_dict(), 'weights.pt')",
            )
        )
    load = _load_lines(f, "ckpt") or []
    if load and _unlocated(f):
        fixes.append(
            fix("You trust the file: allow exactly these globals (YOUR_SCRIPT: the script defining them)", *load)
        )
    elif load:  # no loading lines for this format (.bin shards of an index): no fix that shows nothing
        fixes.append(fix("You trust the file: allow exactly these globals", *load))
    cmd = _fix_cmd(f, " --state-dict-only")
    if cmd:
        fixes.append(fix("Or write a copy with tensors only, once (runs the pickle: only for files you trust)", cmd))
    rows = [[g, _note(f, g)] for g in unsafe]
    return [
        UNSAFE_GLOBALS.finding(
            title=title,
            severity=severity,
            tables=[Table(["global", "note"], rows)],
            fix=fixes,
        )
    ]


def _note(f: CkptFacts, name: str) -> str:
    """A short note on a global (the table fits 80 columns): where a class of the saving script is."""
    if not name.startswith("__main__."):
        return ""
    where = (f.main_definitions or {}).get(name[9:])
    several = (f.main_ambiguous or {}).get(name[9:])
    if several:  # which one saved the file is unknown: named, never guessed
        return "defined in " + " and ".join(f"{_script(p)[1]}.py" for p in several[:3])
    return f"defined in {_script(where)[1]}.py" if where else "defined in no .py file here"


# --------------------------------------------------------------------------------------------- devices

_CUDA = re.compile(r"^cuda(?::(\d+))?$")


def _devices(f: CkptFacts) -> list[Finding]:
    devices = f.storage_devices or {}
    cuda = {d: n for d, n in devices.items() if _CUDA.match(d)}
    if not cuda:
        return []
    t = f.torch
    table = Table(["saved on", "storages"], [[d, str(n)] for d, n in sorted(devices.items())])
    saved = ", ".join(sorted(cuda))
    anywhere = _load_lines(f, "state", "device", before=(_PICK_DEVICE,))
    if t is None or t.cuda_available is None:
        # unknown: say what was saved and how to load it anywhere, claim nothing about this machine
        return [
            SAVED_ON_GPU.finding(
                title=f"Saved on {saved}; whether torch here can use it was not checked",
                tables=[table],
                fix=[fix("Load it on any machine", *anywhere)] if anywhere else [],
            )
        ]
    if not t.cuda_available:
        fixes = []
        if anywhere:
            fixes.append(fix("Pick the device once, and load onto it (runs on GPU and CPU machines)", *anywhere))
        cmd = _fix_cmd(f, " --to cpu")
        if cmd and _trusting(f):
            fixes.append(
                fix("Or write the weights alone to a CPU copy (runs the pickle: only for files you trust)", cmd)
            )
        elif cmd:
            fixes.append(fix("Or write a CPU copy that loads anywhere without map_location", cmd))
        return [
            NO_CUDA_HERE.finding(
                title=f"Saved on {saved}, but torch here has no usable CUDA: torch.load needs map_location",
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
        onto, only = _load_lines(f, "state", "'cuda:0'"), _load_lines(f, "state", remap)
        return [
            DEVICE_INDEX.finding(
                title=f"Saved on {saved}, but only {plural(count, 'GPU')} visible here (cuda:0–cuda:{count - 1})"
                if count
                else f"Saved on {saved}, but no GPU is visible here",
                tables=[table],
                fix=[fix("Load onto the device you train on", *onto), fix("Or remap only those indices", *only)]
                if onto and only
                else [],
            )
        ]
    return [DEVICES_OK.finding(title=f"Saved on {saved}: {plural(count, 'GPU')} usable here", tables=[table])]


# -------------------------------------------------------------------------------------------- contents


# entries that only training saves: with one of these, the file is a training checkpoint, not released
# weights beside their config
_TRAINING_KINDS = ("optimizer", "scheduler", "grad scaler")
_TRAINING_KEYS = ("epoch", "step", "global_step", "iteration", "iter", "best_acc", "best_loss")


def _contents(f: CkptFacts) -> list[Finding]:
    out = []
    others = [c for c in f.contents or [] if c.key and c.key != f.state_dict_key and c.kind != "dcp entry"]
    if f.state_dict_key and others:
        kinds = ", ".join(f"{c.key} ({c.kind})" for c in others[:6])
        key = f.state_dict_key
        training = any(c.kind in _TRAINING_KINDS or c.key.lower() in _TRAINING_KEYS for c in others)
        title = (
            f"A training checkpoint: the model's weights are in [{key!r}], beside {kinds}"
            if training
            else f"The model's weights are in [{key!r}], beside {kinds}"
        )
        fixes = []
        load = _load_lines(f, "ckpt")
        if load:
            fixes.append(fix("Load the model's entry", *load, f"model.load_state_dict({_state_expr(f, 'ckpt')})"))
        cmd = _fix_cmd(f, " --state-dict-only")
        if cmd and _trusting(f):
            fixes.append(fix("Or write the weights alone (runs the pickle: only for files you trust)", cmd))
        elif cmd:
            fixes.append(fix("Or write the weights alone", cmd))
        out.append(TRAINING.finding(title=title, fix=fixes))
    prefixes = f.prefixes or []
    cmp = f.model
    if cmp is not None and cmp.error is None:
        prefixes = cmp.strip  # what actually stands between the keys and the model
    if prefixes:
        out.append(_prefix_finding(f, prefixes, with_model=cmp is not None and cmp.error is None))
    return out


def _prefix_finding(f: CkptFacts, prefixes: list[str], with_model: bool) -> Finding:
    entry_ = PREFIX_COMPILE if "_orig_mod." in prefixes else PREFIX_MODULE
    joined = "".join(prefixes)
    title = f"Every state-dict key starts with {joined!r}"
    title += " (torch.compile)" if "_orig_mod." in prefixes else " (DataParallel/DDP)"
    if with_model:
        title += ": load_state_dict fails with Missing/Unexpected key(s)"
    first = (f.state_dict_keys or [""])[0]
    fixes = []
    state = _state_expr(f, "ckpt")
    load = _load_lines(f, "ckpt") if state != "ckpt" else _load_lines(f, "state")
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
    cmd = _fix_cmd(f, " --strip-prefix")
    if cmd and _trusting(f):
        fixes.append(fix("Or write the weights alone, stripped (runs the pickle: only for files you trust)", cmd))
    elif cmd:
        fixes.append(fix("Or write a stripped copy once", cmd))
    return entry_.finding(
        title=title,
        severity=Severity.ERROR if with_model else None,
        tables=[Table(["first key", "after stripping"], [[first, first[len(joined) :]]])] if first else [],
        fix=fixes,
    )


def _model(f: CkptFacts) -> list[Finding]:
    cmp = f.model
    if cmp is None:
        return []
    if cmp.error:
        return [
            MODEL_ERROR.finding(
                title=f"--model {cmp.factory}: {cmp.error}",
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
                title=f"The model's keys start with {cmp.add!r}, the checkpoint's do not",
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
        out.append(
            MISSING.finding(
                title=f"{plural(len(cmp.missing), 'key')} of the model missing from the checkpoint",
                tables=[Table(["missing key"], [[k] for k in cmp.missing[:50]])],
                fix=[
                    fix(
                        "Only if the missing part is meant to start fresh (a new head): load the rest",
                        "result = model.load_state_dict(state, strict=False)",
                        "print(result.missing_keys)",
                    )
                ],
            )
        )
    if cmp.unexpected:
        out.append(
            UNEXPECTED.finding(
                title=f"{plural(len(cmp.unexpected), 'key')} in the checkpoint that the model does not have",
                tables=[Table(["unexpected key"], [[k] for k in cmp.unexpected[:50]])],
                fix=[
                    fix(
                        "Only if those are meant to be dropped",
                        "result = model.load_state_dict(state, strict=False)",
                        "print(result.unexpected_keys)",
                    )
                ],
            )
        )
    if cmp.mismatched:
        out.append(
            SHAPES.finding(
                title=f"{plural(len(cmp.mismatched), 'tensor')} with another shape than the model's",
                tables=[Table(["key", "checkpoint", "model"], [list(r) for r in cmp.mismatched[:50]])],
                fix=[fix("Build the model with the configuration the checkpoint was trained with (its shapes above)")],
            )
        )
    if not (out or cmp.strip):
        out.append(
            MODEL_OK.finding(title=f"Keys and shapes match {cmp.factory}() ({plural(cmp.matched or 0, 'tensor')})")
        )
    return out


# ---------------------------------------------------------------------------------------- torch child


def _child(f: CkptFacts) -> list[Finding]:
    t = f.torch
    if f.format in ("lfs-pointer", "html", "corrupt", "empty", "text", "unknown"):
        return []
    if t is None:
        return []
    why = None
    if t.import_error:
        why = f"torch could not be imported in {t.python or 'the target interpreter'}: {t.import_error}"
    elif t.timed_out:
        why = "the checkpoint child did not finish in time"
    elif t.child_error:
        why = t.child_error
    if why is None:
        return []
    return [CHILD_FAILED.finding(title=f"Not asked of torch: {why}")]


# ------------------------------------------------------------------------------------------------- fix


def _fix(f: CkptFacts) -> list[Finding]:
    r = f.fix
    if r is None:
        return []
    if not r.ok or r.verified is False:
        return [
            FIX_FAILED.finding(
                title=f"Could not write {r.out}: {r.error}"
                if not r.ok
                else f"{r.out} did not verify: {r.verify_error}",
            )
        ]
    did = []
    if r.mapped_from:
        did.append(f"storages from {', '.join(r.mapped_from)} mapped to cpu")
    if r.stripped:
        did.append(f"prefix {''.join(r.stripped)!r} stripped")
    if r.state_dict_only:
        did.append("state dict extracted")
    if r.copied_shared:
        did.append(f"{plural(len(r.copied_shared), 'shared tensor')} written as copies")
    title = f"Wrote {r.out} ({r.format}, {plural(r.tensors or 0, 'tensor')}, {_size(r.bytes_written)})"
    if did:
        title += ": " + "; ".join(did)
    load = (
        ["import torch", f"state = torch.load({_py(r.out)})"]
        if r.format == "torch"
        else ["from safetensors.torch import load_file", f"state = load_file({_py(r.out)})"]
    )
    return [
        FIX_WRITTEN.finding(
            title=title + (" — verified" if r.verified else ""),
            tables=[Table(["shared tensor"], [[s] for s in r.copied_shared])] if r.copied_shared else [],
            fix=[fix("Load it", *load)],
        )
    ]
