"""libcuda, the library every CUDA program (torch included) calls first."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.knowledge.cuda_errors import CU_INIT_ERRORS
from cudadoctor.knowledge.versions import cuda_int_to_str
from cudadoctor.report import Finding, Severity
from cudadoctor.rules.catalogue import entry, fix
from cudadoctor.rules.driver import CONTAINER_FIX

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
)
CUINIT_FAILED = entry(
    "CD122",
    "cuinit-failed",
    Severity.ERROR,
    "CUDA driver library",
    "cuInit failed",
    """The CUDA driver library loaded, but initialising CUDA failed; torch.cuda.is_available() will be
    False with the same cause.""",
)
CUINIT_HANG = entry(
    "CD123",
    "cuinit-hang",
    Severity.ERROR,
    "CUDA driver library",
    "cuInit did not return",
    """Initialising CUDA hung and was stopped. Any CUDA program, torch included, will hang the same way:
    the kernel driver or a GPU is stuck.""",
)
STUB_LIBCUDA = entry(
    "CD124",
    "libcuda-stub",
    Severity.ERROR,
    "CUDA driver library",
    "The CUDA toolkit's stub libcuda was loaded instead of the driver",
    CU_INIT_ERRORS[34][1],
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
                title=f"The libcuda check failed before loading it: {c.child_error}", severity=Severity.INFO
            )
        ]
    if not c.library_found:
        if nvml_ok:
            in_container = f.system is not None and f.system.in_container is True
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
            return [LIBCUDA_MISSING_WITH_NVML.finding(fix=fixes)]
        return [
            LIBCUDA_ABSENT.finding(
                title=f"No CUDA driver library: {c.load_error}" if c.load_error else LIBCUDA_ABSENT.summary,
            )
        ]
    if c.init_result is None:
        return [
            CUINIT_FAILED.finding(
                title=f"cuInit could not be called: {c.child_error or 'the child process failed'}",
            )
        ]
    if c.init_result == 0:
        return [
            LIBCUDA_OK.finding(
                title=f"libcuda {cuda_int_to_str(c.driver_version) or ''} at {c.library_path}: cuInit ok, "
                f"{c.device_count} device{'s' if c.device_count != 1 else ''}",
            )
        ]
    name, meaning = CU_INIT_ERRORS.get(c.init_result, (c.init_error_name or f"CUresult {c.init_result}", ""))
    if c.init_result == 34:
        return [
            STUB_LIBCUDA.finding(
                title=f"{STUB_LIBCUDA.summary}: {c.library_path}",
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
    fixes = []
    if c.init_result in (100, 101):
        fixes.append(
            fix(
                "See what CUDA_VISIBLE_DEVICES hides",
                'echo "[$CUDA_VISIBLE_DEVICES]"',
                "unset CUDA_VISIBLE_DEVICES",
            )
        )
    elif c.init_result in (803, 804):
        fixes.append(
            fix(
                "Find a cuda-compat libcuda on the library path",
                "echo $LD_LIBRARY_PATH | tr ':' '\\n' | grep -i compat",
            )
        )
    elif c.init_result == 999:
        fixes.append(
            fix(
                "Reload the unified-memory module (after suspend/resume)",
                "sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm",
            )
        )
    fixes.append(fix("Read the kernel log", "sudo dmesg -T | grep -i -E 'NVRM|Xid' | tail"))
    return [
        CUINIT_FAILED.finding(
            title=f"cuInit failed: {name} ({c.init_result})",
            why=f"{meaning} {CUINIT_FAILED.explanation}".strip(),
            fix=fixes,
        )
    ]
