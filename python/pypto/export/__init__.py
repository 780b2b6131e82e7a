"""`pypto.export`: ahead-of-time bundles for the C++ runtime (include/pypto/runtime.h, docs/embedding.md).

    kernel.export("bundle_dir", (a, b, out), ((a, b, out), {"alpha": 2.0}))   # one kernel, examples
    pypto.export([k1, k2], "bundle_dir", examples={"k1": [...], "k2": [...]})  # several kernels
    python -m pypto.export mymod:k1 --example "(torch.zeros(4, 4),) * 3" --out bundle_dir

Each example is a tuple of positional arguments, or an `(args, kwargs)` pair; a tensor may be a real tensor or a
concrete `pypto.Tensor([4, 4], pypto.DT_FP32)` spec (DYNAMIC/named dims in a spec get size 1). Every example is
compiled through the kernel's normal miss path (`kernel.compile`), so the bundle holds exactly the libraries the
Python path runs. With no examples, the kernel's existing specializations (built under the current values of
its guarded globals) are exported.

A bundle is a directory: `manifest.json` (format, pypto and kernel-ABI versions, compiler identity, per kernel its
parameter table and per specialization its tensor key words, constant values, written mask, library and sha256)
and `lib/*.so`. Constants are recorded by value (typed: None, bool, int, float by exact bits, str, tuples/lists,
enum members); guarded globals are frozen at export time (recorded for information).

Layer 8: may import every layer below (errors, vocab, ir, language, codegen, compiler, verify, frontend); it
installs `export` on the frontend's kernels. Never bench.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, Iterable

from .._version import __version__
from ..codegen.names import file_component
from ..compiler import toolchain
from ..frontend.jit import JITKernel
from ..logger import progress
from ..vocab.annotations import DYNAMIC, DynamicDim, Tensor
from ..vocab.dtypes import to_torch
from ..vocab.modes import RunMode
from ..vocab.speckey import UnrecordableValue, tensors_json
from ..vocab.speckey import encode_value as _encode_value

FORMAT = "pypto-bundle"
FORMAT_VERSION = 1



class ExportError(Exception):
    """A kernel or an example cannot be exported (the message names kernel, what and why)."""


# ---- values --------------------------------------------------------------------------------------------------
def encode_value(v: Any, where: str) -> dict:
    """A constant's value, typed and exact (vocab/speckey.py); ExportError when it has no encoding."""
    try:
        return _encode_value(v, where)
    except UnrecordableValue as e:
        raise ExportError(str(e)) from None


# ---- kernels and examples ------------------------------------------------------------------------------------
def _frontend(kernel):
    """The Python-side JITKernel of a decorated kernel (the native object falls back to it for attributes)."""
    if isinstance(kernel, JITKernel):
        return kernel, kernel._native_ref()
    exp = getattr(kernel, "export", None)
    front = getattr(exp, "__self__", None)
    if not isinstance(front, JITKernel):
        raise ExportError(f"pypto.export: expected a @pypto.frontend.jit kernel, got {kernel!r}")
    return front, kernel


def _materialize(a, param, kernel_name: str):
    """A concrete `pypto.Tensor(shape, dtype)` spec -> a zero tensor of that shape and dtype."""
    if not isinstance(a, Tensor):
        return a
    where = f"kernel '{kernel_name}': parameter '{param.name if param else '?'}'"
    if a.shape is None or a.ellipsis or a.dtype is None:
        raise ExportError(f"{where}: an example tensor spec needs a full shape and a dtype, got {a!r}")
    shape = [d if isinstance(d, int) and not isinstance(d, bool) else 1 for d in a.shape]
    for axis, d in enumerate(a.shape):
        if not isinstance(d, int):
            ann = param.annotation if param is not None else None
            pd = ann.shape[axis] if ann is not None and ann.shape is not None and axis < len(ann.shape) else None
            if not (pd is DYNAMIC or isinstance(pd, DynamicDim)):
                raise ExportError(f"{where}: dimension {axis} of the example spec {a!r} is symbolic, but the "
                                  f"parameter's dimension is not DYNAMIC; give a concrete size")
    try:
        import torch

        return torch.zeros(shape, dtype=to_torch(a.dtype))
    except ImportError:
        import numpy as np

        try:
            return np.zeros(shape, dtype=np.dtype(a.dtype.short))
        except TypeError:
            raise ExportError(f"{where}: a {a.dtype.short} example spec needs torch (numpy has no such "
                              f"dtype)") from None


