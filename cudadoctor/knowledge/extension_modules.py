"""The shared object of a CUDA extension -> the distribution pip installs it as: what triage names when an
extension's library lacks a symbol of torch's C++ API (it was built for another torch).

A package whose compiled modules live in its own import directory is named by that directory
(`xformers/_C.so`, `vllm/_C.abi3.so`, `bitsandbytes/libbitsandbytes_cuda*.so`, `torch_scatter/_scatter_cuda.so`,
`pytorch3d/_C*.so`, `detectron2/_C*.so`, `mmcv/_ext*.so`); the pip name is the project's PyPI name. The
top-level modules are the `CUDAExtension(name=…)` of each project's setup.py: flash-attention's
`flash_attn_2_cuda` (its traceback in Dao-AILab/flash-attention#931), state-spaces/mamba's
`selective_scan_cuda`, Dao-AILab/causal-conv1d's `causal_conv1d_cuda`.
"""

from __future__ import annotations

# the start of the import directory or top-level module -> the pip distribution
MODULES: dict[str, str] = {
    "flash_attn": "flash-attn",
    "xformers": "xformers",
    "vllm": "vllm",
    "bitsandbytes": "bitsandbytes",
    "torch_scatter": "torch-scatter",
    "torch_sparse": "torch-sparse",
    "torch_cluster": "torch-cluster",
    "pytorch3d": "pytorch3d",
    "detectron2": "detectron2",
    "mmcv": "mmcv",
    "causal_conv1d": "causal-conv1d",
    "mamba_ssm": "mamba-ssm",
    "selective_scan_cuda": "mamba-ssm",
}


def distribution(module: str) -> str | None:
    """The pip name for a library's import directory or file name; None when it is not in the table."""
    return next((dist for prefix, dist in MODULES.items() if module.startswith(prefix)), None)
