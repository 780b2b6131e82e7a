"""Installs the Python operators and methods of kernel tensors (`a + b`, `x[0:4, :]`, `out[:] = e`,
`out.move(e)`, ...) on the IR's tensor value.

The IR (`pypto.ir.nodes.Value`) sits below the language and must not import it; the language, which defines what
`+` or slicing means, installs these methods on the IR type when it is imported (`install`), the way JAX's
array_methods installs its array methods.
"""
from __future__ import annotations

from ..errors import KernelTraceError
from ..ir import sym as S
from ..ir.builder import active, current
from ..ir.nodes import Value
from ..vocab.dtypes import DataType
from . import elementwise as ew
from . import hints
from . import indexing
from . import reduce as red
from . import shape_ops


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
    def __getitem__(self, idx):
        return shape_ops.getitem(self, idx)

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

    # shape helpers and method forms -------------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return len(self.shape)

    def size(self, d=None):
        return self.shape if d is None else self.shape[d]

    def sum(self, dim=None, keepdim=False):
        return red.sum(self, dim, keepdim)

    def amax(self, dim=None, keepdim=False):
        return red.amax(self, dim, keepdim)

    def amin(self, dim=None, keepdim=False):
        return red.amin(self, dim, keepdim)

    def exp(self, precision_type=None):
        return ew.exp(self, precision_type)

    def sqrt(self, precision_type=None):
        return ew.sqrt(self, precision_type)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = shape[0]
        return shape_ops.reshape(self, list(shape))

    def transpose(self, d0, d1):
        return shape_ops.transpose(self, d0, d1)

    def unsqueeze(self, d):
        return shape_ops.unsqueeze(self, d)

    def cast(self, dtype, mode=None, satmode=None):
        return ew.cast(self, dtype, mode, satmode)

    def set_cache_policy(self, policy, value):
        hints.set_cache_policy(self, policy, value)

    def get_cache_policy(self, policy):
        return hints.get_cache_policy(self, policy)

    astype = cast

    def clone(self):
        return ew.clone(self)

    def round(self, decimals=0):
        return ew.round(self, decimals)

    def trunc(self):
        return ew.trunc(self)

    def scatter(self, dim, index, src):
        return indexing.scatter(self, dim, index, src)



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
    elif hasattr(TensorMethods, name) and not name.startswith("_"):
        hint = f"use the tensor method x.{name}(...) instead"
    else:
        hint = "kernel tensors support only the pypto ops (see docs/language.md for the list)"
    raise current(shown).error(shown, f"{lib} functions cannot run on a kernel tensor (it has no data while the "
                                      f"kernel is traced); {hint}")


def _located(plain):
    """Wrap a symbolic scalar's misuse hook (ir/sym.py, which cannot see the builder) so that inside a trace its
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


def install() -> None:
    """Copy every operator and method of TensorMethods onto the IR's Value (once, when the language is imported)."""
    for name, attr in vars(TensorMethods).items():
        if name not in ("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__"):
            setattr(Value, name, attr)
    if not getattr(S.Sym, "_located", False):
        for name in ("__bool__", "__index__", "__int__", "__float__"):
            setattr(S.Sym, name, _located(getattr(S.Sym, name)))
        S.Sym._located = True
