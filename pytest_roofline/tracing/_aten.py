"""The table of aten ops the torch tracer knows, by class; the policy for the rest.

Every aten op the tracer meets falls in one class (docs/trace.md lists the conventions):

* ``matrix``: products, convolutions, attention (``_torch`` counts their multiply-accumulates);
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
"""

from __future__ import annotations

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
                  "_scaled_dot_product_attention_math_for_mps"})
#: Their backward ops: (grad_out, query, key, value, ...) or (grad_out, query, ...).
SDPA_BACKWARD = frozenset({"_scaled_dot_product_flash_attention_backward",
                           "_scaled_dot_product_efficient_attention_backward",
                           "_scaled_dot_product_cudnn_attention_backward",
                           "_scaled_dot_product_flash_attention_for_cpu_backward",
                           "_scaled_dot_product_fused_attention_overrideable_backward",
                           "_flash_attention_backward", "_efficient_attention_backward"})

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
#: Matrix-vector products: the vector units, 2 per multiply-accumulate (as ``ops.dot``).
MATVEC = frozenset({"mv", "addmv", "dot", "vdot"})
#: Embedding bags: gather rows and add them (one add per gathered element).
EMBEDDING_BAG = frozenset({"_embedding_bag", "_embedding_bag_forward_only", "embedding_bag"})
#: Scatters that add their values (one FLOP per value).
SCATTER_ADD = frozenset({"index_add", "scatter_add", "scatter_reduce", "index_reduce",
                         "_index_put_impl", "index_put"})
#: An embedding's weight gradient: each row of grad_output added into its token's row.
EMBEDDING_BACKWARD = frozenset({"embedding_dense_backward", "embedding_backward",
                                "_embedding_bag_backward", "_embedding_bag_dense_backward"})

GATHER = frozenset({"embedding", "index_select", "index", "gather", "_unsafe_index", "take",
                    "take_along_dim", "masked_select", "upsample_nearest1d",
                    "upsample_nearest2d", "upsample_nearest3d", "_upsample_nearest_exact1d",
                    "_upsample_nearest_exact2d", "_upsample_nearest_exact3d"})
#: In-place scatters write only where their last operand (the values) goes.
SCATTER = frozenset({"index_put", "_index_put_impl", "index_copy", "scatter", "scatter_add",
                     "scatter_reduce", "index_add", "index_fill", "masked_scatter",
                     "slice_scatter", "select_scatter", "diagonal_scatter",
                     "as_strided_scatter", "index_reduce", "_unsafe_index_put",
                     "_unsafe_masked_index_put_accumulate"})
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

_NAMED: dict[str, str] = {}
for _cls, _names in (("matrix", MATMUL | CONV | CONV_BACKWARD | SDPA | SDPA_BACKWARD),
                     ("gather", GATHER), ("scatter", SCATTER), ("copy", COPY),
                     ("view", VIEW)):
    for _name in _names:
        _NAMED.setdefault(_name, _cls)
VECTOR = (SOFTMAX | SOFTMAX_BACKWARD | LAYER_NORMS | RMS_NORMS | BATCH_NORMS | NORM_BACKWARD
          | REDUCE_ONE | SCAN | frozenset(REDUCE_PER_ELEMENT) | MAX_POOL | AVG_POOL
          | ADAPTIVE_POOL | frozenset(UPSAMPLE) | SORT | TOPK | MATVEC | EMBEDDING_BAG
          | EMBEDDING_BACKWARD
          | frozenset({"_softmax_backward_data", "threshold_backward", "gelu_backward",
                       "silu_backward", "sigmoid_backward", "tanh_backward",
                       "max_pool2d_with_indices_backward", "avg_pool2d_backward",
                       "_adaptive_avg_pool2d_backward", "hardswish_backward",
                       "hardsigmoid_backward", "_prelu_kernel", "_prelu_kernel_backward",
                       "native_dropout_backward", "mse_loss", "nll_loss_forward",
                       "nll_loss_backward", "nll_loss2d_forward", "binary_cross_entropy",
                       "binary_cross_entropy_with_logits", "huber_loss", "smooth_l1_loss",
                       "l1_loss", "kl_div", "_cdist_forward", "cosine_similarity",
                       "linalg_vector_norm", "dist", "renorm", "_weight_norm_interface",
                       "clamp_min", "clamp_max", "clamp", "elu_backward", "leaky_relu_backward",
                       "softplus_backward", "mish_backward", "log_sigmoid_forward",
                       "log_sigmoid_backward", "_euclidean_dist", "prelu",
                       # activations (their in-place forms are not tagged pointwise)
                       "relu", "relu6", "hardtanh", "hardswish", "hardsigmoid", "leaky_relu",
                       "silu", "gelu", "elu", "celu", "selu", "mish", "sigmoid", "tanh",
                       "threshold", "softplus", "rrelu_with_noise", "log_sigmoid",
                       "floor_divide", "remainder", "fmod", "true_divide"}))
for _name in VECTOR:
    _NAMED.setdefault(_name, "vector")


def classify(base: str, *, pointwise: bool, is_view: bool) -> str:
    """The class of an aten op named *base* (trailing ``_`` removed); see the module docstring."""
    if is_view:
        return "view"
    if base in COLLECTIVE:
        return "collective"
    cls = _NAMED.get(base)
    if cls is not None:
        return cls
    return "vector" if pointwise else "unknown"
