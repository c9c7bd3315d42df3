"""`cudadoctor gpus`: NVML facts -> table, JSON or a CUDA_VISIBLE_DEVICES line. Never imports torch.

Its options are parsed with argparse, not click: the launcher routes `cudadoctor gpus` here without
importing click at all, because this command's start-up time is a product requirement (a benchmark
against nvitop, benchmarks/bench_gpus.py). The click group forwards to main() for in-process use.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from cudadoctor import __version__, exitcodes
from cudadoctor.facts_nvml import DriverFacts
from cudadoctor.probes import Context, Probe
from cudadoctor.runner import run_probes
from cudadoctor.selection import SHELLS, SORT_KEYS, export_lines, sort_devices
from cudadoctor.selection import pick as pick_gpus
from cudadoctor.serial import to_jsonable
from cudadoctor.versions import cuda_int_to_str
from cudadoctor.visible_devices import parse

NVML_TIMEOUT = 15.0


def _json(data: dict, indent: int | None = 2) -> str:
    import json  # only for --json: the table path stays lean

    return json.dumps(data, indent=indent)


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")


def _size(text: str) -> int:
    from cudadoctor.units import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _at_least(minimum: float, kind: type):  # type: ignore[no-untyped-def]
    def parse(text: str):  # type: ignore[no-untyped-def]
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {kind.__name__}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text} is below {minimum:g}")
        return value

    return parse


def _percent(text: str) -> int:
    value = _at_least(0, int)(text)
    if value > 100:
        raise argparse.ArgumentTypeError(f"{text} is above 100")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cudadoctor gpus",
        description="The GPUs, their free memory and who holds it; --pick N prints a ready CUDA_VISIBLE_DEVICES. "
        "NVML only: torch is never imported.",
    )
    p.add_argument(
        "--sort-by",
        choices=SORT_KEYS,
        default="index",
        help="order of the table (free, used, util, temp: largest first; default index)",
    )
    p.add_argument("--sort-by-free", action="store_true", help="same as --sort-by free")
    p.add_argument("--reverse", action="store_true", help="reverse the order")
    p.add_argument(
        "--pick",
        type=_at_least(1, int),
        metavar="N",
        help="print the line that selects the N GPUs with the most free memory, instead of the table",
    )
    p.add_argument("--min-free", type=_size, metavar="SIZE", help="with --pick: at least this much free (8GiB, 8G)")
    p.add_argument("--max-util", type=_percent, metavar="PCT", help="with --pick: at most this utilisation")
    p.add_argument(
        "--format",
        dest="by",
        choices=("uuid", "index"),
        default="uuid",
        help="with --pick: by UUID (order-proof, default) or by index (with CUDA_DEVICE_ORDER=PCI_BUS_ID)",
    )
    p.add_argument("--shell", choices=SHELLS, default="sh", help="with --pick: the shell syntax (default sh)")
    p.add_argument("--json", dest="as_json", action="store_true", help="machine-readable output")
    p.add_argument("--watch", type=_at_least(0.1, float), metavar="SECONDS", help="refresh until Ctrl-C")
    return p


def main(argv: list[str]) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)  # exits 2 (exitcodes.USAGE) with a usage line on bad input
    if a.pick is None and (a.min_free is not None or a.max_util is not None or a.by != "uuid" or a.shell != "sh"):
        parser.error("--min-free, --max-util, --format and --shell go with --pick N")
    if a.watch is not None and a.pick is not None:
        parser.error("--watch shows the table; it does not go with --pick")
    sort_by = "free" if a.sort_by_free else a.sort_by
    return run_gpus(sort_by, a.reverse, a.pick, a.min_free, a.max_util, a.by, a.shell, a.as_json, a.watch)


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
        return exitcodes.INCOMPLETE
    if driver.init_status != "ok":
        code, title = _no_driver_finding(driver)
        if as_json:
            _out(_json(_envelope(driver, None, {"code": code, "title": title}), indent=2))
        else:
            _err(f"cudadoctor: {code} {title} (run `cudadoctor check` for the fix)")
        return exitcodes.PROBLEMS
    devices = sort_devices(driver.devices, sort_by, reverse)
    if n is None:
        if as_json:
            _out(_json(_envelope(driver, devices), indent=2))
        else:
            _out(_table(driver, devices))
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
        _out(_json(data, indent=2))
    elif chosen.chosen:
        _out("\n".join(export_lines(chosen.chosen, by, shell)))
    if not chosen.chosen:
        why = "; ".join(f"GPU {i}: {r}" for i, r in sorted(chosen.rejected.items()))
        _err(
            f"cudadoctor: only {chosen.candidates} of {len(driver.devices)} GPUs qualify, {n} requested"
            + (f" ({why})" if why else ""),
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
        return exitcodes.OK
