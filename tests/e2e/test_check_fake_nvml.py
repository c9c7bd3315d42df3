"""`cudadoctor check` as a subprocess on fake NVIDIA machines: the real nvidia-ml-py and ctypes
paths run against a stand-in libnvidia-ml.so.1 / libcuda.so.1 built from tests/fakenvml."""

from __future__ import annotations

import time

import pytest

from cudadoctor.report import EXIT_INCOMPLETE, EXIT_OK, EXIT_PROBLEMS
from tests.conftest import H100_HEALTHY


def finding(run, code):
    return next(f for f in run.json["findings"] if f["code"] == code)


def test_healthy_machine_exits_zero_and_names_driver_and_gpu(run_cli):
    r = run_cli("check", "--json", "--skip", "torch", machine=H100_HEALTHY)
    assert r.code == EXIT_OK, r.stderr
    ok = finding(r, "CD100")
    assert "550.54.14" in ok["title"] and "12.4" in ok["title"] and "H100" in ok["title"]
    assert "CD120" in r.codes()  # cuInit succeeded in the child
    dev = r.json["facts"]["driver"]["devices"][0]
    assert dev["compute_capability"] == "9.0"
    assert dev["memory_free"] == 85520809984 - 1073741824


def test_driver_not_loaded(run_cli):
    r = run_cli("check", "--skip", "torch", "--json", machine="init_error 9\n")
    assert r.code == EXIT_PROBLEMS
    f = finding(r, "CD102")
    assert f["severity"] == "error"
    assert any("modprobe nvidia" in c for fx in f["fix"] for c in fx["commands"])


def test_version_mismatch_says_reboot_or_reload(run_cli):
    r = run_cli("check", "--skip", "torch", "--json", machine="init_error 18\n")
    assert r.code == EXIT_PROBLEMS
    f = finding(r, "CD103")
    commands = [c for fx in f["fix"] for c in fx["commands"]]
    assert "sudo reboot" in commands
    assert any(c.startswith("sudo rmmod nvidia_uvm") for c in commands)
    assert any("apt-mark hold" in c for c in commands)


def test_no_permission_names_the_device_nodes(run_cli):
    r = run_cli("check", "--skip", "torch", "--json", machine="init_error 4\n")
    f = finding(r, "CD104")
    assert any("/dev/nvidia" in c for fx in f["fix"] for c in fx["commands"])


def test_lost_gpu_is_reported_and_other_gpus_still_render(run_cli):
    machine = H100_HEALTHY + 'device name="NVIDIA A100-SXM4-80GB" cc=8.0 error=15\n'
    r = run_cli("check", "--skip", "torch", "--json", machine=machine)
    assert r.code == EXIT_PROBLEMS
    lost = finding(r, "CD105")
    assert "GPU 1" in lost["title"] and "GPU_IS_LOST" in lost["title"]
    devices = r.json["facts"]["driver"]["devices"]
    assert devices[0]["name"] == "NVIDIA H100 80GB HBM3" and devices[0]["error"] is None
    assert devices[1]["error"] == "GPU_IS_LOST"


def test_old_driver_missing_functions_fall_back(run_cli):
    machine = H100_HEALTHY + (
        "process gpu=0 pid=4242 mem=1048576\n"
        "missing nvmlSystemGetCudaDriverVersion_v2 nvmlDeviceGetComputeRunningProcesses_v3 "
        "nvmlDeviceGetGraphicsRunningProcesses_v3 nvmlDeviceGetGraphicsRunningProcesses_v2 "
        "nvmlDeviceGetComputeRunningProcesses_v2\n"
    )
    r = run_cli("check", "--json", "--skip", "torch", machine=machine)
    driver = r.json["facts"]["driver"]
    assert driver["cuda_driver_version"] == 12040  # from the v1 function
    warn = finding(r, "CD106")
    assert warn["severity"] == "warning"
    assert "nvmlDeviceGetComputeRunningProcesses_v2" in warn["title"]
    assert "nvmlSystemGetCudaDriverVersion_v2" not in warn["title"]  # v1 answered instead
    assert r.code == EXIT_OK  # a warning alone does not fail


def test_nvml_without_libcuda_is_a_container_capabilities_problem(run_cli):
    r = run_cli("check", "--skip", "torch", "--json", machine=H100_HEALTHY, libcuda=False)
    assert r.code == EXIT_PROBLEMS
    f = finding(r, "CD121")
    assert "libcuda.so.1" in f["title"]
    assert "compute" in f["why"]


