"""The NVIDIA driver as NVML reports it, and what the PCI bus says when NVML cannot."""

from __future__ import annotations

from cudadoctor.facts import DriverFacts, Facts
from cudadoctor.facts.nvml import SICK_ERRORS
from cudadoctor.knowledge.cuda_errors import NVML_ERRORS
from cudadoctor.knowledge.versions import cuda_int_to_str
from cudadoctor.model import Finding, Fix, Message, Severity, Table, msg, msg_n
from cudadoctor.rules.catalogue import CATALOGUE, CUDA, NVML, entry, fix, named
from cudadoctor.rules.driver_fixes import driver_install_fixes, driver_upgrade_commands, wsl_fix
from cudadoctor.rules.predicates import (
    CONTAINER_FIX,
    container,
    container_root_cause,
    in_wsl,
    jetson,
    joined,
    mismatch,
    module_root_cause,
    module_versions,
    nodes_cause,
    ruled_out,
    wsl_root_cause,
)

DRIVER_OK = entry(
    "CD100",
    "driver-ok",
    Severity.OK,
    "Driver",
    "NVIDIA driver loaded",
    """NVML answered: the NVIDIA kernel driver and its user-space library are installed and agree.
    The CUDA version it names is the newest CUDA this driver supports, not an installed toolkit.""",
)
NO_DRIVER = entry(
    "CD101",
    "driver-not-installed",
    Severity.ERROR,
    "Driver",
    "No NVIDIA driver: libnvidia-ml.so.1 not found",
    """The NVIDIA driver's management library is missing, so no CUDA program (PyTorch included) can
    use a GPU here. On a Linux host the driver is not installed; in a container the GPU and driver
    were not passed in; under WSL2 the Windows driver provides it.""",
    breaks=(NVML, CUDA),
)
DRIVER_NOT_LOADED = entry(
    "CD102",
    "driver-not-loaded",
    Severity.ERROR,
    "Driver",
    "The NVIDIA kernel module is not loaded",
    """The user-space driver is installed but the kernel module (nvidia.ko) is not running: it failed
    to build for the running kernel, Secure Boot refused an unsigned module, or nouveau holds the GPU.""",
    breaks=(NVML, CUDA),
)
VERSION_MISMATCH = entry(
    "CD103",
    "driver-library-mismatch",
    Severity.ERROR,
    "Driver",
    "Driver/library version mismatch",
    """The user-space driver libraries were upgraded while the old kernel module is still loaded
    (typically an unattended upgrade). Every CUDA program fails until the module is reloaded or the
    machine rebooted.""",
    breaks=(NVML, CUDA),
)
NO_PERMISSION = entry(
    "CD104",
    "driver-no-permission",
    Severity.ERROR,
    "Driver",
    "No permission to open the NVIDIA devices",
    """The driver is loaded but this user may not open /dev/nvidia*: the device nodes belong to a
    group this user is not in, or a container was started without the devices.""",
    breaks=(NVML, CUDA),
)
GPU_LOST = entry(
    "CD105",
    "gpu-lost",
    Severity.ERROR,
    "Driver",
    "A GPU has fallen off the bus or needs a reset",
    """The driver reports a GPU as lost or in need of a reset, usually after an Xid error (overheating,
    power, a PCIe fault). Programs cannot use it until it is reset or the machine rebooted.""",
)
NVML_OLD_DRIVER = entry(
    "CD106",
    "nvml-functions-missing",
    Severity.WARNING,
    "Driver",
    "The driver is older than the NVML binding: some queries are unavailable",
    """nvidia-ml-py asked for NVML functions this driver does not have. The doctor falls back where
    it can; details such as process lists or the CUDA version may be missing. A newer driver has them.""",
)
NVML_ERROR = entry(
    "CD107",
    "nvml-error",
    Severity.ERROR,
    "Driver",
    "NVML failed to initialise",
    """NVML, the library behind nvidia-smi, returned an error on initialisation; CUDA programs will most
    likely fail the same way.""",
    breaks=(NVML, CUDA),
)
NVML_QUERY_ERROR = entry(
    "CD129",
    "nvml-query-error",
    Severity.WARNING,
    "Driver",
    "NVML answered queries with an error, or failed inside one",
    """NVML initialised, but the driver answered some queries with an error (other than "not supported"), or
    NVML crashed or stopped answering inside a call for one GPU. The facts those queries give are unknown here
    (not zero, not absent); a GPU whose call failed is named and skipped, and the other GPUs are still read.
    A driver in trouble often fails queries before it fails CUDA. An error when a GPU could not be read at
    all, a warning otherwise.""",
    (fix("Compare with nvidia-smi's full query", "nvidia-smi -q"),),
)
NO_GPU = entry(
    "CD108",
    "no-nvidia-gpu",
    Severity.ERROR,
    "Driver",
    "No NVIDIA GPU in this machine",
    """The PCI bus has no NVIDIA display or 3D controller, so there is nothing for a driver to drive.
    PyTorch runs on the CPU here. Installing a driver or a CUDA build of torch will not change that.""",
    breaks=(NVML, CUDA),
)
MACOS = entry(
    "CD109",
    "macos-no-cuda",
    Severity.ERROR,
    "Driver",
    "macOS has no CUDA",
    """NVIDIA stopped CUDA for macOS after 10.2. On Apple silicon PyTorch uses the GPU through Metal
    (MPS): torch.device("mps").""",
    breaks=(NVML, CUDA),
)
NO_DEVICES = entry(
    "CD110",
    "driver-no-devices",
    Severity.ERROR,
    "Driver",
    "The driver is loaded but reports no GPU",
    """NVML works but counts zero devices: the GPU is bound to another driver (vfio-pci for a VM),
    disabled, or hidden from this container by NVIDIA_VISIBLE_DEVICES.""",
)
BINDING_MISSING = entry(
    "CD111",
    "nvml-binding-missing",
    Severity.WARNING,
    "Driver",
    "The NVML binding (nvidia-ml-py) is not installed",
    """cudadoctor reads the driver through nvidia-ml-py, which is missing from its environment, so
    driver and GPU facts are unknown.""",
)


