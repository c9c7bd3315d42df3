"""The container around the doctor: which runtime, how the NVIDIA runtime was asked for GPUs
(NVIDIA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES), Kubernetes, and whether this is its own PID
namespace (the driver is not PID-namespace aware, so NVML then lists host PIDs: NVIDIA/nvidia-docker#1483).

Source for the variables: NVIDIA Container Toolkit, "Specialized configurations with Docker",
environment variables (https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html).
"""

from __future__ import annotations

from cudadoctor.backends.hostfs import Host
from cudadoctor.facts.platform import ContainerFacts

_CGROUP_WORDS = (("kubepods", "kubernetes"), ("docker", "docker"), ("libpod", "podman"), ("containerd", "containerd"))


def container_facts(host: Host) -> ContainerFacts:
    env = host.environ
    runtime = None
    kubernetes = "KUBERNETES_SERVICE_HOST" in env
    cgroup = host.read("/proc/1/cgroup") or ""
    if host.exists("/run/.containerenv"):
        runtime = "podman"
    elif host.exists("/.dockerenv"):
        runtime = "docker"
    for word, name in _CGROUP_WORDS:
        if word in cgroup:
            runtime = runtime or name
            kubernetes = kubernetes or name == "kubernetes"
            break
    if runtime is None and (host.read("/proc/1/environ", 1 << 16) or "").find("container=lxc") >= 0:
        runtime = "lxc"
    if kubernetes:
        runtime = "kubernetes"
    own_pid_ns = None
    comm = host.read("/proc/1/comm")
    if comm is not None:
        # PID 1 of the host is systemd or init; in a container with its own PID namespace it is the
        # container's entry point (bash, python, tini, …)
        own_pid_ns = runtime is not None and comm.strip() not in ("systemd", "init")
    return ContainerFacts(
        runtime=runtime,
        kubernetes=kubernetes,
        visible_devices=env.get("NVIDIA_VISIBLE_DEVICES"),
        driver_capabilities=env.get("NVIDIA_DRIVER_CAPABILITIES"),
        own_pid_namespace=own_pid_ns,
    )
