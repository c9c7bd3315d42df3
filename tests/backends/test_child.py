"""Children the doctor starts: bounded, and never left running after it exits."""

from __future__ import annotations

import os

CHILD_LEFT_RUNNING = """
import os, sys, threading, time
from cudadoctor.backends.child import run_child

marker = sys.argv[1]
argv = ["sh", "-c", f"echo $$ > {marker}; exec sleep 60"]
threading.Thread(target=run_child, args=(argv, 120), daemon=True).start()
while not os.path.exists(marker):
    time.sleep(0.05)
sys.exit(130)  # as after Ctrl-C
"""


def test_children_left_running_are_killed_at_exit(tmp_path):
    """Ctrl-C does not reach children in their own session: the doctor kills them when it exits."""
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT

    marker = tmp_path / "pid"
    subprocess.run(
        [sys.executable, "-c", CHILD_LEFT_RUNNING, str(marker)], timeout=30, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    pid = int(marker.read_text())
    time.sleep(0.2)
    try:
        with open(f"/proc/{pid}/stat") as fh:
            alive = fh.read().split()[2] != "Z"
    except FileNotFoundError:
        alive = False
    assert not alive
