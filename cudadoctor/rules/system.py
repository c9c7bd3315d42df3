"""The machine around the GPU: shared memory for DataLoader workers, containers, WSL."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.knowledge.units import format_size
from cudadoctor.report import Finding, Severity
from cudadoctor.rules.catalogue import entry, fix

SMALL_SHM = entry(
    "CD140",
    "small-dev-shm",
    Severity.WARNING,
    "System",
    '/dev/shm is small: DataLoader workers may die with "Bus error"',
    """DataLoader workers (num_workers > 0) pass batches through shared memory in /dev/shm. Docker's
    default is 64 MB, and a worker that runs out is killed with SIGBUS ("Bus error"/"DataLoader worker
    exited unexpectedly").""",
)
WSL = entry(
    "CD141",
    "wsl",
    Severity.INFO,
    "System",
    "Running under WSL2",
    """Under WSL2 the NVIDIA driver is the Windows one: its libraries appear in /usr/lib/wsl/lib.
    Update the driver on Windows, and never install a Linux NVIDIA driver inside WSL.""",
)
CONTAINER = entry(
    "CD142",
    "container",
    Severity.INFO,
    "System",
    "Running in a container",
    """Inside a container the GPU, the driver libraries and /dev/shm come from how it was started
    (--gpus, NVIDIA_DRIVER_CAPABILITIES, --shm-size); fixes go on the docker run line or pod spec.""",
)

# Below this, a few workers with image batches already run out.
SHM_MINIMUM = 1 << 30


def evaluate(f: Facts) -> list[Finding]:
    s = f.system
    if s is None:
        return []
    out = []
    if s.shm_total is not None and s.shm_total < SHM_MINIMUM:
        out.append(
            SMALL_SHM.finding(
                title=f'/dev/shm is {format_size(s.shm_total)}: DataLoader workers may die with "Bus error"',
                fix=[
                    fix(
                        "Docker: give the container more shared memory",
                        "docker run --shm-size=8g ...",
                        "docker run --ipc=host ...",
                    ),
                    fix(
                        "Kubernetes: mount a memory-backed emptyDir at /dev/shm",
                        "volumes: [{name: dshm, emptyDir: {medium: Memory}}]",
                    ),
                    fix("Or avoid shared memory in the loader", "DataLoader(dataset, num_workers=0)"),
                ],
            )
        )
    if s.wsl is True:
        out.append(WSL.finding())
    if s.in_container is True:
        out.append(CONTAINER.finding(title=f"Running in a container ({', '.join(s.container_hints)})"))
    return out
