"""The version, in a module of its own: every layer may read it without importing the package's __init__,
whose lazy attributes load api.py (the top of the house)."""

__version__ = "0.1.0"
