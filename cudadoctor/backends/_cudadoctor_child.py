"""What every child script that runs in the TARGET interpreter shares (stdlib only). A script imports it by
its bare name from its own directory and then calls leave_path(), which takes that directory off sys.path
again (also when the module was imported before: the shared torch child loads several scripts).

That directory holds cudadoctor's own modules (cuda.py, compile.py, …): left first on sys.path they
shadow the target interpreter's packages (cuda-python's `cuda`, which torch and Triton may import).
"""

import os
import sys

HERE = os.path.dirname(os.path.realpath(__file__))


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
