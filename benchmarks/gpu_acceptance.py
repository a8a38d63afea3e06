"""The GPU acceptance run: calibrate, time, trace, profile and judge on one CUDA GPU.

Opt-in, for a machine with an NVIDIA GPU and torch with CUDA (a few minutes)::

    python benchmarks/gpu_acceptance.py --out gpu-run

It writes, under ``--out``: ``acceptance.md`` (the table published in docs/measure.md),
``acceptance.json`` (every figure), ``<chip>_*.json.gz`` (torch.profiler traces recorded with
``record_shapes=True``, test data for the trace reader), and the plugin run's JSON report and
chart. Each section runs on its own: a failure is recorded with its message and the run goes
on, and the files are rewritten after every section, so a run cut short keeps what it did.

``--smoke`` runs the same code on the CPU with small shapes (no calibration of a GPU, no
CUDA timing): a check of the script itself, not a measurement.

Sections:

1. **Device**: name, driver, torch and CUDA versions, SMs, L2, clocks (NVML).
2. **Calibration** of ``cuda:0``, twice: every figure beside the built-in spec's published
   one (ratio), the two runs' agreement, and the time each took.
3. **Efficiency**: a bf16 8192^3 matmul, a copy and an elementwise add of 1 GiB, a 16 MiB
   add and layer_norm with the L2 flushed and warm, a Llama-3-8B decoder layer at decode and
   prefill shapes, and causal SDPA: timed (CUDA events after an L2 flush, or CUDA graphs
   for a warm cache), against the spec's bound and the calibrated bound.
4. **Trace on cuda and on meta**: the same layer's FLOPs both ways, the SDPA op recorded, and
   a Triton kernel launched on the GPU seen by the tracer.
5. **Profile**: ``profile()`` of the layer at both shapes, each CUDA kernel joined to its op;
   the traces kept and read back with ``read_trace``.
6. **Plugin**: a ``hw="cuda:0"`` test with ``min_efficiency`` that passes and one that fails,
   with the JSON report and chart.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "data")]

import torch  # noqa: E402

import pytest_roofline as rl  # noqa: E402
from pytest_roofline.measuring import Timer  # noqa: E402

#: Llama-3-8B (config.json of meta-llama/Meta-Llama-3-8B): hidden 4096, 32 heads, 8 KV heads,
#: intermediate 14336.
LLAMA3_8B = {"hidden": 4096, "heads": 32, "kv_heads": 8, "intermediate": 14336}
SMOKE_LAYER = {"hidden": 256, "heads": 4, "kv_heads": 2, "intermediate": 512}


class Run:
    """The results so far, written out after every section."""

    def __init__(self, out: Path, smoke: bool) -> None:
        self.out, self.smoke = out, smoke
        self.data: dict[str, Any] = {"sections": {}, "errors": {}}
        self.device = "cpu" if smoke else "cuda"
        self.hw = "host" if smoke else "cuda:0"
        self.spec_chip: str | None = None
        self.prefix = "cpu"
        self.dtype = torch.float32 if smoke else torch.bfloat16  # the host has no bf16 peak

    @contextlib.contextmanager
    def section(self, name: str) -> Iterator[dict[str, Any]]:
        started = time.perf_counter()
        record: dict[str, Any] = {}
        self.data["sections"][name] = record
        print(f"== {name}", flush=True)
        try:
            yield record
        except Exception as exc:
            self.data["errors"][name] = f"{type(exc).__name__}: {exc}"
            record["traceback"] = traceback.format_exc()
            print(record["traceback"], flush=True)
        finally:
            record["seconds"] = round(time.perf_counter() - started, 2)
            self.write()

    def write(self) -> None:
        (self.out / "acceptance.json").write_text(json.dumps(self.data, indent=1, default=str))
        (self.out / "acceptance.md").write_text(markdown(self.data))


# -- 1. the device ----------------------------------------------------------------------------

def device_facts(run: Run, rec: dict[str, Any]) -> None:
    from pytest_roofline.measuring.cuda_timing import read_clocks

    rec.update(date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               torch=torch.__version__, python=platform.python_version(),
               cuda=torch.version.cuda)
    if run.smoke:
        rec["name"] = platform.processor() or "cpu"
        return
    props = torch.cuda.get_device_properties(0)
    rec.update(name=props.name, sms=props.multi_processor_count,
               l2_bytes=getattr(props, "L2_cache_size", None),
               memory_bytes=props.total_memory, capability=f"{props.major}.{props.minor}",
               clocks=read_clocks(0))
    smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,power.limit,clocks.max.sm,"
                          "clocks.max.mem", "--format=csv,noheader"], capture_output=True,
                         text=True, check=False)
    rec["nvidia_smi"] = smi.stdout.strip()
    rec["driver"] = smi.stdout.split(",")[0].strip() if smi.stdout else None
    name = props.name.lower()
    run.spec_chip = "h200" if "h200" in name else "h100-sxm" if "h100" in name else None
    run.prefix = (run.spec_chip or "gpu").split("-")[0]
    rec["spec_chip"] = run.spec_chip


# -- 2. calibration ---------------------------------------------------------------------------

#: calibration figure -> how the built-in spec states it
FIGURES = {"matrix.fp64": ("peak", "fp64"), "matrix.fp32": ("peak", "fp32"),
           "matrix.tf32": ("peak", "tf32"), "matrix.fp16": ("peak", "fp16"),
           "matrix.bf16": ("peak", "bf16"), "matrix.fp8": ("peak", "fp8"),
           "memory.copy": ("memory", None), "memory.memset": ("memory", None),
           "cache.l2": ("l2", None)}


def published(chip: Any, how: str, dtype: str | None) -> float | None:
    try:
        if how == "peak":
            return float(chip.peak(dtype))
        if how == "memory":
            return float(chip.memory_bandwidth)
        level = next((lv for lv in chip.onchip if lv.name == "l2"), None)
        return None if level is None or level.bandwidth is None else float(level.bandwidth)
    except Exception:
        return None


def calibration(run: Run, rec: dict[str, Any]) -> None:
    from pytest_roofline.measuring.calibration import calibrate, store

    device = "cpu" if run.smoke else "cuda:0"
    runs = []
    for i in range(2):
        started = time.perf_counter()
        spec, warnings = calibrate(device, quick=run.smoke)
        seconds = time.perf_counter() - started
        figures = {k: float(v["value"]) for k, v in spec["provenance"]["figures"].items()}
        runs.append({"seconds": round(seconds, 2), "figures": figures, "warnings": warnings})
        if i == 0:
            path, kept = store(device, spec, replace=True)
            rec["store_note"] = kept
            rec["stored"] = str(path)
    rec["runs"] = runs
    chip = rl.get_hardware(run.spec_chip) if run.spec_chip else None
    rows = []
    for key in sorted(set(runs[0]["figures"]) & set(runs[1]["figures"])):
        a, b = runs[0]["figures"][key], runs[1]["figures"][key]
        how = FIGURES.get(key)
        spec_value = published(chip, *how) if chip is not None and how else None
        best = max(a, b)
        rows.append({"figure": key, "run1": a, "run2": b,
                     "agreement": abs(a - b) / best if best else None,
                     "published": spec_value,
                     "ratio": best / spec_value if spec_value else None})
    rec["rows"] = rows


# -- 3. efficiency ----------------------------------------------------------------------------

def layer_and_inputs(run: Run, *, batch: int, seq: int, context: int, device: str) -> Any:
    import llama_block as lb

    shape = SMOKE_LAYER if run.smoke else LLAMA3_8B
    torch.manual_seed(0)
    layer = lb.DecoderLayer(**shape, device=device, dtype=run.dtype)
    x, cos, sin, past = lb.inputs(batch, seq, context, hidden=shape["hidden"],
                                  heads=shape["heads"], kv_heads=shape["kv_heads"],
                                  device=device, dtype=run.dtype)
    if device != "meta":
        for t in (x, cos, sin, *(past or ())):
            t.normal_()
    return layer, (x, cos, sin, past)


def shapes(run: Run) -> dict[str, dict[str, int]]:
    if run.smoke:
        return {"decode": {"batch": 2, "seq": 1, "context": 64},
                "prefill": {"batch": 1, "seq": 64, "context": 64}}
    return {"decode": {"batch": 16, "seq": 1, "context": 4096},
            "prefill": {"batch": 1, "seq": 4096, "context": 4096}}


def cases(run: Run) -> Iterator[tuple[str, Callable[[str], tuple[Any, tuple[Any, ...]]], str]]:
    """(name, build(device) -> (fn, args), cache) of every timed case."""
    n = 512 if run.smoke else 8192
    gib = (1 << 20) if run.smoke else (1 << 30)
    small = (1 << 16) if run.smoke else (16 << 20)
    bf16 = run.dtype

    def matmul(device: str) -> Any:
        a = torch.empty(n, n, device=device, dtype=bf16)
        b = torch.empty(n, n, device=device, dtype=bf16)
        if device != "meta":
            a.normal_(), b.normal_()
        return torch.matmul, (a, b)

    def copy(nbytes: int) -> Callable[[str], Any]:
        def build(device: str) -> Any:
            src = torch.empty(nbytes // 2, device=device, dtype=bf16)
            dst = torch.empty_like(src)
            return (lambda s, d: d.copy_(s)), (src, dst)
        return build

    def add(nbytes: int) -> Callable[[str], Any]:
        def build(device: str) -> Any:
            x = torch.empty(nbytes // 2, device=device, dtype=bf16)
            y = torch.empty_like(x)
            return (lambda a, out: torch.add(a, 1.0, out=out)), (x, y)
        return build

    def layernorm(device: str) -> Any:
        x = torch.empty(small // 2 // 2048, 2048, device=device, dtype=bf16)
        if device != "meta":
            x.normal_()
        return (lambda x: torch.nn.functional.layer_norm(x, (2048,))), (x,)

    def layer(phase: str) -> Callable[[str], Any]:
        def build(device: str) -> Any:
            module, args = layer_and_inputs(run, device=device, **shapes(run)[phase])
            return module, args
        return build

    def sdpa(device: str) -> Any:
        b, h, s, d = (1, 2, 128, 64) if run.smoke else (4, 32, 4096, 128)
        q, k, v = (torch.empty(b, h, s, d, device=device, dtype=bf16) for _ in range(3))
        if device != "meta":
            for t in (q, k, v):
                t.normal_()
        return (lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True)), (q, k, v)

    yield f"matmul bf16 {n}^3", matmul, "cold"
    yield f"copy {gib >> 20} MiB bf16", copy(gib), "cold"
    yield f"add 1.0 {gib >> 20} MiB bf16 (out=)", add(gib), "cold"
    yield f"add 1.0 {small >> 10} KiB bf16, L2 flushed", add(small), "cold"
    yield f"add 1.0 {small >> 10} KiB bf16, L2 warm", add(small), "warm"
    yield f"layer_norm {small >> 10} KiB bf16, L2 flushed", layernorm, "cold"
    yield f"layer_norm {small >> 10} KiB bf16, L2 warm", layernorm, "warm"
    yield "Llama-3-8B layer decode", layer("decode"), "cold"
    yield "Llama-3-8B layer prefill", layer("prefill"), "cold"
    yield "SDPA causal bf16", sdpa, "cold"


def efficiency(run: Run, rec: dict[str, Any]) -> None:
    rows = []
    rec["rows"] = rows
    for name, build, cache in cases(run):
        row: dict[str, Any] = {"case": name, "cache": cache}
        rows.append(row)
        try:
            fn, meta_args = build("meta")
            workload = rl.trace(fn, *meta_args)
            row.update(flops=float(workload.flops), bytes=float(workload.bytes),
                       unknown=dict(workload.unknown))
            fn, args = build(run.device)
            with torch.no_grad():
                m = Timer(warmup=2, repeats=10, min_time=0.1, cache=cache)(fn, *args)
            row.update(measured=m.time, spread=m.spread, best=m.best, method=m.method,
                       notes=list(m.notes), clocks=m.clocks)
            for label, chip in (("spec", run.spec_chip), ("calibrated", run.hw)):
                if chip is None:
                    continue
                r = rl.analyze(workload, chip, measured=m)
                row[label] = {"chip": r.hw, "bound": r.time, "regime": r.regime,
                              "peak": r.peak_label, "efficiency": r.efficiency,
                              "notes": list(r.notes)}
            del fn, args
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
            print(traceback.format_exc(), flush=True)
        finally:
            if not run.smoke:
                torch.cuda.empty_cache()
        run.write()


# -- 4. tracing on cuda and meta --------------------------------------------------------------

def tracing(run: Run, rec: dict[str, Any]) -> None:
    for phase in ("prefill", "decode"):
        got = {}
        for device in ("meta", run.device):
            layer, args = layer_and_inputs(run, device=device, **shapes(run)[phase])
            with torch.no_grad():
                w = rl.trace(layer, *args)
            attention = sorted({k.name for k in w.kernels
                                if any(word in k.name.rsplit(".", 1)[-1] for word in
                                       ("attention", "flash", "cudnn", "sdpa"))})
            got[device] = {"flops": float(w.flops), "bytes": float(w.bytes),
                           "unknown": dict(w.unknown), "attention_kernels": attention,
                           "kernels": len(w.kernels)}
            del layer, args
        got["same_flops"] = got["meta"]["flops"] == got[run.device]["flops"]
        rec[phase] = got
    if run.smoke:
        return
    import triton
    import triton_kernels as tk

    knobs = getattr(triton, "knobs", None)
    hook = getattr(getattr(knobs, "runtime", None), "launch_enter_hook", "absent")
    rec["triton"] = {"version": triton.__version__, "launch_enter_hook": repr(type(hook))}
    a = torch.randn(512, 256, device="cuda", dtype=torch.float16)
    b = torch.randn(256, 384, device="cuda", dtype=torch.float16)
    w = rl.trace(tk.matmul, a, b)
    rec["triton_matmul"] = {"kernels": [(k.name, float(k.total_flops), float(k.total_bytes))
                                        for k in w.kernels],
                            "unknown": dict(w.unknown), "expected_flops": 2 * 512 * 256 * 384}
    rec["triton_stated"] = stated_launch(tk)
    x = torch.randn(1 << 20, device="cuda")
    w = rl.trace(tk.add, x, x.clone())
    rec["triton_add"] = {"kernels": [(k.name, float(k.total_flops), float(k.total_bytes))
                                     for k in w.kernels], "unknown": dict(w.unknown)}


def stated_launch(tk: Any) -> dict[str, Any]:
    """The tutorial matmul whose ``launch_metadata`` states its FLOPs, launched on the GPU:
    the tracer must take them from Triton's launch hook."""
    import triton

    m, k, n = 512, 256, 384
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)

    def launch(a: Any, b: Any, c: Any) -> Any:
        grid = (triton.cdiv(m, 64) * triton.cdiv(n, 64),)
        tk.stated_matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1),
                                      b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                      BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=64,
                                      GROUP_SIZE_M=8)
        return c

    launch(a, b, c)  # compiled before the trace
    w = rl.trace(launch, a, b, c)
    return {"kernels": [(k_.name, float(k_.total_flops), float(k_.total_bytes))
                        for k_ in w.kernels], "unknown": dict(w.unknown),
            "expected_flops": 2.0 * m * n * k, "expected_bytes": 2.0 * (m * k + k * n + m * n),
            "max_abs_error": float((c.float() - a.float() @ b.float()).abs().max())}


