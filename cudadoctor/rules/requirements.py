"""The CI gate: requirements from options or config; an unmet one is a finding like any other."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from cudadoctor.facts import Facts
from cudadoctor.knowledge import wheels
from cudadoctor.knowledge.architectures import parse_cc
from cudadoctor.knowledge.units import exact_size, format_size
from cudadoctor.model import Finding, Fix, Severity, Table, plural
from cudadoctor.rules.catalogue import CUDA, NVML, entry, fix


@dataclass
class Requirements:
    """What the gate asks of a machine (options and config files: commands/config.py)."""

    require_gpus: int | None = None
    min_free_memory: int | None = None  # bytes, per GPU
    min_compute_capability: str | None = None  # "8.0"
    expect_torch_cuda: str | None = None  # "12.8"
    require_cudnn: bool = False
    min_h2d_gbps: float | None = None
    fail_on: str = "error"  # error | warning

    @property
    def any(self) -> bool:
        return any(getattr(self, f.name) not in (None, False) for f in fields(self) if f.name != "fail_on")


MET = entry(
    "CD500",
    "requirements-met",
    Severity.OK,
    "Requirements",
    "Every requirement is met",
    """The machine meets the requirements given with options or in the config file.""",
)
TOO_FEW_GPUS = entry(
    "CD501",
    "too-few-gpus",
    Severity.ERROR,
    "Requirements",
    "Fewer GPUs than required",
    """--require-gpus (require-gpus) asks for at least this many GPUs that CUDA programs can see here
    and that meet the memory and capability requirements.""",
    rests_on=(NVML,),
)
LOW_FREE_MEMORY = entry(
    "CD502",
    "not-enough-free-memory",
    Severity.ERROR,
    "Requirements",
    "A GPU has less free memory than required",
    """--min-free-memory asks for this much free memory on each GPU a job will use: every GPU CUDA
    programs here can see, or with --require-gpus N at least N of them. Other processes hold the rest;
    `cudadoctor gpus` shows who.""",
    rests_on=(NVML,),
)
LOW_CAPABILITY = entry(
    "CD503",
    "compute-capability-too-low",
    Severity.ERROR,
    "Requirements",
    "A GPU's compute capability is below the requirement",
    """--min-compute-capability asks for GPUs of at least this architecture (bf16 needs 8.0, FP8 8.9):
    every GPU CUDA programs here can see, or with --require-gpus N at least N of them.""",
    rests_on=(NVML,),
)
TORCH_CUDA_MISMATCH = entry(
    "CD504",
    "unexpected-torch-cuda",
    Severity.ERROR,
    "Requirements",
    "torch is not built for the expected CUDA version",
    """--expect-torch-cuda pins the CUDA version the installed torch wheel was built for, so that a runner
    image with the wrong wheel is caught before the tests run.""",
)
CUDNN_REQUIRED = entry(
    "CD505",
    "cudnn-required",
    Severity.ERROR,
    "Requirements",
    "cuDNN is required but not usable",
    """--require-cudnn asks for torch.backends.cudnn.version() to answer on this machine.""",
    rests_on=(CUDA,),
)
H2D_TOO_SLOW = entry(
    "CD506",
    "h2d-bandwidth-too-low",
    Severity.ERROR,
    "Requirements",
    "Host-to-device bandwidth is below the requirement",
    """--min-h2d-gbps asks for at least this pinned host-to-device copy speed on every visible GPU; it
    needs the bandwidth measurement (`--only bandwidth` or `--full`).""",
    rests_on=(CUDA,),
)


def evaluate(f: Facts, req: Requirements | None) -> list[Finding]:
    if req is None or not req.any:
        return []
    gpus, note = _gpus(f, req)
    out = gpus + _torch(f, req) + _bandwidth(f, req)
    # every finding above is an unmet requirement: CD500 only when there is none
    if not out:
        out.insert(0, MET.finding(title=f"{MET.summary}: {note}" if note else None))
    return out


def _gpus(f: Facts, req: Requirements) -> tuple[list[Finding], str]:
    """The GPU requirements' findings, and a note for CD500 when they hold.

    With --require-gpus N, N visible GPUs that meet the limits are enough. Without it the limits hold
    for every visible GPU: a job uses the GPUs it sees, and no count says which of them it may leave."""
    if req.require_gpus is None and req.min_free_memory is None and req.min_compute_capability is None:
        return [], ""
    need = req.require_gpus or 1
    driver = f.driver
    if driver is None or driver.init_status != "ok":
        why = "not checked (the driver probe did not run)" if driver is None else "the driver reports none"
        return [
            TOO_FEW_GPUS.finding(
                title=f"Needs {plural(need, 'GPU')}; {why}",
                fix=[fix("See why", "cudadoctor check")],
            )
        ], ""
    from cudadoctor.rules.visible import visibility

    vis = visibility(f)
    every = [d for d in driver.devices if d.error is None]
    # the environment unknown: every GPU the driver has may be visible; with a count that adds no failure,
    # without one a gate cannot pass a GPU a job may see
    visible = [s.device for s in vis.selected] if vis is not None else every
    gate = _Limits(req)
    low_memory = [d for d in visible if gate.low_memory(d)]
    low_cc = [d for d in visible if gate.low_cc(d)]
    qualified = [d for d in visible if gate.qualifies(d)]
    if req.require_gpus is not None and len(qualified) >= need:
        if len(qualified) == len(visible):
            return [], ""
        # met; which GPUs qualify is worth a word, since a job takes the first ones it sees
        which = _which(qualified)
        return [], f"{len(qualified)} of {plural(len(visible), 'visible GPU')} qualify ({which}); {need} required"
    # a selection: `gpus --pick` chooses among the GPUs CUDA_VISIBLE_DEVICES shows, so it is offered only
    # where it can succeed: among those, or among all of them once the variable is unset
    count = need if req.require_gpus is not None else len(qualified)
    select = []
    if 0 < count <= len(qualified):
        select = [
            fix("Select GPUs that qualify (eval sets the variable in this shell)", f'eval "$({gate.pick(count)})"')
        ]
    elif vis is not None and vis.raw is not None and sum(map(gate.qualifies, every)) >= need:
        select = [
            fix(
                "Show every GPU to CUDA, then select ones that qualify (eval sets the variable in this shell)",
                "unset CUDA_VISIBLE_DEVICES",
                f'eval "$({gate.pick(need)})"',
            )
        ]
    out: list[Finding] = []
    if len(qualified) < need:
        out.append(
            TOO_FEW_GPUS.finding(
                title=f"{len(qualified)} of {plural(len(visible), 'visible GPU')} qualify; {need} required",
                fix=select or _elsewhere(every, need, gate),
            )
        )
    if low_memory:
        out.append(
            LOW_FREE_MEMORY.finding(
                title=f"{_which(low_memory)} {'has' if len(low_memory) == 1 else 'have'} less than {gate.size} free "
                f"({', '.join(format_size(d.memory_free) for d in low_memory)})",
                tables=_holders(low_memory),
                fix=[fix("See which processes hold it", "cudadoctor gpus --sort-by free"), *select],
            )
        )
    if low_cc:
        ccs = sorted({d.compute_capability or "unknown" for d in low_cc})
        out.append(
            LOW_CAPABILITY.finding(
                title=f"{_which(low_cc)} {'has' if len(low_cc) == 1 else 'have'} compute capability "
                f"{', '.join(ccs)}; {req.min_compute_capability} required",
                fix=select or _elsewhere(every, need, gate),
            )
        )
    return out, ""


class _Limits:
    """The per-GPU limits of a gate, and the one `gpus --pick` that selects GPUs meeting all of them."""

    def __init__(self, req: Requirements) -> None:
        self.min_free = req.min_free_memory
        self.min_cc_text = req.min_compute_capability
        self.min_cc = parse_cc(req.min_compute_capability)
        self.size = exact_size(req.min_free_memory) if req.min_free_memory is not None else ""

    def low_memory(self, d: Any) -> bool:
        return self.min_free is not None and (d.memory_free is None or d.memory_free < self.min_free)

    def low_cc(self, d: Any) -> bool:
        return self.min_cc is not None and ((cc := parse_cc(d.compute_capability)) is None or cc < self.min_cc)

    def qualifies(self, d: Any) -> bool:
        return not self.low_memory(d) and not self.low_cc(d)

    def pick(self, n: int) -> str:
        # one selection that meets every requirement: GPUs picked for free memory must have the capability too
        return (
            f"cudadoctor gpus --pick {n}"
            + (f" --min-free {self.size}" if self.size else "")
            + (f" --min-cc {self.min_cc_text}" if self.min_cc is not None else "")
        )

    def wanted(self) -> str:
        """ "that have 50GiB free and compute capability 8.0 or higher" """
        parts = [f"{self.size} free"] if self.size else []
        parts += [f"compute capability {self.min_cc_text} or higher"] if self.min_cc is not None else []
        return " and ".join(parts)


def _elsewhere(every: list[Any], need: int, gate: _Limits) -> list[Fix]:
    """When no selection of this machine's GPUs can meet the requirement: what would."""
    out = []
    capable = [d for d in every if not gate.low_cc(d)]
    busy = [d for d in capable if gate.low_memory(d)]
    if busy and len(capable) >= need:  # enough GPUs of the kind: their memory is what is missing
        out.append(
            fix(
                f"Free memory on {_which(busy)}: stop the processes that hold it, or wait for them to finish",
                "cudadoctor gpus --sort-by free",
            )
        )
    wanted = gate.wanted()
    out.append(
        fix(
            f"Run the job on a node with {plural(need, 'GPU')}"
            + (f" that have {wanted}" if wanted else "")
            + f": this one has {len(every)}"
        )
    )
    return out


