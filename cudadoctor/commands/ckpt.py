"""`cudadoctor ckpt inspect|fix`: what a checkpoint file is, whether torch.load will read it here, and a
fixed copy when asked. The file's bytes are read here without torch and without unpickling
(backends/ckpt/); what needs torch runs in a child of the target interpreter (backends/children/ckpt_child.py)."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any

import click

from cudadoctor.commands.options import Seconds, apply, build
from cudadoctor.commands.output import echo, fail, run_command, show
from cudadoctor.locale import N_, _

FORMATS = ("text", "json", "markdown")  # --format: the report's format, as in every command
OUT_FORMATS = ("torch", "safetensors")  # fix --out-format: the copy's
CHILD_FORMATS = ("torch-zip", "torch-legacy")  # a test load and the devices usable here need torch
FIXABLE = ("torch-zip", "torch-legacy", "safetensors", "hf-index")
_NOT_FIXABLE = {
    "lfs-pointer": N_("it is a Git LFS pointer, not the checkpoint"),
    "html": N_("it is an HTML page, not a checkpoint"),
    "corrupt": N_("it is truncated or damaged"),
    "empty": N_("it is empty"),
    "text": N_("it is a text file, not a checkpoint"),
    "unknown": N_("it is in no format torch reads"),
    "pickle": N_("it is a plain pickle, not written by torch.save"),
    "torchscript": N_("it is a TorchScript archive (torch.jit.load/torch.jit.save)"),
    "dcp": N_("it is a DCP directory (convert it with torch.distributed.checkpoint.format_utils.dcp_to_torch_save)"),
}


@dataclass(frozen=True)
class CkptOptions:
    """What `ckpt inspect` was asked: one field per option."""

    path: str = ""
    fmt: str = "text"
    model: str | None = None
    python: str | None = None
    as_json: bool = False
    redact: bool = False
    timeout: float | None = None
    trust: bool = False
    verbose: bool = False

    @property
    def format(self) -> str:
        return "json" if self.as_json else self.fmt


@dataclass(frozen=True)
class FixOptions(CkptOptions):
    """What `ckpt fix` was asked: inspect's options, and the copy's."""

    out: str = ""
    to: str = "cpu"
    strip_prefix: bool = False
    state_dict_only: bool = False
    out_format: str = "torch"


# the options inspect and fix share
_common = apply(
    click.option("--python", type=str, metavar="PATH", help="The interpreter whose torch reads the file."),
    click.option("--json", "as_json", is_flag=True, help="Print the report as JSON."),
    click.option("--redact", is_flag=True, help="Replace host and user names in the output."),
    click.option("--timeout", type=Seconds(min=1), metavar="SECONDS", help="Time bound for the torch child."),
    click.option(
        "--trust",
        is_flag=True,
        help="Let torch unpickle with weights_only=False (runs code from the file: only for files you trust).",
    ),
    click.option("-v", "--verbose", is_flag=True, help="Show timings."),
)


@click.group()
def ckpt() -> None:
    """Diagnose a checkpoint file: format, devices, key prefixes, weights_only; write a fixed copy."""


@ckpt.command(short_help="What a checkpoint is and whether torch.load reads it here.")
@click.argument("path", type=str)
@click.option("--model", type=str, metavar="MODULE:FACTORY", help="Compare keys and shapes with FACTORY()'s model.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="Report format.")
@_common
def inspect(**options: Any) -> None:
    """What PATH is and whether torch.load will read it here, without running code from it.

    PATH: a file (torch.save zip or legacy, TorchScript, safetensors, *.index.json) or a directory (DCP,
    a Hugging Face sharded checkpoint).
    """
    run_command(run_inspect, build(CkptOptions, options))


@ckpt.command(short_help="Write a fixed copy (CPU storages, no prefix, state dict, safetensors).")
@click.argument("path", type=str)
@click.option("--out", "out", type=str, required=True, metavar="NEW", help="Where to write the copy (must not exist).")
@click.option(
    "--to",
    type=click.Choice(["cpu"]),
    default="cpu",
    show_default=True,
    help="Device of the copy's storages (a CPU checkpoint loads anywhere; map_location moves it onto a GPU).",
)
@click.option("--strip-prefix", is_flag=True, help="Strip 'module.' / '_orig_mod.' from the state dict's keys.")
@click.option("--state-dict-only", is_flag=True, help="Write only the model's state dict from a training checkpoint.")
@click.option(
    "--out-format",
    "out_format",
    type=click.Choice(OUT_FORMATS),
    default="torch",
    show_default=True,
    help="Format of the copy (safetensors holds named tensors only).",
)
@click.option(
    "--format",
    "fmt",
    # torch/safetensors: the copy's format as `fix --format` named it before --out-format (deprecated)
    type=click.Choice([*FORMATS, *OUT_FORMATS]),
    metavar="[" + "|".join(FORMATS) + "]",
    default="text",
    show_default=True,
    help="Report format.",
)
@click.option("--report", "old_report", type=click.Choice(FORMATS), hidden=True)  # before --format (deprecated)
@_common
def fix(old_report: str | None, **options: Any) -> None:
    """Write a fixed copy of PATH to NEW: storages on the CPU, prefixes stripped, the state dict alone,
    or safetensors. PATH is never changed; NEW must not exist."""
    options["fmt"], options["out_format"] = _old_spellings(options["fmt"], options["out_format"], old_report)
    run_command(run_fix, build(FixOptions, options))


def _old_spellings(fmt: str, out_format: str, old_report: str | None) -> tuple[str, str]:
    """`--format` is the report format in every command; `fix` once used it for the copy's format and
    --report for the report's. Both old spellings still work, with a one-line note on stderr."""
    if fmt in OUT_FORMATS:
        note = _("--format {value} is deprecated for the copy's format: use --out-format {value}").format(value=fmt)
        echo(f"cudadoctor: {note}", err=True)
        fmt, out_format = "text", fmt
    if old_report is not None:
        note = _("--report {value} is deprecated: use --format {value}").format(value=old_report)
        echo(f"cudadoctor: {note}", err=True)
        fmt = old_report
    return fmt, out_format