def _detail(summary: str | Message, detail: object) -> Message:
    """ "<the catalogue's title>: <this machine's detail>", both translated where they are messages."""
    return msg("{summary}: {detail}", summary=summary if isinstance(summary, Message) else msg(summary), detail=detail)


def _more(page: str | Message, sentence: Message) -> Message:
    """A page with one more sentence about this machine."""
    return msg("{page} {detail}", page=page if isinstance(page, Message) else msg(page), detail=sentence)


def _status(d: DriverFacts) -> dict[str, object]:
    return {"status": d.init_status, "message": d.init_message}


def evaluate(f: Facts) -> list[Finding]:
    d = f.driver
    if d is None:
        return []
    if d.init_status == "BINDING_MISSING":
        return [BINDING_MISSING.finding(fix=[fix("Install it next to cudadoctor", "pip install nvidia-ml-py")])]
    if d.init_status == "ok":
        healthy = _healthy_driver(d, f)
        hidden_by = container_root_cause(f)  # NVIDIA_VISIBLE_DEVICES=none, a pod without a GPU
        for finding in healthy:
            if finding.code == NO_DEVICES.code and hidden_by:
                finding.cause = hidden_by
        return healthy
    if d.init_status == "LIBRARY_NOT_FOUND":
        return [_library_not_found(f)]
    if in_wsl(f):
        return [_wsl_failure(f, d)]  # no modprobe, DKMS or Secure Boot inside WSL
    if d.init_status == "DRIVER_NOT_LOADED":
        return [_not_loaded(f)]
    if d.init_status == "LIB_RM_VERSION_MISMATCH":
        shape = mismatch(f)
        if shape is not None and shape[0] == "on-disk":
            return []  # rules/kernel_module.py says CD128: the packages on disk differ, a reboot will not help
        return [_version_mismatch(f, d, shape)]
    if d.init_status == "NO_PERMISSION":
        user = f.system.user if f.system and f.system.user else "$USER"
        return [
            NO_PERMISSION.finding(
                cause=nodes_cause(f),
                fix=[
                    fix("See who may open the devices", "ls -l /dev/nvidia*"),
                    fix(
                        "Add yourself to the group that owns them (often video), then log in again",
                        f"sudo usermod -aG video {user}",
                    ),
                    fix("In a container: start it with the GPUs", "docker run --gpus all ..."),
                ],
            )
        ]
    if d.init_status in ("GPU_IS_LOST", "RESET_REQUIRED"):
        return [GPU_LOST.finding(fix=_gpu_lost_fix(None))]
    if d.init_status in ("CRASHED", "HUNG"):
        return [
            NVML_ERROR.finding(
                title=msg(
                    "NVML {what}: the driver library itself failed"
                    if d.init_message
                    else "NVML crashed: the driver library itself failed",
                    what=d.init_message,
                ),
                why="The NVIDIA management library crashed or hung inside the call named, in a child process "
                "the doctor started for it. nvidia-smi and CUDA programs load the same library and usually "
                "fail the same way: a broken or half-upgraded driver install, or a stuck GPU.",
                fix=[
                    fix("See whether nvidia-smi fails the same way", "nvidia-smi"),
                    fix(
                        "Read the driver's errors in the kernel log", "sudo dmesg -T | grep -i -E 'NVRM|Xid' | tail -20"
                    ),
                ],
            )
        ]
    known = NVML_ERRORS.get(d.init_status)
    return [
        NVML_ERROR.finding(
            title=msg(
                "NVML failed to initialise: {status} ({message})"
                if d.init_message
                else "NVML failed to initialise: {status}",
                **_status(d),
            ),
            why=msg("{meaning} {page}", meaning=msg(known[1]), page=msg(NVML_ERROR.explanation))
            if known
            else msg(NVML_ERROR.explanation),
            fix=[
                *_nvml_error_fix(d.init_status),
                fix(
                    "Compare with nvidia-smi and the kernel log (reading it needs root)",
                    "nvidia-smi",
                    "sudo dmesg -T | grep -i -E 'NVRM|Xid' | tail -20",
                ),
            ],
        )
    ]


