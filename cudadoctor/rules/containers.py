"""Containers and Kubernetes: how the NVIDIA runtime was asked for GPUs (NVIDIA_VISIBLE_DEVICES,
NVIDIA_DRIVER_CAPABILITIES), what a pod spec needs, and GPU memory held by processes this container
cannot see (the driver is not PID-namespace aware).

Sources: NVIDIA Container Toolkit docs, "Specialized configurations with Docker" — NVIDIA_VISIBLE_DEVICES
"void", empty or unset: the runtime behaves like runc (no GPU, no driver); "none": no GPU but the driver
libraries; NVIDIA_DRIVER_CAPABILITIES needs "compute" for CUDA ("utility" is nvidia-smi/NVML only).
NVIDIA k8s-device-plugin README (resources.limits nvidia.com/gpu; runtimeClassName nvidia where the
NVIDIA runtime is not the default). NVIDIA/nvidia-docker#1483 (host PIDs), apache/mxnet#17837 (fuser).
"""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.model import Finding, Fix, Severity, Table, msg, msg_n
from cudadoctor.rules.catalogue import entry, fix
from cudadoctor.rules.predicates import capabilities_cause, container
from cudadoctor.rules.predicates import container_root_cause as root_cause

VISIBLE_DEVICES = entry(
    "CD144",
    "nvidia-visible-devices",
    Severity.ERROR,
    "Driver",
    "NVIDIA_VISIBLE_DEVICES hides the GPUs from this container",
    """The NVIDIA container runtime reads NVIDIA_VISIBLE_DEVICES: "void", empty or unset means no GPU and
    no driver at all (plain runc), "none" means the driver libraries but no GPU. Images built FROM
    nvidia/cuda set it to "all"; other images need --gpus (or the variable) at run time.""",
)
CAPABILITIES = entry(
    "CD145",
    "nvidia-driver-capabilities",
    Severity.ERROR,
    "Driver",
    'NVIDIA_DRIVER_CAPABILITIES lacks "compute": no libcuda in this container',
    """The runtime mounts only the driver libraries NVIDIA_DRIVER_CAPABILITIES asks for. "utility" gives
    nvidia-smi and NVML; CUDA (libcuda) needs "compute". So nvidia-smi works while torch finds no GPU.""",
)
KUBERNETES = entry(
    "CD146",
    "kubernetes-gpu-request",
    Severity.ERROR,
    "Driver",
    "Kubernetes pod without a GPU",
    """A pod gets GPUs only when its container asks for them in resources.limits (nvidia.com/gpu), the
    node runs the NVIDIA device plugin, and the pod uses the NVIDIA runtime (runtimeClassName: nvidia
    where it is not the node's default).""",
)
HIDDEN_PROCESSES = entry(
    "CD147",
    "gpu-memory-hidden-processes",
    Severity.INFO,
    "GPU health",
    "GPU memory is in use by processes NVML does not list here",
    """The driver is not PID-namespace aware: inside a container NVML reports host PIDs, and processes of
    other containers or of the host hold memory without being listed. The memory is in use all the same.""",
)

# NVML's "used" includes what the driver reserves (a few hundred MiB); below this nothing is hidden.
HIDDEN_MIN_BYTES = 1 << 30


def kubernetes_fixes() -> list[Fix]:
    """What a pod without a GPU needs; triage's rule for a pod's program without a driver gives the same."""
    return [
        fix(
            "Ask for a GPU in the container's resources (and the NVIDIA runtime class)",
            "spec: {runtimeClassName: nvidia, containers: [{resources: {limits: {nvidia.com/gpu: 1}}}]}",
        ),
        fix(
            "Check that the node offers GPUs (the NVIDIA device plugin runs there)",
            "kubectl describe node NODE | grep -i nvidia.com/gpu",
            "kubectl get pods -A | grep -i nvidia-device-plugin",
        ),
    ]


def evaluate(f: Facts) -> list[Finding]:
    out: list[Finding] = []
    c = container(f)
    cause = root_cause(f)
    if c is not None and cause == "CD144":
        value = (c.visible_devices or "").strip()
        out.append(
            VISIBLE_DEVICES.finding(
                title=msg('NVIDIA_VISIBLE_DEVICES="{value}" hides the GPUs from this container', value=value),
                fix=[
                    fix("Docker: ask for the GPUs when starting the container", "docker run --gpus all --rm IMAGE"),
                    fix(
                        "Or set the variable for the NVIDIA runtime",
                        "docker run --runtime=nvidia -e NVIDIA_VISIBLE_DEVICES=all IMAGE",
                    ),
                ],
            )
        )
    elif c is not None and cause == "CD146":
        out.append(KUBERNETES.finding(fix=kubernetes_fixes()))
    cuda_missing = f.cuda_driver is not None and f.cuda_driver.library_found is False
    nvml_ok = f.driver is not None and f.driver.init_status == "ok"
    if c is not None and cuda_missing and nvml_ok and capabilities_cause(f):
        out.append(
            CAPABILITIES.finding(
                title=msg(
                    'NVIDIA_DRIVER_CAPABILITIES="{value}" lacks "compute": no libcuda here', value=c.driver_capabilities
                ),
                fix=[
                    fix(
                        "Start the container with the compute capability",
                        "docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility IMAGE",
                    )
                ],
            )
        )
    out.extend(_hidden_processes(f))
    return out


def _hidden_processes(f: Facts) -> list[Finding]:
    d = f.driver
    if d is None or d.init_status != "ok":
        return []
    rows = []
    for dev in d.devices:
        if dev.error or dev.memory_used is None or dev.mig_enabled:
            continue
        if dev.processes or dev.memory_used < HIDDEN_MIN_BYTES:
            continue
        if "compute_processes" in dev.unsupported or "graphics_processes" in dev.unsupported:
            continue  # the process list itself is unknown
        rows.append([str(dev.index), dev.name or "", f"{dev.memory_used / (1 << 30):.1f} GiB"])
    if not rows:
        return []
    c = container(f)
    if c is not None and c.own_pid_namespace is not False:
        why = msg(
            "{page} This is a container with its own PID namespace, so the processes using these GPUs run elsewhere "
            "(another container or the host) — not 'no processes'."
            if c.own_pid_namespace
            else "{page} This is a container; if it has its own PID namespace (not known here), the processes using "
            "these GPUs run elsewhere (another container or the host) — not 'no processes'.",
            page=msg(HIDDEN_PROCESSES.explanation),
        )
        fixes = [
            fix("On the host: see who holds the memory", "nvidia-smi", "sudo fuser -v /dev/nvidia*"),
            fix("Or run this container in the host's PID namespace", "docker run --pid=host --gpus all ..."),
        ]
    else:
        why = msg(
            "{page} Processes of other users (or of containers) are listed only to root; listing them needs root.",
            page=msg(HIDDEN_PROCESSES.explanation),
        )
        fixes = [fix("List every process that has the GPU open (needs root)", "sudo fuser -v /dev/nvidia*")]
    return [
        HIDDEN_PROCESSES.finding(
            title=msg_n(
                "GPU memory in use with no process listed on {n} GPU",
                "GPU memory in use with no process listed on {n} GPUs",
                len(rows),
                n=len(rows),
            ),
            why=why,
            fix=fixes,
            tables=[Table(["GPU", "Name", "Used"], rows)],
        )
    ]
