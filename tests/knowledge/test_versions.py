"""The integer encodings of CUDA and cuDNN versions, and version comparison."""

from __future__ import annotations

from cudadoctor.knowledge.versions import cuda_int_to_str, cudnn_int_to_str, version_at_least


def test_version_encodings():
    assert cuda_int_to_str(12020) == "12.2" and cuda_int_to_str(13030) == "13.3"
    assert cudnn_int_to_str(90100) == "9.1.0" and cudnn_int_to_str(91002) == "9.10.2"
    assert cudnn_int_to_str(8902) == "8.9.2"
    assert version_at_least("535.104.05", "525.60.13") is True
    assert version_at_least("570.26", "570.26.0") is True  # two-part Linux versions pad with 0
    assert version_at_least("576.57", "580") is False
    assert version_at_least(None, "1") is None
