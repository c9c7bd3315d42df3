"""cudadoctor for Python callers and notebooks: the same compositions as the commands, returning values.

    import cudadoctor
    cudadoctor.check()                      # a Report; the last line of a notebook cell shows it
    cudadoctor.gpus()                       # the GPUs NVML sees, with free memory and processes
    cudadoctor.pick(2, min_free="20GiB")    # sets CUDA_VISIBLE_DEVICES for this process
    cudadoctor.triage(text)                 # a verdict from what someone pasted
    cudadoctor.inspect_checkpoint("model.pt")

The guarantees are the command line's: torch is never imported into the caller's process by these
functions (the torch checks run in child processes of the target interpreter), every probe is bounded in
time, secrets are masked at collection. Where the command line would print a usage error, these raise
`UsageError`; nothing here calls sys.exit.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from cudadoctor.facts.nvml import NvmlDevice

T = TypeVar("T")


class UsageError(ValueError):
    """What the command line reports as a usage error (exit 2): a bad option value, a missing file."""


class GpuQueryError(RuntimeError):
    """NVML could not tell which GPUs there are (no driver, a driver/library mismatch, a hang). The
    message says why and `code` names the finding `cudadoctor check` gives for it."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class NotEnoughGPUs(RuntimeError):
    """pick() found fewer GPUs that qualify than were asked for; `rejected` says why each other one did not."""

    def __init__(self, message: str, rejected: dict[int, str]) -> None:
        super().__init__(message)
        self.rejected = rejected


class Report:
    """A verdict with its findings. In a notebook it shows itself (HTML or Markdown); in code, read
    `.status` ("healthy", "warnings", "problems", "incomplete"), `.ok`, `.findings`, `.exit_code`, or
    `.to_json()` (the same JSON as `--json`)."""

    def __init__(self, report: Any, redact: bool = False, judged: Any = None) -> None:
        self._report = report
        self._redact = redact
        self._judged = judged  # check's report with the findings `select`/`ignore` set aside

    @property
    def status(self) -> str:
        return str(self._report.status.value)

    @property
    def ok(self) -> bool:
        """True when the exit code would be 0 (healthy, or usable with warnings)."""
        return self.exit_code == 0

    @property
    def exit_code(self) -> int:
        return int(self._report.exit_code)

    @property
    def verdict(self) -> str:
        return str(self._report.verdict)

    @property
    def findings(self) -> list[Any]:
        """The findings (code, severity, section, title, why, fix, tables, cause), most severe first."""
        return list(self._report.findings)

    @property
    def facts(self) -> Any:
        """Everything the probes learned; None where a fact could not be learned."""
        return self._report.facts

    def codes(self) -> list[str]:
        return [f.code for f in self._report.findings]

    def to_dict(self) -> dict[str, Any]:
        """The JSON `--json` prints: with `select`/`ignore`, the ignored findings follow, `"ignored": true`."""
        if self._judged is not None:
            from cudadoctor.commands.check import report_json

            return report_json(self._judged, self._redact)  # type: ignore[no-any-return]
        from cudadoctor.render.redact import report_data

        return report_data(self._report, self._redact)  # type: ignore[no-any-return]

    def to_json(self, indent: int | None = 2) -> str:
        import json

        return json.dumps(self.to_dict(), indent=indent)

    def _repr_html_(self) -> str:
        from cudadoctor.render.html import render

        return render(self.to_dict())

    def _repr_markdown_(self) -> str:
        from cudadoctor.render.markdown import render

        return render(self.to_dict())

    def __repr__(self) -> str:
        return f"<cudadoctor.Report {self.status}: {self.verdict}>"

    def __str__(self) -> str:
        """The terminal report, without colour (what `print(report)` shows)."""
        from cudadoctor.render import text

        buffer = io.StringIO()
        text.render(self._report, text.make_console(buffer), verbose=False, redact=self._redact)
        return buffer.getvalue()


