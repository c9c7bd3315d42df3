"""check's settings come from one table (commands/config.py KEYS): each key is an option of `check` (in
its --help) and a key of the config file, read the same way from either; adding a key to the table adds
both. The runs replay one saved report (`--from`), so they need no probe."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudadoctor.commands.config import KEYS
from tests.conftest import H100_HEALTHY

pytestmark = pytest.mark.fakenvml

# each key: its option's words, and the same setting in TOML
SAMPLES = {
    "require-gpus": (["--require-gpus", "1"], "1"),
    "min-free-memory": (["--min-free-memory", "1GiB"], '"1GiB"'),
    "min-compute-capability": (["--min-compute-capability", "8.0"], '"8.0"'),
    "expect-torch-cuda": (["--expect-torch-cuda", "12.4"], '"12.4"'),
    "require-cudnn": (["--require-cudnn"], "true"),
    "min-h2d-gbps": (["--min-h2d-gbps", "1.5"], "1.5"),
    "fail-on": (["--fail-on", "warning"], '"warning"'),
    "select": (["--select", "CD1,CD5"], '["CD1", "CD5"]'),
    "ignore": (["--ignore", "CD147"], '"CD147"'),
}


def test_every_key_of_the_table_has_a_sample_here():
    assert set(SAMPLES) == set(KEYS)


def test_every_key_is_an_option_of_check(run_cli):
    r = run_cli("check", "--help")
    assert r.code == 0
    for key in KEYS:
        assert f"--{key}" in r.stdout


def test_options_and_config_file_set_the_same(run_cli, tmp_path: Path):
    saved = tmp_path / "saved.json"
    assert run_cli("check", "--skip", "torch", "--output", str(saved), machine=H100_HEALTHY).code in (0, 1)
    options = [word for words, _toml in SAMPLES.values() for word in words]
    by_options = run_cli("check", "--from", str(saved), "--json", *options)
    (tmp_path / "cudadoctor.toml").write_text("".join(f"{k} = {toml}\n" for k, (_words, toml) in SAMPLES.items()))
    by_file = run_cli("check", "--from", str(saved), "--json")
    assert by_options.code == by_file.code and by_options.code in (0, 1), by_options.stderr + by_file.stderr
    assert by_options.json["requirements"] == by_file.json["requirements"]
    assert by_file.json["requirements"]["min_h2d_gbps"] == 1.5 and by_file.json["requirements"]["require_cudnn"]
    ignored = [
        {f["code"]: f.get("ignored_by") for f in r.json["findings"] if f.get("ignored")} for r in (by_options, by_file)
    ]
    assert set(ignored[0]) == set(ignored[1]) and ignored[0]  # the same findings, ignored by option or by file
    assert all(c == "CD147" or not c.startswith(("CD1", "CD5")) for c in ignored[0])
