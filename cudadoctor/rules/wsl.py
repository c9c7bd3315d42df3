"""WSL: the GPU comes from the Windows driver. WSL1 has none; inside WSL2 a Linux NVIDIA driver, a
`cuda-drivers` package or a stray libcuda/libnvidia-ml copy shadows the Windows driver's libraries in
/usr/lib/wsl/lib. No modprobe, DKMS or Secure Boot advice here, ever: there is no NVIDIA kernel module
inside WSL.

Sources: cuda-facts §9 (NVIDIA "CUDA on WSL User Guide"; microsoft/WSL#11755 a Linux driver inside WSL;
microsoft/WSL#12859 "GPU access blocked by the operating system"; Syllo/nvtop#318 /usr/lib/wsl/lib).
"""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.model import Finding, Severity, Table, msg
from cudadoctor.rules.catalogue import entry, fix
from cudadoctor.rules.predicates import (  # noqa: F401  (wsl.in_wsl: old callers)
    family,
    in_wsl,
    package_tool,
    windows_fixes,
    wsl,
)

WSL1 = entry(
    "CD112",
    "wsl1-no-gpu",
    Severity.ERROR,
    "Driver",
    "WSL1 has no GPU support: convert this distribution to WSL2",
    """CUDA under WSL needs WSL2 (a real Linux kernel with the /dev/dxg GPU bridge to the Windows driver).
    A distribution running as WSL1 cannot see any GPU, whatever is installed inside it.""",
)
LINUX_DRIVER_IN_WSL = entry(
    "CD113",
    "wsl-linux-driver-installed",
    Severity.ERROR,
    "Driver",
    "A Linux NVIDIA driver is installed inside WSL",
    """Under WSL2 the driver is the Windows one; its libraries (libcuda, libnvidia-ml) are mapped into
    /usr/lib/wsl/lib. A Linux driver package (nvidia-driver-*, cuda-drivers, libnvidia-compute-*) installs
    its own copies that are found first and fail (there is no NVIDIA kernel module in WSL). Remove it;
    install only the CUDA toolkit inside WSL, if anything.""",
)
SHADOWED = entry(
    "CD114",
    "wsl-libcuda-shadowed",
    Severity.ERROR,
    "Driver",
    "A libcuda/libnvidia-ml copy shadows the Windows driver's libraries",
    """Copies of libcuda.so or libnvidia-ml.so outside /usr/lib/wsl/lib are found before the Windows
    driver's own libraries and do not work under WSL2. Remove them (or the package that owns them) and
    refresh the loader cache.""",
)
BLOCKED = entry(
    "CD115",
    "wsl-gpu-blocked",
    Severity.ERROR,
    "Driver",
    "GPU access blocked by the operating system",
    """Windows refused the GPU to WSL ("GPU access blocked by the operating system"): the Windows
    NVIDIA driver or WSL itself is too old, WSL was started before a driver update, or a Windows policy
    keeps the GPU from virtual machines.""",
)

_REMOVE_WHY = msg("there is no NVIDIA kernel module inside WSL; the Windows driver provides the GPU")

# The package manager of the WSL distribution: (remove, clean up, owner of a file, install).
_PACKAGE_TOOLS = {
    "apt": ("sudo apt-get remove --purge", "sudo apt-get autoremove --purge", "dpkg -S", "sudo apt-get install"),
    "dnf": ("sudo dnf remove", "sudo dnf autoremove", "rpm -qf", "sudo dnf install"),
    "zypper": ("sudo zypper remove --clean-deps", None, "rpm -qf", "sudo zypper install"),
    "pacman": ("sudo pacman -Rns", None, "pacman -Qo", "sudo pacman -S"),
}


def distro(f: Facts) -> str:
    w = wsl(f)
    return (w.distro if w is not None else None) or "DISTRO"


def evaluate(f: Facts) -> list[Finding]:
    w = wsl(f)
    if w is None:
        return []
    if w.version == 1:
        name = distro(f)
        return [
            WSL1.finding(
                fix=[
                    fix(
                        "In PowerShell on Windows: convert it to WSL2 (the files are kept), then start it again",
                        "wsl --list --verbose",
                        f"wsl --set-version {name} 2",
                    ),
                    fix("And make WSL2 the default for new distributions", "wsl --set-default-version 2"),
                ]
            )
        ]
    out: list[Finding] = []
    # broken only when known broken: an unknown driver is not a broken one
    cuda_broken = (f.driver is not None and f.driver.init_status != "ok") or (
        f.cuda_driver is not None and f.cuda_driver.init_result not in (0, None)
    )
    remove, autoremove, owner, install = _PACKAGE_TOOLS[package_tool(f)]
    packages = w.linux_driver_packages or []
    if packages or w.linux_module_files:
        files = w.linux_module_files or []
        if packages:
            removal = [
                fix(
                    msg("Remove it ({why})", why=_REMOVE_WHY),
                    f"{remove} {' '.join(packages)}",
                    *([autoremove] if autoremove else []),
                )
            ]
        elif package_tool(f) == "apt" and w.linux_driver_packages is not None:
            # the dpkg database lists no driver package: NVIDIA's .run installer put the module there
            removal = [
                fix(
                    msg("Uninstall it with the .run installer's own tool ({why})", why=_REMOVE_WHY),
                    "sudo nvidia-uninstall",
                )
            ]
        else:
            removal = [
                fix(
                    "Find the package that owns these files, then remove that package",
                    *[f"{owner} {p}" for p in files[:3]],
                ),
                fix(
                    msg(
                        "If no package owns them, NVIDIA's .run installer put them there: uninstall it ({why})",
                        why=_REMOVE_WHY,
                    ),
                    "sudo nvidia-uninstall",
                ),
            ]
        out.append(
            LINUX_DRIVER_IN_WSL.finding(
                title=msg(
                    "A Linux NVIDIA driver is installed inside WSL: {packages}", packages=", ".join(packages or files)
                ),
                fix=[
                    *removal,
                    fix(
                        "For nvcc inside WSL install only the toolkit package, never cuda or cuda-drivers",
                        f"{install} cuda-toolkit",
                    ),
                    *windows_fixes()[1:],
                ],
                tables=[Table(["Package or file"], [[p] for p in packages + files])],
            )
        )
    if w.shadowing_libs:
        libs = ", ".join(w.shadowing_libs[:3])
        more = len(w.shadowing_libs) - 3
        out.append(
            SHADOWED.finding(
                title=msg(
                    "{summary}: {detail}",
                    summary=msg(SHADOWED.summary),
                    detail=msg("{names} and {n} more", names=libs, n=more) if more > 0 else libs,
                ),
                severity=Severity.ERROR if cuda_broken else Severity.WARNING,
                fix=[
                    fix("Find the package that owns each copy", *[f"{owner} {p}" for p in w.shadowing_libs[:3]]),
                    fix(
                        msg(
                            "Remove that package, or move the copies away ({why}), refresh the loader cache",
                            why=_REMOVE_WHY,
                        ),
                        *[f"sudo mv {p} {p}.bak" for p in w.shadowing_libs[:3]],
                        "sudo ldconfig",
                        "ldconfig -p | grep -E 'libcuda|libnvidia-ml'",
                    ),
                ],
            )
        )
    blocked = (f.driver is not None and f.driver.init_status == "OPERATING_SYSTEM") or (
        f.cuda_driver is not None and f.cuda_driver.init_result == 304
    )
    if blocked and not out:
        out.append(BLOCKED.finding(fix=windows_fixes()))
    return out
