"""The torch install command that fits THIS driver and THESE GPUs, computed from the wheel tables."""

from __future__ import annotations

from dataclasses import dataclass, field

from cudadoctor.facts import Facts
from cudadoctor.knowledge import wheels
from cudadoctor.knowledge.driver_minimums import full_minimum, major_floor, max_cuda_for_driver
from cudadoctor.knowledge.versions import parse_version, version_at_least


@dataclass
class DriverView:
    """What the driver can run: its CUDA version (major, minor) and its version string."""

    cuda: tuple[int, int] | None
    version: str | None
    windows: bool

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


def gpu_capabilities(f: Facts) -> list[tuple[str, str]]:
    """(name, capability) of each GPU NVML reports; torch's own list when NVML has none."""
    if f.driver is not None and f.driver.devices:
        return [(d.name or f"GPU {d.index}", d.compute_capability) for d in f.driver.devices if d.compute_capability]
    if f.torch is not None:
        return [(d.name or f"GPU {d.index}", d.capability) for d in f.torch.devices if d.capability]
    return []


@dataclass
class Advice:
    variant: wheels.Variant | None
    version: str | None  # the torch version to install
    commands: list[str] = field(default_factory=list)
    note: str = ""  # why this one, or why none fits
    driver_upgrade: str | None = None  # "580.65.06" when a newer driver would allow a newer variant


def _patch_version(release: str, installed: str | None) -> str:
    if installed and wheels.release_of(installed) == release:
        return installed.split("+")[0]
    return f"{release}.0"


def _fits(v: wheels.Variant, drv: DriverView, ccs: list[str], cubin: bool) -> str | None:
    compat = drv.runs(v.cuda)
    if compat is None:
        return None
    wanted = ("sm",) if cubin else ("sm", "ptx")
    if any(wheels.coverage(v.arch_flags, cc) not in (*wanted, None) for cc in ccs):
        return None
    return compat


def install_commands(version: str, variant: wheels.Variant, f: Facts) -> list[str]:
    t = f.torch
    pkgs = [f"torch=={version}"]
    if t is not None and t.torchvision and (tv := wheels.torchvision_for(version)):
        pkgs.append(f"torchvision=={tv}")
    if t is not None and t.torchaudio and (ta := wheels.torchaudio_for(version)):
        pkgs.append(f"torchaudio=={ta}")
    pip = "python -m pip" if t is None else f"{t.python_executable} -m pip"
    cmds = []
    if t is not None and t.installed:
        # an installed 2.x.y+cpu satisfies ==2.x.y, so pip would keep it: remove it first
        names = ["torch"] + [p for p in ("torchvision", "torchaudio") if getattr(t, p)]
        cmds.append(f"{pip} uninstall -y {' '.join(names)}")
    cmds.append(f"{pip} install {' '.join(pkgs)} --index-url {variant.index_url}")
    return cmds


# Real cubins for every GPU before PTX JIT; then the installed release, newer ones, older ones;
# inside a release, full driver compatibility before minor-version compatibility, then the newest CUDA.
def advise(f: Facts) -> Advice:
    drv = driver_view(f)
    ccs = [cc for _, cc in gpu_capabilities(f)]
    machine = f.system.machine if f.system else None
    installed = f.torch.version if f.torch and f.torch.version else None
    release = wheels.release_of(installed)
    if release not in wheels.RELEASES:
        release = wheels.newest_release()
    here = parse_version(release)
    ordered = wheels.releases_newest_first()
    newer = [r for r in ordered if parse_version(r) > here]  # type: ignore[operator]
    older = [r for r in ordered if parse_version(r) < here]  # type: ignore[operator]
    # What a newer driver would allow: this release's newest build that covers the GPUs.
    upgrade = None
    arch_ok = [v for v in wheels.variants(release, machine) if all(wheels.covers(v.arch_flags, cc) for cc in ccs)]
    if arch_ok:
        target = max(arch_ok, key=lambda v: v.cuda)
        if drv.runs(target.cuda) is None:
            upgrade = full_minimum(*target.cuda, windows=drv.windows) or major_floor(target.cuda[0], drv.windows)
    for cubin in (True, False):
        for rel in [release, *newer, *older]:
            fitting = [(v, c) for v in wheels.variants(rel, machine) if (c := _fits(v, drv, ccs, cubin))]
            if not fitting:
                continue
            v, compat = max(fitting, key=lambda vc: (vc[1] == "full", vc[0].cuda))
            version = _patch_version(rel, installed)
            why = (
                "fits this driver and every GPU"
                if rel == release
                else (f"no build of torch {release} fits this driver and these GPUs as well")
            )
            if not cubin:
                why += "; runs through PTX JIT only"
            return Advice(
                v,
                version,
                install_commands(version, v, f),
                note=f"torch {version} {v.name}: {why}",
                driver_upgrade=upgrade if rel != release else None,
            )
    return Advice(
        None, None, driver_upgrade=upgrade, note="no known torch build fits this driver and these GPUs together"
    )
