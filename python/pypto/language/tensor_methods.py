"""Installs the Python operators and methods of kernel tensors (`a + b`, `x[0:4, :]`, `out[:] = e`,
`out.move(e)`, ...) on the IR's tensor value.

The IR (`pypto.ir.nodes.Value`) sits below the language and must not import it; the language, which defines what
`+` or slicing means, installs these methods on the IR type when it is imported (`install`), the way JAX's
array_methods installs its array methods.
"""
from __future__ import annotations

from ..errors import KernelTraceError
from ..ir.builder import current
from ..ir.nodes import Value
from ..vocab.dtypes import DataType
from . import elementwise as ew
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
        raise KernelTraceError("the truth value of a kernel tensor is only known when the kernel runs; use "
                               "pypto.where(mask, a, b) or a static value")

    def __iter__(self):
        raise KernelTraceError("kernel tensors cannot be iterated in Python; use pypto.loop and slicing")

    def __len__(self):
        d = self.shape[0] if self.shape else None
        if not isinstance(d, int):
            raise KernelTraceError("len() of a tensor whose first dim is symbolic; use x.shape[0]")
        return d

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

    def exp(self):
        return ew.exp(self)

    def sqrt(self):
        return ew.sqrt(self)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = shape[0]
        return shape_ops.reshape(self, list(shape))

    def transpose(self, d0, d1):
        return shape_ops.transpose(self, d0, d1)

    def unsqueeze(self, d):
        return shape_ops.unsqueeze(self, d)

    def cast(self, dtype):
        return ew.cast(self, dtype)

    astype = cast

    def clone(self):
        return ew.clone(self)



def install() -> None:
    """Copy every operator and method of TensorMethods onto the IR's Value (once, when the language is imported)."""
    for name, attr in vars(TensorMethods).items():
        if name not in ("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__"):
            setattr(Value, name, attr)
