"""Python operators and methods of kernel tensors (`a + b`, `x[0:4, :]`, `out[:] = e`, `out.move(e)`, ...).

They forward to the language ops (imported lazily: the language package builds on the IR)."""
from __future__ import annotations

from ..errors import KernelTraceError


def _L():
    from .. import language

    return language


class TensorOps:
    __slots__ = ()

    # arithmetic -------------------------------------------------------------------------------------------
    def __add__(self, o):
        return _L().add(self, o)

    def __radd__(self, o):
        return _L().add(o, self)

    def __sub__(self, o):
        return _L().sub(self, o)

    def __rsub__(self, o):
        return _L().sub(o, self)

    def __mul__(self, o):
        return _L().mul(self, o)

    def __rmul__(self, o):
        return _L().mul(o, self)

    def __truediv__(self, o):
        return _L().div(self, o)

    def __rtruediv__(self, o):
        """scalar / x is computed as torch does it: reciprocal(x) * scalar."""
        if isinstance(o, TensorOps):
            return _L().div(o, self)
        return _L().mul(_L().div(1, self), o)

    def __floordiv__(self, o):
        return _L().floor_divide(self, o)

    def __rfloordiv__(self, o):
        return _L().floor_divide(o, self)

    def __mod__(self, o):
        return _L().remainder(self, o)

    def __rmod__(self, o):
        return _L().remainder(o, self)

    def __pow__(self, o):
        return _L().pow(self, o)

    def __rpow__(self, o):
        return _L().pow(o, self)

    def __neg__(self):
        return _L().neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _L().abs(self)

    def __invert__(self):
        """~mask: logical not of a BOOL tensor. (torch's ~ on integers is bitwise NOT, which the kernel language
        does not have: an error rather than a different result.)"""
        from ..frontend.dtypes import DataType
        from .builder import current

        if self.dtype != DataType.DT_BOOL:
            raise current("invert").error("invert", f"`~x` needs a bool mask, got a {self.dtype.short} tensor "
                                                    f"(torch's ~ is bitwise there); use pypto.logical_not(x)")
        return _L().logical_not(self)

    def __matmul__(self, o):
        """a @ b: matmul with out_dtype = a's dtype for fp32/fp64/int, FP32 for fp16/bf16 inputs."""
        return _L().matmul(self, o)

    def __rmatmul__(self, o):
        return _L().matmul(o, self)

    # comparisons -> bool masks ------------------------------------------------------------------------------
    def __lt__(self, o):
        return _L().lt(self, o)

    def __le__(self, o):
        return _L().le(self, o)

    def __gt__(self, o):
        return _L().gt(self, o)

    def __ge__(self, o):
        return _L().ge(self, o)

    def __eq__(self, o):
        return _L().eq(self, o)

    def __ne__(self, o):
        return _L().ne(self, o)

    __hash__ = object.__hash__

    # in-place operators write through writable tensors ----------------------------------------------------------
    def _inplace(self, fn, o):
        r = fn(self, o)
        if self.storage.writable:
            if r.dtype != self.dtype:
                r = _L().cast(r, self.dtype)
            _L().shape_ops.write(self, r, "in-place operator")
            return self
        return r

    def __iadd__(self, o):
        return self._inplace(_L().add, o)

    def __isub__(self, o):
        return self._inplace(_L().sub, o)

    def __imul__(self, o):
        return self._inplace(_L().mul, o)

    def __itruediv__(self, o):
        return self._inplace(_L().div, o)

    # indexing and writes ------------------------------------------------------------------------------------------
    def __getitem__(self, idx):
        return _L().shape_ops.getitem(self, idx)

    def __setitem__(self, idx, value):
        _L().shape_ops.setitem(self, idx, value)

    def move(self, e):
        """out.move(e) is out[:] = e."""
        _L().shape_ops.write(self, e, "move")

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
        return _L().sum(self, dim, keepdim)

    def amax(self, dim=None, keepdim=False):
        return _L().amax(self, dim, keepdim)

    def amin(self, dim=None, keepdim=False):
        return _L().amin(self, dim, keepdim)

    def exp(self):
        return _L().exp(self)

    def sqrt(self):
        return _L().sqrt(self)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = shape[0]
        return _L().reshape(self, list(shape))

    def transpose(self, d0, d1):
        return _L().transpose(self, d0, d1)

    def unsqueeze(self, d):
        return _L().unsqueeze(self, d)

    def cast(self, dtype):
        return _L().cast(self, dtype)

    astype = cast

    def clone(self):
        return _L().clone(self)
