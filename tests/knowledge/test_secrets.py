"""Secrets masked in command lines (`cudadoctor gpus`) and in environment values in reports, including
those an adversarial tester slipped past, each with its harmless look-alike that must stay readable."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cudadoctor.backends.host import relevant_env
from cudadoctor.knowledge.secrets import mask_secrets, mask_value
from tests.conftest import H100_HEALTHY, ROOT, fake_machine_env
from tests.helpers import PY


@pytest.mark.parametrize(
    "command,expected",
    [
        # options that take a key
        ("python s.py --key K3yV4lue", "python s.py --key ***"),
        ("python s.py --access-key K3yV4lue --bucket b", "python s.py --access-key *** --bucket b"),
        ("aws --secret-key=K3yV4lue", "aws --secret-key=***"),
        ("python s.py --apiKey K3yV4lue", "python s.py --apiKey ***"),
        ("mysql --password 'hunter 2' db", "mysql --password *** db"),
        # env-style assignments in a command line
        ("env TOKEN=K3yV4lue python t.py", "env TOKEN=*** python t.py"),
        ("env HF_TOKEN=K3yV4lue python t.py", "env HF_TOKEN=*** python t.py"),
        ("docker run -e AWS_SECRET_ACCESS_KEY=K3yV4lue img", "docker run -e AWS_SECRET_ACCESS_KEY=*** img"),
        ("env AZURE_CLIENT_SECRET=K3yV4lue x", "env AZURE_CLIENT_SECRET=*** x"),
        ("env PASSWORD=K3yV4lue PGPASSWORD=K3yV4lue x", "env PASSWORD=*** PGPASSWORD=*** x"),
        ("docker run --env=WANDB_API_KEY=K3yV4lue img", "docker run --env=WANDB_API_KEY=*** img"),
        ("docker run -e 'DB_PASSWORD=a K3yV4lue' img", "docker run -e 'DB_PASSWORD=***' img"),  # shlex.join form
        ("python train.py +hub.hf_token=K3yV4lue", "python train.py +hub.hf_token=***"),  # hydra override
        # HTTP authorization headers
        ("curl -H 'Authorization: Bearer K3yV4lue' https://h/x", "curl -H 'Authorization: Bearer ***' https://h/x"),
        ("curl -H Authorization: Basic K3yV4lue https://h/x", "curl -H Authorization: Basic *** https://h/x"),
        ('curl -H "Authorization: token K3yV4lue" https://h', 'curl -H "Authorization: token ***" https://h'),
        ("curl -H 'authorization:K3yV4lue' https://h", "curl -H 'authorization:***' https://h"),
        ("curl -H 'X-API-Key: K3yV4lue' https://h", "curl -H 'X-API-Key: ***' https://h"),
        ("curl -H 'PRIVATE-TOKEN: K3yV4lue' https://h", "curl -H 'PRIVATE-TOKEN: ***' https://h"),
    ],
)
def test_secret_arguments_are_masked_and_the_rest_kept(command, expected):
    assert mask_secrets(command) == expected


@pytest.mark.parametrize(
    "url,expected",
    [
        ("https://u:pa/ss@host/simple", "https://***@host/simple"),
        ("https://u:p@ss@host/simple", "https://***@host/simple"),
        ("https://u:p#ss@host/simple", "https://***@host/simple"),
        ("https://u:p?ss@host:8443/simple", "https://***@host:8443/simple"),
        ("https://u:p/a@b/c@host/simple", "https://***@host/simple"),
        ("redis://:pa/ss@cache:6379/0", "redis://***@cache:6379/0"),
        ("git+https://oauth2:K3y/V4l@gitlab.example.com/g/r.git", "git+https://***@gitlab.example.com/g/r.git"),
    ],
)
def test_url_passwords_with_any_character_are_masked(url, expected):
    assert mask_secrets(f"pip install --index-url {url} torch") == f"pip install --index-url {expected} torch"


@pytest.mark.parametrize(
    "query",
    [
        "private_token=K3yV4lue",
        "X-Amz-Signature=K3yV4lue",
        "X-Amz-Credential=AKID%2F20240101%2Fus-east-1",
        "X-Amz-Security-Token=K3yV4lue",
        "client_secret=K3yV4lue",
        "sig=K3yV4lue",  # Azure SAS
        "signature=K3yV4lue",
        "access_token=K3yV4lue",
    ],
)
def test_query_string_credentials_are_masked(query):
    name = query.split("=")[0]
    masked = mask_secrets(f"curl 'https://h/f?sv=2022&{query}&se=2030'")
    assert masked == f"curl 'https://h/f?sv=2022&{name}=***&se=2030'"


@pytest.mark.parametrize(
    "command",
    [
        "make --keep-going",
        "python train.py --tokenizer gpt2 --max-tokens 5 --max_new_tokens 64",
        "python serve.py --key-file /etc/ssl/server.key --token-file ~/.hf/token",
        "uvicorn app --key /etc/ssl/private/server.key",  # a file path says where a secret is, not what
        "python train.py --pad-token <pad> --eos_token </s> --text-key caption --sort-key len",
        "python train.py --author bob --auth-type basic --no-auth --model m",
        "python t.py --use-auth-token --model gpt2",  # a switch: the next option is not its value
        "env TOKENIZERS_PARALLELISM=false MAX_TOKENS=5 CUDA_VISIBLE_DEVICES=0 python t.py",
        "env GOOGLE_APPLICATION_CREDENTIALS=/secrets/sa.json python t.py",
        "curl -H 'Content-Type: application/json' 'https://h/x?token_type=bearer&key_id=k1&page=2'",
        "pip install --index-url https://host:8080/simple/@scope/pkg torch",
        "git clone https://host/org/repo.git --depth 1",
        "curl 'https://h/x?email=a@b.com'",
    ],
)
def test_harmless_look_alikes_are_kept(command):
    assert mask_secrets(command) == command


def test_masking_is_stable_when_applied_twice():
    text = "env HF_TOKEN=x curl -H 'Authorization: Bearer y' https://u:p/q@h/s?sig=z --key k"
    once = mask_secrets(text)
    assert mask_secrets(once) == once
    assert all(s not in once for s in ("=x ", "Bearer y", "p/q", "sig=z", "--key k"))


INDEX_VARIABLES = (
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_FIND_LINKS",
)


@pytest.mark.parametrize("name", INDEX_VARIABLES)
def test_every_index_url_variable_is_masked_at_collection(name):
    env = relevant_env({name: "https://h/simple?private_token=SECRETQ4 https://u:pa/ss@h2/simple"})
    assert env == {name: "https://h/simple?private_token=*** https://***@h2/simple"}


def test_uv_index_lists_named_urls_each_masked():
    value = "mine=https://u:pa/ss@h/simple other=https://h2/s?X-Amz-Signature=SIG last=https://t:K3y@h3/s"
    masked = "mine=https://***@h/simple other=https://h2/s?X-Amz-Signature=*** last=https://***@h3/s"
    assert mask_value("UV_INDEX", value) == masked


def test_a_report_does_not_hold_an_index_token_even_redacted(fake_libs, tmp_path):
    machine = tmp_path / "m.txt"
    machine.write_text(H100_HEALTHY)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CUDA_VISIBLE", "FAKE_NVML", "UV_", "PIP_"))},
        "PYTHONPATH": str(ROOT),
        **fake_machine_env(machine, list(fake_libs)),
        "UV_INDEX_URL": "https://h/simple?private_token=SECRETQ4",
    }
    for extra in ([], ["--redact"]):
        p = subprocess.run(
            [sys.executable, "-m", "cudadoctor", "check", "--json", *extra],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert "SECRETQ4" not in p.stdout + p.stderr
        shown = json.loads(p.stdout)["facts"]["system"]["env"]["UV_INDEX_URL"]
        assert shown == "https://h/simple?private_token=***"  # the index itself stays readable


def test_secrets_are_masked_at_collection():
    env = relevant_env(
        {
            "CUDA_TOKEN": "x",
            "PIP_INDEX_URL": "https://u:p@h/simple",
            "HOME": "/root",
            "CUDA_VISIBLE_DEVICES": "0",
        }
    )
    assert env == {"CUDA_TOKEN": "***", "PIP_INDEX_URL": "https://***@h/simple", "CUDA_VISIBLE_DEVICES": "0"}
    assert mask_value("NCCL_PASSWORD", "x") == "***"


@pytest.mark.parametrize(
    "command,secret",
    [
        ("python train.py --token abc123XYZ", "abc123XYZ"),
        ("python train.py --api-key=abc123XYZ", "abc123XYZ"),
        ("python x.py hf_abcdefghijklmnopqrstuv", "hf_abcdefghijklmnopqrstuv"),
        ("python x.py sk-proj-abcdefghijklmnop", "sk-proj-abcdefghijklmnop"),
        ("aws AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP"),
        ("git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123@github.com/x/y", "ghp_abcdefghijklmnopqrstuvwxyz0123"),
        ("pip install --index-url https://user:pa55w0rd@host/simple x", "pa55w0rd"),
        ("curl https://host/x?access_token=abc123XYZ&y=1", "abc123XYZ"),
    ],
)
def test_secret_looking_arguments_are_masked(command, secret):
    masked = mask_secrets(command)
    assert secret not in masked and "***" in masked
    assert masked.split()[0] == command.split()[0]  # the rest is kept


def test_query_string_credentials_in_the_environment_are_masked():
    assert (
        mask_value("PIP_EXTRA_INDEX_URL", "https://host/simple?access_token=SECRET")
        == "https://host/simple?access_token=***"
    )
    assert mask_value("HF_TOKEN", "hf_x") == "***"


def test_gpus_masks_process_command_lines(fake_libs, tmp_path):
    sleeper = subprocess.Popen(
        [PY, "-c", "import time; time.sleep(60)", "--token", "TOPSECRET123", "hf_abcdefghijklmnop"]
    )
    try:
        machine = tmp_path / "m.txt"
        machine.write_text(H100_HEALTHY + f"process gpu=0 pid={sleeper.pid} mem=1073741824\n")
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            **fake_machine_env(machine, [fake_libs[0]]),
        }
        for args in (["gpus"], ["gpus", "--json"], ["gpus", "--wide"]):
            p = subprocess.run([PY, "-m", "cudadoctor", *args], capture_output=True, text=True, env=env, timeout=30)
            assert p.returncode == 0, p.stderr
            assert "TOPSECRET123" not in p.stdout and "hf_abcdefghijklmnop" not in p.stdout
            if args != ["gpus"]:  # (the 80-column table cuts the command line before it)
                assert "--token ***" in p.stdout
    finally:
        sleeper.kill()
