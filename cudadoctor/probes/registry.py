"""The probes `cudadoctor check` runs. The slowest starts first; the report orders sections itself."""

from __future__ import annotations

from cudadoctor.probes import Probe, cuda_driver, driver, measurements, system, torch_build

# Time bounds are generous: each is far above a healthy run, and far below a hung one.
CHECK_PROBES: list[Probe] = [
    Probe("torch", torch_build.collect, timeout=60),
    Probe("system", system.collect_system, timeout=10),
    Probe("pci", system.collect_pci, timeout=10),
    Probe("driver", driver.collect, timeout=15),
    Probe("cuda_driver", cuda_driver.collect, timeout=25),
    Probe("toolkit", system.collect_toolkit, timeout=10),
]

# Opt-in (--full, --only, `cudadoctor bench`): they load the GPU and take seconds.
MEASURE_PROBES: list[Probe] = [
    Probe("bandwidth", measurements.collect_bandwidth, timeout=120),
    Probe("smoke", measurements.collect_smoke, timeout=120),
]
ALL_PROBES: list[Probe] = CHECK_PROBES + MEASURE_PROBES

# Probes that run in the interpreter being diagnosed (--python), not in the doctor's own.
TARGET_PYTHON_PROBES = frozenset({"torch", "bandwidth", "smoke"})
