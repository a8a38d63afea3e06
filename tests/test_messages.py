"""Error messages stay within 200 characters: where every allowed choice would not fit, the
closest ones are named, and where all of them are listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_roofline.errors import closest
from pytest_roofline.judging.marker import KEYS, MarkerError, parse


@pytest.mark.parametrize(("key", "value"), [
    ("max_tme", "1 ms"), ("zzz", 1), ("regim", "compute"), ("x" * 300, 1),
    ("dtype_", "y" * 500), ("minefficiency", 0.5)])
def test_an_unknown_marker_argument_names_the_closest_and_where_the_rest_are(
        key: str, value: object) -> None:
    """Before, every allowed name was listed (317 characters; 600+ with a long value)."""
    with pytest.raises(MarkerError) as info:
        parse({key: value}, default_hw=["h100"])
    text = str(info.value)
    assert len(text) <= 200, text
    assert f"all {len(KEYS)} are listed in docs/plugin.md, The marker" in text
    assert "Did you mean" in text or "Closest:" in text
    assert ", ".join(KEYS) not in text


def test_closest_names_the_nearest_even_when_none_is_close() -> None:
    names = ["alpha", "beta", "gamma", "delta"]
    assert closest("betta", names, "here").startswith(" Did you mean 'beta'")
    assert closest("betta", names, "here").endswith(" (all 4 are listed in here)")
    far = closest("zzzz", names, "here")
    assert far.startswith(" Closest: ") and far.count("'") == 6


def test_the_foreign_chip_refusal_is_short_and_says_where_to_read_more() -> None:
    import pytest_roofline.measuring  # noqa: F401  (registers the check of this machine)
    from pytest_roofline.hardware import foreign_to_this_machine, get_hardware

    reason = foreign_to_this_machine(get_hardware("h100"))
    if reason is None:
        pytest.skip("this machine shows torch an H100")
    text = f"a measurement against h100-sxm is refused: {reason}"
    assert len(text) <= 200 + 40, text  # the CPU's own name (here up to 40) aside
    assert 'hw="host" or "cuda:N" (docs/measure.md, In tests)' in text


def test_an_efficiency_just_below_its_minimum_never_reads_as_reaching_it() -> None:
    """0.1995 against min_efficiency=0.2 printed "expected >= 20% ... 20.0% of the roof";
    and a compute-bound result's failure named the per-thread memory roof."""
    from types import SimpleNamespace

    from pytest_roofline.measuring.diagnose import efficiency_failure, short_of

    assert short_of(0.1995, 0.2) == "19.9%" and short_of(0.29, 0.5) == "29.0%"
    assert short_of(0.2049, 0.205) == "20.4%" and short_of(0.4, 0.2) == "40.0%"
    result = SimpleNamespace(efficiency=0.1995, hw="host", dtype="fp64", measured=1e-3,
                             time=1.995e-4, regime="compute", roof_threads=1)
    text = efficiency_failure(result, 0.2)
    assert text is not None and "expected efficiency >= 20%" in text
    assert "19.9% of the roof" in text and "memory roof" not in text
    assert "expected efficiency >= 20.5%" in str(efficiency_failure(result, 0.205))
    memory = SimpleNamespace(**{**vars(result), "regime": "memory"})
    assert "(1-thread memory roof)" in str(efficiency_failure(memory, 0.2))


# -- the long messages: each under 200 characters, naming the thing and what to do --

def test_a_long_unknown_chip_name_is_echoed_briefly() -> None:
    """Before, the name was echoed whole: 435 characters for a name of 300."""
    from pytest_roofline.errors import UnknownHardwareError
    from pytest_roofline.hardware import get_hardware

    with pytest.raises(UnknownHardwareError) as info:
        get_hardware("x" * 300)
    text = str(info.value)
    assert len(text) <= 200 and text.startswith("unknown hardware 'xxx") and "..." in text
    assert "pytest-roofline hw list" in text


@pytest.mark.parametrize("name", [
    "NVIDIA Quantum Z9000 Extreme Edition with a rather long marketing name",
    "NVIDIA " + "Q" * 300])
def test_a_traces_unknown_gpu_is_named_briefly(name: str) -> None:
    """A Kineto trace's GPU that is no built-in chip: 209 characters before for an ordinary
    name, the whole name echoed for a long one; now the name at most 40 and --hw named."""
    from pytest_roofline.errors import UnknownHardwareError
    from pytest_roofline.profiling.devices import _by_name

    with pytest.raises(UnknownHardwareError) as info:
        _by_name(name, {"totalGlobalMem": 85_899_345_920})  # 80 GiB: the 80 GB size
    text = str(info.value)
    assert len(text) <= 200, (len(text), text)
    assert "--hw" in text and "the trace's GPU 'NVIDIA" in text


def test_a_directory_for_a_trace_is_refused_briefly(tmp_path: Path) -> None:
    """201 characters before, with a short path; now 124 and the path's own length."""
    import pytest_roofline as rl
    from pytest_roofline.profiling.model import ProfileError

    folder = tmp_path / "a-run"
    folder.mkdir()
    with pytest.raises(ProfileError) as info:
        rl.read_trace(str(folder))
    text = str(info.value)
    assert len(text) - len(str(folder)) <= 124, text
    assert "is a directory with no .xplane.pb" in text and ".json.gz" in text


def test_an_unwritable_cache_is_said_briefly() -> None:
    """248 characters before for a cache under an ordinary home; the folder, why and what to
    set stay."""
    from pytest_roofline.measuring.calibration import unwritable

    path = Path("/home/someone/.cache/pytest-roofline/host-1a2b3c4d5e6f.yaml")
    text = str(unwritable(path, PermissionError(13, "Permission denied")))
    assert len(text) <= 200, text   # 189, of which 36 the folder
    assert str(path.parent) in text and "Permission denied" in text
    assert "XDG_CACHE_HOME" in text and "pytest-roofline calibrate -o" in text


def test_profile_of_a_foreign_chip_and_of_no_op_name_profile_briefly() -> None:
    torch = pytest.importorskip("torch")
    import pytest_roofline as rl
    from pytest_roofline.hardware import foreign_to_this_machine, get_hardware

    if foreign_to_this_machine(get_hardware("h100")) is None:
        pytest.skip("this machine shows torch an H100")
    a = torch.ones(4, 4)
    with pytest.raises(rl.RooflineError) as info:
        rl.Profiler(hw="h100")(torch.matmul, a, a)
    text = str(info.value)
    assert len(text) <= 200 and text.startswith("a profile against h100-sxm is refused")
    with pytest.raises(rl.RooflineError) as info:
        rl.profile(lambda x: x, a)
    text = str(info.value)
    assert len(text) <= 200 and text.startswith("profile(") and "trace()" not in text
