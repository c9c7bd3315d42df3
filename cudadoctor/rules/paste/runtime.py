"""Errors of a program that ran on the GPU: out of memory and what torch's numbers say about it, device-side
asserts, a busy GPU, CUDA_VISIBLE_DEVICES hiding every GPU, harmless warnings, and a line showing the GPU at work.
"""

from __future__ import annotations

from cudadoctor.facts.paste import PasteHit
from cudadoctor.model import Finding, Fix, Message, Severity, Table, msg
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.paste.entries import CUDA_RUNTIME, HARMLESS, STACK_WORKS

RUN_KINDS = (
    "out-of-memory",
    "device-side-assert",
    "labels-out-of-range",
    "illegal-memory-access",
    "launch-failure",
    "invalid-ordinal",
    "cuda-unknown-error",
    "device-mismatch",
    "torch-attribute-typo",
    "ddp-unused",
)


# errors of a program that ran on the GPU (or of its code): the paste explains the problem
EXPLAINED_AT_RUN_TIME = (
    "out-of-memory",
    "device-side-assert",
    "labels-out-of-range",
    "illegal-memory-access",
    "launch-failure",
    "device-mismatch",
    "torch-attribute-typo",
    "ddp-unused",
    "kv-cache-too-small",
    "harmless-warning",
    "gpu-ran",
)


def explained_at_run_time(h: PasteHit) -> bool:
    """The paste explains this error by itself: a run-time error of the program, or an invalid device ordinal
    where the code asks for an index past the first (cuda:1 on a one-GPU machine)."""
    return h.kind in EXPLAINED_AT_RUN_TIME or (h.kind == "invalid-ordinal" and bool(h.detail.get("index")))


_RUN_ERRORS = ("cuda-unknown-error",)  # the machine, not the program (a busy GPU is read as cuInit's 46, CD122)


def _runtime_fix(h: PasteHit) -> Fix:
    k = h.kind
    if k == "out-of-memory":
        return _oom_fix(h)
    if k in ("device-side-assert", "labels-out-of-range"):
        return fix(
            msg("A device-side assert: find the failing operation (often a label or index out of range)"),
            "CUDA_LAUNCH_BLOCKING=1 python train.py",
        )
    if k in ("illegal-memory-access", "launch-failure"):
        return fix(
            msg("A kernel failed while running: get the exact operation"), "CUDA_LAUNCH_BLOCKING=1 python train.py"
        )
    if k == "invalid-ordinal":
        index = h.detail.get("index")
        return fix(
            msg(
                "The code asks for GPU {index}, which this process does not see: count the GPUs, then use 0 to n-1",
                index=index,
            )
            if index
            else msg("The code asks for a GPU index this process does not see: count the GPUs, then use 0 to n-1"),
            'python -c "import torch; print(torch.cuda.device_count())"',
            'echo "[$CUDA_VISIBLE_DEVICES]"',
        )
    if k == "device-mismatch":
        return fix(
            msg("A bug in the code: move every tensor and module to the same device"),
            "x = x.to(device)  # and model.to(device), before the forward pass",
        )
    if k == "kv-cache-too-small":
        return fix(
            msg("The model's context does not fit the KV cache: lower max_model_len, or give vLLM more memory"),
            "vllm serve MODEL --max-model-len 8192",
            "vllm serve MODEL --gpu-memory-utilization 0.95",
        )
    if k == "ddp-unused":
        return fix(
            msg("A bug in the model: a parameter does not reach the loss; use it, or let DDP find such parameters"),
            "model = DistributedDataParallel(model, device_ids=[local_rank], find_unused_parameters=True)",
            lang="python",
        )
    if k == "torch-attribute-typo":
        return fix(msg("A typo in the code: the function is torch.cuda.is_available()"), "torch.cuda.is_available()")
    return fix(
        msg("After suspend/resume: reload the unified-memory module"),
        "sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm",
    )


