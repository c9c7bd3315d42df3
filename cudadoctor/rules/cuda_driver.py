"""libcuda, the library every CUDA program (torch included) calls first."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.knowledge import cuda_errors as errors
from cudadoctor.knowledge.cuda_errors import CU_INIT_ERRORS
from cudadoctor.knowledge.versions import cuda_int_to_str
from cudadoctor.model import Finding, Fix, Severity, msg, msg_n
from cudadoctor.rules import predicates
from cudadoctor.rules.catalogue import CUDA, entry, fix, named
from cudadoctor.rules.predicates import (
    CONTAINER_FIX,
    capabilities_cause,
    compute_mode_cause,
    container,
    fabric_manager_trouble,
    windows_fixes,
    wsl_root_cause,
)

LIBCUDA_OK = entry(
    "CD120",
    "libcuda-ok",
    Severity.OK,
    "CUDA driver library",
    "libcuda loads and cuInit succeeds",
    """The CUDA driver library was found and initialised in a separate process, so CUDA programs can
    start on this machine.""",
)
LIBCUDA_MISSING_WITH_NVML = entry(
    "CD121",
    "libcuda-missing",
    Severity.ERROR,
    "CUDA driver library",
    "NVML works but libcuda.so.1 is missing",
    """nvidia-smi can work while CUDA cannot: the driver's compute library (libcuda.so.1) is missing. In
    a container this means the runtime was told to mount only the utility libraries
    (NVIDIA_DRIVER_CAPABILITIES without "compute"); on a host the driver's compute package is missing.""",
    breaks=(CUDA,),
)
CUINIT_FAILED = entry(
    "CD122",
    "cuinit-failed",
    Severity.ERROR,
    "CUDA driver library",
    "cuInit failed",
    """The CUDA driver library loaded, but initialising CUDA failed; torch.cuda.is_available() will be
    False with the same cause.""",
    breaks=(CUDA,),
    rests_on=(CUDA,),
)
CUINIT_HANG = entry(
    "CD123",
    "cuinit-hang",
    Severity.ERROR,
    "CUDA driver library",
    "cuInit did not return",
    """Initialising CUDA hung and was stopped. Any CUDA program, torch included, will hang the same way:
    the kernel driver or a GPU is stuck.""",
    breaks=(CUDA,),
)
STUB_LIBCUDA = entry(
    "CD124",
    "libcuda-stub",
    Severity.ERROR,
    "CUDA driver library",
    "The CUDA toolkit's stub libcuda was loaded instead of the driver",
    CU_INIT_ERRORS[34][1],
    breaks=(CUDA,),
)
LIBCUDA_ABSENT = entry(
    "CD125",
    "libcuda-absent",
    Severity.INFO,
    "CUDA driver library",
    "No CUDA driver library (libcuda.so.1)",
    """libcuda.so.1 is installed by the NVIDIA driver, not by the CUDA toolkit or by pip; without a
    driver there is none, and no CUDA program can start.""",
)


def evaluate(f: Facts) -> list[Finding]:
    c = f.cuda_driver
    if c is None:
        return []
    nvml_ok = f.driver is not None and f.driver.init_status == "ok"
    if c.timed_out:
        return [
            CUINIT_HANG.finding(
                fix=[
                    fix(
                        "Look for Xid errors and a stuck process",
                        "sudo dmesg -T | grep -i -E 'NVRM|Xid' | tail",
                        "nvidia-smi",
                    ),
                    fix("Reload the driver or reboot", "sudo reboot"),
                ]
            )
        ]
    if c.library_found is None:  # the child died before it could say
        if not c.child_error:
            return []
        return [
            CUINIT_FAILED.finding(
                title=msg("The libcuda check failed before loading it: {error}", error=c.child_error),
                severity=Severity.INFO,
            )
        ]
    if not c.library_found:
        if nvml_ok:
            # either probe's evidence of a container: the platform facts (runtime, capabilities) or the system's
            in_container = (f.system is not None and f.system.in_container is True) or container(f) is not None
            fixes = (
                [
                    fix(
                        "Docker: ask for the compute libraries too",
                        "docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility IMAGE",
                    ),
                    *CONTAINER_FIX[1:2],
                ]
                if in_container
                else [
                    fix(
                        "Debian/Ubuntu: install the driver's compute library (match the driver branch)",
                        "sudo apt install libnvidia-compute-$(nvidia-smi --query-gpu=driver_version "
                        "--format=csv,noheader | head -1 | cut -d. -f1)",
                    )
                ]
            )
            cause = capabilities_cause(f) if in_container else None
            return [LIBCUDA_MISSING_WITH_NVML.finding(fix=fixes, cause=cause)]
        return [
            LIBCUDA_ABSENT.finding(
                title=msg("No CUDA driver library: {error}", error=c.load_error)
                if c.load_error
                else LIBCUDA_ABSENT.summary,
            )
        ]
    if c.init_result is None:
        if not c.child_error:
            return []  # not known whether cuInit ran
        return [
            CUINIT_FAILED.finding(
                title=msg("cuInit could not be called: {error}", error=c.child_error),
            )
        ]
    if c.init_result == 0:
        libcuda = named("libcuda", cuda_int_to_str(c.driver_version))
        title = msg(
            "{libcuda} at {path}: cuInit ok" if c.library_path else "{libcuda}: cuInit ok",
            libcuda=libcuda,
            path=c.library_path,
        )
        if c.device_count is not None:
            n = c.device_count
            title = msg("{title}, {devices}", title=title, devices=msg_n("{n} device", "{n} devices", n, n=n))
        return [LIBCUDA_OK.finding(title=title)]
    name, meaning = CU_INIT_ERRORS.get(c.init_result, (c.init_error_name or f"CUresult {c.init_result}", ""))
    if c.init_result == 34:
        return [
            STUB_LIBCUDA.finding(
                title=msg("{summary}: {path}", summary=msg(STUB_LIBCUDA.summary), path=c.library_path)
                if c.library_path
                else STUB_LIBCUDA.summary,
                fix=[
                    fix(
                        "Take the stubs directory off the library path",
                        "echo $LD_LIBRARY_PATH",
                        "export LD_LIBRARY_PATH=$(echo \"$LD_LIBRARY_PATH\" | tr ':' '\\n' | grep -v stubs "
                        "| paste -sd:)",
                    )
                ],
            )
        ]
    fixes, cause = _cuinit_fixes(f, c.init_result)
    return [
        CUINIT_FAILED.finding(
            title=msg("cuInit failed: {name} ({code})", name=name, code=c.init_result),
            why=msg("{meaning} {page}", meaning=msg(meaning), page=msg(CUINIT_FAILED.explanation))
            if meaning
            else msg(CUINIT_FAILED.explanation),
            fix=fixes,
            cause=cause,
        )
    ]


