"""--redact: host names and GPU UUIDs go, fix commands stay."""

from __future__ import annotations

from cudadoctor.render.redact import make_scrub
from tests.helpers import doctor


def test_redaction_covers_full_and_shortened_uuids():
    from cudadoctor.render.redact import redact

    data = {
        "facts": {"system": {"hostname": "box7", "user": "alice"}},
        "x": [
            "GPU-1a2b3c4d-1111-2222-3333-444455556666",
            "0  GPU-1a2b3c4d-  78 GiB",
            "MIG-aaaa-bbbb",
            "/home/alice/venv on box7",
            "GPU-less text",
        ],
    }
    out = redact(data, "box7", "alice")
    assert out["x"][:4] == [
        "GPU-<redacted>",
        "0  GPU-<redacted>  78 GiB",
        "MIG-<redacted>",
        "/home/<user>/venv on <host>",
    ]
    assert out["x"][4] == "GPU-less text"
    assert out["facts"]["system"] == {"hostname": "<host>", "user": "<user>"}


def test_redaction_keeps_fix_commands_and_takes_short_hosts_and_bare_uuids():
    scrub = make_scrub("gpu01.example.com", "torch")
    assert scrub("pip install torch==2.13.0", True) == "pip install torch==2.13.0"  # a user named torch
    assert (
        scrub("/home/torch/venv/bin/python -m pip install torch", True)
        == "/home/<user>/venv/bin/python -m pip install torch"
    )
    assert scrub("host gpu01 and gpu01.example.com", False) == "host <host> and <host>"
    assert scrub("uuid 3f1e9a2c-1111-2222-3333-444455556666", False) == "uuid <uuid>"
    assert scrub("GPU-3f1e9a2c", False) == "GPU-<redacted>"


def test_the_text_report_honours_redact():
    import socket

    host = socket.gethostname()
    r = doctor("check", "--skip", "torch", "--redact")
    assert r.returncode in (0, 1)
    if len(host) > 2:
        assert host not in r.stdout
    assert "<host>" in r.stdout.splitlines()[0]