def _size(detail: dict[str, str], key: str) -> int | None:
    v = detail.get(key, "")
    return int(v) if v.isdigit() else None


def oom_cause(detail: dict[str, str]) -> str | None:
    """What the numbers in torch's OOM message say: "fragmentation" (memory reserved by PyTorch but
    unallocated would have held the request), "fits-free" (the GPU had twice the request free),
    "others" (memory outside this process), "too-big" (the
    request alone exceeds the GPU), "does-not-fit" (the job needs more than the GPU has); None when the
    message carries no numbers."""
    total, free, tried = _size(detail, "total"), _size(detail, "free"), _size(detail, "tried")
    reserved, allocated = _size(detail, "reserved"), _size(detail, "allocated")
    if total is None:
        return "too-big" if tried is not None and tried > 48 << 30 else None
    if tried is not None and tried > total:
        return "too-big"
    others = _size(detail, "others")
    if others is None and reserved is not None and free is not None:
        others = max(0, total - free - reserved)
    this = _size(detail, "this_process")
    if this is not None and free is not None:
        others = max(others or 0, total - free - this)
    if others is not None and others > total // 4:
        return "others"
    if tried is not None and free is not None and tried < free // 2 and "expandable" not in detail:
        return "fits-free"  # the driver had the memory: fragmented, or capped for this process
    if reserved is not None and allocated is not None and tried is not None:
        unused = reserved - allocated  # reserved by PyTorch, unallocated: a large share is fragmentation
        if unused >= tried and unused > total // 20 and unused * 5 >= reserved and "expandable" not in detail:
            return "fragmentation"
    return "does-not-fit"


def _gib(n: int | None) -> str:
    from cudadoctor.knowledge.units import format_size

    return format_size(n)


def _oom_title(h: PasteHit) -> Message:
    d = h.detail
    cause = oom_cause(d)
    total, free, tried = _size(d, "total"), _size(d, "free"), _size(d, "tried")
    reserved, allocated = _size(d, "reserved"), _size(d, "allocated")
    if cause == "too-big":
        return msg(
            "Out of memory: one allocation of {tried} is more than the GPU's {total}: the input is far too large",
            tried=_gib(tried),
            total=_gib(total) if total else msg("memory"),
        )
    if cause == "others":
        held = total - (free or 0) - (reserved if reserved is not None else _size(d, "this_process") or 0)  # type: ignore[operator]
        return msg(
            "Out of memory: about {held} of the GPU's {total} is held outside this program",
            held=_gib(max(held, _size(d, "others") or 0)),
            total=_gib(total),
        )
    if cause == "fragmentation":
        return msg(
            "Out of memory from fragmentation: {unused} is reserved by PyTorch but unallocated, {tried} was asked",
            unused=_gib((reserved or 0) - (allocated or 0)),
            tried=_gib(tried),
        )
    if cause == "fits-free":
        return msg(
            "Out of memory although {free} is free and {tried} was asked: the memory is fragmented or capped",
            free=_gib(free),
            tried=_gib(tried),
        )
    if cause == "does-not-fit":
        return msg(
            "Out of memory: the job needs more than the GPU's {total} ({tried} more was asked, {free} free)",
            total=_gib(total),
            tried=_gib(tried),
            free=_gib(free),
        )
    return msg("Out of memory while running: the job does not fit in the GPU's memory as it is")


