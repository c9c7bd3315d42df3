"""--redact: host names and GPU UUIDs go, fix commands stay."""

from __future__ import annotations


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
