"""Containers and the driver they get from the host: a runtime that gives no GPU, a container started without
--gpus or --nv, an image's CUDA beyond the host driver, a small /dev/shm, and torch's "no NVIDIA driver".
"""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.facts.paste import PasteHit
from cudadoctor.model import Finding, Fix, Severity, Table, msg
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.paste.entries import CONTAINER, DRIVER_TOO_OLD, NO_DRIVER


def image_needs_newer_driver(h: PasteHit) -> Finding:
    """The container hook refused an image whose CUDA the host driver does not support."""
    return DRIVER_TOO_OLD.finding(
        title=msg(
            "The image needs CUDA {cuda} or newer, more than the host's NVIDIA driver supports",
            cuda=h.detail.get("cuda", "?"),
        ),
        why=msg(
            "The container hook compares the image's NVIDIA_REQUIRE_CUDA with the newest CUDA the host "
            "driver supports, and refuses to start it. Upgrade the host driver, or use an image of an "
            "older CUDA."
        ),
        fix=[
            fix(msg("On the host: the newest CUDA the driver supports"), "nvidia-smi"),
            fix(
                msg("Or pick an image tag of that CUDA or older"),
                "docker run --gpus all --rm nvidia/cuda:TAG nvidia-smi",
            ),
        ],
        tables=[Table(["nvidia-container-cli said"], [[h.text]])],
    )


def container_error(h: PasteHit, snap: bool = False) -> Finding:
    from cudadoctor.rules.predicates import CONTAINER_FIX

    fixes = list(CONTAINER_FIX)
    if snap:
        fixes.insert(
            0,
            fix(
                msg("Docker from snap cannot load the host's NVIDIA libraries: use Docker's own packages"),
                "sudo snap remove docker",
                "curl -fsSL https://get.docker.com | sh",
            ),
        )
    return CONTAINER.finding(
        title=msg("The container runtime could not give the container a GPU: {error}", error=h.text), fix=fixes
    )


def container_without_driver(ctx: PasteHit, h: PasteHit) -> Finding:
    from cudadoctor.rules.predicates import CONTAINER_FIX

    cuda = ctx.detail.get("cuda")
    return CONTAINER.finding(
        title=msg("Inside a container CUDA found no usable driver: {error}", error=h.text),
        why=msg(
            "In a container the driver comes from the host, mounted when the container starts with its GPUs. "
            "Where it is missing (a `docker build` RUN step, a container started without --gpus) CUDA "
            'reports "driver version is insufficient". The other cause is a host driver older than the '
            "image's CUDA{cuda}: nvidia-smi on the host tells them apart.",
            cuda=f" ({cuda})" if cuda else "",
        ),
        fix=[
            fix(
                msg("Use the GPU when the container runs (CMD/ENTRYPOINT), never in a RUN step of the build"),
                "docker run --gpus all --rm IMAGE nvidia-smi",
            ),
            *CONTAINER_FIX[1:2],
            fix(msg("On the host: the newest CUDA the driver supports, to compare with the image's"), "nvidia-smi"),
        ],
    )


def container_sees_no_gpu(h: PasteHit) -> Finding:
    """CUDA counts no GPU in a program the paste runs in a container, and no start command is shown."""
    from cudadoctor.rules.predicates import CONTAINER_FIX

    return CONTAINER.finding(
        title=msg(
            "In a container CUDA sees no GPU ({error}): the container was likely started without one", error=h.text
        ),
        severity=Severity.WARNING,
        why=msg(
            "A container has a GPU only when it is started with one: `docker run --gpus all`, a compose "
            "service's GPU reservation, with the NVIDIA Container Toolkit on the host (Docker Desktop: its WSL2 "
            "backend). The paste does not show how it was started; nvidia-smi inside the container tells."
        ),
        fix=CONTAINER_FIX[:2],
    )


def pod_without_gpu(h: PasteHit, error: PasteHit) -> Finding:
    """A Kubernetes pod whose program finds no NVIDIA driver (libcuda missing, "Found no NVIDIA driver"): the
    container got no GPU (NVIDIA/nvidia-docker#828: the image ran under `docker run --runtime nvidia`)."""
    from cudadoctor.rules.containers import KUBERNETES, kubernetes_fixes

    return KUBERNETES.finding(
        title=msg(
            "In a Kubernetes pod no NVIDIA driver reached the program ({error}): the pod got no GPU",
            error=error.text,
        ),
        why=msg(
            "{page} The driver's libraries (libcuda.so.1) are mounted into a container only with the GPU; a pod "
            "without them finds no driver, whatever the image holds.",
            page=msg(KUBERNETES.explanation),
        ),
        fix=_default_runtime(error) + kubernetes_fixes(),
    )


