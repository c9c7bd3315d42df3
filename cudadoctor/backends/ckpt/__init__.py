"""Checkpoint files as bytes: what format a file is, and what its pickle holds, WITHOUT torch and
WITHOUT unpickling.

- `pickles`: the pickle reader that never executes, and the weights_only allow-list audit;
- `structure`: what the pickle would build (tensors, storages, contents, the state dict);
- `formats`: sniffing a path and the readers of each format (torch zip, legacy, safetensors, DCP, HF);
- `request`: the request to the torch child in the target interpreter, and `__main__` classes.
"""

from __future__ import annotations

from cudadoctor.backends.ckpt.formats import InputError, inspect_path, is_lfs_pointer
from cudadoctor.backends.ckpt.pickles import PickleError, PickleScan, audit_globals, scan_pickle
from cudadoctor.backends.ckpt.request import (
    CHILD,
    CHILD_MARK,
    child_request,
    locate_main_definitions,
    run_child_request,
)
from cudadoctor.backends.ckpt.structure import WRAPPER_PREFIXES, detect_prefixes, state_dict_keys, tensor_of

__all__ = [
    "CHILD",
    "CHILD_MARK",
    "WRAPPER_PREFIXES",
    "InputError",
    "PickleError",
    "PickleScan",
    "audit_globals",
    "child_request",
    "detect_prefixes",
    "inspect_path",
    "is_lfs_pointer",
    "locate_main_definitions",
    "run_child_request",
    "scan_pickle",
    "state_dict_keys",
    "tensor_of",
]
