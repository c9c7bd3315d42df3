"""`cudadoctor gpus`: NVML facts -> table, JSON or a CUDA_VISIBLE_DEVICES line. Never imports torch."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time

import click

from cudadoctor import __version__, exitcodes
from cudadoctor.facts_nvml import DriverFacts
from cudadoctor.probes import Context, Probe
from cudadoctor.runner import run_probes
from cudadoctor.selection import export_lines, sort_devices
from cudadoctor.selection import pick as pick_gpus
from cudadoctor.serial import to_jsonable
from cudadoctor.versions import cuda_int_to_str
from cudadoctor.visible_devices import parse

NVML_TIMEOUT = 15.0


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
        click.echo(f"cudadoctor: CD002 the NVML query {problem}", err=True)
        return exitcodes.INCOMPLETE
    if driver.init_status != "ok":
        code, title = _no_driver_finding(driver)
        if as_json:
            click.echo(json.dumps(_envelope(driver, None, {"code": code, "title": title}), indent=2))
        else:
            click.echo(f"cudadoctor: {code} {title} (run `cudadoctor check` for the fix)", err=True)
        return exitcodes.PROBLEMS
    devices = sort_devices(driver.devices, sort_by, reverse)
    if n is None:
        if as_json:
            click.echo(json.dumps(_envelope(driver, devices), indent=2))
        else:
            click.echo(_table(driver, devices))
        return exitcodes.OK
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
        click.echo(json.dumps(data, indent=2))
    elif chosen.chosen:
        click.echo("\n".join(export_lines(chosen.chosen, by, shell)))
    if not chosen.chosen:
        why = "; ".join(f"GPU {i}: {r}" for i, r in sorted(chosen.rejected.items()))
        click.echo(
            f"cudadoctor: only {chosen.candidates} of {len(driver.devices)} GPUs qualify, {n} requested"
            + (f" ({why})" if why else ""),
            err=True,
        )
        return exitcodes.NOT_ENOUGH_GPUS
    return exitcodes.OK


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
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
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
                text = json.dumps(_envelope(driver, sort_devices(driver.devices, sort_by, reverse)))
            else:
                stamp = time.strftime("%H:%M:%S")
                text = f"{stamp}  every {interval:g} s, Ctrl-C to stop\n" + _table(
                    driver, sort_devices(driver.devices, sort_by, reverse)
                )
            click.echo(clear + text + ("" if clear else "\n"))
            time.sleep(interval)
    except KeyboardInterrupt:
        return exitcodes.OK