def _split_example(ex) -> tuple[tuple, dict]:
    if isinstance(ex, tuple) and len(ex) == 2 and isinstance(ex[0], (tuple, list)) and isinstance(ex[1], dict):
        return tuple(ex[0]), dict(ex[1])
    if isinstance(ex, (tuple, list)):
        return tuple(ex), {}
    return (ex,), {}


def _prepare_example(front, ex) -> tuple[tuple, dict]:
    args, kwargs = _split_example(ex)
    by_name = {p.name: p for p in front.params}
    args = tuple(_materialize(a, front.params[i] if i < len(front.params) else None, front.name)
                 for i, a in enumerate(args))
    kwargs = {k: _materialize(v, by_name.get(k), front.name) for k, v in kwargs.items()}
    return args, kwargs


def _params_json(front, table: dict) -> list:
    """The parameter table's encoding (front.param_table()), with each parameter's default added."""
    out = []
    for p, d in zip(front.params, table["params"]):
        if p.has_default:
            try:
                d["default"] = encode_value(p.default, f"kernel '{front.name}': parameter '{p.name}' (default)")
            except ExportError:
                d["default_repr"] = repr(p.default)  # not recordable: C++ callers must pass it
        out.append(d)
    return out


def _same_guards(a: dict, b: dict) -> bool:
    """Whether a specialization's guard values (SeenValue, frontend/guards.py) are the current ones `b`."""
    if a.keys() != b.keys():
        return False
    for k in a:
        x, y = a[k].get(), b[k]
        if x is not y:
            try:
                if not (type(x) is type(y) and x == y):
                    return False
            except Exception:
                return False
    return True


def _sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _kernel_entry(front, native, examples, libdir: Path, used_libs: set, keys=None) -> dict:
    """Compile the examples (or take the existing specializations, or those of `keys`: the keys a capture
    recorded) and describe the kernel for the manifest."""
    name = front.name
    n_const = sum(1 for p in front.params if p.kind == "constexpr")
    has_guards = bool(front.guards)
    current_guards = {(g.owner, g.name): g.current() for g in front.guards}
    wanted: list[bytes] = []
    if keys is not None:
        entries = {(k or b""): (info, lib) for k, info, lib, _s in native._specializations()}
        missing = [k for k in keys if k not in entries or entries[k][0] is None]
        if missing:
            raise ExportError(f"kernel '{name}': a captured specialization is no longer in the kernel's table "
                              f"(its guarded globals changed?); capture again before exporting")
        chosen = [(k, *entries[k]) for k in keys]
    elif examples:
        examples = list(examples)
        for i, ex in progress(enumerate(examples), len(examples), f"pypto.export: compiling '{name}'"):
            args, kwargs = _prepare_example(front, ex)
            native.compile(*args, **kwargs)
            hit, key, _meta = native._probe(*args, **kwargs)
            if not hit:
                raise ExportError(f"kernel '{name}': example #{i} built no library (host_options compile_stage "
                                  f"stops before the library is compiled?); nothing to export")
            if key not in wanted:
                wanted.append(key)
        entries = {(k or b""): (info, lib) for k, info, lib, _s in native._specializations()}  # b"": empty key
        chosen = [(k, *entries[k]) for k in wanted]
    else:
        chosen = [(k or b"", info, lib) for k, info, lib, _s in native._specializations()
                  if info is not None and _same_guards(info.get("guards", {}), current_guards)]
        if not chosen:
            raise ExportError(f"kernel '{name}': no specializations to export; pass examples "
                              f"(kernel.export(dir, (a, b, out), ...)) or call the kernel first")
    specs = []
    for key, info, _loaded in chosen:
        request, result = info["request"], info["result"]
        library = result.library  # the cache file (the core's own path names the copy it loaded)
        words = struct.unpack(f"<{len(key) // 8}Q", key)
        n_tensor_words = len(words) - n_const - (1 if has_guards else 0)
        constants = {}
        for p in front.params:
            if p.kind == "constexpr":
                constants[p.name] = encode_value(request.constants[p.name],
                                                 f"kernel '{name}': parameter '{p.name}'")
        sha = _sha256(library)
        fname = f"{file_component(name)}-{sha[:16]}.so"  # a kernel name is data, never a path
        if fname not in used_libs:
            tmp = libdir / (fname + ".tmp")
            shutil.copyfile(library, tmp)
            os.replace(tmp, libdir / fname)
            used_libs.add(fname)
        if _sha256(libdir / fname) != sha:
            raise ExportError(f"kernel '{name}': the copy of '{library}' in the bundle does not match its sha256")
        written = 0
        for t in result.written:
            written |= 1 << int(t)
        specs.append({"tensor_key": list(words[:n_tensor_words]), "constants": constants,
                      "written_mask": written, "tensors": tensors_json(request),
                      "library": f"lib/{fname}", "sha256": sha})
    opts = front.options
    table = front.param_table()
    return {
        "name": name,
        "run_mode": RunMode(int(opts.runtime["run_mode"])).name,
        "num_threads": int(opts.runtime["sim_threads"]),
        "debug_mode": int(opts.debug["runtime_debug_mode"]),
        "params": _params_json(front, table),
        "dim_names": table["dim_names"],
        "guards": [{"owner": o, "name": n, "value": repr(v)[:200]} for (o, n), v in current_guards.items()],
        "specializations": specs,
    }