def test_stub_libcuda_is_named(run_cli):
    r = run_cli("check", "--skip", "torch", "--json", machine=H100_HEALTHY + "cuda_init 34\n")
    f = finding(r, "CD124")
    assert "stub" in f["title"]
    assert any("LD_LIBRARY_PATH" in c for fx in f["fix"] for c in fx["commands"])


def test_cuinit_no_device_points_at_visible_devices(run_cli):
    r = run_cli("check", "--skip", "torch", "--json", machine=H100_HEALTHY + "cuda_init 100\n")
    f = finding(r, "CD122")
    assert "CUDA_ERROR_NO_DEVICE" in f["title"]
    assert any("CUDA_VISIBLE_DEVICES" in c for fx in f["fix"] for c in fx["commands"])


def test_hanging_cuinit_is_bounded_and_reported(run_cli):
    start = time.monotonic()
    r = run_cli("check", "--skip", "torch", "--json", "--timeout", "5", machine=H100_HEALTHY + "cuda_init_sleep 60\n")
    assert time.monotonic() - start < 20
    assert "CD123" in r.codes()
    assert r.code == EXIT_INCOMPLETE and "CD002" not in r.codes()  # a hung child: incomplete, told once
    assert r.json["facts"]["cuda_driver"]["driver_version"] == 12040  # what came before the hang


def test_hanging_nvml_becomes_a_timeout_finding_and_exit_3(run_cli):
    start = time.monotonic()
    r = run_cli("check", "--skip", "torch", "--json", "--timeout", "1.5", machine=H100_HEALTHY + "init_sleep 60\n")
    assert time.monotonic() - start < 20
    assert r.code == EXIT_INCOMPLETE  # a hung child: the check did not finish
    hung = finding(r, "CD107")  # told once, by the driver's own rule, naming the call
    assert "hung" in hung["title"] and "nvmlInit" in hung["title"]
    assert "CD002" not in r.codes()
    assert r.json["facts"]["driver"]["init_status"] == "HUNG"
    assert r.json["facts"]["system"] is not None  # the rest of the report is there
    assert "Traceback" not in r.stderr


def test_text_report_is_plain_when_piped(run_cli):
    r = run_cli("check", "--skip", "torch", machine="init_error 18\n")
    assert r.code == EXIT_PROBLEMS
    assert r.stdout.splitlines()[2].startswith("PROBLEMS")
    assert "CD103" in r.stdout and "sudo reboot" in r.stdout
    assert "\x1b[" not in r.stdout  # no colour codes in a pipe


def test_cpu_torch_on_a_gpu_machine_gets_the_build_for_this_driver(run_cli):
    """The real CPU torch of the test environment, on a fake H100 with a CUDA 12.4 driver."""
    r = run_cli("check", "--json", machine=H100_HEALTHY)
    torch = r.json["facts"]["torch"]
    if torch["cuda"] is not None:
        import pytest

        pytest.skip("the test environment has a CUDA build of torch")
    assert r.code == EXIT_PROBLEMS
    f = finding(r, "CD202")
    assert "CPU-only" in f["title"]
    commands = [c for fx in f["fix"] for c in fx["commands"]]
    base = torch["version"].split("+")[0]
    # the driver runs CUDA 12.x only: cu126 through minor-version compatibility, never cu130
    assert commands[-1].endswith(f"install torch=={base} --index-url https://download.pytorch.org/whl/cu126")
    assert "uninstall -y torch" in commands[0]
    assert "CD210" in r.codes()  # is_available() is False although NVML sees a GPU: named cause
    assert "CD202" in finding(r, "CD210")["why"]


def test_visible_devices_table_and_hidden_devices(run_cli):
    machine = H100_HEALTHY + 'device name="NVIDIA H100 80GB HBM3" cc=9.0 used=0\n'
    r = run_cli("check", "--json", "--skip", "torch", machine=machine, env={"CUDA_VISIBLE_DEVICES": "1"})
    table = finding(r, "CD300")
    assert "CUDA sees 1 of 2 GPUs" in table["title"]
    assert table["tables"][0]["rows"][0][:2] == ["cuda:0", "1"]  # cuda:0 is nvidia-smi's GPU 1
    r = run_cli("check", "--json", "--skip", "torch", machine=machine, env={"CUDA_VISIBLE_DEVICES": ""})
    assert "CD301" in r.codes() and r.code == EXIT_PROBLEMS


