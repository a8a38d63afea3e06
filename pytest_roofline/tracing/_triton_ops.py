"""Every operation Triton's interpreter builder exposes, by what the launch counter makes of it.

Each ``create_*`` method of ``triton.runtime.interpreter.InterpreterBuilder`` is in exactly
one table here; ``tests/test_trace_triton_ops.py`` fails when a Triton adds one no table
names, and while a launch is counted such a method is noted by name and the launch refused
(:func:`pytest_roofline.tracing._triton.counted`), never skipped.

* ``FLOPS``: floating-point arithmetic, the FLOPs per valid lane; ``ADDITIVE`` among them
  keep the lanes either operand holds (a subtract: its first operand's), so an accumulator
  keeps its earlier lanes.
* ``CARRY``: elementwise ops that compute nothing (casts, bit casts, select) but carry the
  valid lanes and a dot's products on; ``SHAPE``: ops that move lanes (broadcast, reshape,
  transpose, join, split, concatenate, gather), their masks moved with the data.
* ``INTEGER``: index, offset, pointer and mask arithmetic: not FLOPs.
* ``MEMORY``: counted as traffic (``create_masked_load``, ``create_masked_store``, the
  atomics); ``THROUGH``: ops that move memory only by calling those (plain loads and
  stores, tensor descriptors, atomic load/store/poll), counted there.
* ``MATRIX``: ``create_dot`` and ``create_dot_scaled``.
* ``NO_WORK``: control and bookkeeping (program ids, ranges, asserts, prints, barriers,
  descriptor creation).
* ``REFUSED``: what the interpreter cannot run either (inline assembly, extern libraries).
"""

from __future__ import annotations

#: Floating-point builder operations and the FLOPs each makes per valid lane.
FLOPS: dict[str, float] = {
    **dict.fromkeys(("create_fadd", "create_fsub", "create_fmul", "create_fdiv",
                     "create_frem", "create_precise_divf", "create_approx_divf",
                     "create_minimumf", "create_minnumf", "create_maximumf", "create_maxnumf",
                     "create_fneg", "create_fabs", "create_floor", "create_ceil",
                     "create_exp", "create_exp2", "create_log", "create_log2", "create_sqrt",
                     "create_precise_sqrt", "create_rsqrt", "create_sin", "create_cos",
                     "create_erf"), 1.0),
    **dict.fromkeys(("create_fcmpOLT", "create_fcmpOGT", "create_fcmpOLE", "create_fcmpOGE",
                     "create_fcmpOEQ", "create_fcmpONE", "create_fcmpULT", "create_fcmpUGT",
                     "create_fcmpULE", "create_fcmpUGE", "create_fcmpUEQ", "create_fcmpUNE"),
                    1.0),
    "create_fma": 2.0, "create_clampf": 2.0,
}
#: FLOPS ops whose result holds data where either operand does (a subtract: where its first
#: does; a loop's ``acc += x`` keeps the lanes of earlier chunks after a masked last one),
#: with the value each is a move for (adding a constant 0, the max with a constant -inf: an
#: accumulator's start, not a FLOP).
ADDITIVE: dict[str, float] = {
    "create_fadd": 0.0, "create_fsub": 0.0,
    "create_maximumf": float("-inf"), "create_maxnumf": float("-inf"),
    "create_minimumf": float("inf"), "create_minnumf": float("inf"),
}
#: Elementwise ops that compute nothing but carry their operands' valid lanes on.
CARRY = ("create_fp_to_fp", "create_fp_ext", "create_fp_trunc", "create_si_to_fp",
         "create_ui_to_fp", "create_fp_to_si", "create_fp_to_ui", "create_bitcast",
         "create_select", "create_int_cast")
#: Ops that move lanes: their masks are moved with the data.
SHAPE = ("create_broadcast", "create_expand_dims", "create_reshape", "create_trans",
         "create_splat", "create_unsplat", "create_join", "create_split", "create_cat",
         "create_gather")
#: Integer arithmetic: indices, offsets, pointers and masks, not FLOPs.
INTEGER = ("create_add", "create_sub", "create_mul", "create_sdiv", "create_udiv",
           "create_idiv", "create_srem", "create_urem", "create_and", "create_or",
           "create_xor", "create_shl", "create_lshr", "create_ashr", "create_minsi",
           "create_minui", "create_maxsi", "create_maxui", "create_umulhi", "create_iabs",
           "create_icmpEQ", "create_icmpNE", "create_icmpSGE", "create_icmpSGT",
           "create_icmpSLE", "create_icmpSLT", "create_icmpUGE", "create_icmpUGT",
           "create_icmpULE", "create_icmpULT", "create_addptr", "create_int_to_ptr",
           "create_ptr_to_int", "create_make_range", "create_histogram")
#: Memory traffic, counted where it happens.
MEMORY = ("create_masked_load", "create_masked_store", "create_atomic_rmw",
          "create_atomic_cas")
#: Ops that move memory only through MEMORY's (counted there).
THROUGH = ("create_load", "create_store", "create_atomic_load", "create_atomic_store",
           "create_atomic_poll", "create_descriptor_load", "create_descriptor_store",
           "create_descriptor_gather", "create_descriptor_scatter")
MATRIX = ("create_dot", "create_dot_scaled")
NO_WORK = ("create_get_program_id", "create_get_num_programs", "create_assert",
           "create_assume", "create_barrier", "create_print", "create_make_tensor_descriptor")
REFUSED = ("create_extern_elementwise", "create_inline_asm")

#: Every classified op name.
KNOWN = frozenset((*FLOPS, *CARRY, *SHAPE, *INTEGER, *MEMORY, *THROUGH, *MATRIX, *NO_WORK,
                   *REFUSED))
#: Builder methods making constants (``tl.zeros``, a Python number in an expression).
CONSTANTS = ("get_int1", "get_uint8", "get_int8", "get_uint16", "get_int16", "get_uint32",
             "get_int32", "get_uint64", "get_int64", "get_fp16", "get_bf16", "get_fp32",
             "get_fp64", "get_null_value", "get_all_ones_value")
#: ``tl.dot_scaled`` operand formats (``ScaleDotElemTypeTY`` names) -> precision priced.
SCALED_FORMATS = {"E4M3": "fp8", "E5M2": "fp8", "E2M3": "fp6", "E3M2": "fp6",
                  "E2M1": "fp4", "BF16": "bf16", "FP16": "fp16"}
#: An fp32 ``tl.dot``'s ``input_precision`` (``INPUT_PRECISION`` names) -> the precision its
#: passes run in and how many passes (``tf32x3``: three tf32 products per fp32 one).
INPUT_PRECISION = {"IEEE": ("fp32", 1), "TF32": ("tf32", 1), "TF32x3": ("tf32", 3),
                   "BF16x3": ("bf16", 3), "BF16x6": ("bf16", 6)}


def classify(names: list[str]) -> list[str]:
    """The ``create_*`` names among *names* no table classifies."""
    return sorted(n for n in names if n.startswith("create_") and n not in KNOWN)
