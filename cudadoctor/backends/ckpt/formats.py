"""Which format a checkpoint file or directory is, and what each format's reader finds in it.

Formats, as torch.serialization and safetensors write them:
- torch zip (torch >= 1.6): `<archive>/data.pkl` + `<archive>/data/<key>` records; TorchScript has
  `constants.pkl` (torch.serialization._is_torchscript_zip).
- legacy torch pickle: pickles in a row: MAGIC_NUMBER 0x1950a86a20f9469cfc6c, protocol version, sys
  info, the object, the storage keys; then raw storages (torch.serialization._legacy_save).
- safetensors: 8-byte little-endian header length N, N bytes of JSON header, data (the format's spec);
  the library refuses N > 100,000,000 with "HeaderTooLarge".
- DCP: a directory with `.metadata` (a pickle of torch.distributed.checkpoint.metadata.Metadata) and
  `*.distcp` files. HF sharded: `*.index.json` with `weight_map` {key: shard file}.
- Git LFS pointer: "version https://git-lfs.github.com/spec/v1", "oid sha256:…", "size N".
"""

from __future__ import annotations

import json
import os
import re
import stat
import struct
import zipfile
from typing import Any

from cudadoctor.backends.children._cudadoctor_child import ST_DTYPES
from cudadoctor.backends.ckpt.pickles import ITEMSIZE, Call, Global, PickleScan, audit_globals, scan_pickle
from cudadoctor.backends.ckpt.structure import (
    _items,
    _numel,
    _size,
    detect_prefixes,
    state_dict_keys,
    structure,
)
from cudadoctor.facts.ckpt import CkptFacts, CkptTensor, Content

SAFETENSORS_MAX_HEADER = 100_000_000  # safetensors' MAX_HEADER_SIZE
SNIFF = 4096

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


class InputError(ValueError):
    """A one-line reason why the path cannot be inspected at all (missing, unreadable, not a checkpoint)."""


# ---------------------------------------------------------------------------------------------- sniffing


def _read_head(path: str, n: int = SNIFF) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(n)


def is_lfs_pointer(head: bytes) -> bool:
    return head.startswith(b"version https://git-lfs.github.com/spec/")


def _lfs(head: bytes, facts: CkptFacts) -> None:
    text = head.decode("utf-8", "replace")
    oid = re.search(r"^oid sha256:([0-9a-f]{64})", text, re.M)
    size = re.search(r"^size (\d+)", text, re.M)
    facts.lfs_oid = oid.group(1) if oid else None
    facts.lfs_size = int(size.group(1)) if size else None


def _texty(head: bytes) -> bool:
    if not head or b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # a multi-byte character cut at the end is fine
            return False
    return True


def _html(head: bytes) -> bool:
    lowered = head[:1024].lstrip().lower()
    return lowered.startswith((b"<!doctype html", b"<html", b"<head", b"<?xml")) or b"<html" in lowered[:512]


def _title(head: bytes) -> str | None:
    m = re.search(rb"<title[^>]*>(.*?)</title>", head, re.S | re.I)
    if not m:
        return None
    return " ".join(m.group(1).decode("utf-8", "replace").split())[:120] or None


