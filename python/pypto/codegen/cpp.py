"""The unfused emitter: IR statements -> C++17 loop nests (`source.py` wraps them into the translation unit;
`fused.py` extends this emitter to run groups of ops tile by tile).
Codegen model: a tensor value is (pointer, dims, strides). Dims and strides are printed as C++ expressions,
so static sizes become literals that g++ can unroll/vectorize and DYNAMIC sizes read the argument's shape.
Views are pointer offsets with the parent's strides; broadcast dims contribute no index term (stride 0).
Op results are fresh contiguous buffers: on the stack when the size is static and small, else an RAII heap
block (pypto_rt::Buffer). Elementwise and reduction loop nests are blocked by set_vec_tile_shapes; matmul is
a blocked i-k-j nest (set_cube_tile_shapes). `pypto.loop(parallel=True)` runs its body through
pypto_rt::parallel_for on ctx->num_threads threads; `unroll_list` loops become one sub-loop per factor over a
shared iteration count (the last one is the remainder loop); kernel branches are C++ if/else. With
debug_options.runtime_debug_mode=4 every statement is preceded by bounds checks of the views it touches
(pypto_rt::check_view). The output is deterministic: the same IR gives byte-identical source.

Where the code lives: emitter.py holds the plumbing (lines, names, buffers, pointers, loop nests, elem_loop,
the statement dispatch); each op family is a mixin in its own module. A new op kind `k` is a method `op_k` in
the mixin of its family (or a new mixin listed below).
"""
from __future__ import annotations

from .bounds import BoundsCheckEmitter
from .control import ControlEmitter
from .conv_random import ConvRandomEmitter
from .elementwise import ElementwiseEmitter
from .emitter import EmitterCore
from .indexing import IndexingEmitter
from .matmul import MatmulEmitter
from .quant import QuantEmitter
from .ranking import RankingEmitter
from .reductions import ReductionEmitter
from .shmem import ShmemEmitter


class _Emitter(ControlEmitter, BoundsCheckEmitter, ElementwiseEmitter, ReductionEmitter, RankingEmitter,
               IndexingEmitter, MatmulEmitter, QuantEmitter, ConvRandomEmitter, ShmemEmitter, EmitterCore):
    """The unfused emitter: the plumbing (EmitterCore) and one mixin per op family."""


__all__ = ["_Emitter"]
