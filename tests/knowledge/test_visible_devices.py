"""CUDA_VISIBLE_DEVICES parsing, as CUDA does it: examples and properties."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cudadoctor.facts import (
    MigInstance,
    NvmlDevice,
)
from cudadoctor.knowledge.visibility import enumeration_order, from_env, parse
from cudadoctor.report import build
from cudadoctor.rules import evaluate
from tests.facts_fixtures import gpu, healthy, linux
from tests.helpers import by_code, doctor


def dev(i: int, name: str = "NVIDIA A100-SXM4-80GB", cc: str = "8.0", total: int = 80) -> NvmlDevice:
    return NvmlDevice(
        index=i,
        name=name,
        compute_capability=cc,
        uuid=f"GPU-{i:x}{i:x}aa0000-1111-2222-3333-444455556666",
        pci_bus_id=f"00000000:{0x10 + i:02X}:00.0",
        memory_total=total << 30,
        memory_free=total << 30,
    )


FOUR = [dev(i) for i in range(4)]
H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"


def nvml(vis):
    return [s.device.index for s in vis.selected]


def test_unset_shows_all_in_pci_order():
    assert nvml(parse(None, FOUR)) == [0, 1, 2, 3]


def test_indices_reorder():
    vis = parse("2,0", FOUR)
    assert nvml(vis) == [2, 0] and [s.ordinal for s in vis.selected] == [0, 1]


def test_empty_and_minus_one_hide_all():
    assert parse("", FOUR).hides_all
    assert parse("-1", FOUR).hides_all


def test_parsing_stops_at_first_invalid_entry():
    vis = parse("1,7,2", FOUR)
    assert nvml(vis) == [1]
    assert vis.invalid_entry == "7" and vis.ignored == ["7", "2"]


def test_duplicate_invalidates_the_whole_list():
    vis = parse("0,1,0", FOUR)
    assert vis.hides_all and vis.duplicate == "0"
    # the same device by index and by UUID is a duplicate too
    assert parse(f"1,{FOUR[1].uuid}", FOUR).duplicate is not None


def test_uuid_prefixes():
    assert nvml(parse("GPU-22aa,GPU-33", FOUR)) == [2, 3]
    assert parse("GPU-", FOUR).hides_all  # no prefix at all matches nothing
    ambiguous = [dev(1), dev(2)]
    ambiguous[1].uuid = ambiguous[0].uuid[:-1] + "7"
    assert parse(ambiguous[0].uuid[:10], ambiguous).hides_all  # a prefix must name one device


def test_mig_uuid():
    d = dev(0)
    d.mig_enabled = True
    d.mig_instances = [MigInstance(0, "MIG-aaaa"), MigInstance(1, "MIG-bbbb")]
    vis = parse("MIG-bbbb", [d])
    assert vis.selected[0].mig_uuid == "MIG-bbbb"


def test_whitespace_around_entries_is_tolerated():
    assert nvml(parse(" 1 , 0", FOUR)) == [1, 0]


def test_mixed_models_fastest_first_is_estimated_and_pci_bus_id_is_exact():
    mixed = [dev(0, "NVIDIA GeForce RTX 3060", "8.6", 12), dev(1, "NVIDIA GeForce RTX 4090", "8.9", 24)]
    fast = parse("0", mixed)
    assert fast.order_estimated and nvml(fast) == [1]  # cuda:0 is the 4090, nvidia-smi's GPU 1
    pci = parse("0", mixed, "PCI_BUS_ID")
    assert not pci.order_estimated and nvml(pci) == [0]


entries = st.one_of(
    st.integers(min_value=-2, max_value=6).map(str),
    st.sampled_from([d.uuid[:8] for d in FOUR] + ["GPU-ffff", "MIG-x", "", "abc"]),
)


@given(st.lists(entries, max_size=6))
def test_properties(tokens):
    raw = ",".join(tokens)
    vis = parse(raw, FOUR)
    chosen = nvml(vis)
    # never more devices than exist, never the same device twice
    assert len(chosen) == len(set(chosen)) <= len(FOUR)
    # ordinals are 0..n-1 in order
    assert [s.ordinal for s in vis.selected] == list(range(len(chosen)))
    if vis.duplicate is not None:
        assert chosen == []
    elif vis.invalid_entry is not None:
        # everything before the invalid entry was used, nothing after it
        position = len(raw.split(",")) - len(vis.ignored)
        assert len(chosen) == position
    else:
        assert len(chosen) == len(raw.split(","))


@given(st.permutations(range(4)))
def test_a_permutation_selects_exactly_those_devices(perm):
    assert nvml(parse(",".join(map(str, perm)), FOUR)) == list(perm)


def four_h100s_one_unknown(**unknown: None) -> list:
    devs = [gpu(i, H100, "9.0") for i in range(4)]
    devs[0] = dataclasses.replace(devs[0], **unknown)
    return devs


def test_one_unknown_capability_on_identical_gpus_keeps_pci_order() -> None:
    for unknown in ({"compute_capability": None}, {"name": None}, {"name": None, "compute_capability": None}):
        devs = four_h100s_one_unknown(**unknown)
        order, estimated = enumeration_order(devs, "FASTEST_FIRST")
        assert [d.index for d in order] == [0, 1, 2, 3] and not estimated
        facts = healthy(devs)
        facts.system = linux(env={"CUDA_VISIBLE_DEVICES": "1"})
        by = by_code(evaluate(facts, []))
        assert "CD304" not in by  # not "Mixed GPU models (NVIDIA H100 80GB HBM3)"
        rows = by["CD300"].tables[0].rows
        assert [r[:2] for r in rows] == [["cuda:0", "1"]]  # CUDA_VISIBLE_DEVICES=1 is nvidia-smi's GPU 1
        assert "estimated" not in by["CD300"].title


def test_two_known_models_are_still_estimated_with_an_unknown_third() -> None:
    devs = [gpu(0, A100, "8.0"), gpu(1, H100, "9.0"), dataclasses.replace(gpu(2, H100, "9.0"), name=None)]
    order, estimated = enumeration_order(devs, "FASTEST_FIRST")
    assert estimated and order[0].index == 1  # Hopper before Ampere
    by = by_code(evaluate(healthy(devs), []))
    assert "CD304" in by


def mig_gpu(*uuids: str | None):
    d = gpu(0, A100, "8.0")
    d.mig_enabled = True
    d.mig_instances = [MigInstance(i, uuid=u) for i, u in enumerate(uuids)]
    return d


MIG_A = "MIG-aaaaaaaa-1111-2222-3333-444455556666"


MIG_B = "MIG-bbbbbbbb-1111-2222-3333-444455556666"


def test_a_mig_token_is_not_judged_while_a_mig_uuid_is_unknown() -> None:
    dev = mig_gpu(None)
    facts = healthy([dev])
    facts.system = linux(env={"CUDA_VISIBLE_DEVICES": MIG_A})
    found = evaluate(facts, [])
    codes = {f.code for f in found}
    assert not codes & {"CD301", "CD302", "CD303"}  # not "hides all 1 GPU"
    assert "CD305" in codes  # MIG mode is still told
    assert from_env({"CUDA_VISIBLE_DEVICES": MIG_A}, [dev]) is None  # unknown, not empty
    vis = parse(f"0,{MIG_A}", [mig_gpu(MIG_B, None)])
    assert vis.undetermined == MIG_A and not vis.hides_all and vis.invalid_entry is None
    # one instance known and named: that one is judged as before
    vis = parse(MIG_B, [mig_gpu(MIG_B, None)])
    assert [s.mig_uuid for s in vis.selected] == [MIG_B] and vis.undetermined is None
    assert build("check", facts, [], found).status.name != "PROBLEMS"


def test_an_unknown_mig_token_still_hides_every_gpu_when_every_uuid_is_known() -> None:
    facts = healthy([mig_gpu(MIG_B)])
    facts.system = linux(env={"CUDA_VISIBLE_DEVICES": MIG_A})
    assert "CD301" in {f.code for f in evaluate(facts, [])}


@pytest.mark.parametrize("raw", ["²", "①", "٣", "1" * 100_000, "0,²", "GPU-²"])
def test_cuda_visible_devices_takes_ascii_digits_only(raw):
    devices = [NvmlDevice(index=i, name="A100", uuid=f"GPU-{i}aaa", compute_capability="8.0") for i in range(2)]
    vis = parse(raw, devices)
    first = raw.split(",")[0]
    assert vis.invalid_entry is not None
    if first != "0":
        assert vis.hides_all  # an invalid first entry hides every GPU, as in CUDA
    r = doctor("check", "--skip", "torch", "--json", env={"CUDA_VISIBLE_DEVICES": raw[:20000]})
    assert "Traceback" not in r.stderr and r.returncode in (0, 1)
