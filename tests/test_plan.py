"""Configuration search: serving configurations that fit and meet latency targets.

Expected figures: each configuration's TPOT, TTFT and footprint are recomputed one point at
a time with the model's own decode, prefill and footprint (the vectorized search must give
the same numbers, to 1e-9), and its throughput is batch / (TPOT x tp x ep) by definition
(pytest_roofline.planning)."""

from __future__ import annotations

import json

import pytest

from pytest_roofline import RooflineError, analyze, models, plan, plan_training
from pytest_roofline.cli import main
from pytest_roofline.planning import decode_step

ISL, OSL = 1024, 256


@pytest.fixture(scope="module")
def llama70b_plan():
    return plan("llama-3-70b", "h100", chips=8, ttft="500 ms", tpot="50 ms", isl=ISL, osl=OSL)


def test_plan_ranks_configurations_that_fit_and_meet_the_targets(llama70b_plan):
    p = llama70b_plan
    assert p.searched >= 10_000
    assert len(p.configs) >= 3
    throughputs = [c.throughput for c in p.configs]
    assert throughputs == sorted(throughputs, reverse=True)
    for c in p.configs:
        assert c.tpot <= 0.050 and c.ttft <= 0.500 and c.footprint <= 80e9
        assert c.chips * c.replicas == 8
        assert c.throughput == pytest.approx(c.batch / (c.tpot * c.tp * c.ep), rel=1e-12)
    # 70B in bf16 is 141 GB of weights: one chip alone never holds it
    assert any(r.startswith("tp=1, pp=1:") and "does not fit" in r for r in p.rejected)


def test_each_figure_is_the_one_point_bound(llama70b_plan):
    model = models.load("llama-3-70b")
    for c in llama70b_plan.configs[:4]:
        step = decode_step(model, c, isl=ISL, osl=OSL)
        assert analyze(step, "h100").time == pytest.approx(c.tpot, rel=1e-9)
        first = model.prefill(1, ISL, tp=c.tp)
        assert analyze(first, "h100").time == pytest.approx(c.ttft, rel=1e-9)
        fp = model.footprint(c.batch, ISL + OSL, phase="decode", tp=c.tp)
        assert fp.weights / c.pp + fp.kv_cache + fp.activations == pytest.approx(
            c.footprint, rel=1e-9)
        after = model.footprint(c.batch + 1, ISL + OSL, phase="decode", tp=c.tp)
        grown = after.weights / c.pp + after.kv_cache + after.activations
        if c.limit == "memory":
            assert grown > 80e9
        elif c.limit == "tpot":
            nxt = analyze(model.decode(c.batch + 1, ISL + OSL // 2, tp=c.tp), "h100").time
            assert nxt > 0.050


def test_a_tpot_target_no_configuration_meets_is_explained():
    p = plan("llama-3-70b", "h100", chips=8, tpot="1 ms", max_batch=8)
    assert p.configs == () and p.best is None
    assert all("misses the TPOT target" in r or "does not fit" in r for r in p.rejected)
    assert "0 of" in p.table()


def test_a_mixture_of_experts_is_searched_with_expert_parallelism():
    p = plan("mixtral-8x7b", "h100", chips=8, tpot="50 ms", max_batch=64)
    assert any(c.ep > 1 for c in p.configs)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"chips": 0}, "chips must be a whole number >= 1"),
    ({"chips": 8, "tpot": "fast"}, "tpot"),
    ({"chips": 8, "isl": 0}, "isl"),
    # a typo in a precision is refused, not turned into "no configuration qualifies"
    ({"chips": 8, "dtype": "bf61"}, r"plan: dtype: unknown precision 'bf61'; known"),
    ({"chips": 8, "kv_dtype": 3}, r"plan: kv_dtype: a precision must be a name"),
])
def test_bad_plan_arguments_are_named(kwargs, match):
    with pytest.raises(RooflineError, match=match):
        plan("llama-3-70b", "h100", **kwargs)


