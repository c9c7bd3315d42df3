"""Pinned-memory bandwidth against the PCIe link, and the CPU-vs-GPU training smoke test."""

from __future__ import annotations

from cudadoctor.advice.text import joined
from cudadoctor.facts import BandwidthFacts, Facts, SmokeFacts, Transfer
from cudadoctor.facts.nvml import NvmlDevice
from cudadoctor.knowledge.pcie import link_gbps
from cudadoctor.locale import N_
from cudadoctor.model import Finding, Fix, Severity, Table, msg
from cudadoctor.rules.catalogue import CUDA, entry, fix

BANDWIDTH = entry(
    "CD400",
    "bandwidth",
    Severity.INFO,
    "Measurements",
    "Host-device copy bandwidth",
    """Median of timed copies (CUDA events, after warm-up) between host memory and each GPU, pinned and
    pageable, compared with the PCIe link NVML reports. Healthy pinned host-to-device copies reach about
    75-88 % of the link's theoretical rate.""",
)
LINK_DOWN = entry(
    "CD401",
    "pcie-link-degraded",
    Severity.WARNING,
    "Measurements",
    "A GPU's PCIe link runs narrower than it can",
    """The link trained to fewer lanes than the GPU and slot support (a riser, a dirty or half-seated
    card, a BIOS setting), which caps every host-device copy. A lower generation alone is often power
    saving while idle and recovers under load.""",
)
PINNED_NOT_FASTER = entry(
    "CD402",
    "pinned-not-faster",
    Severity.WARNING,
    "Measurements",
    "Pinned copies are not clearly faster than pageable ones",
    """Pinned (page-locked) memory normally copies about twice as fast as pageable memory and allows
    asynchronous copies. When it does not, the copy engine is waiting on something else: memory on the
    far NUMA node, another process saturating the link, or an IOMMU in translation mode.""",
)
FAR_BELOW_LINK = entry(
    "CD403",
    "bandwidth-far-below-link",
    Severity.WARNING,
    "Measurements",
    "Pinned host-to-device bandwidth is far below the link",
    """Less than half of the link's theoretical rate usually means the buffer lives on the other CPU socket
    (NUMA), the link is shared or contended, or the GPU sits behind a PCIe switch with other devices.""",
)
BANDWIDTH_FAILED = entry(
    "CD404",
    "bandwidth-failed",
    Severity.ERROR,
    "Measurements",
    "The bandwidth measurement failed",
    """Copying between host and GPU raised an error; real training would fail the same way.""",
    rests_on=(CUDA,),
)
MEASURE_SKIPPED = entry(
    "CD405",
    "measurement-skipped",
    Severity.INFO,
    "Measurements",
    "Part of the measurements was skipped",
    """Measurements that need a GPU are skipped, with the reason, when torch cannot use one.""",
)
SMOKE_OK = entry(
    "CD406",
    "smoke-ok",
    Severity.OK,
    "Measurements",
    "Training smoke test passed",
    """A small CNN and an MLP trained from the same seed and weights: the loss fell, and where a GPU ran,
    its losses matched the CPU's within the tolerance.""",
)
LOSS_NOT_FALLING = entry(
    "CD407",
    "smoke-loss-not-falling",
    Severity.ERROR,
    "Measurements",
    "The loss did not fall in the smoke test",
    """Plain SGD on a fixed batch must lower the loss. When it does not, the device computes wrong results
    (a driver or hardware fault) or the build is broken.""",
)
CPU_GPU_MISMATCH = entry(
    "CD408",
    "smoke-cpu-gpu-mismatch",
    Severity.ERROR,
    "Measurements",
    "CPU and GPU training disagree",
    """With the same seed, weights and data and TF32 off, fp32 training on the GPU must track the CPU
    closely. A large difference points at a faulty GPU (run nvidia-smi -q -d ECC, and DCGM diagnostics)
    or a miscompiled kernel.""",
)
AMP_FAILED = entry(
    "CD409",
    "smoke-amp-failed",
    Severity.ERROR,
    "Measurements",
    "A mixed-precision (AMP) step failed or was not finite",
    """One autocast step (bf16 where the GPU supports it, else fp16 with a GradScaler) must give finite
    loss and weights.""",
)
LOADER_FAILED = entry(
    "CD410",
    "smoke-dataloader-failed",
    Severity.ERROR,
    "Measurements",
    "A DataLoader with worker processes failed",
    """DataLoader(num_workers=2, pin_memory=True, persistent_workers=True) did not deliver its batches.
    "Bus error" or "DataLoader worker exited unexpectedly" is almost always a small /dev/shm.""",
)
CHECKPOINT_FAILED = entry(
    "CD411",
    "smoke-checkpoint-failed",
    Severity.ERROR,
    "Measurements",
    "A GPU checkpoint did not load on the CPU",
    """A state_dict saved from the GPU must load with torch.load(..., map_location="cpu").""",
)
SMOKE_FAILED = entry(
    "CD412",
    "smoke-failed",
    Severity.ERROR,
    "Measurements",
    "The training smoke test failed",
    """Training raised an error on a device. "no kernel image is available" means the torch build lacks
    this GPU's architecture (see CD205); out-of-memory means other processes hold the GPU.""",
    rests_on=(CUDA,),
)

