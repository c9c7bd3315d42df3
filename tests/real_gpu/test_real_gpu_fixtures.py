"""What a real H100 (issue 19) and a real H200 (issue 30) said, kept as fixtures, against what the fakes say.

tests/fixtures/real_h100_nvml.json is `python tests/fakenvml/dump_real.py` on a lent H100 (driver 580.159.04,
nvidia-ml-py, torch 2.11.0+cu130); real_h100_gpus.json is `cudadoctor gpus --json` there; the H200's are
tests/fixtures/real_h200/nvml.json and gpus.json (its README). The fake NVML,
given that GPU's values, must answer every call the doctor makes as the real library did (values, NVML
error codes, string formats), and `gpus` must print the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"

# The H100 as the fake's machine file describes it; volatile readings (temperature, PCIe traffic, power,
# clock event reasons) are set to what `gpus --json` read there.
H100_AS_SEEN = """driver 580.159.04
cuda 13000
nvml_version 13.580.159.04
device name="NVIDIA H100 80GB HBM3" uuid=GPU-649c7097-44b5-2662-57eb-4b4d5e7fa8bd bus=00000000:00:06.0 cc=9.0 \
total=85520809984 used=503316480 util=0 temp=46 gen=5/5 width=16/16 mig=0 ecc=0/0 remapped=0/0 persistence=1 \
compute_mode=0 unsupported=retired power=74389 clocks_event=0x0
"""
H200_AS_SEEN = """driver 580.159.04
cuda 13000
nvml_version 13.580.159.04
device name="NVIDIA H200" uuid=GPU-7b801666-4b13-d5f7-6daf-90a0e379070a bus=00000000:00:06.0 cc=9.0 \
total=150754820096 used=644939776 util=0 temp=44 gen=5/5 width=16/16 mig=0 ecc=0/0 remapped=0/0 persistence=1 \
compute_mode=0 unsupported=retired power=80255 clocks_event=0x0
"""
REAL = {
    "H100": (H100_AS_SEEN, FIXTURES / "real_h100_nvml.json", FIXTURES / "real_h100_gpus.json"),
    "H200": (H200_AS_SEEN, FIXTURES / "real_h200" / "nvml.json", FIXTURES / "real_h200" / "gpus.json"),
}

# Calls whose answers are readings of the moment (or that the doctor never makes): not compared.
VOLATILE = {
    "nvmlDeviceGetTemperature(GPU)",
    "nvmlDeviceGetPcieThroughput(RX)",
    "nvmlDeviceGetPcieThroughput(TX)",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
    "nvmlDeviceGetDecoderUtilization",
    "nvmlDeviceGetEncoderUtilization",
    "nvmlDeviceGetFanSpeed",
    "nvmlDeviceGetPciInfo",
    "nvmlDeviceGetPciInfo_v3",  # pciSubSystemId: the doctor reads busId only
}


@pytest.fixture(params=list(REAL))
def real(request):
    """(name, the real NVML dump, the real `gpus --json`) of each GPU a session ran on."""
    _, nvml, gpus = REAL[request.param]
    return request.param, json.loads(nvml.read_text()), json.loads(gpus.read_text())


@pytest.fixture
def fake_env(fake_libs, tmp_path, real):
    machine = tmp_path / "machine.txt"
    machine.write_text(REAL[real[0]][0])
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_VISIBLE")}
    env.update(
        FAKE_NVML_MACHINE=str(machine),
        LD_LIBRARY_PATH=f"{fake_libs[0]}:{fake_libs[1]}",
        PYTHONPATH=str(ROOT),
    )
    return env


def test_the_fake_answers_every_call_as_the_real_gpu(fake_env, real):
    _, real_nvml, _ = real
    out = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "fakenvml" / "dump_real.py")],
        capture_output=True, text=True, env=fake_env, timeout=60,
    )  # fmt: skip
    fake = json.loads(out.stdout)
    real_dev, fake_dev = real_nvml["nvml"]["devices"][0], fake["nvml"]["devices"][0]
    differ = {k: (v, fake_dev.get(k)) for k, v in real_dev.items() if k not in VOLATILE and fake_dev.get(k) != v}
    assert not differ
    system = {k: v for k, v in real_nvml["nvml"].items() if k not in ("devices", "nvidia_ml_py")}
    assert {k: fake["nvml"].get(k) for k in system} == system
    # libcuda: version before cuInit, NOT_INITIALIZED for the count before it, the error names
    real_cuda = {k: v for k, v in real_nvml["libcuda"].items() if k != "cuDeviceGetUuid(0)"}
    assert {k: fake["libcuda"].get(k) for k in real_cuda} == real_cuda


def test_gpus_on_the_fake_gpu_prints_what_the_real_one_did(fake_env, real):
    _, _, real_gpus = real
    out = subprocess.run(
        [sys.executable, "-m", "cudadoctor", "gpus", "--json"], capture_output=True, text=True, env=fake_env, timeout=60
    )
    fake = json.loads(out.stdout)
    # fields added after the real run (issue 24), as a healthy GPU fills them: no failed query, no failure
    real = {k: v for k, v in real_gpus.items() if k != "created"} | {"query_errors": {}}
    real["gpus"] = [g | {"failure": None} for g in real_gpus["gpus"]]
    assert {k: v for k, v in fake.items() if k != "created"} == real


def test_a_smoke_run_where_the_gpu_lost_says_slower_not_0_3x_faster():
    """The first `check --full` on the H100 timed the CNN at 36.6 steps/s on the CPU and 11.6 on the GPU
    (warm-up inside the timed steps, inductor compiling beside it) and titled it "CNN 0.3x faster"."""
    from cudadoctor.facts import SmokeStep
    from cudadoctor.rules.measurements import evaluate
    from tests.helpers import by_code
    from tests.rules.test_measurements import h100, smoke_ok

    facts = h100()
    facts.smoke = smoke_ok()
    facts.smoke.steps = [
        SmokeStep("cpu", "cnn", [2.30, 2.25], 36.6),
        SmokeStep("cuda:0", "cnn", [2.30, 2.25], 11.6),
    ]
    title = by_code(evaluate(facts))["CD406"].title
    assert "CNN 3.2x slower on the GPU" in title and "faster" not in title


def test_the_real_starved_run_is_a_program_that_waits():
    """`watch --json` of a loop on the H100 that builds each batch on the CPU and sleeps between steps
    (benchmarks/real_gpu.sh): 1 % utilisation, the main process at about 60 % of a core."""
    from cudadoctor.facts.codec import from_jsonable
    from cudadoctor.facts.watch import Timeline
    from cudadoctor.rules.watch import evaluate

    data = json.loads((FIXTURES / "real_h100_watch_starved.json").read_text())
    found = {f.code: f for f in evaluate(from_jsonable(Timeline, data["timeline"]))}
    assert "CD714" in found and "CD701" not in found
    assert "py-spy record --idle" in " ".join(c for fx in found["CD714"].fix for c in fx.commands)
