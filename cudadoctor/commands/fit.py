"""`cudadoctor fit MODEL [--training]`: will it fit. The model's parameter count (counted from a
checkpoint's tensors without running its pickle, or computed from a local Hugging Face config.json; nothing
is downloaded), the memory that takes by precision and use, against each GPU's free memory now (NVML, in a
child)."""

from __future__ import annotations

import time
from typing import Any

import click

from cudadoctor.commands.output import fail, run_command, show

FORMATS = ("text", "json", "markdown")


def _gpus() -> tuple[list[Any] | None, str | None]:
    """Each GPU's free memory now; (None, why) when NVML cannot tell (never an empty list: no GPU is a fact)."""
    from cudadoctor.commands.gpus import _problem, _shown, snapshot
    from cudadoctor.exitcodes import EXIT_OK
    from cudadoctor.facts.fit import FitGpu

    driver = snapshot(with_processes=False)
    if driver.init_status != "ok":
        return None, f"NVML: {driver.init_message or driver.init_status}"
    problem = _problem(driver)
    if problem is not None and problem[1] != EXIT_OK:  # a GPU NVML could not read: the list is not whole
        return None, problem[0].removeprefix("cudadoctor: ")
    # the GPUs this environment shows (CUDA_VISIBLE_DEVICES), as gpus --pick chooses among
    usable = [d for d in _shown(driver) if d.error is None and not d.mig_enabled]
    gpus = [FitGpu(d.index, d.name, d.memory_total, d.memory_free) for d in usable]
    return gpus, None


def fit_report(path: str, training: bool) -> Any:
    from cudadoctor.backends.modelsize import InputError, model_size
    from cudadoctor.facts.fit import FitFacts
    from cudadoctor.model import ProbeOutcome
    from cudadoctor.report import build
    from cudadoctor.rules import fit as rules

    start = time.monotonic()
    try:
        size = model_size(path)
    except InputError as exc:
        fail(str(exc))
    outcomes = [ProbeOutcome("model", "ok", round(time.monotonic() - start, 3))]
    start = time.monotonic()
    gpus, error = _gpus()
    # NVML could not tell: "not checked", so the verdict never claims the model fits
    seconds = round(time.monotonic() - start, 3)
    outcomes.append(ProbeOutcome("driver", "ok" if gpus is not None else "skipped", seconds, error=error))
    facts = FitFacts(model=size, training=training, gpus=gpus, gpu_error=error)
    findings = rules.evaluate(facts)
    from cudadoctor.render.localize import findings as localized

    findings = localized(findings)  # the current language's titles, pages, fix labels, table headers
    # no verdict when what decides it is unknown: the model's size, or a GPU with its free memory known
    undecided = None
    if size.parameters is None:
        undecided = "how much memory the model takes (its parameter count is unknown)"
    elif gpus is not None and not any(g.memory_free is not None for g in gpus):
        undecided = "where it fits: no GPU here has its free memory known"
    return build("fit", facts, outcomes, findings, expected=["model", "driver"], undecided=undecided)


@click.command()
@click.argument("model", metavar="MODEL")
@click.option("--training", is_flag=True, help="Training with Adam instead of inference in the model's precision.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="Report format.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
def fit(model: str, training: bool, fmt: str, as_json: bool) -> None:
    """Will MODEL fit: a checkpoint file, a directory of *.safetensors shards, or a local config.json.

    The memory its weights take in each common precision (and, with --training, the weights, gradients and
    Adam states), against each GPU's free memory now. Activations, the KV cache and fragmentation come on
    top: measure a real run with `cudadoctor watch -- CMD`.
    """
    run_command(_run, model, training, "json" if as_json else fmt)


def _run(model: str, training: bool, fmt: str) -> int:
    rep = fit_report(model, training)
    show(rep, fmt)
    return rep.exit_code