NVML_ERRORS = """\
device name="NVIDIA H100 80GB HBM3" cc=9.0
device name="NVIDIA A100-SXM4-80GB" cc=8.0 mig=1
mig gpu=1 uuid=MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee total=10737418240 used=1073741824
fail_in nvmlSystemGetDriverVersion 999
fail_in nvmlSystemGetCudaDriverVersion_v2 999
fail_in nvmlSystemGetCudaDriverVersion 999
fail_in nvmlSystemGetNVMLVersion 999
fail_in nvmlDeviceGetMigMode 999 gpu=0
fail_in nvmlDeviceGetMigDeviceHandleByIndex 999 gpu=1
"""
SYSTEM_CALLS = ["nvmlSystemGetCudaDriverVersion", "nvmlSystemGetDriverVersion", "nvmlSystemGetNVMLVersion"]


def test_nvml_errors_for_versions_and_mig_are_named_in_both_jsons(run_cli):
    """An error answer (not NOT_SUPPORTED) for the driver, CUDA or NVML version, a GPU's MIG mode or its MIG
    devices is named, as other query errors are: never read as "no MIG" or silently unknown."""
    gpus = run_cli("gpus", "--json", machine=NVML_ERRORS).json
    assert all(gpus["query_errors"][c] == "UNKNOWN" for c in SYSTEM_CALLS)
    assert gpus["driver_version"] is None and gpus["cuda_driver_version"] is None
    assert gpus["gpus"][0]["unsupported"] == {"mig_mode": "UNKNOWN"}
    assert gpus["gpus"][1]["unsupported"] == {"mig_devices": "UNKNOWN"}
    check = run_cli("check", "--skip", "torch", "--json", machine=NVML_ERRORS).json
    driver = check["facts"]["driver"]
    assert all(driver["query_errors"][c] == "UNKNOWN" for c in SYSTEM_CALLS)
    assert driver["devices"][0]["unsupported"] == {"mig_mode": "UNKNOWN"}
    assert driver["devices"][1]["unsupported"] == {"mig_devices": "UNKNOWN"}
    f = next(f for f in check["findings"] if f["code"] == "CD129" and "could not answer" in f["title"])
    named = [row[0] for t in f["tables"] for row in t["rows"]]  # the title names four; the table all
    assert "GPU 0 mig_mode" in named and "GPU 1 mig_devices" in named and "nvmlSystemGetDriverVersion" in named


def test_not_supported_and_an_answering_fallback_are_not_errors(run_cli):
    """NOT_SUPPORTED is a GPU without MIG; a _v2 that fails while the older call answers leaves the fact known."""
    m = (
        'device name="NVIDIA H100 80GB HBM3" cc=9.0\n'
        "fail_in nvmlDeviceGetMigMode 3\nfail_in nvmlSystemGetCudaDriverVersion_v2 999\n"
    )
    gpus = run_cli("gpus", "--json", machine=m).json
    assert gpus["query_errors"] == {} and gpus["gpus"][0]["unsupported"] == {}
    assert gpus["cuda_driver_version"] == "12.2"
    check = run_cli("check", "--skip", "torch", "--json", machine=m)
    assert not any("could not answer" in f["title"] for f in check.json["findings"])


@pytest.mark.parametrize(
    "how,state,code", [("crash_in", "CRASHED", EXIT_PROBLEMS), ("hang_in", "HUNG", EXIT_INCOMPLETE)]
)
def test_check_names_a_sick_gpu_and_still_reads_the_others(run_cli, how, state, code):
    """check reads NVML in a fresh interpreter (its probes run on threads): the same skip-and-go-on holds,
    within the driver probe's bound (a hung GPU is cut at half of it by the child's watchdog)."""
    m = H100_HEALTHY * 3 + f"{how} nvmlDeviceGetName gpu=1\n"
    start = time.monotonic()
    r = run_cli("check", "--skip", "torch", "--json", "--timeout", "4", machine=m)
    assert time.monotonic() - start < 4 + 5
    devices = r.json["facts"]["driver"]["devices"]
    assert [d["name"] for d in devices] == ["NVIDIA H100 80GB HBM3", None, "NVIDIA H100 80GB HBM3"]
    assert devices[1]["error"] == state and "nvmlDeviceGetName" in devices[1]["failure"]
    f = finding(r, "CD129")
    assert "nvmlDeviceGetName on GPU 1" in f["title"] and "could not be read" not in f["title"]
    assert "CD105" not in r.codes()  # one finding for one cause
    assert "CD300" not in r.codes()  # "CUDA sees 2 of 3 GPUs" would be a guess: CUDA may count GPU 1
    # a crash in NVML is a finding (exit 1); a GPU that never answered leaves the report incomplete (exit 3)
    assert r.code == code