def _not_loaded(f: Facts) -> Finding:
    cause = module_root_cause(f)
    if cause is not None:
        return DRIVER_NOT_LOADED.finding(
            title=_detail(DRIVER_NOT_LOADED.summary, msg(CATALOGUE[cause].summary)),
            fix=[fix("Once the cause is fixed: load it and check", "sudo modprobe nvidia", "nvidia-smi")],
            cause=cause,
        )
    fixes = [
        fix(
            "Load the module and read why it fails",
            "sudo modprobe nvidia",
            "sudo dmesg -T | grep -i -E 'nvidia|nouveau|secure boot' | tail -20",
        ),
        fix("Rebuild it for the running kernel (DKMS)", "sudo dkms autoinstall", "sudo reboot"),
        fix("Secure Boot on: enrol the module signing key, or disable Secure Boot", "mokutil --sb-state"),
    ]
    why: Message = msg(DRIVER_NOT_LOADED.explanation)
    m = f.platform.module if f.platform is not None else None
    if m is not None and m.kernel_log_readable is False:
        why = _more(
            why, msg("The kernel log, which says why, is readable only by root here: run the dmesg command below.")
        )
    excluded = ruled_out(f)  # what the platform facts already exclude, and the fixes that go with it
    words = {
        "secure-boot-off": msg("Secure Boot is off"),
        "built-for-kernel": msg("a module is built for kernel {kernel}", kernel=m.kernel if m else ""),
        "nouveau-not-loaded": msg("nouveau is not loaded"),
    }
    if excluded:
        why = _more(why, msg("Ruled out here: {facts}.", facts=joined([words[x] for x in excluded], sep=", ")))
    drop = {2 for x in excluded if x == "secure-boot-off"} | {1 for x in excluded if x == "built-for-kernel"}
    return DRIVER_NOT_LOADED.finding(why=why, fix=[x for i, x in enumerate(fixes) if i not in drop])


