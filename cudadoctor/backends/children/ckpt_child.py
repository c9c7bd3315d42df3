"""Run as a script in the TARGET interpreter (stdlib + torch only) by `cudadoctor ckpt`: reads one JSON
request on stdin, prints one JSON line after MARK.

Never imported by cudadoctor itself. Checkpoints are loaded with weights_only=True (torch's restricted
unpickler) unless the request says the user passed --trust; inspection loads with map_location="meta",
which reads no tensor data, so a multi-GB file inspects in little memory. safetensors files are read
from their header and an mmap, without the safetensors package.
"""

import ctypes
import importlib
import json
import mmap
import os
import struct
import sys
import traceback

# the helper beside this script (also under PYTHONSAFEPATH); leave_path() takes this directory off again
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from _cudadoctor_child import ST_DTYPES, leave_path

leave_path()

MARK = "CUDADOCTOR_CKPT "

PREFIXES = ("module.", "_orig_mod.")
CHUNK = 64 << 20


def emit(out):
    sys.stdout.write(MARK + json.dumps(out) + "\n")
    sys.stdout.flush()


def first_line(exc):
    text = str(exc).strip() or type(exc).__name__
    return "%s: %s" % (type(exc).__name__, text.splitlines()[0][:400])


# ------------------------------------------------------------------------------------------ reading


def read_safetensors(torch, path):
    """{name: tensor} backed by a private (copy-on-write) mmap of the file: nothing is read up front."""
    with open(path, "rb") as fh:
        (n,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(n))
        size = os.fstat(fh.fileno()).st_size
        mm = mmap.mmap(fh.fileno(), size, access=mmap.ACCESS_COPY) if size else b""
    header.pop("__metadata__", None)
    out = {}
    for name, info in header.items():
        dtype = getattr(torch, ST_DTYPES[info["dtype"]])
        start = info["data_offsets"][0]
        shape = info["shape"]
        numel = 1
        for s in shape:
            numel *= s
        if numel == 0:
            out[name] = torch.empty(shape, dtype=dtype)
            continue
        t = torch.frombuffer(mm, dtype=dtype, count=numel, offset=8 + n + start)
        out[name] = t.reshape(shape)
    return out


def provide_main(definitions):
    """Make the classes the pickle names as `__main__.X` (the saving script's) findable by pickle here:
    import each from the .py file the doctor found it in, and set it on this process's __main__. Only
    under --trust: importing a script runs its top-level code."""
    main = sys.modules["__main__"]
    for name, path in sorted(definitions.items()):
        if hasattr(main, name):
            continue
        folder, module = os.path.split(os.path.splitext(path)[0])
        if folder not in sys.path:
            sys.path.insert(0, folder)
        setattr(main, name, getattr(importlib.import_module(module), name))


def load(torch, req, meta):
    """The checkpoint object, loaded as safely as the request allows."""
    path, fmt = req["path"], req["format"]
    if req.get("trust") and req.get("main_definitions"):
        provide_main(req["main_definitions"])
    if fmt == "safetensors":
        return read_safetensors(torch, path)
    if fmt == "hf-index":
        base = os.path.dirname(req["index_file"])
        merged = {}
        for shard in req["shards"]:
            sub = dict(req, path=os.path.join(base, shard))
            sub["format"] = "safetensors" if shard.endswith(".safetensors") else "torch"
            merged.update(load(torch, sub, meta))
        return merged
    kwargs = {"map_location": "meta" if meta else "cpu", "weights_only": not req.get("trust")}
    if not meta and fmt == "torch-zip":
        kwargs["mmap"] = True  # storages stay in the page cache, not in this process's heap
    return torch.load(path, **kwargs)


def state_dict_of(torch, obj, key):
    """The model's state dict inside a checkpoint object, or None."""
    if key is None:
        return None
    if key:
        for part in [key]:
            if not isinstance(obj, dict) or part not in obj:
                return None
            obj = obj[part]
    if isinstance(obj, torch.nn.Module):
        return obj.state_dict()
    if isinstance(obj, dict):
        return obj
    return None


