"""Collective cost model: per-step link latency and the algorithms (ring, tree, one-shot).

Expected figures come from the ops.collectives tables: for N devices and D bytes, ring
all-reduce sends 2·D·(N-1)/N in 2·(N-1) steps, a tree the same bytes in 2·ceil(log2 N)
steps, one-shot (N-1)·D in 1 step; ``auto`` the ring's bytes in 1 step (the lower envelope).
Time = bytes / bandwidth + steps x latency. Exact up to float rounding (rel 1e-12).
"""

from __future__ import annotations

import pytest

from pytest_roofline import SpecError, WorkloadError, analyze, get_hardware, models, ops
from pytest_roofline.hardware import Hardware, Link
from pytest_roofline.hardware import from_dict as load_spec_data

LAT = 2e-6  # a measured per-step latency (made up for the test: what a user would write)
BW = 25e9 * 18
CHIP = Hardware(name="measured-h100", memory_bandwidth=3.35e12, memory_capacity=80e9,
                matrix={"bf16": 989.4e12}, vector={"bf16": 133.8e12, "fp32": 66.9e12},
                links={"nvlink": Link("nvlink", 25e9, 18, latency=LAT,
                                      latency_kind="measured")})
N, ELEMENTS = 8, 1 << 20
D = 2 * ELEMENTS  # bf16 bytes


@pytest.mark.parametrize(("algorithm", "sent", "steps"), [
    ("ring", 2 * D * 7 / 8, 14),
    ("tree", 2 * D * 7 / 8, 6),
    ("one_shot", 7 * D, 1),
    ("auto", 2 * D * 7 / 8, 1),
])
def test_all_reduce_algorithms_cost_bytes_and_steps(algorithm, sent, steps):
    w = ops.all_reduce(ELEMENTS, N, algorithm=algorithm)
    (kernel,) = w.kernels
    assert kernel.link_bytes == pytest.approx(sent, rel=1e-12)
    assert kernel.link_steps == steps
    r = analyze(w, CHIP)
    assert r.t_network == pytest.approx(sent / BW + steps * LAT, rel=1e-12)


def test_auto_is_never_above_any_named_algorithm():
    for elements in (1, 1 << 10, 1 << 20, 1 << 28):
        auto = analyze(ops.all_reduce(elements, N), CHIP).t_network
        for algorithm in ("ring", "tree", "one_shot"):
            named = analyze(ops.all_reduce(elements, N, algorithm=algorithm), CHIP).t_network
            assert auto <= named * (1 + 1e-12)


@pytest.mark.parametrize("op", [ops.all_gather, ops.reduce_scatter, ops.all_to_all])
def test_ring_collectives_take_n_minus_1_steps(op):
    (kernel,) = op(ELEMENTS, N, algorithm="ring").kernels
    assert kernel.link_steps == N - 1
    assert kernel.link_bytes == pytest.approx(D * 7 / 8, rel=1e-12)


def test_tree_is_an_all_reduce_algorithm_only():
    with pytest.raises(WorkloadError, match="algorithm='tree' is an all-reduce algorithm"):
        ops.all_gather(ELEMENTS, N, algorithm="tree")
    with pytest.raises(WorkloadError, match="algorithm must be one of"):
        ops.all_reduce(ELEMENTS, N, algorithm="nccl")


def test_a_tp8_decode_step_pays_one_latency_per_all_reduce():
    # Llama 2 70B, TP=8, one decode step: 2 all-reduces in each of 80 layers, one after the
    # embedding, and the logits' all-gather: 162 collectives, each at least one step
    llama = models.load("llama-2-70b")
    step = llama.decode(8, 4096, tp=8, link="nvlink")
    collectives = sum(k.count * k.link_steps for k in step.kernels if k.link_bytes)
    assert collectives == 162
    plain = Hardware(name="plain-h100", memory_bandwidth=3.35e12, memory_capacity=80e9,
                     matrix={"bf16": 989.4e12}, vector={"bf16": 133.8e12, "fp32": 66.9e12},
                     links={"nvlink": Link("nvlink", 25e9, 18)})
    with_latency, without = analyze(step, CHIP), analyze(step, plain)
    assert with_latency.t_network - without.t_network == pytest.approx(162 * LAT, rel=1e-9)