def _version_mismatch(f: Facts, d: DriverFacts, shape: tuple[str, dict[str, object]] | None) -> Finding:
    s = f.system
    module = s.kernel_module_version if s is not None and s.kernel_module_version else None
    title: Message = msg(VERSION_MISMATCH.summary)
    if module and d.library_version:
        title = _detail(
            title, msg("kernel module {module} vs libraries {libraries}", module=module, libraries=d.library_version)
        )
    elif module:
        title = _detail(title, msg("kernel module {module}", module=module))
    elif d.library_version:
        title = _detail(title, msg("libraries {versions}", versions=d.library_version))
    why: Message = msg(VERSION_MISMATCH.explanation)
    if shape is not None:  # loaded-older: the module on disk already matches the libraries
        title = _detail(VERSION_MISMATCH.summary, module_versions(shape[1]))
        why = _more(why, msg("The module installed on disk matches the libraries, so a reboot (or reload) fixes it."))
    return VERSION_MISMATCH.finding(
        title=title,
        why=why,
        fix=[
            fix("Simplest: reboot", "sudo reboot"),
            fix(
                "Without a reboot: stop GPU users, then reload the modules",
                "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia",
                "sudo modprobe nvidia",
                "nvidia-smi",
            ),
            fix(
                "Debian/Ubuntu: keep unattended upgrades from doing it again",
                "sudo apt-mark hold $(dpkg-query -W -f='${Package}\\n' 'nvidia-*' 'libnvidia-*')",
            ),
            fix(
                "RHEL/Fedora: lock the driver version",
                "sudo dnf install python3-dnf-plugin-versionlock",
                "sudo dnf versionlock add 'nvidia-*'",
            ),
        ],
    )


def _nvml_error_fix(status: str) -> list[Fix]:
    if status == "INSUFFICIENT_POWER":
        return [fix("Power off, reseat the GPU's PCIe power cables, power on", "sudo poweroff")]
    if status == "CORRUPTED_INFOROM":
        return [fix("The GPU's infoROM needs repair: collect a report for the vendor", "sudo nvidia-bug-report.sh")]
    if status in ("TIMEOUT", "IRQ_ISSUE", "UNKNOWN"):
        return [fix("Reset the driver's state: reboot", "sudo reboot")]
    if status == "NOT_READY":
        return [fix("NVSwitch systems: start the fabric manager", "sudo systemctl enable --now nvidia-fabricmanager")]
    if status == "OPERATING_SYSTEM":
        return [fix("In a container: start it with the GPUs", "docker run --gpus all --rm IMAGE nvidia-smi")]
    return []


def _wsl_failure(f: Facts, d: DriverFacts) -> Finding:
    """NVML fails inside WSL: the cause is on the Windows side or a Linux driver inside WSL, never a module."""
    cause = wsl_root_cause(f)
    entry_ = {"DRIVER_NOT_LOADED": DRIVER_NOT_LOADED, "LIB_RM_VERSION_MISMATCH": VERSION_MISMATCH}.get(
        d.init_status, NO_PERMISSION if d.init_status == "NO_PERMISSION" else NVML_ERROR
    )
    return entry_.finding(
        title=msg(
            "NVML fails inside WSL: {status} ({message})" if d.init_message else "NVML fails inside WSL: {status}",
            **_status(d),
        ),
        why="Under WSL2 the driver is the Windows one (its libraries are in /usr/lib/wsl/lib); there is no "
        "NVIDIA kernel module to load inside WSL. This error comes from a Linux driver installed inside WSL, "
        "or from the Windows driver or WSL being too old.",
        fix=wsl_fix(f) if cause is None else [fix("Once that is fixed, check", "nvidia-smi")],
        cause=cause,
    )


def _gpu_lost_fix(index: int | None) -> list[Fix]:
    target = f" -i {index}" if index is not None else ""
    return [
        fix("Read the Xid error that caused it", "sudo dmesg -T | grep -i xid | tail -5"),
        fix("Reset the GPU (no process may be using it)", f"sudo nvidia-smi --gpu-reset{target}"),
        fix("Or reboot (it resets every GPU)", "sudo reboot"),  # an alternative, never a next step
    ]


