"""The NVIDIA driver in the install advice: what CUDA it runs (DriverView), the GPUs it drives and the newest
branch that still drives them, and the upgrade command for this OS."""

from __future__ import annotations

from dataclasses import dataclass

from cudadoctor.advice.gpus import gpu_capabilities
from cudadoctor.facts import Facts
from cudadoctor.knowledge import driver_install
from cudadoctor.knowledge.architectures import last_driver_branch
from cudadoctor.knowledge.driver_minimums import full_minimum, major_floor, max_cuda_for_driver
from cudadoctor.knowledge.versions import version_at_least
from cudadoctor.model import Message, msg


@dataclass
class DriverView:
    """What the driver can run: its CUDA version (major, minor) and its version string."""

    cuda: tuple[int, int] | None
    version: str | None
    windows: bool

    @property
    def known(self) -> bool:
        """Whether anything is known of the driver: an unknown one runs every build (see runs)."""
        return self.cuda is not None or self.version is not None

    def runs(self, cuda: tuple[int, int]) -> str | None:
        """ "full", "minor" (minor-version compatibility) or None when the driver cannot run it."""
        if self.cuda is not None:
            if self.cuda >= cuda:
                return "full"
            if self.cuda[0] == cuda[0] and cuda[0] >= 11:
                floor = major_floor(cuda[0], self.windows)
                if self.version is None or floor is None or version_at_least(self.version, floor):
                    return "minor"
            return None
        if self.version is None:
            return "full"  # unknown driver: do not rule anything out
        full = full_minimum(*cuda, windows=self.windows)
        if full and version_at_least(self.version, full):
            return "full"
        floor = major_floor(cuda[0], self.windows)
        return "minor" if floor and version_at_least(self.version, floor) else None


def driver_view(f: Facts) -> DriverView:
    windows = f.system is not None and f.system.os == "Windows"
    version = f.driver.driver_version if f.driver else None
    raw = f.driver.cuda_driver_version if f.driver else None
    if raw is None and f.cuda_driver is not None:
        raw = f.cuda_driver.driver_version
    cuda = (raw // 1000, (raw % 1000) // 10) if raw else None
    if cuda is None and version:
        cuda = max_cuda_for_driver(version, windows)
    return DriverView(cuda=cuda, version=version, windows=windows)


def gpu_branch_limit(f: Facts) -> int | None:
    """The newest driver branch that still drives every GPU here (knowledge/architectures.py); None: none
    of them has a known limit."""
    limits = [b for _, cc in gpu_capabilities(f) if (b := last_driver_branch(cc))]
    return min(limits) if limits else None


def within_branch(f: Facts, need: str, windows: bool) -> str | None:
    """`need`, or a driver no newer than the last branch that drives these GPUs (Kepler: 470; Maxwell,
    Pascal, Volta: 580) that runs the same CUDA: the floor of minor-version compatibility for its major. None
    where even that is past the branch."""
    limit = gpu_branch_limit(f)
    major = need.split(".")[0]
    if limit is None or not major.isdigit() or int(major) <= limit:
        return need  # no limit, or no version to compare (a caller without a minimum passes "")
    cuda = max_cuda_for_driver(need, windows)
    floor = major_floor(cuda[0], windows) if cuda else None
    return floor if floor and int(floor.split(".")[0]) <= limit else None


def driver_upgrade_fix(f: Facts, need: str, lower: bool = False) -> tuple[Message, list[str]]:
    """(label, commands) to get driver `need` or newer on this OS: a package for the distribution, the
    Windows driver (also for WSL, which uses it), or NVIDIA's download page. In a container the driver is
    the host's: the label says so."""
    container = f.system is not None and f.system.in_container
    windows = f.system is not None and f.system.os == "Windows"
    limit, within = gpu_branch_limit(f), within_branch(f, need, windows)
    if within is None and limit is not None:
        # no driver that drives these GPUs runs what `need` runs: say so, never offer a newer branch
        return msg(
            "no NVIDIA driver for these GPUs runs it: their last driver branch is {branch}, and it needs {need}"
            if lower
            else "No NVIDIA driver for these GPUs runs it: their last driver branch is {branch}, and it needs {need}",
            branch=limit,
            need=need,
        ), []
    need = within or need
    label, cmds = _driver_upgrade(f, need, lower=container or lower)
    if container:
        label = msg(
            "on the host (not in this container): {action}"
            if lower
            else "On the host (not in this container): {action}",
            action=label,
        )
    return label, cmds


def _driver_upgrade(f: Facts, need: str, lower: bool = False) -> tuple[Message, list[str]]:
    """`lower`: the label goes after a colon, so it starts in lower case (a template of its own)."""
    system = f.system
    page = driver_install.SOURCES["generic"]
    if system is not None and system.os == "Windows":
        label = msg(
            "install NVIDIA driver {need} or newer for Windows"
            if lower
            else "Install NVIDIA driver {need} or newer for Windows",
            need=need,
        )
        return label, [f"start {page}"]
    if system is not None and system.wsl:
        label = msg(
            "install NVIDIA driver {need} or newer on Windows "
            "(WSL uses the Windows driver; never install one inside WSL)"
            if lower
            else "Install NVIDIA driver {need} or newer on Windows "
            "(WSL uses the Windows driver; never install one inside WSL)",
            need=need,
        )
        return label, [f"explorer.exe {page}"]
    os_id = system.os_id if system else None
    # a GPU that newer drivers ignore (Kepler after 470; Maxwell, Pascal, Volta after 580) gets its last
    # branch, never a newer one
    family, cmds = driver_install.install_commands(os_id, legacy=gpu_branch_limit(f) or False)
    branch = need.split(".")[0]
    if family.lower().startswith("ubuntu"):
        cmds = [f"sudo apt install nvidia-driver-{branch}", "sudo reboot"]
    label = msg(
        "upgrade the NVIDIA driver to {need} or newer ({family})"
        if lower
        else "Upgrade the NVIDIA driver to {need} or newer ({family})",
        need=need,
        family=family,
    )
    return label, cmds