def _default_runtime(error: PasteHit) -> list[Fix]:
    """The device plugin's own NVML failing in its pod (NVIDIA/k8s-device-plugin#23): the node's container
    runtime does not run pods with the NVIDIA runtime. nvidia-ctk's README: `nvidia-ctk runtime configure
    --set-as-default` makes it the default runtime of the container engine."""
    if error.kind != "nvml-library-not-found":
        return []
    return [
        fix(
            msg("On each GPU node: make the NVIDIA runtime containerd's default"),
            "sudo nvidia-ctk runtime configure --runtime=containerd --set-as-default",
            "sudo systemctl restart containerd",
        ),
        fix(
            msg("Or, where Docker runs the node's pods: make it Docker's default"),
            "sudo nvidia-ctk runtime configure --runtime=docker --set-as-default",
            "sudo systemctl restart docker",
        ),
    ]


def singularity_no_nv(h: PasteHit) -> Finding:
    return NO_DRIVER.finding(
        title=msg("The container was started without --nv: no NVIDIA driver inside it ({line})", line=h.text),
        why=msg(
            "Singularity and Apptainer map the host's NVIDIA driver and devices into a container only with "
            "--nv; without it, CUDA inside sees no GPU."
        ),
        fix=[
            fix(
                msg("Start it with --nv"),
                "singularity shell --nv IMAGE.sif",
                "apptainer exec --nv IMAGE.sif nvidia-smi",
            )
        ],
    )


def docker_run_no_gpus(h: PasteHit) -> Finding:
    from cudadoctor.rules.predicates import CONTAINER_FIX

    return CONTAINER.finding(
        title=msg("The container was started without --gpus: it has no GPU ({line})", line=h.text),
        why=msg(
            "Docker passes GPUs into a container only when asked (--gpus all, with the NVIDIA Container "
            "Toolkit on the host); without it there is no driver and no GPU inside, whatever the image holds."
        ),
        fix=CONTAINER_FIX[:2],
    )


def shm(h: PasteHit) -> Finding:
    from cudadoctor.rules.system import SMALL_SHM

    if h.detail.get("denied"):
        # NVIDIA/nccl#328: "shm_open failed : Permission denied"; chmod on /dev/shm fixed it, not its size
        return SMALL_SHM.finding(
            title=msg("NCCL could not open its shared memory: /dev/shm refused it (Permission denied)"),
            why=msg(
                "NCCL passes data between the GPUs of one machine through files in /dev/shm; here it may not "
                "create them, whatever their size."
            ),
            fix=[
                fix(msg("See its mode: every user may write there (drwxrwxrwt)"), "ls -ld /dev/shm"),
                fix(msg("Restore the usual mode"), "sudo chmod 1777 /dev/shm"),
            ],
        )
    if h.detail.get("given"):
        # pytorch#26009: --ipc=host, 254 GB of /dev/shm, and the bus error came from a mounted data volume
        return SMALL_SHM.finding(
            title=msg(
                "The error blames shared memory, but the container already has it ({given}): look elsewhere",
                given=h.detail["given"],
            ),
            severity=Severity.INFO,
            why=msg(
                "A DataLoader worker's bus error is reported as shared memory running out; with /dev/shm "
                "shared or sized, a file the worker reads (a network or mounted volume) is the usual cause."
            ),
            fix=[
                fix(msg("See how much there is"), "df -h /dev/shm"),
                fix(
                    msg("Run the loader in the main process to see the error itself"), "DataLoader(..., num_workers=0)"
                ),
            ],
        )
    return SMALL_SHM.finding(
        title=msg("Shared memory ran out: {error}", error=h.text),
        why=msg(
            "DataLoader workers and NCCL pass data through /dev/shm. Docker gives a container 64 MB of it "
            "unless told otherwise, too little for either."
        ),
        fix=[
            fix(msg("Start the container with more shared memory"), "docker run --shm-size=8g --gpus all IMAGE"),
            fix(msg("Or share the host's"), "docker run --ipc=host --gpus all IMAGE"),
            fix(msg("See how much there is"), "df -h /dev/shm"),
        ],
    )


def no_driver(f: Facts, h: PasteHit) -> Finding:
    from cudadoctor.rules.predicates import CONTAINER_FIX, WSL_FIX

    s = f.system
    if s is not None and s.wsl:
        fixes = WSL_FIX
    elif s is not None and s.in_container:
        fixes = CONTAINER_FIX
    else:
        fixes = [
            fix("See whether the driver is installed and loaded", "nvidia-smi", "lsmod | grep nvidia"),
            fix("Install it (Ubuntu)", "sudo ubuntu-drivers install", "sudo reboot"),
            fix("In a container: start it with the GPUs", "docker run --gpus all --rm IMAGE nvidia-smi"),
        ]
    gpu_known = (
        bool(f.driver and f.driver.devices)
        or bool(f.torch and f.torch.devices)
        or bool(f.paste and any(x.kind == "gpu-named" for x in f.paste.hits))
    )
    if h.detail.get("warning") == "yes" and not gpu_known:
        # only torch's notice, the program carrying on on the CPU, and no NVIDIA GPU named (lemonhu/ltp#468):
        # a problem only if the machine has one
        return NO_DRIVER.finding(
            title=msg(
                "torch found no NVIDIA driver and runs on the CPU: a problem only if this machine has an NVIDIA GPU"
            ),
            severity=Severity.WARNING,
            fix=fixes,
        )
    return NO_DRIVER.finding(fix=fixes)
