"""Training at scale: per-chip footprint, link bytes and work of a parallel training step.

Expected figures are derived in each test from the model's published sizes (Llama 3 8B:
32 layers, hidden 4096, 32 query and 8 KV heads of 128, MLP 14336, vocabulary 128256) and
the rules of pytest_roofline.models.training; exact unless a tolerance is stated.
"""

from __future__ import annotations

import pytest
from published import gpt3_175b
from wrapped import matcher

from pytest_roofline import WorkloadError, analyze, models, ops
from pytest_roofline.engine.overlap import overlapped

LLAMA8B = models.load("llama-3-8b")
SEQ = 8192
SAVED = 4 * 4096 + (32 * 128 + 8 * 256) + 32 * 128 + 3 * 14336  # 69632 elements a token
LAYER = (4096 * (32 * 128 + 2 * 8 * 128) + 32 * 128 * 4096  # q, k, v, o
         + 3 * 4096 * 14336)  # gate, up, down


def _matrix_flops(workload):
    return sum(k.total_flops for k in workload.kernels if k.unit == "matrix")


def _link(workload, prefix):
    return sum(k.total_link_bytes for k in workload.kernels if k.name.startswith(prefix))


def test_an_8b_fsdp_step_fits_8_h100_with_its_footprint_per_chip():
    p = LLAMA8B.params
    step = LLAMA8B.train_step(8, SEQ, dp=8, zero=3, link="nvlink")
    fp = LLAMA8B.train_footprint(8, SEQ, dp=8, zero=3)
    # ZeRO-3 over 8: bf16 weights / 8 plus two whole layers (computing, prefetched), bf16
    # gradients / 8, 12 B of Adam state a parameter / 8; one sequence of 8192 tokens a chip
    assert fp.weights == pytest.approx(2 * p / 8 + 2 * 2 * LAYER, rel=1e-12)
    assert fp.gradients == pytest.approx(2 * p / 8, rel=1e-12)
    assert fp.optimizer == pytest.approx(12 * p / 8, rel=1e-12)
    assert fp.activations == pytest.approx(SEQ * 32 * SAVED * 2 + SEQ * 4 * 128256, rel=1e-12)
    r = analyze(step, "h100")
    assert r.footprint == pytest.approx(float(fp.total), rel=1e-12)
    assert r.fits and 50e9 < r.footprint < 80e9  # 57.6 GB of 80 GB
    assert "per chip" in fp.describe() and "optimizer states 12 GB" in fp.describe()


def test_the_same_step_on_one_chip_does_not_fit_and_names_the_knob():
    step = LLAMA8B.train_step(1, SEQ)  # the same sequence a chip, all states on it
    r = analyze(step, "h100")
    assert not r.fits
    # 16 B a parameter (bf16 weights and gradients, fp32 master and two moments) > 80 GB
    states = 16 * LLAMA8B.params
    assert states > 80e9
    assert step.hint.index("states 128 GB") < step.hint.index("activations 40.7 GB:")
    assert "zero=3 (FSDP) with dp > 1" in step.hint


