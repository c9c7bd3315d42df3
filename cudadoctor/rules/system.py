"""The machine around the GPU: shared memory for DataLoader workers, containers, WSL."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.knowledge.units import format_size
from cudadoctor.model import Finding, Fix, Message, Severity, msg
from cudadoctor.rules.catalogue import entry, fix
from cudadoctor.rules.predicates import joined

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
                title=msg(
                    '/dev/shm is {size}: DataLoader workers may die with "Bus error"', size=format_size(s.shm_total)
                ),
                fix=_shm_fixes(f),
            )
        )
    w = f.platform.wsl if f.platform is not None else None
    # WSL1 has no GPU: rules/wsl.py says so as an error, not as "running under WSL2"
    if (s.wsl is True or w is not None) and not (w is not None and w.version == 1):
        version = w.windows_driver_version if w is not None else None
        title = msg("{summary}, Windows NVIDIA driver {version}", summary=msg(WSL.summary), version=version)
        out.append(WSL.finding(title=title if version else WSL.summary))
    if s.in_container is True:
        c = f.platform.container if f.platform is not None else None
        # the evidence, each piece translated on its own ("NVIDIA_VISIBLE_DEVICES is set")
        hints = [_hint(h) for h in s.container_hints] or ([c.runtime] if c is not None and c.runtime else [])
        title = msg("Running in a container ({hints})", hints=joined(hints)) if hints else None
        out.append(CONTAINER.finding(title=title or "Running in a container"))
    return out


def _hint(text: str) -> Message:
    """One piece of backends/host.py's container evidence ("KUBERNETES_SERVICE_HOST is set")."""
    if text.endswith(" is set"):
        return msg("{name} is set", name=text[: -len(" is set")])
    if " mentions " in text:
        where, word = text.split(" mentions ", 1)
        return msg("{file} mentions {word}", file=where, word=word)
    return msg("{text}", text=text)


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
