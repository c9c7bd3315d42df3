"""GPU health from NVML (no root): uncorrectable ECC errors, retired pages and remapped rows (pending or
failed), clock event reasons (thermal, power brake, hardware slowdown), persistence mode, compute mode,
and Xid errors from the kernel log. `health_flags` is the compact column `cudadoctor gpus` shows.

Sources: NVML API reference (nvmlDeviceGetTotalEccErrors, nvmlDeviceGetRetiredPages*,
nvmlDeviceGetRemappedRows, nvmlDeviceGetCurrentClocksEventReasons and the nvmlClocksEventReason* bits,
nvmlDeviceGetComputeMode — bit values as in nvidia-ml-py 13.615.71, cuda-facts §7); NVIDIA "GPU Memory
Error Management" (a pending remap or retirement takes effect at the next GPU reset; a remapping failure
means the GPU needs service); NVIDIA "XID Errors" (knowledge/xid.py).
"""

from __future__ import annotations

from cudadoctor.facts import Facts, NvmlDevice
from cudadoctor.knowledge.gpu_health import (  # noqa: F401  (re-exported for the rules and tests)
    CLOCK_BAD,
    CLOCK_WORDS,
    CLOCKS_HW_POWER_BRAKE,
    CLOCKS_HW_SLOWDOWN,
    CLOCKS_HW_THERMAL,
    CLOCKS_SW_POWER_CAP,
    CLOCKS_SW_THERMAL,
    COMPUTE_DEFAULT,
    COMPUTE_EXCLUSIVE_PROCESS,
    COMPUTE_EXCLUSIVE_THREAD,
    COMPUTE_PROHIBITED,
    health_flags,
)
from cudadoctor.knowledge.xid import APP, HARDWARE, describe
from cudadoctor.model import Finding, Fix, Message, Severity, Table, msg, msg_n
from cudadoctor.rules.catalogue import entry, fix
from cudadoctor.rules.predicates import LIMITED_COMPUTE_MODES, joined

# nvmlClocksEventReason* bits (nvml.h; nvidia-ml-py names them the same)
# named constants and the flag column live in knowledge/gpu_health.py (`gpus` imports no rules)


ECC = entry(
    "CD150",
    "ecc-uncorrectable",
    Severity.ERROR,
    "GPU health",
    "Uncorrectable ECC memory errors",
    """The GPU's memory reported uncorrectable (double-bit) errors. Since the last driver load
    (volatile) they crash or corrupt the programs running then; the lifetime (aggregate) count says the
    memory has failed before. Reset the GPU; if new ones appear, the GPU needs service.""",
)
RETIRED = entry(
    "CD151",
    "retired-pages-pending",
    Severity.WARNING,
    "GPU health",
    "Memory pages are waiting to be retired: reset the GPU",
    """The driver marked bad memory pages for retirement (older GPUs, before A100). Retirement takes
    effect at the next GPU reset or reboot; until then the bad pages may still be used.""",
)
REMAPPED = entry(
    "CD152",
    "remapped-rows",
    Severity.WARNING,
    "GPU health",
    "Row remapping is pending or has failed",
    """A100 and newer replace bad memory rows with spare ones. A pending remap needs a GPU reset to take
    effect; a failed remap (no spare rows left) means the GPU needs service.""",
)
CLOCKS = entry(
    "CD153",
    "clocks-slowed",
    Severity.WARNING,
    "GPU health",
    "The GPU is slowing its clocks: thermal, power brake or hardware slowdown",
    """NVML reports the GPU running below its clocks for a reason outside the program: it is too hot,
    an external power-brake signal is asserted, or a hardware slowdown is active (power supply, sensor).
    Everything on it runs slower until the cause is fixed.""",
)
PERSISTENCE = entry(
    "CD154",
    "persistence-mode-off",
    Severity.INFO,
    "GPU health",
    "Persistence mode is off",
    """Without persistence mode (or the nvidia-persistenced daemon) the driver tears the GPU down when
    the last program exits and sets it up again for the next: every CUDA start pays for it, and the
    settings (clocks, ECC counters' volatile view) reset. NVIDIA recommends it on Linux servers.""",
)
COMPUTE_MODE = entry(
    "CD155",
    "compute-mode",
    Severity.WARNING,
    "GPU health",
    "The GPU's compute mode limits who may use it",
    """In Exclusive-Process mode one process at a time may hold a CUDA context on the GPU; in Prohibited
    mode none may. A second process gets "CUDA-capable device(s) is/are busy or unavailable"
    (CUDA_ERROR_DEVICE_UNAVAILABLE, 46).""",
)
XID = entry(
    "CD156",
    "xid-errors",
    Severity.WARNING,
    "GPU health",
    "The kernel log has NVIDIA Xid errors",
    """Xid errors are the driver's reports of GPU faults in the kernel log. Some come from programs
    (13, 31, 43), others from the hardware (48 double-bit ECC, 63/64 row remapping, 79 fallen off the
    bus) and need a reset or service.""",
)
XID_UNREADABLE = entry(
    "CD157",
    "kernel-log-unreadable",
    Severity.INFO,
    "GPU health",
    "Xid errors not checked: the kernel log needs root here",
    """The kernel log is readable only by root on this machine (kernel.dmesg_restrict=1), so the doctor
    could not look for Xid errors. Read it yourself with sudo.""",
)