# ---------------------------------------------------------------------------------------------- bodies


def _prepare(path: str, python: str | None, timeout: float | None, trust: bool) -> tuple[Any, str]:
    from cudadoctor.backends.ckpt import InputError, inspect_path, locate_main_definitions
    from cudadoctor.commands.check import _target_python

    if not path:
        fail(_("an empty path"))
    try:
        facts = inspect_path(path)
    except InputError as exc:
        fail(str(exc))
    facts.trust = trust
    if any(g.startswith("__main__.") for g in facts.unsafe_globals or []):
        # classes of the script that saved it: the snippets import them from where they are defined
        here = [os.path.dirname(facts.path), os.getcwd()]
        attributes = [k.split(".")[0] for k in facts.state_dict_keys or []]
        facts.main_definitions, ambiguous = locate_main_definitions(facts.unsafe_globals or [], here, attributes)
        facts.main_ambiguous = ambiguous or None
    return facts, _target_python(python, timeout)


def _system(facts: Any) -> None:
    from cudadoctor.backends.host import system_facts

    try:
        facts.system = system_facts({})
    except Exception:  # the header is a nicety: never fail a checkpoint report over it
        facts.system = None


def _ask_torch(facts: Any, python: str, request: dict, timeout: float) -> Any:
    """Run the child; fill facts.torch; return (the raw answer, the outcome)."""
    from cudadoctor.backends.ckpt import run_child_request
    from cudadoctor.facts.ckpt import CkptTorch
    from cudadoctor.model import ProbeOutcome

    start = time.monotonic()
    answer, error, timed_out = run_child_request(python, request, timeout)
    seconds = time.monotonic() - start
    t = CkptTorch(python=python, timed_out=timed_out)
    if answer:
        for name in (
            "version",
            "import_error",
            "cuda_available",
            "device_count",
            "weights_only_default",
            "weights_only_ok",
            "weights_only_error",
            "unsafe_globals",
            "loaded_tensor_count",
            "child_error",
        ):
            if name in answer:
                setattr(t, name, answer[name])
        if answer.get("error") and request["action"] == "inspect":
            t.child_error = answer["error"]
    elif error:
        t.child_error = error
    facts.torch = t
    status = "timeout" if timed_out else ("ok" if answer else "crashed")
    if answer and answer.get("import_error"):
        status, error = "skipped", f"no torch in {python}"  # not a failure: the scope says it was not checked
    return answer or {}, ProbeOutcome("torch", status, round(seconds, 3), error=None if status == "ok" else error)


def _report(facts: Any, outcomes: list) -> Any:
    from cudadoctor.report import build
    from cudadoctor.rules import ckpt as rules
    from cudadoctor.rules.catalogue import SECTIONS

    findings = rules.evaluate(facts)
    order = {s: i for i, s in enumerate(SECTIONS)}
    findings.sort(key=lambda x: (order[x.section], -x.severity.rank))
    from cudadoctor.render.localize import findings as localized

    findings = localized(findings)  # the current language's titles, pages, fix labels, table headers
    return build("ckpt", facts, outcomes, findings, expected=[o.name for o in outcomes])


def inspect_report(path: str, model: str | None, python: str | None, timeout: float | None, trust: bool = False) -> Any:
    """The report of `ckpt inspect` (the Python API's inspect_checkpoint too)."""
    from cudadoctor.backends.ckpt import child_request
    from cudadoctor.facts.ckpt import ModelComparison
    from cudadoctor.model import ProbeOutcome

    start = time.monotonic()
    facts, py = _prepare(path, python, timeout, trust)
    outcomes = [ProbeOutcome("file", "ok", round(time.monotonic() - start, 3))]
    _system(facts)
    wanted = facts.format in CHILD_FORMATS or (model and facts.format in (*FIXABLE, "dcp"))
    if wanted:
        answer, outcome = _ask_torch(facts, py, child_request(facts, "inspect", model=model), timeout or 120.0)
        outcomes.append(outcome)
        cmp = answer.get("model")
        if isinstance(cmp, dict):
            facts.model = ModelComparison(
                factory=str(cmp.get("factory") or model),
                error=cmp.get("error"),
                model_keys=cmp.get("model_keys"),
                matched=cmp.get("matched"),
                missing=list(cmp.get("missing") or []),
                unexpected=list(cmp.get("unexpected") or []),
                mismatched=[list(map(str, r)) for r in cmp.get("mismatched") or []],
                strip=list(cmp.get("strip") or []),
                add=cmp.get("add"),
            )
    return _report(facts, outcomes)


