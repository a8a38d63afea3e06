"""The hardware catalog: built-in specs, lookups, user files, and errors that say what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_roofline import (
    SpecError,
    UnknownHardwareError,
    UnsupportedPrecisionError,
    analyze,
    get_hardware,
    list_hardware,
    ops,
)
from pytest_roofline.hardware import Catalog, builtin_spec_dir

REQUIRED_CHIPS = [
    "h100-sxm", "h100-pcie", "h200", "b200", "a100-80gb-sxm", "a100-40gb", "l4", "l40s", "t4",
    "v100", "mi300x", "mi250x", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e",
]


NEW_CHIPS = ["b300", "gb300", "gb200", "mi325x", "mi350x", "mi355x", "h20", "rtx-4090",
             "rtx-5090", "tpu-v7", "trainium3"]


def test_at_least_the_required_chips_are_built_in() -> None:
    names = list_hardware()
    assert set(REQUIRED_CHIPS) <= set(names)
    assert set(NEW_CHIPS) <= set(names)
    assert {"gaudi3", "trainium2"} & set(names)
    assert len(names) >= 29


# Each new chip's main dense peak and memory, as its cited source states them (tolerance 1e-9:
# the file must hold the figure itself, not a rounding of it):
#   name        dtype  dense peak  memory BW  where the figure comes from
NEW_CHIP_FIGURES = [
    # NVIDIA HGX B300 table: FP16/BF16 36 PFLOPS with sparsity per 8 GPUs -> 2.25 dense each;
    # Blackwell Ultra architecture post: 8 TB/s
    ("b300", "bf16", 2250e12, 8e12),
    # NVIDIA GB300 NVL72 table: FP16/BF16 360 PFLOPS with sparsity per 72 GPUs -> 2.5 dense
    ("gb300", "bf16", 2500e12, 8e12),
    # NVIDIA GB300 NVL72 table: FP4 1,080 PFLOPS dense per 72 GPUs (the post's "15 PFLOPS")
    ("gb300", "fp4", 15000e12, 8e12),
    # NVIDIA GB200 NVL72 table: FP16/BF16 360 PFLOPS sparse, 576 TB/s per 72 GPUs
    ("gb200", "bf16", 2500e12, 8e12),
    # AMD MI325X specifications: FP16/BF16 1,307.4 TFLOPS dense, 6 TB/s HBM3E
    ("mi325x", "bf16", 1307.4e12, 6e12),
    # AMD MI350X: 256 CUs x 2.2 GHz x 4,096 FLOP/clock = 2,306.9 TFLOPS; 8 TB/s
    ("mi350x", "bf16", 2306.9e12, 8e12),
    # AMD MI355X: 256 CUs x 2.4 GHz x 4,096 FLOP/clock = 2,516.6 TFLOPS; 8 TB/s
    ("mi355x", "bf16", 2516.6e12, 8e12),
    # NVIDIA H20 product brief as reported: FP16/BF16 148 TFLOPS dense, 4.0 TB/s
    ("h20", "bf16", 148e12, 4e12),
    # Ada whitepaper appendix, RTX 4090: BF16 (FP32 accumulate) 165.2 TFLOPS, 1,008 GB/s
    ("rtx-4090", "bf16", 165.2e12, 1008e9),
    # RTX Blackwell whitepaper appendix, RTX 5090: BF16 (FP32 accumulate) 209.5, 1,792 GB/s
    ("rtx-5090", "bf16", 209.5e12, 1792e9),
    # Google Cloud TPU7x table: bf16 2,307 TFLOPs per chip; JAX's table 7.40e12 B/s
    ("tpu-v7", "bf16", 2307e12, 7.4e12),
    ("tpu-v7", "fp8", 4614e12, 7.4e12),
    # AWS Neuron Trainium3 page: 671 BF16 and 2,517 MXFP8 TFLOPS, 4.9 TB/s
    ("trainium3", "bf16", 671e12, 4.9e12),
    ("trainium3", "fp8", 2517e12, 4.9e12),
]


@pytest.mark.parametrize(("name", "dtype", "peak", "bandwidth"), NEW_CHIP_FIGURES)
def test_new_chips_hold_their_cited_dense_peak(name: str, dtype: str, peak: float,
                                                 bandwidth: float) -> None:
    hw = get_hardware(name)
    assert hw.peak(dtype) == pytest.approx(peak, rel=1e-9)
    assert hw.bandwidth == pytest.approx(bandwidth, rel=1e-9)
    assert hw.onchip, "every built-in chip lists its on-chip memory"


@pytest.mark.parametrize(("alias", "canonical"), [
    ("b300", "b300"), ("GB300", "gb300"), ("gb200", "gb200"), ("mi325x", "mi325x"),
    ("MI350X", "mi350x"), ("mi355x", "mi355x"), ("h20", "h20"), ("rtx-4090", "rtx-4090"),
    ("RTX4090", "rtx-4090"), ("RTX5090", "rtx-5090"), ("tpu-v7", "tpu-v7"),
    ("ironwood", "tpu-v7"), ("tpu7x", "tpu-v7"), ("trn3", "trainium3")])
def test_new_chip_names_and_aliases_resolve(alias: str, canonical: str) -> None:
    assert get_hardware(alias).name == canonical


def test_sparse_peaks_are_kept_apart_on_the_new_chips() -> None:
    # Vendors headline "with sparsity" figures; the default peak is the dense one, half of it
    for name in ("b300", "gb300", "gb200", "mi325x", "mi355x", "rtx-5090"):
        hw = get_hardware(name)
        assert hw.peak("bf16", sparse=True) == pytest.approx(2 * hw.peak("bf16"), rel=1e-3)


def test_unpublished_figures_are_left_out_not_zero() -> None:
    # Blackwell Ultra's INT8 is not stated dense: int8 matrix work is refused, never priced at 0
    for name in ("b300", "gb300"):
        hw = get_hardware(name)
        assert "int8" not in hw.matrix
        with pytest.raises(UnsupportedPrecisionError):
            hw.peak("int8")
    # No VPU or Vector Engine peak is published for TPU7x or Trainium3: vector work runs at the
    # matrix peak (an upper bound on the vector units), named as such
    for name in ("tpu-v7", "trainium3"):
        hw = get_hardware(name)
        assert not hw.vector and hw.vector_fallback == "matrix"
        assert hw.peak_key("bf16", unit="vector") == ("matrix:bf16", hw.matrix["bf16"])


def test_packed_16_bit_vector_peaks_on_turing_hopper_and_blackwell() -> None:
    # Packed HFMA2 runs FP16/BF16 at twice the FP32 rate on the CUDA cores of Hopper (H100
    # whitepaper: 133.8 vs 66.9 TFLOPS), datacenter Blackwell (150 vs 75 on B200) and Turing (the
    # CUDA guide, compute capability 7.x: 128 16-bit vs 64 32-bit results per clock per SM)
    for name in ("h100", "h200", "h20", "b200", "gb200", "b300", "gb300", "t4"):
        hw = get_hardware(name)
        sixteen = hw.vector.get("bf16", hw.vector["fp16"])  # Turing has no bf16
        assert sixteen == pytest.approx(2 * hw.vector["fp32"], rel=1e-3), name
    # GeForce Ada and Blackwell run them at the FP32 rate
    for name in ("rtx-4090", "rtx-5090"):
        hw = get_hardware(name)
        assert hw.vector["bf16"] == hw.vector["fp32"]


@pytest.mark.parametrize("name", sorted(p.stem for p in builtin_spec_dir().glob("*.yaml")))
def test_every_builtin_spec_loads_and_cites_sources(name: str) -> None:
    hw = get_hardware(name)
    assert hw.name == name
    assert hw.sources, "every spec cites its sources"
    assert all("http" in text for text in hw.sources.values()), "sources are public URLs"
    assert hw.bandwidth > 1e10 and hw.capacity > 1e9
    # Dense peaks never exceed the sparse ones: the sparse table is the 2:4 figure.
    for dtype, sparse in hw.matrix_sparse.items():
        if dtype in hw.matrix:
            assert hw.matrix[dtype] <= sparse


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [("h100", "h100-sxm"), ("H100", "h100-sxm"), ("a100", "a100-80gb-sxm"),
     ("tpu-v5e", "tpu-v5e"), ("TPU-V6E", "tpu-v6e"), ("h200", "h200"), ("b200", "b200"),
     ("mi300x", "mi300x")],
)
def test_names_are_case_insensitive_with_aliases(alias: str, canonical: str) -> None:
    assert get_hardware(alias).name == canonical


def test_h100_ridge_from_the_datasheet() -> None:
    # 989.4 TFLOP/s bf16 dense (the datasheet's 1,979 is 2:4 sparse) over 3.35 TB/s HBM3.
    hw = get_hardware("h100")
    assert hw.peak("bf16") == pytest.approx(989.4e12, rel=1e-3)
    assert hw.bandwidth == pytest.approx(3.35e12, rel=1e-3)
    assert hw.ridge("bf16") == pytest.approx(295.3, rel=2e-3)
    assert hw.peak("bf16", sparse=True) == pytest.approx(2 * hw.peak("bf16"), rel=1e-3)


def test_tpu_v5e_ridge_from_the_scaling_book() -> None:
    # Scaling book chip table: 1.97e14 bf16 FLOP/s over 8.2e11 B/s of HBM = ~240 FLOP/B.
    hw = get_hardware("tpu-v5e")
    assert hw.ridge("bf16") == pytest.approx(1.97e14 / 8.2e11, rel=1e-2)
    assert hw.ridge("bf16") == pytest.approx(240, rel=1e-2)


def test_vector_units_are_slower_than_matrix_units_on_h100() -> None:
    # Whitepaper: 133.8 TFLOP/s bf16 on CUDA cores vs 989.4 on tensor cores.
    hw = get_hardware("h100")
    assert hw.peak("bf16", unit="vector") == pytest.approx(133.8e12, rel=1e-3)
    # Norms, softmax and activations of an fp8 or int8 program run on 16-bit data (the chip
    # has no 8-bit vector path): the bf16 vector peak, not the fp32 one (half of it).
    assert hw.peak_key("fp8", unit="vector") == ("vector:bf16", hw.vector["bf16"])
    assert hw.peak_key("int8", unit="vector") == ("vector:bf16", hw.vector["bf16"])
    # L4 lists only an fp32 vector peak (Ada runs 16-bit non-tensor math at the fp32 rate)
    assert get_hardware("l4").peak_key("int8", unit="vector")[0] == "vector:fp32"


def test_unknown_name_lists_close_matches() -> None:
    with pytest.raises(UnknownHardwareError, match=r"unknown hardware 'h10'.*'h100'") as info:
        get_hardware("h10")
    assert isinstance(info.value, LookupError)
    assert "tpu-v5e" not in str(info.value)  # close matches only: no list of every chip
    with pytest.raises(UnknownHardwareError) as far:
        get_hardware("quantum-abacus")
    assert "Did you mean" not in str(far.value)
    # the nearest by spelling, and where every chip is listed: never all of them
    assert "Closest: '" in str(far.value) and "are listed in pytest-roofline hw list" in str(
        far.value) and "tpu-v5e" not in str(far.value) and len(str(far.value)) <= 200


@pytest.mark.parametrize(("path", "says"), [
    ("/dev/null", "is not a regular file"), ("{tmp}", "is a directory"),
    ("{tmp}/missing.yaml", "does not exist")])
def test_a_spec_path_that_is_no_file_says_what_it_is(path: str, says: str,
                                                      tmp_path: Path) -> None:
    """Before, a folder, a FIFO and /dev/null all read "does not exist"."""
    where = path.format(tmp=tmp_path)
    if where == "/dev/null" and not Path(where).exists():
        pytest.skip("no /dev/null here")
    with pytest.raises(UnknownHardwareError, match=f"hardware spec file .* {says}"):
        get_hardware(where)


def test_missing_precision_is_an_error_never_a_fallback() -> None:
    with pytest.raises(UnsupportedPrecisionError, match="t4 has no dense fp8 peak.*it has:"):
        get_hardware("t4").peak("fp8")
    with pytest.raises(UnsupportedPrecisionError, match="unknown precision 'bf61'"):
        get_hardware("h100").peak("bf61")


SPEC = """\
name: {name}
sources: {{ds: "Example datasheet, https://example.com/ds.pdf"}}
memory: {{capacity: 16 GB, bandwidth: {bandwidth}, source: ds}}
matrix: {{source: ds, bf16: 100 TFLOP/s}}
"""


def _catalog_with(tmp_path: Path, text: str, name: str = "chip.yaml") -> tuple[Catalog, Path]:
    path = tmp_path / name
    path.write_text(text)
    return Catalog(), path


def test_user_spec_file_by_path(tmp_path: Path) -> None:
    catalog, path = _catalog_with(tmp_path, SPEC.format(name="mychip", bandwidth="1 TB/s"))
    hw = catalog.get(str(path))
    assert hw.name == "mychip" and hw.ridge("bf16") == pytest.approx(100.0)
    assert catalog.get(str(path)) is hw  # read once
    # Known by its path only: whether a name is known must not depend on which test loaded
    # a file first. Registering the file makes its name known.
    with pytest.raises(UnknownHardwareError):
        catalog.get("mychip")
    catalog.register_path(path)
    assert catalog.get("MYCHIP").name == "mychip"


@pytest.mark.parametrize(
    ("bandwidth", "fragment"),
    [("3 TFLOP/s", "not a bandwidth"), ("-1 TB/s", "greater than zero"),
     ("0 TB/s", "greater than zero"), (".nan", "not a finite number")],
)
def test_spec_errors_name_file_field_and_value(tmp_path: Path, bandwidth: str,
                                               fragment: str) -> None:
    catalog, path = _catalog_with(tmp_path, SPEC.format(name="bad", bandwidth=bandwidth))
    with pytest.raises(SpecError) as info:
        catalog.get(str(path))
    message = str(info.value)
    assert str(path) in message and "memory.bandwidth" in message and fragment in message


def test_spec_section_without_source_is_refused(tmp_path: Path) -> None:
    text = SPEC.format(name="nosrc", bandwidth="1 TB/s").replace(", source: ds}}", "}}")
    text = text.replace("matrix: {source: ds, ", "matrix: {")
    catalog, path = _catalog_with(tmp_path, text)
    with pytest.raises(SpecError, match=r"'matrix.source'.*keys of 'sources'|citing"):
        catalog.get(str(path))


def test_unknown_field_and_precision_keys(tmp_path: Path) -> None:
    catalog, path = _catalog_with(tmp_path, SPEC.format(name="x", bandwidth="1 TB/s")
                                  + "memroy: {}\n")
    with pytest.raises(SpecError, match="unknown field 'memroy'.*Did you mean 'memory'"):
        catalog.get(str(path))
    catalog, path = _catalog_with(tmp_path, SPEC.format(name="y", bandwidth="1 TB/s")
                                  .replace("bf16:", "bfloat:"))
    with pytest.raises(SpecError, match="matrix.bfloat"):
        catalog.get(str(path))


def test_yaml_is_loaded_safely(tmp_path: Path) -> None:
    catalog, path = _catalog_with(tmp_path, "!!python/object/apply:os.system ['echo hi']\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        catalog.get(str(path))


def test_extends_overrides_fields_of_a_builtin(tmp_path: Path) -> None:
    text = """\