# -- 5. profile -------------------------------------------------------------------------------

def profiling(run: Run, rec: dict[str, Any]) -> None:
    from pytest_roofline.profiling.run import Profiler, read_trace

    for phase in ("decode", "prefill"):
        layer, args = layer_and_inputs(run, device=run.device, **shapes(run)[phase])
        path = run.out / f"{run.prefix}_llama3_8b_layer_{phase}.json.gz"
        try:
            with torch.no_grad():
                prof = Profiler(hw=run.hw, warmup=2, repeats=3, trace_to=path)(layer, *args)
        except Exception as exc:
            rec[phase] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        back = read_trace(path, hw=None if not run.smoke else run.hw)
        rec[phase] = {"profile": prof.to_dict(), "trace": path.name,
                      "trace_bytes": path.stat().st_size,
                      "read_back": back.to_dict(top=12)}
        del layer, args
    n = 256 if run.smoke else 4096
    a = torch.randn(n, n, device=run.device, dtype=run.dtype)
    q = torch.randn(1 if run.smoke else 8, 4 if run.smoke else 32, n // 4 if not run.smoke
                    else 64, 64 if run.smoke else 128, device=run.device, dtype=run.dtype)

    def mixed(a: Any, q: Any) -> Any:
        y = torch.nn.functional.gelu(a @ a)
        z = torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
        return y.sum() + z.float().mean()

    path = run.out / f"{run.prefix}_matmul_gelu_sdpa.json.gz"
    prof = Profiler(hw=run.hw, warmup=2, repeats=3, trace_to=path)(mixed, a, q)
    rec["mixed"] = {"profile": prof.to_dict(), "trace": path.name,
                    "trace_bytes": path.stat().st_size}


