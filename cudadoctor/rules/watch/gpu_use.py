"""Whether the command used a GPU at all: a tree that never appears in NVML's process list (or never loads
libcuda) while its CPU is busy trains on the CPU (CD700); NVML's process IDs from another PID namespace
hide the command's own GPU use (CD713)."""

from __future__ import annotations

from cudadoctor.facts.watch import Sample, Timeline
from cudadoctor.model import Finding, msg, msg_n
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.watch import stats
from cudadoctor.rules.watch.entries import CPU_ONLY, PIDS_HIDDEN
from cudadoctor.rules.watch.stats import MIN_SAMPLES, starved_at, used_gpus

CPU_ONLY_CPU = 80.0  # percent of one core, mean over the run: a tree this busy is computing


def pids_hidden(tl: Timeline) -> list[Finding]:
    hidden = [
        g
        for s in tl.samples
        for g in s.gpus
        if g.unseen_processes and not g.tree_processes and g.tree_memory is None and g.unseen_processes > 0
    ]
    if not hidden or never_mapped_libcuda(tl):
        return []  # no process of the tree loaded libcuda: its GPU use is known, none (CD700 says so)
    return [
        PIDS_HIDDEN.finding(
            fix=[
                fix(
                    "Run the container in the host's PID namespace (Docker), or watch from the host",
                    "docker run --pid=host …",
                    "cudadoctor watch --pid PID   # on the host, with the host's PID of the training",
                )
            ]
        )
    ]


def never_mapped_libcuda(tl: Timeline) -> bool:
    """Every process of the tree, in every sample, known not to map libcuda (/proc/PID/maps): the tree
    never used a GPU, whatever NVML's PID namespace shows. One unknown process makes it unknown."""
    procs = [p for s in tl.samples for p in s.procs]
    return bool(procs) and all(p.libcuda is False for p in procs)


def _tree_visible(tl: Timeline) -> list[Sample]:
    """Samples where the tree's presence on every GPU is known: PIDs comparable and process list read, or
    no process of the tree ever loaded libcuda."""
    if never_mapped_libcuda(tl):
        return [s for s in tl.samples if s.procs]
    out = []
    for s in tl.samples:
        if not s.gpus:
            continue
        if all(g.tree_processes is not None and not g.unseen_processes for g in s.gpus):
            out.append(s)
    return out


def cpu_only(tl: Timeline) -> list[Finding]:
    if not tl.gpus or used_gpus(tl):
        return []
    visible = _tree_visible(tl)
    if len(visible) < MIN_SAMPLES:
        return []
    tree = stats.known(stats.tree_cpu(s) for s in visible)
    limits = [starved_at(s, tl.cpu_count) for s in visible]
    starved = all(x is not None for x in limits) and stats.mean(tree) >= stats.mean(stats.known(limits))
    if len(tree) < MIN_SAMPLES or (stats.mean(tree) < CPU_ONLY_CPU and not starved):
        return []
    cvd = tl.cuda_visible_devices
    fixes = []
    why = None  # the page as it is, unless this machine adds to it
    if never_mapped_libcuda(tl):
        why = msg("{page} No process of the command loaded libcuda (/proc/PID/maps).", page=msg(CPU_ONLY.explanation))
    if cvd is not None and cvd.strip() in ("", "-1", "none", "NoDevFiles"):
        why = msg(
            "{page} Here CUDA_VISIBLE_DEVICES={value} hides every GPU from the command although NVML sees {n}.",
            page=why or msg(CPU_ONLY.explanation),
            value=repr(cvd),
            n=len(tl.gpus),
        )
        fixes.append(fix("Let the command see a GPU", "unset CUDA_VISIBLE_DEVICES"))
    fixes += [
        fix(
            "Move the model and every batch to the GPU (in the training script)",
            'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
            "model = model.to(device)",
            "inputs, targets = inputs.to(device), targets.to(device)",
        ),
        fix(
            "Check that this torch can use the GPU (False: a CPU-only wheel or a driver problem)",
            'python -c "import torch; print(torch.__version__, torch.cuda.is_available())"',
            "cudadoctor check",
        ),
    ]
    return [
        CPU_ONLY.finding(
            title=msg_n(
                "The command never used a GPU while its CPU was busy ({cpu} % of a core on average, {n} GPU present)",
                "The command never used a GPU while its CPU was busy ({cpu} % of a core on average, {n} GPUs present)",
                len(tl.gpus),
                cpu=f"{stats.mean(tree):.0f}",
                n=len(tl.gpus),
            ),
            why=why,
            fix=fixes,
        )
    ]
