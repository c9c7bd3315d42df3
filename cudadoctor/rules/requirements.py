"""The CI gate: requirements from options or config; an unmet one is a finding like any other."""

from __future__ import annotations

from dataclasses import dataclass, fields

from cudadoctor.facts import Facts
from cudadoctor.knowledge import wheels
from cudadoctor.knowledge.architectures import parse_cc
from cudadoctor.knowledge.units import exact_size, format_size
from cudadoctor.report import Finding, Severity, plural
from cudadoctor.rules.catalogue import entry, fix


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
)
LOW_FREE_MEMORY = entry(
    "CD502",
    "not-enough-free-memory",
    Severity.ERROR,
    "Requirements",
    "A GPU has less free memory than required",
    """--min-free-memory asks for this much free memory on each GPU a job will use. Other processes
    hold the rest; `cudadoctor gpus` shows who.""",
)
LOW_CAPABILITY = entry(
    "CD503",
    "compute-capability-too-low",
    Severity.ERROR,
    "Requirements",
    "A GPU's compute capability is below the requirement",
    """--min-compute-capability asks for GPUs of at least this architecture (bf16 needs 8.0, FP8 8.9).""",
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
)
H2D_TOO_SLOW = entry(
    "CD506",
    "h2d-bandwidth-too-low",
    Severity.ERROR,
    "Requirements",
    "Host-to-device bandwidth is below the requirement",
    """--min-h2d-gbps asks for at least this pinned host-to-device copy speed on every visible GPU; it
    needs the bandwidth measurement (`--only bandwidth` or `--full`).""",
)


def evaluate(f: Facts, req: Requirements | None) -> list[Finding]:
    if req is None or not req.any:
        return []
    out: list[Finding] = []
    out += _gpus(f, req)
    out += _torch(f, req)
    out += _bandwidth(f, req)
    if not any(f.severity is Severity.ERROR for f in out):
        out.insert(0, MET.finding())
    return out


def _gpus(f: Facts, req: Requirements) -> list[Finding]:
    if req.require_gpus is None and req.min_free_memory is None and req.min_compute_capability is None:
        return []
    need = req.require_gpus or 1
    driver = f.driver
    if driver is None or driver.init_status != "ok":
        why = "not checked (the driver probe did not run)" if driver is None else "the driver reports none"
        return [
            TOO_FEW_GPUS.finding(
                title=f"Needs {plural(need, 'GPU')}; {why}",
                fix=[fix("See why", "cudadoctor check")],
            )
        ]
    from cudadoctor.rules.visible import visibility

    vis = visibility(f)
    # the environment unknown: every GPU the driver has may be visible (knowing less adds no failure)
    visible = [s.device for s in vis.selected] if vis is not None else [d for d in driver.devices if d.error is None]
    min_cc = parse_cc(req.min_compute_capability)
    low_memory = [
        d
        for d in visible
        if req.min_free_memory is not None and (d.memory_free is None or d.memory_free < req.min_free_memory)
    ]
    low_cc = [
        d for d in visible if min_cc is not None and ((cc := parse_cc(d.compute_capability)) is None or cc < min_cc)
    ]
    qualified = [d for d in visible if d not in low_memory and d not in low_cc]
    size = exact_size(req.min_free_memory) if req.min_free_memory is not None else ""
    # one selection that meets every requirement: GPUs picked for free memory must have the capability too
    pick = f"cudadoctor gpus --pick {need}" + (f" --min-free {size}" if size else "")
    pick += f" --min-cc {req.min_compute_capability}" if min_cc is not None else ""
    out: list[Finding] = []
    if low_memory:
        out.append(
            LOW_FREE_MEMORY.finding(
                title=f"{_which(low_memory)} {'has' if len(low_memory) == 1 else 'have'} less than {size} free "
                f"({', '.join(format_size(d.memory_free) for d in low_memory)})",
                fix=[
                    fix("See which processes hold it", "cudadoctor gpus --sort-by free"),
                    fix(
                        "Or select GPUs that have it (eval sets the variable in this shell)",
                        f'eval "$({pick})"',
                    ),
                ],
            )
        )
    if low_cc:
        ccs = sorted({d.compute_capability or "unknown" for d in low_cc})
        out.append(
            LOW_CAPABILITY.finding(
                title=f"{_which(low_cc)} {'has' if len(low_cc) == 1 else 'have'} compute capability "
                f"{', '.join(ccs)}; {req.min_compute_capability} required",
                fix=[
                    fix(
                        "Select GPUs that have it (eval sets the variable in this shell)",
                        f'eval "$({pick})"',
                    )
                ],
            )
        )
    if len(qualified) >= need:
        # enough GPUs qualify: the others are worth knowing about (cuda:0 may be one), not a failure
        for finding in out:
            finding.severity = Severity.WARNING
    else:
        out.insert(
            0,
            TOO_FEW_GPUS.finding(
                title=f"{len(qualified)} of {plural(len(visible), 'visible GPU')} qualify; {need} required",
                fix=[
                    fix(
                        "Show every GPU to CUDA, then select ones that qualify (eval sets the variable in this shell)",
                        "unset CUDA_VISIBLE_DEVICES",
                        f'eval "$({pick})"',
                    )
                    if vis is not None and vis.raw is not None  # --pick chooses among the GPUs shown
                    else fix("Select GPUs that qualify (eval sets the variable in this shell)", f'eval "$({pick})"')
                ],
            ),
        )
    return out


def _which(devices: list) -> str:
    """ "GPU 3 (Tesla T4)", "GPUs 0, 1, 2, 3 (Tesla T4)": one line for identical GPUs."""
    names = sorted({d.name or "?" for d in devices})
    word = "GPU" if len(devices) == 1 else "GPUs"
    return f"{word} {', '.join(str(d.index) for d in devices)} ({', '.join(names)})"


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