LOADER_ADVICE = fix(
    "Feed the GPU from pinned memory in parallel",
    "DataLoader(dataset, batch_size=..., num_workers=4, pin_memory=True, persistent_workers=True)",
    "x = x.to(device, non_blocking=True)",
)
# Why the measurement child skipped the GPU (backends/children/measure_child.py): a text of its own, shown
# translated when the catalogue holds it (an older report's other reason is shown as it is).
_SKIP_REASONS = (N_("no usable CUDA device (torch.cuda.is_available() is False)"),)

NUMA_ADVICE = fix(
    "Check which CPU socket the GPU hangs off, and run the job there",
    "nvidia-smi topo -m",
    "numactl --cpunodebind=0 --membind=0 python train.py",
)


def _median(b: BandwidthFacts, device: int, direction: str, memory: str) -> Transfer | None:
    return next(
        (
            t
            for t in b.transfers
            if t.device == device and t.direction == direction and t.memory == memory and t.error is None
        ),
        None,
    )


def _nvml_for(f: Facts) -> dict[int, NvmlDevice]:
    """CUDA ordinal -> NVML device, under this run's CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER."""
    from cudadoctor.rules.visible import visibility

    vis = visibility(f)
    return {s.ordinal: s.device for s in vis.selected} if vis is not None else {}


def evaluate(f: Facts) -> list[Finding]:
    out = _link(f)
    if f.bandwidth is not None:
        out += _bandwidth(f, f.bandwidth)
    if f.smoke is not None:
        out += _smoke(f.smoke)
    return out


def _link(f: Facts) -> list[Finding]:
    if f.bandwidth is None or f.driver is None:
        return []  # the link check belongs to the measurement run
    out = []
    for d in f.driver.devices:
        if d.pcie_width_current and d.pcie_width_max and d.pcie_width_current < d.pcie_width_max:
            gens = d.pcie_gen_current and d.pcie_gen_max
            out.append(
                LINK_DOWN.finding(
                    title=msg(
                        "{gpu} PCIe link x{width} of x{top} (Gen{gen} of Gen{top_gen})"
                        if gens
                        else "{gpu} PCIe link x{width} of x{top}",
                        gpu=msg("GPU {index} ({name})", index=d.index, name=d.name)
                        if d.name
                        else msg("GPU {index}", index=d.index),
                        width=d.pcie_width_current,
                        top=d.pcie_width_max,
                        gen=d.pcie_gen_current,
                        top_gen=d.pcie_gen_max,
                    ),
                    fix=[
                        fix(
                            "Compare with the link under load, then reseat the card or check the slot and BIOS",
                            f"nvidia-smi -i {d.index} -q -d PCIE",
                        )
                    ],
                )
            )
    return out


