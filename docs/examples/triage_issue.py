"""Triage a new GitHub issue (its title, then its body) with `cudadoctor triage` and write the reply to post.

Used by the workflow in docs/triage.md:

    python docs/examples/triage_issue.py "$GITHUB_EVENT_PATH" triage-comment.md

The issue's title and body are read from the event file (never through a shell: they are untrusted text);
the title goes first because people often put the error there ("RuntimeError: Torch not compiled with CUDA
enabled") and only a screenshot in the body. When they have nothing to diagnose (cudadoctor exits 2) no
comment file is written, so nothing is posted.
Exit 0 unless cudadoctor itself could not run. Standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

MARKER = "<!-- cudadoctor-triage -->"
MAX_BODY = 1 << 20


def main(argv: list[str]) -> int:
    event_path = argv[1] if len(argv) > 1 else os.environ.get("GITHUB_EVENT_PATH", "")
    out_path = argv[2] if len(argv) > 2 else "triage-comment.md"
    with open(event_path, encoding="utf-8") as fh:
        event = json.load(fh)
    issue = event.get("issue") or {}
    title = (issue.get("title") or "").strip()
    body = ((f"{title}\n\n" if title else "") + (issue.get("body") or ""))[:MAX_BODY]
    if os.path.exists(out_path):
        os.remove(out_path)
    proc = subprocess.run(
        [sys.executable, "-m", "cudadoctor", "triage", "--format", "markdown", "-"],
        input=body,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )
    if proc.returncode == 2:
        print(f"nothing to triage: {proc.stderr.strip()}")
        return 0
    if proc.returncode not in (0, 1, 3) or not proc.stdout.strip():
        print(f"cudadoctor triage failed ({proc.returncode}): {proc.stderr.strip()}", file=sys.stderr)
        return 1
    with open(out_path, "w", encoding="utf-8") as fh:
        fh.write(
            f"{MARKER}\n{proc.stdout.strip()}\n\n<sub>Automatic triage by cudadoctor from the text of this issue; "
            "facts it did not show are unknown, not assumed.</sub>\n"
        )
    print(f"wrote {out_path} (cudadoctor exit {proc.returncode})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
