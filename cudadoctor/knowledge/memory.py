"""What a model's parameters take in GPU memory, by precision and use. Estimates of the model's own
states only: activations, the KV cache, the CUDA context and the allocator's fragmentation come on top
(what `cudadoctor watch -- CMD` measures)."""

from __future__ import annotations

# bytes per element of each dtype a checkpoint can hold (torch dtype names without "torch.")
DTYPE_BYTES: dict[str, float] = {
    "float64": 8,
    "float32": 4,
    "float": 4,
    "tfloat32": 4,
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "F64": 8,  # safetensors' names
    "F32": 4,
    "BF16": 2,
    "F16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}

# (label, bytes per parameter) for the weights alone, the way each is loaded for inference. int8 and
# 4-bit (bitsandbytes LLM.int8() / NF4) also keep per-block scales and leave some layers in 16 bits:
# a few percent more, which the "at least" in the findings covers. Source: Hugging Face's Model Memory
# Utility (accelerate estimate-memory), whose table has float32, float16/bfloat16, int8 and int4 at
# 4, 2, 1 and 0.5 bytes per parameter (huggingface.co/docs/accelerate/usage_guides/model_size_estimator).
INFERENCE: tuple[tuple[str, float], ...] = (
    ("float32", 4.0),
    ("bfloat16 / float16", 2.0),
    ("int8", 1.0),
    ("4-bit", 0.5),
)

# Training with Adam keeps, per parameter: the weights, their gradients, and the optimizer's two moments;
# under mixed precision also an fp32 master copy of the weights. Mixed precision (bf16/fp16 weights and
# gradients, fp32 master weights and moments): 2 + 2 + 12 = 16 bytes (ZeRO, Rajbhandari et al., 2019,
# arXiv:1910.02054, section 3.1: "2Ψ + 2Ψ + KΨ" with K = 12 for mixed-precision Adam). Plain fp32: 4 + 4 +
# 8 = 16 bytes as well (Hugging Face's estimator: "1x for the model, 1x for the gradients, and 2x for the
# optimizer").
TRAINING: tuple[tuple[str, float], ...] = (
    ("Adam, mixed precision", 16.0),
    ("Adam, float32", 16.0),
)

# what the estimate leaves out, said with every answer
LEFT_OUT = (
    "activations (they grow with batch size and sequence length), the KV cache of generation, "
    "the CUDA context (several hundred MiB per process) and the allocator's fragmentation"
)
