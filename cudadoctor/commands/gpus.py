"""`cudadoctor gpus`: NVML facts -> table, JSON or a CUDA_VISIBLE_DEVICES line. Never imports torch.

Start-up time is this command's product requirement (benchmarks/bench_gpus.py against nvitop): it
imports no rules, no rich, no report.py and no torch. NVML runs in a forked child
(backends/nvml_isolated.py), so a crash inside the driver library is one line naming the call (exit 3)
and a hung call keeps the GPUs already read. __main__ forks that child before click is even imported,
so the two start-ups overlap; the table's modules are imported while the child queries; the process
ends with os._exit once everything is written (the interpreter's teardown would cost ~30 ms).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from dataclasses import dataclass
from typing import Any, NoReturn

import click

from cudadoctor.commands.gpus_pick import SHELLS, SORT_KEYS, export_lines, sort_devices
from cudadoctor.commands.gpus_pick import pick as pick_gpus
from cudadoctor.commands.options import Seconds, build, size_option
from cudadoctor.commands.output import echo, fail, flush_output, run_command
from cudadoctor.exitcodes import EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_NOT_ENOUGH_GPUS, EXIT_OK, EXIT_PROBLEMS
from cudadoctor.facts.nvml import SICK_ERRORS, DriverFacts, NvmlDevice
from cudadoctor.knowledge.versions import cuda_int_to_str
from cudadoctor.knowledge.visibility import Visibility, parse
from cudadoctor.locale import _, ngettext
from cudadoctor.version import __version__

NVML_TIMEOUT = 15.0
WAIT_DEFAULT = 3600.0  # `--pick N --wait` alone: at most an hour, then exit 4 as --pick does
WAIT_POLL = 2.0  # seconds between NVML queries while waiting (each is one short child)


@dataclass(frozen=True)
class GpusOptions:
    """What `gpus` was asked: one field per option (the old spelling --format and --sort-by-free folded in)."""

    sort_by: str = "index"
    reverse: bool = False
    pick: int | None = None
    min_free: int | None = None
    max_util: int | None = None
    min_cc: str | None = None
    by: str = "uuid"
    shell: str = "sh"
    wait: float | None = None
    as_json: bool = False
    wide: bool = False
    redact: bool = False
    watch: float | None = None
    timeout: float = NVML_TIMEOUT


def _json(data: dict, indent: int | None = 2) -> str:
    import json  # only for --json: the table path stays lean

    return json.dumps(data, indent=indent)


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


@click.command()
@click.option(
    "--sort-by",
    type=click.Choice(SORT_KEYS),
    default="index",
    help="Order of the table (free, used, util, temp: largest first; default index).",
)
@click.option("--sort-by-free", is_flag=True, help="Same as --sort-by free.")
@click.option("--reverse", is_flag=True, help="Reverse the order.")
@click.option(
    "--pick",
    type=click.IntRange(min=1),
    metavar="N",
    help="Print the line that selects the N GPUs with the most free memory (among those CUDA_VISIBLE_DEVICES "
    'already shows), instead of the table; use it as: eval "$(cudadoctor gpus --pick N)".',
)
@click.option("--min-free", callback=size_option, metavar="SIZE", help="With --pick: at least this much free (8GiB).")
@click.option("--max-util", type=click.IntRange(0, 100), metavar="PCT", help="With --pick: at most this utilisation.")
@click.option("--min-cc", metavar="X.Y", help="With --pick: at least this compute capability (8.0 for bf16).")
@click.option(
    "--by",
    "by",
    type=click.Choice(("uuid", "index")),
    default="uuid",
    help="With --pick: select by UUID (order-proof, default) or by index (sets CUDA_DEVICE_ORDER=PCI_BUS_ID).",
)
# --format is the report's format in every other command: this spelling of --by stays, hidden, for scripts
@click.option("--format", "legacy_by", type=click.Choice(("uuid", "index")), hidden=True)
@click.option("--shell", type=click.Choice(SHELLS), default="sh", help="With --pick: the shell syntax (default sh).")
@click.option(
    "--wait",
    type=Seconds(min=0.1),
    is_flag=False,
    flag_value=WAIT_DEFAULT,
    default=None,
    metavar="[SECONDS]",
    help=f"With --pick: wait until N GPUs qualify (at most SECONDS, default {WAIT_DEFAULT:g}), then print the "
    "selection; exit 4 when the time runs out.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output, every field.")
@click.option("--wide", is_flag=True, help="Every column, whole names and UUIDs, whatever the width.")
@click.option("--redact", is_flag=True, help="Replace UUIDs and user names (to paste the output somewhere).")
@click.option("--watch", type=Seconds(min=0.1), metavar="SECONDS", help="Refresh until Ctrl-C.")
@click.option(
    "--timeout",
    type=Seconds(min=0.5),
    default=NVML_TIMEOUT,
    metavar="SECONDS",
    help="Bound on the NVML query; a GPU whose calls take half of it counts as hung and is skipped.",
)
def gpus(**o: Any) -> None:
    """The GPUs, their free memory and who holds it; --pick N prints a ready CUDA_VISIBLE_DEVICES.

    NVML only: torch is never imported.

    \b
    CUDA: the cuda:N number; hidden (CUDA_VISIBLE_DEVICES hides it); lost
      (fallen off the bus, GPU_IS_LOST: exit 1); crashed or hung (NVML failed
      in the call named for that GPU; the other GPUs are still read: exit 3);
      ? (unknown while such a GPU may or may not count).
    HEALTH: ok, or L lost, E uncorrectable ECC errors, F row remap failed,
      R reset needed, T thermal slowdown, P power brake, S hardware slowdown,
      X exclusive or prohibited compute mode; ? not reported.
    At 80 columns a column that shows a problem (TEMP from 85C, a HEALTH
    letter, a narrowed PCIe link) is never the one left out.
    """
    legacy = o.pop("legacy_by")
    if legacy is not None:
        echo(_("cudadoctor: note: gpus --format {value} is now --by {value}").format(value=legacy), err=True)
        o["by"] = legacy
    o["sort_by"] = "free" if o.pop("sort_by_free") else o["sort_by"]
    opts = build(GpusOptions, o)
    _refuse_conflicts(opts)
    if opts.watch is not None:
        run_command(run_gpus, opts)
    code = run_gpus(opts)
    flush_output()  # a full disk or a closed pipe is reported here, as for every command
    _exit_now(code)


def _refuse_conflicts(o: GpusOptions) -> None:
    if o.pick is None and (
        o.min_free is not None
        or o.max_util is not None
        or o.min_cc
        or o.by != "uuid"
        or o.shell != "sh"
        or o.wait is not None
    ):
        fail(_("--min-free, --max-util, --min-cc, --by, --shell and --wait go with --pick N"))
    if o.watch is not None and o.pick is not None:
        fail(_("--watch shows the table; it does not go with --pick"))
    if o.min_cc is not None:
        from cudadoctor.knowledge.architectures import parse_cc

        if parse_cc(o.min_cc) is None:
            fail(_("--min-cc: {value} is not a compute capability like 8.0").format(value=repr(o.min_cc)))


def _exit_now(code: int) -> NoReturn:
    """Exit without the interpreter's teardown of every module and object (~30 ms, a tenth of the command):
    everything is written and no child is left. Only in the doctor's own process (not a caller's of
    cli.main), and not under coverage, whose exit hook must run."""
    if not getattr(sys.modules.get("cudadoctor.__main__"), "ENTRY_POINT", False) or "coverage" in sys.modules:
        sys.exit(code)
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)


def snapshot(with_processes: bool, timeout: float = NVML_TIMEOUT) -> DriverFacts:
    from cudadoctor.backends.nvml_isolated import query

    if with_processes:
        from cudadoctor.backends.procinfo import describe_processes
    facts = query(with_processes=with_processes, with_binding=False, timeout=timeout)
    if with_processes:
        describe_processes([p for d in facts.devices for p in d.processes])
    return facts


def _no_driver_finding(driver: DriverFacts) -> tuple[str, str]:
    """The same finding `check` gives for this driver state: (code, title)."""
    from cudadoctor.backends.host import pci_facts, system_facts
    from cudadoctor.facts import Facts
    from cudadoctor.rules import driver as driver_rules

    facts = Facts(system=system_facts(os.environ), pci=pci_facts(), driver=driver)
    found = driver_rules.evaluate(facts)
    worst = next((f for f in found if f.severity.value == "error"), found[0] if found else None)
    return (worst.code, worst.title) if worst else ("CD107", f"NVML: {driver.init_status}")


def _visibility(driver: DriverFacts) -> Visibility:
    return parse(os.environ.get("CUDA_VISIBLE_DEVICES"), driver.devices, os.environ.get("CUDA_DEVICE_ORDER"))


def _problem(driver: DriverFacts) -> tuple[str, int] | None:
    """A line for stderr and the exit code when the table cannot be trusted whole."""
    if driver.init_status in ("CRASHED", "HUNG"):
        line = _("NVML {message}: the driver library itself failed (run `cudadoctor check`)")
        return "cudadoctor: " + line.format(message=driver.init_message), 3
    if driver.init_status != "ok":
        from cudadoctor.render.localize import title as localized

        code, title = _no_driver_finding(driver)
        line = _("{code} {title} (run `cudadoctor check` for the fix)").format(code=code, title=localized(code, title))
        return f"cudadoctor: {line}", EXIT_PROBLEMS
    if driver.device_count is None:
        why = driver.query_errors.get("nvmlDeviceGetCount", driver.query_failure or "no answer")
        line = _("NVML could not count the GPUs (nvmlDeviceGetCount: {why})").format(why=why)
        return f"cudadoctor: {line}", EXIT_INCOMPLETE
    if driver.query_failure:
        unread = driver.device_count - len(driver.devices)
        if unread > 0:
            line = _("NVML {failure}; {unread} GPU(s) not shown").format(failure=driver.query_failure, unread=unread)
            return f"cudadoctor: {line}", EXIT_INCOMPLETE
        if any(d.error in SICK_ERRORS for d in driver.devices):  # named in its row; the others are read
            line = _("NVML {failure}; the other GPUs are shown").format(failure=driver.query_failure)
            return f"cudadoctor: {line}", EXIT_INCOMPLETE
    lost = [d for d in driver.devices if d.error and d.error not in SICK_ERRORS]
    if lost:  # a GPU fallen off the bus is a problem, as `check` says (CD105)
        which = _(", ").join(f"GPU {d.index} ({d.error})" for d in lost)
        line = _("{gpus} cannot be used: run `cudadoctor check` for the fix").format(gpus=which)
        return f"cudadoctor: {line}", EXIT_PROBLEMS
    if driver.query_failure:
        return "cudadoctor: " + _("note: NVML {failure}").format(failure=driver.query_failure), EXIT_OK
    return None


def _health_flags(d: NvmlDevice) -> str:
    from cudadoctor.knowledge.gpu_health import health_flags

    return health_flags(d)


def _scrub(redact: bool) -> Any:
    """The one redaction `check --redact` makes too (render/redact.py), for this host and user."""
    if not redact:
        return lambda key, text: text
    from cudadoctor.backends.procinfo import identity
    from cudadoctor.render.redact import field_scrub

    return field_scrub(*identity())


def _table(driver: DriverFacts, devices: list[NvmlDevice], wide: bool, redact: bool) -> str:
    from cudadoctor.render.gpus_table import render

    width = shutil.get_terminal_size((80, 24)).columns if sys.stdout.isatty() else 80
    return render(
        devices,
        _visibility(driver),
        driver.driver_version,
        cuda_int_to_str(driver.cuda_driver_version),
        width=width,
        wide=wide,
        flags=_health_flags,
        scrub=_scrub(redact),
    )


def _envelope(driver: DriverFacts, devices: list[NvmlDevice] | None, redact: bool, error: dict | None = None) -> dict:
    from cudadoctor.facts.codec import to_jsonable
    from cudadoctor.knowledge.secrets import mask_secrets

    vis = _visibility(driver)
    ordinal = {s.device.index: s.ordinal for s in vis.selected if s.mig_uuid is None}
    # CUDA may or may not count a GPU whose NVML query crashed or hung: the ordinals are then unknown
    sick = any(d.error in SICK_ERRORS for d in driver.devices)
    gpus = []
    for d in devices or []:
        item = to_jsonable(d)
        item["cuda_ordinal"] = None if sick else ordinal.get(d.index)  # None: hidden, lost or unknown
        item["health"] = _health_flags(d)
        for p in item["processes"]:
            p["command"] = mask_secrets(p["command"]) if p["command"] else None
        gpus.append(item)
    data = {
        "schema_version": 2,
        "tool": "cudadoctor",
        "version": __version__,
        "created": _now(),
        "command": "gpus",
        "driver_version": driver.driver_version,
        "cuda_driver_version": cuda_int_to_str(driver.cuda_driver_version),
        "cuda_visible_devices": vis.raw,
        "cuda_device_order": vis.order,
        "gpus": gpus,
        # system queries NVML answered with an error (each GPU's are in its "unsupported")
        "query_errors": driver.query_errors,
        "query_failure": driver.query_failure,
        "error": error,
    }
    if redact:
        from cudadoctor.backends.procinfo import identity
        from cudadoctor.render.redact import redact as redact_data

        data = redact_data(data, *identity())
    return data


def run_gpus(o: GpusOptions) -> int:
    if o.watch is not None:
        return _watch(o, o.watch)
    if o.pick is not None and o.wait is not None:
        return _wait_for(o, o.pick, o.wait)
    if o.pick is None and not o.as_json:  # imported while the NVML child (started by __main__) still queries
        import cudadoctor.knowledge.gpu_health
        import cudadoctor.render.gpus_table  # noqa: F401
    # --pick needs no process details (who holds memory): skip reading them
    driver = snapshot(with_processes=o.pick is None or o.as_json, timeout=o.timeout)
    problem = _problem(driver)
    if problem is not None and (driver.init_status != "ok" or driver.device_count is None):
        line, code = problem
        if o.as_json:
            echo(_json(_envelope(driver, None, o.redact, {"message": line.removeprefix("cudadoctor: ")})))
        else:
            echo(line, err=True)
        return code
    devices = sort_devices(driver.devices, o.sort_by, o.reverse)
    if o.pick is None:
        echo(_json(_envelope(driver, devices, o.redact)) if o.as_json else _table(driver, devices, o.wide, o.redact))
        if problem is not None:
            echo(problem[0], err=True)
            return problem[1]
        return EXIT_OK
    return _pick(o, driver, devices, o.pick)


def _pick(o: GpusOptions, driver: DriverFacts, devices: list[NvmlDevice], n: int) -> int:
    candidates = _shown(driver)
    chosen = pick_gpus(candidates, n, o.min_free, o.max_util, o.min_cc)
    hidden = len(driver.devices) - len(candidates)
    if o.as_json:
        data = _envelope(driver, devices, o.redact)
        data["pick"] = {
            "requested": n,
            "qualified": chosen.candidates,
            "chosen": [d.uuid if o.by == "uuid" else d.index for d in chosen.chosen],
            "lines": export_lines(chosen.chosen, o.by, o.shell) if chosen.chosen else [],
            "rejected": {str(k): v for k, v in chosen.rejected.items()},
        }
        echo(_json(data))
    elif chosen.chosen:
        echo("\n".join(export_lines(chosen.chosen, o.by, o.shell)))
    if not chosen.chosen:
        from cudadoctor.render.localize import label

        why = _("; ").join(f"GPU {i}: {label(r)}" for i, r in sorted(chosen.rejected.items()))
        within = _(" (CUDA_VISIBLE_DEVICES hides {hidden})").format(hidden=hidden) if hidden else ""
        line = _("only {qualified} of {count} GPUs qualify{within}, {requested} requested").format(
            qualified=chosen.candidates, count=len(candidates), within=within, requested=n
        )
        echo("cudadoctor: " + line + (_(" ({why})").format(why=why) if why else ""), err=True)
        return EXIT_NOT_ENOUGH_GPUS
    return EXIT_OK


def _shown(driver: DriverFacts) -> list[NvmlDevice]:
    """Like nvisel: --pick chooses among the GPUs this environment already shows (CUDA_VISIBLE_DEVICES)."""
    vis = _visibility(driver)
    return [s.device for s in vis.selected if s.mig_uuid is None] if vis.raw is not None else driver.devices


def _qualifying(driver: DriverFacts, n: int, min_free: int | None, max_util: int | None, min_cc: str | None) -> Any:
    """The selection --pick would make now, and from how many GPUs."""
    candidates = _shown(driver)
    return pick_gpus(candidates, n, min_free, max_util, min_cc), len(candidates)


def _never(driver: DriverFacts, n: int, min_free: int | None, min_cc: str | None) -> str | None:
    """Why N GPUs can never qualify however long one waits (too few GPUs are visible, or too few could ever
    have that much memory free or that compute capability), or None. Memory in use, utilisation and a GPU that
    is sick now may change; the number of GPUs, their total memory and their capability do not."""
    from cudadoctor.knowledge.architectures import parse_cc

    candidates = _shown(driver)
    need_cc = parse_cc(min_cc)
    could = [
        d
        for d in candidates
        if not d.mig_enabled
        and (min_free is None or d.memory_total is None or d.memory_total >= min_free)
        and (need_cc is None or (cc := parse_cc(d.compute_capability)) is None or cc >= need_cc)
    ]
    if len(could) >= n:
        return None
    if not could:
        return ngettext(
            "no GPU here can ever qualify ({count} GPU seen): waiting cannot help",
            "no GPU here can ever qualify ({count} GPUs seen): waiting cannot help",
            len(candidates),
        ).format(count=len(candidates))
    # here n > len(could) >= 1, so "GPUs" is always plural
    return _("{n} GPUs requested but only {could} can ever qualify (of {count} here): waiting cannot help").format(
        could=len(could), count=len(candidates), n=n
    )


def _wait_for(o: GpusOptions, n: int, wait: float) -> int:
    """`--pick N --wait`: query NVML every few seconds until N GPUs qualify or the time runs out; a status
    line on a terminal's stderr meanwhile (never in a pipe), then the same output and exit code as --pick."""
    start = time.monotonic()
    status = sys.stderr.isatty()
    width = shutil.get_terminal_size((80, 24)).columns - 1

    def show(text: str) -> None:
        if status:
            sys.stderr.write("\r" + text[:width].ljust(width) + "\r")
            sys.stderr.flush()

    try:
        while True:
            driver = snapshot(with_processes=False, timeout=o.timeout)
            problem = _problem(driver)
            if problem is not None and (driver.init_status != "ok" or driver.device_count is None):
                show("")
                echo(problem[0], err=True)
                return problem[1]
            chosen, count = _qualifying(driver, n, o.min_free, o.max_util, o.min_cc)
            waited = time.monotonic() - start
            never = _never(driver, n, o.min_free, o.min_cc)
            if never is not None:  # waiting cannot help: say so now, not after an hour
                show("")
                echo("cudadoctor: " + never, err=True)
                return EXIT_NOT_ENOUGH_GPUS
            if chosen.chosen or waited >= wait:
                show("")
                if not chosen.chosen:
                    line = ngettext(
                        "waited {seconds} s for {n} GPU to qualify", "waited {seconds} s for {n} GPUs to qualify", n
                    ).format(seconds=f"{waited:.0f}", n=n)
                    echo("cudadoctor: " + line, err=True)
                devices = sort_devices(driver.devices, "index", False)
                return _pick(o, driver, devices, n)
            show(
                _(
                    "Waiting for {n} GPUs: {qualified} of {count} qualify now; {waited} of {wait} s, Ctrl-C to stop"
                ).format(n=n, qualified=chosen.candidates, count=count, waited=f"{waited:.0f}", wait=f"{wait:g}")
            )
            time.sleep(max(0.0, min(WAIT_POLL, wait - waited)))
    except KeyboardInterrupt:
        show("")
        return EXIT_INTERRUPTED


def _watch(o: GpusOptions, interval: float) -> int:
    clear = "\x1b[H\x1b[2J" if sys.stdout.isatty() and not o.as_json else ""
    try:
        while True:
            driver = snapshot(with_processes=True, timeout=o.timeout)
            devices = sort_devices(driver.devices, o.sort_by, o.reverse)
            problem = _problem(driver)
            if problem is not None and (driver.init_status != "ok" or driver.device_count is None):
                text = problem[0]
            elif o.as_json:
                text = _json(_envelope(driver, devices, o.redact), indent=None)
            else:
                stamp = time.strftime("%H:%M:%S")
                every = _("{stamp}  every {interval} s, Ctrl-C to stop").format(stamp=stamp, interval=f"{interval:g}")
                text = every + "\n" + _table(driver, devices, o.wide, o.redact)
            echo(clear + text + ("" if clear or o.as_json else "\n"))
            sys.stdout.flush()
            time.sleep(interval)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