# Published per-step latencies, in s: NCCL's src/graph/tuning.cc default hwLatencies for the
# LL protocol (ring), its lowest: NVLink 0.6 us, PCI 1.0 us, NET 2.7 us; the scaling book's
# "typically around 1us" per ICI hop (part 3, a note on ICI latency).
PUBLISHED_LATENCY = {"nvlink": 0.6e-6, "pcie": 1.0e-6, "ib": 2.7e-6, "ici": 1.0e-6}
LATENCY_SOURCES = {"nvlink": "nccl_tuning", "pcie": "nccl_tuning", "ib": "nccl_tuning",
                   "ici": "scaling_book_sharding"}


def _raw_links(name: str) -> dict:
    import yaml

    from pytest_roofline.hardware import builtin_spec_dir
    return yaml.safe_load((builtin_spec_dir() / f"{name}.yaml").read_text())["links"]


@pytest.mark.parametrize("name", ["h100", "h100-pcie", "b200", "gb300", "b300", "rtx-5090",
                                  "l4", "tpu-v5e", "tpu-v7"])
def test_built_in_links_carry_the_published_per_step_latency(name):
    chip = get_hardware(name)
    raw = _raw_links(chip.name)
    for link in chip.links.values():
        if link.name in ("pcie", "dcn") and chip.vendor == "Google":
            assert link.latency == 0 and link.latency_kind == "unpublished"
            continue
        assert link.latency == pytest.approx(PUBLISHED_LATENCY[link.name], rel=1e-12)
        assert link.latency_kind == "published"
        assert raw[link.name]["latency_source"] == LATENCY_SOURCES[link.name]
        assert "http" in chip.sources[LATENCY_SOURCES[link.name]]


def test_links_without_a_published_latency_stay_unpublished():
    # AMD's Infinity Fabric, AWS's NeuronLink and Gaudi's RoCE: no per-step figure is published
    for name in ("mi300x", "mi355x", "trainium2", "trn3", "gaudi3"):
        for link in get_hardware(name).links.values():
            assert link.latency == 0 and link.latency_kind == "unpublished"


def test_a_published_latency_prices_each_step_of_a_collective():
    # A ring all-reduce of 8 bf16 elements on 8 H100s: 14 sequential steps of 0.6 us over NVLink
    # dwarf the 28 link bytes (28 / 450e9 s)
    r = analyze(ops.all_reduce(8, N, algorithm="ring"), "h100")
    assert r.t_network == pytest.approx(2 * 16 * 7 / 8 / BW + 14 * 0.6e-6, rel=1e-9)
    assert r.notes == ()  # a published latency is a physical minimum: no caveat


def _spec(**link):
    return {"name": "chip-x", "sources": {"s": "https://example.com/sheet"},
            "memory": {"capacity": "80 GB", "bandwidth": "3 TB/s", "source": "s"},
            "matrix": {"bf16": "1 PFLOP/s", "source": "s"},
            "vector": {"bf16": "100 TFLOP/s", "source": "s"},
            "links": {"nvlink": {"bandwidth": "25 GB/s", "count": 18, "source": "s", **link}}}


def test_a_spec_latency_is_read_with_its_source_and_kind():
    chip = load_spec_data(_spec(latency="3 us", latency_source="s", latency_kind="measured"))
    assert chip.links["nvlink"].latency == pytest.approx(3e-6)
    assert chip.links["nvlink"].latency_kind == "measured"
    with pytest.raises(SpecError, match="latency_source"):
        load_spec_data(_spec(latency="3 us"))
    with pytest.raises(SpecError, match="latency_kind"):
        load_spec_data(_spec(latency="3 us", latency_source="s", latency_kind="guessed"))
    with pytest.raises(SpecError, match="latency"):
        load_spec_data(_spec(latency="fast", latency_source="s"))


# -- mesh axes in the spec: which link an axis runs over ------------------------------------


def _pod(**extra):
    spec = _spec()
    spec["links"]["ib"] = {"bandwidth": "50 GB/s", "count": 1, "source": "s"}
    spec.update(extra)
    return load_spec_data(spec)