name: h100-capped
extends: h100
description: H100 at a lower power cap
sources: {lab: "Power-capped measurement, https://example.com/lab"}
matrix:
  bf16: {value: 800 TFLOP/s, source: lab}
"""
    catalog, path = _catalog_with(tmp_path, text)
    hw = catalog.get(str(path))
    base = catalog.get("h100")
    assert hw.peak("bf16") == 800e12
    assert hw.peak("fp8") == base.peak("fp8")  # inherited
    assert hw.bandwidth == base.bandwidth
    assert "lab" in hw.sources and "datasheet" in hw.sources
    assert hw.aliases == ()  # the parent's aliases stay the parent's


def test_extends_unknown_parent(tmp_path: Path) -> None:
    text = "name: z\nextends: h1000\nsources: {a: 'https://x'}\n"
    catalog, path = _catalog_with(tmp_path, text)
    with pytest.raises(SpecError, match="extends.*'h1000'.*Did you mean"):
        catalog.get(str(path))


def test_missing_spec_file() -> None:
    with pytest.raises(UnknownHardwareError, match="does not exist"):
        get_hardware("/nowhere/chip.yaml")


def test_register_a_folder_of_specs(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(SPEC.format(name="chip-a", bandwidth="1 TB/s"))
    (tmp_path / "b.yml").write_text(SPEC.format(name="chip-b", bandwidth="2 TB/s"))
    catalog = Catalog()
    assert [hw.name for hw in catalog.register_path(tmp_path)] == ["chip-a", "chip-b"]
    assert catalog.get("chip-b").ridge("bf16") == pytest.approx(50.0)


def test_links_are_per_direction_times_count() -> None:
    # NVLink 4 on H100: 18 links x 25 GB/s per direction = 450 GB/s (900 GB/s both ways).
    hw = get_hardware("h100")
    assert hw.link("nvlink").total == pytest.approx(450e9, rel=1e-3)
    assert hw.link_bandwidth("nvlink", count=2) == pytest.approx(50e9, rel=1e-3)
    with pytest.raises(UnknownHardwareError, match="no link 'ici'.*nvlink"):
        hw.link("ici")


@pytest.mark.parametrize("chip", ["tpu-v4", "tpu-v6e"])
def test_chips_without_a_published_vector_peak_bound_it_by_the_matrix_peak(chip: str) -> None:
    # Neither Google table publishes a VPU peak; the spec says vector_fallback: matrix, so a
    # whole model (norms, softmax) can be analyzed, with the peak used named in the result.
    hw = get_hardware(chip)
    assert not hw.vector
    assert hw.peak_key("bf16", unit="vector") == ("matrix:bf16", hw.matrix["bf16"])
    # Where a chip has neither a vector peak nor the fallback, it is an error, not a guess.
    bare = hw.replace(name="bare", vector_fallback="fp32")
    with pytest.raises(UnsupportedPrecisionError, match="no vector-unit peak"):
        bare.peak("bf16", unit="vector")


def test_an_unknown_precision_suggests_only_listed_precisions() -> None:
    # 'f16' is an alias of fp16: the suggestion names the precision the message lists
    with pytest.raises(UnsupportedPrecisionError) as info:
        get_hardware("h100").peak("f17")
    message = str(info.value)
    assert "'fp16'" in message.split("Did you mean")[1] and "'f16'" not in message


@pytest.mark.parametrize(("block", "message"), [
    ("vector_matmul: {precisions: [fp32]}\n", r"vector_matmul.source"),
    ("vector_matmul: {precisions: fp32, source: ds}\n", r"vector_matmul.precisions"),
    ("vector_matmul: {precisions: [fp99], source: ds}\n", r"unknown precision 'fp99'"),
    ("vector_matmul: {precisions: [bf16], source: ds}\n", r"no matrix peak of that"),
    ("vector_matmul: {precision: [fp32], source: ds}\n", r"vector_matmul.precision'"),
])
def test_bad_vector_matmul_entries_name_the_field(tmp_path: Path, block: str,
                                                  message: str) -> None:
    text = (SPEC.format(name="chip", bandwidth="1 TB/s")
            + "vector: {source: ds, fp32: 10 TFLOP/s, bf16: 20 TFLOP/s}\n" + block)
    catalog, path = _catalog_with(tmp_path, text)
    with pytest.raises(SpecError, match=message):
        catalog.get(str(path))


def test_a_vector_matmul_entry_prices_fp32_matmuls_at_the_vector_peak(tmp_path: Path) -> None:
    # A100 (19.5 TFLOP/s fp32 on the CUDA cores, 2.039 TB/s): ridge 9.56 FLOP/B
    a100 = get_hardware("a100-80gb-sxm")
    assert a100.peak_key("fp32") == ("vector:fp32", 19.5e12)
    assert a100.ridge("fp32") == pytest.approx(19.5e12 / a100.bandwidth)
    assert "fp32" in a100.summary()["ridge_flop_per_byte"]


def test_a_stated_mixed_path_prices_a_mixed_product(tmp_path: Path) -> None:
    # No built-in chip states one (fp8 weights with bf16 activations run at the bf16 peak on
    # H100); a user spec may: bf16 x fp8 at the fp8 peak, twice the bf16 one.
    text = """\
