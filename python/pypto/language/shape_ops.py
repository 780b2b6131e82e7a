"""Views, slices, writes and shape manipulation.

Views (`view`, slicing, `transpose`, `unsqueeze`, contiguous `reshape`) never copy: they are windows on the
same storage. Every window is bounds-checked against its parent's logical (valid) shape — at trace time when
the numbers are static, otherwise by a run-time check in the kernel — so a kernel never reads or writes
outside a tensor.
"""
from __future__ import annotations

import builtins

from ..ir.infer import norm_dim
from ..ir.nodes import LOCAL, TEMP, row_major, same_dim
from ._helpers import (DT, S, Value, check_int_like, check_int_list, check_operand, check_tensor,
                       current, elementwise, fmt_shape, require_equal)
from .elementwise import cast


def _cap_for(d, parent_cap):
    return d if isinstance(d, int) else parent_cap


def _window(t: Value, offsets, shape, cap, op: str, strides=None) -> Value:
    """A view of `t` starting at `offsets` with logical `shape`; checks offsets/shape against t.shape."""
    b = current(op)
    for ax, (o, d, pd) in enumerate(zip(offsets, shape, t.shape)):
        b.check(S.compare(">=", o, 0), f"offset {S.to_text(o)} of dim {ax} is negative", op)
        b.check(S.compare(">=", d, 0), f"size {S.to_text(d)} of dim {ax} is negative", op)
        b.check(S.compare("<=", S.add(o, d), pd),
                f"dim {ax}: offset {S.to_text(o)} + size {S.to_text(d)} exceeds the tensor's size "
                f"{S.to_text(pd)}", op)
    off = t.offset
    for o, st in zip(offsets, t.strides):
        off = S.add(off, S.mul(o, st))
    return b.new_view(t, off, shape, cap, strides if strides is not None else t.strides)


def view(t, shape, offsets, valid_shape=None):
    """A tile of `shape` starting at `offsets` of `t` (no copy; offsets may be symbolic).

    With `valid_shape` (possibly symbolic, e.g. pypto.min(16, n - i*16)) only the first valid_shape elements
    are real: ops compute on that region, reductions reduce it, writes of the tile write only it. `shape`
    stays the compile-time capacity of the tile. Without valid_shape, a tile that runs past the tensor's end
    (offset 0, size 320 of a 192-wide dim) holds the tensor's remaining elements (192), as the reference
    infers the valid shape."""
    op = "view"
    b = current(op)
    t = check_tensor(t, op)
    shape = check_int_list(shape, op, "shape")
    offsets = check_int_list(offsets, op, "offsets")
    if any(isinstance(d, S.Sym) for d in shape):
        raise b.error(op, f"the tile shape must be static ints, got [{', '.join(S.to_text(d) for d in shape)}]: a DYNAMIC dim (a whole "
                          f"dynamic-shape tensor) cannot be a tile; give a static tile shape and put the dynamic "
                          f"size in valid_shape=, e.g. pypto.view(x, [16, 64], [i * 16, 0], "
                          f"valid_shape=[pypto.min(16, n - i * 16), 64])")
    rank = len(t.shape)
    if len(shape) != rank or len(offsets) != rank:
        raise b.error(op, f"shape and offsets must have one entry per dim of the tensor (rank {rank}); got "
                          f"shape {fmt_shape(shape)}, offsets {fmt_shape(offsets)}")
    cap = tuple(_cap_for(d, c) for d, c in zip(shape, t.cap))
    logical = shape
    if valid_shape is not None:
        valid = check_int_list(valid_shape, op, "valid_shape")
        if len(valid) != rank:
            raise b.error(op, f"valid_shape must have {rank} entries, got {fmt_shape(valid)}")
        for ax, (v, d) in enumerate(zip(valid, shape)):
            b.check(S.compare("<=", v, d), f"valid_shape {S.to_text(v)} of dim {ax} exceeds the tile "
                                           f"shape {S.to_text(d)}", op)
        logical = valid
    else:
        logical = [_clamped(b, o, d, pd) for o, d, pd in zip(offsets, shape, t.shape)]
    return _window(t, offsets, tuple(logical), cap, op)


