"""Findings only a paste can raise (`cudadoctor triage`): what the paste showed, the error texts whose
cause no probe fact carries (checkpoint errors, "undefined symbol", a library that cannot be opened,
container runtime errors), the errors a machine's facts would explain but the paste does not show
the facts for, and "To be sure, ask for:" - the few commands whose output settles what stayed unknown.

Every rule here returns nothing when facts.paste is None (a machine's own `check`).
"""

from __future__ import annotations

import dataclasses

from cudadoctor.advice.install import advise, driver_view
from cudadoctor.facts import CudaDriverFacts, Facts
from cudadoctor.facts.paste import PasteHit
from cudadoctor.knowledge import wheels
from cudadoctor.knowledge.architectures import arch_name
from cudadoctor.knowledge.driver_minimums import full_minimum, major_floor
from cudadoctor.knowledge.versions import cuda_int_to_str, parse_version
from cudadoctor.model import Finding, Fix, Message, Severity, Table, msg
from cudadoctor.rules.catalogue import CATALOGUE, entry, fix

READ = entry(
    "CD900",
    "paste-read",
    Severity.INFO,
    "Paste",
    "What the paste shows",
    """The formats triage recognised in the paste and every fact it read, with the line it came from.
    Facts the paste does not show stay unknown: no rule assumes them, and the verdict names what it
    could not check.""",
)
ASK_FOR = entry(
    "CD901",
    "paste-ask-for",
    Severity.INFO,
    "Paste",
    "To be sure, ask for:",
    """The paste leaves facts unknown that decide the diagnosis. The commands listed print exactly
    those facts; their output, pasted back, settles it. When no error explains the problem yet, this
    is a warning: the paste is not enough to call the machine healthy.""",
)
DRIVER_TOO_OLD = entry(
    "CD902",
    "paste-driver-too-old",
    Severity.ERROR,
    "Paste",
    "torch says the NVIDIA driver is too old for its CUDA",
    """torch's own warning ("The NVIDIA driver on your system is too old (found version 11040)") names
    the newest CUDA the driver supports (11040 is 11.4). The wheel's CUDA is newer, across a major
    version or below the major's minimum driver, so CUDA cannot start. Upgrade the driver, or install
    the torch build made for the driver's CUDA.""",
)
GPU_TOO_OLD = entry(
    "CD903",
    "paste-gpu-too-old",
    Severity.ERROR,
    "Paste",
    "torch says the GPU is too old for this build",
    """torch's warning "Found GPU0 … which is of cuda capability X.Y. PyTorch no longer supports this GPU
    because it is too old" means the installed build has no kernels for that architecture. Only an
    older torch release with a build for it, or the CPU, remains.""",
)
UNDEFINED_SYMBOL = entry(
    "CD904",
    "paste-undefined-symbol",
    Severity.ERROR,
    "Paste",
    "A library torch loads is a different version than the one torch was built with",
    """"undefined symbol: …" means a shared library was found but is not the version the caller was
    linked against: usually an nvidia-* wheel at another version than torch pins (pip upgraded one of
    them), or a system CUDA library found first through LD_LIBRARY_PATH (pytorch#134929, #119932,
    #157381). Removing every nvidia-* package and reinstalling torch from its index fixes it
    (pytorch#104259).""",
)
CANNOT_OPEN = entry(
    "CD905",
    "paste-library-missing",
    Severity.ERROR,
    "Paste",
    "A library torch needs cannot be found",
    """The dynamic loader could not find a shared library: for the CUDA libraries (cuDNN, cuBLAS, NCCL,
    nvJitLink) the nvidia-* wheel torch depends on is missing or was removed, or the library search
    path points at a toolkit without it; for libcuda.so.1 there is no NVIDIA driver here.""",
)
WINDOWS_DLL = entry(
    "CD906",
    "paste-windows-dll",
    Severity.ERROR,
    "Paste",
    "Windows cannot load one of torch's DLLs",
    """[WinError 126/127/1114] while loading a torch DLL (c10.dll, torch_cuda.dll, cudnn…dll) means a
    dependency is missing: usually the Microsoft Visual C++ Redistributable, or a broken install mixing
    builds. The message's text is in the Windows UI language; its error number is not.""",
)
DESERIALIZE = entry(
    "CD907",
    "paste-deserialize-cuda",
    Severity.ERROR,
    "Paste",
    "A checkpoint saved on a GPU is loaded where CUDA is not available",
    """torch.load restores tensors to the device they were saved from. Without CUDA (a CPU-only torch,
    no driver, or fewer GPUs than the saving machine) it fails with "Attempting to deserialize object
    on a CUDA device". map_location moves them while loading.""",
)
STATE_DICT_PREFIX = entry(
    "CD908",
    "paste-state-dict-prefix",
    Severity.ERROR,
    "Paste",
    "State dict keys differ by a wrapper's prefix (module. / _orig_mod.)",
    """nn.DataParallel and DistributedDataParallel prefix every key with "module.", torch.compile with
    "_orig_mod.". A checkpoint saved from a wrapped model does not load into a bare one (or the
    reverse): strip the prefix with consume_prefix_in_state_dict_if_present, never with k[7:].""",
)
CUDA_RUNTIME = entry(
    "CD909",
    "paste-cuda-runtime-error",
    Severity.WARNING,
    "Paste",
    "A CUDA error while running, not a setup problem",
    """CUDA started and the program ran, then failed: out of memory, a device-side assert (an index out of
    range in the model or loss), an illegal memory access, or a busy GPU. The setup can be fine.""",
)
CONTAINER = entry(
    "CD910",
    "paste-container-no-gpu",
    Severity.ERROR,
    "Paste",
    "The container runtime could not give the container a GPU",
    """Docker was asked for GPUs (--gpus) but has no NVIDIA runtime ("could not select device driver"),
    or nvidia-container-cli failed on the host. The NVIDIA Container Toolkit on the host, registered
    with Docker, is what passes GPUs into containers.""",
)
NO_DRIVER = entry(
    "CD911",
    "paste-no-driver",
    Severity.ERROR,
    "Paste",
    "torch found no NVIDIA driver",
    """torch is a CUDA build, but "Found no NVIDIA driver on your system": libcuda, which the driver
    installs, is not there (no driver, a container started without GPUs, or WSL without the Windows
    driver).""",
)
NOT_COMPILED = entry(
    "CD912",
    "paste-not-compiled-with-cuda",
    Severity.ERROR,
    "Paste",
    "Torch not compiled with CUDA enabled: a CPU-only torch",
    """The code asks for CUDA, but the installed torch is a CPU-only build (from PyPI on Windows, a +cpu
    wheel, or conda's cpuonly). A CUDA build of the same version fixes it.""",
)
CUDNN_STATUS = entry(
    "CD913",
    "paste-cudnn-error",
    Severity.ERROR,
    "Paste",
    "cuDNN failed",
    """A cuDNN call failed (CUDNN_STATUS_…). NOT_INITIALIZED and MAPPING_ERROR usually mean a cuDNN
    that does not match torch (a system copy first on the library path) or a GPU out of memory at
    start-up; EXECUTION_FAILED and NOT_SUPPORTED point at the GPU's architecture or the driver.""",
)
STACK_WORKS = entry(
    "CD914",
    "paste-stack-works",
    Severity.OK,
    "Paste",
    "The paste shows the GPU at work: the CUDA stack runs",
    """A line in the paste shows a CUDA device in use: the allocator reporting the GPU's memory, a tensor
    on cuda:0, a launcher's "Device: cuda:0 …". Driver, CUDA and torch work together; what went wrong
    happened while the program ran.""",
)
HARMLESS = entry(
    "CD915",
    "paste-harmless-warning",
    Severity.INFO,
    "Paste",
    "A warning that needs no fix",
    """Some warnings torch and its libraries print are notices, not failures: the TypedStorage and
    torch.meshgrid deprecations, "TORCH_CUDA_ARCH_LIST is not set" while an extension builds for the GPUs
    present, and torch 2.3.0's "Plan failed with a cudnnException" (pytorch#121834: cuDNN falls back to
    another plan). The program's results are not affected.""",
)
_ASK_ALL = "cudadoctor check --format markdown   # everything below in one report"


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
        out.append(_container_without_driver(kinds["container-context"][0], too_old[0]))
    elif too_old and not _driver_facts_decide(f):
        out.append(_driver_too_old(f, too_old[0]))
    if "gpu-too-old" in kinds and not (f.torch and f.torch.arch_flags):
        out.append(_gpu_too_old(f, kinds["gpu-too-old"][0]))
    for h in kinds.get("undefined-symbol", [])[:1]:
        out.append(_undefined_symbol(f, h))
    for h in kinds.get("cannot-open-library", [])[:2]:
        found = _cannot_open(f, h)
        if found:
            out.append(found)
    for h in kinds.get("windows-dll", [])[:1]:
        out.append(_windows_dll(f, h))
    if "deserialize-cuda" in kinds:
        out.append(_deserialize(kinds["deserialize-cuda"][0]))
    if "state-dict-prefix" in kinds:
        out.append(_state_dict(kinds["state-dict-prefix"][0]))
    hidden = "no-cuda-gpus" in kinds and "visible-devices-set" in kinds
    if hidden:
        out.append(_visible_hides(kinds["visible-devices-set"][0], kinds["no-cuda-gpus"][0]))
    elif "no-cuda-gpus" in kinds and f.torch is not None and f.torch.is_available is True:
        hidden = True  # CUDA works outside the program and sees no GPU inside it: its environment hides them
        out.append(_hidden_inside(kinds["no-cuda-gpus"][0]))
    runtime = [h for k in _RUN_KINDS if not (hidden and k == "no-cuda-gpus") for h in kinds.get(k, [])]
    if runtime:
        out.append(_runtime(runtime))
    if "harmless-warning" in kinds:
        out.append(_harmless(kinds["harmless-warning"]))
    if "image-needs-newer-driver" in kinds:
        h = kinds["image-needs-newer-driver"][0]
        out.append(
            DRIVER_TOO_OLD.finding(
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
        )
        kinds = {k: v for k, v in kinds.items() if k != "nvidia-container-cli"}
    container = kinds.get("docker-no-gpu-runtime", []) + kinds.get("nvidia-container-cli", [])
    if container:
        out.append(_container(container[0], snap="docker-snap" in kinds))
    no_gpu_seen = any(k in kinds for k in ("no-cuda-gpus", "no-driver", "nvidia-smi-not-found")) or bool(
        f.torch and f.torch.is_available is False and f.torch.cuda_built is not False
    )
    if "singularity-no-nv" in kinds and no_gpu_seen:
        out.append(_singularity_no_nv(kinds["singularity-no-nv"][0]))
    elif "container-run-no-gpus" in kinds and no_gpu_seen and not container:
        out.append(_docker_run_no_gpus(kinds["container-run-no-gpus"][0]))
    if "shm-too-small" in kinds:
        out.append(_shm(kinds["shm-too-small"][0]))
    if "no-driver" in kinds and not (f.driver and f.driver.init_status == "LIBRARY_NOT_FOUND"):
        out.append(_no_driver(f, kinds["no-driver"][0]))
    if "not-compiled-with-cuda" in kinds and not _cpu_only_decided(f):
        out.append(_not_compiled(f, kinds["not-compiled-with-cuda"][0]))
    plan = any(h.detail.get("warning") == "cudnn-plan" for h in kinds.get("harmless-warning", []))
    if "cudnn-status" in kinds and not (f.torch and f.torch.cudnn_error) and not plan:
        out.append(_cudnn_status(kinds["cudnn-status"][0]))
    out += _checkpoints(kinds)
    out += _arch_beyond_cuda(f)
    if "arch-not-in-build" in kinds:
        out.append(_torch_says_no_kernels(f, kinds["arch-not-in-build"][0]))
    if "cuda-wanted" in kinds and f.torch is not None and f.torch.cuda_built is False:
        if "not-compiled-with-cuda" not in kinds and not _cpu_only_decided(f):
            out.append(_cpu_torch_wanted(f, kinds["cuda-wanted"][0]))
    if "cpu-torch-beside-gpu-run" in kinds:
        out.append(_cpu_torch_beside_gpu(f, kinds["cpu-torch-beside-gpu-run"][0]))
    if "sdist" in kinds:
        out.append(_placeholder_sdist(kinds["sdist"][0]))
    conda = _conda_cpu(f, kinds)
    if conda is not None:
        out.append(conda)
    out += _hardware_and_platform(f, kinds)
    out += _kernel_side(f, kinds)
    out += _libraries_side(f, kinds)
    if "gpu-ran" in kinds and not any(x.severity is Severity.ERROR for x in out):
        out.append(_stack_works(kinds["gpu-ran"][0]))
    return out


# --- what was read --------------------------------------------------------------------------------


def _read(f: Facts) -> Finding:
    p = f.paste
    assert p is not None
    rows = [[s.what, s.value, s.where] for s in p.seen]
    rows += [[s.what, s.value, f"derived: {s.where}"] for s in p.derived]
    from cudadoctor.facts.paste import NOT_ERRORS

    for h in p.hits[:16]:
        where = f"{h.kind}, {h.detail['where']}" if h.detail.get("where") else h.kind
        rows.append(["line read" if h.kind in NOT_ERRORS else "error text", h.text, where])
    formats = ", ".join(p.formats)
    if p.from_report:
        title = msg("Read from the paste: {formats} (the report's own facts are used as they are)", formats=formats)
    elif formats:
        title = msg("Read from the paste: {formats}", formats=formats)
    else:
        title = msg("Read from the paste: nothing recognised")
    return READ.finding(title=title, tables=[Table(["Fact", "Value", "Where"], rows)] if rows else [])


# --- errors whose facts the paste does not carry ----------------------------------------------------


def _driver_facts_decide(f: Facts) -> bool:
    """CD203 fires from facts when NVML saw GPUs and torch's CUDA is known."""
    d, t = f.driver, f.torch
    return bool(d and d.init_status == "ok" and d.device_count and d.cuda_driver_version and t and t.cuda)


def _with_driver_cuda(f: Facts, found: int | None) -> Facts:
    if found is None or (f.driver and f.driver.cuda_driver_version):
        return f
    return dataclasses.replace(f, cuda_driver=CudaDriverFacts(library_found=True, init_result=0, driver_version=found))


def _advice_fix(f: Facts, label: Message) -> list[Fix]:
    a = advise(f)
    out = []
    if a.commands:
        out.append(fix(msg("{label} ({note})", label=label, note=a.note), *a.commands))
    if a.driver_upgrade:
        out.append(
            fix(msg("Or upgrade the NVIDIA driver to {version} or newer", version=a.driver_upgrade), "nvidia-smi")
        )
    return out


def _driver_too_old(f: Facts, h: PasteHit) -> Finding:
    found = int(h.detail["found"]) if h.detail.get("found", "").isdigit() else None
    t = f.torch
    have = cuda_int_to_str(found)
    wheel = parse_version(t.cuda) if t and t.cuda else None
    windows = f.system is not None and f.system.os == "Windows"
    need = None
    if wheel and len(wheel) >= 2:
        need = full_minimum(wheel[0], wheel[1], windows=windows) or major_floor(wheel[0], windows)
    needs = (
        msg(", torch {version} needs CUDA {cuda}", version=t.version, cuda=t.cuda) if t and t.version and t.cuda else ""
    )
    if have:
        title = msg(
            "torch says the NVIDIA driver is too old: it supports CUDA up to {have}{needs}", have=have, needs=needs
        )
    else:
        title = msg("torch says the NVIDIA driver is too old{needs}", needs=needs)
    upgrade = (
        msg("Upgrade the NVIDIA driver to {need} or newer", need=need) if need else msg("Upgrade the NVIDIA driver")
    )
    fixes = [fix(upgrade, "nvidia-smi  # the driver now")]
    fixes += _advice_fix(_with_driver_cuda(f, found), msg("Or install the torch build this driver runs"))[:1]
    return DRIVER_TOO_OLD.finding(title=title, fix=fixes, tables=[Table(["torch said"], [[h.text]])])


def _gpu_too_old(f: Facts, h: PasteHit) -> Finding:
    cc, name = h.detail.get("cc"), h.detail.get("gpu") or "the GPU"
    covering = [
        (r, v.name)
        for r in wheels.releases_newest_first()
        for v in wheels.variants(r)
        if wheels.coverage(v.arch_flags, cc) == "sm"
    ]
    label = f"{name} (compute capability {cc}, {arch_name(cc)})"  # names and numbers: shown verbatim
    if covering:
        release, variant = covering[0]
        fixes = [
            fix(
                msg(
                    "Install torch {release}, the newest with kernels for {cc} ({variant})",
                    release=release,
                    cc=cc,
                    variant=variant,
                ),
                f"python -m pip install torch=={release}.0 --index-url {wheels.INDEX_URL.format(variant=variant)}",
            ),
            fix("Or use the CPU", "device = torch.device('cpu')"),
        ]
        why = msg(
            "{page} The newest torch with a build for {cc} is {release} ({variant}).",
            page=msg(GPU_TOO_OLD.explanation),
            cc=cc,
            release=release,
            variant=variant,
        )
    else:
        fixes = [fix("Use the CPU: no torch build in cudadoctor's tables supports it", "device = torch.device('cpu')")]
        why = msg("{page} No PyTorch release in cudadoctor's tables supports it.", page=msg(GPU_TOO_OLD.explanation))
    return GPU_TOO_OLD.finding(title=msg("torch says {gpu} is too old for this build", gpu=label), why=why, fix=fixes)


def _torch_install(f: Facts, force: bool = False) -> str:
    """The install line for the torch the paste shows: its version and CUDA variant when known."""
    t = f.torch
    version = (t.version or "").split("+")[0] if t is not None else ""
    pin = f"torch=={version}" if version else "torch"
    flag = " --force-reinstall" if force else ""
    if t is not None and t.cuda:
        index = wheels.INDEX_URL.format(variant=wheels.variant_name(t.cuda))
        return f"python -m pip install{flag} {pin} --index-url {index}"
    variant = _variant_for(f, wheels.release_of(version) if version else wheels.newest_release())
    if variant is None:  # a release the tables do not know: its default wheel, from PyPI
        return f"python -m pip install{flag} {pin}"
    return f"python -m pip install{flag} {pin} --index-url {variant.index_url}"


def _variant_for(f: Facts, release: str | None) -> wheels.Variant | None:
    """The build of `release` to install: the newest CUDA the driver runs (the newest when it is unknown
    or runs none of them); None when the tables do not know the release."""
    machine = f.system.machine if f.system is not None else None
    offered = wheels.variants(release or "", machine) or wheels.variants(release or "")
    if not offered:
        return None
    drv = driver_view(f)
    runnable = [v for v in offered if drv.runs(v.cuda)]
    return max(runnable or offered, key=lambda v: v.cuda)


def _reinstall_torch(f: Facts) -> Fix:
    return fix(
        "Remove every nvidia-* wheel and reinstall torch from its index (pytorch#104259)",
        "python -m pip list 2>/dev/null | grep -i '^nvidia-'",
        "python -m pip uninstall -y $(python -m pip list 2>/dev/null | grep -o '^nvidia-[^ ]*') torch",
        _torch_install(f),
    )


def _undefined_symbol(f: Facts, h: PasteHit) -> Finding:
    sym, lib = h.detail.get("symbol", "?"), h.detail.get("library")
    title = (
        msg("undefined symbol {symbol} in {library}: a library at the wrong version", symbol=sym, library=lib)
        if lib
        else msg("undefined symbol {symbol}: a library at the wrong version", symbol=sym)
    )
    return UNDEFINED_SYMBOL.finding(
        title=title,
        fix=[
            fix("See which copies are found first", "echo $LD_LIBRARY_PATH", "python -m pip list | grep -i nvidia"),
            fix("Let torch use the libraries of its own wheels", "unset LD_LIBRARY_PATH"),
            _reinstall_torch(f),
        ],
    )


def _cannot_open(f: Facts, h: PasteHit) -> Finding | None:
    lib = h.detail.get("library", "")
    if lib.startswith("libnvidia-ml") and f.driver is not None and f.driver.init_status == "LIBRARY_NOT_FOUND":
        return None  # CD101 says it with the machine's context
    if lib.startswith(("libcuda.so", "libnvidia-ml")):
        return CANNOT_OPEN.finding(
            title=msg("{library} cannot be found: no NVIDIA driver where this ran", library=lib),
            fix=[
                fix(
                    "On a Linux host: see whether the driver is installed",
                    "nvidia-smi",
                    "ls /usr/lib/x86_64-linux-gnu/libcuda*",
                ),
                fix("In a container: start it with the GPUs", "docker run --gpus all --rm IMAGE nvidia-smi"),
                fix("Under WSL2: the library lives in /usr/lib/wsl/lib (the Windows driver)", "ls /usr/lib/wsl/lib"),
            ],
        )
    cudnn = lib.startswith("libcudnn")
    major = f.torch.cuda.split(".")[0] if f.torch is not None and f.torch.cuda else None
    package = (f"nvidia-cudnn-cu{major}" if major else "nvidia-cudnn") if cudnn else "nvidia-*"
    return CANNOT_OPEN.finding(
        title=msg("{library} cannot be found: cuDNN torch needs is missing", library=lib)
        if cudnn
        else msg("{library} cannot be found: a CUDA library torch needs is missing", library=lib),
        fix=[
            fix(
                "See what is installed and where the loader looks",
                "python -m pip list | grep -i nvidia",
                "echo $LD_LIBRARY_PATH",
            ),
            fix(
                msg("Reinstall torch with {package} at the versions it pins", package=package),
                _torch_install(f, force=True),
            ),
            _reinstall_torch(f),
        ],
    )


def _windows_dll(f: Facts, h: PasteHit) -> Finding:
    dll = h.detail.get("library", "a DLL")
    if h.detail.get("code") == "1455":
        return WINDOWS_DLL.finding(
            title=msg("Windows ran out of paging file loading {dll} (WinError 1455)", dll=dll.split(chr(92))[-1]),
            why=msg(
                "WinError 1455 means the paging file is too small to map the DLL: torch's CUDA DLLs are large, "
                "and each DataLoader worker process maps them again. GPU memory is not the cause."
            ),
            fix=[
                fix(
                    msg(
                        "Let Windows size the paging file (System > Advanced > Performance > Virtual memory), or "
                        "enlarge it, then restart"
                    ),
                    "SystemPropertiesPerformance.exe",
                ),
                fix(msg("Or start fewer DataLoader workers"), "DataLoader(dataset, num_workers=2)"),
            ],
            tables=[Table(["Windows said"], [[h.text]])],
        )
    return WINDOWS_DLL.finding(
        title=msg("Windows cannot load {dll}", dll=dll.split(chr(92))[-1]),
        fix=[
            fix(
                "Install the Microsoft Visual C++ Redistributable (x64), then open a new terminal",
                "winget install Microsoft.VCRedist.2015+.x64",
            ),
            fix(
                "Reinstall torch cleanly (one build, from one index)",
                "python -m pip uninstall -y torch torchvision torchaudio",
                _torch_install(f),
            ),
        ],
        tables=[Table(["Windows said"], [[h.text]])],
    )


def _deserialize(h: PasteHit) -> Finding:
    dev, count = h.detail.get("dev"), h.detail.get("count")
    title = DESERIALIZE.summary
    if dev is not None and count is not None:
        title = msg(
            "A checkpoint saved on cuda:{device} is loaded where torch sees 1 GPU"
            if count == "1"
            else "A checkpoint saved on cuda:{device} is loaded where torch sees {n} GPUs",
            device=dev,
            n=count,
        )
    return DESERIALIZE.finding(
        title=title,
        fix=[
            fix("Load onto the CPU (then move the model)", "torch.load(path, map_location='cpu')"),
            fix("Or onto the first GPU of this machine", "torch.load(path, map_location='cuda:0')"),
        ],
    )


def _state_dict(h: PasteHit) -> Finding:
    prefix = h.detail.get("prefix", "module.")
    return STATE_DICT_PREFIX.finding(
        title=msg("The state dict keys differ by the prefix '{prefix}'", prefix=prefix),
        fix=[
            fix(
                msg("Strip '{prefix}' from the checkpoint's keys before loading", prefix=prefix),
                "from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present",
                f"consume_prefix_in_state_dict_if_present(state_dict, '{prefix}')",
                "model.load_state_dict(state_dict)",
            ),
            fix("Or save the unwrapped model next time", "torch.save(model.module.state_dict(), path)"),
        ],
    )


_RUN_KINDS = (
    "out-of-memory",
    "device-side-assert",
    "labels-out-of-range",
    "illegal-memory-access",
    "launch-failure",
    "device-busy",
    "no-cuda-gpus",
    "invalid-ordinal",
    "cuda-unknown-error",
    "device-mismatch",
    "torch-attribute-typo",
)
# errors of a program that ran on the GPU (or of its code): the paste explains the problem
_EXPLAINED_AT_RUN_TIME = (
    "out-of-memory",
    "device-side-assert",
    "labels-out-of-range",
    "illegal-memory-access",
    "launch-failure",
    "device-mismatch",
    "torch-attribute-typo",
    "kv-cache-too-small",
    "harmless-warning",
    "gpu-ran",
)
_RUN_ERRORS = ("device-busy", "cuda-unknown-error")  # the machine, not the program


def _runtime_fix(h: PasteHit) -> Fix:
    k = h.kind
    if k == "out-of-memory":
        return _oom_fix(h)
    if k in ("device-side-assert", "labels-out-of-range"):
        return fix(
            msg("A device-side assert: find the failing operation (often a label or index out of range)"),
            "CUDA_LAUNCH_BLOCKING=1 python train.py",
        )
    if k in ("illegal-memory-access", "launch-failure"):
        return fix(
            msg("A kernel failed while running: get the exact operation"), "CUDA_LAUNCH_BLOCKING=1 python train.py"
        )
    if k == "device-busy":
        return fix(
            msg("The GPU is busy or in an exclusive compute mode"),
            "nvidia-smi --query-gpu=index,compute_mode --format=csv",
        )
    if k == "no-cuda-gpus":
        return fix(
            msg("No GPU visible to CUDA: see what CUDA_VISIBLE_DEVICES says and which GPUs exist"),
            'echo "[$CUDA_VISIBLE_DEVICES]"',
            "nvidia-smi -L",
        )
    if k == "invalid-ordinal":
        return fix(
            msg("The code asks for a GPU index this process does not see: count the GPUs, then use 0 to n-1"),
            'python -c "import torch; print(torch.cuda.device_count())"',
            'echo "[$CUDA_VISIBLE_DEVICES]"',
        )
    if k == "device-mismatch":
        return fix(
            msg("A bug in the code: move every tensor and module to the same device"),
            "x = x.to(device)  # and model.to(device), before the forward pass",
        )
    if k == "kv-cache-too-small":
        return fix(
            msg("The model's context does not fit the KV cache: lower max_model_len, or give vLLM more memory"),
            "vllm serve MODEL --max-model-len 8192",
            "vllm serve MODEL --gpu-memory-utilization 0.95",
        )
    if k == "torch-attribute-typo":
        return fix(msg("A typo in the code: the function is torch.cuda.is_available()"), "torch.cuda.is_available()")
    return fix(
        msg("After suspend/resume: reload the unified-memory module"),
        "sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm",
    )


def _size(detail: dict[str, str], key: str) -> int | None:
    v = detail.get(key, "")
    return int(v) if v.isdigit() else None


def oom_cause(detail: dict[str, str]) -> str | None:
    """What the numbers in torch's OOM message say: "fragmentation" (memory reserved by PyTorch but
    unallocated would have held the request), "fits-free" (the GPU had twice the request free),
    "others" (memory outside this process), "too-big" (the
    request alone exceeds the GPU), "does-not-fit" (the job needs more than the GPU has); None when the
    message carries no numbers."""
    total, free, tried = _size(detail, "total"), _size(detail, "free"), _size(detail, "tried")
    reserved, allocated = _size(detail, "reserved"), _size(detail, "allocated")
    if total is None:
        return "too-big" if tried is not None and tried > 48 << 30 else None
    if tried is not None and tried > total:
        return "too-big"
    others = _size(detail, "others")
    if others is None and reserved is not None and free is not None:
        others = max(0, total - free - reserved)
    this = _size(detail, "this_process")
    if this is not None and free is not None:
        others = max(others or 0, total - free - this)
    if others is not None and others > total // 4:
        return "others"
    if tried is not None and free is not None and tried < free // 2 and "expandable" not in detail:
        return "fits-free"  # the driver had the memory: fragmented, or capped for this process
    if reserved is not None and allocated is not None and tried is not None:
        unused = reserved - allocated  # reserved by PyTorch, unallocated: a large share is fragmentation
        if unused >= tried and unused > total // 20 and unused * 5 >= reserved and "expandable" not in detail:
            return "fragmentation"
    return "does-not-fit"


def _gib(n: int | None) -> str:
    from cudadoctor.knowledge.units import format_size

    return format_size(n)


def _oom_title(h: PasteHit) -> Message:
    d = h.detail
    cause = oom_cause(d)
    total, free, tried = _size(d, "total"), _size(d, "free"), _size(d, "tried")
    reserved, allocated = _size(d, "reserved"), _size(d, "allocated")
    if cause == "too-big":
        return msg(
            "Out of memory: one allocation of {tried} is more than the GPU's {total}: the input is far too large",
            tried=_gib(tried),
            total=_gib(total) if total else msg("memory"),
        )
    if cause == "others":
        held = total - (free or 0) - (reserved if reserved is not None else _size(d, "this_process") or 0)  # type: ignore[operator]
        return msg(
            "Out of memory: about {held} of the GPU's {total} is held outside this program",
            held=_gib(max(held, _size(d, "others") or 0)),
            total=_gib(total),
        )
    if cause == "fragmentation":
        return msg(
            "Out of memory from fragmentation: {unused} is reserved by PyTorch but unallocated, {tried} was asked",
            unused=_gib((reserved or 0) - (allocated or 0)),
            tried=_gib(tried),
        )
    if cause == "fits-free":
        return msg(
            "Out of memory although {free} is free and {tried} was asked: the memory is fragmented or capped",
            free=_gib(free),
            tried=_gib(tried),
        )
    if cause == "does-not-fit":
        return msg(
            "Out of memory: the job needs more than the GPU's {total} ({tried} more was asked, {free} free)",
            total=_gib(total),
            tried=_gib(tried),
            free=_gib(free),
        )
    return msg("Out of memory while running: the job does not fit in the GPU's memory as it is")


def _oom_fix(h: PasteHit) -> Fix:
    cause = oom_cause(h.detail)
    if cause in ("fragmentation", "fits-free"):
        return fix(
            msg("Let the allocator grow segments instead of fragmenting (then run again)"),
            "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        )
    if cause == "others":
        return fix(
            msg("See who holds the GPU's memory, and end what is stale"),
            "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
            "cudadoctor gpus",
        )
    if cause == "too-big":
        return fix(
            msg("Make the input smaller (image resolution, sequence length) or process it in tiles"),
            "nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv",
        )
    return fix(
        msg("Make the job smaller: a smaller batch, shorter sequences, half precision, no gradients in evaluation"),
        "with torch.no_grad():  # around validation and inference",
        "    outputs = model(inputs)",
        "with torch.autocast('cuda', dtype=torch.bfloat16):  # or float16",
        "    loss = loss_fn(model(inputs), targets)",
        lang="python",
    )


def _runtime(hits: list[PasteHit]) -> Finding:
    kinds = list(dict.fromkeys(h.kind for h in hits))
    severity = Severity.ERROR if any(k in _RUN_ERRORS for k in kinds) else None
    first = hits[0]
    title = (
        _oom_title(first)
        if first.kind == "out-of-memory"
        else msg("A CUDA error while running: {error}", error=first.text)
    )
    tables = []
    if first.kind == "out-of-memory" and _size(first.detail, "total") is not None:
        d = first.detail
        labels = (
            ("tried", msg("asked for")),
            ("total", msg("GPU total")),
            ("free", msg("free on the GPU")),
            ("allocated", msg("allocated by PyTorch")),
            ("reserved", msg("reserved by PyTorch")),
            ("others", msg("other processes")),
        )
        rows = [[label, _gib(_size(d, key))] for key, label in labels if _size(d, key) is not None]
        tables.append(Table([msg("Memory (torch's message)"), msg("Size")], rows))
    seen: set[str] = set()
    fixes = []
    for h in hits:
        if h.kind not in seen:
            seen.add(h.kind)
            fixes.append(_runtime_fix(h))
    return CUDA_RUNTIME.finding(title=title, fix=fixes, severity=severity, tables=tables)


def _visible_hides(cvd: PasteHit, err: PasteHit) -> Finding:
    from cudadoctor.rules.visible import ALL_HIDDEN

    value = cvd.detail.get("value", "")
    return ALL_HIDDEN.finding(
        title=msg(
            'CUDA_VISIBLE_DEVICES={value} hides every GPU here: torch says "No CUDA GPUs are available"',
            value=f"'{value}'",
        ),
        why=msg(
            "The paste sets CUDA_VISIBLE_DEVICES ({line}), and CUDA then found no GPU: the variable names a "
            "device this machine does not have (numbers start at 0), or is empty.",
            line=cvd.text,
        ),
        fix=[
            fix(msg("Remove the setting from the code or the command, or name a GPU that exists"), "nvidia-smi -L"),
            fix(msg("On a one-GPU machine"), "export CUDA_VISIBLE_DEVICES=0"),
        ],
    )


def _hidden_inside(err: PasteHit) -> Finding:
    from cudadoctor.rules.visible import ALL_HIDDEN

    return ALL_HIDDEN.finding(
        title=msg("torch sees a GPU outside this program but none inside it: CUDA_VISIBLE_DEVICES hides them"),
        why=msg(
            'The paste says torch.cuda.is_available() is True, yet the program fails with "{error}". The '
            "difference is the program's own environment: it (or its launcher, or a --gpu/--gpu_id option) "
            "sets CUDA_VISIBLE_DEVICES to a GPU this machine does not have.",
            error=err.text,
        ),
        fix=[
            fix(
                msg("Find where the program sets it"),
                "grep -rn CUDA_VISIBLE_DEVICES --include='*.py' --include='*.sh' .",
            ),
            fix(
                msg("Then name a GPU that exists (numbers start at 0)"),
                "nvidia-smi -L",
                "export CUDA_VISIBLE_DEVICES=0",
            ),
        ],
    )


def _harmless(hits: list[PasteHit]) -> Finding:
    names = ", ".join(dict.fromkeys(h.detail.get("warning", "?") for h in hits))
    return HARMLESS.finding(title=msg("A harmless warning ({names}): nothing to fix in the setup", names=names))


def _stack_works(h: PasteHit) -> Finding:
    return STACK_WORKS.finding(
        title=msg("The GPU ran: {line}", line=h.text),
        tables=[Table([msg("What shows it")], [[h.detail.get("why", "")]])],
    )


def _container(h: PasteHit, snap: bool = False) -> Finding:
    from cudadoctor.rules.driver import CONTAINER_FIX

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


def _container_without_driver(ctx: PasteHit, h: PasteHit) -> Finding:
    from cudadoctor.rules.driver import CONTAINER_FIX

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


def _singularity_no_nv(h: PasteHit) -> Finding:
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


def _docker_run_no_gpus(h: PasteHit) -> Finding:
    from cudadoctor.rules.driver import CONTAINER_FIX

    return CONTAINER.finding(
        title=msg("The container was started without --gpus: it has no GPU ({line})", line=h.text),
        why=msg(
            "Docker passes GPUs into a container only when asked (--gpus all, with the NVIDIA Container "
            "Toolkit on the host); without it there is no driver and no GPU inside, whatever the image holds."
        ),
        fix=CONTAINER_FIX[:2],
    )


def _shm(h: PasteHit) -> Finding:
    from cudadoctor.rules.system import SMALL_SHM

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


def _no_driver(f: Facts, h: PasteHit) -> Finding:
    from cudadoctor.rules.driver import CONTAINER_FIX, WSL_FIX

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
    return NO_DRIVER.finding(fix=fixes)


def _cpu_only_decided(f: Facts) -> bool:
    """CD202 fires from facts when the build is CPU-only and NVML saw GPUs."""
    t, d = f.torch, f.driver
    return bool(t and t.cuda_built is False and d and d.init_status == "ok" and d.device_count)


def _not_compiled(f: Facts, h: PasteHit) -> Finding:
    fixes = _advice_fix(f, msg("Install a CUDA build")) if f.driver and f.driver.driver_version else []
    if not fixes:
        version = (f.torch.version or "").split("+")[0] if f.torch else ""
        pin = f"torch=={version}" if version else "torch"
        fixes = [
            fix(
                "Replace it with a CUDA build (pick the variant your driver supports: nvidia-smi shows its CUDA)",
                "python -m pip uninstall -y torch",
                f"python -m pip install {pin} --index-url https://download.pytorch.org/whl/cu126",
            )
        ]
    if f.system is not None and f.system.os == "Windows":
        fixes.append(fix("On Windows, PyPI's torch is CPU-only: always use the index URL", "nvidia-smi"))
    title = NOT_COMPILED.summary
    if f.torch and f.torch.version:
        title = msg(
            "Torch not compiled with CUDA enabled: torch {version} is a CPU-only build", version=f.torch.version
        )
    return NOT_COMPILED.finding(title=title, fix=fixes)


def _cudnn_status(h: PasteHit) -> Finding:
    return CUDNN_STATUS.finding(
        title=msg("cuDNN failed: CUDNN_STATUS_{status}", status=h.detail.get("status", "?")),
        fix=[
            fix(
                "Use the cuDNN of torch's own wheel: drop system paths",
                "echo $LD_LIBRARY_PATH",
                "unset LD_LIBRARY_PATH",
            ),
            fix("See whether it is memory", "nvidia-smi"),
            fix("Check cuDNN as torch sees it", 'python -c "import torch; print(torch.backends.cudnn.version())"'),
        ],
    )


def _checkpoints(kinds: dict[str, list[PasteHit]]) -> list[Finding]:
    """Checkpoint errors whose text names the cause; the codes are `cudadoctor ckpt`'s."""
    from cudadoctor.rules.ckpt import entries as ckpt

    out = []
    if "ckpt-lfs-pointer" in kinds:
        out.append(
            ckpt.LFS_POINTER.finding(
                title=msg(
                    "The checkpoint is a Git LFS pointer, not the weights: {error}",
                    error=kinds["ckpt-lfs-pointer"][0].text,
                ),
                fix=[
                    fix(msg("Fetch the real files with Git LFS"), "git lfs install", "git lfs pull"),
                    fix(msg("See what the file is (a pointer is about 130 bytes of text)"), "head -c 200 FILE"),
                ],
            )
        )
    elif "ckpt-header-too-large" in kinds:
        out.append(
            ckpt.HEADER_TOO_LARGE.finding(
                fix=[
                    fix(msg("See what the file is: a Git LFS pointer or an HTML page is text"), "head -c 200 FILE"),
                    fix(msg("Fetch the real files with Git LFS, or download the file again"), "git lfs pull"),
                ]
            )
        )
    if "ckpt-weights-only" in kinds:
        h = kinds["ckpt-weights-only"][0]
        name = h.detail.get("global")
        out.append(
            ckpt.UNSAFE_GLOBALS.finding(
                title=msg(
                    "torch.load(weights_only=True) refuses {name} in this checkpoint", name=name or msg("a global")
                ),
                fix=[
                    fix(
                        msg("If the file is trusted: allow exactly that global"),
                        "import torch.serialization",
                        f"torch.serialization.add_safe_globals([{name or 'GLOBAL'}])  # import it first",
                    ),
                    fix(msg("Or, for a file you trust, load it the old way"), "torch.load(path, weights_only=False)"),
                ],
            )
        )
    if "ckpt-shape-mismatch" in kinds:
        h = kinds["ckpt-shape-mismatch"][0]
        out.append(
            ckpt.SHAPES.finding(
                title=msg(
                    "{key}: the checkpoint has shape {saved}, the model {model}: a different model configuration",
                    key=h.detail.get("key", "?"),
                    saved=h.detail.get("saved", "?"),
                    model=h.detail.get("model", "?"),
                ),
                fix=[
                    fix(
                        msg("Build the model as the checkpoint was trained (e.g. its number of classes)"),
                        "model = Net(num_classes=N)  # N: the checkpoint's first dimension",
                    ),
                    fix(
                        msg("Or load the rest and replace the layer that differs"),
                        "model.load_state_dict({k: v for k, v in sd.items() if not k.startswith('fc.')}, strict=False)",
                    ),
                ],
            )
        )
    return out


def _cpu_torch_wanted(f: Facts, h: PasteHit) -> Finding:
    from cudadoctor.rules.torch_install import CPU_ONLY

    version = f.torch.version if f.torch is not None else None
    return CPU_ONLY.finding(
        title=msg(
            "torch {version} is a CPU-only build, but the program asks for CUDA: {error}",
            version=version or "",
            error=h.text,
        ),
        fix=[
            fix(
                msg("Replace it with a CUDA build (pick the variant your driver supports: nvidia-smi shows its CUDA)"),
                "python -m pip uninstall -y torch",
                _cuda_build_install(f),
            )
        ],
    )


def _cpu_torch_beside_gpu(f: Facts, h: PasteHit) -> Finding:
    from cudadoctor.rules.torch_install import CPU_ONLY

    return CPU_ONLY.finding(
        title=msg(
            "torch {version} is a CPU-only build, yet another run in the paste used {gpu}: {line}",
            version=h.detail.get("torch", ""),
            gpu=h.detail.get("gpu", ""),
            line=h.text,
        ),
        fix=[
            fix(
                msg("Replace it with a CUDA build (pick the variant your driver supports: nvidia-smi shows its CUDA)"),
                "python -m pip uninstall -y torch",
                _cuda_build_install(f),
            )
        ],
    )


def _placeholder_sdist(h: PasteHit) -> Finding:
    from cudadoctor.rules.torch_install import NOT_INSTALLED

    return NOT_INSTALLED.finding(
        title=msg(
            "pip found no torch wheel for this platform or Python and took the 0.1.2 placeholder: {line}", line=h.text
        ),
        why=msg(
            "PyPI's torch 0.1.2 is a placeholder source package: pip falls back to it only when no wheel "
            "matches the platform (a Jetson's aarch64 with an old pip, 32-bit Python) or the Python version, "
            "and it cannot be installed. torch is not installed."
        ),
        fix=[
            fix(msg("See the platform and Python pip installs for"), "python -m pip debug --verbose | head -20"),
            fix(msg("On a Jetson: NVIDIA's JetPack torch wheel"), "cat /etc/nv_tegra_release"),
        ],
    )


def _conda_cpu(f: Facts, kinds: dict[str, list[PasteHit]]) -> Finding | None:
    """conda chose pytorch's CPU build: the plan or list shows it, or a conda install was followed by
    is_available() False with nothing else to explain it."""
    from cudadoctor.rules.torch_packages import CONDA_CPU

    if "conda-cpu" in kinds:
        h, sure = kinds["conda-cpu"][0], True
    elif "conda-install" in kinds and "says-cpu-build" in kinds:
        h, sure = kinds["conda-install"][0], True
    elif (
        "conda-install" in kinds
        and f.torch is not None
        and f.torch.is_available is False
        and f.torch.cuda_built is not True
    ):
        h, sure = kinds["conda-install"][0], False
    else:
        return None
    return CONDA_CPU.finding(
        title=msg("conda chose pytorch's CPU build: {line}", line=h.text)
        if sure
        else msg("conda likely chose pytorch's CPU build (is_available() is False after: {line})", line=h.text),
        fix=[
            fix(
                msg("See which build conda installed (a cpu build string, or cpuonly / pytorch-mutex cpu)"),
                "conda list | grep -E 'pytorch|cpuonly|mutex'",
            ),
            fix(
                msg("Install torch from PyTorch's CUDA wheels instead (in this env)"),
                "conda remove -y pytorch cpuonly",
                "python -m pip install torch --index-url https://download.pytorch.org/whl/cu126",
            ),
        ],
    )


# The first CUDA whose nvcc compiles for each architecture (LLVM clang/lib/Basic/Cuda.cpp,
# MinVersionForOffloadArch; CUDA release notes): a torch built with an older CUDA has no kernels for it.
_FIRST_CUDA = {
    (7, 0): (9, 0),
    (7, 5): (10, 0),
    (8, 0): (11, 0),
    (8, 6): (11, 1),
    (8, 7): (11, 4),
    (8, 9): (11, 8),
    (9, 0): (11, 8),
    (10, 0): (12, 8),
    (12, 0): (12, 8),
}


def _gpus_with_cc(f: Facts) -> list[tuple[str, str]]:
    from cudadoctor.advice.install import gpu_capabilities

    known = gpu_capabilities(f)
    if not known and f.paste is not None:  # a GPU named in prose, with nothing else of torch shown
        known = [(h.detail["gpu"], h.detail["cc"]) for h in f.paste.hits if h.kind == "gpu-named" and "cc" in h.detail]
    return list(dict.fromkeys(known))


def _arch_beyond_cuda(f: Facts) -> list[Finding]:
    """A GPU newer than every architecture the torch build's CUDA can compile for: certain from the
    CUDA version alone, where the build's own arch list is not in the paste or the tables."""
    from cudadoctor.rules.torch_build import ARCH_UNSUPPORTED

    t = f.torch
    if t is None or not t.cuda or t.arch_flags or wheels.official_arch_flags(t.version, None):
        return []
    have = parse_version(t.cuda)
    if not have or len(have) < 2:
        return []
    out = []
    for name, cc in _gpus_with_cc(f):
        key = tuple(int(x) for x in cc.split("."))
        first = _FIRST_CUDA.get(key)  # type: ignore[arg-type]
        if first is None or tuple(have[:2]) >= first:
            continue
        need = f"{first[0]}.{first[1]}"
        out.append(
            ARCH_UNSUPPORTED.finding(
                title=msg(
                    "torch {version} is built with CUDA {cuda}, which cannot compile for {gpu} (sm_{sm}): it "
                    "has no kernels for it",
                    version=t.version or "",
                    cuda=t.cuda,
                    gpu=name,
                    sm=cc.replace(".", ""),
                ),
                why=msg(
                    "{page} CUDA compiles for compute capability {cc} from CUDA {need} on; a build with CUDA "
                    "{cuda} cannot contain its kernels. Install a torch built with CUDA {need} or newer.",
                    page=msg(ARCH_UNSUPPORTED.explanation),
                    cc=cc,
                    need=need,
                    cuda=t.cuda,
                ),
                fix=_advice_fix(f, msg("Install a build compiled for this GPU")) or _cuda_at_least(first),
            )
        )
    return out


def _oldest_variant(need: tuple[int, int] = (0, 0)) -> wheels.Variant | None:
    """With the driver unknown, the build of the newest release with the oldest CUDA that has `need`:
    the one most drivers run (nvidia-smi's "CUDA Version" must be at least the wheel's)."""
    fitting = sorted((v for v in wheels.variants(wheels.newest_release()) if v.cuda >= need), key=lambda v: v.cuda)
    return fitting[0] if fitting else None


def _cuda_build_install(f: Facts) -> str:
    """The install line for a CUDA build: the driver's best where it is known, else the oldest CUDA."""
    if f.driver is not None and f.driver.driver_version:
        return _torch_install(dataclasses.replace(f, torch=None))
    v = _oldest_variant()
    return f"python -m pip install torch --index-url {v.index_url}" if v else "python -m pip install torch"


def _cuda_at_least(need: tuple[int, int]) -> list[Fix]:
    v = _oldest_variant(need)
    if v is None:
        return []
    return [
        fix(
            msg(
                "Install a torch built with CUDA {need} or newer ({variant}); nvidia-smi's CUDA Version must be at "
                "least the wheel's",
                need=f"{need[0]}.{need[1]}",
                variant=v.name,
            ),
            "nvidia-smi",
            f"python -m pip install torch --index-url {v.index_url}",
        )
    ]


def _torch_says_no_kernels(f: Facts, h: PasteHit) -> Finding:
    """torch's own warning ("sm_86 is not compatible with the current PyTorch installation") is its
    verdict on its build: it outranks an estimate from the tables (a PTX JIT that torch itself rejects)."""
    from cudadoctor.rules.torch_build import ARCH_UNSUPPORTED

    gpu, cc = h.detail.get("gpu") or "the GPU", h.detail.get("cc", "?")
    return ARCH_UNSUPPORTED.finding(
        title=msg(
            "torch says {gpu} (sm_{sm}) is not compatible with this build: it has no kernels for it",
            gpu=gpu,
            sm=cc.replace(".", ""),
        ),
        why=msg(
            "{page} torch lists what it was built for: {flags}.",
            page=msg(ARCH_UNSUPPORTED.explanation),
            flags=h.detail.get("flags", ""),
        ),
        fix=_advice_fix(f, msg("Install a build compiled for this GPU"))
        or _cuda_at_least(_FIRST_CUDA.get(tuple(int(x) for x in cc.split(".")) if cc != "?" else (0, 0), (0, 0)))  # type: ignore[arg-type]
        or [fix(msg("Install a torch built for this GPU (a newer CUDA variant)"), "nvidia-smi")],
        tables=[Table(["torch said"], [[h.text]])],
    )


def overruled(f: Facts, findings: list[Finding]) -> list[Finding]:
    """What the paste's own texts settle against the tables: torch's "not compatible" warning is its
    verdict on a GPU, so the tables' "runs only through PTX JIT" (CD217) for it goes."""
    p = f.paste
    if p is None:
        return findings
    if any(h.kind == "arch-not-in-build" for h in p.hits):
        findings = [x for x in findings if x.code != "CD217"]
    # "torch uses 1 GPU" (CD200, from is_available) is no verdict where the paste shows the build has no
    # kernels for that GPU, or none at all
    broken = {"CD202", "CD205", "CD206", "CD215"}
    if any(x.code in broken and x.severity is Severity.ERROR for x in findings):
        findings = [x for x in findings if x.code != "CD200"]
    return findings


def _hardware_and_platform(f: Facts, kinds: dict[str, list[PasteHit]]) -> list[Finding]:
    """What the paste's prose and logs say about the GPU generation, a Jetson, P2P and the launcher."""
    from cudadoctor.rules.multi_gpu import P2P_MISSING
    from cudadoctor.rules.requirements import LOW_CAPABILITY
    from cudadoctor.rules.torch_build import GPU_TOO_OLD
    from cudadoctor.rules.torch_packages import JETSON

    out = []
    for name, cc in _gpus_with_cc(f):
        if parse_version(cc) <= (3, 0):  # type: ignore[operator]
            out.append(
                GPU_TOO_OLD.finding(
                    title=msg(
                        "{gpu} (compute capability {cc}) is older than every PyTorch CUDA build", gpu=name, cc=cc
                    ),
                    why=msg(
                        "{page} PyTorch's CUDA binaries dropped compute capability 3.0 in 0.4.1 and never ran on "
                        "2.x (pytorch#14681); such a GPU shows torch.cuda.is_available() True and then fails "
                        'with "invalid device function" or "no kernel image".',
                        page=msg(GPU_TOO_OLD.explanation),
                    ),
                    fix=[fix(msg("Use the CPU"), "device = torch.device('cpu')")],
                )
            )
            break
    if "attention-needs-newer-gpu" in kinds:
        h = kinds["attention-needs-newer-gpu"][0]
        out.append(
            LOW_CAPABILITY.finding(
                title=msg("The attention kernel needs a newer GPU: {error}", error=h.text),
                why=msg(
                    "FlashAttention(-2) runs on compute capability 8.0 (Ampere) and newer. On a Volta or Turing "
                    "GPU (V100, T4, RTX 20xx) the library falls back to another backend or refuses: a property "
                    "of the GPU, not of the installation."
                ),
                fix=[
                    fix(
                        msg("See the GPU's compute capability"), "nvidia-smi --query-gpu=name,compute_cap --format=csv"
                    ),
                    fix(
                        msg("Use an attention backend this GPU has (or an Ampere or newer GPU)"),
                        "export VLLM_ATTENTION_BACKEND=XFORMERS  # vLLM; in xFormers pick the cutlass operator",
                    ),
                ],
            )
        )
    if "jetson" in kinds and (
        (f.torch is not None and f.torch.is_available is False) or "pip-install-torch" in kinds or "sdist" in kinds
    ):
        out.append(
            JETSON.finding(
                title=msg(
                    "On a Jetson, torch must come from NVIDIA's JetPack wheels: {line}", line=kinds["jetson"][0].text
                ),
                fix=[
                    fix(msg("See the JetPack (L4T) release"), "cat /etc/nv_tegra_release"),
                    fix(
                        msg(
                            "Install the torch wheel NVIDIA builds for that JetPack (PyPI's aarch64 torch is CPU-only)"
                        ),
                        "python3 -m pip install torch --index-url https://pypi.jetson-ai-lab.io/jp6/cu126",
                    ),
                ],
            )
        )
    if "p2p-disabled" in kinds and "hang" in kinds:
        out.append(
            P2P_MISSING.finding(
                title=msg("NCCL hangs unless P2P is disabled: direct GPU-to-GPU transfers fail here"),
                why=msg(
                    "When NCCL_P2P_DISABLE=1 turns a hang into a working run, peer-to-peer transfers between the "
                    "GPUs do not work on this machine: usually PCIe ACS or the IOMMU (VT-d) reroutes them. "
                    "Disabling P2P is safe but slower."
                ),
                fix=[
                    fix(
                        msg("See how the GPUs are connected and whether ACS is on"),
                        "nvidia-smi topo -m",
                        "sudo lspci -vvv | grep -i acsctl",
                    ),
                    fix(
                        msg("Let the IOMMU pass device traffic through (kernel command line), then reboot"), "iommu=pt"
                    ),
                ],
            )
        )
    nproc = kinds.get("nproc-per-node", [])
    cvd = kinds.get("visible-devices-set", [])
    if nproc and cvd:
        n, visible = int(nproc[0].detail["n"]), [x for x in cvd[0].detail.get("value", "").split(",") if x]
        if visible and n > len(visible):
            # fleet's code, from the catalogue: rules.fleet runs check's rules, so no import of it here
            out.append(
                CATALOGUE["CD811"].finding(
                    title=msg(
                        "{n} processes per node for {k} visible GPUs: the extra ranks ask for devices that do not "
                        "exist (invalid device ordinal)",
                        n=n,
                        k=len(visible),
                    ),
                    fix=[fix(msg("Start one process per visible GPU"), f"--nproc_per_node={len(visible)}")],
                )
            )
    return out


def _kernel_side(f: Facts, kinds: dict[str, list[PasteHit]]) -> list[Finding]:
    """What modprobe and the kernel log say: Secure Boot, no module for this kernel, the open module
    flavour, nouveau, Xid errors."""
    from cudadoctor.rules.health import XID
    from cudadoctor.rules.kernel_module import FLAVOUR, NOT_BUILT, NOUVEAU, SECURE_BOOT

    out = []
    if "secure-boot-rejects" in kinds:
        out.append(
            SECURE_BOOT.finding(
                title=msg(
                    "Secure Boot refuses the NVIDIA kernel module: {error}", error=kinds["secure-boot-rejects"][0].text
                ),
                fix=[
                    fix(msg("See whether Secure Boot is on"), "mokutil --sb-state"),
                    fix(
                        msg("Enrol the key DKMS signs modules with, reboot and confirm it in the blue MOK screen"),
                        "sudo mokutil --import /var/lib/dkms/mok.pub",
                        "sudo reboot",
                    ),
                ],
            )
        )
    if "module-not-built" in kinds:
        h = kinds["module-not-built"][0]
        kernel = h.detail.get("kernel", "")
        out.append(
            NOT_BUILT.finding(
                title=msg("No NVIDIA kernel module for the running kernel {kernel}", kernel=kernel),
                fix=[
                    fix(msg("See what DKMS built, for which kernels"), "dkms status"),
                    fix(
                        msg("Build it for this kernel (its headers first), then load it"),
                        "sudo apt-get install -y linux-headers-$(uname -r)",
                        "sudo dkms autoinstall",
                        "sudo modprobe nvidia",
                    ),
                ],
            )
        )
    if "needs-open-module" in kinds:
        out.append(
            FLAVOUR.finding(
                title=msg(
                    "The GPU needs NVIDIA's open kernel module: {error}", error=kinds["needs-open-module"][0].text
                ),
                fix=[
                    fix(
                        msg("Install the open flavour of the same driver (Ubuntu)"),
                        "sudo ubuntu-drivers install --gpgpu nvidia:open",
                    )
                ],
            )
        )
    elif "secure-boot-on" in kinds and f.driver is not None and f.driver.init_status == "DRIVER_NOT_LOADED":
        out.append(
            SECURE_BOOT.finding(
                title=msg("Secure Boot is on and the NVIDIA module is not loaded: an unsigned module is refused"),
                severity=Severity.WARNING,  # likely, not certain: modprobe's own error settles it
                fix=[
                    fix(
                        msg('Load it by hand: "Key was rejected by service" confirms Secure Boot'),
                        "sudo modprobe nvidia",
                    ),
                    fix(
                        msg("Enrol the key DKMS signs modules with, reboot and confirm it in the blue MOK screen"),
                        "sudo mokutil --import /var/lib/dkms/mok.pub",
                        "sudo reboot",
                    ),
                ],
            )
        )
    if "nouveau-loaded" in kinds and f.driver is not None and f.driver.init_status == "DRIVER_NOT_LOADED":
        out.append(
            NOUVEAU.finding(
                title=msg(
                    "nouveau holds the GPU, so the NVIDIA module cannot: {line}", line=kinds["nouveau-loaded"][0].text
                ),
            )
        )
    if "xid" in kinds:
        h = kinds["xid"][0]
        out.append(
            XID.finding(
                title=msg("The kernel log has NVIDIA Xid {xid}: {line}", xid=h.detail.get("xid", "?"), line=h.text),
                fix=[fix(msg("See every Xid with its time"), "sudo dmesg -T | grep -i xid")],
            )
        )
    return out


def _libraries_side(f: Facts, kinds: dict[str, list[PasteHit]]) -> list[Finding]:
    """Extensions built, or torchvision installed, for another torch or CUDA."""
    from cudadoctor.rules.extensions import OTHER_CUDA
    from cudadoctor.rules.torch_packages import COMPANION

    out = []
    if "extension-cuda-mismatch" in kinds:
        h = kinds["extension-cuda-mismatch"][0]
        nvcc, cuda = h.detail.get("nvcc", "?"), h.detail.get("torch", "?")
        out.append(
            OTHER_CUDA.finding(
                title=msg(
                    "The extension is being built with CUDA {nvcc} for a torch built with CUDA {cuda}",
                    nvcc=nvcc,
                    cuda=cuda,
                ),
                why=msg(
                    "torch.utils.cpp_extension refuses to build with a toolkit (nvcc, found through CUDA_HOME or "
                    "PATH) of another CUDA major version than torch's: the extension would link another CUDA "
                    "runtime than torch."
                ),
                fix=[
                    fix(
                        msg("Point the build at a toolkit of torch's CUDA"), f"export CUDA_HOME=/usr/local/cuda-{cuda}"
                    ),
                    fix(msg("Or install the torch built for the toolkit's CUDA"), "nvcc --version"),
                ],
            )
        )
    if "compile-toolchain-missing" in kinds:
        from cudadoctor.rules.torch_compile import COMPILE_FAILED

        out.append(
            COMPILE_FAILED.finding(
                title=msg(
                    "torch.compile cannot build its kernels: {error}", error=kinds["compile-toolchain-missing"][0].text
                ),
                fix=[
                    fix(
                        msg("Install Triton for this torch (Linux; it comes with torch's CUDA wheels)"),
                        "python -m pip install triton",
                    ),
                    fix(msg("And a C compiler (Debian, Ubuntu)"), "sudo apt-get install -y build-essential"),
                    fix(msg("Or run without compiling"), "torch._dynamo.config.suppress_errors = True"),
                ],
            )
        )
    if "torchvision-mismatch" in kinds:
        out.append(
            COMPANION.finding(
                title=msg(
                    "torchvision's operators are missing: it was built for another torch ({error})",
                    error=kinds["torchvision-mismatch"][0].text,
                ),
                fix=[
                    fix(msg("See both versions"), "python -m pip list | grep -E '^(torch|torchvision) '"),
                    fix(
                        msg("Install the torchvision made for this torch, from the same index"),
                        "python -m pip install --force-reinstall torch torchvision --index-url "
                        "https://download.pytorch.org/whl/cu126",
                    ),
                ],
            )
        )
    return out


# --- what to ask for -------------------------------------------------------------------------------

_CE = "python -m torch.utils.collect_env"
_SMI = "nvidia-smi"
_CC = "nvidia-smi --query-gpu=index,name,compute_cap,driver_version --format=csv"
_ARCH = (
    'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), '
    'torch._C._cuda_getArchFlags())"'
)
_MODULE = "cat /proc/driver/nvidia/version"
_WHY = 'python -c "import torch; torch.zeros(1).cuda()"'
_NCCL = "NCCL_DEBUG=INFO python train.py 2>&1 | grep NCCL  # the same command, with NCCL's log"

_ENV = "env | grep -E '^CUDA_(VISIBLE_DEVICES|DEVICE_ORDER)='"
_LIBS = "python -m pip list | grep -i -E '^(torch|nvidia-)'; echo $LD_LIBRARY_PATH"


def ask_for(f: Facts, findings: list[Finding]) -> list[Finding]:
    """CD901: the commands whose output would settle what the paste left unknown; a warning when
    nothing found so far explains the machine and the deciding facts are unknown."""
    p = f.paste
    if p is None or p.from_report:
        return []
    t, d = f.torch, f.driver
    asks: list[tuple[Message, str]] = []  # (what it settles, command)
    if t is None or t.installed is None or (t.installed and t.cuda_built is None):
        asks.append((msg("the torch build, whether CUDA is available, the OS, GPUs and driver"), _CE))
    macos = f.system is not None and f.system.os == "Darwin"  # no NVIDIA driver exists for it: nothing to ask
    if any(h.kind == "nvidia-smi-not-found" for h in p.hits):
        asks.append(
            (
                msg("whether a driver is installed on the host; a container needs the GPUs passed in"),
                "nvidia-smi  # on the host; in Docker: docker run --gpus all IMAGE nvidia-smi",
            )
        )
    elif d is None and not macos:
        asks.append((msg("the driver, the newest CUDA it supports, and every GPU"), _SMI))
    elif d is not None and d.init_status == "ok" and d.cuda_driver_version is None and t is not None and t.cuda_built:
        asks.append((msg('the newest CUDA the driver supports (the "CUDA Version" in its header)'), _SMI))
    ccs_known = bool(d and any(x.compute_capability for x in d.devices)) or bool(
        t and any(x.capability for x in t.devices)
    )
    gpus_named = bool(d and d.devices) or bool(t and t.devices)
    if gpus_named and not ccs_known:
        asks.append((msg("each GPU's compute capability (its name is not in cudadoctor's table)"), _CC))
    if t is not None and t.cuda_built and (t.arch_flags is None or t.is_available is None) and (ccs_known or d is None):
        asks.append((msg("the GPU architectures this torch build has kernels for"), _ARCH))
    if (
        d is not None
        and d.init_status == "LIB_RM_VERSION_MISMATCH"
        and not (f.system and f.system.kernel_module_version)
    ):
        asks.append((msg("the version of the loaded kernel module, to compare with the libraries"), _MODULE))
    names = {x.name for x in d.devices} if d is not None else set()
    if len(names) > 1 and (f.system is None or f.system.env is None):
        asks.append((msg("which GPUs CUDA sees and in what order (mixed models)"), _ENV))
    if t is not None and t.cuda_built and t.is_available is False:
        asks.append((msg("torch's own reason why CUDA is not available"), _WHY))
    if any(h.kind == "nccl-error" for h in p.hits):
        asks.append(
            (msg("NCCL's own reason: its log names the transport that failed (shared memory, P2P, network)"), _NCCL)
        )
    if any(h.kind in ("undefined-symbol", "cannot-open-library") for h in p.hits):
        asks.append((msg("which torch and nvidia-* wheels are installed, and the library search path"), _LIBS))
    if not asks:
        return []
    asks = list(dict.fromkeys(asks))[:4]
    settled = (
        any(x.severity is Severity.ERROR for x in findings)
        or any(h.kind in _EXPLAINED_AT_RUN_TIME for h in p.hits)
        or any(x.code == "CD200" for x in findings)
        or (t is not None and t.cuda_built is False and (d is not None or macos))
    )
    severity = Severity.INFO if settled else Severity.WARNING
    title = msg("To be sure, ask for: {commands}", commands=", ".join(f"`{cmd.split('  #')[0]}`" for _, cmd in asks))
    # not settled: a warning, which `triage` turns into its NOT ENOUGH TO TELL verdict
    return [
        ASK_FOR.finding(
            title=title,
            severity=severity,
            fix=[fix(msg("It shows {what}", what=what), cmd) for what, cmd in asks]
            + [fix("Or everything at once", _ASK_ALL)],
        )
    ]
