from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fakenvml.build import build

ROOT = Path(__file__).resolve().parent.parent

# Coverage of the processes the tests start (coverage's `patch = ["subprocess"]`): their data goes beside
# the test process's own, whatever directory they run in.
os.environ.setdefault("COVERAGE_FILE", str(ROOT / ".coverage" / "data"))
(ROOT / ".coverage").mkdir(exist_ok=True)


def real_driver_present() -> bool:
    return any(
        os.path.exists(p)
        for p in ("/proc/driver/nvidia/version", "/usr/lib/wsl/lib/libnvidia-ml.so.1", "/dev/nvidiactl")
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if real_driver_present():
        return
    skip = pytest.mark.skip(reason="needs a real NVIDIA GPU and driver")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# The doctor's test seam (backends/nvml.py): libcuda.so.1 and libnvidia-ml.so.1 only from these
# directories, so that a machine with a real driver (found through ldconfig) sees only the fakes.
LIBRARY_DIRS = "CUDADOCTOR_LIBRARY_DIRS"


def fake_machine_env(machine: Path, dirs: list[str] | list[Path], ld_path: str = "") -> dict[str, str]:
    """The environment that makes a process see the fake machine description and only the fake libraries
    in `dirs` (fake_libs[0]: NVML, fake_libs[1]: libcuda; leave one out to make it missing)."""
    names = [str(d) for d in dirs]
    return {
        "FAKE_NVML_MACHINE": str(machine),
        "LD_LIBRARY_PATH": ":".join([*names, ld_path]) if ld_path else ":".join(names),
        LIBRARY_DIRS: os.pathsep.join(names),
    }


@pytest.fixture(scope="session")
def fake_libs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    built = build(tmp_path_factory.mktemp("fakenvml"))
    if built is None:
        pytest.skip("no C compiler to build the fake libnvidia-ml")
    return built


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> dict:
        return json.loads(self.stdout)

    def codes(self) -> list[str]:
        return [f["code"] for f in self.json["findings"]]


@pytest.fixture
def run_cli(fake_libs: tuple[Path, Path], tmp_path: Path):
    """Run `python -m cudadoctor ARGS` against a fake machine description (None: this machine)."""
    nvml_dir, cuda_dir = fake_libs

    def run(
        *args: str,
        machine: str | None = None,
        libcuda: bool = True,
        env: dict | None = None,
        timeout: float = 60,
    ) -> Run:
        e = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_VISIBLE", "FAKE_NVML", LIBRARY_DIRS))}
        e["PYTHONPATH"] = str(ROOT)
        if machine is not None:
            path = tmp_path / "machine.txt"
            path.write_text(machine)
            dirs = [str(nvml_dir)] + ([str(cuda_dir)] if libcuda else [])
            e.update(fake_machine_env(path, dirs, e.get("LD_LIBRARY_PATH", "")))
        e.update(env or {})
        p = subprocess.run(
            [sys.executable, "-m", "cudadoctor", *args],
            capture_output=True,
            text=True,
            env=e,
            timeout=timeout,
            cwd=tmp_path,
        )
        return Run(p.returncode, p.stdout, p.stderr)

    return run


H100_HEALTHY = """\
driver 550.54.14
cuda 12040
device name="NVIDIA H100 80GB HBM3" cc=9.0 total=85520809984 used=1073741824 util=12 temp=41 gen=5/5 width=16/16
"""


pytest_plugins = ["pytester"]