@pytest.mark.parametrize(("kwargs", "match"), [
    # 0 searched nothing and returned an empty plan; "x" and 2.5 were deep TypeErrors
    ({"max_microbatches": 0}, r"plan_training: max_microbatches must be a whole number >= 1"),
    ({"max_microbatches": "x"}, r"max_microbatches must be a whole number >= 1, got 'x'"),
    ({"max_microbatches": 2.5}, r"max_microbatches must be a whole number >= 1, got 2.5"),
    ({"batch": 0}, r"plan_training: batch must be a whole number >= 1, got 0"),
])
def test_bad_plan_training_arguments_are_named(kwargs, match):
    given = {"chips": 8, "batch": 8, "seq": 1024, **kwargs}
    with pytest.raises(RooflineError, match=match):
        plan_training("llama-3-8b", "h100", **given)


def test_plan_training_refuses_an_unknown_precision():
    with pytest.raises(RooflineError, match=r"plan_training: dtype: unknown precision 'xx'"):
        plan_training("llama-3-8b", "h100", chips=8, batch=8, seq=1024, dtype="xx")


def test_a_pipeline_has_no_more_stages_than_layers():
    # Llama 3 8B has 32 layers, an embedding and an output layer: on 128 chips pp = 64 and
    # 128 are no configurations
    p = plan("llama-3-8b", "h100", chips=128, max_batch=8)
    assert p.configs and max(c.pp for c in p.configs) == 32
    # pp = 64 and 128 (with tp = 2 or 1, and 1): three splits, counted in one line
    assert any(why.startswith("3 split(s) with pp > 34: more stages than llama-3-8b's 32 "
                              "layers") for why in p.rejected)