def test_a_spec_maps_mesh_axes_to_links():
    chip = _pod(mesh_axes={"tp": "nvlink", "dp": "IB"})
    assert chip.link("axis:tp").name == "nvlink" and chip.link("axis:dp").name == "ib"
    assert chip.link("axis:pp").name == "nvlink"  # unmapped: the default (first) link
    assert chip.link("axis:tp+dp").name == "nvlink"  # two links: the faster, a lower bound
    from dataclasses import replace

    from pytest_roofline import Workload

    on_dp = replace(ops.all_reduce(ELEMENTS, N).kernels[0], link="axis:dp")
    r = analyze(Workload([on_dp]), chip)
    assert r.t_network == pytest.approx(2 * D * 7 / 8 / 50e9, rel=1e-12)
    with pytest.raises(SpecError, match=r"mesh_axes.dp: 'roce' is not one of its links"):
        _pod(mesh_axes={"dp": "roce"})
    with pytest.raises(SpecError, match="mesh_axes"):
        _pod(mesh_axes=["dp"])


def test_a_measured_latency_is_named_in_the_result():
    r = analyze(ops.all_reduce(ELEMENTS, N), CHIP)
    assert r.notes == ("nvlink latency 2 us a step is measured, not a physical minimum: the "
                       "network time is no lower bound",)
    assert r.to_dict()["notes"] == list(r.notes)
    assert analyze(ops.all_reduce(ELEMENTS, N), "h100").notes == ()
    assert "notes" not in analyze(ops.all_reduce(ELEMENTS, N), "h100").to_dict()


# -- the per-device kernel of each row of the table, memory and adds included ------------------
# For N = 8 devices and D bytes (the full tensor, E = D / 2 bf16 elements), each device
# holds its input and its output in memory (held: 1 for the whole of D, 1/N for a share, 0
# for none), and the ring reads what it sends and writes what it receives: memory bytes =
# held_in·D + held_out·D + 2·link bytes; the reductions add (N-1)/N of E's elements.
#   all_reduce:      link 2·D·7/8 = 1.75 D; memory D + D + 3.5 D = 5.5 D; adds 7/8 E
#   all_gather:      link 7/8 D; memory D/8 + D + 1.75 D = 2.875 D; no adds
#   reduce_scatter:  link 7/8 D; memory D + D/8 + 1.75 D = 2.875 D; adds 7/8 E
#   all_to_all:      link 7/8 D; memory D + D + 1.75 D = 3.75 D; no adds
#   point_to_point:  (2 devices) link D; memory D (the input; the peer's output) + 2 D = 3 D
# In the network's switches (all-reduce only): NVLink SHARP sends (N+1)/N·D = 1.125 D,
# InfiniBand SHARP D, in 2 steps; the switch adds, so no adds, and memory serves the input
# and the output only: 2 D.
@pytest.mark.parametrize(("op", "devices", "link", "memory", "adds"), [
    (ops.all_reduce, N, 1.75, 5.5, 7 / 8),
    (ops.all_gather, N, 7 / 8, 2.875, 0.0),
    (ops.reduce_scatter, N, 7 / 8, 2.875, 7 / 8),
    (ops.all_to_all, N, 7 / 8, 3.75, 0.0),
    (ops.point_to_point, 2, 1.0, 3.0, 0.0),
])
def test_each_collective_reads_writes_and_adds_by_its_row(op, devices, link, memory, adds):
    given = () if op is ops.point_to_point else (devices,)   # a send is between two
    (kernel,) = op(ELEMENTS, *given, algorithm="ring").kernels
    assert kernel.link_bytes == pytest.approx(link * D, rel=1e-12)
    assert kernel.bytes == pytest.approx(memory * D, rel=1e-12)
    assert kernel.flops == pytest.approx(adds * ELEMENTS, rel=1e-12)
    assert kernel.name.endswith(f"{devices} devices, ring)")
    (auto,) = op(ELEMENTS, *given).kernels      # the default names no algorithm
    assert auto.name.endswith(f"{devices} devices)")


@pytest.mark.parametrize(("algorithm", "link"), [("nvls", 1.125), ("sharp", 1.0)])
def test_an_all_reduce_in_the_switches_moves_its_input_and_output_only(algorithm, link):
    (kernel,) = ops.all_reduce(ELEMENTS, N, algorithm=algorithm).kernels
    assert kernel.link_bytes == pytest.approx(link * D, rel=1e-12)
    assert kernel.link_steps == 2
    assert kernel.bytes == pytest.approx(2 * D, rel=1e-12) and kernel.flops == 0


