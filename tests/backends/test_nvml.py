"""The NVML backend's pieces that need no driver."""

from __future__ import annotations

from cudadoctor.backends.nvml import library_version_from_path


def test_user_space_driver_version_from_library_file():
    assert library_version_from_path("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.14") == "550.54.14"
    assert library_version_from_path("/tmp/libnvidia-ml.so.1") is None


# Both policies of the one NVML guard (backends/nvml_guard.py), on the fake libnvidia-ml through the real
# nvidia-ml-py binding, in a process of its own (the binding keeps the library it loaded).
GUARD_MACHINE = """\
driver 550.54.14
cuda 12040
device name="NVIDIA H100 80GB HBM3" cc=9.0 total=85520809984 used=1073741824 util=12 unsupported=temp
device name="NVIDIA H100 80GB HBM3" cc=9.0 total=85520809984 used=1073741824 util=12
fail_in nvmlSystemGetDriverVersion 999
fail_in nvmlDeviceGetUtilizationRates 15 gpu=1
missing nvmlDeviceGetPowerUsage nvmlSystemGetCudaDriverVersion_v2
"""

GUARD_SCRIPT = """
import json, sys
import pynvml as nv
from cudadoctor.backends.nvml import preload_nvml
from cudadoctor.backends.nvml_guard import DeviceLost, Guard, RecordFacts, SkipAfterError
from cudadoctor.facts.nvml import DriverFacts, NvmlDevice

preload_nvml(nv)
nv.nvmlInit()
handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(2)]
out = {}
for name in ("record", "skip"):
    facts = DriverFacts(binding=None, library_loaded=True, init_status="ok")
    devs = [NvmlDevice(index=0), NvmlDevice(index=1)]
    policy = RecordFacts(facts) if name == "record" else SkipAfterError()
    at = (lambda i, what: (devs[i], what)) if name == "record" else (lambda i, what: i)
    calls = []
    guard = Guard(nv, policy, trace=calls.append)
    answers = []
    for _ in range(2):  # each query twice: is the second one asked of NVML?
        answers.append(guard.call("nvmlDeviceGetTemperature", handles[0], 0, at=at(0, "temperature")))
        answers.append(guard.call("nvmlSystemGetDriverVersion", at=None if name == "record" else -1))
        answers.append(guard.call("nvmlDeviceGetPowerUsage", handles[0], at=at(0, "power")))
        answers.append(guard.first(
            ["nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"],
            at=None if name == "record" else -1,
        ))
        try:
            answers.append(guard.call("nvmlDeviceGetUtilizationRates", handles[1], at=at(1, "utilization")))
            answers.append(guard.call("nvmlDeviceGetMemoryInfo", handles[1], at=at(1, "memory")) is not None)
        except DeviceLost as lost:
            answers.append("lost " + lost.name)
    out[name] = {
        "answers": answers,
        "calls": calls,
        "query_errors": facts.query_errors,
        "missing": facts.missing_functions,
        "unsupported": [d.unsupported for d in devs],
        "skipped": sorted(map(list, getattr(policy, "skip", ()))),
        "gone": sorted(getattr(policy, "gone", ())),
    }
nv.nvmlShutdown()
print(json.dumps(out))
"""


def test_the_nvml_guard_records_an_error_as_a_fact_or_skips_the_query_by_policy(fake_libs, tmp_path):
    import json
    import os
    import subprocess
    import sys

    from tests.conftest import LIBRARY_DIRS, ROOT, fake_machine_env

    machine = tmp_path / "machine.txt"
    machine.write_text(GUARD_MACHINE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_NVML", LIBRARY_DIRS))}
    env.update(fake_machine_env(machine, [fake_libs[0]]), PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", GUARD_SCRIPT], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    record, skip = out["record"], out["skip"]
    # the same answers either way: None where NVML gave none, the older CUDA-version function's where the newer
    # one is missing
    assert record["answers"][:4] == skip["answers"][:4] == [None, None, None, 12040]
    # RecordFacts: every error is a fact, on the GPU it concerns or for the system, and asked again next time
    assert record["unsupported"][0] == {"temperature": "NOT_SUPPORTED"}
    assert record["query_errors"] == {"nvmlSystemGetDriverVersion": "UNKNOWN"}
    assert record["missing"] == ["nvmlDeviceGetPowerUsage"]  # not the _v2 an older function stood in for
    assert record["answers"][4] == "lost GPU_IS_LOST"  # a lost GPU stops its own query
    assert record["calls"].count("nvmlDeviceGetTemperature") == 2
    assert record["calls"].count("nvmlDeviceGetUtilizationRates") == 2
    # SkipAfterError: nothing is recorded, but what cannot answer is not asked again; a passing error is
    assert skip["query_errors"] == {} and skip["missing"] == [] and skip["unsupported"] == [{}, {}]
    assert skip["calls"].count("nvmlDeviceGetTemperature") == 1
    assert skip["calls"].count("nvmlDeviceGetPowerUsage") == 1
    assert skip["calls"].count("nvmlSystemGetCudaDriverVersion_v2") == 1
    assert skip["calls"].count("nvmlSystemGetCudaDriverVersion") == 2
    assert skip["calls"].count("nvmlSystemGetDriverVersion") == 2  # UNKNOWN may pass: asked again
    # a GPU that fell off the bus: unknown from then on, none of its queries asked again
    assert skip["gone"] == [1]
    assert skip["answers"][4:6] == [None, False]
    assert skip["calls"].count("nvmlDeviceGetUtilizationRates") == 1
    assert "nvmlDeviceGetMemoryInfo" not in skip["calls"]
    assert ["0", "nvmlDeviceGetTemperature"] in [[str(d), f] for d, f in skip["skipped"]]