def _label(dev: NvmlDevice) -> str:
    return f"GPU {dev.index}" + (f" ({dev.name})" if dev.name else "")


def _reset(indices: list[int]) -> list[str]:
    return [f"sudo nvidia-smi --gpu-reset -i {i}" for i in indices]


def _or_reboot() -> Fix:
    return fix("Or reboot (it resets every GPU)", "sudo reboot")


def evaluate(f: Facts) -> list[Finding]:
    d = f.driver
    out: list[Finding] = []
    devices = [dev for dev in (d.devices if d is not None and d.init_status == "ok" else []) if not dev.error]
    out.extend(_ecc(devices))
    out.extend(_memory_repair(devices))
    out.extend(_clocks(devices))
    out.extend(_compute_mode(f, devices))
    out.extend(_persistence(f, devices))
    out.extend(_xid(f))
    return out


def _ecc(devices: list[NvmlDevice]) -> list[Finding]:
    rows, now = [], []
    for dev in devices:
        vol, agg = dev.ecc_uncorrected_volatile, dev.ecc_uncorrected_aggregate
        if vol or agg:
            rows.append(
                [str(dev.index), dev.name or "", "" if vol is None else str(vol), "" if agg is None else str(agg)]
            )
            if vol:
                now.append(dev.index)
    if not rows:
        return []
    # a lifetime-only count: the volatile count is already 0, a reset clears nothing
    resets = (
        [fix("Reset the GPU (no process may use it) to clear the volatile count", *_reset(now)), _or_reboot()]
        if now
        else []
    )
    return [
        ECC.finding(
            title=msg_n(
                "Uncorrectable ECC errors on {n} GPU"
                if now
                else "Uncorrectable ECC errors on {n} GPU (lifetime count only)",
                "Uncorrectable ECC errors on {n} GPUs"
                if now
                else "Uncorrectable ECC errors on {n} GPUs (lifetime count only)",
                len(rows),
                n=len(rows),
            ),
            severity=Severity.ERROR if now else Severity.WARNING,
            fix=[
                *resets,
                fix("Watch whether new errors appear", "nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER"),
            ],
            tables=[Table(["GPU", "Name", "Since driver load", "Lifetime"], rows)],
        )
    ]