def _oom_fix(h: PasteHit) -> Fix:
    cause = oom_cause(h.detail)
    if cause in ("fragmentation", "fits-free"):
        return fix(
            msg("Let the allocator grow segments instead of fragmenting (then run again)"),
            "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        )
    if cause == "others":
        return fix(
            msg("See who holds the GPU's memory, and end what is stale"),
            "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
            "cudadoctor gpus",
        )
    if cause == "too-big":
        return fix(
            msg("Make the input smaller (image resolution, sequence length) or process it in tiles"),
            "nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv",
        )
    return fix(
        msg("Make the job smaller: a smaller batch, shorter sequences, half precision, no gradients in evaluation"),
        "with torch.no_grad():  # around validation and inference",
        "    outputs = model(inputs)",
        "with torch.autocast('cuda', dtype=torch.bfloat16):  # or float16",
        "    loss = loss_fn(model(inputs), targets)",
        lang="python",
    )


def run_time_errors(hits: list[PasteHit]) -> Finding:
    kinds = list(dict.fromkeys(h.kind for h in hits))
    severity = Severity.ERROR if any(k in _RUN_ERRORS for k in kinds) else None
    first = hits[0]
    title = (
        _oom_title(first)
        if first.kind == "out-of-memory"
        else msg("A CUDA error while running: {error}", error=first.text)
    )
    tables = []
    if first.kind == "out-of-memory" and _size(first.detail, "total") is not None:
        d = first.detail
        labels = (
            ("tried", msg("asked for")),
            ("total", msg("GPU total")),
            ("free", msg("free on the GPU")),
            ("allocated", msg("allocated by PyTorch")),
            ("reserved", msg("reserved by PyTorch")),
            ("others", msg("other processes")),
        )
        rows = [[label, _gib(_size(d, key))] for key, label in labels if _size(d, key) is not None]
        tables.append(Table([msg("Memory (torch's message)"), msg("Size")], rows))
    seen: set[str] = set()
    fixes = []
    for h in hits:
        if h.kind not in seen:
            seen.add(h.kind)
            fixes.append(_runtime_fix(h))
    return CUDA_RUNTIME.finding(title=title, fix=fixes, severity=severity, tables=tables)


def visible_hides(cvd: PasteHit, err: PasteHit) -> Finding:
    from cudadoctor.rules.visible import ALL_HIDDEN

    value = cvd.detail.get("value", "")
    return ALL_HIDDEN.finding(
        title=msg(
            'CUDA_VISIBLE_DEVICES={value} hides every GPU here: torch says "No CUDA GPUs are available"',
            value=f"'{value}'",
        ),
        why=msg(
            "The paste sets CUDA_VISIBLE_DEVICES ({line}), and CUDA then found no GPU: the variable names a "
            "device this machine does not have (numbers start at 0), or is empty.",
            line=cvd.text,
        ),
        fix=[
            fix(msg("Remove the setting from the code or the command, or name a GPU that exists"), "nvidia-smi -L"),
            fix(msg("On a one-GPU machine"), "export CUDA_VISIBLE_DEVICES=0"),
        ],
    )


def hidden_inside(err: PasteHit) -> Finding:
    from cudadoctor.rules.visible import ALL_HIDDEN

    return ALL_HIDDEN.finding(
        title=msg("torch sees a GPU outside this program but none inside it: CUDA_VISIBLE_DEVICES hides them"),
        why=msg(
            'The paste says torch.cuda.is_available() is True, yet the program fails with "{error}". The '
            "difference is the program's own environment: it (or its launcher, or a --gpu/--gpu_id option) "
            "sets CUDA_VISIBLE_DEVICES to a GPU this machine does not have.",
            error=err.text,
        ),
        fix=[
            fix(
                msg("Find where the program sets it"),
                "grep -rn CUDA_VISIBLE_DEVICES --include='*.py' --include='*.sh' .",
            ),
            fix(
                msg("Then name a GPU that exists (numbers start at 0)"),
                "nvidia-smi -L",
                "export CUDA_VISIBLE_DEVICES=0",
            ),
        ],
    )


def harmless(hits: list[PasteHit]) -> Finding:
    names = ", ".join(dict.fromkeys(h.detail.get("warning", "?") for h in hits))
    return HARMLESS.finding(title=msg("A harmless warning ({names}): nothing to fix in the setup", names=names))


def stack_works(h: PasteHit) -> Finding:
    return STACK_WORKS.finding(
        title=msg("The GPU ran: {line}", line=h.text),
        tables=[Table([msg("What shows it")], [[h.detail.get("why", "")]])],
    )
