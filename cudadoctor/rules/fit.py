"""`cudadoctor fit`: will the model's weights (or its training states) fit in a GPU's free memory now."""

from __future__ import annotations

import math

from cudadoctor.facts.fit import FitFacts, FitGpu
from cudadoctor.knowledge.memory import DTYPE_BYTES, INFERENCE, LEFT_OUT, TRAINING
from cudadoctor.knowledge.units import format_size
from cudadoctor.model import Finding, Severity, Table, msg, msg_n
from cudadoctor.rules.catalogue import entry, fix

ESTIMATE = entry(
    "CD660",
    "fit-estimate",
    Severity.INFO,
    "Checkpoint",
    "What the model takes in GPU memory, by precision and use",
    f"""The memory the model's parameters take on the GPU: the weights for inference in each common precision,
    and for training with Adam the weights, gradients and optimizer states (16 bytes a parameter, mixed
    precision or float32 alike). The estimate leaves out {LEFT_OUT}: leave headroom, and measure a real run
    with `cudadoctor watch -- python train.py`.""",
)
NO_GPU_FITS = entry(
    "CD661",
    "fit-too-large",
    Severity.ERROR,
    "Checkpoint",
    "The model does not fit in any one GPU's free memory",
    """What was asked for (inference in the checkpoint's precision, or training with Adam) needs more memory
    than any GPU has free now, before activations are even counted. Load it in a lower precision, spread it
    over several GPUs, or free memory another process holds.""",
    (fix("See who holds the memory", "cudadoctor gpus --sort-by-free"),),
)
FITS = entry(
    "CD662",
    "fit-fits",
    Severity.OK,
    "Checkpoint",
    "The model fits in a GPU's free memory",
    f"""The model's own states fit in the free memory of the GPUs named. What the estimate leaves out
    ({LEFT_OUT}) must fit in what remains.""",
)
UNKNOWN = entry(
    "CD663",
    "fit-unknown",
    Severity.INFO,
    "Checkpoint",
    "How many parameters the model has is unknown",
    """The parameter count could not be told from what was given, so no memory figure is given either (a
    guess would be a wrong answer). Point `cudadoctor fit` at the weights: a checkpoint file, or the
    directory that holds the *.safetensors shards and their index.""",
)


def _fits_on(need: float, gpus: list[FitGpu] | None) -> str:
    if gpus is None:
        return "unknown"
    names = [str(g.index) for g in gpus if g.memory_free is not None and g.memory_free >= need]
    if names:
        return "GPU " + ", ".join(names)
    return "none"


def _rows(params: int, gpus: list[FitGpu] | None, own: tuple[str, float] | None) -> list[list[str]]:
    rows = []
    uses = [("inference", label, b) for label, b in INFERENCE] + [("training", label, b) for label, b in TRAINING]
    if own is not None and all(abs(own[1] - b) > 1e-9 for _use, _label, b in uses[: len(INFERENCE)]):
        uses.insert(0, ("inference", own[0], own[1]))
    for use, label, per in uses:
        need = params * per
        rows.append([use, label, format_size(int(need)), _fits_on(need, gpus)])
    return rows