def run_inspect(o: CkptOptions) -> int:
    rep = inspect_report(o.path, o.model, o.python, o.timeout, o.trust)
    show(rep, o.format, o.redact, o.verbose)
    return rep.exit_code


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def run_fix(o: FixOptions) -> int:
    from cudadoctor.backends.ckpt import InputError, child_request, inspect_path
    from cudadoctor.facts.ckpt import FixResult

    path, out, out_format, state_dict_only, trust = o.path, o.out, o.out_format, o.state_dict_only, o.trust

    if not out:
        fail(_("--out: an empty path"))
    if os.path.lexists(out):
        fail(
            _("--out {out}: already exists; cudadoctor never overwrites a file").format(out=out)
            if not _same_file(path, out)
            else _("--out {out} is the input; write the copy to a new path").format(out=out)
        )
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        fail(_("--out {out}: no such directory {parent}").format(out=out, parent=parent))
    facts, py = _prepare(path, o.python, o.timeout, trust)
    name = os.path.basename(facts.path)
    if facts.format not in FIXABLE:
        fail(
            _("cannot fix {name}: {why} (see `cudadoctor ckpt inspect {path}`)").format(
                name=name, why=_(_NOT_FIXABLE.get(facts.format or "", facts.format or "")), path=path
            )
        )
    if facts.format == "hf-index" and (facts.missing_shards or facts.bad_shards):
        fail(
            _("cannot fix {name}: shards are missing or broken (see `cudadoctor ckpt inspect {path}`)").format(
                name=name, path=path
            )
        )
    unsafe = facts.unsafe_globals or []
    if unsafe and not trust:
        shown = ", ".join(unsafe[:4])
        if len(unsafe) > 4:
            shown = _("{names} and {n} more").format(names=shown, n=len(unsafe) - 4)
        fail(
            _(
                "reading {name} needs globals torch does not allow by default ({shown});"
                " pass --trust only if you trust its source"
            ).format(name=name, shown=shown)
        )
    found = facts.main_definitions or {}
    lost = [g[9:] for g in unsafe if g.startswith("__main__.") and g[9:] not in found]
    if lost and trust:
        # pickle looks these up in the __main__ of whoever loads the file: without their script, none can
        fail(
            _(
                "{name} holds {cls}, a class of the script that saved it (__main__), and no .py file beside it"
                " or in the current directory defines it: run this where that script is"
            ).format(name=name, cls=lost[0])
        )
    if out_format == "safetensors" and not state_dict_only:
        kinds = {c.kind for c in facts.contents or []}
        if facts.state_dict_key != "" or kinds - {"state dict", "tensor"}:
            fail(_("safetensors holds named tensors only: add --state-dict-only to write the model's state dict"))
    if state_dict_only and facts.state_dict_key is None:
        fail(_("--state-dict-only: no model state dict found in {name}").format(name=name))
    request = child_request(
        facts,
        "fix",
        out=os.path.abspath(out),
        out_format=out_format,
        strip=o.strip_prefix,
        state_dict_only=state_dict_only,
    )
    answer, outcome = _ask_torch(facts, py, request, o.timeout or 600.0)
    result = FixResult(out=out, format=out_format)
    result.ok = bool(answer.get("ok"))
    t = facts.torch
    result.error = answer.get("error") or (t.import_error or t.child_error if t is not None else None)
    result.bytes_written = answer.get("bytes_written")
    result.tensors = answer.get("tensors")
    result.stripped = list(answer.get("stripped") or [])
    result.state_dict_only = bool(answer.get("state_dict_only"))
    result.copied_shared = list(answer.get("copied_shared") or [])
    result.verified = answer.get("verified")
    result.verify_error = answer.get("verify_error")
    result.mapped_from = sorted(d for d in (facts.storage_devices or {}) if d not in ("cpu", "unknown"))
    if o.strip_prefix and not result.stripped and result.ok:
        line = _("--strip-prefix: the keys of {name} carry no 'module.'/'_orig_mod.' prefix").format(name=name)
        echo(f"cudadoctor: {line}", err=True)
    report_facts = facts
    if result.ok:
        try:
            report_facts = inspect_path(out)
        except InputError:
            report_facts = facts
        report_facts.torch = facts.torch
    report_facts.fix = result
    report_facts.system = None
    _system(report_facts)
    rep = _report(report_facts, [outcome])
    show(rep, o.format, o.redact, o.verbose)
    return rep.exit_code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(ckpt())