def _memory_repair(devices: list[NvmlDevice]) -> list[Finding]:
    out = []
    pending = [dev for dev in devices if dev.retired_pages_pending]
    if pending:
        out.append(
            RETIRED.finding(
                title=msg(
                    "{summary}: {detail}", summary=msg(RETIRED.summary), detail=", ".join(_label(d) for d in pending)
                ),
                fix=[
                    fix("Reset the GPU so the bad pages are retired", *_reset([d.index for d in pending])),
                    _or_reboot(),
                ],
                tables=[
                    Table(
                        ["GPU", "Retired (single-bit)", "Retired (double-bit)"],
                        [[str(d.index), _count(d.retired_pages_sbe), _count(d.retired_pages_dbe)] for d in pending],
                    )
                ],
            )
        )
    remap = [dev for dev in devices if dev.remapped_rows_pending or dev.remapped_rows_failure]
    if remap:
        failed = [d for d in remap if d.remapped_rows_failure]
        fixes = []
        if [d for d in remap if d.remapped_rows_pending]:
            fixes.append(
                fix(
                    "Reset the GPU so the pending remap takes effect",
                    *_reset([d.index for d in remap if d.remapped_rows_pending]),
                )
            )
            fixes.append(_or_reboot())
        if failed:
            fixes.append(
                fix(
                    "A failed remap needs service: collect the report for the vendor",
                    "sudo nvidia-bug-report.sh",
                    "nvidia-smi -q -d ROW_REMAPPER",
                )
            )
        out.append(
            REMAPPED.finding(
                title=msg(
                    "Row remapping failed: {gpus}" if failed else "Row remapping pending (reset needed): {gpus}",
                    gpus=", ".join(_label(d) for d in remap),
                ),
                severity=Severity.ERROR if failed else Severity.WARNING,
                fix=fixes,
                tables=[
                    Table(
                        ["GPU", "Uncorrectable rows", "Pending", "Failed"],
                        [
                            [
                                str(d.index),
                                "" if d.remapped_rows_uncorrectable is None else str(d.remapped_rows_uncorrectable),
                                "yes" if d.remapped_rows_pending else "no",
                                "yes" if d.remapped_rows_failure else "no",
                            ]
                            for d in remap
                        ],
                    )
                ],
            )
        )
    return out


def _count(n: int | None) -> str:
    return "unknown" if n is None else str(n)


# knowledge/gpu_health.CLOCK_WORDS, as the title names them
_CLOCK_REASONS = {
    "hardware thermal slowdown": msg("hardware thermal slowdown"),
    "software thermal slowdown": msg("software thermal slowdown"),
    "power brake (external power signal)": msg("power brake (external power signal)"),
    "hardware slowdown": msg("hardware slowdown"),
}


def _clocks(devices: list[NvmlDevice]) -> list[Finding]:
    rows = []
    first: list[Message] = []
    for dev in devices:
        bits = (dev.clocks_event_reasons or 0) & CLOCK_BAD
        if bits:
            words = [w for b, w in CLOCK_WORDS if bits & b]
            temp = "" if dev.temperature_c is None else f"{dev.temperature_c} °C"
            rows.append([str(dev.index), dev.name or "", ", ".join(words), temp])
            first = first or [_CLOCK_REASONS.get(w) or msg("{text}", text=w) for w in words]
    if not rows:
        return []
    return [
        CLOCKS.finding(
            title=msg_n(
                "{n} GPU slowing down: {reasons}",
                "{n} GPUs slowing down: {reasons}",
                len(rows),
                n=len(rows),
                reasons=joined(first, ", "),
            ),
            fix=[
                fix("See the reasons and temperatures", "nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER"),
                fix(
                    "Thermal: check fans, airflow and the room; power brake or slowdown: check the power supply",
                    "nvidia-smi --query-gpu=index,temperature.gpu,power.draw,clocks_event_reasons.active --format=csv",
                ),
            ],
            tables=[Table(["GPU", "Name", "Reason", "Temperature"], rows)],
        )
    ]


