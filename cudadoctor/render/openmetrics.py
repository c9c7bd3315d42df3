"""The report as OpenMetrics text, for Prometheus through node_exporter's textfile collector.

Only gauges: their exposition is the same in the Prometheus text format (what the textfile collector
parses) and in OpenMetrics (what `# EOF` closes; to the Prometheus parser it is a comment), so one file
serves both. Values are in base units (bytes, seconds, bytes per second, a 0-1 ratio). A fact nobody could
learn is no sample at all, never 0: an absent series is what Prometheus calls unknown.

Rendered from the JSON-ready report data (render/redact.report_data), so `--redact` and `check --from`
give metrics too."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

STATUSES = ("healthy", "warnings", "problems", "incomplete")
SEVERITIES = ("error", "warning", "info", "ok")
PREFIX = "cudadoctor_"


class _Family:
    def __init__(self, name: str, help_text: str, unit: str = "") -> None:
        self.name = PREFIX + name
        self.help = help_text
        self.unit = unit
        self.samples: list[tuple[dict[str, str], float]] = []

    def add(self, value: float | int | bool | None, **labels: Any) -> None:
        if value is None:
            return
        clean = {k: str(v) for k, v in labels.items() if v is not None and v != ""}
        self.samples.append((clean, float(value)))

    def lines(self) -> list[str]:
        if not self.samples:
            return []
        out = [f"# HELP {self.name} {_escape_help(self.help)}", f"# TYPE {self.name} gauge"]
        if self.unit:
            out.append(f"# UNIT {self.name} {self.unit}")
        seen: set[tuple[tuple[str, str], ...]] = set()
        for labels, value in self.samples:
            key = tuple(sorted(labels.items()))
            if key in seen:  # one sample per label set: a duplicate makes the whole file unreadable
                continue
            seen.add(key)
            out.append(f"{self.name}{_labels(labels)} {_number(value)}")
        return out


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items())) + "}"


def _number(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _timestamp(created: str | None) -> float | None:
    if not created:
        return None
    try:
        when = dt.datetime.fromisoformat(created)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return when.timestamp()


def _gpu_label(device: dict[str, Any]) -> str:
    return str(device.get("index"))


# the process lists NVML gives per GPU (backends/nvml.py names a failed one in the device's `unsupported`)
_PROCESS_LISTS = ("compute_processes", "graphics_processes")


def _processes_listed(device: dict[str, Any]) -> bool:
    """Whether NVML listed this GPU's processes: a failed or missing list is an unknown count, not 0."""
    unsupported = device.get("unsupported") or {}
    return isinstance(device.get("processes"), list) and not any(k in unsupported for k in _PROCESS_LISTS)


def render(data: dict[str, Any]) -> str:
    """The metrics text for one report's data; ends with `# EOF`."""
    families = list(_families(data))
    lines: list[str] = []
    for family in families:
        lines += family.lines()
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def _families(data: dict[str, Any]) -> Iterable[_Family]:
    facts = data.get("facts") or {}

    info = _Family("info", "The cudadoctor that wrote these metrics and the command it ran.")
    info.add(1, version=data.get("version"), command=data.get("command"), schema_version=data.get("schema_version"))
    yield info

    when = _Family("check_timestamp_seconds", "When the check ran (Unix time).", "seconds")
    when.add(_timestamp(data.get("created")))
    yield when

    status = _Family("status", "The verdict: 1 for the report's status, 0 for the others.")
    for name in STATUSES:
        status.add(1 if data.get("status") == name else 0, status=name)
    yield status

    exit_code = _Family("exit_code", "The exit code the check gave (docs/exit-codes.md).")
    exit_code.add(data.get("exit_code"))
    yield exit_code

    findings = data.get("findings") or []
    counts = _Family("findings", "How many findings of each severity the check raised.")
    for severity in SEVERITIES:
        counts.add(sum(1 for f in findings if f.get("severity") == severity), severity=severity)
    yield counts

    each = _Family(
        "finding",
        "One series per finding raised (1): its code, severity and section; `cudadoctor explain CODE` tells the fix.",
    )
    for f in findings:
        each.add(1, code=f.get("code"), severity=f.get("severity"), section=f.get("section"), cause=f.get("cause"))
    yield each

    probe_ok = _Family("probe_ok", "1 when the probe finished, 0 when it crashed or timed out (skipped: absent).")
    probe_seconds = _Family("probe_duration_seconds", "How long each probe took.", "seconds")
    for p in data.get("probes") or []:
        if p.get("status") == "skipped":
            continue
        probe_ok.add(1 if p.get("status") == "ok" else 0, probe=p.get("name"), status=p.get("status"))
        probe_seconds.add(p.get("seconds"), probe=p.get("name"))
    yield probe_ok
    yield probe_seconds

    yield from _driver(facts.get("driver") or {})
    yield from _torch(facts.get("torch") or {})
    yield from _bandwidth(facts.get("bandwidth") or {})
    yield from _smoke(facts.get("smoke") or {})


