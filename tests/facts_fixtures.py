"""Hand-written facts for machines nobody here owns: the package's one kit of fact builders, which the
examples use too (cudadoctor/rules/examples/base.py)."""

from cudadoctor.rules.examples.base import (
    GiB,
    driver_ok,
    gpu,
    healthy,
    libcuda_ok,
    linux,
    no_driver,
    pip_venv,
    torch_cpu,
    torch_cuda,
)

__all__ = [
    "GiB",
    "driver_ok",
    "gpu",
    "healthy",
    "libcuda_ok",
    "linux",
    "no_driver",
    "pip_venv",
    "torch_cpu",
    "torch_cuda",
]