name: h100-mixed
extends: h100
sources: {lab: "Hypothetical mixed-input tensor cores, https://example.com/lab"}
mixed_matmul: {paths: {"bf16 x fp8": fp8}, source: lab}
"""
    catalog, path = _catalog_with(tmp_path, text)
    mixed = catalog.get(str(path))
    work = ops.matmul(8192, 8192, 8192, dtype="bf16", b_dtype="fp8")
    assert analyze(work, "h100").kernels[0].peak_label == "matrix:bf16"
    result = analyze(work, mixed)
    assert result.kernels[0].peak_label == "matrix:fp8"
    assert result.t_compute == pytest.approx(2 * 8192**3 / 1978.9e12)
    assert mixed.mixed_path("bf16", "fp8") == "fp8" and mixed.mixed_path("fp8", "bf16") is None


@pytest.mark.parametrize(("block", "message"), [
    ('mixed_matmul: {paths: {"bf16 x fp8": fp8}}\n', r"mixed_matmul.source"),
    ('mixed_matmul: {paths: {"bf16 by fp8": fp8}, source: ds}\n', r"ACTIVATIONS x WEIGHTS"),
    ('mixed_matmul: {paths: {"bf16 x fp8": fp8}, source: ds}\n', r"runs at 'fp8', which has no"),
    ("mixed_matmul: {paths: [], source: ds}\n", r"mixed_matmul.paths"),
])
def test_bad_mixed_paths_name_the_field(tmp_path: Path, block: str, message: str) -> None:
    catalog, path = _catalog_with(tmp_path, SPEC.format(name="chip", bandwidth="1 TB/s") + block)
    with pytest.raises(SpecError, match=message):
        catalog.get(str(path))


def test_a_per_thread_memory_table_is_read_from_the_spec(tmp_path: Path) -> None:
    text = ("name: cpu\nsources: {ds: \"Example datasheet, https://example.com/ds.pdf\"}\n"
            "memory: {capacity: 16 GB, bandwidth: 30 GB/s, source: ds,\n"
            "         by_threads: {1: 20 GB/s, '2': 30 GB/s}}\n"
            "matrix: {source: ds, bf16: 100 TFLOP/s}\n")
    catalog, path = _catalog_with(tmp_path, text)
    chip = catalog.get(str(path))
    assert dict(chip.memory_by_threads) == {1: 20e9, 2: 30e9}
    assert chip.summary()["memory_by_threads_Bps"] == {"1": 20e9, "2": 30e9}


@pytest.mark.parametrize(("table", "message"), [
    ("by_threads: 20 GB/s", r"memory.by_threads.*mapping of thread count"),
    ("by_threads: {one: 20 GB/s}", r"memory.by_threads.one.*thread count"),
    ("by_threads: {0: 20 GB/s}", r"memory.by_threads.0.*thread count"),
    ("by_threads: {1: 20 TFLOP/s}", r"memory.by_threads.1.*not a bandwidth"),
    ("by_threads: {1: 40 GB/s}", r"by_threads.1 must be > 0 and at most memory.bandwidth"),
])
def test_a_bad_per_thread_memory_table_names_the_field(tmp_path: Path, table: str,
                                                       message: str) -> None:
    text = ("name: cpu\nsources: {ds: \"Example datasheet, https://example.com/ds.pdf\"}\n"
            f"memory: {{capacity: 16 GB, bandwidth: 30 GB/s, source: ds, {table}}}\n"
            "matrix: {source: ds, bf16: 100 TFLOP/s}\n")
    catalog, path = _catalog_with(tmp_path, text)
    with pytest.raises(SpecError, match=message):
        catalog.get(str(path))


def test_the_check_of_this_machine_is_registered_by_the_measuring_package(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine names no module above it: ``measuring`` registers the check that a time
    measured here is set only against this machine; without one, a measurement taken here is
    refused, never waved through."""
    import pytest_roofline.measuring  # noqa: F401
    from pytest_roofline.hardware import resolvers
    from pytest_roofline.measuring import here

    h100 = get_hardware("h100")
    assert resolvers.MEASURABLE
    assert resolvers.foreign_to_this_machine(h100) == here.foreign(h100)
    monkeypatch.setattr(resolvers, "MEASURABLE", [])
    reason = resolvers.foreign_to_this_machine(h100)
    assert reason is not None and "pytest_roofline.measuring" in reason


def test_a_kept_peak_is_never_an_older_chips() -> None:
    """peak_key keeps its answers per chip: a copy with other peaks (``replace``) answers
    from its own figures, and a refused precision is refused again (never kept as an
    answer)."""
    h100 = get_hardware("h100")
    label, peak = h100.peak_key("bf16")
    assert (label, peak) == h100.peak_key("bf16") == ("matrix:bf16", h100.matrix["bf16"])
    halved = h100.replace(matrix={k: v / 2 for k, v in h100.matrix.items()})
    assert halved.peak_key("bf16") == ("matrix:bf16", peak / 2)
    assert h100.peak_key("bf16") == (label, peak)
    for _ in range(2):
        with pytest.raises(UnsupportedPrecisionError):
            get_hardware("tpu-v5e").peak_key("fp16")
