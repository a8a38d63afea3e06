"""The table of aten ops the torch tracer knows, by class; the policy for the rest.

Every aten op the tracer meets falls in one class (docs/trace.md lists the conventions):

* ``matrix``: products, convolutions, attention (their formulas count multiply-accumulates);
* ``vector``: arithmetic on the vector units, with a FLOP formula per op (norms, softmax,
  reductions, scans, pooling, interpolation, sorting); every op torch tags ``pointwise`` is
  elementwise arithmetic (1 FLOP per output element unless ``ops._family.ELEMENT_FLOPS`` says)
  unless listed here as a copy;
* ``view``: metadata only, no kernel (every op torch marks ``is_view`` is one too);
* ``copy``: moves or fills data, no FLOPs (``clone``, ``cat``, padding, ``where``, factories);
* ``gather``: reads only the rows it selects from its first operand;
* ``scatter``: writes only where its values go (in place) or copies its destination;
* ``collective``: communication between devices (filled by the collective tracers);
* anything else is **unknown**: recorded with its bytes and listed in ``Workload.unknown``,
  never counted as 0 FLOPs without a word.

An op is looked up by its overload packet's name, with a trailing ``_`` (in place) removed.

**One row per op family** (as fvcore's handles and torch's ``register_flop_formula``): a set
of op names, and below, the family's formula registered for each of them in
:data:`VECTOR_FLOPS` (a Call in, FLOPs out) or :data:`MATRIX_KERNELS` (a Call in, kernels
out), through the same :class:`~.registry.Registry` as ``register_op`` (an op in two
families is an error at import). The rules themselves (reductions, pools, scored pairs,
per-element FLOPs) are ``ops._family``'s. Adding an op to a family is one name in one set;
a new family is a set and its formula, both here. The recorder (``_torch``) only reads
these tables.

**One class per op**: the named sets (:data:`GATHER`, :data:`SCATTER`, :data:`COPY`,
:data:`VIEW`, :data:`VECTOR`, :data:`COLLECTIVE`) and the families' rows are disjoint, checked
at import (:func:`disjoint`: an op in two is an error naming it and both), so an op's class
never depends on the order the tables are read in. An op some family gives a formula is in
that family only: the formula is its pricing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch

from ..engine.workload import Kernel
from ..ops import _family as R
from . import _kernels as K
from . import _torch_args as T
from . import _torch_compat as C
from . import registry
from ._base import TraceError

CLASSES = ("matrix", "vector", "view", "copy", "gather", "scatter", "collective", "unknown")

MATMUL = frozenset({"mm", "addmm", "bmm", "baddbmm", "_addmm_activation", "addbmm",
                    "_scaled_mm", "_int_mm", "_weight_int8pack_mm", "_weight_int4pack_mm",
                    "_weight_int4pack_mm_for_cpu", "_weight_int4pack_mm_with_scales_and_zeros",
                    "_dyn_quant_matmul_4bit", "_grouped_mm", "_scaled_grouped_mm"})
CONV = frozenset({"convolution", "_convolution", "cudnn_convolution", "mkldnn_convolution",
                  "_slow_conv2d_forward", "conv2d", "conv1d", "conv3d",
                  "cudnn_convolution_transpose", "_convolution_mode", "slow_conv3d_forward",
                  "slow_conv_dilated2d", "slow_conv_dilated3d", "slow_conv_transpose2d",
                  "slow_conv_transpose3d", "_conv_depthwise2d", "miopen_convolution",
                  "mkldnn_convolution_transpose"})
CONV_BACKWARD = frozenset({"convolution_backward"})
#: Fused attention forward ops (query, key, value first).
SDPA = frozenset({"_scaled_dot_product_flash_attention",
                  "_scaled_dot_product_efficient_attention",
                  "_scaled_dot_product_cudnn_attention",
                  "_scaled_dot_product_flash_attention_for_cpu",
                  "_scaled_dot_product_fused_attention_overrideable",
                  "_flash_attention_forward", "_efficient_attention_forward",
                  "_cudnn_attention_forward",
                  "_scaled_dot_product_attention_math_for_mps"})
#: Their backward ops: (grad_out, query, key, value, ...) or (grad_out, query, ...).
SDPA_BACKWARD = frozenset({"_scaled_dot_product_flash_attention_backward",
                           "_scaled_dot_product_efficient_attention_backward",
                           "_scaled_dot_product_cudnn_attention_backward",
                           "_scaled_dot_product_flash_attention_for_cpu_backward",
                           "_scaled_dot_product_fused_attention_overrideable_backward",
                           "_flash_attention_backward", "_efficient_attention_backward",
                           "_cudnn_attention_backward"})

SOFTMAX = frozenset({"_softmax", "softmax", "_log_softmax", "log_softmax", "_safe_softmax"})
#: Softmax backward: dx = y·(dy - sum(dy·y)): multiply, reduce, subtract, multiply (4/elem);
#: log_softmax's: dx = dy - exp(y)·sum(dy) (exp, multiply, subtract, reduce: 4/elem).
SOFTMAX_BACKWARD = frozenset({"_softmax_backward_data", "_log_softmax_backward_data"})
LAYER_NORMS = frozenset({"native_layer_norm", "layer_norm", "native_group_norm",
                         "group_norm"})
RMS_NORMS = frozenset({"_fused_rms_norm", "rms_norm"})
#: Batch norms: (input, weight, bias, running_mean, running_var, training, ...); the
#: ``_no_training`` variant is eval mode, the ``_legit`` one without running stats training.
BATCH_NORMS = frozenset({"native_batch_norm", "_native_batch_norm_legit",
                         "_native_batch_norm_legit_no_training", "batch_norm",
                         "_batch_norm_with_update", "_batch_norm_no_update",
                         "cudnn_batch_norm", "miopen_batch_norm", "_batch_norm_impl_index"})
NORM_BACKWARD = frozenset({"native_layer_norm_backward", "native_group_norm_backward",
                           "native_batch_norm_backward", "_fused_rms_norm_backward",
                           "batch_norm_backward", "cudnn_batch_norm_backward",
                           "miopen_batch_norm_backward"})
#: One FLOP per input element not already an output (a comparison or an add).
REDUCE_ONE = frozenset({"sum", "amax", "amin", "max", "min", "prod", "argmax", "argmin",
                        "any", "all", "nansum", "aminmax", "count_nonzero"})
#: Scans: one FLOP per element.
SCAN = frozenset({"cumsum", "cumprod", "logcumsumexp", "cummax", "cummin",
                  "_logcumsumexp"})
REDUCE_PER_ELEMENT = {"mean": 1.0, "nanmean": 1.0, "var": 3.0, "std": 3.0, "var_mean": 3.0,
                      "std_mean": 3.0, "linalg_vector_norm": 2.0, "norm": 2.0,
                      "logsumexp": 3.0}
#: Pooling: max pools compare (window - 1 per output), average pools add and divide
#: (window per output); adaptive pools read each input element once.
MAX_POOL = frozenset({"max_pool1d", "max_pool2d", "max_pool3d", "max_pool2d_with_indices",
                      "max_pool3d_with_indices", "_max_pool2d", "mkldnn_max_pool2d",
                      "quantized_max_pool2d"})
AVG_POOL = frozenset({"avg_pool1d", "avg_pool2d", "avg_pool3d"})
ADAPTIVE_POOL = frozenset({"_adaptive_avg_pool2d", "_adaptive_avg_pool3d",
                           "adaptive_avg_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
                           "adaptive_max_pool1d", "mkldnn_adaptive_avg_pool2d",
                           "adaptive_avg_pool2d", "adaptive_avg_pool3d"})
#: Interpolation: taps per output element (linear in d dimensions: 2^d; bicubic: 16).
UPSAMPLE = {"upsample_linear1d": 2, "upsample_bilinear2d": 4, "_upsample_bilinear2d_aa": 4,
            "upsample_trilinear3d": 8, "upsample_bicubic2d": 16, "_upsample_bicubic2d_aa": 16}
#: Sorting: comparisons, as a reduction counts them: sort n·log2(length) per row; topk one
#: pass (n comparisons against the running k-th).
SORT = frozenset({"sort", "argsort", "msort"})
TOPK = frozenset({"topk", "kthvalue", "median", "nanmedian", "mode"})
#: Embedding bags: gather rows and add them (one add per gathered element).
EMBEDDING_BAG = frozenset({"_embedding_bag", "_embedding_bag_forward_only", "embedding_bag"})
#: Scatters that add their values (one FLOP per value): of the vector class (their family's
#: formula prices them), their bytes those of a scatter (:data:`WRITES_VALUES`).
SCATTER_ADD = frozenset({"index_add", "scatter_add", "scatter_reduce", "index_reduce",
                         "_index_put_impl", "index_put"})
#: An embedding's weight gradient: each row of grad_output added into its token's row.
EMBEDDING_BACKWARD = frozenset({"embedding_dense_backward", "embedding_backward",
                                "_embedding_bag_backward", "_embedding_bag_dense_backward"})

GATHER = frozenset({"embedding", "index_select", "index", "gather", "_unsafe_index", "take",
                    "take_along_dim", "masked_select", "upsample_nearest1d",
                    "upsample_nearest2d", "upsample_nearest3d", "_upsample_nearest_exact1d",
                    "_upsample_nearest_exact2d", "_upsample_nearest_exact3d"})
#: Scatters that only move data; in place, they write only where their last operand (the
#: values) goes. (``index_put``, ``scatter_add``, ``index_add``, ``scatter_reduce``,
#: ``index_reduce`` may add: they are :data:`SCATTER_ADD`'s, whose formula counts that.)
SCATTER = frozenset({"index_copy", "scatter", "index_fill", "masked_scatter",
                     "slice_scatter", "select_scatter", "diagonal_scatter",
                     "as_strided_scatter", "_unsafe_index_put",
                     "_unsafe_masked_index_put_accumulate"})
#: Ops that, in place, write only where their values go: the scatters, adding or not.
WRITES_VALUES = SCATTER | SCATTER_ADD
#: Move or fill data, compute nothing (pointwise-tagged ones included).
COPY = frozenset({"where", "masked_fill", "clone", "copy", "_to_copy", "to", "fill", "zero",
                  "lift_fresh_copy", "_copy_from", "_copy_from_and_resize", "detach_copy",
                  "alias_copy", "view_copy", "scalar_tensor", "cat", "stack", "hstack",
                  "vstack", "constant_pad_nd", "reflection_pad1d", "reflection_pad2d",
                  "reflection_pad3d", "replication_pad1d", "replication_pad2d",
                  "replication_pad3d", "_pad_circular", "flip", "roll", "repeat",
                  "repeat_interleave", "tril", "triu", "tile", "contiguous", "_unsafe_masked_index",
                  "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "arange",
                  "linspace", "logspace", "eye", "tensor", "new_zeros", "new_ones",
                  "new_full", "rand", "randn", "randint", "rand_like",
                  "randn_like", "randint_like", "randperm", "normal", "uniform", "bernoulli",
                  "random", "exponential", "geometric", "cauchy", "log_normal",
                  "native_dropout", "nonzero", "nonzero_static", "one_hot", "block_diag",
                  "_local_scalar_dense_copy", "resize_as", "polar", "_foreach_copy",
                  "_pin_memory", "diag_embed", "narrow_copy", "bincount", "histc",
                  "unique_consecutive", "_unique2", "unique_dim", "searchsorted",
                  "bucketize", "complex", "view_as_real_copy", "_to_dense",
                  "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
                  "col2im", "im2col", "_reshape_copy", "embedding_renorm",
                  # view backwards: the gradient copied into zeros of the input's shape
                  "slice_backward", "select_backward", "diagonal_backward",
                  "unfold_backward", "as_strided_backward", "expand_backward"})
#: Non-view ops that change metadata only.
VIEW = frozenset({"_unsafe_view", "detach", "alias", "lift_fresh", "empty", "empty_like",
                  "empty_strided", "new_empty", "new_empty_strided", "_local_scalar_dense",
                  "sym_size", "sym_stride", "sym_numel", "sym_storage_offset",
                  "_reshape_alias", "set", "resize", "_resize_output", "_assert_async",
                  "_assert_scalar", "_propagate_xla_data", "record_stream",
                  "_has_compatible_shallow_copy_type", "is_same_size", "is_nonzero",
                  "_functional_assert_async", "_functional_sym_constrain_range",
                  "sym_constrain_range", "sym_constrain_range_for_size", "_nested_tensor_size",
                  "_print", "_check_is_size", "lift", "is_pinned", "_make_dep_token",
                  "_is_all_true", "_is_any_true",
                  "equal", "_assert_tensor_metadata", "_empty_affine_quantized",
                  "_empty_per_channel_affine_quantized", "_version", "_conj", "_neg_view",
                  "resolve_conj", "resolve_neg", "as_strided", "squeeze", "unsqueeze",
                  "transpose", "t", "swapdims", "swapaxes"})
#: Ops of the collective class (communication): filled by the collective tracers.
COLLECTIVE: set[str] = set()
#: RNG ops (their random fills, without tensor inputs to read).
RNG = frozenset({"normal", "uniform", "bernoulli", "random", "exponential", "geometric",
                 "cauchy", "log_normal", "rand", "randn", "randint", "rand_like", "randn_like",
                 "randint_like", "randperm"})

#: Vector ops with no formula of their own (1 FLOP per element); the families below add
#: theirs (their formulas' registrations classify them). An op with a family's formula
#: (softmax's backward, silu, gelu, sigmoid, ...) is not listed here: its family prices it.
VECTOR = (frozenset({"threshold_backward", "gelu_backward",
                       "silu_backward", "sigmoid_backward", "tanh_backward",
                       "max_pool2d_with_indices_backward", "avg_pool2d_backward",
                       "_adaptive_avg_pool2d_backward", "hardswish_backward",
                       "hardsigmoid_backward", "_prelu_kernel", "_prelu_kernel_backward",
                       "native_dropout_backward", "mse_loss", "nll_loss_forward",
                       "nll_loss_backward", "nll_loss2d_forward", "binary_cross_entropy",
                       "binary_cross_entropy_with_logits", "huber_loss", "smooth_l1_loss",
                       "l1_loss", "kl_div", "_cdist_forward", "cosine_similarity",
                       "dist", "renorm", "_weight_norm_interface",
                       "clamp_min", "clamp_max", "clamp", "elu_backward", "leaky_relu_backward",
                       "softplus_backward", "mish_backward", "log_sigmoid_forward",
                       "log_sigmoid_backward", "_euclidean_dist", "prelu",
                       # activations (their in-place forms are not tagged pointwise)
                       "relu", "relu6", "hardtanh", "leaky_relu", "celu", "tanh",
                       "threshold", "rrelu_with_noise",
                       "floor_divide", "remainder", "fmod", "true_divide"}))
#: The named sets: (set's name, class, ops). The families' rows (:data:`VECTOR_FLOPS`,
#: :data:`MATRIX_KERNELS`) are looked up as they stand, a row registered later included.
_SETS = (("GATHER", "gather", GATHER), ("SCATTER", "scatter", SCATTER),
         ("COPY", "copy", COPY), ("VIEW", "view", VIEW), ("VECTOR", "vector", VECTOR))
#: op -> class, for the ops of the named sets (filled, once checked, at the end of the module)
_NAMED: dict[str, str] = {}


def disjoint(tables: Iterable[tuple[str, str, Iterable[str]]]) -> dict[str, str]:
    """``op -> class`` of *tables* (each: its name, its class, its ops); a TraceError naming
    the op and both tables where an op is in two: two classes, or one class priced two ways
    (listed in :data:`VECTOR`, 1 FLOP an element, while a family gives it a formula)."""
    where: dict[str, str] = {}
    named: dict[str, str] = {}
    for table, cls, ops in tables:
        for op in ops:
            if op in where:
                raise TraceError(f"aten::{op} is in two classes of the aten table: "
                                 f"{where[op]} and {table} ({cls}); put it in the one that "
                                 f"prices it (pytest_roofline/tracing/_aten.py)")
            where[op], named[op] = f"{table} ({cls})", cls
    return named


def _families(cls: str, table: registry.Registry[Any]) -> list[tuple[str, str, list[str]]]:
    """The rows of a formula table as tables of their own, one per family (formula)."""
    rows: dict[str, list[str]] = {}
    for op in table.names():
        formula = table.get(op)
        rows.setdefault(f"the {getattr(formula, '__name__', formula)} family", []).append(op)
    return [(family, cls, ops) for family, ops in rows.items()]


def classify(base: str, *, pointwise: bool, is_view: bool) -> str:
    """The class of an aten op named *base* (trailing ``_`` removed); see the module docstring."""
    if is_view:
        return "view"
    if base in COLLECTIVE:
        return "collective"
    cls = _NAMED.get(base)
    if cls is not None:
        return cls
    if base in MATRIX_KERNELS:
        return "matrix"
    if base in VECTOR_FLOPS or pointwise:
        return "vector"
    return "unknown"


# -- bytes -------------------------------------------------------------------------------------


#: Factories shaped after a template tensor (``zeros_like(x)``): they write their output only.
LIKE = frozenset({"zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
                  "randint_like"})
#: In-place ops that write their first operand without reading it.
_OVERWRITE = frozenset({"copy_", "fill_", "zero_", "normal_", "uniform_", "random_",
                        "bernoulli_", "exponential_", "geometric_", "cauchy_", "log_normal_"})


def moved(op: str, base: str, inputs: list[torch.Tensor],
           outputs: list[torch.Tensor]) -> float:
    """Bytes a vector, index or copy op moves (``_torch_args.nbytes``: the general rule):
    a gather reads the rows it selects, each at most once, an in-place scatter writes where
    its values go, a fill or an overwrite does not read its destination, a ``*_like``
    factory does not read its template."""
    if base in GATHER and inputs and outputs:
        source, rest = inputs[0], inputs[1:]
        # the gathered elements, read; each element of the source at most once (a row two
        # ids share comes from the cache the second time: 16,384 ids of 1,024 rows read 1,024)
        rows = min(outputs[0].numel(), T.touched(source)) * source.dtype.itemsize
        return float(rows) + T.nbytes(rest, outputs)
    if op.endswith("_") and base in WRITES_VALUES and len(inputs) >= 2:
        values = inputs[-1]
        return T.nbytes(inputs[1:], ()) + float(values.numel() * values.dtype.itemsize)
    if op in _OVERWRITE and inputs:
        return T.nbytes(inputs[1:], outputs)
    if base in LIKE:  # the template gives a shape and a dtype: its values are not read
        return T.nbytes((), outputs)
    return T.nbytes(inputs, outputs)


# -- formulas: one per family, registered for each of its ops ---------------------------------


class Call:
    """One aten op as the recorder saw it: what a formula reads."""

    __slots__ = ("args", "base", "dtype", "func", "inputs", "kwargs", "name", "op", "outputs")

    def __init__(self, *, op: str, base: str, func: Any, args: tuple[Any, ...],
                 kwargs: dict[str, Any], inputs: list[torch.Tensor],
                 outputs: list[torch.Tensor], name: str, dtype: str | None) -> None:
        self.op, self.base, self.func = op, base, func
        self.args, self.kwargs = args, kwargs
        self.inputs, self.outputs = inputs, outputs
        self.name = name  # the kernel's name (module path and op)
        self.dtype = dtype  # the precision matrix work is priced in (None: the operands')

    def arg(self, index: int) -> Any:
        return self.args[index] if len(self.args) > index else None

    def bind(self) -> dict[str, Any]:
        """The arguments by their schema names."""
        return dict(zip(C.argument_names(self.func), self.args, strict=False)) | self.kwargs

    @property
    def n_in(self) -> float:
        return float(self.inputs[0].numel())

    @property
    def n_out(self) -> float:
        return float(self.outputs[0].numel())


#: Vector formulas: a Call in, FLOPs out (the recorder makes the kernel with the op's bytes).
VectorFormula = Callable[[Call], float]
#: Matrix formulas: a Call in, its kernels out.
MatrixFormula = Callable[[Call], list[Kernel]]
VECTOR_FLOPS: registry.Registry[VectorFormula] = registry.Registry("the aten vector table")
MATRIX_KERNELS: registry.Registry[MatrixFormula] = registry.Registry("the aten matrix table")


@VECTOR_FLOPS.rows(SOFTMAX)
def _softmax(c: Call) -> float:
    return float(R.softmax_flops(c.n_in))


@VECTOR_FLOPS.rows(SOFTMAX_BACKWARD)
def _softmax_backward(c: Call) -> float:
    return R.SOFTMAX_BACKWARD_FLOPS * c.n_out


@VECTOR_FLOPS.rows(LAYER_NORMS)
def _layer_norm(c: Call) -> float:
    """layer_norm(input, shape, weight, bias); group_norm(input, groups, weight, bias)."""
    at = 2 if c.base in ("native_layer_norm", "layer_norm") else 1
    return R.norm_flops("layernorm", c.n_in, weight=c.arg(at) is not None,
                        bias=c.arg(at + 1) is not None)


@VECTOR_FLOPS.rows(BATCH_NORMS)
def _batch_norm(c: Call) -> float:
    """Training batch norm normalises with the batch's statistics (the layer-norm rate, 7 a
    element); in eval it is a per-channel scale and shift (2 a element)."""
    base, args = c.base, c.args
    if base in ("_native_batch_norm_legit_no_training", "_batch_norm_no_update"):
        training = False
    elif base == "_native_batch_norm_legit" and len(args) in (5, 6) and not isinstance(
            c.arg(3), torch.Tensor):
        training = bool(c.arg(3))  # the overload without running statistics
    elif base == "_batch_norm_with_update":
        training = True
    else:
        training = bool(c.arg(5) if len(args) > 5 else c.kwargs.get("training", True))
    if not training:
        return R.EVAL_BATCH_NORM_FLOPS * c.n_in
    return R.norm_flops("layernorm", c.n_in, weight=c.arg(1) is not None,
                        bias=c.arg(2) is not None)


@VECTOR_FLOPS.rows(RMS_NORMS)
def _rms_norm(c: Call) -> float:
    return R.norm_flops("rmsnorm", c.n_in, weight=c.arg(2) is not None, bias=False)


@VECTOR_FLOPS.rows(NORM_BACKWARD)
def _norm_backward(c: Call) -> float:
    return R.NORM_BACKWARD_FLOPS * c.n_out


@VECTOR_FLOPS.rows({"mv", "addmv"})
def _matrix_vector(c: Call) -> float:
    """A matrix-vector product: vector units, 2 per multiply-accumulate."""
    return 2.0 * float((c.args[1] if c.base == "addmv" else c.args[0]).numel())


@VECTOR_FLOPS.rows({"dot", "vdot"})
def _dot(c: Call) -> float:
    """As ``ops.dot`` (``ops._family.dot_flops``)."""
    return R.dot_flops(c.n_in)


@VECTOR_FLOPS.rows(REDUCE_ONE)
def _reduce(c: Call) -> float:
    return R.reduce_flops(c.n_in, c.n_out)


@VECTOR_FLOPS.rows(SCAN)
def _scan(c: Call) -> float:
    return R.scan_flops(c.n_in)


@VECTOR_FLOPS.rows(REDUCE_PER_ELEMENT)
def _reduce_per_element(c: Call) -> float:
    return REDUCE_PER_ELEMENT[c.base] * c.n_in


@VECTOR_FLOPS.rows(MAX_POOL, AVG_POOL)
def _pool(c: Call) -> float:
    window = float(math.prod(_ints(c.arg(1), c.inputs[0].dim() - 2)))
    return R.pool_flops(c.n_out, window, average=c.base in AVG_POOL)


@VECTOR_FLOPS.rows(ADAPTIVE_POOL)
def _adaptive_pool(c: Call) -> float:
    return c.n_in if "avg" in c.base else R.reduce_flops(c.n_in, c.n_out)


@VECTOR_FLOPS.rows(UPSAMPLE)
def _interpolate(c: Call) -> float:
    return R.interpolate_flops(c.n_out, UPSAMPLE[c.base])


@VECTOR_FLOPS.rows(SORT)
def _sort(c: Call) -> float:
    first = c.inputs[0]
    dim = c.kwargs.get("dim", c.arg(1))
    length = first.shape[int(dim) if isinstance(dim, int) else -1] if first.dim() else 1
    return R.sort_flops(c.n_in, length)


@VECTOR_FLOPS.rows(TOPK)
def _top_k(c: Call) -> float:
    return R.top_k_flops(c.n_in)


@VECTOR_FLOPS.rows(EMBEDDING_BACKWARD)
def _embedding_backward(c: Call) -> float:
    """One add per element of grad_output."""
    return c.n_in


@VECTOR_FLOPS.rows(EMBEDDING_BAG)
def _embedding_bag(c: Call) -> float:
    """Rows gathered (indices · dim), one add each."""
    inputs = c.inputs
    return float(inputs[1].numel() * inputs[0].shape[-1]) if len(inputs) > 1 else 0.0


@VECTOR_FLOPS.rows(SCATTER_ADD)
def _scatter_add(c: Call) -> float:
    if c.base in ("index_put", "_index_put_impl") and not bool(
            c.arg(3) or c.kwargs.get("accumulate")):
        return 0.0  # a plain write: no add
    return float(c.inputs[-1].numel())


@VECTOR_FLOPS.rows(R.ELEMENT_FLOPS)
def _elementwise(c: Call) -> float:
    return R.element_flops(c.base, c.n_out)


def vector_flops(c: Call) -> float:
    """FLOPs of a vector op: its family's formula; else 1 per output element (pointwise), or
    per element of the larger of its first input and output (the table's other vector ops)."""
    if not c.inputs or not c.outputs:
        return 0.0
    formula = VECTOR_FLOPS.get(c.base)
    if formula is not None:
        return formula(c)
    if torch.Tag.pointwise not in c.func.tags:
        return max(c.n_in, c.n_out)
    return c.n_out


def matrix_kernels(c: Call) -> list[Kernel]:
    """The kernels of a matrix op (every op of the matrix class has a formula)."""
    formula = MATRIX_KERNELS.get(c.base)
    if formula is None:  # pragma: no cover - the table registers every matrix family
        raise KeyError(f"aten::{c.op} is in the matrix class without a formula")
    return formula(c)


def _ints(value: object, rank: int) -> list[int]:
    """A kernel size as a list of *rank* ints (an int means the same in every dimension)."""
    if isinstance(value, int):
        return [value] * max(rank, 1)
    if isinstance(value, (list, tuple)) and value:
        items = [int(v) for v in value]
        return items * rank if len(items) == 1 else items
    return [1]


def _wider(c: Call, a: torch.Tensor, b: torch.Tensor | None) -> str | None:
    """The precision a product of *a* and *b* is priced in: the override, else the wider."""
    if c.dtype:
        return c.dtype
    return K.wider(T.precision(a), T.precision(b)) if b is not None else T.precision(a)


#: Products with a bias first: (bias, a, b).
_BIASED = frozenset({"addmm", "baddbmm", "_addmm_activation", "addbmm"})


@MATRIX_KERNELS.rows(MATMUL)
def _matmul(c: Call) -> list[Kernel]:
    """mm(a, b); addmm(bias, a, b); bmm(a, b); baddbmm(bias, a, b); _scaled_mm(a, b, ...);
    _grouped_mm(a, b, offs); packed-weight products (x, w_packed, ...)."""
    base, args = c.base, c.args
    a, b = (args[1], args[2]) if base in _BIASED else (args[0], args[1])
    out = c.outputs[0]
    packed = base.startswith(("_weight_int", "_dyn_quant"))
    weights: torch.Tensor | None = b
    if base in ("_grouped_mm", "_scaled_grouped_mm") or packed:
        # every output element is one dot product over the contraction; a 2-D x 2-D
        # grouped product splits the contraction (K) among the groups
        contraction = a.shape[-1] if not (a.dim() == 2 and b.dim() == 2 and out.dim() == 3
                                          ) else a.shape[-1] / max(out.shape[0], 1)
        macs = float(out.numel()) * float(contraction)
        weights = None if packed else b
    else:
        macs = float(math.prod(a.shape[:-2]) * a.shape[-2] * a.shape[-1] * b.shape[-1])
    dtype = "int8" if base == "_int_mm" and c.dtype is None else _wider(c, a, weights)
    return [K.matrix(c.name, macs=macs, nbytes=T.nbytes(c.inputs, c.outputs), dtype=dtype)]


@MATRIX_KERNELS.rows(CONV)
def _conv(c: Call) -> list[Kernel]:
    """torch's count: 2 · batch · prod(weight) · prod(output spatial) (input spatial when
    transposed); padded taps are counted, as torch counts them."""
    args, generic = c.args, c.op in ("convolution", "_convolution")
    x, w, out = args[0], args[1], c.outputs[0]
    transposed = bool(c.arg(6)) if generic else False
    spatial = x.shape[2:] if transposed else out.shape[2:]
    macs = float(x.shape[0] * math.prod(w.shape) * math.prod(spatial))
    dtype, nbytes = _wider(c, x, w), T.nbytes(c.inputs, c.outputs)
    groups = c.arg(8) if generic else None
    if not transposed and isinstance(groups, int) and R.conv_unit(groups, w.shape[1]) == \
            "vector":  # depthwise (ops._family.conv_unit, as ops.conv2d)
        return [K.vector(c.name, flops=2.0 * macs, nbytes=nbytes, dtype=dtype)]
    return [K.matrix(c.name, macs=macs, nbytes=nbytes, dtype=dtype)]


@MATRIX_KERNELS.rows(CONV_BACKWARD)
def _conv_backward(c: Call) -> list[Kernel]:
    """``convolution_backward(grad_out, input, weight, ..., output_mask)``: each gradient
    asked for (input's, weight's) costs the forward's multiply-accumulates, as torch's
    counter counts them; the bias gradient is a reduction of grad_out."""
    bound = c.bind()  # by name: argument 6 is dilation, 7 transposed, 10 output_mask
    grad, x, w = bound["grad_output"], bound["input"], bound["weight"]
    spatial = x.shape[2:] if bool(bound.get("transposed", False)) else grad.shape[2:]
    forward = float(x.shape[0] * math.prod(w.shape) * math.prod(spatial))
    mask = bound.get("output_mask") or (True, True, False)
    macs = forward * (int(bool(mask[0])) + int(bool(mask[1])))
    return [K.matrix(c.name, macs=macs, nbytes=T.nbytes(c.inputs, c.outputs),
                     dtype=_wider(c, x, w))]


def check_tables() -> dict[str, str]:
    """Every table as it stands, checked disjoint (:func:`disjoint`); ``op -> class`` of the
    named sets (the families' rows are looked up in their tables, as they stand)."""
    disjoint([*_SETS, ("COLLECTIVE", "collective", COLLECTIVE),
              *_families("matrix", MATRIX_KERNELS), *_families("vector", VECTOR_FLOPS)])
    return disjoint(_SETS)


_NAMED.update(check_tables())  # every family registered: one class per op, or an error