def _cuinit_fixes(f: Facts, code: int) -> tuple[list[Fix], str | None]:
    """The fixes for a failed cuInit, first the one for this code; and the finding that is its cause."""
    in_wsl = predicates.in_wsl(f)
    fixes: list[Fix] = []
    cause = None
    nvml_broken = f.driver is not None and f.driver.init_status not in ("ok", "BINDING_MISSING")
    generic = (errors.CUDA_ERROR_NO_DEVICE, errors.CUDA_ERROR_NOT_INITIALIZED, errors.CUDA_ERROR_UNKNOWN)
    if nvml_broken and code in generic:
        # the driver itself fails (a Driver finding says why): advice about CUDA_VISIBLE_DEVICES would mislead
        return [fix("Fix the driver first (the Driver finding above), then check", "nvidia-smi")], None
    if code in (errors.CUDA_ERROR_NO_DEVICE, errors.CUDA_ERROR_INVALID_DEVICE):
        fixes.append(
            fix("See what CUDA_VISIBLE_DEVICES hides", 'echo "[$CUDA_VISIBLE_DEVICES]"', "unset CUDA_VISIBLE_DEVICES")
        )
        fixes.append(fix("Compare with the GPUs the driver sees", "nvidia-smi -L"))
    elif code == errors.CUDA_ERROR_DEVICE_UNAVAILABLE:
        cause = compute_mode_cause(f)
        fixes.append(
            fix(
                "See the compute mode and who holds the GPU; set the shared mode back",
                "nvidia-smi --query-gpu=index,compute_mode --format=csv",
                "nvidia-smi --query-compute-apps=pid,name --format=csv",
                "sudo nvidia-smi -c DEFAULT",
            )
        )
    elif code == errors.CUDA_ERROR_SYSTEM_NOT_READY:
        cause = "CD143" if fabric_manager_trouble(f) is not None else None  # rules/kernel_module.py says why
        fixes.append(
            fix(
                "Start the fabric manager (NVSwitch systems); it must be the driver's exact version",
                "sudo systemctl enable --now nvidia-fabricmanager",
                "systemctl status nvidia-fabricmanager",
                "nv-fabricmanager --version; nvidia-smi --query-gpu=driver_version --format=csv,noheader",
            )
        )
    elif code in (errors.CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, errors.CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE):
        fixes.append(
            fix(
                "Find the cuda-compat libcuda on the library path and take it off (forward compatibility "
                "works only on data-centre GPUs, with a matching kernel driver)",
                "echo $LD_LIBRARY_PATH | tr ':' '\\n' | grep -i compat",
                "ldconfig -p | grep libcuda",
            )
        )
    elif code == errors.CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
        fixes.append(
            fix(
                "The CUDA build is newer than the driver: update the driver, or install a torch built for an "
                "older CUDA",
                "nvidia-smi | head -4",
            )
        )
    elif code == errors.CUDA_ERROR_OPERATING_SYSTEM:
        if in_wsl:
            # CD115 is said only where the platform facts saw WSL; another WSL finding may be the cause
            cause = wsl_root_cause(f) or ("CD115" if predicates.wsl(f) is not None else None)
            fixes.extend(windows_fixes())
        else:
            fixes.append(
                fix(
                    "In a container: start it with the GPUs, so the device cgroup allows /dev/nvidia*",
                    "docker run --gpus all --rm IMAGE nvidia-smi",
                )
            )
    elif code == errors.CUDA_ERROR_NOT_INITIALIZED:
        fixes.append(
            fix(
                "In a program that forks workers after using CUDA: start them with spawn",
                "python -c \"import torch.multiprocessing as mp; mp.set_start_method('spawn')\"",
            )
        )
        fixes.append(fix("Compare the driver's two halves", "nvidia-smi", "cat /proc/driver/nvidia/version"))
    elif code == errors.CUDA_ERROR_UNKNOWN and not in_wsl:
        fixes.append(
            fix(
                "Reload the unified-memory module (after suspend/resume), or reboot",
                "sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm",
            )
        )
    if cause is None and f.driver is not None and f.driver.init_status == "ok" and f.driver.device_count == 0:
        cause = "CD110"  # the driver counts no GPU (driver.py): whatever cuInit says follows from that
    if in_wsl:
        if not fixes:
            fixes.extend(windows_fixes())
        cause = cause or wsl_root_cause(f)
    else:
        fixes.append(fix("Read the kernel log (needs root)", "sudo dmesg -T | grep -i -E 'NVRM|Xid' | tail"))
    return fixes, cause
