"""The machine around the GPU: shared memory for DataLoader workers, containers, WSL."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.knowledge.units import format_size
from cudadoctor.model import Finding, Fix, Severity
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
                fix=_shm_fixes(f),
            )
        )
    w = f.platform.wsl if f.platform is not None else None
    # WSL1 has no GPU: rules/wsl.py says so as an error, not as "running under WSL2"
    if (s.wsl is True or w is not None) and not (w is not None and w.version == 1):
        version = w.windows_driver_version if w is not None else None
        out.append(WSL.finding(title=WSL.summary + (f", Windows NVIDIA driver {version}" if version else "")))
    if s.in_container is True:
        c = f.platform.container if f.platform is not None else None
        # "; " between the evidence: each piece is translated on its own ("NVIDIA_VISIBLE_DEVICES is set")
        hints = "; ".join(s.container_hints) or (c.runtime if c is not None and c.runtime else "")
        out.append(CONTAINER.finding(title="Running in a container" + (f" ({hints})" if hints else "")))
    return out


def _shm_fixes(f: Facts) -> list[Fix]:
    """Docker's and Kubernetes' ways to a bigger /dev/shm; the one for where this runs first."""
    docker = fix(
        "Docker: give the container more shared memory (or the host's IPC namespace)",
        "docker run --shm-size=8g ...",
        "docker run --ipc=host ...",
    )
    kubernetes = fix(
        "Kubernetes: mount a memory-backed emptyDir at /dev/shm",
        "volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 8Gi}}]",
        "volumeMounts: [{name: dshm, mountPath: /dev/shm}]",
    )
    c = f.platform.container if f.platform is not None else None
    first = [kubernetes, docker] if c is not None and c.kubernetes else [docker, kubernetes]
    return [*first, fix("Or avoid shared memory in the loader", "DataLoader(dataset, num_workers=0)")]
