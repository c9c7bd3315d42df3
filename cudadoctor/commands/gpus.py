"""`cudadoctor gpus`: NVML facts -> table, JSON or a CUDA_VISIBLE_DEVICES line. Never imports torch.

Start-up time is this command's product requirement (benchmarks/bench_gpus.py against nvitop): it
imports no rules, renderers beyond its table, or torch.
"""

from __future__ import annotations

import os
import sys
import time

import click

from cudadoctor import __version__
from cudadoctor.cli import echo, fail, run_command, size_option
from cudadoctor.commands.gpus_pick import SHELLS, SORT_KEYS, export_lines, sort_devices
from cudadoctor.commands.gpus_pick import pick as pick_gpus
from cudadoctor.facts.codec import to_jsonable
from cudadoctor.facts.nvml import DriverFacts
from cudadoctor.knowledge.versions import cuda_int_to_str
from cudadoctor.knowledge.visibility import parse
from cudadoctor.probes import Context, Probe, run_probes
from cudadoctor.report import EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_NOT_ENOUGH_GPUS, EXIT_OK, EXIT_PROBLEMS

NVML_TIMEOUT = 15.0


def _json(data: dict, indent: int | None = 2) -> str:
    import json  # only for --json: the table path stays lean

    return json.dumps(data, indent=indent)


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _out(text: str) -> None:
    echo(text)


def _err(text: str) -> None:
    echo(text, err=True)


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
    help="Print the line that selects the N GPUs with the most free memory, instead of the table.",
)
@click.option("--min-free", callback=size_option, metavar="SIZE", help="With --pick: at least this much free (8GiB).")
@click.option("--max-util", type=click.IntRange(0, 100), metavar="PCT", help="With --pick: at most this utilisation.")
@click.option(
    "--format",
    "by",
    type=click.Choice(("uuid", "index")),
    default="uuid",
    help="With --pick: by UUID (order-proof, default) or by index (sets CUDA_DEVICE_ORDER=PCI_BUS_ID).",
)
@click.option("--shell", type=click.Choice(SHELLS), default="sh", help="With --pick: the shell syntax (default sh).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--watch", type=click.FloatRange(min=0.1), metavar="SECONDS", help="Refresh until Ctrl-C.")
def gpus(
    sort_by: str,
    sort_by_free: bool,
    reverse: bool,
    pick: int | None,
    min_free: int | None,
    max_util: int | None,
    by: str,
    shell: str,
    as_json: bool,
    watch: float | None,
) -> None:
    """The GPUs, their free memory and who holds it; --pick N prints a ready CUDA_VISIBLE_DEVICES.

    NVML only: torch is never imported.
    """
    if pick is None and (min_free is not None or max_util is not None or by != "uuid" or shell != "sh"):
        fail("--min-free, --max-util, --format and --shell go with --pick N")
    if watch is not None and pick is not None:
        fail("--watch shows the table; it does not go with --pick")
    run_command(
        run_gpus, "free" if sort_by_free else sort_by, reverse, pick, min_free, max_util, by, shell, as_json, watch
    )


def _collect_driver(ctx: Context) -> DriverFacts:
    from cudadoctor.backends.nvml import query_driver
    from cudadoctor.backends.procinfo import describe_processes

    facts = query_driver(with_processes=True, with_binding=False)
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


def _snapshot() -> tuple[DriverFacts | None, str | None]:
    results, outcomes = run_probes([Probe("driver", _collect_driver, NVML_TIMEOUT)], Context())
    if "driver" not in results:
        return None, outcomes[0].error
    return results["driver"], None


