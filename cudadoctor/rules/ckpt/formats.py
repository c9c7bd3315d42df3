"""What the file is, when it is not a checkpoint torch.load reads as it is: a Git LFS pointer, an HTML
page, a truncated file, something else; or a checkpoint that needs its own loader (TorchScript, DCP, a
sharded index) or a rewrite (the legacy format)."""

from __future__ import annotations

import json

from cudadoctor.facts.ckpt import CkptFacts
from cudadoctor.model import Finding, Table, msg, msg_n
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.ckpt.entries import (
    DCP,
    HEADER_TOO_LARGE,
    HTML_PAGE,
    LEGACY,
    LFS_POINTER,
    NOT_A_CHECKPOINT,
    SHARDS,
    TORCHSCRIPT,
    TRUNCATED,
)
from cudadoctor.rules.ckpt.loading import fix_cmd, trusting
from cudadoctor.rules.ckpt.text import py, sh, size


def formats(f: CkptFacts) -> list[Finding]:
    name = f.path.rsplit("/", 1)[-1]
    if f.format == "lfs-pointer":
        return [_lfs_pointer(f, name)]
    if f.format == "html":
        return [_html(f, name)]
    if f.format == "corrupt":
        return [_corrupt(f, name)]
    if f.format in ("empty", "text", "unknown"):
        return [_not_a_checkpoint(f, name)]
    if f.format == "pickle":
        return [
            NOT_A_CHECKPOINT.finding(
                title=msg("{name} is a plain pickle, not written by torch.save", name=name),
                why=msg(
                    '{page} torch.load fails with "Invalid magic number; corrupt file?"; read it with the tool that '
                    "wrote it.",
                    page=msg(NOT_A_CHECKPOINT.explanation),
                ),
            )
        ]
    if f.format == "torchscript":
        return [
            TORCHSCRIPT.finding(
                fix=[
                    fix(
                        "Load it as TorchScript",
                        "import torch",
                        f"model = torch.jit.load({py(f.path)}, map_location='cpu')",
                    )
                ]
            )
        ]
    if f.format == "dcp":
        return [_dcp(f)]
    if f.format == "hf-index":
        return _shards(f)
    if f.format == "torch-legacy":
        return [_legacy(f)]
    return []


def _lfs_pointer(f: CkptFacts, name: str) -> Finding:
    return LFS_POINTER.finding(
        title=msg(
            "{name} is a Git LFS pointer ({size}), not the checkpoint of {real}"
            if f.lfs_size
            else "{name} is a Git LFS pointer ({size}), not the checkpoint",
            name=name,
            size=size(f.size),
            real=size(f.lfs_size),
        ),
        fix=[
            fix(
                "Fetch the real file in the clone it came from", "git lfs install", f"git lfs pull --include {sh(name)}"
            ),
            fix(
                "From Hugging Face, download the file itself (the library resolves LFS)",
                "hf download REPO_ID " + sh(name) + " --local-dir .",
            ),
        ],
        # the whole oid (sha256sum of the real file): a cut one identifies nothing; the real size is in the
        # title, so the table is that one column and fits 80 columns whole
        tables=[Table(["oid sha256"], [[f.lfs_oid]])] if f.lfs_oid else [],
    )


def _html(f: CkptFacts, name: str) -> Finding:
    return HTML_PAGE.finding(
        title=msg(
            "{name} is an HTML page ({page_title}), not a checkpoint"
            if f.text_title
            else "{name} is an HTML page, not a checkpoint",
            name=name,
            page_title=repr(f.text_title),
        ),
        fix=[
            fix(
                "Download the raw file (Hugging Face: /resolve/, not /blob/)",
                "curl -L -o " + sh(name) + " https://huggingface.co/REPO_ID/resolve/main/" + sh(name),
            ),
            fix("GitHub: the raw URL", "curl -L -o " + sh(name) + " https://raw.githubusercontent.com/…"),
        ],
    )