@contextlib.contextmanager
def _as_usage_errors() -> Iterator[None]:
    """The commands' bodies report a usage error on stderr and exit; here it becomes UsageError."""
    import click

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            yield
    except SystemExit as exc:
        message = err.getvalue().strip().splitlines()
        text = message[-1] if message else f"exit {exc.code}"
        raise UsageError(text.removeprefix("cudadoctor: ")) from None
    except click.ClickException as exc:
        raise UsageError(" ".join(exc.format_message().split())) from None
    finally:
        leftover = err.getvalue()
        if leftover and not leftover.startswith("cudadoctor: "):
            sys.stderr.write(leftover)  # warnings (a config file passed over) still reach the caller


def _guarded(fn: Callable[[], T]) -> T:
    with _as_usage_errors():
        return fn()


def _names(value: str | list[str] | tuple[str, ...] | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return ",".join(value)


def check(
    *,
    only: str | list[str] | None = None,
    skip: str | list[str] | None = None,
    full: bool = False,
    python: str | None = None,
    timeout: float | None = None,
    transfer_size: str | int | None = None,
    config: str | None = None,
    redact: bool = False,
    select: str | list[str] | None = None,
    ignore: str | list[str] | None = None,
    **requirements: Any,
) -> Report:
    """`cudadoctor check`: every probe (or `only`/`skip` some: names as in `--only`), the rules and the
    gate. Requirements are the gate's options with underscores: `require_gpus=2`, `min_free_memory="8GiB"`,
    `min_compute_capability="8.0"`, `expect_torch_cuda="12.4"`, `require_cudnn=True`, `min_h2d_gbps=20`,
    `fail_on="warning"`. `python` diagnoses another interpreter's torch (a path). `select`/`ignore` are
    `--select`/`--ignore`: codes or prefixes ("CD147", ["CD1", "CD5"]); an ignored finding never changes
    the status and stays in `to_json()` with `"ignored": true`."""
    from cudadoctor import probes
    from cudadoctor.commands import check as cmd
    from cudadoctor.commands.config import KEYS

    allowed = {s.field for s in KEYS.values() if s.gate}
    unknown = sorted(set(requirements) - allowed)
    if unknown:
        raise UsageError(f"unknown requirement {', '.join(unknown)}; choose from {', '.join(sorted(allowed))}")
    gate = {
        k: (str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v) for k, v in requirements.items()
    }

    def run() -> Any:
        from cudadoctor.commands.options import names_option

        size = None
        if transfer_size is not None:
            from cudadoctor.knowledge.units import parse_size

            try:
                size = transfer_size if isinstance(transfer_size, int) else parse_size(str(transfer_size))
            except ValueError as exc:
                raise UsageError(f"transfer_size: {exc}") from None
        req, selection = cmd.settings(config, {**gate, "select": _names(select), "ignore": _names(ignore)})
        known = [p.name for p in probes.REGISTRY]
        chosen = probes.select(
            names_option("only", _names(only), known),
            names_option("skip", _names(skip), known),
            full,
            {"bandwidth"} if req.min_h2d_gbps is not None else None,
            probes.REGISTRY,
        )
        if not chosen:
            raise UsageError("only and skip leave no probe to run")
        target = python
        if any(p.where != probes.HERE for p in chosen):
            target = cmd._target_python(python, timeout)
        facts, outcomes = cmd.collect(chosen, target or sys.executable, timeout, size)
        from cudadoctor.rules import evaluate

        return cmd.judge(facts, outcomes, evaluate(facts, outcomes, req), req, selection)

    try:
        judged = _guarded(run)
        return Report(judged.report, redact, judged if judged.ignored else None)
    except ValueError as exc:  # ConfigError and requirement values
        if isinstance(exc, UsageError):
            raise
        raise UsageError(str(exc)) from None


def gpus(processes: bool = True, timeout: float = 10.0) -> list[NvmlDevice]:
    """The GPUs NVML sees now (index, name, uuid, memory_total/free/used in bytes, utilization_gpu,
    temperature_c, processes, …). Raises GpuQueryError when NVML cannot tell (no driver, a mismatch):
    an empty list would claim there is no GPU."""
    from cudadoctor.commands.gpus import _no_driver_finding, snapshot

    driver = snapshot(with_processes=processes, timeout=timeout)
    if driver.init_status != "ok":
        if driver.init_status in ("CRASHED", "HUNG"):
            raise GpuQueryError(f"NVML {driver.init_message}: the driver library itself failed")
        code, title = _no_driver_finding(driver)
        raise GpuQueryError(title, code)
    return list(driver.devices)


def pick(
    n: int = 1,
    *,
    min_free: str | int | None = None,
    min_cc: str | None = None,
    max_util: int | None = None,
    timeout: float = 10.0,
) -> list[str]:
    """Choose the n freest GPUs that qualify, among those CUDA_VISIBLE_DEVICES already shows, and set
    CUDA_VISIBLE_DEVICES to their UUIDs in this process, as `eval "$(cudadoctor gpus --pick N)"` does in a
    shell. Returns the UUIDs. Refuses once CUDA is initialised in this process (it reads the variable once,
    at initialisation: a later change would be silently ignored); raises NotEnoughGPUs when too few qualify."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise UsageError(f"n must be a whole number of GPUs, at least 1 (got {n!r})")
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    initialised = getattr(cuda, "is_initialized", None)
    if callable(initialised) and initialised():
        raise RuntimeError(
            "CUDA is already initialised in this process, so CUDA_VISIBLE_DEVICES can no longer change which "
            "GPUs it uses: call cudadoctor.pick() before the first CUDA call (restart the kernel in a notebook)"
        )
    free: int | None = None
    if min_free is not None:
        from cudadoctor.knowledge.units import parse_size

        try:
            free = min_free if isinstance(min_free, int) else parse_size(str(min_free))
        except ValueError as exc:
            raise UsageError(f"min_free: {exc}") from None
    from cudadoctor.commands.gpus import _shown
    from cudadoctor.commands.gpus_pick import pick as choose
    from cudadoctor.facts.nvml import DriverFacts

    devices = gpus(processes=False, timeout=timeout)
    candidates = _shown(DriverFacts(binding=None, library_loaded=True, init_status="ok", devices=devices))
    chosen = choose(candidates, n, free, max_util, min_cc)
    if not chosen.chosen:
        why = "; ".join(f"GPU {i}: {r}" for i, r in sorted(chosen.rejected.items()))
        raise NotEnoughGPUs(
            f"only {chosen.candidates} of {len(candidates)} GPUs qualify, {n} requested" + (f" ({why})" if why else ""),
            chosen.rejected,
        )
    uuids = [d.uuid for d in chosen.chosen if d.uuid]
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(uuids)
    return uuids


def triage(text: str) -> Report:
    """`cudadoctor triage`: a verdict from what someone pasted. Raises UsageError when the text holds
    nothing triage can read."""
    from cudadoctor.backends.paste import read
    from cudadoctor.commands.triage import NOTHING, diagnose
    from cudadoctor.locale import _

    if not isinstance(text, str):
        raise UsageError("triage takes the pasted text as a str")
    paste = read(text)
    if not text.strip() or paste.empty:
        raise UsageError(_(NOTHING))
    return Report(diagnose(paste))


def inspect_checkpoint(
    path: str | os.PathLike[str],
    *,
    model: str | None = None,
    python: str | None = None,
    timeout: float | None = None,
) -> Report:
    """`cudadoctor ckpt inspect`: why torch.load fails on a checkpoint, read without running its pickle
    (the torch half runs in a child of `python`, by default this interpreter)."""
    from cudadoctor.commands.ckpt import inspect_report

    return Report(_guarded(lambda: inspect_report(os.fspath(path), model, python, timeout)))