def run_gpus(
    sort_by: str,
    reverse: bool,
    n: int | None,
    min_free: int | None,
    max_util: int | None,
    by: str,
    shell: str,
    as_json: bool,
    watch: float | None,
) -> int:
    if watch is not None:
        return _watch(sort_by, reverse, as_json, watch)
    driver, problem = _snapshot()
    if driver is None:
        _err(f"cudadoctor: CD002 the NVML query {problem}")
        return EXIT_INCOMPLETE
    if driver.init_status != "ok":
        code, title = _no_driver_finding(driver)
        if as_json:
            _out(_json(_envelope(driver, None, {"code": code, "title": title}), indent=2))
        else:
            _err(f"cudadoctor: {code} {title} (run `cudadoctor check` for the fix)")
        return EXIT_PROBLEMS
    devices = sort_devices(driver.devices, sort_by, reverse)
    if n is None:
        if as_json:
            _out(_json(_envelope(driver, devices), indent=2))
        else:
            _out(_table(driver, devices))
        return EXIT_OK
    chosen = pick_gpus(driver.devices, n, min_free, max_util)
    if as_json:
        data = _envelope(driver, devices)
        data["pick"] = {
            "requested": n,
            "qualified": chosen.candidates,
            "chosen": [d.uuid if by == "uuid" else d.index for d in chosen.chosen],
            "lines": export_lines(chosen.chosen, by, shell) if chosen.chosen else [],
            "rejected": {str(k): v for k, v in chosen.rejected.items()},
        }
        _out(_json(data, indent=2))
    elif chosen.chosen:
        _out("\n".join(export_lines(chosen.chosen, by, shell)))
    if not chosen.chosen:
        why = "; ".join(f"GPU {i}: {r}" for i, r in sorted(chosen.rejected.items()))
        _err(
            f"cudadoctor: only {chosen.candidates} of {len(driver.devices)} GPUs qualify, {n} requested"
            + (f" ({why})" if why else ""),
        )
        return EXIT_NOT_ENOUGH_GPUS
    return EXIT_OK


def _table(driver: DriverFacts, devices: list) -> str:
    from cudadoctor.render.gpus_table import render

    vis = parse(os.environ.get("CUDA_VISIBLE_DEVICES"), driver.devices, os.environ.get("CUDA_DEVICE_ORDER"))
    return render(devices, vis, driver.driver_version, cuda_int_to_str(driver.cuda_driver_version))


def _envelope(driver: DriverFacts, devices: list | None, error: dict | None = None) -> dict:
    vis = parse(os.environ.get("CUDA_VISIBLE_DEVICES"), driver.devices, os.environ.get("CUDA_DEVICE_ORDER"))
    ordinal = {s.device.index: s.ordinal for s in vis.selected if s.mig_uuid is None}
    gpus = []
    for d in devices or []:
        item = to_jsonable(d)
        item["cuda_ordinal"] = ordinal.get(d.index)  # None: hidden from CUDA programs here
        gpus.append(item)
    return {
        "schema_version": 1,
        "tool": "cudadoctor",
        "version": __version__,
        "created": _now(),
        "command": "gpus",
        "driver_version": driver.driver_version,
        "cuda_driver_version": cuda_int_to_str(driver.cuda_driver_version),
        "cuda_visible_devices": vis.raw,
        "cuda_device_order": vis.order,
        "gpus": gpus,
        "error": error,
    }


def _watch(sort_by: str, reverse: bool, as_json: bool, interval: float) -> int:
    clear = "\x1b[H\x1b[2J" if sys.stdout.isatty() and not as_json else ""
    try:
        while True:
            driver, problem = _snapshot()
            if driver is None or driver.init_status != "ok":
                text = f"cudadoctor: {problem or (driver.init_status if driver else 'no NVML')}"
            elif as_json:
                text = _json(_envelope(driver, sort_devices(driver.devices, sort_by, reverse)), indent=None)
            else:
                stamp = time.strftime("%H:%M:%S")
                text = f"{stamp}  every {interval:g} s, Ctrl-C to stop\n" + _table(
                    driver, sort_devices(driver.devices, sort_by, reverse)
                )
            _out(clear + text + ("" if clear else "\n"))
            time.sleep(interval)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