# -- 6. the plugin ----------------------------------------------------------------------------

PLUGIN_TEST = '''
import pytest
import torch

import pytest_roofline as rl

DEVICE = {device!r}
N = {n}


@pytest.mark.roofline(hw={hw!r}, min_efficiency=0.5)
def test_big_matmul_reaches_half_the_roof(roofline):
    a = torch.randn(N, N, device=DEVICE, dtype=torch.{dtype})
    roofline.add(rl.ops.matmul(N, N, N, dtype={short!r}))
    roofline.measure(torch.matmul, a, a)


@pytest.mark.roofline(hw={hw!r}, min_efficiency=0.9)
def test_tiny_matmul_is_launch_bound_and_fails(roofline):
    a = torch.randn(64, 64, device=DEVICE, dtype=torch.{dtype})
    roofline.add(rl.ops.matmul(64, 64, 64, dtype={short!r}))
    roofline.measure(torch.matmul, a, a)
'''


def plugin(run: Run, rec: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        test = Path(folder) / "test_gpu_roofline.py"
        test.write_text(PLUGIN_TEST.format(
            device=run.device, hw=run.hw, n=512 if run.smoke else 8192,
            dtype="float32" if run.smoke else "bfloat16", short="fp32" if run.smoke else "bf16"))
        report, chart = run.out / "plugin_report.json", run.out / "plugin_chart.png"
        env = {**os.environ, "COLUMNS": "80",
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        from importlib.metadata import entry_points

        installed = any(e.name == "roofline" for e in entry_points(group="pytest11"))
        load = [] if installed else ["-p", "pytest_roofline.plugin.hooks"]  # a plain checkout
        cmd = [sys.executable, "-m", "pytest", str(test), *load, "-p", "no:cacheprovider",
               "-p", "no:benchmark", f"--roofline-json={report}",
               f"--roofline-plot={chart}", "--roofline-plot=term", "-q", "-rA"]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=folder,
                              timeout=300, check=False)
    rec["returncode"] = done.returncode
    rec["stdout"] = done.stdout[-12000:]
    rec["stderr"] = done.stderr[-4000:]
    if report.exists():
        data = json.loads(report.read_text())
        rec["results"] = [{k: r.get(k) for k in ("nodeid", "hw", "outcome", "efficiency", "mfu",
                                                   "measured_s", "time_s", "regime", "message")}
                          for r in data.get("results", [])]
    print(done.stdout[-3000:], done.stderr[-2000:], flush=True)


# -- the table --------------------------------------------------------------------------------

def _si(value: Any, unit: str) -> str:
    if not isinstance(value, (int, float)):
        return "-"
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _time(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return "-"
    return f"{value * 1e3:.3g} ms" if value >= 1e-3 else f"{value * 1e6:.3g} us"


def _pct(value: Any) -> str:
    return f"{value:.0%}" if isinstance(value, (int, float)) else "-"


def _roof(rec: dict[str, Any], measured: Any) -> str:
    """The efficiency; for a run above its bound its figure, marked (``101%~`` at the bound
    within noise, ``130%!`` faster than it), never a clamped 100%."""
    value = rec.get("efficiency")
    bound = rec.get("bound")
    if value is not None or not isinstance(bound, (int, float)) \
            or not isinstance(measured, (int, float)) or not measured > 0:
        return _pct(value)
    from pytest_roofline.efficiency import percent

    faster = any("faster than the bound" in str(n) for n in rec.get("notes") or ())
    return percent(bound / measured) + ("!" if faster else "~")


def markdown(data: dict[str, Any]) -> str:
    sections = data["sections"]
    lines = ["# GPU acceptance run", ""]
    dev = sections.get("device", {})
    if dev:
        lines += [f"- device: {dev.get('name')} (compute capability {dev.get('capability')}, "
                  f"{dev.get('sms')} SMs, L2 {_si(dev.get('l2_bytes'), 'B')}), driver "
                  f"{dev.get('driver')}", f"- torch {dev.get('torch')}, CUDA {dev.get('cuda')}, "
                  f"Python {dev.get('python')}, {dev.get('date')}",
                  f"- published spec compared: {dev.get('spec_chip')}", ""]
    cal = sections.get("calibration", {})
    if cal.get("rows"):
        secs = ", ".join(f"{r['seconds']} s" for r in cal.get("runs", []))
        lines += [f"## Calibration (two runs: {secs})", "",
                  "| figure | run 1 | run 2 | agree | published | ratio |",
                  "|---|---|---|---|---|---|"]
        for r in cal["rows"]:
            unit = "FLOP/s" if r["figure"].startswith("matrix") else "B/s"
            lines.append(f"| {r['figure']} | {_si(r['run1'], unit)} | {_si(r['run2'], unit)} | "
                         f"{_pct(r['agreement'])} | {_si(r['published'], unit)} | "
                         f"{_pct(r['ratio'])} |")
        lines.append("")
    eff = sections.get("efficiency", {})
    if eff.get("rows"):
        lines += ["## Efficiency", "",
                  "| case | measured | spread | method | spec bound | of spec | calibrated "
                  "bound | of calibrated | regime |", "|---|---|---|---|---|---|---|---|---|"]
        for r in eff["rows"]:
            if "error" in r:
                lines.append(f"| {r['case']} | error: {r['error'][:80]} | | | | | | | |")
                continue
            s, c = r.get("spec") or {}, r.get("calibrated") or {}
            lines.append(f"| {r['case']} | {_time(r.get('measured'))} | "
                         f"{_pct(r.get('spread'))} | {r.get('method')} | "
                         f"{_time(s.get('bound'))} | {_roof(s, r.get('measured'))} | "
                         f"{_time(c.get('bound'))} | {_roof(c, r.get('measured'))} | "
                         f"{s.get('regime') or c.get('regime')} |")
        notes = sorted({n for r in eff["rows"] for n in r.get("notes", [])})
        lines += [""] + [f"- note: {n}" for n in notes] + [""]
    tr = sections.get("tracing", {})
    for phase in ("prefill", "decode"):
        if phase in tr:
            p = tr[phase]
            other = next(k for k in p if k not in ("meta", "same_flops"))
            lines.append(f"- trace, {phase}: meta {_si(p['meta']['flops'], 'FLOP')}, {other} "
                         f"{_si(p[other]['flops'], 'FLOP')} (same: {p['same_flops']}); "
                         f"attention ops {p[other]['attention_kernels']}; unknown "
                         f"{p[other]['unknown'] or 'none'}")
    if "triton" in tr:
        lines.append(f"- triton: {tr['triton']}")
    for key in ("triton_matmul", "triton_stated", "triton_add"):
        if key in tr:
            lines.append(f"- {key}: {tr[key]['kernels']}, unknown {tr[key]['unknown'] or 'none'}")
    prof = sections.get("profile", {})
    for phase in ("decode", "prefill", "mixed"):
        if phase in prof and "error" in prof[phase]:
            lines += ["", f"### Profile: {phase}: {prof[phase]['error']}"]
        elif phase in prof:
            p = prof[phase]["profile"]
            lines += ["", f"### Profile: {phase} ({prof[phase]['trace']})", "",
                      "| op | kernels | calls | measured | bound | efficiency |",
                      "|---|---|---|---|---|---|"]
            for row in (p.get("rows") or [])[:12]:
                lines.append(f"| {row.get('op')} | {', '.join(row.get('kernels') or [])[:60]} "
                             f"| {row.get('count')} | {_time(row.get('measured_s'))} | "
                             f"{_time(row.get('bound_s'))} | {_pct(row.get('efficiency'))} |")
            back = prof[phase].get("read_back")
            if isinstance(back, dict) and back.get("rows"):
                lines += ["", f"Read back from the trace file, against {back.get('hw')}: "
                          f"{_pct(back.get('priced_share'))} of the kernel time priced", "",
                          "| op | measured | bound | efficiency |", "|---|---|---|---|"]
                for row in back["rows"][:12]:
                    lines.append(f"| {row.get('op')} {row.get('shapes', '')[:50]} | "
                                 f"{_time(row.get('measured_s'))} | "
                                 f"{_time(row.get('bound_s'))} | "
                                 f"{_pct(row.get('efficiency'))} |")
    plug = sections.get("plugin", {})
    if plug:
        lines += ["", "## Plugin", "", f"pytest exit code {plug.get('returncode')}", ""]
        for r in plug.get("results", []):
            lines.append(f"- {r}")
    if data["errors"]:
        lines += ["", "## Errors", ""] + [f"- {k}: {v}" for k, v in data["errors"].items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder for the table, JSON and traces")
    parser.add_argument("--smoke", action="store_true",
                        help="run on the CPU with small shapes (checks the script only)")
    parser.add_argument("--only", action="append", default=[],
                        help="run only these sections (device always runs)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.smoke and not torch.cuda.is_available():
        print("no CUDA device: this run needs a GPU (or --smoke)", file=sys.stderr)
        return 2
    run = Run(out, args.smoke)
    os.environ.setdefault("XDG_CACHE_HOME", str(out / ".cache") if args.smoke
                          else tempfile.mkdtemp(prefix="roofline-cache-"))
    steps: list[tuple[str, Callable[[Run, dict[str, Any]], None]]] = [
        ("device", device_facts), ("calibration", calibration), ("efficiency", efficiency),
        ("tracing", tracing), ("profile", profiling), ("plugin", plugin)]
    for name, step in steps:
        if args.only and name != "device" and name not in args.only:
            continue
        with run.section(name) as rec:
            step(run, rec)
    print(textwrap.indent(markdown(run.data), "  "), flush=True)
    return 1 if run.data["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
