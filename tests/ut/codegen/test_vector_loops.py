"""The loops generated code is made of vectorize on every kernel ISA the machine runs (g++'s -fopt-info-vec report,
the kernels' own flags): a loop over each float function of kernel_vmath.h, over fp16 and bf16 conversions both
ways (except float -> fp16 on sse4), and a whole generated kernel with all of them, whose assembly calls no libm float function."""
import re
import subprocess

import pytest
import torch

import pypto
from pypto.compiler import toolchain as T

VMATH = ["exp_", "log_", "log2_", "log10_", "log1p_", "exp2_", "expm1_", "tanh_", "erf_", "erfc_", "sinh_", "cosh_", "asinh_",
         "acosh_", "atanh_", "atan_", "asin_", "acos_", "cbrt_", "sin_", "cos_", "tan_",
         "vm_sin_bf16_fast", "vm_cos_bf16_fast", "erf_bf16_"]
VMATH2 = ["pow_", "atan2_", "hypot_"]
CONVERSIONS = {"f32_to_f16": "pypto_rt::half::from_float(a[i])", "f16_to_f32": "(float)h[i]",
               "f32_to_bf16": "pypto_rt::bf16::from_float(a[i])", "bf16_to_f32": "(float)b[i]"}


def _isas():
    have = set(T.cpu_identity().split("|")[1].split())
    return ["native"] + (["avx2"] if {"avx2", "fma"} <= have else []) + (["sse4"] if "sse4_2" in have else [])


def _report(tmp_path, isa, src):
    cpp = tmp_path / "loops.cpp"
    cpp.write_text(src)
    r = subprocess.run([T.CXX, *T.flags_for(isa), "-I", str(T.include_dir()), "-fopt-info-vec-optimized", "-S", "-o",
                        str(tmp_path / "loops.s"), str(cpp)], capture_output=True, text=True, check=True)
    vec = {int(m.group(1)) for m in re.finditer(r"loops\.cpp:(\d+):\d+: optimized: loop vectorized", r.stderr)}
    return vec, (tmp_path / "loops.s").read_text()


@pytest.mark.parametrize("isa", _isas())
def test_each_vmath_function_and_conversion_loop_vectorizes(tmp_path, isa):
    lines = ['#include "pypto/kernel_abi.h"', '#include "pypto/kernel_rt.h"']
    want = {}
    for fn in VMATH:
        want[fn] = len(lines) + 2
        lines += [f"void f_{fn}(const float* __restrict a, float* __restrict o, int n) {{",
                  f"  for (int i = 0; i < n; ++i) o[i] = pypto_rt::{fn}(a[i]);", "}"]
    for fn in VMATH2:
        want[fn] = len(lines) + 2
        lines += [f"void g_{fn}(const float* __restrict a, const float* __restrict b, float* __restrict o, int n) {{",
                  f"  for (int i = 0; i < n; ++i) o[i] = pypto_rt::{fn}(a[i], b[i]);", "}"]
    out_type = {"f32_to_f16": "pypto_rt::half", "f32_to_bf16": "pypto_rt::bf16"}
    for name, expr in CONVERSIONS.items():
        want[name] = len(lines) + 3
        lines += [f"void c_{name}(const float* __restrict a, const pypto_rt::half* __restrict h,",
                  f"    const pypto_rt::bf16* __restrict b, {out_type.get(name, 'float')}* __restrict o, int n) {{",
                  f"  for (int i = 0; i < n; ++i) o[i] = {expr};", "}"]
    vec, asm = _report(tmp_path, isa, "\n".join(lines) + "\n")
    missed = [name for name, ln in want.items() if ln not in vec]
    # SSE4 has no per-lane variable shift (AVX2's vpsrlvd), which fp16's subnormal rounding needs: that one
    # conversion stays scalar there
    assert missed == (["f32_to_f16"] if isa == "sse4" else []), (isa, missed)
    assert not re.findall(r"call\s+\w*(log|exp|tanh|erfc?|sin|cos|tan|pow|atan2|hypot)\w*f", asm), isa


