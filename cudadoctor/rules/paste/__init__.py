"""Findings only a paste can raise (`cudadoctor triage`): what the paste showed, the error texts whose
cause no probe fact carries (checkpoint errors, "undefined symbol", a library that cannot be opened,
container runtime errors), the errors a machine's facts would explain but the paste does not show
the facts for, and "To be sure, ask for:" - the few commands whose output settles what stayed unknown.

Every rule here returns nothing when facts.paste is None (a machine's own `check`). `evaluate` keeps the
findings in the order below; the subjects live in their modules:

- `entries`: the codes (CD900-CD915); `installs`: the install lines the fixes give;
- `builds`: the torch build against the driver and the GPU (too old, CPU-only, no kernels);
- `libraries`: undefined symbols, missing libraries and DLLs, cuDNN, extensions and torchvision;
- `containers`: the container runtime, --gpus / --nv, /dev/shm, and "no NVIDIA driver";
- `checkpoints`: torch.load's errors; `runtime`: a program that ran (OOM, asserts, hidden GPUs);
- `devices`: the GPU generation, Jetson, P2P, the launcher, and the kernel module;
- `ask`: CD901, the commands to ask for.
"""

from __future__ import annotations

import re

from cudadoctor.facts import Facts
from cudadoctor.facts.paste import PasteHit
from cudadoctor.model import Finding, Message, Severity, Table, msg
from cudadoctor.rules.paste.builds import (
    arch_beyond_cuda,
    conda_cpu,
    cpu_only_decided,
    cpu_torch_beside_gpu,
    cpu_torch_wanted,
    driver_facts_decide,
    driver_too_old,
    gpu_too_old,
    no_kernel_image_for_gpu,
    not_compiled,
    placeholder_sdist,
    torch_says_no_kernels,
)
from cudadoctor.rules.paste.checkpoints import checkpoint_errors, deserialize, state_dict
from cudadoctor.rules.paste.containers import (
    container_error,
    container_sees_no_gpu,
    container_without_driver,
    docker_run_no_gpus,
    image_needs_newer_driver,
    no_driver,
    pod_without_gpu,
    shm,
    singularity_no_nv,
)
from cudadoctor.rules.paste.cudnn import cudnn_status
from cudadoctor.rules.paste.devices import hardware_and_platform, kernel_side
from cudadoctor.rules.paste.entries import READ
from cudadoctor.rules.paste.libraries import cannot_open, libraries_side, undefined_symbol, windows_dll
from cudadoctor.rules.paste.nvcc import nvcc_arch_error
from cudadoctor.rules.paste.runtime import (
    RUN_KINDS,
    harmless,
    hidden_inside,
    run_time_errors,
    stack_works,
    visible_hides,
)