def _corrupt(f: CkptFacts, name: str) -> Finding:
    p = f.path
    if f.header_too_large:
        return HEADER_TOO_LARGE.finding(
            why=msg("{page} Here: {detail}.", page=msg(HEADER_TOO_LARGE.explanation), detail=f.detail),
            fix=[
                fix("Download it again and compare the size", f"ls -l {sh(p)}"),
                fix("If it came from a Git LFS repository", "git lfs install", f"git lfs pull --include {sh(name)}"),
            ],
        )
    return TRUNCATED.finding(
        title=msg(
            "{name} is truncated or damaged ({format}, {size})",
            name=name,
            format=f.expected_format or msg("checkpoint"),
            size=size(f.size),
        ),
        why=msg("{page} Here: {detail}.", page=msg(TRUNCATED.explanation), detail=f.detail) if f.detail else None,
        fix=[fix("Download or copy it again, then check it", f"sha256sum {sh(p)}", f"cudadoctor ckpt inspect {sh(p)}")],
    )


def _not_a_checkpoint(f: CkptFacts, name: str) -> Finding:
    p = f.path
    if f.format == "empty":
        title = msg("{name} is an empty file, not a checkpoint", name=name)
    elif f.format == "text":
        title = msg(
            "{name} is a text file starting {head}, not a checkpoint"
            if f.text_head
            else "{name} is a text file, not a checkpoint",
            name=name,
            head=repr(f.text_head),
        )
    elif f.detail:  # what the file is, as the reader told it (a gzip archive, a zip without data.pkl, …)
        title = msg("{name} is {what}, not a checkpoint", name=name, what=f.detail)
    else:
        title = msg("{name} is in no format torch reads, not a checkpoint", name=name)
    fixes = []
    if f.detail and f.detail.startswith("a gzip"):
        fixes = [
            fix("Unpack it (a .tar.gz, or a plain gzip), then inspect what comes out", f"tar -xzf {sh(p)}"),
            fix("A plain gzip file", f"gzip -dc {sh(p)} > {sh(p + '.unpacked')}"),
        ]
    elif f.detail and f.detail.startswith("a zip"):
        fixes = [fix("See what the archive holds", f"unzip -l {sh(p)}")]
    return NOT_A_CHECKPOINT.finding(title=title, fix=fixes)


def _dcp(f: CkptFacts) -> Finding:
    p = f.path
    n = len(f.shards or [])
    return DCP.finding(
        title=msg_n(
            "A DCP checkpoint directory ({n} shard file, {size})",
            "A DCP checkpoint directory ({n} shard files, {size})",
            n,
            n=n,
            size=size(f.size),
        ),
        fix=[
            fix(
                "Convert it to one torch.save file (only if you trust its source)",
                "python -c "
                + sh(
                    "from torch.distributed.checkpoint.format_utils import dcp_to_torch_save; "
                    f"dcp_to_torch_save({json.dumps(p)}, {json.dumps(p.rstrip('/') + '.pt')})"
                ),
            )
        ],
    )


def _shards(f: CkptFacts) -> list[Finding]:
    bad = [[s, "missing"] for s in f.missing_shards or []] + [list(b.split(": ", 1)) for b in f.bad_shards or []]
    if not bad:
        return []
    return [
        SHARDS.finding(
            title=msg_n(
                "{n} shard of {total} missing or broken",
                "{n} shards of {total} missing or broken",
                len(bad),
                n=len(bad),
                total=len(f.shards or []),
            ),
            tables=[Table(["shard", "problem"], bad)],
            fix=[
                fix("Fetch the shards (Git LFS clone)", "git lfs install", "git lfs pull"),
                fix("Or download the repository's files", "hf download REPO_ID --local-dir ."),
            ],
        )
    ]


def _legacy(f: CkptFacts) -> Finding:
    cmd = fix_cmd(f, "")
    if cmd is None:
        return LEGACY.finding()
    if trusting(f):
        return LEGACY.finding(
            fix=[fix("Write the weights alone in the zip format (runs the pickle: only for files you trust)", cmd)]
        )
    return LEGACY.finding(fix=[fix("Rewrite it in the zip format", cmd)])