def test_a_generated_kernel_of_every_vmath_function_calls_no_libm(tmp_path):
    from pypto.codegen import generate
    from pypto.frontend.rewrite import prepare
    from pypto.ir import trace
    from pypto.testing import simple_request
    from pypto.vocab.params import build_params

    S2 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_BF16)

    def k(x: S2, out: S2):
        y = pypto.log(x) + pypto.log2(x) + pypto.log10(x) + pypto.log1p(x)
        out[:] = y + pypto.exp2(x) + pypto.expm1(x) + pypto.tanh(x) + pypto.erf(x)

    x = (torch.rand(16, 1000) + 0.5).bfloat16()
    params = build_params(k.__name__, k)
    req, _, _ = simple_request(k.__name__, params, (x, torch.zeros_like(x)), {})
    src = generate(trace(prepare(k, k.__name__), req), with_ir_comment=False)
    for isa in _isas():
        vec, asm = _report(tmp_path, isa, src)
        assert vec, isa
        calls = set(re.findall(r"call\s+(\w+)", asm))
        assert not {c for c in calls if re.fullmatch(r"(log|log2|log10|log1p|exp2|expm1|tanh|erf)f?(@PLT)?", c)}, isa


def test_fp32_trig_runs_in_blocks_that_call_no_libm(tmp_path):
    """fp32 sin/cos/tan are hoisted into pypto_rt::sin_block & co. (a block of 64 with the fast reduction where it
    allows): the generated code calls them, and on every ISA the machine runs the kernel's assembly calls neither
    a libm trig function nor an out-of-line block function."""
    from pypto.codegen import generate
    from pypto.frontend.rewrite import prepare
    from pypto.ir import trace
    from pypto.testing import simple_request
    from pypto.vocab.params import build_params

    S2 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32)

    def k(x: S2, out: S2):
        out[:] = pypto.sin(x) * pypto.cos(x) + pypto.tan(x)

    x = torch.rand(16, 1000)
    params = build_params(k.__name__, k)
    req, _, _ = simple_request(k.__name__, params, (x, torch.zeros_like(x)), {})
    src = generate(trace(prepare(k, k.__name__), req), with_ir_comment=False)
    assert all(f"pypto_rt::{f}_block<64>(" in src for f in ("sin", "cos", "tan")), src
    for isa in _isas():
        vec, asm = _report(tmp_path, isa, src)
        assert vec, isa
        calls = set(re.findall(r"call\s+(\w+)", asm))
        assert not {c for c in calls if re.search(r"(sin|cos|tan)", c)}, (isa, calls)


def test_bf16_trig_of_a_bf16_value_runs_in_bf16_blocks(tmp_path):
    """bf16 sin/cos of a bf16 value are hoisted into pypto_rt::sin_bf16_block & co. (the float reduction below
    512); the same op on an fp32 value keeps the fp32 block. The kernel vectorizes and calls no libm trig
    function on every ISA the machine runs."""
    from pypto.codegen import generate
    from pypto.frontend.rewrite import prepare
    from pypto.ir import trace
    from pypto.testing import simple_request
    from pypto.vocab.params import build_params

    S2 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_BF16)
    F2 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32)

    def k(x: S2, y: F2, out: S2, out32: F2):
        out[:] = pypto.sin(x) + pypto.cos(x)
        out32[:] = pypto.sin(y)

    x = torch.rand(16, 1000).bfloat16()
    y = torch.rand(16, 1000)
    params = build_params(k.__name__, k)
    req, _, _ = simple_request(k.__name__, params, (x, y, torch.zeros_like(x), torch.zeros_like(y)), {})
    src = generate(trace(prepare(k, k.__name__), req), with_ir_comment=False)
    assert "pypto_rt::sin_bf16_block<64>(" in src and "pypto_rt::cos_bf16_block<64>(" in src, src
    assert "pypto_rt::sin_block<64>(" in src, src
    for isa in _isas():
        vec, asm = _report(tmp_path, isa, src)
        assert vec, isa
        calls = set(re.findall(r"call\s+(\w+)", asm))
        assert not {c for c in calls if re.search(r"(sin|cos|tan)", c)}, (isa, calls)