def inspect_path(path: str) -> CkptFacts:
    """Everything that can be known about `path` without torch; InputError for unusable input."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        return _inspect_dir(path)
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"cannot read {path}: not a regular file")
    facts = CkptFacts(path=os.path.abspath(path), size=st.st_size)
    try:
        head = _read_head(path)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not head:
        facts.format = "empty"
        return facts
    if is_lfs_pointer(head):
        facts.format = "lfs-pointer"
        _lfs(head, facts)
        return facts
    if head.startswith(b"PK"):
        _inspect_zip(path, facts)
        return facts
    if path.endswith(".json") or head.lstrip().startswith(b"{"):
        if _hf_index_file(path, head, facts):
            return facts
    if (len(head) >= 9 and head[8:9] == b"{") or path.endswith(".safetensors"):
        _inspect_safetensors(path, head, facts)
        if facts.format == "safetensors" or path.endswith(".safetensors"):
            return facts
    if head[:1] == b"\x80":
        _inspect_legacy(path, facts)
        return facts
    if _html(head):
        facts.format = "html"
        facts.text_title = _title(head)
        return facts
    if _texty(head):
        facts.format = "text"
        facts.text_head = head[:200].decode("utf-8", "replace").strip().splitlines()[0][:120] if head.strip() else ""
        return facts
    if head.startswith(b"\x1f\x8b"):
        facts.format = "unknown"
        facts.detail = "a gzip archive"
        return facts
    facts.format = "unknown"
    return facts


def _inspect_zip(path: str, facts: CkptFacts) -> None:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        facts.format = "corrupt"
        facts.detail = f"a zip archive that cannot be opened ({exc}): truncated or damaged"
        facts.expected_format = "torch zip"
        return
    with zf:
        names = zf.namelist()
        data_pkl = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
        if any(n.endswith("constants.pkl") for n in names):
            facts.format = "torchscript"
            facts.detail = f"{len(names)} records"
            return
        if not data_pkl:
            facts.format = "unknown"
            facts.detail = "a zip archive without data.pkl (not written by torch.save)"
            return
        facts.format = "torch-zip"
        prefix = data_pkl[0][: -len("data.pkl")]
        for info in zf.infolist():
            end = info.header_offset + info.compress_size + 30 + len(info.filename.encode()) + len(info.extra)
            if end > (facts.size or 0):
                facts.format = "corrupt"
                facts.expected_format = "torch zip"
                facts.detail = f"record {info.filename} ends past the end of the file: truncated"
                return
        try:
            with zf.open(data_pkl[0]) as fh:
                scan = scan_pickle(fh)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            facts.format = "corrupt"
            facts.expected_format = "torch zip"
            facts.detail = f"data.pkl cannot be read ({exc})"
            return
        storages = _apply_scan(scan, facts)
        if facts.format == "corrupt":
            return
        sizes = {n[len(prefix) + 5 :]: zf.getinfo(n).file_size for n in names if n.startswith(prefix + "data/")}
        facts.tensor_bytes = sum(sizes.values()) if sizes else facts.tensor_bytes
        missing = [k for k in storages if k not in sizes]
        if missing:
            facts.format = "corrupt"
            facts.expected_format = "torch zip"
            facts.detail = f"{len(missing)} storage record(s) missing from the archive (data/{missing[0]})"


def _apply_scan(scan: PickleScan, facts: CkptFacts) -> dict:
    facts.globals = scan.globals
    facts.unsafe_globals, facts.dangerous_globals = audit_globals(scan.globals)
    facts.audit_dynamic = scan.dynamic
    if scan.error:
        facts.format = "corrupt"
        facts.expected_format = facts.expected_format or "torch zip"
        facts.detail = f"the pickle cannot be read: {scan.error}"
        return {}
    return structure(scan.root, facts)


def _inspect_legacy(path: str, facts: CkptFacts) -> None:
    with open(path, "rb") as fh:
        magic = scan_pickle(fh, limit=1 << 16)
        if magic.error or magic.root != LEGACY_MAGIC:
            fh.seek(0)
            scan = scan_pickle(fh)
            facts.format = "pickle"
            facts.detail = "a plain pickle, not written by torch.save"
            _apply_scan(scan, facts)
            if scan.error:
                facts.expected_format = "pickle"
            return
        facts.format = "torch-legacy"
        for _ in range(2):  # protocol version, sys_info
            part = scan_pickle(fh, limit=1 << 16)
            if part.error:
                facts.format = "corrupt"
                facts.expected_format = "torch legacy"
                facts.detail = f"the header cannot be read: {part.error}"
                return
        scan = scan_pickle(fh)
        storages = _apply_scan(scan, facts)
        if facts.format == "corrupt":
            facts.expected_format = "torch legacy"
            return
        keys = scan_pickle(fh, limit=64 << 20)
        if keys.error:
            facts.format = "corrupt"
            facts.expected_format = "torch legacy"
            facts.detail = "the storage list after the object cannot be read: truncated"
            return
        data_start = fh.tell()
    # each storage follows as an 8-byte element count and its bytes
    need = sum(8 + (n or 0) * ITEMSIZE.get(d or "", 1) for d, n, _ in storages.values())
    if facts.size is not None and data_start + need > facts.size:
        facts.format = "corrupt"
        facts.expected_format = "torch legacy"
        facts.detail = f"the storages need {need} bytes after the header but the file has {facts.size - data_start}"


def _inspect_safetensors(path: str, head: bytes, facts: CkptFacts) -> None:
    size = facts.size or 0
    if len(head) < 8:
        facts.format = "corrupt"
        facts.expected_format = "safetensors"
        facts.detail = "shorter than the 8-byte header length"
        return
    (n,) = struct.unpack("<Q", head[:8])
    facts.safetensors_header_len = n
    if n > SAFETENSORS_MAX_HEADER:
        facts.format = "corrupt"
        facts.expected_format = "safetensors"
        facts.header_too_large = True
        facts.detail = f"the header length field says {n} bytes (safetensors: HeaderTooLarge)"
        return
    if 8 + n > size:
        facts.format = "corrupt"
        facts.expected_format = "safetensors"
        facts.detail = f"the header needs {8 + n} bytes but the file has {size}: truncated"
        return
    with open(path, "rb") as fh:
        fh.seek(8)
        raw = fh.read(n)
    try:
        header = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        facts.format = "corrupt"
        facts.expected_format = "safetensors"
        facts.detail = f"the JSON header is invalid ({str(exc)[:80]})"
        return
    if not isinstance(header, dict):
        facts.format = "corrupt"
        facts.expected_format = "safetensors"
        facts.detail = "the JSON header is not an object"
        return
    facts.format = "safetensors"
    meta = header.pop("__metadata__", None)
    facts.safetensors_metadata = {str(k): str(v)[:200] for k, v in meta.items()} if isinstance(meta, dict) else None
    tensors = []
    end = 0
    total = 0
    for name, info in header.items():
        if not isinstance(info, dict):
            continue
        offsets = info.get("data_offsets") or [0, 0]
        shape = info.get("shape")
        dtype = ST_DTYPES.get(str(info.get("dtype")), str(info.get("dtype")).lower())
        tensors.append(
            CkptTensor(name=name, dtype=dtype, shape=shape if isinstance(shape, list) else None, device=None)
        )
        if isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets):
            end = max(end, offsets[1])
            total += offsets[1] - offsets[0]
    facts.tensors = tensors
    facts.tensor_count = len(tensors)
    facts.tensor_bytes = total
    facts.storage_count = len(tensors)
    facts.dtypes = {}
    for t in tensors:
        facts.dtypes[t.dtype or "unknown"] = facts.dtypes.get(t.dtype or "unknown", 0) + 1
    facts.storage_devices = {}
    facts.globals = []
    facts.unsafe_globals = []
    facts.dangerous_globals = []
    facts.contents = [Content(key="", kind="state dict", detail=None)]
    facts.state_dict_key = ""
    facts.state_dict_keys = [t.name for t in tensors]
    facts.prefixes = detect_prefixes(facts.state_dict_keys)
    if 8 + n + end > size:
        facts.format = "corrupt"
        facts.expected_format = "safetensors"
        facts.detail = f"the header describes {8 + n + end} bytes but the file has {size}: truncated"


def _hf_index_file(path: str, head: bytes, facts: CkptFacts) -> bool:
    if not path.endswith(".index.json"):
        return False
    try:
        if (facts.size or 0) > 64 << 20:
            return False
        with open(path, "rb") as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict) or not isinstance(data.get("weight_map"), dict):
        return False
    _hf_index(path, data, facts)
    return True


def _hf_index(index_path: str, data: dict, facts: CkptFacts) -> None:
    facts.format = "hf-index"
    facts.index_file = os.path.abspath(index_path)
    base = os.path.dirname(os.path.abspath(index_path))
    weight_map = {str(k): str(v) for k, v in data["weight_map"].items()}
    shards = sorted(set(weight_map.values()))
    facts.shards = shards
    facts.missing_shards = [s for s in shards if not os.path.isfile(os.path.join(base, s))]
    total = (data.get("metadata") or {}).get("total_size") if isinstance(data.get("metadata"), dict) else None
    facts.tensor_bytes = total if isinstance(total, int) and total > 0 else None
    present = [os.path.join(base, s) for s in shards if s not in facts.missing_shards]
    facts.size = sum(os.path.getsize(p) for p in present) + (facts.size or 0)
    # per-shard problems (an LFS pointer for a shard, a truncated shard)
    tensors: list[CkptTensor] = []
    bad: list[str] = []
    for s in shards:
        if s in facts.missing_shards:
            continue
        try:
            shard = inspect_path(os.path.join(base, s))
        except InputError:
            bad.append(f"{s}: unreadable")
            continue
        if shard.format not in ("safetensors", "torch-zip", "torch-legacy"):
            why = "a Git LFS pointer" if shard.format == "lfs-pointer" else (shard.detail or shard.format)
            bad.append(f"{s}: {why}")
            if shard.format == "lfs-pointer":
                facts.lfs_shards = (facts.lfs_shards or 0) + 1
        else:
            tensors.extend(shard.tensors or [])
            if facts.tensor_bytes is None or not isinstance(total, int) or total <= 0:
                facts.tensor_bytes = (facts.tensor_bytes or 0) + (shard.tensor_bytes or 0)
            for name in shard.unsafe_globals or []:
                if name not in (facts.unsafe_globals or []):
                    facts.unsafe_globals = [*(facts.unsafe_globals or []), name]
            for dev, n in (shard.storage_devices or {}).items():
                facts.storage_devices = facts.storage_devices or {}
                facts.storage_devices[dev] = facts.storage_devices.get(dev, 0) + n
    facts.bad_shards = bad
    if facts.unsafe_globals is None and not bad and not facts.missing_shards:
        facts.unsafe_globals = []
        facts.dangerous_globals = []
    elif facts.unsafe_globals is not None:
        facts.dangerous_globals = audit_globals(facts.unsafe_globals)[1]
    by_name = {t.name: t for t in tensors}
    facts.tensors = [by_name.get(k) or CkptTensor(name=k, dtype=None, shape=None, device=None) for k in weight_map]
    facts.tensor_count = len(weight_map)
    facts.dtypes = {}
    for t in facts.tensors:
        facts.dtypes[t.dtype or "unknown"] = facts.dtypes.get(t.dtype or "unknown", 0) + 1
    facts.contents = [Content(key="", kind="state dict", detail=f"{len(shards)} shards")]
    facts.state_dict_key = ""
    facts.state_dict_keys = list(weight_map)
    facts.prefixes = detect_prefixes(facts.state_dict_keys)


def _inspect_dir(path: str) -> CkptFacts:
    facts = CkptFacts(path=os.path.abspath(path))
    try:
        names = os.listdir(path)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if ".metadata" in names:
        facts.format = "dcp"
        files = [n for n in names if n.endswith(".distcp")]
        facts.shards = sorted(files)
        facts.size = sum(os.path.getsize(os.path.join(path, n)) for n in [*files, ".metadata"])
        try:
            with open(os.path.join(path, ".metadata"), "rb") as fh:
                scan = scan_pickle(fh)
        except OSError as exc:
            raise InputError(f"cannot read {path}/.metadata: {exc.strerror or exc}") from None
        facts.globals = scan.globals
        if scan.error:
            facts.format = "corrupt"
            facts.expected_format = "dcp"
            facts.detail = f".metadata cannot be read: {scan.error}"
            return facts
        _dcp_tensors(scan.root, facts)
        return facts
    indexes = sorted(n for n in names if n.endswith(".index.json"))
    if indexes:
        # prefer safetensors when both are there, as transformers does
        pick = next((n for n in indexes if "safetensors" in n), indexes[0])
        index_path = os.path.join(path, pick)
        try:
            with open(index_path, "rb") as fh:
                data = json.loads(fh.read(64 << 20))
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read {index_path}: {exc}") from None
        if isinstance(data, dict) and isinstance(data.get("weight_map"), dict):
            _hf_index(index_path, data, facts)
            return facts
    singles = [
        n
        for n in ("model.safetensors", "pytorch_model.bin", "model.pt", "model.pth", "checkpoint.pt")
        if os.path.isfile(os.path.join(path, n))
    ]
    if singles:
        inner = inspect_path(os.path.join(path, singles[0]))
        return inner
    raise InputError(f"{path} is a directory without a checkpoint (no .metadata, *.index.json or model file)")


def _dcp_tensors(root: Any, facts: CkptFacts) -> None:
    state = root.state if isinstance(root, Call) else None
    sdm = _items(state.get("state_dict_metadata")) if isinstance(state, dict) else None
    if sdm is None:
        return
    tensors = []
    for fqn, meta in sdm.items():
        ms = meta.state if isinstance(meta, Call) and isinstance(meta.state, dict) else {}
        props = ms.get("properties")
        ps = props.state if isinstance(props, Call) else None
        first = ps.get("dtype") if isinstance(ps, dict) else (ps[0] if isinstance(ps, tuple) and ps else None)
        dtype = first.name if isinstance(first, Global) else None
        size = _size(ms.get("size"))
        shape = list(size) if isinstance(size, (list, tuple)) else None
        if shape is None and "size" not in ms:
            continue  # a BytesStorageMetadata: not a tensor
        tensors.append(CkptTensor(name=str(fqn), dtype=dtype, shape=shape, device=None))
    facts.tensors = tensors
    facts.tensor_count = len(tensors)
    facts.dtypes = {}
    total = 0
    for t in tensors:
        facts.dtypes[t.dtype or "unknown"] = facts.dtypes.get(t.dtype or "unknown", 0) + 1
        if t.shape is not None and t.dtype in ITEMSIZE:
            total += (_numel(t.shape) or 0) * ITEMSIZE[t.dtype]
    facts.tensor_bytes = total
    heads = sorted({t.name.split(".", 1)[0] for t in tensors})
    facts.contents = [Content(key=h, kind="dcp entry", detail=None) for h in heads]
    if "model" in heads:
        facts.state_dict_key = "model"
    elif len(heads) > 1 or not tensors:
        facts.state_dict_key = None
    else:
        facts.state_dict_key = ""
    facts.state_dict_keys = state_dict_keys(facts)
    facts.prefixes = detect_prefixes(facts.state_dict_keys)