def count_tensors(torch, obj, depth=0):
    if isinstance(obj, torch.Tensor):
        return 1
    if depth > 64:
        return 0
    if isinstance(obj, dict):
        return sum(count_tensors(torch, v, depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(count_tensors(torch, v, depth + 1) for v in obj)
    if isinstance(obj, torch.nn.Module):
        return len(obj.state_dict())
    return 0


# ---------------------------------------------------------------------------------- the model check


def build_model(torch, spec, cwd):
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError("--model needs MODULE:FACTORY, e.g. mypkg.models:build_model")
    for p in (cwd, os.getcwd()):
        if p and p not in sys.path:
            sys.path.insert(0, p)
    factory = importlib.import_module(module_name)
    for part in attr.split("."):
        factory = getattr(factory, part)
    try:
        with torch.device("meta"):  # no memory for the weights
            model = factory()
    except Exception:
        model = factory()
    if isinstance(model, torch.nn.Module):
        return {k: list(v.shape) for k, v in model.state_dict().items()}
    if isinstance(model, dict):
        return {k: list(v.shape) for k, v in model.items() if hasattr(v, "shape")}
    raise TypeError("%s returned %s, not an nn.Module" % (spec, type(model).__name__))


def strip(keys, prefix):
    return {(k[len(prefix) :] if k.startswith(prefix) else k): v for k, v in keys.items()}


def compare(model_keys, ckpt_keys):
    """Missing/unexpected/mismatched after stripping the wrapper prefixes that make the keys match."""
    out = {"model_keys": len(model_keys), "strip": [], "add": None}
    keys = dict(ckpt_keys)
    changed = True
    while changed:
        changed = False
        for p in PREFIXES:
            if keys and all(k.startswith(p) for k in keys) and not all(k.startswith(p) for k in model_keys):
                keys = strip(keys, p)
                out["strip"].append(p)
                changed = True
    for p in PREFIXES:
        if model_keys and all(k.startswith(p) for k in model_keys) and not any(k.startswith(p) for k in keys):
            out["add"] = p
            keys = {p + k: v for k, v in keys.items()}
            break
    out["missing"] = [k for k in model_keys if k not in keys]
    out["unexpected"] = [k for k in keys if k not in model_keys]
    out["mismatched"] = [
        [k, str(tuple(keys[k])), str(tuple(model_keys[k]))]
        for k in model_keys
        if k in keys and keys[k] is not None and list(keys[k]) != list(model_keys[k])
    ]
    out["matched"] = sum(1 for k in model_keys if k in keys) - len(out["mismatched"])
    return out


# -------------------------------------------------------------------------------------------- inspect


def inspect(torch, req, out):
    fmt = req["format"]
    if fmt == "torch-zip" and hasattr(torch.serialization, "get_unsafe_globals_in_checkpoint"):
        try:
            out["unsafe_globals"] = sorted(torch.serialization.get_unsafe_globals_in_checkpoint(req["path"]))
        except Exception as exc:
            out["child_error"] = first_line(exc)
    obj = None
    if fmt in ("torch-zip", "torch-legacy"):
        try:
            obj = torch.load(req["path"], map_location="meta", weights_only=True)
            out["weights_only_ok"] = True
        except Exception as exc:
            out["weights_only_ok"] = False
            out["weights_only_error"] = first_line(exc)
            if req.get("trust"):
                provide_main(req.get("main_definitions") or {})
                obj = torch.load(req["path"], map_location="meta", weights_only=False)
        if obj is not None:
            out["loaded_tensor_count"] = count_tensors(torch, obj)
    if req.get("model"):
        cmp = {"factory": req["model"]}
        try:
            model_keys = build_model(torch, req["model"], req.get("cwd"))
        except Exception as exc:
            cmp["error"] = first_line(exc)
            out["model"] = cmp
            return
        sd = state_dict_of(torch, obj, req.get("state_dict_key")) if obj is not None else None
        if sd is not None:
            ckpt_keys = {k: list(v.shape) for k, v in sd.items() if hasattr(v, "shape")}
        else:
            ckpt_keys = req.get("static_keys")
        if not ckpt_keys:
            cmp["error"] = "no model state dict found in the checkpoint to compare with"
            out["model"] = cmp
            return
        cmp.update(compare(model_keys, ckpt_keys))
        out["model"] = cmp


# ------------------------------------------------------------------------------------------------ fix


def consume(torch, sd, prefixes):
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

    done = []
    for p in prefixes:
        if sd and all(k.startswith(p) for k in sd if k != "_metadata"):
            consume_prefix_in_state_dict_if_present(sd, p)
            done.append(p)
    return done


def tensor_bytes(t):
    """A tensor's bytes, in chunks, without numpy."""
    t = t.detach().contiguous()
    total = t.numel() * t.element_size()
    ptr = t.data_ptr()
    for off in range(0, total, CHUNK):
        yield ctypes.string_at(ptr + off, min(CHUNK, total - off))


def write_safetensors(torch, tensors, fh):
    names = {v: k for k, v in ST_DTYPES.items()}
    header = {}
    offset = 0
    prepared = []
    for name, t in tensors.items():
        t = t.detach().to("cpu")
        dt = str(t.dtype).replace("torch.", "")
        if dt not in names:
            raise TypeError("safetensors cannot hold %s (%s)" % (name, t.dtype))
        nbytes = t.numel() * t.element_size()
        header[name] = {"dtype": names[dt], "shape": list(t.shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
        prepared.append(t)
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    fh.write(struct.pack("<Q", len(raw)))
    fh.write(raw)
    for t in prepared:
        for chunk in tensor_bytes(t):
            fh.write(chunk)


def same(torch, a, b, depth=0):
    """Byte-for-byte equality of two checkpoint objects (tensors compared as bytes: NaN == NaN)."""
    if depth > 64:
        return True
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
            return False
        if a.is_quantized or a.layout != torch.strided:
            return bool(torch.equal(a, b))
        # chunk by chunk: comparing a multi-GB tensor never holds more than two chunks
        return all(x == y for x, y in zip(tensor_bytes(a.cpu()), tensor_bytes(b.cpu())))
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(torch, a[k], b[k], depth + 1) for k in a)
    if isinstance(a, (list, tuple)):
        return (
            isinstance(b, (list, tuple))
            and len(a) == len(b)
            and all(same(torch, x, y, depth + 1) for x, y in zip(a, b))
        )
    return a == b


def fix(torch, req, out):
    obj = load(torch, req, meta=False)
    key = req.get("state_dict_key")
    if isinstance(obj, torch.nn.Module):
        obj = obj.state_dict()
        key = ""
    if req.get("state_dict_only"):
        sd = state_dict_of(torch, obj, key)
        if sd is None:
            raise ValueError("no model state dict found in the checkpoint to extract")
        obj = sd
        key = ""
        out["state_dict_only"] = True
    if req.get("strip"):
        target = state_dict_of(torch, obj, key)
        if target is not None:
            if key and not isinstance(obj[key], dict):
                obj[key] = target
            out["stripped"] = consume(torch, target, [p for p in req.get("prefixes") or []])
    if req["out_format"] == "safetensors":
        if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for k, v in obj.items()):
            raise ValueError("safetensors holds only named tensors: add --state-dict-only")
        seen = {}
        shared = []
        for name, t in obj.items():
            if t.numel() == 0:
                continue
            ptr = t.untyped_storage().data_ptr()
            if ptr in seen:
                shared.append("%s = %s" % (name, seen[ptr]))
            else:
                seen[ptr] = name
        out["copied_shared"] = shared
    tmp_ok = False
    try:
        with open(req["out"], "xb") as fh:  # never overwrites: the doctor checked, and "x" makes sure
            if req["out_format"] == "safetensors":
                write_safetensors(torch, obj, fh)
            else:
                torch.save(obj, fh)
        tmp_ok = True
    finally:
        if not tmp_ok and os.path.exists(req["out"]):
            os.unlink(req["out"])
    out["bytes_written"] = os.path.getsize(req["out"])
    out["tensors"] = count_tensors(torch, obj)
    out["ok"] = True
    try:
        if req["out_format"] == "safetensors":
            back = read_safetensors(torch, req["out"])
            try:  # the real library too, when the target has it
                from safetensors.torch import load_file

                back2 = load_file(req["out"])
                if not same(torch, back, back2):
                    raise ValueError("the safetensors package reads it differently")
            except ImportError:
                pass
        else:
            # weights_only=True and map_location=None, as a user loads it; mmap keeps a big copy out of memory
            back = torch.load(req["out"], weights_only=True, mmap=True)
        out["verified"] = same(torch, obj, back)
        if not out["verified"]:
            out["verify_error"] = "the copy's tensors differ from the original's"
    except Exception as exc:
        out["verified"] = False
        out["verify_error"] = first_line(exc)
        if "Weights only load failed" in str(exc):
            out["verify_error"] = "the copy still holds objects weights_only=True refuses: add --state-dict-only"


def answer(req):
    """The answer to one request, as a dict (main() prints it; tests call this in process)."""
    out = {"python": sys.executable}
    try:
        import torch
    except Exception as exc:
        out["import_error"] = first_line(exc)
        return out
    out["version"] = torch.__version__
    try:
        major, minor = (int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
        out["weights_only_default"] = (major, minor) >= (2, 6)
    except ValueError:
        pass
    try:
        out["cuda_available"] = bool(torch.cuda.is_available())
        out["device_count"] = int(torch.cuda.device_count()) if out["cuda_available"] else 0
    except Exception as exc:
        out["child_error"] = first_line(exc)
    try:
        if req["action"] == "fix":
            fix(torch, req, out)
        else:
            inspect(torch, req, out)
    except Exception as exc:
        out["error"] = first_line(exc)
        out["traceback"] = traceback.format_exc()[-2000:]
    return out


def main():
    emit(answer(json.loads(sys.stdin.read())))


if __name__ == "__main__":
    main()