def _driver(driver: dict[str, Any]) -> Iterable[_Family]:
    info = _Family("driver_info", "The NVIDIA driver NVML reports (1).")
    cuda = driver.get("cuda_driver_version")
    if driver.get("driver_version"):
        info.add(
            1,
            driver_version=driver.get("driver_version"),
            cuda_driver_version=f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None,
        )
    yield info

    count = _Family("gpus", "GPUs NVML counts on this machine.")
    count.add(driver.get("device_count"))
    yield count

    specs: list[tuple[str, str, str, float]] = [
        # (metric, NvmlDevice field, help, scale); a name ending in a unit declares that unit
        ("gpu_memory_total_bytes", "memory_total", "GPU memory in all.", 1),
        ("gpu_memory_free_bytes", "memory_free", "GPU memory free now.", 1),
        ("gpu_memory_used_bytes", "memory_used", "GPU memory in use now.", 1),
        ("gpu_utilization_ratio", "utilization_gpu", "Share of time a kernel ran (0-1).", 0.01),
        ("gpu_temperature_celsius", "temperature_c", "GPU temperature.", 1),
        ("gpu_pcie_link_generation", "pcie_gen_current", "PCIe generation the link runs at now.", 1),
        ("gpu_pcie_link_generation_max", "pcie_gen_max", "Highest PCIe generation of the link.", 1),
        ("gpu_pcie_link_width", "pcie_width_current", "PCIe lanes the link runs at now.", 1),
        ("gpu_pcie_link_width_max", "pcie_width_max", "Most PCIe lanes of the link.", 1),
        ("gpu_ecc_uncorrected_volatile_errors", "ecc_uncorrected_volatile", "Uncorrected ECC errors since load.", 1),
        ("gpu_ecc_uncorrected_aggregate_errors", "ecc_uncorrected_aggregate", "Uncorrected ECC errors, lifetime.", 1),
        ("gpu_retired_pages_sbe", "retired_pages_sbe", "Pages retired for repeated single-bit errors.", 1),
        ("gpu_retired_pages_dbe", "retired_pages_dbe", "Pages retired for a double-bit error.", 1),
        ("gpu_retired_pages_pending", "retired_pages_pending", "1 while a retirement waits for a GPU reset.", 1),
        ("gpu_remapped_rows_correctable", "remapped_rows_correctable", "Rows remapped, correctable errors.", 1),
        ("gpu_remapped_rows_uncorrectable", "remapped_rows_uncorrectable", "Rows remapped, uncorrectable errors.", 1),
        ("gpu_remapped_rows_pending", "remapped_rows_pending", "1 while a row remap waits for a GPU reset.", 1),
        ("gpu_remapped_rows_failure", "remapped_rows_failure", "1 when no spare row was left (needs service).", 1),
        ("gpu_clocks_event_reasons", "clocks_event_reasons", "NVML's clock event reasons bitmask now.", 1),
    ]
    devices = [d for d in driver.get("devices") or [] if isinstance(d, dict)]
    gpu_info = _Family("gpu_info", "Each GPU NVML reports (1), with its name, UUID, PCI bus id and compute capability.")
    for d in devices:
        gpu_info.add(
            1,
            gpu=_gpu_label(d),
            name=d.get("name"),
            uuid=d.get("uuid"),
            pci_bus_id=d.get("pci_bus_id"),
            compute_capability=d.get("compute_capability"),
        )
    yield gpu_info
    processes = _Family("gpu_processes", "Processes holding memory on the GPU.")
    for d in devices:
        if d.get("error") is None and _processes_listed(d):
            processes.add(len(d["processes"]), gpu=_gpu_label(d))
    yield processes
    for metric, name, help_text, scale in specs:
        unit = next((u for u in ("bytes", "celsius") if metric.endswith("_" + u)), "")
        family = _Family(metric, help_text, unit)
        for d in devices:
            value = d.get(name)
            if isinstance(value, bool):
                value = int(value)
            family.add(value * scale if value is not None else None, gpu=_gpu_label(d))
        yield family


def _torch(torch: dict[str, Any]) -> Iterable[_Family]:
    info = _Family("torch_info", "The torch the check diagnosed (1): its version and the CUDA it was built for.")
    if torch.get("version"):
        info.add(1, version=torch.get("version"), cuda=torch.get("cuda"))
    yield info
    available = _Family("torch_cuda_available", "torch.cuda.is_available() in the diagnosed interpreter (1 or 0).")
    value = torch.get("is_available")
    available.add(None if value is None else int(bool(value)))
    yield available


def _bandwidth(bandwidth: dict[str, Any]) -> Iterable[_Family]:
    family = _Family(
        "copy_bandwidth_bytes_per_second",
        "Host-device copy bandwidth measured by `check --full` (median), per GPU, direction and host memory.",
        "bytes_per_second",
    )
    for t in bandwidth.get("transfers") or []:
        gbps = t.get("gbps")
        family.add(
            gbps * 1e9 if gbps is not None else None,
            gpu=t.get("device"),
            direction=t.get("direction"),
            memory=t.get("memory"),
        )
    yield family
    peer = _Family("peer_bandwidth_bytes_per_second", "GPU-to-GPU copy bandwidth measured by `check --full`.")
    for p in bandwidth.get("p2p") or []:
        gbps = p.get("gbps")
        peer.add(gbps * 1e9 if gbps is not None else None, src=p.get("src"), dst=p.get("dst"))
    yield peer


def _smoke(smoke: dict[str, Any]) -> Iterable[_Family]:
    family = _Family("smoke_steps_per_second", "Training steps per second of the `check --full` smoke test.")
    for s in smoke.get("steps") or []:
        family.add(s.get("steps_per_s"), device=s.get("device"), model=s.get("model"))
    yield family