def _normalize_examples(kernels: list, examples) -> list:
    if examples is None:
        return [None] * len(kernels)
    if isinstance(examples, dict):
        names = [_frontend(k)[0].name for k in kernels]
        unknown = set(examples) - set(names)
        if unknown:
            raise ExportError(f"pypto.export: examples for unknown kernel(s) {sorted(unknown)}; kernels: {names}")
        return [examples.get(n) for n in names]
    examples = list(examples)
    if len(kernels) == 1:
        return [examples]
    if len(examples) != len(kernels):
        raise ExportError(f"pypto.export: {len(kernels)} kernels but {len(examples)} example lists; pass "
                          f"examples={{kernel_name: [example, ...]}}")
    return examples


def export(kernels, directory, examples=None) -> Path:
    """Write an AOT bundle for `kernels` (a kernel or a list) into `directory`; returns the manifest path.

    `examples`: for one kernel a list of examples; for several a dict {kernel name: [examples]} or a list of
    example lists in kernel order. Each example: a tuple of positional arguments or an (args, kwargs) pair.
    Without examples, each kernel's existing specializations are exported."""
    if not isinstance(kernels, (list, tuple)):
        kernels = [kernels]
    if not kernels:
        raise ExportError("pypto.export: no kernels given")
    return _export(list(zip(kernels, _normalize_examples(list(kernels), examples))), Path(directory))


def export_kernel(kernel, directory, examples: Iterable = ()) -> Path:
    """`kernel.export(directory, *examples)`."""
    return _export([(kernel, list(examples) or None)], Path(directory))


def _export(pairs: list, directory: Path, sequences: list | None = None, keys: dict | None = None) -> Path:
    libdir = directory / "lib"
    libdir.mkdir(parents=True, exist_ok=True)
    used: set = set()
    entries, names = [], set()
    for k, ex in pairs:
        front, native = _frontend(k)
        if front.name in names:
            raise ExportError(f"pypto.export: two kernels are named '{front.name}'")
        names.add(front.name)
        entries.append(_kernel_entry(front, native, ex, libdir, used, (keys or {}).get(front.name)))
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "pypto_version": __version__,
        "kernel_abi_version": toolchain.abi_version(),
        "compiler": {"cxx": toolchain.CXX, "identity": toolchain.compiler_identity(),
                     "flags": list(toolchain.FLAGS), "cpu": toolchain.cpu_identity().split("|")[0]},
        "kernels": entries,
    }
    if sequences:
        manifest["sequences"] = sequences
    for f in libdir.glob("*.so"):  # libraries of an earlier export into the same directory
        if f.name not in used:
            f.unlink()
    path = directory / "manifest.json"
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="manifest.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    return path


class _CallableModule(types.ModuleType):
    """`pypto.export(...)` calls export(); `pypto.export.<name>` is this module's attribute."""

    def __call__(self, kernels, directory, examples=None):
        return export(kernels, directory, examples)


sys.modules[__name__].__class__ = _CallableModule


def _kernel_export(self, directory, *examples):
    """Write an AOT bundle for the C++ runtime (docs/embedding.md): compiles each example (a tuple of args,
    or an (args, kwargs) pair) and copies its library; no examples: the existing specializations."""
    return export_kernel(self, directory, examples)


# The export layer sits above the frontend and gives its kernels their `export` method (the frontend never
# imports upward); the native kernel reaches it through its attribute fallback.
JITKernel.export = _kernel_export

__all__ = ["export", "export_kernel", "encode_value", "ExportError", "FORMAT", "FORMAT_VERSION"]