def _bandwidth(f: Facts, b: BandwidthFacts) -> list[Finding]:
    if b.timed_out or (b.error and not b.transfers):
        title = (
            msg("Bandwidth measurement: {error}", error=b.error)
            if b.error
            else msg("Bandwidth measurement: did not finish in time")
        )
        return [BANDWIDTH_FAILED.finding(title=title)]
    if b.skipped:
        return [MEASURE_SKIPPED.finding(title=msg("Bandwidth skipped: {reason}", reason=msg(b.skipped)))]
    out: list[Finding] = []
    nvml = _nvml_for(f)
    rows: list[list[str]] = []
    for dev in sorted({t.device for t in b.transfers}):
        failed = [t for t in b.transfers if t.device == dev and t.error]
        if failed:
            out.append(BANDWIDTH_FAILED.finding(title=msg("cuda:{device}: {error}", device=dev, error=failed[0].error)))
            continue
        cells = {(d, m): _median(b, dev, d, m) for d in ("h2d", "d2h") for m in ("pinned", "pageable")}
        g = {k: (t.gbps if t else None) for k, t in cells.items()}
        nd = nvml.get(dev)
        link = link_gbps(nd.pcie_gen_current, nd.pcie_width_current) if nd else None
        top = link_gbps(nd.pcie_gen_max, nd.pcie_width_max) if nd else None
        # the link as trained now; each pinned rate as a share of what the link can do at its best
        link_text = f"Gen{nd.pcie_gen_current}x{nd.pcie_width_current} {link:.1f}" if nd and link else "N/A"
        h2d = g[("h2d", "pinned")]
        rows.append(
            [
                f"cuda:{dev}",
                _gb(h2d, top),
                _gb(g[("d2h", "pinned")], top),
                _gb(g[("h2d", "pageable")]),
                _gb(g[("d2h", "pageable")]),
                link_text,
            ]
        )
        page = g[("h2d", "pageable")]
        if h2d and page and h2d < 1.2 * page:
            out.append(
                PINNED_NOT_FASTER.finding(
                    title=msg(
                        "cuda:{device} pinned host-to-device {pinned} GB/s vs pageable {pageable} GB/s",
                        device=dev,
                        pinned=f"{h2d:.1f}",
                        pageable=f"{page:.1f}",
                    ),
                    fix=[NUMA_ADVICE, LOADER_ADVICE],
                )
            )
        if h2d and top and h2d < 0.5 * top:
            out.append(
                FAR_BELOW_LINK.finding(
                    title=msg(
                        "cuda:{device} pinned host-to-device {rate} GB/s is {share}% of the Gen{gen} x{width} link "
                        "({link} GB/s)",
                        device=dev,
                        rate=f"{h2d:.1f}",
                        share=f"{100 * h2d / top:.0f}",
                        gen=nd.pcie_gen_max,  # type: ignore[union-attr]
                        width=nd.pcie_width_max,  # type: ignore[union-attr]
                        link=f"{top:.1f}",
                    ),
                    fix=[
                        NUMA_ADVICE,
                        fix("Look for other processes copying at the same time", "cudadoctor gpus"),
                        LOADER_ADVICE,
                    ],
                )
            )
    size = max((t.size for t in b.transfers), default=0)
    out.insert(
        0,
        BANDWIDTH.finding(
            title=msg("Copy bandwidth, GB/s and % of PCIe link (median of {size} MiB copies)", size=size >> 20),
            tables=[Table(["cuda", "h2d pinned>", "d2h pinned>", "h2d pageable>", "d2h pageable>", "link"], rows)],
            fix=[LOADER_ADVICE],
        ),
    )
    return out


def _gb(v: float | None, top: float | None = None) -> str:
    """ "42.4", or "42.4 (67%)" against the link's best rate."""
    if v is None:
        return "N/A"
    # beyond the link (copies over NVLink-C2C on a GH200 are not PCIe): the share would mislead
    return f"{v:.1f} ({100 * v / top:.0f}%)" if top and v <= 1.1 * top else f"{v:.1f}"