def test_a_collectives_footprint_is_its_tensor_and_a_mixed_matmul_names_the_odd_one():
    assert ops.all_reduce(ELEMENTS, N).footprint == D          # the full tensor, bf16
    np = pytest.importorskip("numpy")
    with pytest.raises(WorkloadError, match=r"two arrays, got b=8$"):
        ops.sharded_matmul(np.ones((4, 8)), 8, shards=2)       # an array and a size
    with pytest.raises(WorkloadError, match=r"two arrays, got a=4$"):
        ops.sharded_matmul(4, np.ones((8, 2)), shards=2)


def test_a_sharded_matmuls_footprint_and_knob():
    """[1024, 4096] @ [4096, 2048] in bf16 over 2 chips along k: a chip holds its [1024, 2048]
    and [2048, 2048] operands and its [1024, 2048] partial sum (2 B each: 16,777,216 B) and
    the all-reduced [1024, 2048] output (4,194,304 B); its knob is the contraction a chip
    takes. Along n the knob is k itself."""
    w = ops.sharded_matmul(1024, 4096, 2048, shards=2)
    assert w.footprint == 16_777_216 + 4_194_304
    assert w.knob is not None and w.knob.name == "k_per_chip"
    along_n = ops.sharded_matmul(1024, 4096, 2048, shards=2, split="n")
    assert along_n.knob is not None and along_n.knob.name == "k"
    # along n without the gather: its own [1024, 4096], [4096, 1024] and [1024, 1024], no more
    kept = ops.sharded_matmul(1024, 4096, 2048, shards=2, split="n", gather=False)
    assert kept.footprint == (4_194_304 + 4_194_304 + 1_048_576) * 2


def test_a_collective_over_one_device_moves_nothing_but_a_send_still_sends():
    (alone,) = ops.all_reduce(ELEMENTS, 1).kernels
    assert (alone.flops, alone.bytes, alone.link_bytes) == (0.0, 0.0, 0.0)
    (sent,) = ops.point_to_point(ELEMENTS).kernels
    assert sent.link_bytes == D and sent.link_steps == 1     # one hop


def test_a_collective_is_named_by_its_size_and_dtype_and_a_bad_matmul_is_refused():
    assert ops.all_reduce(ELEMENTS, N).kernels[0].name == "all_reduce(1048576 x bf16, 8 devices)"
    np = pytest.importorskip("numpy")
    with pytest.raises(WorkloadError, match=r"^sharded_matmul needs m, k, n"):
        ops.sharded_matmul(4, 8, shards=2)
    with pytest.raises(WorkloadError, match=r"do not contract as \[\.\.\., m, k\] @ \[k, n\]"):
        ops.sharded_matmul(np.ones((4, 8)), np.ones((9, 2)), shards=2)


def test_a_collective_kernel_reduces_in_its_data_dtype_unless_told():
    from pytest_roofline.ops.collectives import collective_kernel

    assert collective_kernel("all_reduce", "x", 1024, 8, "bf16").dtype == "bf16"
    assert collective_kernel("all_reduce", "x", 1024, 8, "bf16", compute="fp32").dtype == "fp32"
    assert collective_kernel("all_reduce", "x", 1024, 1, "bf16").dtype == "bf16"  # alone
    assert collective_kernel("all_reduce", "x", 1024, 8, "bf16", algorithm="nvls").dtype == \
        "bf16"


def test_a_sharded_matmuls_knob_rebuilds_it_and_overlap_adds_both_kernels():
    w = ops.sharded_matmul(1024, 4096, 2048, shards=2)
    # k_per_chip = 1024 rebuilds the matmul with k = 2048 over the 2 chips
    assert w.knob.build(1024).kernels[0].flops == 2 * 1024 * 1024 * 2048
    one = ops.sharded_matmul(1024, 4096, 2048, shards=2, overlap=True)
    (kernel,) = one.kernels
    # the local [1024, 2048] @ [2048, 2048] and the all-reduce's adds, (N-1)/N of m·n
    assert kernel.flops == 2 * 1024 * 2048 * 2048 + 1024 * 2048 / 2
    with pytest.raises(WorkloadError):
        ops.all_reduce(ELEMENTS, None)   # only a send has a default of two devices