def evaluate(f: Facts) -> list[Finding]:
    p = f.paste
    if p is None:
        return []
    out = [_read(f)]
    kinds: dict[str, list[PasteHit]] = {}
    for h in p.hits:
        kinds.setdefault(h.kind, []).append(h)
    too_old = kinds.get("driver-too-old", [])
    # inside a container, CUDA's "driver version is insufficient" without torch's found version also
    # means no driver reached the process at all (a `docker build` RUN step, a container without GPUs)
    reached = "container-ran-smi" in kinds and bool(f.driver and f.driver.driver_version)
    unsure = bool(too_old) and "found" not in too_old[0].detail and "container-context" in kinds and not reached
    if too_old and unsure:
        out.append(container_without_driver(kinds["container-context"][0], too_old[0]))
    elif too_old and not driver_facts_decide(f):
        out.append(driver_too_old(f, too_old[0]))
    if "gpu-too-old" in kinds and not (f.torch and f.torch.arch_flags):
        out.append(gpu_too_old(f, kinds["gpu-too-old"][0]))
    for h in kinds.get("undefined-symbol", [])[:1]:
        # a driver API function (cuTensorMapEncodeTiled, CUDA 12.0's) missing beside torch's "driver too old" is
        # that same old driver's libcuda, not a library of another version (vllm-project/vllm#11623)
        if too_old and re.match(r"cu[A-Z]", h.detail.get("symbol", "")):
            continue
        out.append(undefined_symbol(f, h))
    opens = kinds.get("cannot-open-library", [])
    if any(h.detail.get("library") == "libcuda.so" and h.detail.get("by") == "cuDNN" for h in opens):
        # cuDNN's "Could not load library X. Error: libcuda.so: cannot open …": the loader's line names the cause
        opens = [h for h in opens if h.detail.get("library") == "libcuda.so" or h.detail.get("by") != "cuDNN"]
    elif any(h.detail.get("by") != "cuDNN" for h in opens):
        opens = [h for h in opens if h.detail.get("by") != "cuDNN"]
    opens = list({(h.detail.get("library"), h.detail.get("by")): h for h in reversed(opens)}.values())[::-1]
    for h in opens[:2]:  # each library once (bitsandbytes prints its fallback twice)
        found = cannot_open(f, h)
        if found:
            out.append(found)
    for h in kinds.get("windows-dll", [])[:1]:
        out.append(windows_dll(f, h))
    if "deserialize-cuda" in kinds:
        out.append(deserialize(kinds["deserialize-cuda"][0]))
    if "state-dict-prefix" in kinds:
        out.append(state_dict(kinds["state-dict-prefix"][0]))
    hidden = "no-cuda-gpus" in kinds and "visible-devices-set" in kinds
    if hidden:
        out.append(visible_hides(kinds["visible-devices-set"][0], kinds["no-cuda-gpus"][0]))
    elif "no-cuda-gpus" in kinds and f.torch is not None and f.torch.is_available is True:
        hidden = True  # CUDA works outside the program and sees no GPU inside it: its environment hides them
        out.append(hidden_inside(kinds["no-cuda-gpus"][0]))
    # "No CUDA GPUs are available" left unexplained is no run-time error: the process sees no GPU at all
    # (CUDA_VISIBLE_DEVICES, a container without GPUs, a GPU the OS disabled); ask_for asks which
    # an invalid ordinal from a rank's own GPU is more ranks than GPUs (devices.py: CD811), not a run-time error
    runtime = [h for k in RUN_KINDS for h in kinds.get(k, []) if not (k == "invalid-ordinal" and h.detail.get("ranks"))]
    if runtime:
        out.append(run_time_errors(runtime))
    if "harmless-warning" in kinds:
        out.append(harmless(kinds["harmless-warning"]))
    if "image-needs-newer-driver" in kinds:
        h = kinds["image-needs-newer-driver"][0]
        out.append(image_needs_newer_driver(h))
        kinds = {k: v for k, v in kinds.items() if k != "nvidia-container-cli"}
    container = kinds.get("docker-no-gpu-runtime", []) + kinds.get("nvidia-container-cli", [])
    if container:
        out.append(container_error(container[0], snap="docker-snap" in kinds))
    no_gpu_seen = any(k in kinds for k in ("no-cuda-gpus", "no-driver", "nvidia-smi-not-found")) or bool(
        f.torch and f.torch.is_available is False and f.torch.cuda_built is not False
    )
    if "singularity-no-nv" in kinds and no_gpu_seen:
        out.append(singularity_no_nv(kinds["singularity-no-nv"][0]))
    elif "container-run-no-gpus" in kinds and no_gpu_seen and not container:
        out.append(docker_run_no_gpus(kinds["container-run-no-gpus"][0]))
    elif (
        # torch's own "No CUDA GPUs are available" (a CUDA build: a CPU-only torch says "not compiled with
        # CUDA"); Lightning's "GPUs requested but none are available" is also what a CPU-only torch gives
        any("no cuda" in h.text.lower() for h in kinds.get("no-cuda-gpus", []))
        and not hidden
        and not container
        and ("container-context" in kinds or bool(f.system and f.system.in_container))
        and "container-ran-smi" not in kinds
    ):
        out.append(container_sees_no_gpu(kinds["no-cuda-gpus"][0]))
    no_libcuda = [h for h in kinds.get("cannot-open-library", []) if h.detail.get("library", "").startswith("libcuda")]
    driver_missing = no_libcuda + kinds.get("no-driver", []) + kinds.get("nvml-library-not-found", [])
    if "kubernetes-context" in kinds and driver_missing and not container:
        out.append(pod_without_gpu(kinds["kubernetes-context"][0], driver_missing[0]))
    if "shm-too-small" in kinds:
        out.append(shm(kinds["shm-too-small"][0]))
    if "no-driver" in kinds and not (f.driver and f.driver.init_status == "LIBRARY_NOT_FOUND"):
        out.append(no_driver(f, kinds["no-driver"][0]))
    if "not-compiled-with-cuda" in kinds and not cpu_only_decided(f):
        out.append(not_compiled(f, kinds["not-compiled-with-cuda"][0]))
    plan = any(h.detail.get("warning") == "cudnn-plan" for h in kinds.get("harmless-warning", []))
    if "cudnn-status" in kinds and not (f.torch and f.torch.cudnn_error) and not plan:
        out.append(cudnn_status(kinds["cudnn-status"][0], kinds))
    out += checkpoint_errors(kinds, windows=bool(f.system and f.system.os == "Windows"))
    out += arch_beyond_cuda(f)
    if "no-kernel-image" in kinds:
        out += no_kernel_image_for_gpu(f)
    if "nvcc-arch-unsupported" in kinds:
        out.append(nvcc_arch_error(f, kinds["nvcc-arch-unsupported"][0]))
    if "arch-not-in-build" in kinds:
        out.append(torch_says_no_kernels(f, kinds["arch-not-in-build"][0]))
    if "cuda-wanted" in kinds and f.torch is not None and f.torch.cuda_built is False:
        if "not-compiled-with-cuda" not in kinds and not cpu_only_decided(f):
            out.append(cpu_torch_wanted(f, kinds["cuda-wanted"][0]))
    if "cpu-torch-beside-gpu-run" in kinds:
        out.append(cpu_torch_beside_gpu(f, kinds["cpu-torch-beside-gpu-run"][0]))
    if "sdist" in kinds:
        out.append(placeholder_sdist(kinds["sdist"][0]))
    conda = conda_cpu(f, kinds)
    if conda is not None:
        out.append(conda)
    out += hardware_and_platform(f, kinds)
    out += kernel_side(f, kinds)
    out += libraries_side(f, kinds)
    if "gpu-ran" in kinds and not any(x.severity is Severity.ERROR for x in out):
        out.append(stack_works(kinds["gpu-ran"][0]))
    return out


