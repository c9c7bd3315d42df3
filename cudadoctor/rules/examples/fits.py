"""Example `cudadoctor fit` runs: a model's size (read from its checkpoint or config) against the free
memory of the GPUs here."""

from __future__ import annotations

from cudadoctor.facts.fit import FitFacts, FitGpu, ModelSize

GiB = 1 << 30


def _rtx4090(free: float = 22.5) -> list[FitGpu]:
    return [FitGpu(0, "NVIDIA GeForce RTX 4090", memory_total=24 * GiB, memory_free=int(free * GiB))]


def fits() -> dict[str, FitFacts]:
    llama8b = "/home/alice/models/Meta-Llama-3.1-8B-Instruct"
    return {
        # Llama 3.1 8B in bf16 on a 24 GB RTX 4090: inference fits, full fine-tuning does not
        "fit-llama-8b-on-rtx4090": FitFacts(
            ModelSize(
                llama8b,
                "checkpoint",
                parameters=8_030_261_248,
                exact=True,
                weights_bytes=16_060_522_496,
                dtype="bfloat16",
                architecture="llama",
                hf_dir=llama8b,
            ),
            gpus=_rtx4090(),
        ),
        # Llama 3.1 70B from its config on two busy A100 40GB cards: it fits on neither
        "fit-llama-70b-on-a100-40gb": FitFacts(
            ModelSize("meta-llama/Llama-3.1-70B", "config", parameters=70_553_706_496, architecture="llama"),
            gpus=[FitGpu(i, "NVIDIA A100-PCIE-40GB", 40 * GiB, int(free * GiB)) for i, free in enumerate((12, 39))],
        ),
        # a pickled checkpoint whose tensors could not be read without running its code
        "fit-unknown-size": FitFacts(
            ModelSize("ckpt/model.pt", "checkpoint", why_unknown="the pickle holds a model object, not tensors"),
            gpus=_rtx4090(),
        ),
    }