def _compute_mode(f: Facts, devices: list[NvmlDevice]) -> list[Finding]:
    limited = [d for d in devices if d.compute_mode in LIMITED_COMPUTE_MODES]
    if not limited:
        return []
    prohibited = [d for d in limited if d.compute_mode == COMPUTE_PROHIBITED]
    busy = [d for d in limited if d.compute_mode != COMPUTE_PROHIBITED and d.processes]
    names = {COMPUTE_EXCLUSIVE_PROCESS: "Exclusive-Process", COMPUTE_EXCLUSIVE_THREAD: "Exclusive-Thread"}
    names[COMPUTE_PROHIBITED] = "Prohibited"
    severity = Severity.ERROR if prohibited or busy else Severity.WARNING
    return [
        COMPUTE_MODE.finding(
            title=msg(
                "Compute mode {modes}: a second process gets 'device busy or unavailable'"
                if not prohibited
                else "Compute mode {modes}: no process may use it",
                modes=joined(
                    [msg("{mode} on GPU {index}", mode=names[d.compute_mode], index=d.index) for d in limited], ", "
                ),
            ),
            severity=severity,
            fix=[
                fix(
                    "Set the default (shared) compute mode back (resets at reboot unless persistence is on)",
                    *[f"sudo nvidia-smi -i {d.index} -c DEFAULT" for d in limited],
                ),
                fix(
                    "Or wait for the process that holds it",
                    "nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv",
                ),
            ],
        )
    ]


def _persistence(f: Facts, devices: list[NvmlDevice]) -> list[Finding]:
    s = f.system
    if s is None or s.os != "Linux" or s.wsl or (f.platform is not None and f.platform.wsl is not None):
        return []
    off = [d for d in devices if d.persistence_mode is False]
    if not off:
        return []
    return [
        PERSISTENCE.finding(
            title=msg_n(
                "Persistence mode is off on {off} of {n} GPU",
                "Persistence mode is off on {off} of {n} GPUs",
                len(devices),
                off=len(off),
                n=len(devices),
            ),
            fix=[
                fix(
                    "Run the persistence daemon (NVIDIA's recommended way), at every boot",
                    "sudo systemctl enable --now nvidia-persistenced",
                ),
                fix("Or switch it on until the next reboot", "sudo nvidia-smi -pm 1"),
            ],
        )
    ]


def _xid(f: Facts) -> list[Finding]:
    p = f.platform
    if p is None or p.wsl is not None:
        return []
    nvml_ok = f.driver is not None and f.driver.init_status == "ok" and bool(f.driver.device_count)
    if p.xid is None:
        readable = p.module.kernel_log_readable if p.module is not None else None
        if readable is False and nvml_ok:
            return [XID_UNREADABLE.finding(fix=[fix("Look for Xid errors with root", "sudo dmesg -T | grep -i xid")])]
        return []
    if not p.xid:
        return []
    counts: dict[tuple[int, str], int] = {}
    for ev in p.xid:
        key = (ev.xid, ev.pci or "")
        counts[key] = counts.get(key, 0) + 1
    blames = {describe(x).blame for x, _ in counts}
    severity = Severity.ERROR if HARDWARE in blames else Severity.WARNING if blames - {APP} else Severity.INFO
    worst = sorted(counts, key=lambda k: (describe(k[0]).blame != HARDWARE, k[0]))[0]
    actions = [
        msg("Xid {xid}: {action}.", xid=x, action=msg(describe(x).action)) for x in sorted({x for x, _ in counts})
    ]
    name = msg(describe(worst[0]).title)
    others = len(counts) - 1
    return [
        XID.finding(
            why=msg("{page} {detail}", page=msg(XID.explanation), detail=joined(actions, " ")),
            title=msg_n(
                "Xid {xid} in the kernel log: {name} (+{n} other kind)",
                "Xid {xid} in the kernel log: {name} (+{n} other kinds)",
                others,
                xid=worst[0],
                name=name,
                n=others,
            )
            if others
            else msg("Xid {xid} in the kernel log: {name}", xid=worst[0], name=name),
            severity=severity,
            fix=[
                fix("Read the events with their times", "sudo dmesg -T | grep -i xid"),
                fix(
                    "After a hardware Xid (48, 63, 64, 79, 94, 95): reset the GPU or reboot, then check health",
                    "sudo nvidia-smi --gpu-reset -i INDEX",
                    "nvidia-smi -q -d ECC,ROW_REMAPPER",
                ),
            ],
            tables=[
                Table(
                    ["Xid", "PCI", "Times", "Meaning", "Usual cause"],
                    [
                        [str(x), pci, str(n), describe(x).title, describe(x).blame]
                        for (x, pci), n in sorted(counts.items())
                    ],
                )
            ],
        )
    ]