def _read(f: Facts) -> Finding:
    p = f.paste
    assert p is not None
    rows = [[s.what, s.value, s.where] for s in p.seen]
    rows += [[s.what, s.value, f"derived: {s.where}"] for s in p.derived]
    for h in p.hits[:16]:
        where = f"{h.kind}, {h.detail['where']}" if h.detail.get("where") else h.kind
        rows.append(["error text" if h.is_error else "line read", h.text, where])
    formats = ", ".join(p.formats)
    if p.from_report:
        title = msg("Read from the paste: {formats} (the report's own facts are used as they are)", formats=formats)
    elif formats:
        title = msg("Read from the paste: {formats}", formats=formats)
    else:
        title = msg("Read from the paste: nothing recognised")
    return READ.finding(title=title, tables=[Table(["Fact", "Value", "Where"], rows)] if rows else [])


def _template(text: str) -> str:
    return text.template if isinstance(text, Message) else text


def _error(findings: list[Finding], *codes: str) -> bool:
    return any(x.code in codes and x.severity is Severity.ERROR for x in findings)


def _without(findings: list[Finding], *codes: str) -> list[Finding]:
    return [x for x in findings if x.code not in codes]


def _follow(findings: list[Finding], root: str, *codes: str) -> None:
    """The findings with `codes` follow from `root` (their `cause`), unless a cause is already named."""
    for x in findings:
        if x.code in codes and x.cause is None:
            x.cause = root


def overruled(f: Facts, findings: list[Finding]) -> list[Finding]:
    """What the paste's own texts settle among the findings: one problem said once (a table's estimate gives way
    to torch's own verdict, a generic kernel failure to the build or extension that lacks the GPU), and what
    follows from a root cause the paste shows points at it."""
    p = f.paste
    if p is None:
        return findings
    kinds = {h.kind for h in p.hits}
    if "arch-not-in-build" in kinds:
        findings = _without(findings, "CD217")
        # torch's own "not compatible" verdict (builds.torch_says_no_kernels) and the rules' finding on the
        # arch list it printed are one problem, said once: the rules' names the releases that have kernels
        # and guesses no install the paste cannot support
        said = [x for x in findings if x.code == "CD205" and _template(x.title).startswith("torch says ")]
        if said and len(said) < sum(x.code == "CD205" for x in findings):
            findings = [x for x in findings if not any(x is s for s in said)]
    # build flags that leave the GPU out (CD240) explain "no kernel image": torch's build is not in question
    if "extension-arch-flags" in kinds and _error(findings, "CD240"):
        findings = _without(findings, "CD215", "CD205")
    # CUDA's "no kernel image" (CD215: a kernel failed) and the build's missing architecture for the GPU
    # named (CD205) are one problem; CD205 names the GPU and the build that has kernels for it
    if "no-kernel-image" in kinds and _error(findings, "CD205"):
        findings = _without(findings, "CD215")
    # a CPU-only build that the post wants CUDA from (CD202) needs no "whether a GPU exists is unknown" (CD216)
    if _error(findings, "CD202"):
        findings = _without(findings, "CD216")
    # "torch uses 1 GPU" (CD200, from is_available) is no verdict where the paste shows the build has no
    # kernels for that GPU, or none at all
    if _error(findings, "CD202", "CD205", "CD206", "CD215"):
        findings = _without(findings, "CD200")
    codes = {x.code for x in findings}
    # no NVIDIA GPU, as the post says (CD108): "no driver" and "no libcuda" follow from it, not a driver to install
    if "CD108" in codes and "says-no-nvidia-gpu" in kinds:
        _follow(findings, "CD108", "CD911", "CD905", "CD101", "CD125", "CD902", "CD203")
    # a state dict's two lists are one mismatch: what the checkpoint has extra follows from what it lacks
    if "CD640" in codes:
        _follow(findings, "CD640", "CD641")
    # a pod without its GPU is why the program found no driver there
    if "CD146" in codes:
        _follow(findings, "CD146", "CD905", "CD911", "CD101")
    # the kernel log's own reason the module did not load (a legacy-only GPU, the wrong module flavour,
    # Secure Boot, nouveau, no module for this kernel) is what nvidia-smi's "couldn't communicate" follows from
    root = next((x.code for x in findings if x.code in _MODULE_ROOTS and x.severity is Severity.ERROR), None)
    if root is not None:
        _follow(findings, root, "CD102")
    return findings


_MODULE_ROOTS = ("CD116", "CD117", "CD118", "CD119", "CD126")
