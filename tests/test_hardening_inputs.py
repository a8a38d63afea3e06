"""Hostile and odd inputs to the trace reader and the calibration cache: names printed
escaped, limits that never allocate, arguments refused in one line, faults said before any
measuring."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_profile_hlo import _varint

import pytest_roofline as rl
from pytest_roofline.cli import main
from pytest_roofline.profiling import ProfileError

DATA = Path(__file__).parent / "data" / "traces"
HOSTILE = "aten::evil\x1b[31mRED\x1b[0m\u202e\x00"


def _hostile_trace(tmp_path: Path) -> Path:
    """A CPU trace of one op no formula prices, named with an escape sequence, a
    right-to-left override and a NUL."""
    events = [{"ph": "X", "cat": "cpu_op", "name": HOSTILE, "pid": 1, "tid": 1, "ts": 0,
               "dur": 10, "args": {"Input Dims": [[4]], "Input type": ["float"]}},
              {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1,
               "ts": 20, "dur": 10,
               "args": {"Input Dims": [[4], [4], []], "Input type": ["float", "float",
                                                                   "Scalar"]}}]
    path = tmp_path / "hostile.json.gz"
    with gzip.open(path, "wt") as handle:
        json.dump({"traceEvents": events}, handle)
    return path


def test_names_from_a_trace_reach_the_terminal_escaped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    path = _hostile_trace(tmp_path)
    assert main(["profile", str(path), "--hw", "h100"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\x00" not in out
    assert "\\u202e\\x00" in out  # escaped, where the cut label shows it
    # the JSON keeps the name as it is
    assert main(["profile", str(path), "--hw", "h100", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert [u["name"] for u in record["unpriced"]] == [HOSTILE]


def test_a_huge_max_bytes_is_no_limit_never_an_allocation(
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    trace = str(DATA / "cpu_mlp.json.gz")
    assert main(["profile", trace, "--hw", "h100", "--max-bytes", str(10**30)]) == 0
    assert rl.read_trace(trace, hw="h100", max_bytes=10**30).rows
    capsys.readouterr()


@pytest.mark.parametrize("path", ["", "  ", 5, None])
def test_read_trace_refuses_what_names_no_trace(path: object) -> None:
    with pytest.raises(ProfileError, match=r"read_trace: path=.* must name a trace"):
        rl.read_trace(path)  # type: ignore[arg-type]


def test_a_profiler_refuses_a_trace_path_that_is_not_one() -> None:
    with pytest.raises(ProfileError, match=r"trace_to=5 must be a file path"):
        rl.Profiler(trace_to=5)  # type: ignore[arg-type]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE is POSIX")
def test_a_file_size_limit_is_said_before_calibrating(tmp_path: Path) -> None:
    # a 1,000-byte file-size limit: the cache's probe (64 KiB, more than a spec) fails at
    # once, one line naming the folder, never after seconds of measuring
    code = ("import resource\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))\n"
            "from pytest_roofline.cli import main\n"
            "raise SystemExit(main(['calibrate', '--quick']))\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"the calibration cache {tmp_path / 'pytest-roofline'} cannot be written" in \
        done.stderr
    assert "calibrating" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_an_empty_home_is_not_the_root_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_roofline.measuring import calibration

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", "")
    try:
        folder = calibration.cache_dir()
    except rl.RooflineError as exc:  # a user with no home in the database: said so
        assert "XDG_CACHE_HOME" in str(exc)
        return
    assert folder != Path("/.cache/pytest-roofline") and folder.is_absolute()


def test_a_gpu_that_is_not_there_leaves_no_lock_in_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: cuda:99 is the case tested")
    from pytest_roofline.measuring import calibration

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(rl.RooflineError, match="no CUDA device"):
        calibration.load("cuda:99")
    assert not list(tmp_path.rglob("*.lock")) and not list(tmp_path.rglob("*.yaml"))


# -- jax.profiler traces -----------------------------------------------------------------------


def _field(number: int, payload: bytes | int) -> bytes:
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _xspace(duration_ps: int) -> bytes:
    """An XSpace of one plane, one line, one event of *duration_ps* (protobuf by hand: the
    fields the reader reads, as XPlane's schema numbers them)."""
    event = _field(1, 1) + _field(2, 0) + _field(3, duration_ps)
    line = _field(1, 1) + _field(2, b"Stream #1") + _field(4, event)
    plane = _field(1, 1) + _field(2, b"/device:GPU:0") + _field(3, line)
    return _field(1, plane)


def test_a_negative_event_duration_is_one_line_naming_the_file(tmp_path: Path) -> None:
    from pytest_roofline.profiling.jax import xplane

    assert xplane.parse_space(_xspace(5_000_000))[0].events[0].seconds == pytest.approx(5e-6)
    path = tmp_path / "bad.xplane.pb"
    path.write_bytes(_xspace(-1))
    with pytest.raises(xplane.XPlaneError, match=r"bad.xplane.pb.*duration_ps -1 is negative"):
        xplane.read_space(path)


def test_an_xspace_larger_than_max_bytes_is_refused_unread(tmp_path: Path) -> None:
    from pytest_roofline.profiling.jax import xplane

    sparse = tmp_path / "huge.xplane.pb"
    with open(sparse, "wb") as handle:  # 2 GiB, sparse: never read
        handle.truncate(2 << 30)
    with pytest.raises(xplane.XPlaneError, match=r"larger than 1073741824 bytes"):
        xplane.read_space(sparse)


def test_a_trace_directory_passes_over_fifos_and_dangling_links_and_names_other_hosts(
        tmp_path: Path) -> None:
    from pytest_roofline.profiling.jax import jax_trace

    run = tmp_path / "plugins" / "profile" / "2026_12_05"
    run.mkdir(parents=True)
    (run / "host-a.xplane.pb").write_bytes(_xspace(1000))
    (run / "host-b.xplane.pb").write_bytes(_xspace(1000))
    os.utime(run / "host-a.xplane.pb", (1, 1))  # host-b is the newest
    os.symlink(tmp_path / "gone", run / "host-c.xplane.pb")  # dangling
    os.mkfifo(run / "host-d.xplane.pb")  # would block a read
    found, notes = jax_trace.located(tmp_path)
    assert found.name == "host-b.xplane.pb"
    assert notes == ("read host-b.xplane.pb, the newest; 1 other .xplane.pb beside it "
                     "(other hosts of a run?) not read: host-a.xplane.pb (give each file to "
                     "read it)",)


def test_capture_is_refused_for_a_jax_trace_and_max_bytes_reaches_it() -> None:
    trace = Path(__file__).parent / "data" / "jax_traces" / "cpu_mlp.xplane.pb"
    with pytest.raises(ProfileError, match="graph captures are read for a PyTorch trace"):
        rl.read_trace(trace, hw="h100", capture=trace)
    with pytest.raises(rl.RooflineError, match="larger than 100 bytes"):
        rl.read_trace(trace, hw="h100", max_bytes=100)


def test_messages_stay_short_and_name_the_argument(
        capsys: pytest.CaptureFixture[str]) -> None:
    trace = str(DATA / "cpu_mlp.json.gz")
    with pytest.raises(SystemExit) as exited:  # argparse's usage error: exit 2, one line
        main(["profile", trace, "--hw", "h100", "--top", "x" * 5000])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert len(err) < 200 and "--top" in err
    assert main(["profile", trace, "--hw", "h100", "--top", "9" * 5000]) == 0  # every row
    capsys.readouterr()
    w = rl.models.load("llama-3-8b").train_step(batch=1, seq=128, tp=8, link_count=100)
    with pytest.raises(rl.RooflineError, match=r"^link_count=100 is not allowed on h100-sxm: "
                                               r"it has 18 nvlink links; expected 1 to 18$"):
        rl.analyze(w, "h100")
    pytest.importorskip("torch")
    with pytest.raises(rl.RooflineError) as raised:
        rl.trace(lambda: 1)
    assert len(str(raised.value)) < 200


def test_a_profiler_inside_trace_adds_its_call_once() -> None:
    # a 64 x 64 x 64 matmul is 2 * 64**3 = 524,288 FLOPs; the Profiler's warm-up and five
    # timed calls were traced too (6x) before they were kept out of the recording
    torch = pytest.importorskip("torch")
    hw = rl.Hardware(name="roomy", memory_bandwidth=1e12, memory_capacity=16e9,
                     matrix={"fp32": 1e13}, default_dtype="fp32", vector_fallback="matrix")
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    traced = rl.trace(lambda x, y: rl.Profiler(hw=hw)(torch.mm, x, y), a, b)
    assert traced.flops == 2 * 64**3 and [k.name for k in traced.kernels] == ["mm"]