def evaluate(facts: FitFacts) -> list[Finding]:
    m = facts.model
    if m.parameters is None:
        return [
            UNKNOWN.finding(
                title=msg(
                    "The parameter count of {path} is unknown: {why}",
                    path=m.path,
                    why=m.why_unknown or msg("no tensors"),
                )
            )
        ]
    params = m.parameters
    own = (m.dtype, DTYPE_BYTES[m.dtype]) if m.dtype in DTYPE_BYTES else None
    if m.source == "config":
        how = msg("from its config")
    else:
        how = msg("counted from its tensors") if m.exact else msg("at least")
    table = Table(["use", "precision", "needs at least>", "fits now on"], _rows(params, facts.gpus, own))
    why = msg("{page} Note: {note}.", page=msg(ESTIMATE.explanation), note=m.why_unknown) if m.why_unknown else None
    findings = [
        ESTIMATE.finding(
            title=msg("{n} parameters ({how}): memory by precision and use", n=f"{params:,}", how=how),
            why=why,
            tables=[table],
        )
    ]
    if facts.gpus is None:
        return findings  # whether it fits is unknown: NVML could not tell; the table says "unknown"
    if facts.training:
        use, per = msg("Training with Adam"), TRAINING[0][1]
    else:
        dtype, per = (m.dtype, own[1]) if own is not None else ("bfloat16", 2.0)
        use = msg("Inference in {dtype}", dtype=dtype)
    need = params * per
    free = [g for g in facts.gpus if g.memory_free is not None]
    fitting = [g for g in free if g.memory_free is not None and g.memory_free >= need]
    if fitting:
        names = ", ".join(str(g.index) for g in fitting)
        findings.append(
            FITS.finding(
                title=msg("{use} ({size}) fits on GPU {gpus}", use=use, size=format_size(int(need)), gpus=names)
            )
        )
        return findings
    if not free:
        return findings
    best = max(free, key=lambda g: g.memory_free or 0)
    total_free = sum(g.memory_free or 0 for g in free)
    spread = math.ceil(need / (best.memory_free or 1)) if best.memory_free else None
    fixes = list(NO_GPU_FITS.fixes)
    if m.hf_dir is not None and not facts.training:
        fixes += _transformers_fixes(m.hf_dir, params, free)
    across = msg_n(
        "{page} {n} GPU has {size} free; it needs at least {spread} GPUs' worth."
        if spread and spread > 1
        else "{page} {n} GPU has {size} free.",
        "{page} {n} GPUs have {size} free together; it needs at least {spread} GPUs' worth."
        if spread and spread > 1
        else "{page} {n} GPUs have {size} free together.",
        len(free),
        page=msg(NO_GPU_FITS.explanation),
        n=len(free),
        size=format_size(total_free),
        spread=spread,
    )
    findings.append(
        NO_GPU_FITS.finding(
            title=msg(
                "{use} needs at least {size}: no GPU has that much free (most: {free} on GPU {index})",
                use=use,
                size=format_size(int(need)),
                free=format_size(best.memory_free),
                index=best.index,
            ),
            why=across,
            fix=fixes,
        )
    )
    return findings


def _transformers_fixes(directory: str, params: int, gpus: list[FitGpu]) -> list:
    """For a Hugging Face model directory: the lowest precision that fits the freest GPU, and Accelerate's
    spreading over every GPU (and the CPU)."""
    where = repr(directory)
    out = []
    best = max(g.memory_free or 0 for g in gpus)
    lower = [(label, b) for label, b in INFERENCE if params * b <= best]
    if lower:
        label, b = lower[0]
        fitting = ", ".join(str(g.index) for g in gpus if (g.memory_free or 0) >= params * b)
        if b == 4.0:
            load = [
                "import torch",
                "from transformers import AutoModelForCausalLM",
                f"model = AutoModelForCausalLM.from_pretrained({where}, torch_dtype=torch.float32, device_map='cuda')",
            ]
        elif b == 2.0:
            load = [
                "import torch",
                "from transformers import AutoModelForCausalLM",
                f"model = AutoModelForCausalLM.from_pretrained({where}, torch_dtype=torch.bfloat16, device_map='cuda')",
            ]
        else:
            option = "load_in_8bit=True" if b == 1.0 else "load_in_4bit=True, bnb_4bit_quant_type='nf4'"
            load = [
                "from transformers import AutoModelForCausalLM, BitsAndBytesConfig",
                f"model = AutoModelForCausalLM.from_pretrained({where}, "
                f"quantization_config=BitsAndBytesConfig({option}), device_map='cuda')",
            ]
        needs = format_size(int(params * b))
        out.append(
            fix(
                msg(
                    "Load it in {precision} ({size}: fits on GPU {gpus}; bitsandbytes for 8 and 4 bits)",
                    precision=label,
                    size=needs,
                    gpus=fitting,
                ),
                *load,
            )
        )
    out.append(
        fix(
            "Spread the layers over every GPU, then the CPU (needs accelerate)",
            "from transformers import AutoModelForCausalLM",
            f"model = AutoModelForCausalLM.from_pretrained({where}, torch_dtype='auto', device_map='auto')",
        )
    )
    return out
