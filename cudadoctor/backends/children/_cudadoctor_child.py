"""What every child script that runs in the TARGET interpreter shares (stdlib only). A script imports it by
its bare name from its own directory and then calls leave_path(), which takes that directory off sys.path
again (also when the module was imported before: the shared torch child loads several scripts).

Nothing from that directory may stay first on sys.path: a script's name there would shadow the target
interpreter's packages of the same name (as backends/cuda.py once shadowed cuda-python's `cuda`).
"""

import os
import sys

HERE = os.path.dirname(os.path.realpath(__file__))

# safetensors' dtype names (its format spec) as torch names them: the doctor's reader of the header
# (backends/ckpt/formats.py) and the child that loads the file (ckpt_child.py) share this one table.
ST_DTYPES = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U8": "uint8",
    "U16": "uint16",
    "U32": "uint32",
    "U64": "uint64",
    "BOOL": "bool",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "C64": "complex64",
}


def leave_path():
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != HERE]


def hard_exit(code):
    """os._exit (tearing torch down takes up to a second), after coverage's data when tests measure us."""
    try:
        cov = getattr(sys.modules.get("coverage"), "Coverage", None)
        current = cov.current() if cov is not None else None
        if current is not None:
            current.stop()
            current.save()
    finally:  # whatever coverage does (from a watchdog thread, say), the process ends
        os._exit(code)
