"""The CI gate: requirements from options or config; an unmet one is a finding like any other."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from cudadoctor.facts import Facts
from cudadoctor.knowledge import wheels
from cudadoctor.knowledge.architectures import parse_cc
from cudadoctor.knowledge.units import exact_size, format_size
from cudadoctor.model import Finding, Fix, Message, Severity, Table, msg, msg_n
from cudadoctor.rules.catalogue import CUDA, NVML, entry, fix, named
from cudadoctor.rules.predicates import visibility


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
        title = msg("{summary}: {detail}", summary=msg(MET.summary), detail=note) if note else None
        out.insert(0, MET.finding(title=title))
    return out


# CD500's note when the environment was not read (a saved report without it): the limits held on the driver's GPUs
_UNSEEN = msg("which GPUs a job sees is unknown (CUDA_VISIBLE_DEVICES was not read); the driver's GPUs qualify")


def _gpus(f: Facts, req: Requirements) -> tuple[list[Finding], Message | None]:
    """The GPU requirements' findings, and a note for CD500 when they hold.

    With --require-gpus N, N visible GPUs that meet the limits are enough. Without it the limits hold
    for every visible GPU: a job uses the GPUs it sees, and no count says which of them it may leave."""
    if req.require_gpus is None and req.min_free_memory is None and req.min_compute_capability is None:
        return [], None
    need = req.require_gpus or 1
    driver = f.driver
    if driver is None or driver.init_status != "ok":
        why = msg("not checked (the driver probe did not run)" if driver is None else "the driver reports none")
        return [
            TOO_FEW_GPUS.finding(
                title=msg_n("Needs {n} GPU; {why}", "Needs {n} GPUs; {why}", need, n=need, why=why),
                fix=[fix("See why", "cudadoctor check")],
            )
        ], None

    if driver.device_count and not driver.devices:
        # the driver counted GPUs but their list is unknown (a saved report's null list): nothing to judge
        why = msg_n(
            "not checked (the driver counts {n} GPU, but what it is is unknown)",
            "not checked (the driver counts {n} GPUs, but what they are is unknown)",
            driver.device_count,
            n=driver.device_count,
        )
        return [
            TOO_FEW_GPUS.finding(
                title=msg_n("Needs {n} GPU; {why}", "Needs {n} GPUs; {why}", need, n=need, why=why),
                fix=[fix("See why", "cudadoctor check")],
            )
        ], None
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
        if vis is None:  # met on the driver's GPUs; which of them the job's environment shows was not read
            return [], _UNSEEN
        if len(qualified) == len(visible):
            return [], None
        # met; which GPUs qualify is worth a word, since a job takes the first ones it sees
        return [], msg_n(
            "{k} of {n} visible GPU qualify ({which}); {need} required",
            "{k} of {n} visible GPUs qualify ({which}); {need} required",
            len(visible),
            k=len(qualified),
            n=len(visible),
            which=_which(qualified),
            need=need,
        )
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
                title=msg_n(
                    "{k} of {n} visible GPU qualify; {need} required",
                    "{k} of {n} visible GPUs qualify; {need} required",
                    len(visible),
                    k=len(qualified),
                    n=len(visible),
                    need=need,
                ),
                fix=select or _elsewhere(every, need, gate),
            )
        )
    if low_memory:
        out.append(
            LOW_FREE_MEMORY.finding(
                title=msg_n(
                    "{gpus} has less than {size} free ({free})",
                    "{gpus} have less than {size} free ({free})",
                    len(low_memory),
                    gpus=_which(low_memory),
                    size=gate.size,
                    free=", ".join(format_size(d.memory_free) for d in low_memory),
                ),
                tables=_holders(low_memory),
                fix=[fix("See which processes hold it", "cudadoctor gpus --sort-by free"), *select],
            )
        )
    if low_cc:
        ccs = sorted({d.compute_capability or "unknown" for d in low_cc})
        out.append(
            LOW_CAPABILITY.finding(
                title=msg_n(
                    "{gpus} has compute capability {ccs}; {required} required",
                    "{gpus} have compute capability {ccs}; {required} required",
                    len(low_cc),
                    gpus=_which(low_cc),
                    ccs=", ".join(ccs),
                    required=req.min_compute_capability,
                ),
                fix=select or _elsewhere(every, need, gate),
            )
        )
    return out, _UNSEEN if vis is None and not out else None


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

    def wanted(self) -> Message | None:
        """ "50GiB free and compute capability 8.0 or higher" """
        if self.size and self.min_cc is not None:
            return msg("{size} free and compute capability {cc} or higher", size=self.size, cc=self.min_cc_text)
        if self.size:
            return msg("{size} free", size=self.size)
        if self.min_cc is not None:
            return msg("compute capability {cc} or higher", cc=self.min_cc_text)
        return None


def _elsewhere(every: list[Any], need: int, gate: _Limits) -> list[Fix]:
    """When no selection of this machine's GPUs can meet the requirement: what would."""
    out = []
    capable = [d for d in every if not gate.low_cc(d)]
    busy = [d for d in capable if gate.low_memory(d)]
    if busy and len(capable) >= need:  # enough GPUs of the kind: their memory is what is missing
        out.append(
            fix(
                msg(
                    "Free memory on {gpus}: stop the processes that hold it, or wait for them to finish",
                    gpus=_which(busy),
                ),
                "cudadoctor gpus --sort-by free",
            )
        )
    wanted = gate.wanted()
    out.append(
        fix(
            msg_n(
                "Run the job on a node with {n} GPU that have {wanted}: this one has {have}"
                if wanted
                else "Run the job on a node with {n} GPU: this one has {have}",
                "Run the job on a node with {n} GPUs that have {wanted}: this one has {have}"
                if wanted
                else "Run the job on a node with {n} GPUs: this one has {have}",
                need,
                n=need,
                wanted=wanted,
                have=len(every),
            )
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


def _which(devices: list) -> Message:
    """ "GPU 3 (Tesla T4)", "GPUs 0, 1, 2, 3 (Tesla T4)": one line for identical GPUs."""
    names = sorted({d.name or "?" for d in devices})
    return msg_n(
        "GPU {indices} ({names})",
        "GPUs {indices} ({names})",
        len(devices),
        indices=", ".join(str(d.index) for d in devices),
        names=", ".join(names),
    )


def _torch(f: Facts, req: Requirements) -> list[Finding]:
    out: list[Finding] = []
    t = f.torch
    if req.expect_torch_cuda is not None:
        have = t.cuda if t is not None else None
        if have != req.expect_torch_cuda:
            if t is None:
                what = msg("not checked (torch probe skipped)")
            elif have:
                what = msg("{torch} is built for CUDA {cuda}", torch=named("torch", t.version), cuda=have)
            else:
                what = msg("{torch} has no CUDA", torch=named("torch", t.version))
            out.append(
                TORCH_CUDA_MISMATCH.finding(
                    title=msg("Expected a torch built for CUDA {cuda}: {what}", cuda=req.expect_torch_cuda, what=what),
                    fix=_expected_build(f, req.expect_torch_cuda),
                )
            )
    if req.require_cudnn and (t is None or t.cudnn_version is None):
        reason = (
            msg("torch probe skipped") if t is None else (t.cudnn_error or "torch.backends.cudnn.version() is None")
        )
        out.append(CUDNN_REQUIRED.finding(title=msg("cuDNN is required: {reason}", reason=reason)))
    return out


def _expected_build(f: Facts, cuda: str) -> list[Fix]:
    """The newest torch release the wheel table has a build of for `cuda`, in this environment's installer
    (a bare `pip install torch --index-url …/cuXYZ` names no release and fails once that index moves on)."""
    from cudadoctor.advice.install import install_commands

    machine = f.system.machine if f.system else None
    name = wheels.variant_name(cuda)
    for release in wheels.releases_newest_first():
        variant = next((v for v in wheels.variants(release, machine) if v.name == name), None)
        if variant is not None:
            version = f"{release}.0"
            return [
                fix(
                    msg("Install torch {version}, built for CUDA {cuda}", version=version, cuda=cuda),
                    *install_commands(version, variant, f),
                )
            ]
    return [fix(msg("No torch build for CUDA {cuda} is known: check --expect-torch-cuda", cuda=cuda))]


def _bandwidth(f: Facts, req: Requirements) -> list[Finding]:
    if req.min_h2d_gbps is None:
        return []
    b = f.bandwidth
    if b is None or b.skipped or not b.transfers:
        why = msg("not measured") if b is None else (b.skipped or b.error or msg("no result"))
        return [
            H2D_TOO_SLOW.finding(
                title=msg(
                    "Host-to-device bandwidth of {required} GB/s required: {why}",
                    required=f"{req.min_h2d_gbps:g}",
                    why=why,
                ),
                fix=[fix("Measure it", "cudadoctor check --only driver,bandwidth")],
            )
        ]
    out = []
    for t in b.transfers:
        if t.direction == "h2d" and t.memory == "pinned" and (t.gbps is None or t.gbps < req.min_h2d_gbps):
            out.append(
                H2D_TOO_SLOW.finding(
                    title=msg(
                        "cuda:{device} pinned host-to-device {rate} GB/s; {required} GB/s required",
                        device=t.device,
                        rate=f"{t.gbps or 0:.1f}",
                        required=f"{req.min_h2d_gbps:g}",
                    ),
                    fix=[fix("See the link NVML reports and the bandwidth findings", "cudadoctor check --full")],
                )
            )
    return out
