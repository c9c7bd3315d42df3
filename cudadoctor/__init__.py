"""cudadoctor: why PyTorch cannot use your NVIDIA GPU, or how well it can, and the fix."""

__version__ = "0.1.0"