def _holders(devices: list[Any]) -> list[Table]:
    """Who holds the memory a GPU lacks, where NVML lists them (root sees every user's processes)."""
    held = [(d, p) for d in devices for p in sorted(d.processes, key=lambda p: -(p.used_memory or 0))]
    if not held:
        return []
    named = any(p.name for _, p in held)
    rows = [
        [
            str(d.index),
            str(p.pid),
            *([p.name or ""] if named else []),
            format_size(p.used_memory) if p.used_memory is not None else "",
        ]
        for d, p in held
    ]
    return [Table(["GPU", "PID", *(["Name"] if named else []), "Used"], rows)]


def _indices(devices: list[Any]) -> str:
    """ "GPU 2", "GPUs 0, 2" """
    return f"{'GPU' if len(devices) == 1 else 'GPUs'} {', '.join(str(d.index) for d in devices)}"


def _which(devices: list) -> str:
    """ "GPU 3 (Tesla T4)", "GPUs 0, 1, 2, 3 (Tesla T4)": one line for identical GPUs."""
    names = sorted({d.name or "?" for d in devices})
    return f"{_indices(devices)} ({', '.join(names)})"


def _torch(f: Facts, req: Requirements) -> list[Finding]:
    out: list[Finding] = []
    t = f.torch
    if req.expect_torch_cuda is not None:
        have = t.cuda if t is not None else None
        if have != req.expect_torch_cuda:
            what = (
                "not checked (torch probe skipped)"
                if t is None
                else (f"torch {t.version} is built for CUDA {have}" if have else f"torch {t.version or ''} has no CUDA")
            )
            out.append(
                TORCH_CUDA_MISMATCH.finding(
                    title=f"Expected a torch built for CUDA {req.expect_torch_cuda}: {what}",
                    fix=[
                        fix(
                            "Install the expected build",
                            "python -m pip install torch --index-url "
                            + wheels.INDEX_URL.format(variant=wheels.variant_name(req.expect_torch_cuda)),
                        )
                    ],
                )
            )
    if req.require_cudnn and (t is None or t.cudnn_version is None):
        reason = "torch probe skipped" if t is None else (t.cudnn_error or "torch.backends.cudnn.version() is None")
        out.append(CUDNN_REQUIRED.finding(title=f"cuDNN is required: {reason}"))
    return out


def _bandwidth(f: Facts, req: Requirements) -> list[Finding]:
    if req.min_h2d_gbps is None:
        return []
    b = f.bandwidth
    if b is None or b.skipped or not b.transfers:
        why = "not measured" if b is None else (b.skipped or b.error or "no result")
        return [
            H2D_TOO_SLOW.finding(
                title=f"Host-to-device bandwidth of {req.min_h2d_gbps:g} GB/s required: {why}",
                fix=[fix("Measure it", "cudadoctor check --only driver,bandwidth")],
            )
        ]
    out = []
    for t in b.transfers:
        if t.direction == "h2d" and t.memory == "pinned" and (t.gbps is None or t.gbps < req.min_h2d_gbps):
            out.append(
                H2D_TOO_SLOW.finding(
                    title=f"cuda:{t.device} pinned host-to-device {t.gbps or 0:.1f} GB/s; "
                    f"{req.min_h2d_gbps:g} GB/s required",
                    fix=[fix("See the link NVML reports and the bandwidth findings", "cudadoctor check --full")],
                )
            )
    return out
