"""Memory: the GPU's near its limit (CD703) or far below it (a larger batch fits, CD702), and the host's
shared memory the DataLoader workers hand batches through (/dev/shm nearly full, CD709)."""

from __future__ import annotations

from cudadoctor.facts.watch import Timeline
from cudadoctor.knowledge.units import format_size
from cudadoctor.model import Finding, msg
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.watch import stats
from cudadoctor.rules.watch.entries import MEMORY_NEAR_LIMIT, MEMORY_UNDERUSED, SHM_FULL
from cudadoctor.rules.watch.stats import MIN_SAMPLES

UNDERUSED_SHARE = 0.40  # peak below this share of the card: a larger batch fits
NEAR_LIMIT_SHARE = 0.95  # the card's memory at or above this share: the next spike is an out-of-memory error
SHM_FULL_SHARE = 0.90


def memory(tl: Timeline, index: int) -> list[Finding]:
    info = stats.gpu_info(tl, index)
    total = info.memory_total if info else None
    pairs = stats.on_gpu(tl, index)
    if not total or len(pairs) < MIN_SAMPLES:
        return []
    used = stats.known(g.memory_used for _, g in pairs)
    tree = stats.known(g.tree_memory for _, g in pairs)
    if used and max(used) >= NEAR_LIMIT_SHARE * total:
        return [_near_limit(tl, index, used, tree, total)]
    if len(tree) >= MIN_SAMPLES and 0 < max(tree) < UNDERUSED_SHARE * total:
        peak = max(tree)
        room = int(0.85 * total / peak)
        return [
            MEMORY_UNDERUSED.finding(
                title=msg(
                    "{gpu} memory far below the card's: peak {peak} of {total} ({share} %)",
                    gpu=stats.gpu_label(tl, index),
                    peak=format_size(int(peak)),
                    total=format_size(total),
                    share=f"{peak / total * 100:.0f}",
                ),
                fix=[
                    fix(
                        msg(
                            "Raise the batch size: memory for about {room}× the activations is free; double it and "
                            "watch again (scale the learning rate with it)",
                            room=room,
                        ),
                        "batch_size *= 2",
                    )
                ],
            )
        ]
    return []


def _near_limit(tl: Timeline, index: int, used: list[float], tree: list[float], total: int) -> Finding:
    pairs = stats.on_gpu(tl, index)
    others = stats.known(g.other_memory for _, g in pairs)
    mine = (
        msg("the command's own peak {peak}", peak=format_size(int(max(tree))))
        if tree
        else msg("the command's own share unknown")
    )
    if others and max(others) > 0:
        mine = msg("{mine}; other processes held up to {others}", mine=mine, others=format_size(int(max(others))))
    return MEMORY_NEAR_LIMIT.finding(
        title=msg(
            "{gpu} memory near its limit: {used} of {total} ({detail})",
            gpu=stats.gpu_label(tl, index),
            used=format_size(int(max(used))),
            total=format_size(total),
            detail=mine,
        ),
        fix=[
            fix("Halve the batch, keeping the effective batch with gradient accumulation", "batch_size //= 2"),
            fix(
                "Compute in bfloat16 (half the activation memory on Ampere and newer)",
                'with torch.autocast("cuda", dtype=torch.bfloat16):',
                "    loss = loss_fn(model(inputs), targets)",
            ),
            fix(
                "Trade compute for memory on deep models",
                "torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)",
            ),
            fix(
                "Let the allocator grow segments instead of fragmenting",
                "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
            ),
        ],
    )


def shm(tl: Timeline) -> list[Finding]:
    pairs = [(s.shm_used, s.shm_total) for s in tl.samples if s.shm_used is not None and s.shm_total]
    if not pairs:
        return []
    used, total = max(pairs, key=lambda p: p[0] / p[1])  # type: ignore[operator]
    assert used is not None and total is not None
    if used < SHM_FULL_SHARE * total:
        return []
    docker = total <= 256 << 20
    return [
        SHM_FULL.finding(
            title=msg(
                "/dev/shm was {share} % full ({used} of {total})",
                share=f"{used / total * 100:.0f}",
                used=format_size(used),
                total=format_size(total),
            ),
            why=msg("{page} This one is that small: a container's default.", page=msg(SHM_FULL.explanation))
            if docker
            else None,
            fix=[
                fix(
                    "Give the container more shared memory (Docker; Kubernetes: an emptyDir with medium: Memory "
                    "mounted at /dev/shm)",
                    "docker run --shm-size=8g …",
                    "docker run --ipc=host …",
                ),
                fix(
                    "Or share tensors through files instead (slower, no /dev/shm limit)",
                    'torch.multiprocessing.set_sharing_strategy("file_system")',
                ),
            ],
        )
    ]