def test_the_plan_command(capsys):
    assert main(["plan", "llama-3-70b", "--hw", "h100", "--chips", "8", "--ttft", "500ms",
                 "--tpot", "50ms", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "configurations qualify" in out and "tok/s/chip" in out
    assert main(["plan", "llama-3-70b", "--hw", "h100", "--chips", "8", "--tpot", "50ms",
                 "--json", "--top", "2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["configs"]) == 2 and data["tpot_target_s"] == pytest.approx(0.05)
    assert main(["plan", "llama-3-70b", "--hw", "h100", "--chips", "0"]) == 2


def test_a_marker_asserts_the_tpot_target_of_a_configuration(pytester):
    pytester.makepyfile("""
        import pytest
        from pytest_roofline import plan
        from pytest_roofline.planning import decode_step

        BEST = plan("llama-3-70b", "h100", chips=8, tpot="50 ms", max_batch=256).best
        STEP = decode_step("llama-3-70b", BEST, isl=1024, osl=256)

        @pytest.mark.roofline(hw="h100", max_time="50 ms", workload=STEP)
        def test_serving_meets_tpot():
            pass

        @pytest.mark.roofline(hw="h100", max_time="5 ms", workload=STEP)
        def test_serving_misses_a_tighter_tpot():
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_serving_misses_a_tighter_tpot*"])


# -- training -------------------------------------------------------------------------------
# Expected: each configuration's step time equals train_step's bound at its own settings
# (the search analyzes once per split and scales the pipeline bubble: rel 1e-9), its
# throughput is batch x seq / (step x chips) by definition, and its footprint is
# train_footprint's.


def test_plan_training_ranks_configurations_that_fit():
    from pytest_roofline import plan_training

    p = plan_training("llama-3-8b", "h100", chips=8, batch=64, seq=4096, link="nvlink")
    assert p.searched >= 500 and p.configs
    model = models.load("llama-3-8b")
    throughputs = [c.throughput for c in p.configs]
    assert throughputs == sorted(throughputs, reverse=True)
    for c in p.configs[:3] + p.configs[-3:]:
        assert c.dp * c.tp * c.pp == 8 and c.footprint <= 80e9
        step = model.train_step(64, 4096, dp=c.dp, tp=c.tp, pp=c.pp, zero=c.zero,
                                microbatches=c.microbatches, recompute=c.recompute,
                                link="nvlink")
        assert analyze(step, "h100").time == pytest.approx(c.step_time, rel=1e-9)
        assert c.throughput == pytest.approx(64 * 4096 / (c.step_time * 8), rel=1e-12)
    # 16 B a parameter (bf16 weights and gradients, Adam's 12 B) of 8B is 128 GB: without
    # ZeRO, tp or pp a chip holds them all and nothing fits
    assert not [c for c in p.configs if c.zero == 0 and c.tp * c.pp == 1]
    assert [c for c in p.configs if c.zero == 3 and c.tp * c.pp == 1]


def test_plan_training_with_pipelines_scales_the_bubble():
    from pytest_roofline import plan_training

    p = plan_training("llama-3-8b", "h100", chips=8, batch=32, seq=2048, link="nvlink")
    piped = [c for c in p.configs if c.pp > 1 and c.microbatches > 1][:3]
    assert piped
    model = models.load("llama-3-8b")
    for c in piped:
        step = model.train_step(32, 2048, dp=c.dp, tp=c.tp, pp=c.pp, zero=c.zero,
                                microbatches=c.microbatches, recompute=c.recompute,
                                link="nvlink")
        assert analyze(step, "h100").time == pytest.approx(c.step_time, rel=1e-9)


def test_the_plan_command_for_training(capsys):
    assert main(["plan", "llama-3-8b", "--hw", "h100", "--chips", "8", "--train", "--batch",
                 "64", "--seq", "4096", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "training on 8 x h100-sxm" in out and "zero=" in out
    assert main(["plan", "llama-3-8b", "--hw", "h100", "--chips", "8", "--train"]) == 2
    assert "needs --batch" in capsys.readouterr().err


@pytest.mark.parametrize("renamed", [False, True], ids=["as-built", "kernels-renamed"])
def test_training_plans_price_each_step_as_train_step_does(
        renamed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each configuration's step time is the roofline time of ``train_step`` with the same
    settings (microbatches included), to 1e-9: the planner rescales the stage's kernels by
    the pipeline bubble and keeps the once-a-step kernels, which ``train_parts`` hands it.
    Renaming the communication and optimizer kernels (a kernel's name is a label) changes
    nothing: the planner reads no name."""
    from pytest_roofline.models import training

    if renamed:
        data_parallel, pipeline = training.data_parallel, training.pipeline

        def relabel(kernels):  # type: ignore[no-untyped-def]
            import dataclasses

            return [dataclasses.replace(k, name=f"step.{i}") for i, k in enumerate(kernels)]

        monkeypatch.setattr(training, "data_parallel",
                            lambda *a, **k: relabel(data_parallel(*a, **k)))
        monkeypatch.setattr(training, "pipeline", lambda *a, **k: relabel(pipeline(*a, **k)))
    llama = models.load("llama-3-8b")
    found = plan_training(llama, "h100", chips=8, batch=16, seq=4096, max_microbatches=8)
    configs = found.configs
    assert configs and any(c.pp > 1 and c.microbatches > 1 for c in configs)
    for c in configs[:: max(1, len(configs) // 12)] + tuple(
            c for c in configs if c.pp > 1 and c.microbatches > 1)[:4]:
        step = llama.train_step(16, 4096, tp=c.tp, dp=c.dp, pp=c.pp, zero=c.zero,
                                microbatches=c.microbatches, recompute=c.recompute)
        assert c.step_time == pytest.approx(analyze(step, "h100").time, rel=1e-9), c


@pytest.mark.parametrize(("argv", "option"), [
    (["--ttft", "500"], "--ttft"), (["--tpot", "0.05"], "--tpot"),
    (["--train", "--batch", "8", "--seq", "1024", "--step-time", "2"], "--step-time")])
def test_a_target_without_a_unit_is_refused(argv: list[str], option: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A bare --ttft 500 was read as 500 seconds without a word (the compare rules refuse a
    bare number for the same reason)."""
    from pytest_roofline.cli import main

    assert main(["plan", "llama-3-8b", "--hw", "h100", "--chips", "8", *argv]) == 2
    err = capsys.readouterr().err
    assert f"plan {option} '{argv[-1]}' needs a unit: '{argv[-1]}ms' or '{argv[-1]}s'" in err
