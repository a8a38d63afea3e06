"""Labels cut to fit a line keep what tells their rows apart (text_table.cut_labels): the start
the column's labels share goes first, then the end they share, then the middle of what differs.
One rule for every table render() draws (summary, compare, breakdown, profile rows)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pytest_roofline.text_table import common_parts, cut_labels, cut_middle, render

IDS = [f"tests/models/test_decode.py::test_llama_decode[batch={b}-context=4096-h100]"
       for b in (8, 16, 128)]
NCCL = ["ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "ncclDevKernel_AllGather_RING_LL",
        "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"]


def test_shared_parts_end_and_start_at_a_separator() -> None:
    # "tests/models/test_decode.py::test_llama_decode[batch=" is 6 + 7 + 14 + 2 + 17 + 1 + 6
    # = 53 characters, up to "="; the end "-context=4096-h100]" is 19, from "-"
    assert common_parts(IDS) == (53, 19)
    # "batch=1" starts both 16 and 128: the shared start stops at "=", never inside a number
    assert common_parts(["m=128", "m=1024"]) == (2, 0)
    # "ncclDevKernel_All" is shared by two of three: all three share "ncclDevKernel_" (14),
    # and "_RING_LL" (8)
    assert common_parts(NCCL) == (14, 8)
    assert common_parts(["same", "same"]) == (0, 0)  # fewer than two that differ
    assert common_parts(["a", "b"]) == (0, 0)


def test_test_ids_keep_their_parameter_at_80_columns_and_below() -> None:
    for width in (60, 40, 30, 24):
        cut = cut_labels(IDS, width)
        assert all(len(c) <= width for c in cut), cut
        assert len(set(cut)) == 3, cut
        for batch, label in zip((8, 16, 128), cut, strict=True):
            assert f"{batch}-context" in label, (width, label)
    # the middle cut of one id at a time loses the parameter at 24: all three read alike
    assert len({cut_middle(i, 24) for i in IDS}) == 1
    # the shared start is cut alike in every row (columns stay aligned): 60 columns take
    # 15 from the longest (53 + 3 + 19 = 75), so the 53-character start becomes 38 in each
    cut = cut_labels(IDS, 60)
    assert {c[:38] for c in cut} == {cut[0][:38]} and cut[0][38:] == "8-context=4096-h100]"
    assert len(cut[2]) == 60


def test_nccl_kernels_keep_the_collective() -> None:
    for width in (30, 24, 20):
        cut = cut_labels(NCCL, width)
        assert all(len(c) <= width for c in cut), cut
        assert [c[:8] for c in cut] == ["...AllRe", "...AllGa", "...Reduc"], cut
    # where the shared end goes too, it is cut at its end: "_RING_LL" -> "_R..."
    assert cut_labels(NCCL, 30)[2] == "...ReduceScatter_Sum_bf16_R..."
    # the old rule kept the shared start and end: three names, two read alike
    assert cut_middle(NCCL[0], 24) == cut_middle(NCCL[2], 24)


def test_labels_that_fit_or_share_nothing_keep_the_middle_cut() -> None:
    assert cut_labels(IDS, 80) == IDS
    names = ["alpha_kernel_with_a_long_name", "beta_kernel_other_long_title"]
    assert common_parts(names) == (0, 0)
    assert cut_labels(names, 16) == [cut_middle(n, 16) for n in names]


def test_render_cuts_the_id_column_by_the_rule_in_both_layouts() -> None:
    rows = [[i, "1.2 ms"] for i in IDS]
    lines = render(["test", "time"], rows, width=40, min_shrunk=24)
    assert [line.split()[0] for line in lines[1:]] == cut_labels(IDS, 40 - 2 - 6)
    # ids on lines of their own (a table too wide for any id width) are cut by it too
    wide = [[i, "x" * 30, "y" * 30] for i in IDS]
    lines = render(["test", "a", "b"], wide, width=40, min_shrunk=24)
    assert lines[2::2] == cut_labels(IDS, 40)


@given(st.lists(st.text(alphabet="ab_=[]-:/0123", min_size=1, max_size=40), min_size=1,
                max_size=6), st.integers(1, 45))
def test_cut_labels_never_exceed_the_width(labels: list[str], width: int) -> None:
    cut = cut_labels(labels, width)
    assert len(cut) == len(labels)
    assert all(len(c) <= width for c in cut)
    if all(len(label) <= width for label in labels):
        assert cut == labels


def test_a_short_shared_start_or_end_is_kept_with_what_differs() -> None:
    """"jit_" (4 characters) and a closing ")" would cost their "..." and save nothing: under
    SHARED_START (8) and SHARED_END (4) they stay, and the labels are cut in the middle."""
    labels = ["jit_dot/custom-call(8192x8192bf16)", "jit_convert_element_type(4096bf16)"]
    assert common_parts(labels) == (4, 1)
    assert cut_labels(labels, 26) == [cut_middle(label, 26) for label in labels]
    assert cut_labels(labels, 26)[0] == "jit_dot/cus...92x8192bf16)"


def test_the_profile_command_keeps_names_whole_under_wide(tmp_path: Path) -> None:
    """--wide printed the profile's tables at 80 columns all the same, names cut."""
    import contextlib
    import io

    from pytest_roofline.cli import main

    trace = str(Path(__file__).parent / "data" / "traces" / "v100_hta_trace_diff_test.json.gz")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["profile", trace, "--top", "5", "--wide"]) == 0
    text = out.getvalue()
    # the collective's row whole: its kind, group, algorithm and size (cut at 80 columns)
    assert ("record_param_comms(all_reduce over 2 ranks, ring (its kernel's name) (group: the "
            "trace's world size (distributedInfo), its own not recorded), 45310188 float)  "
            in text)
    assert max(len(line) for line in text.splitlines()) > 80
