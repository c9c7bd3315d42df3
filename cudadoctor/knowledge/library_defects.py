"""CUDA library releases that give silently wrong results on some GPUs, and the release that fixes each.

cuBLAS now ships patch releases apart from the toolkit (the `nvidia-cublas` wheel), so the version torch
loads, not torch's CUDA version, says whether a defect applies.

Sources:
- cuBLAS TMEM defect: pytorch PR#178333 "Add cublas drop-in fix for 13.0" ("cuBLAS may return silent wrong
  results/NaNs under concurrent workloads (overlapping streams) when TMEM is used on the same SM"; cuBLAS
  13.1.0.3 "for 13.0 builds"), quoting the cuBLAS patch release notes,
  https://docs.nvidia.com/cuda/cublas-patch-release-notes/ : "Fixed an issue in cublasLtMatmul() that could
  lead to incorrect results when it ran concurrently with another kernel that used Tensor Memory. This
  issue affected only algorithms with CUBLASLT_ALGO_CONFIG_ID equal to 66 on GPUs with Compute Capability
  10.x and 11.x, and had existed since cuBLAS 12.8." No fixed 12.x release is named there, so cuBLAS 12.x
  is not judged (unknown is not false).
"""

from __future__ import annotations

from dataclasses import dataclass

from cudadoctor.knowledge.versions import parse_version


@dataclass(frozen=True)
class LibraryDefect:
    family: str  # the library family as backends/libraries.py names it
    major: int  # the library release line this row judges
    fixed: str  # the first release of that line without the defect
    cc_majors: tuple[int, ...]  # GPUs affected, by compute-capability major
    what: str  # one sentence for the report
    source: str


DEFECTS: tuple[LibraryDefect, ...] = (
    LibraryDefect(
        family="cublas",
        major=13,
        fixed="13.1.0.3",
        cc_majors=(10, 11),
        what="cublasLt matmuls can return wrong results or NaNs, without any error, when they run "
        "concurrently with another kernel that uses Tensor Memory (overlapping streams)",
        source="cuBLAS patch release notes; pytorch PR#178333",
    ),
)


def affected(family: str, version: str | None, cc: str | None) -> LibraryDefect | None:
    """The defect a library release has on a GPU of capability cc; None when none applies or either is
    unknown (a version without its patch numbers, "13", says nothing)."""
    have = parse_version(version) if version and version.count(".") >= 2 else None
    if have is None or not cc:
        return None
    try:
        cc_major = int(cc.split(".")[0])
    except ValueError:
        return None
    for d in DEFECTS:
        if d.family == family and have[0] == d.major and cc_major in d.cc_majors:
            fixed = parse_version(d.fixed)
            # "13.1.0" may be 13.1.0.3, the fix: a version shorter than the fix's says nothing past its parts
            if fixed is not None and have < fixed and not (len(have) < len(fixed) and have == fixed[: len(have)]):
                return d
    return None