def _clamped(b, o, d, pd):
    """The reference's inferred valid size of a view's dim: a tile that runs past the tensor's end holds only the
    tensor's remaining elements, `pd - o`; the tile shape stays its capacity. Statically known: that number. With
    an offset that moves with a kernel loop (`64 * i` over a 144-wide dim): when the last iteration provably runs
    past the end, `min(d, pd - o)`, a symbolic valid size; when every iteration provably fits, or nothing is known,
    `d` (the window's run-time bounds check stays)."""
    fits = S.compare("<=", S.add(o, d), pd)
    if fits is False:
        rest = S.sub(pd, o)
        if isinstance(rest, int) and rest >= 0:
            return rest
    if fits is True or not isinstance(d, int) or not _moves_with_a_loop(b, o):
        return d
    last_end = b.loop_upper_bound(S.add(o, d))
    if last_end is None or S.compare(">", last_end, pd) is not True:
        return d
    last_off = b.loop_upper_bound(o)
    if last_off is None or S.compare("<", last_off, pd) is not True:
        return d                        # an iteration would start past the end: the window's check reports it
    return S.smin(d, S.sub(pd, o))


def _norm_index(i, d, ax, op):
    b = current(op)
    if isinstance(i, int) and not isinstance(i, bool):
        if isinstance(d, int):
            if not -d <= i < d:
                raise b.error(op, f"index {i} is out of range for dim {ax} of size {d}")
            return i % d if d else i
        if i < 0:
            i = S.add(d, i)
    b.check(S.compare(">=", i, 0), f"index {S.to_text(i)} of dim {ax} is negative", op)
    b.check(S.compare("<", i, d), f"index {S.to_text(i)} is out of range for dim {ax} (size {S.to_text(d)})", op)
    return i


def _moves_with_a_loop(b, x) -> bool:
    return any(k in b.loop_index for k in S.free_vars(x))