def _healthy_driver(d: DriverFacts, f: Facts) -> list[Finding]:
    out: list[Finding] = []
    cuda = cuda_int_to_str(d.cuda_driver_version)
    if d.device_count is None:
        out.append(
            DRIVER_OK.finding(
                title=msg(
                    "NVIDIA driver {version} loaded; NVML did not say how many GPUs"
                    if d.driver_version
                    else "NVIDIA driver (version unknown) loaded; NVML did not say how many GPUs",
                    version=d.driver_version,
                ),
                severity=Severity.INFO,
            )
        )
    elif d.device_count == 0:
        out.append(
            NO_DEVICES.finding(
                fix=[
                    fix("See which kernel driver holds each NVIDIA device", "lspci -nnk -d 10de:"),
                    fix("In a container: check what the runtime exposed", "echo $NVIDIA_VISIBLE_DEVICES"),
                ]
            )
        )
    else:
        names = ", ".join(sorted({dev.name or "unknown GPU" for dev in d.devices}))
        title = msg(
            "{driver} (supports CUDA up to {cuda}), {gpus}" if cuda else "{driver}, {gpus}",
            driver=named(msg("NVIDIA driver"), d.driver_version),
            cuda=cuda,
            gpus=msg_n("{n} GPU", "{n} GPUs", d.device_count, n=d.device_count),
        )
        out.append(DRIVER_OK.finding(title=msg("{summary}: {detail}", summary=title, detail=names) if names else title))
    for dev in d.devices:
        if dev.error and dev.error not in SICK_ERRORS:  # a crash or hang in one GPU's call: _query_problems
            out.append(
                GPU_LOST.finding(
                    title=msg(
                        "GPU {index} ({bus}) cannot be queried: {error}"
                        if dev.pci_bus_id
                        else "GPU {index} cannot be queried: {error}",
                        index=dev.index,
                        bus=dev.pci_bus_id,
                        error=dev.error,
                    ),
                    fix=_gpu_lost_fix(dev.index),
                )
            )
    out += _query_problems(d)
    if d.missing_functions:
        out.append(
            NVML_OLD_DRIVER.finding(
                title=msg(
                    "{driver} lacks NVML functions: {functions}",
                    driver=named(msg("Driver"), d.driver_version),
                    functions=", ".join(d.missing_functions),
                ),
                fix=[fix("Upgrade the driver (details are then complete)", *driver_upgrade_commands(f))],
            )
        )
    return out


def _query_problems(d: DriverFacts) -> list[Finding]:
    """NVML queries that failed (other than "not supported" and functions an old driver lacks), and a
    query that crashed or hung part-way: named, so that a missing fact is never silently read as "none"."""
    out: list[Finding] = []
    pairs = sorted(d.query_errors.items())
    for dev in d.devices:
        pairs += [
            (f"GPU {dev.index} {what}", name)
            for what, name in sorted(dev.unsupported.items())
            if name not in ("NOT_SUPPORTED", "FUNCTION_NOT_FOUND")
        ]
    failed = [f"{query} ({name})" for query, name in pairs]
    if failed:
        out.append(
            NVML_QUERY_ERROR.finding(
                title=msg_n(
                    "NVML could not answer {n} query: {queries}",
                    "NVML could not answer {n} queries: {queries}",
                    len(failed),
                    n=len(failed),
                    queries="; ".join(failed[:4]) + ("…" if len(failed) > 4 else ""),
                ),
                severity=Severity.WARNING,
                why="The driver answered these queries with an error, so the facts they give are unknown here "
                "(not zero, not absent). A driver in trouble often fails queries before it fails CUDA.",
                fix=[fix("Compare with nvidia-smi's full query", "nvidia-smi -q")],
                # the title names four: every one is in the details
                tables=[Table(["query", "NVML error"], [list(p) for p in pairs])] if len(pairs) > 4 else [],
            )
        )
    if d.query_failure:
        unread = (d.device_count or 0) - len(d.devices)
        out.append(
            NVML_QUERY_ERROR.finding(
                title=msg_n(
                    "NVML {failure}; {n} GPU could not be read",
                    "NVML {failure}; {n} GPUs could not be read",
                    unread,
                    failure=d.query_failure,
                    n=unread,
                )
                if unread > 0
                else msg("NVML {failure}", failure=d.query_failure),
                severity=Severity.ERROR if unread > 0 or "crashed" in d.query_failure else Severity.WARNING,
                why="The NVIDIA management library crashed or stopped answering inside the call named (in a "
                "child process the doctor started for it). A GPU whose call failed is named and skipped; the "
                "GPUs after it are read by a fresh child, so every other GPU is still shown.",
                fix=[
                    fix("See whether nvidia-smi hangs or fails the same way", "timeout 20 nvidia-smi"),
                    fix(
                        "Read the driver's errors in the kernel log", "sudo dmesg -T | grep -i -E 'NVRM|Xid' | tail -20"
                    ),
                ],
            )
        )
    return out


