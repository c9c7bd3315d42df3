"""`cudadoctor fit`: will a model fit, from real Hugging Face configs and real checkpoints written here,
against fake GPUs whose free memory the tests choose."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import LIBRARY_DIRS, ROOT

pytestmark = pytest.mark.fakenvml

CONFIGS = ROOT / "tests" / "fixtures" / "hf_configs"
GIB = 1024**3


def machine(*free_gib: float) -> str:
    total = 80 * GIB
    lines = ["driver 550.54.14", "cuda 12040"]
    for free in free_gib:
        used = total - int(free * GIB)
        lines.append(f'device name="NVIDIA A100-SXM4-80GB" cc=8.0 total={total} used={used} util=0 temp=40')
    return "\n".join(lines) + "\n"


def table(report: dict) -> list[list[str]]:
    estimate = next(f for f in report["findings"] if f["code"] == "CD660")
    return estimate["tables"][0]["rows"]


@pytest.mark.parametrize(
    ("config", "parameters", "card"),
    [
        ("qwen2.5-0.5b.config.json", 494_032_768, "0.49B"),  # model card: 0.49B (0.36B non-embedding)
        ("smollm2-135m.config.json", 134_515_008, "135M"),
    ],
)
def test_real_configs_give_the_model_cards_parameter_count(config: str, parameters: int, card: str):
    from cudadoctor.backends.modelsize import model_size

    size = model_size(str(CONFIGS / config))
    assert size.parameters == parameters and size.source == "config"
    assert size.weights_bytes == parameters * 2  # both are bfloat16 checkpoints


def test_qwen_non_embedding_count_matches_its_card():
    from cudadoctor.backends.modelsize import model_size

    cfg = json.loads((CONFIGS / "qwen2.5-0.5b.config.json").read_text())
    size = model_size(str(CONFIGS / "qwen2.5-0.5b.config.json"))
    assert round((size.parameters - cfg["vocab_size"] * cfg["hidden_size"]) / 1e9, 2) == 0.36


def test_a_model_that_fits_names_the_gpus(run_cli, tmp_path: Path):
    model = tmp_path / "qwen"
    model.mkdir()
    (model / "config.json").write_text((CONFIGS / "qwen2.5-0.5b.config.json").read_text())
    r = run_cli("fit", str(model), "--json", machine=machine(0.5, 20))
    rep = json.loads(r.stdout)
    assert r.code == 0
    fits = next(f for f in rep["findings"] if f["code"] == "CD662")
    assert fits["title"] == "Inference in bfloat16 (942.3 MiB) fits on GPU 1"
    rows = {(u, p): (need, where) for u, p, need, where in table(rep)}
    assert rows[("inference", "4-bit")] == ("235.6 MiB", "GPU 0, 1")
    assert rows[("training", "Adam, mixed precision")] == ("7.4 GiB", "GPU 1")


def test_training_that_fits_no_gpu_is_an_error_with_fixes_that_compile(run_cli, tmp_path: Path):
    model = tmp_path / "qwen"
    model.mkdir()
    (model / "config.json").write_text((CONFIGS / "qwen2.5-0.5b.config.json").read_text())
    r = run_cli("fit", str(model), "--training", "--json", machine=machine(2, 3))
    assert r.code == 1
    too_big = next(f for f in json.loads(r.stdout)["findings"] if f["code"] == "CD661")
    assert (
        too_big["title"]
        == "Training with Adam needs at least 7.4 GiB: no GPU has that much free (most: 3.0 GiB on GPU 1)"
    )
    assert "2 GPUs have 5.0 GiB free together; it needs at least 3 GPUs' worth." in too_big["why"]
    assert too_big["fix"][0]["commands"] == ["cudadoctor gpus --sort-by-free"]


def test_inference_that_does_not_fit_offers_a_lower_precision_that_does(run_cli, tmp_path: Path):
    model = tmp_path / "qwen"
    model.mkdir()
    (model / "config.json").write_text((CONFIGS / "qwen2.5-0.5b.config.json").read_text())
    r = run_cli("fit", str(model), "--json", machine=machine(0.3))
    too_big = next(f for f in json.loads(r.stdout)["findings"] if f["code"] == "CD661")
    labels = [f["when"] for f in too_big["fix"]]
    assert labels[1].startswith("Load it in 4-bit (235.6 MiB: fits on GPU 0")
    for f in too_big["fix"][1:]:
        compile("\n".join(f["commands"]), "fix", "exec")  # Python a person pastes
        assert repr(str(model)) in f["commands"][-1]  # the model's own directory, quoted


def test_a_checkpoint_is_counted_from_its_tensors_not_its_optimizer(run_cli, tmp_path: Path):
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(torch.nn.Linear(100, 50), torch.nn.Linear(50, 10)).to(torch.bfloat16)
    params = sum(p.numel() for p in net.parameters())
    opt = torch.optim.Adam(net.parameters())
    net(torch.zeros(1, 100, dtype=torch.bfloat16)).sum().backward()
    opt.step()
    path = tmp_path / "train.pt"
    torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}, path)
    r = run_cli("fit", str(path), "--json", machine=machine(10))
    rep = json.loads(r.stdout)
    assert rep["facts"]["model"]["parameters"] == params == 5560
    assert rep["facts"]["model"]["exact"] is True and rep["facts"]["model"]["dtype"] == "bfloat16"
    title = next(f for f in rep["findings"] if f["code"] == "CD660")["title"]
    assert title == "5,560 parameters (counted from its tensors): memory by precision and use"


def test_without_nvml_the_fit_is_unknown_never_claimed(run_cli, tmp_path: Path):
    r = run_cli("fit", str(CONFIGS / "smollm2-135m.config.json"), env={LIBRARY_DIRS: str(tmp_path)})
    assert r.code == 0
    assert "not checked: driver" in r.stdout  # the verdict names what it could not check
    assert "unknown" in r.stdout and "CD662" not in r.stdout and "CD661" not in r.stdout
    assert "None" not in r.stdout


def test_an_architecture_without_a_formula_gives_no_figure(run_cli, tmp_path: Path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "mamba", "hidden_size": 768}))
    r = run_cli("fit", str(cfg), "--json", machine=machine(10))
    rep = json.loads(r.stdout)
    assert [f["code"] for f in rep["findings"]] == ["CD663"]
    assert "mamba" in rep["findings"][0]["title"]


def test_unreadable_inputs_are_one_line_usage_errors(run_cli, tmp_path: Path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    for path in (str(bad), str(tmp_path / "missing.pt"), str(tmp_path)):
        r = run_cli("fit", path, machine=machine(10))
        assert r.code == 2 and r.stderr.startswith("cudadoctor: ") and len(r.stderr.strip().splitlines()) == 1
