"""Print, one per line, the commands of README's blocks that .ci/run must run as written: each fenced
block right after a `<!-- .ci/run runs the next block as it is written -->` marker."""

import sys

MARK = "<!-- .ci/run runs the next block as it is written -->"


def marked_commands(text: str) -> list[str]:
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if line.strip() != MARK:
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        body = []
        for k in range(j + 1, len(lines)):
            if lines[k].startswith("```"):
                break
            body.append(lines[k])
        found.append(" ".join(part.strip() for part in body if part.strip()))
    return found


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        for command in marked_commands(f.read()):
            print(command)