def _library_not_found(f: Facts) -> Finding:
    s, pci = f.system, f.pci
    if s is not None and s.os == "Darwin":
        return MACOS.finding(
            fix=[  # a shell line and a Python line: two fixes, each labelled by what it is
                fix(
                    "See whether PyTorch can use the Apple GPU (MPS)",
                    'python -c "import torch; print(torch.backends.mps.is_available())"',
                ),
                fix(
                    "Use it in your code",
                    "device = torch.device('mps' if torch.backends.mps.is_available() else 'cpu')",
                ),
            ]
        )
    if wsl_root_cause(f) == "CD112":
        return NO_DRIVER.finding(
            title="WSL1 has no GPU: no NVIDIA driver library here",
            why="The distribution runs as WSL1, which has no GPU bridge to the Windows driver.",
            fix=[],
            cause="CD112",
        )
    if in_wsl(f):
        return NO_DRIVER.finding(
            title="WSL2 without the NVIDIA driver: /usr/lib/wsl/lib has no libnvidia-ml.so.1",
            why="Under WSL2 the GPU driver is the Windows one; WSL maps its libraries into "
            "/usr/lib/wsl/lib. They are missing, so the Windows driver is absent or too old.",
            fix=wsl_fix(f),
        )
    if jetson(f):
        return NO_DRIVER.finding(
            title=msg("Jetson ({release}): no NVML, the integrated GPU is driven by JetPack", release=jetson(f)),
            severity=Severity.INFO,
            why="Jetson modules have an integrated GPU that is not on the PCI bus, and JetPack ships no "
            "NVML library: nvidia-smi and NVML-based checks do not apply. CUDA itself works through JetPack.",
        )
    if pci is not None and pci.scanned and not pci.nvidia_gpus:
        return NO_GPU.finding(
            fix=[
                fix(
                    "Use the CPU in your code; it keeps working when a GPU appears",
                    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
                ),
                fix("Load checkpoints saved on a GPU", "torch.load(path, map_location='cpu')"),
            ]
        )
    if (s is not None and s.in_container is True) or container(f) is not None:
        return NO_DRIVER.finding(
            title="No NVIDIA driver inside this container (libnvidia-ml.so.1 not found)",
            why="Containers get the driver from the host through the NVIDIA Container Toolkit; this "
            "one was started without it (no --gpus), so no GPU can be used inside.",
            fix=CONTAINER_FIX,
            cause=container_root_cause(f),
        )
    gpus = pci.nvidia_gpus if pci is not None else []
    if not gpus:
        return NO_DRIVER.finding(fix=driver_install_fixes(f))
    n = len(gpus)
    why: Message = msg(NO_DRIVER.explanation)
    bound = sorted({g.kernel_driver for g in gpus if g.kernel_driver})
    if bound:
        why = _more(why, msg("The GPU is bound to: {drivers}.", drivers=", ".join(bound)))
    if "nouveau" in bound:
        why = _more(why, msg("nouveau (the open-source driver) cannot run CUDA."))
    return NO_DRIVER.finding(
        title=msg_n(
            "{n} NVIDIA GPU on the PCI bus, but no NVIDIA driver",
            "{n} NVIDIA GPUs on the PCI bus, but no NVIDIA driver",
            n,
            n=n,
        ),
        why=why,
        fix=driver_install_fixes(f),
    )