def _smoke(s: SmokeFacts) -> list[Finding]:
    if s.timed_out or (s.error and not s.steps):
        title = msg("Smoke test: {error}", error=s.error) if s.error else msg("Smoke test: did not finish in time")
        return [SMOKE_FAILED.finding(title=title)]
    out: list[Finding] = []
    for step in s.steps:
        if step.error:
            arch = "no kernel image" in step.error
            out.append(
                SMOKE_FAILED.finding(
                    title=msg(
                        "Training the {model} on {device} failed: {error}",
                        model=step.model,
                        device=step.device,
                        error=step.error,
                    ),
                    fix=[
                        fix(
                            "The torch build lacks this GPU's architecture",
                            "cudadoctor explain CD205",
                            "cudadoctor check",
                        )
                    ]
                    if arch
                    else [fix("See what holds the GPU", "cudadoctor gpus")],
                )
            )
        elif step.losses and not step.losses[-1] < step.losses[0]:
            out.append(
                LOSS_NOT_FALLING.finding(
                    title=msg(
                        "{model} on {device}: loss {first} -> {last}",
                        model=step.model,
                        device=step.device,
                        first=f"{step.losses[0]:.4f}",
                        last=f"{step.losses[-1]:.4f}",
                    ),
                    fix=[_gpu_health_fix()],
                )
            )
    tolerance = 1e-3
    if s.max_loss_difference is not None and s.max_loss_difference > tolerance:
        out.append(
            CPU_GPU_MISMATCH.finding(
                title=msg(
                    "CPU and GPU losses differ by {diff}% (tolerance {tolerance}%)",
                    diff=f"{100 * s.max_loss_difference:.3f}",
                    tolerance=f"{100 * tolerance:.1f}",
                ),
                fix=[_gpu_health_fix()],
            )
        )
    if s.amp_finite is False:
        out.append(
            AMP_FAILED.finding(
                title=msg(
                    "AMP step ({dtype}): {error}",
                    dtype=s.amp_dtype or "autocast",
                    error=s.amp_error or msg("loss or weights not finite"),
                )
            )
        )
    if s.dataloader_ok is False:
        out.append(
            LOADER_FAILED.finding(
                title=msg(
                    "DataLoader with workers: {error}", error=s.dataloader_error or msg("not every batch arrived")
                ),
                fix=[fix("Give workers more shared memory", "docker run --shm-size=8g ...", "df -h /dev/shm")],
            )
        )
    if s.checkpoint_ok is False:
        out.append(
            CHECKPOINT_FAILED.finding(
                title=msg(
                    "Checkpoint round trip: {error}",
                    error=s.checkpoint_error or msg("tensors did not come back on the CPU"),
                ),
                fix=[fix("Load GPU checkpoints like this", "torch.load(path, map_location='cpu', weights_only=True)")],
            )
        )
    if s.gpu_skipped:
        title = msg("Smoke test ran on the CPU only; GPU half skipped: {reason}", reason=msg(s.gpu_skipped))
        out.append(MEASURE_SKIPPED.finding(title=title))
    if not any(x.severity is Severity.ERROR for x in out):
        if any(st.losses for st in s.steps):
            out.insert(0, SMOKE_OK.finding(title=_smoke_summary(s), tables=[_smoke_table(s)]))
        else:  # no step trained: nothing passed, and nothing is known to have failed
            out.insert(0, MEASURE_SKIPPED.finding(title=msg("Smoke test: no training step ran")))
    return out


def _gpu_health_fix() -> Fix:
    return fix("Check the GPU's health", "nvidia-smi -q -d ECC", "dcgmi diag -r 2")


def _smoke_table(s: SmokeFacts) -> Table:
    rows = [
        [st.model, st.device, _gb(st.steps_per_s), f"{st.losses[0]:.4f} -> {st.losses[-1]:.4f}"]
        for st in s.steps
        if st.losses
    ]
    return Table(["model", "device", "steps/s>", "loss first -> last"], rows)


def _smoke_summary(s: SmokeFacts) -> str:
    rate = {(st.model, st.device): st.steps_per_s for st in s.steps if st.steps_per_s}
    parts = [msg("loss fell on {devices}", devices=", ".join(sorted({st.device for st in s.steps if st.losses})))]
    if s.max_loss_difference is not None:
        parts.append(msg("CPU/GPU losses agree within {diff}%", diff=f"{100 * s.max_loss_difference:.4f}"))
    cpu, gpu = rate.get(("cnn", "cpu")), rate.get(("cnn", "cuda:0"))
    if cpu and gpu:
        # a run where the GPU lost (a real H100 once measured 0.3x: warm-up and a busy CPU) says so plainly
        parts.append(
            msg("CNN {ratio}x faster on the GPU", ratio=f"{gpu / cpu:.1f}")
            if gpu >= cpu
            else msg("CNN {ratio}x slower on the GPU", ratio=f"{cpu / gpu:.1f}")
        )
    if s.amp_dtype and s.amp_finite:
        parts.append(msg("AMP {dtype} ok", dtype=s.amp_dtype))
    if s.dataloader_ok:
        parts.append(msg("DataLoader workers ok"))
    if s.checkpoint_ok:
        parts.append(msg("checkpoint loads on CPU"))
    return msg("Smoke test: {parts}", parts=joined(parts))