def test_the_fit_failure_of_a_marked_test_names_the_knob(pytester):
    pytester.makepyfile("""
        import pytest
        from pytest_roofline import models

        @pytest.mark.roofline(hw="h100", fits=True)
        def test_train(roofline):
            roofline.add(models.load("llama-3-8b").train_step(1, 8192))
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    matcher(result).fnmatch_lines(["*to fit in h100-sxm memory*zero=3 (FSDP)*"])


@pytest.mark.parametrize(("zero", "factor"), [(0, 2), (1, 2), (2, 2), (3, 3)])
def test_data_parallel_link_bytes_per_chip(zero, factor):
    # ZeRO 0: all-reduce of the bf16 gradients, 2·G·7/8; ZeRO 1-2: reduce-scatter and
    # all-gather, the same bytes; ZeRO 3: two all-gathers of the weights and a
    # reduce-scatter, 3·G·7/8 (G = 2 B x params)
    step = LLAMA8B.train_step(8, SEQ, dp=8, zero=zero)
    g = 2.0 * LLAMA8B.params
    assert _link(step, "dp.") == pytest.approx(factor * g * 7 / 8, rel=1e-12)


def test_data_parallel_work_is_an_eighth_of_one_replica():
    one = LLAMA8B.train_step(8, SEQ)
    eight = LLAMA8B.train_step(8, SEQ, dp=8, zero=1)
    assert _matrix_flops(eight) == pytest.approx(_matrix_flops(one) / 8, rel=1e-12)
    adam = next(k for k in eight.kernels if k.name == "optimizer.adam")
    assert adam.flops == pytest.approx(15 * LLAMA8B.params / 8, rel=1e-12)
    # bytes per parameter: fp32 master weight and two moments read and written (2 x 12),
    # the bf16 gradient read and the bf16 working weight written (2 x 2): 28 B
    assert adam.bytes == pytest.approx(28 * LLAMA8B.params / 8, rel=1e-12)


def test_a_pipeline_takes_its_stage_share_and_its_bubble():
    # 4 stages, 8 microbatches: each chip does 1/4 of the work over (8 + 4 - 1)/8 slots
    one = LLAMA8B.train_step(8, SEQ)
    pipe = LLAMA8B.train_step(8, SEQ, pp=4, microbatches=8)
    assert _matrix_flops(pipe) == pytest.approx(_matrix_flops(one) / 4 * 11 / 8, rel=1e-12)
    # activations [tokens, hidden] in bf16 forward and their gradients back
    assert _link(pipe, "pp.") == pytest.approx(2 * 8 * SEQ * 4096 * 2, rel=1e-12)
    # the first stage holds min(pp, m) = 4 microbatches of its 8 layers, and no logits
    # (the output layer is the last stage's: Korthikanti et al. 2022, section 4.3)
    fp = LLAMA8B.train_footprint(8, SEQ, pp=4, microbatches=8)
    assert fp.activations == pytest.approx(SEQ * 4 * 8 * SAVED * 2, rel=1e-12)


def test_pipeline_link_bytes_per_chip_follow_the_stages_and_the_tensor_split():
    # D = 8 sequences x SEQ tokens x 4096 x 2 B. Two stages: stage 0 sends the activations,
    # stage 1 the gradients, D each; a middle stage of three sends both, 2·D; under tp=4 each
    # of a stage's chips sends a quarter (Narayanan et al. 2021, section 4.1 scatter/gather)
    d = 8 * SEQ * 4096 * 2
    assert _link(LLAMA8B.train_step(8, SEQ, pp=2, microbatches=8), "pp.") == pytest.approx(d)
    assert _link(LLAMA8B.train_step(8, SEQ, pp=4, microbatches=8, tp=4), "pp.") == (
        pytest.approx(2 * d / 4))
    assert _link(LLAMA8B.train_step(8, SEQ, pp=4, microbatches=8, tp=4, sp=False),
                 "pp.") == pytest.approx(2 * d / 4)


def test_full_recomputation_keeps_layer_inputs_and_runs_the_forward_again():
    base = LLAMA8B.train_step(1, SEQ)
    full = LLAMA8B.train_step(1, SEQ, recompute="full")
    forward = LLAMA8B.forward(1, SEQ)
    lm_head = next(k for k in forward.kernels if k.name == "lm_head")
    extra = _matrix_flops(forward) - lm_head.total_flops
    assert _matrix_flops(full) == pytest.approx(_matrix_flops(base) + extra, rel=1e-12)
    fp = LLAMA8B.train_footprint(1, SEQ, recompute="full")
    assert fp.activations == pytest.approx(
        (SEQ * 32 * 4096 + SEQ * SAVED) * 2 + SEQ * 4 * 128256, rel=1e-12)


def test_tensor_and_data_parallelism_together():
    step = LLAMA8B.train_step(16, SEQ, dp=2, zero=3, tp=4, link="nvlink", sp=False)
    one = LLAMA8B.train_step(16, SEQ)
    # the matmuls of the blocks split 8 ways (2 replicas x 4 tensor shards)
    assert _matrix_flops(step) == pytest.approx(_matrix_flops(one) / 8, rel=1e-12)
    # two all-reduces a layer of [tokens, hidden] forward and backward, 2·(3/4) each
    ar = 2 * 3 / 4 * 8 * SEQ * 4096 * 2
    assert _link(step, "attn.all_reduce") == pytest.approx(2 * 32 * ar, rel=1e-12)


def test_sequence_parallelism_splits_the_norms_and_gathers_the_matmul_inputs():
    # Korthikanti et al. 2022, section 4.2.2: with tp > 1 (the default sp=True) each
    # all-reduce becomes a reduce-scatter and an all-gather (V·3/4 each, forward and
    # backward: the all-reduce's bytes), and the backward gathers the kept input shard of
    # the attention and the MLP again for the weight gradient (V·3/4 more)
    sp = LLAMA8B.train_step(16, SEQ, dp=2, zero=3, tp=4, link="nvlink")
    plain = LLAMA8B.train_step(16, SEQ, dp=2, zero=3, tp=4, link="nvlink", sp=False)
    v = 8 * SEQ * 4096 * 2  # one replica's [tokens, hidden] in bf16
    assert _link(sp, "attn.") == pytest.approx(32 * (2 * 2 * v * 3 / 4 + v * 3 / 4),
                                               rel=1e-12)
    assert _link(plain, "attn.") == pytest.approx(32 * 2 * 2 * v * 3 / 4, rel=1e-12)
    norms = {k.name: k for k in sp.kernels}
    assert norms["attn_norm"].flops == pytest.approx(
        {k.name: k for k in plain.kernels}["attn_norm"].flops / 4, rel=1e-12)
    assert _matrix_flops(sp) == pytest.approx(_matrix_flops(plain), rel=1e-12)
    assert "sp=False" in plain.name and "sp=" not in sp.name
    with pytest.raises(WorkloadError, match="sp must be True, False or None"):
        LLAMA8B.train_step(16, SEQ, tp=4, sp="yes")


GPT3 = gpt3_175b()


@pytest.mark.parametrize("tp", [1, 2, 8])
def test_activations_per_layer_follow_korthikanti(tp):
    # Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
    # Models" (https://arxiv.org/abs/2205.05198), Table 2, bytes a GPT layer keeps for s
    # tokens of hidden h in 16-bit precision: 34·sbh + 5·as²b with no parallelism;
    # sbh·(10 + 24/t + 5·as/(ht)) with tensor parallelism over t; sbh·(34/t + 5·as/(ht))
    # with sequence parallelism too; 2·sbh with full recomputation. FlashAttention keeps no
    # a·s² scores (their selective-recomputation rows), and our models have no dropout:
    # its two 1-byte masks (2·sbh, both replicated without sequence parallelism) drop out,
    # leaving 32·sbh, sbh·(8 + 24/t) and sbh·32/t, exactly.
    s, h, b = 2048, 12288, 1
    layers = GPT3.config.layers

    def per_layer(**kwargs):
        fp = GPT3.train_footprint(b, s, tp=tp, **kwargs)
        logits = s * 4 * -(-GPT3.config.vocab // tp)  # fp32 logits of the microbatch
        return (fp.activations - logits) / layers

    if tp == 1:
        assert per_layer() == pytest.approx(32 * s * b * h, rel=1e-12)
    else:
        assert per_layer(sp=False) == pytest.approx(s * b * h * (8 + 24 / tp), rel=1e-12)
        assert per_layer() == pytest.approx(s * b * h * 32 / tp, rel=1e-12)
    # full recomputation: each layer's input (2·sbh, /t with sequence parallelism), plus one
    # layer's whole set while it is recomputed
    shards = tp if tp > 1 else 1
    whole = per_layer() * layers
    assert per_layer(recompute="full") * layers == pytest.approx(
        layers * 2 * s * b * h / shards + whole / layers, rel=1e-12)


def test_the_interleaved_first_stage_holds_more_microbatches():
    # Megatron-LM's interleaved 1F1B: the first rank runs 2·(pp-1) + (v-1)·pp warm-up
    # chunks of 1/v of its layers, and one more before its first backward; 4 stages, 2
    # virtual stages, 8 microbatches: 11 chunks = 5.5 microbatches of its layers, against
    # min(pp, m) = 4 without interleaving (Korthikanti et al. 2022, section 4.2.3:
    # 1 + (p - 1)/(p·v) times the 1F1B figure, 4 x 1.375 = 5.5)
    plain = LLAMA8B.train_footprint(8, SEQ, pp=4, microbatches=8)
    interleaved = LLAMA8B.train_footprint(8, SEQ, pp=4, microbatches=8, virtual_stages=2)
    # (neither holds logits: the last chunk, the output layer's, is the last rank's)
    assert interleaved.activations == pytest.approx(plain.activations * 5.5 / 4, rel=1e-12)


def test_the_llama_3_405b_pre_training_configuration_fits_80_gb():
    # The Llama 3 paper (https://arxiv.org/abs/2407.21783), section 3.3.2 and Table 4: 8192
    # H100 80 GB, TP 8, CP 1, PP 16, DP 64, 8192-token sequences, 32 sequences a DP group
    # (16M tokens a step), no activation checkpointing ("we could pre-train Llama 3 on
    # sequences of 8K tokens without activation checkpointing"); FSDP that shards the
    # optimizer states and gradients but keeps the weights gathered from the forward to the
    # backward (no reshard after forward): ZeRO 2's memory. Tensor parallelism cites
    # Korthikanti et al. (sequence parallelism, our default with tp > 1). The paper states
    # no microbatch size or virtual-stage count: one sequence a microbatch under 1F1B.
    model = models.load("llama-3-405b")
    fp = model.train_footprint(2048, 8192, tp=8, pp=16, dp=64, zero=2, microbatches=32)
    stage = model.params / 8 / 16  # parameters a chip holds before ZeRO
    assert fp.weights == pytest.approx(2 * stage, rel=0.01)  # bf16, whole
    assert fp.optimizer == pytest.approx(12 * stage / 64, rel=0.01)
    # 16 microbatches of 126/16 layers, each 8192 tokens x (4·16384/8 + the TP-split rest)
    assert fp.activations < 70e9 and fp.total < 80e9  # 67.1 and 74.2 GB
    assert analyze(model.train_step(2048, 8192, tp=8, pp=16, dp=64, zero=2, microbatches=32,
                                    link="nvlink"), "h100").fits
    # without sequence parallelism the replicated norms' inputs alone would not fit
    assert model.train_footprint(2048, 8192, tp=8, pp=16, dp=64, zero=2, microbatches=32,
                                 sp=False).total > 80e9


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"zero": 4}, "zero must be 0, 1, 2 or 3"),
    ({"recompute": "some"}, "recompute must be one of"),
    ({"dp": 2, "ep": 4}, "ep=4 must divide dp=2"),
    ({"pp": 0}, "pp"),
    ({"overlap": "half"}, "overlap must be one of"),
    ({"ep": 2, "dp": 2}, "no experts"),
    # Llama 3 8B has 32 layers: a stage (or a virtual stage) holds at least one, or the
    # embedding or the output layer alone (as the Llama 3 paper's first and last stages
    # hold one layer less, 3.3.2), so at most 34 chunks
    ({"pp": 64}, r"pp=64 x virtual_stages=1 = 64 pipeline chunks.*32 layers"),
    ({"pp": 5, "virtual_stages": 7, "microbatches": 10}, r"= 35 pipeline chunks.*<= 34"),
])
def test_bad_parallel_settings_name_the_setting(kwargs, match):
    with pytest.raises(WorkloadError, match=match):
        LLAMA8B.train_step(8, SEQ, **kwargs)


def test_overlap_hides_the_link_time_behind_the_matrix_work():
    # a 2-chip k-split matmul: hidden, the matmul carries the all-reduce's memory traffic and
    # link bytes beside its own work, so the program takes max(matmul compute, both memory
    # streams, link) and the adds (in the matmul's epilogue, 1/2 of 8192² at the vector peak)
    # hide behind its compute; never more than the sequential sum
    plain = ops.sharded_matmul(8192, 8192, 8192, shards=2, link="nvlink")
    hidden = overlapped(plain)
    r_plain, r_hidden = analyze(plain, "h100"), analyze(hidden, "h100")
    mm, ar = r_plain.kernels
    assert r_hidden.time == pytest.approx(
        max(mm.t_compute, mm.t_memory + ar.t_memory, ar.t_network), rel=1e-12)
    assert r_hidden.time <= r_plain.time
    assert hidden.link_bytes == pytest.approx(plain.link_bytes, rel=1e-12)
    step = LLAMA8B.train_step(8, SEQ, dp=8, zero=3, link="nvlink", overlap="full")
    assert analyze(step, "h100").time <= analyze(
        LLAMA8B.train_step(8, SEQ, dp=8, zero=3, link="nvlink"), "h100").time


def test_overlap_refuses_collectives_on_two_links():
    step = LLAMA8B.train_step(16, SEQ, dp=2, tp=4, link="nvlink", dp_link="pcie")
    with pytest.raises(WorkloadError, match="several links"):
        overlapped(step)


def test_an_interleaved_pipeline_shrinks_the_bubble():
    # 1 + (pp - 1)/(v·m): 4 stages, 8 microbatches, 2 virtual stages a chip -> 1 + 3/16
    one = LLAMA8B.train_step(8, SEQ)
    pipe = LLAMA8B.train_step(8, SEQ, pp=4, microbatches=8, virtual_stages=2)
    assert _matrix_flops(pipe) == pytest.approx(_matrix_flops(one) / 4 * 19 / 16, rel=1e-12)


@pytest.mark.parametrize("phase", ["prefill", "decode", "forward"])
def test_inference_phases_take_overlap_too(phase):
    # Llama 2 70B, TP=8 on H100: hiding the all-reduces behind the matmuls saves at most
    # their time (link and memory), and saves some of it
    llama = models.load("llama-2-70b")
    sizes = (8, 4096) if phase == "decode" else (4, 2048)
    plain = analyze(getattr(llama, phase)(*sizes, tp=8, link="nvlink"), "h100")
    hidden = analyze(getattr(llama, phase)(*sizes, tp=8, link="nvlink", overlap="full"),
                     "h100")
    collectives = sum(k.time for k in plain.kernels if k.link_bytes)
    assert plain.time - collectives <= hidden.time * (1 + 1e-12) and hidden.time < plain.time
    with pytest.raises(WorkloadError, match=f"{phase}: overlap must be one of"):
        getattr(llama, phase)(*sizes, tp=8, overlap="some")