def getitem(t: Value, idx, op="getitem") -> Value:
    """t[idx]: ints / symbolic ints (drop the dim), slices with positive static steps, `...`, None."""
    b = current(op)
    check_tensor(t, op)
    if not isinstance(idx, tuple):
        idx = (idx,)
    n_ell = builtins.sum(1 for i in idx if i is Ellipsis)
    if n_ell > 1:
        raise b.error(op, "only one `...` is allowed in an index")
    n_real = builtins.sum(1 for i in idx if i is not None and i is not Ellipsis)
    rank = len(t.shape)
    if n_real > rank:
        raise b.error(op, f"too many indices ({n_real}) for a tensor of rank {rank}")
    if n_ell:
        pos = idx.index(Ellipsis)
        idx = idx[:pos] + (slice(None),) * (rank - n_real) + idx[pos + 1:]
    else:
        idx = idx + (slice(None),) * (rank - n_real)
    offsets, shape, cap, strides = [], [], [], []
    ax = 0
    off_shape, off_cap, out_strides = [], [], []
    for it in idx:
        if it is None:
            out_strides.append(0)
            off_shape.append(1)
            off_cap.append(1)
            continue
        d, c, st = t.shape[ax], t.cap[ax], t.strides[ax]
        if isinstance(it, slice):
            start, stop, step = it.start, it.stop, it.step
            if step is None:
                step = 1
            if isinstance(step, bool) or not isinstance(step, int) or step <= 0:
                raise b.error(op, f"slice step must be a positive static int, got {step!r}")
            for v in (start, stop):
                if v is not None:
                    check_int_like(v, op, "slice bound")
            if isinstance(d, int) and not isinstance(start, S.Sym) and not isinstance(stop, S.Sym):
                s0, s1, _ = slice(start, stop, step).indices(d)
                n = builtins.max(0, (s1 - s0 + step - 1) // step)
                o = s0
            else:
                s0 = 0 if start is None else (S.add(d, start) if isinstance(start, int) and start < 0 else start)
                s1 = d if stop is None else (S.add(d, stop) if isinstance(stop, int) and stop < 0 else stop)
                if _moves_with_a_loop(b, s1):
                    # the stop of a block that walks a kernel loop (`x[i*4:(i+1)*4]`): where it may pass the end
                    # (the last block) it clamps, as Python slicing does; other symbolic stops are checked below
                    ub = b.loop_upper_bound(s1)
                    over = None if ub is None else S._const_diff(ub, d)
                    if not isinstance(over, int) or over > 0:
                        s1 = S.smin(s1, d)
                else:
                    b.check(S.compare("<=", s1, d), f"slice stop {S.to_text(s1)} exceeds dim {ax} of size "
                                                    f"{S.to_text(d)}", op)
                b.check(S.compare(">=", s0, 0), f"slice start {S.to_text(s0)} of dim {ax} is negative", op)
                b.check(S.compare("<=", s0, s1), f"slice start {S.to_text(s0)} > stop {S.to_text(s1)} in dim {ax}",
                        op)
                n = S.sub(s1, s0) if step == 1 else S.floordiv(S.add(S.sub(s1, s0), step - 1), step)
                o = s0
            offsets.append(o)
            off_shape.append(n)
            ub = S.upper_bound(n)
            off_cap.append(n if isinstance(n, int) else (c if ub is None else (ub if c is None else min(ub, c))))
            out_strides.append(S.mul(st, step))
        else:
            check_int_like(it, op, "index")
            offsets.append(_norm_index(it, d, ax, op))
        ax += 1
    off = t.offset
    for o, st in zip(offsets, t.strides):
        off = S.add(off, S.mul(o, st))
    v = b.new_view(t, off, tuple(off_shape), tuple(off_cap), tuple(out_strides))
    if not off_shape and t.dtype.is_int and op == "getitem":
        # one element of an integer tensor is a runtime scalar (the reference returns a SymbolicScalar): usable
        # as a loop bound, an offset, a size or an `if` condition
        return b.read_scalar(v, op)
    return v


def _valid_region(dst: Value, src: Value, op: str) -> Value:
    """The part of dst that a tile with a smaller valid region writes: a tile whose static capacity (cap) is
    dst's shape but whose valid_shape is smaller on some dims (view/full/reshape with valid_shape=) writes only
    its valid region, from dst's origin; the rest of dst keeps its values (the reference's semantics). So does a
    tile whose valid size is symbolic with a static capacity no larger than dst's dim (or dst's dim is symbolic:
    the window's run-time check keeps the write inside dst). Other shapes go through the usual checks."""
    if len(src.shape) != len(dst.shape):
        return dst
    narrowed = False
    for sd, dd, c in zip(src.shape, dst.shape, src.cap):
        if sd is dd or (isinstance(sd, int) and isinstance(dd, int) and sd == dd):
            continue
        if isinstance(sd, int) and isinstance(dd, int) and isinstance(c, int) and sd < dd == c:
            narrowed = True
            continue
        # a symbolic valid size bounded by a static capacity that fits dst: the reference's slice write is an
        # assemble at the slice's start (`a[i:] = tile` writes the tile's valid rows from row i)
        if isinstance(sd, S.Sym) and isinstance(c, int) and (isinstance(dd, S.Sym) or c <= dd):
            narrowed = True
            continue
        return dst
    if not narrowed:
        return dst
    return _window(dst, [0] * len(dst.shape), tuple(src.shape), tuple(src.shape), op)


def write(dst: Value, src, op: str):
    """dst <- src (src broadcast to dst's shape; dtypes must match exactly, except that int64 is cast into int32)."""
    b = current(op)
    src = check_operand(src, op, "value")
    if isinstance(src, Value):
        if src.dtype == DT.DT_INT64 and dst.dtype == DT.DT_INT32:
            src = cast(src, DT.DT_INT32)  # the reference casts (its index results, e.g. topk's, are int32 there)
        if src.dtype != dst.dtype:
            raise b.error(op, f"dtype mismatch: writing {src.dtype.short} into a {dst.dtype.short} tensor; "
                              f"convert first with pypto.cast(x, pypto.{dst.dtype.name})")
        dst = _valid_region(dst, src, op)
        if len(src.shape) > len(dst.shape):
            raise b.error(op, f"shape mismatch: cannot write a value of shape {fmt_shape(src.shape)} into a "
                              f"region of shape {fmt_shape(dst.shape)}")
        lead = len(dst.shape) - len(src.shape)
        for ax, (sd, dd) in enumerate(zip(src.shape, dst.shape[lead:])):
            if isinstance(sd, int) and sd == 1:
                continue
            require_equal(b, sd, dd, op, f"shape mismatch: cannot write a value of shape {fmt_shape(src.shape)} "
                                         f"into a region of shape {fmt_shape(dst.shape)}",
                          f"shape mismatch at run time: value dim {S.to_text(sd)} vs target dim {S.to_text(dd)}")
        if src.storage is dst.storage and not src.is_root:
            src = elementwise("cast", [src], src.dtype, (None,), op)   # overlapping copy: go through a temp
    b.assign(dst, src, op)


def setitem(t: Value, idx, value):
    op = "setitem"
    dst = getitem(t, idx, op)
    write(dst, value, op)


def assemble(e, offsets, out):
    """Write `e` (its valid region) into `out` at `offsets`."""
    op = "assemble"
    b = current(op)
    e = check_tensor(e, op, "source")
    out = check_tensor(out, op, "destination")
    offsets = check_int_list(offsets, op, "offsets")
    if len(offsets) != len(out.shape) or len(e.shape) != len(out.shape):
        raise b.error(op, f"source rank {len(e.shape)}, offsets {fmt_shape(offsets)} and destination rank "
                          f"{len(out.shape)} must agree")
    dst = _window(out, offsets, e.shape, e.cap, op)
    write(dst, e, op)


def _is_contiguous(t: Value) -> bool:
    want = row_major(t.shape)
    for d, s, w in zip(t.shape, t.strides, want):
        if isinstance(d, int) and d == 1:
            continue
        if not same_dim(s, w):
            return False
    return True


def _dims_reordered(t: Value) -> bool:
    """Whether t's dims are out of storage order (a transpose / permute result: a larger stride inside a smaller
    one). The reference computes such a result into a new tensor, so `reshape(inplace=True)` of it aliases that
    new tensor; here the transpose is a view and the reshape copies it instead (the same values, and the result
    aliases nothing the kernel can name but this reshape)."""
    strides = [s for d, s in zip(t.shape, t.strides) if not (isinstance(d, int) and d == 1)]
    return any(S.compare("<", a, c) is True for a, c in zip(strides, strides[1:]))


def contiguous(t: Value, op="contiguous") -> Value:
    t = check_tensor(t, op)
    if _is_contiguous(t):
        return t
    return elementwise("cast", [t], t.dtype, (None,), op)


def _numel(shape):
    n = 1
    for d in shape:
        n = S.mul(n, d)
    return n


def reshape(t, shape, valid_shape=None, inplace=False):
    """A tensor with the same elements in row-major order and a new shape (one entry may be -1).

    A contiguous input is viewed without copying; otherwise it is copied first. `inplace=True` promises a
    view: the input must be contiguous and the result aliases it, so writes through the result write the
    input — use it for DYNAMIC inputs, whose element count is only known at run time (the count is then
    checked when the kernel runs). A strided window (view, slice) with inplace=True is an error, as the
    reference allows only inplace=False on a view; a transpose / permute result is copied (the reference's
    transpose is a new tensor, which its reshape then aliases).

    `valid_shape=` (possibly symbolic) makes `shape` the static tile and `valid_shape` its logical region,
    like view(..., valid_shape=), and reshapes the valid elements, as the reference does: the input's valid
    region read row-major fills the output's valid region row-major (a [4, 32, 512] tile whose valid region is
    [4, 8, 512] reshaped to [128, 512] with valid_shape [32, 512] gives its 32 valid rows, in order). The
    input's tile (its static capacity) must have as many elements as `shape`, and valid_shape must hold as
    many elements as the input's valid region (both checked, at run time when symbolic)."""
    op = "reshape"
    b = current(op)
    t = check_tensor(t, op)
    shape = check_int_list(shape, op, "shape")
    if not isinstance(inplace, bool):
        raise b.error(op, f"inplace must be a bool, got {inplace!r}")
    if valid_shape is not None:
        if inplace:   # the reference's rule: a reshape with valid_shape= is never in place
            raise b.error(op, "Reshape(Inplace=true) is not supported for tensors derived from dynamic view "
                              "(valid_shape= and inplace=True do not go together, as in the reference); set "
                              "inplace=False or do not pass valid_shape")
        return _reshape_tile(t, shape, check_int_list(valid_shape, op, "valid_shape"), op)
    total = _numel(t.shape)
    neg = [i for i, d in enumerate(shape) if isinstance(d, int) and d == -1]
    if len(neg) > 1:
        raise b.error(op, "only one dim may be -1")
    if neg:
        rest = _numel([d for i, d in enumerate(shape) if i != neg[0]])
        if isinstance(rest, int) and isinstance(total, int):
            if rest == 0 or total % rest:
                raise b.error(op, f"cannot reshape {fmt_shape(t.shape)} into {fmt_shape(shape)}")
        shape[neg[0]] = S.floordiv(total, rest)
    for ax, d in enumerate(shape):
        if isinstance(d, int) and d < 0:
            raise b.error(op, f"size {d} of dim {ax} is negative (only one -1 is allowed)")
    b.check(S.compare("==", _numel(shape), total),
            f"cannot reshape a tensor of shape {fmt_shape(t.shape)} into {fmt_shape(shape)} (element count "
            f"differs)", op)
    if inplace and not _is_contiguous(t) and not _dims_reordered(t):
        raise b.error(op, f"inplace=True needs a contiguous input; this one (shape {fmt_shape(t.shape)}) is a "
                          f"strided view — drop inplace=True to copy, or pypto.clone it first")
    src = t if _is_contiguous(t) else _packed_copy(t)
    cap = tuple(d if isinstance(d, int) else S.upper_bound(d) for d in shape)
    return b.new_view(src, src.offset, tuple(shape), cap, row_major(shape))


def _tile_shape(t: Value):
    """The static tile of t (its caps) when every cap is known, else its logical shape."""
    return tuple(t.cap) if all(c is not None for c in t.cap) else tuple(t.shape)


def _reshape_tile(t: Value, shape, valid, op):
    """reshape with valid_shape= (never in place: reshape refuses inplace=True with it)."""
    b = current(op)
    if len(valid) != len(shape):
        raise b.error(op, f"valid_shape must have {len(shape)} entries (one per dim of shape), got "
                          f"{fmt_shape(valid)}")
    for ax, d in enumerate(shape):
        if not isinstance(d, int) or d < 0:
            raise b.error(op, f"with valid_shape, shape must be static sizes >= 0, got {fmt_shape(shape)}")
    tile = _tile_shape(t)
    b.check(S.compare("==", _numel(tile), _numel(shape)),
            f"cannot reshape a tile of shape {fmt_shape(tile)} into {fmt_shape(shape)} (element count differs)",
            op)
    for ax, (v, d) in enumerate(zip(valid, shape)):
        b.check(S.compare("<=", v, d), f"valid_shape {S.to_text(v)} of dim {ax} exceeds the tile shape {d}", op)
        b.check(S.compare(">=", v, 0), f"valid_shape {S.to_text(v)} of dim {ax} is negative", op)
    b.check(S.compare("==", _numel(valid), _numel(t.shape)),
            f"valid_shape {fmt_shape(valid)} holds a different number of elements than the input's valid "
            f"region {fmt_shape(t.shape)}", op)
    if not _is_contiguous(t):
        # The valid elements are reshaped (the reference's rule): the input's valid region, read row-major, fills
        # the output's valid region row-major. That is a view when they lie packed in memory; else pack them.
        t = _packed_copy(t)
    return b.new_view(t, t.offset, tuple(valid), tuple(shape), row_major(valid))


def _packed_copy(t: Value) -> Value:
    """A copy of t laid out row-major over its logical (possibly symbolic) shape. A temp with static caps is laid
    out over its caps, so its rows are not packed when a valid size is smaller than its cap (a view running past
    its tensor's end): a reshape must read the valid elements packed, or it mixes rows."""
    b = current("reshape")
    packed = b.new_storage(TEMP, t.dtype, t.shape, tuple(d if isinstance(d, int) else None for d in t.shape))
    return b.op("ew", packed, [t], fn="cast", cts=(None,), tile=b.vec_tile)


def transpose(t, dim0, dim1):
    """Swap two dims (a view, no copy)."""
    op = "transpose"
    b = current(op)
    t = check_tensor(t, op)
    r = len(t.shape)
    d0 = norm_dim(dim0, r, lambda m: b.error(op, m))
    d1 = norm_dim(dim1, r, lambda m: b.error(op, m))
    shape, cap, strides = list(t.shape), list(t.cap), list(t.strides)
    for lst in (shape, cap, strides):
        lst[d0], lst[d1] = lst[d1], lst[d0]
    return b.new_view(t, t.offset, tuple(shape), tuple(cap), tuple(strides))


def _pick_dims(t: Value, dims, op: str) -> Value:
    """A view of t with the dims `dims` (in that order); the others must be of size 1."""
    return current(op).new_view(t, t.offset, tuple(t.shape[d] for d in dims), tuple(t.cap[d] for d in dims),
                                tuple(t.strides[d] for d in dims))


def permute(t, dims):
    """Reorder dims (a view)."""
    op = "permute"
    b = current(op)
    t = check_tensor(t, op)
    r = len(t.shape)
    dims = [norm_dim(d, r, lambda m: b.error(op, m)) for d in dims]
    if sorted(dims) != list(range(r)):
        raise b.error(op, f"dims {dims} are not a permutation of 0..{r - 1}")
    return _pick_dims(t, dims, op)


def unsqueeze(t, dim):
    """Insert a dim of size 1 at `dim` (a view)."""
    op = "unsqueeze"
    b = current(op)
    t = check_tensor(t, op)
    r = len(t.shape) + 1
    d = norm_dim(dim, r, lambda m: b.error(op, m))
    shape, cap, strides = list(t.shape), list(t.cap), list(t.strides)
    shape.insert(d, 1)
    cap.insert(d, 1)
    strides.insert(d, 0)
    return b.new_view(t, t.offset, tuple(shape), tuple(cap), tuple(strides))


def squeeze(t, dim):
    """Remove a dim of size 1 (a view)."""
    op = "squeeze"
    b = current(op)
    t = check_tensor(t, op)
    d = norm_dim(dim, len(t.shape), lambda m: b.error(op, m))
    b.check(S.compare("==", t.shape[d], 1), f"dim {d} has size {S.to_text(t.shape[d])}, not 1", op)
    return _pick_dims(t, [i for i in range(len(t.shape)) if i != d], op)


def expand_clone(t, shape):
    """A fresh tensor of `shape` holding t broadcast to it."""
    op = "expand_clone"
    b = current(op)
    t = check_tensor(t, op)
    shape = check_int_list(shape, op, "shape")
    if len(shape) < len(t.shape):
        raise b.error(op, f"cannot expand shape {fmt_shape(t.shape)} to {fmt_shape(shape)}")
    lead = len(shape) - len(t.shape)
    for ax, (sd, dd) in enumerate(zip(t.shape, shape[lead:])):
        if isinstance(sd, int) and sd == 1:
            continue
        b.check(S.compare("==", sd, dd), f"cannot expand dim {ax} of size {S.to_text(sd)} to "
                                         f"{S.to_text(dd)}", op)
    cap = tuple(d if isinstance(d, int) else None for d in shape)
    out = b.new_temp(t.dtype, tuple(shape), cap)
    return b.op("ew", out, [t], fn="cast", cts=(None,), tile=b.vec_tile)


def concat(tensors, dim=0):
    """Concatenate tensors (same dtype, same shape except along `dim`) into a fresh tensor."""
    op = "concat"
    b = current(op)
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise b.error(op, "expects a non-empty list of tensors")
    ts = [check_tensor(t, op, f"tensor {i}") for i, t in enumerate(tensors)]
    r = len(ts[0].shape)
    d = norm_dim(dim, r, lambda m: b.error(op, m))
    for i, t in enumerate(ts[1:], 1):
        if len(t.shape) != r:
            raise b.error(op, f"tensor {i} has rank {len(t.shape)}, expected {r}")
        if t.dtype != ts[0].dtype:
            raise b.error(op, f"tensor {i} has dtype {t.dtype.short}, expected {ts[0].dtype.short}; cast first")
        for ax in range(r):
            if ax != d and not same_dim(t.shape[ax], ts[0].shape[ax]):
                if isinstance(t.shape[ax], int) and isinstance(ts[0].shape[ax], int):
                    raise b.error(op, f"tensor {i} has shape {fmt_shape(t.shape)}, incompatible with "
                                      f"{fmt_shape(ts[0].shape)} outside dim {d}")
                b.check(S.compare("==", t.shape[ax], ts[0].shape[ax]), f"tensor {i}: dim {ax} differs", op)
    total = 0
    cap_total = 0
    for t in ts:
        total = S.add(total, t.shape[d])
        cap_total = None if (cap_total is None or t.cap[d] is None) else cap_total + t.cap[d]
    shape = list(ts[0].shape)
    shape[d] = total
    cap = list(ts[0].cap)
    cap[d] = total if isinstance(total, int) else cap_total
    out = b.new_storage(LOCAL, ts[0].dtype, tuple(shape), tuple(cap))
    b.op("fill", out, [0], tile=None)
    off = 0
    for t in ts:
        offs = [0] * r
        offs[d] = off
        dst = _window(out, offs, t.shape, t.cap, op)
        b.assign(dst, t, op)
        off = S.add(off, t.shape[d])
    return out


__all__ = ["view", "assemble", "reshape", "transpose", "permute", "unsqueeze", "squeeze", "expand_clone", "concat",
           "contiguous"]
