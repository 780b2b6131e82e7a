"""Installs the Python operators and methods of kernel tensors (`a + b`, `x[0:4, :]`, `out[:] = e`,
`out.move(e)`, ...) on the IR's tensor value.

The IR (`pypto.ir.nodes.Value`) sits below the language and must not import it; the language, which defines what
`+` or slicing means, installs these methods on the IR type when it is imported (`install`), the way JAX's
array_methods installs its array methods.
"""
from __future__ import annotations

from ..errors import KernelTraceError, UnsupportedFeatureError, not_supported
from ..ir import sym as S
from ..ir.builder import active, current, user_location
from ..ir.nodes import Value
from ..vocab.annotations import TileOpFormat
from ..vocab.dtypes import DataType
from . import elementwise as ew
from . import hints
from . import reduce as red
from . import creation, shape_ops


class TensorMethods:
    """The methods `install` copies onto the IR's Value (never instantiated)."""

    # arithmetic -------------------------------------------------------------------------------------------
    def __add__(self, o):
        return ew.add(self, o)

    def __radd__(self, o):
        return ew.add(o, self)

    def __sub__(self, o):
        return ew.sub(self, o)

    def __rsub__(self, o):
        return ew.sub(o, self)

    def __mul__(self, o):
        return ew.mul(self, o)

    def __rmul__(self, o):
        return ew.mul(o, self)

    def __truediv__(self, o):
        return ew.div(self, o)

    def __rtruediv__(self, o):
        """scalar / x is computed as torch does it: reciprocal(x) * scalar."""
        if isinstance(o, Value):
            return ew.div(o, self)
        return ew.mul(ew.div(1, self), o)

    def __floordiv__(self, o):
        return ew.floor_divide(self, o)

    def __rfloordiv__(self, o):
        return ew.floor_divide(o, self)

    def __mod__(self, o):
        return ew.remainder(self, o)

    def __rmod__(self, o):
        return ew.remainder(o, self)

    def __pow__(self, o):
        return ew.pow(self, o)

    def __rpow__(self, o):
        return ew.pow(o, self)

    def __neg__(self):
        return ew.neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return ew.abs(self)

    def __invert__(self):
        """~mask: logical not of a BOOL tensor. (torch's ~ on integers is bitwise NOT, which the kernel language
        does not have: an error rather than a different result.)"""
        if self.dtype != DataType.DT_BOOL:
            raise current("invert").error("invert", f"`~x` needs a bool mask, got a {self.dtype.short} tensor "
                                                    f"(torch's ~ is bitwise there); use pypto.logical_not(x)")
        return ew.logical_not(self)

    def __matmul__(self, o):
        """a @ b: matmul with out_dtype = a's dtype for fp32/fp64/int, FP32 for fp16/bf16 inputs."""
        return red.matmul(self, o)

    def __rmatmul__(self, o):
        return red.matmul(o, self)

    # comparisons -> bool masks ------------------------------------------------------------------------------
    def __lt__(self, o):
        return ew.lt(self, o)

    def __le__(self, o):
        return ew.le(self, o)

    def __gt__(self, o):
        return ew.gt(self, o)

    def __ge__(self, o):
        return ew.ge(self, o)

    def __eq__(self, o):
        return ew.eq(self, o)

    def __ne__(self, o):
        return ew.ne(self, o)

    __hash__ = object.__hash__

    # in-place operators write through writable tensors ----------------------------------------------------------
    def _inplace(self, fn, o):
        r = fn(self, o)
        if self.storage.writable:
            if r.dtype != self.dtype:
                r = ew.cast(r, self.dtype)
            shape_ops.write(self, r, "in-place operator")
            return self
        return r

    def __iadd__(self, o):
        return self._inplace(ew.add, o)

    def __isub__(self, o):
        return self._inplace(ew.sub, o)

    def __imul__(self, o):
        return self._inplace(ew.mul, o)

    def __itruediv__(self, o):
        return self._inplace(ew.div, o)

    # indexing and writes ------------------------------------------------------------------------------------------
    def __getitem__(self, idx, *, valid_shape=None):
        """x[idx]; the reference's explicit form x.__getitem__(idx, valid_shape=[...]) also narrows the result to
        its valid region."""
        r = shape_ops.getitem(self, idx)
        if valid_shape is not None:
            r = shape_ops.view(r, list(r.shape), [0] * len(r.shape), valid_shape=valid_shape)
        return r

    getitem = __getitem__   # the reference documents __getitem__ as pypto.Tensor.getitem

    def __setitem__(self, idx, value):
        shape_ops.setitem(self, idx, value)

    def move(self, e):
        """out.move(e) is out[:] = e."""
        shape_ops.write(self, e, "move")

    def __bool__(self):
        raise current("if").error("if", "the truth value of a kernel tensor is only known when the kernel runs; "
                                        "use pypto.where(mask, a, b) to choose elementwise, or branch on a "
                                        "scalar (x.shape[0], a constant parameter)")

    def __iter__(self):
        raise current("for").error("for", "kernel tensors cannot be iterated in Python; loop over rows with "
                                          "`for i in pypto.loop(x.shape[0])` and slice x[i:i + 1, :]")

    def __len__(self):
        d = self.shape[0] if self.shape else None
        if not isinstance(d, int):
            raise current("len").error("len", "len() of a tensor whose first dim is symbolic (DYNAMIC) is only "
                                              "known when the kernel runs; use x.shape[0]")
        return d

    def __float__(self):
        raise current("float").error("float", "a kernel tensor has no value at trace time, so float() and the "
                                              "math module cannot read it; use the pypto ops on tensors "
                                              "(math.exp(x) -> pypto.exp(x))")

    __int__ = __float__

    def __index__(self):
        raise current("index").error("index", "a kernel tensor cannot be used as a Python int (range(), an "
                                              "index, a size); use pypto.loop(n) with n = x.shape[0], or "
                                              "pypto.gather for data-dependent indexing")

    def __array__(self, *args, **kwargs):
        raise current("numpy").error("numpy", "a kernel tensor has no data at trace time, so numpy cannot "
                                              "convert it; use the pypto ops (pypto.exp, pypto.sum, ...)")

    # torch / numpy functions called on kernel tensors: say which pypto op to use ---------------------------------
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return foreign_call("torch", func, args, kwargs or {})

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        op = NUMPY_OPERATORS.get(ufunc.__name__)
        if method == "__call__" and op is not None and not kwargs and len(inputs) == 2 and \
                any(type(a).__module__ == "numpy" and hasattr(a, "item") and getattr(a, "ndim", 1) == 0
                    for a in inputs):
            # `np.float32(2) * x`: numpy scalars reach a Python operator through the ufunc; compute it as the
            # same operator with a Python number (what torch does with a 0-d scalar)
            a, b = (x.item() if not isinstance(x, Value) else x for x in inputs)
            return getattr(ew, op)(a, b)
        name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
        return foreign_call("numpy", name, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return foreign_call("numpy", func, args, kwargs)

    # attribute-like members (the reference's Tensor properties) -----------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dim(self) -> "_Rank":
        """The rank: `x.dim` (the reference's property) and `x.dim()` (torch's method) both give it."""
        return _Rank(len(self.shape))

    def size(self, d=None):
        return self.shape if d is None else self.shape[d]

    @property
    def valid_shape(self) -> list:
        """The valid size of each dim (the reference's property): the same sizes as `shape`, which here already is
        the valid region (of a view, reshape or full with valid_shape=; symbolic where it is), while the static
        tile stays the storage's capacity."""
        return list(self.shape)

    @property
    def id(self) -> int:
        """A number identifying this tensor value within the kernel trace (each op result, view or slice is a new
        value with its own id)."""
        return self.vid

    @property
    def format(self):
        """The tile format: always TileOpFormat.TILEOP_ND here (a parameter annotated TILEOP_NZ is read in ND
        order by the simulator as well)."""
        return TileOpFormat.TILEOP_ND

    @property
    def name(self) -> str:
        """The tensor's name: what `x.name = "..."` set, else a parameter's name, else ""."""
        named = _tensor_names().get(self.vid)
        if named is not None:
            return named
        return self.storage.param_name if self.storage.param_name is not None and self.is_root else ""

    @name.setter
    def name(self, value: str) -> None:
        if not isinstance(value, str):
            raise current("Tensor.name").error("Tensor.name", f"a tensor name must be a str, got {value!r}")
        _tensor_names()[self.vid] = value

    # method forms with their own argument order (the rest: METHODS below) ------------------------------------
    def reshape(self, *shape, valid_shape=None, inplace=False):
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = shape[0]
        if valid_shape is None and not inplace:
            return shape_ops.reshape(self, list(shape))
        return shape_ops.reshape(self, list(shape), valid_shape=valid_shape, inplace=inplace)

    def cast(self, dtype, mode=None, satmode=None):
        return ew.cast(self, dtype, mode, satmode)

    def set_cache_policy(self, policy, value):
        """Recorded (get_cache_policy returns it, language/hints.py); no effect on the simulator's results."""
        hints.set_cache_policy(self, policy, value)

    def get_cache_policy(self, policy):
        return hints.get_cache_policy(self, policy)

    astype = cast


class _Rank(int):
    """A tensor's rank that can also be called, so that both `x.dim` (reference) and `x.dim()` (torch) work."""

    def __call__(self) -> int:
        return int(self)


def _trace_table(attr: str) -> dict:
    """Per-trace side tables (tensor names) kept on the active builder: a Value has fixed slots
    and its id is only unique within one trace."""
    b = current("Tensor")
    table = getattr(b, attr, None)
    if table is None:
        table = {}
        setattr(b, attr, table)
    return table


def _tensor_names() -> dict:
    return _trace_table("_pypto_tensor_names")


# ---- method forms: x.<method>(...) calls a function of the kernel language ------------------------------------
# One row per method. A str row: x.m(*args, **kw) is pypto.<str>(x, *args, **kw). A tuple row: (function name,
# adapter(fn, x, *args, **kw)) for the methods whose function takes x elsewhere. The function is looked up by name
# when the method is called, so a method whose function this package does not have yet raises "not supported yet"
# and starts working, with no edit here, once the function is added to pypto.language.

def _where(fn, self, condition, y):
    """x.where(condition, y): condition ? x : y (the reference's and torch's Tensor.where)."""
    return fn(condition, self, y)


def _assemble(fn, self, input, offsets):
    """x.assemble(src, offsets) writes src into x at offsets (pypto.assemble(src, offsets, x)); returns None."""
    fn(input, offsets, self)


def _concat(fn, self, tensors, dim=0):
    """x.concat(tensors, dim=0) is pypto.concat(tensors, dim): the reference documents it with the list of
    tensors as its only tensor argument, so x itself is not added to the list."""
    return fn(tensors, dim)


def _in_place(fn, self, *args, **kwargs):
    """x.f_(...): the function writes x (index_add_, scatter_); returns x."""
    fn(self, *args, **kwargs)
    return self


def _moved(fn, self, *args, **kwargs):
    """x.tril_(d): x.move(pypto.tril(x, d)); returns x."""
    shape_ops.write(self, fn(self, *args, **kwargs), "in-place method")
    return self


def _fill(fn, self, value):
    """x.fill_(v): every element of x set to v; returns x."""
    shape_ops.write(self, fn(list(self.shape), value, self.dtype), "fill_")
    return self


def _topk(fn, self, k, dim=None, largest=True, *args, **kwargs):
    """x.topk(k, dim=None, largest=True): dim None is the last dim."""
    return fn(self, k, -1 if dim is None else dim, largest, *args, **kwargs)


def _matmul(fn, self, mat2, out_dtype=None, *, a_trans=False, b_trans=False, c_matrix_nz=False,
            extend_params=None):
    """x.matmul(mat2, out_dtype, ...): c_matrix_nz (an NZ-layout result on the NPU) is refused here."""
    if c_matrix_nz:
        raise current("Tensor.matmul").error("Tensor.matmul", "c_matrix_nz=True (a result in the NZ layout) is "
                                                              "not supported yet by this pypto; results are ND")
    return fn(self, mat2, out_dtype, a_trans=a_trans, b_trans=b_trans, extend_params=extend_params)


def _expand_clone(fn, self, shape, *, valid_shape=None):
    """x.expand_clone(shape, valid_shape=None): the broadcast copy, then its valid region when given."""
    r = fn(self, shape)
    if valid_shape:
        r = shape_ops.view(r, list(shape), [0] * len(shape), valid_shape=valid_shape)
    return r


METHODS = {
    # arithmetic and comparisons
    "add": "add", "sub": "sub", "mul": "mul", "div": "div", "fmod": "fmod", "remainder": "remainder",
    "pow": "pow", "maximum": "maximum", "minimum": "minimum", "hypot": "hypot", "gcd": "gcd",
    "floor_div": "floor_div", "atan2": "atan2", "clip": "clip", "clamp": "clamp",
    "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
    "bitwise_not": "bitwise_not", "bitwise_left_shift": "bitwise_left_shift",
    "bitwise_right_shift": "bitwise_right_shift", "logical_and": "logical_and", "logical_not": "logical_not",
    "where": ("where", _where),
    # math functions
    "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log1p": "log1p", "log2": "log2",
    "log10": "log10", "sqrt": "sqrt", "rsqrt": "rsqrt", "reciprocal": "reciprocal", "cbrt": "cbrt",
    "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh",
    "cosh": "cosh", "tanh": "tanh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "erf": "erf",
    "erfc": "erfc", "sigmoid": "sigmoid", "relu": "relu", "lrelu": "lrelu", "prelu": "prelu", "abs": "abs",
    "neg": "neg", "sign": "sign", "signbit": "signbit", "isnan": "isnan", "isfinite": "isfinite",
    "ceil": "ceil", "floor": "floor", "trunc": "trunc", "round": "round", "clone": "clone",
    # reductions, scans, matmul
    "sum": "sum", "amax": "amax", "amin": "amin", "prod": "prod", "mean": "mean", "var": "var",
    "argmax": "argmax", "argmin": "argmin", "softmax": "softmax", "cumsum": "cumsum", "cumprod": "cumprod",
    "matmul": ("matmul", _matmul),
    # shapes, views, writes
    "view": "view", "transpose": "transpose", "permute": "permute", "unsqueeze": "unsqueeze",
    "squeeze": "squeeze", "expand_clone": ("expand_clone", _expand_clone), "assemble": ("assemble", _assemble),
    "concat": ("concat", _concat), "pad": "pad", "fillpad": "fillpad", "fill_": ("full", _fill),
    "tril": "tril", "triu": "triu", "tril_": ("tril", _moved), "triu_": ("triu", _moved),
    # data-dependent indexing
    "gather": "gather", "gathermask": "gathermask", "scatter": "scatter", "scatter_": "scatter_",
    "scatter_update": "scatter_update", "index_add": "index_add", "index_add_": ("index_add_", _in_place),
    "index_put_": ("index_put_", _in_place), "topk": ("topk", _topk), "axpy_": ("axpy_", _in_place),
}


def _self_first(fn, self, *args, **kwargs):
    return fn(self, *args, **kwargs)


def _method(name: str, row):
    fname, call = (row, _self_first) if isinstance(row, str) else row
    doc = (call.__doc__ if call is not _self_first else None) or f"x.{name}(...) is pypto.{fname}(x, ...)."

    def method(self, *args, **kwargs):
        from .. import language

        fn = getattr(language, fname, None)
        if not callable(fn):
            b = current(f"Tensor.{name}")
            err = not_supported(f"pypto.Tensor.{name}", f"its function pypto.{fname} is not in this pypto yet")
            raise UnsupportedFeatureError(f"kernel '{b.kernel_name}': Tensor.{name}: {err} "
                                          f"(at {user_location()})")
        return call(fn, self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = doc
    return method


# torch / numpy names whose pypto op is spelled differently (the rest: same name as pypto's, if pypto has it)
PYPTO_NAME = {
    "subtract": "sub", "multiply": "mul", "divide": "div", "true_divide": "div", "negative": "neg",
    "absolute": "abs", "power": "pow", "mod": "remainder", "fmod": "remainder", "rint": "round", "around": "round",
    "max": "amax", "min": "amin", "cat": "concat", "concatenate": "concat", "mm": "matmul", "bmm": "matmul",
    "expand_dims": "unsqueeze", "equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le",
    "greater": "gt", "greater_equal": "ge", "exp2": "pow", "to": "cast", "type": "cast", "expand": "expand_clone",
    "broadcast_to": "expand_clone", "maximum": "maximum", "minimum": "minimum", "clamp_min": "maximum",
    "clamp_max": "minimum", "square": "mul", "reciprocal": "div",
}
# numpy ufuncs that Python operators map to (`np.float32(2) * x` reaches __array_ufunc__ through them)
NUMPY_OPERATORS = {"add": "add", "subtract": "sub", "multiply": "mul", "true_divide": "div", "divide": "div",
                   "floor_divide": "floor_divide", "remainder": "remainder", "power": "pow", "equal": "eq",
                   "not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge"}


def _display(lib: str, func) -> str:
    if isinstance(func, str):
        return f"np.{func}" if lib == "numpy" else f"torch.{func}"
    name = getattr(func, "__name__", repr(func))
    qual = getattr(func, "__qualname__", name) or name
    if "TensorBase." in qual or qual.startswith("Tensor."):
        return f"torch.Tensor.{name}"
    mod = getattr(func, "__module__", None) or lib
    mod = {"numpy": "np", "torch._tensor": "torch.Tensor"}.get(mod, mod)
    if mod.startswith("numpy."):
        mod = "np"
    return f"{mod}.{name}"


def foreign_call(lib: str, func, args, kwargs):
    """A torch or numpy function reached a kernel tensor: raise naming the kernel, the line and the pypto op."""
    from .. import language

    shown = _display(lib, func)
    name = (func if isinstance(func, str) else getattr(func, "__name__", "")).strip("_")
    name = name[1:] if name.startswith("r") and name[1:] in NUMPY_OPERATORS.values() else name
    target = PYPTO_NAME.get(name, name)
    foreign = [a for a in list(args) + list(kwargs.values()) if not isinstance(a, (Value, int, float, bool))
               and type(a).__module__.split(".")[0] in ("torch", "numpy") and hasattr(a, "shape")]
    if foreign:
        what = "torch tensor" if lib == "torch" else "numpy array"
        raise current(shown).error(shown, f"a {what} from outside the kernel (a global or closure variable?) "
                                          f"cannot be combined with a kernel tensor; pass it as a tensor parameter")
    if target in getattr(language, "__all__", ()):
        hint = f"use pypto.{target}(...) instead"
    elif (hasattr(TensorMethods, name) or name in METHODS) and not name.startswith("_"):
        hint = f"use the tensor method x.{name}(...) instead"
    else:
        hint = "kernel tensors support only the pypto ops (see docs/language.md for the list)"
    raise current(shown).error(shown, f"{lib} functions cannot run on a kernel tensor (it has no data while the "
                                      f"kernel is traced); {hint}")


def _located(plain):
    """Wrap a symbolic scalar's misuse hook (ir/sym_expr.py, which cannot see the builder) so that inside a trace its
    error also names the kernel and the user's line."""
    def hook(self):
        try:
            return plain(self)
        except KernelTraceError as e:
            b = active()
            if b is None:
                raise
            raise b.error("scalar", str(e)) from None
    hook.__name__ = plain.__name__
    return hook


def kernel_tensor(shape=None, dtype=None, name=None, format=TileOpFormat.TILEOP_ND):
    """`pypto.Tensor(shape, dtype)` called in a kernel body (the reference's way to make a local tensor): the same
    zero-initialised local tensor as pypto.tensor. None (an annotation is made) outside a trace, or when the
    arguments are not a concrete shape and a dtype (markers such as pypto.DYNAMIC only annotate)."""
    if active() is None or dtype is None or not isinstance(shape, (list, tuple)) or not shape:
        return None
    if not all(isinstance(d, S.Sym) or (isinstance(d, int) and not isinstance(d, bool)) for d in shape):
        return None
    return creation.tensor(shape, dtype, name, format)


def register_tensor_class() -> None:
    """`isinstance(x, pypto.Tensor)` is True for kernel tensors (the IR's Value), as in the reference."""
    from ..vocab.annotations import Tensor
    Tensor.register_tensor_class(Value)
    Tensor.register_kernel_factory(kernel_tensor)


def install() -> None:
    """Copy every operator and method of TensorMethods onto the IR's Value (once, when the language is imported)."""
    for name, attr in vars(TensorMethods).items():
        if name not in ("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__"):
            setattr(Value, name, attr)
    for name, row in METHODS.items():
        setattr(Value, name, _method(name, row))
    if not getattr(S.Sym, "_located", False):
        for name in ("__bool__", "__index__", "__int__", "__float__"):
            setattr(S.Sym, name, _located(getattr(S.Sym, name)))
        S.Sym._located = True
