"""The same measurement for a CUDA GPU, through PyTorch -- optional: nothing in the course
needs PyTorch or a GPU, and without them this module only says why it cannot run.

* **Peaks**: ``torch.matmul`` of random n×n matrices in fp64, fp32 (TF32 off), tf32, fp16 and
  bf16, n grown until one call lasts ~20 ms (n ≤ 16384).
* **Bandwidth**: the sweep of ``acc += x`` (fp32: 12 bytes per element and pass) from 1 MiB
  to a few GiB. Small working sets finish in microseconds, so each timed repeat replays a CUDA
  graph of many kernels (no Python or launch gaps between them). The L2 plateau is taken
  between L2/4 and 3/4 of the L2 size PyTorch reports (below L2/4 the kernels are too small
  to fill the GPU); DRAM (HBM) from 4x the L2 size. The per-SM L1 and shared memory cannot be
  targeted by a streaming PyTorch kernel and are reported as not resolved.
* **Kernels**: dot, axpy, add, matmul fp16 at several sizes, each timed by CUDA events
  around a loop of launches (so the small ones show launch overhead, as they do in practice).

Every timing: warm-up, then repeats between ``torch.cuda.Event``s, median and spread;
``torch.cuda.synchronize()`` before any host clock is read. Run it with
``python -m course_lib.measure --gpu``.

>>> ok, why = gpu_available()
>>> isinstance(why, str)
True
"""
from __future__ import annotations

import contextlib
import datetime
import time

from .plateaus import find_levels
from .result import KernelRun, MeasuredHardware, SweepPoint
from ..formatting import fmt_binary_bytes
from .system import Cache, CacheInfo, GiB, MiB
from .timing import Timing

PEAK_PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16")


def gpu_available(device: int = 0) -> tuple[bool, str]:
    """(True, device name) when PyTorch sees CUDA device `device`, else (False, the reason)."""
    try:
        import torch
    except ImportError:
        return False, "PyTorch is not installed (pip install torch; only this optional GPU path needs it)"
    if not torch.cuda.is_available():
        return False, f"PyTorch {torch.__version__} sees no CUDA device (torch.cuda.is_available() is False)"
    if device >= torch.cuda.device_count():
        return False, f"there is no CUDA device {device} (PyTorch sees {torch.cuda.device_count()})"
    return True, torch.cuda.get_device_name(device)


@contextlib.contextmanager
def _matmul_mode(torch, precision):
    """TF32 on only for 'tf32'; the flags are put back afterwards."""
    old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def _event_timing(torch, fn, calls: int, repeats: int, warmup: int = 1) -> Timing:
    """Seconds per call: `calls` back-to-back calls between two CUDA events, `repeats` times."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) / 1e3 / calls)
    return Timing(tuple(out))


def _calls_for(torch, fn, target_s: float, cap: int = 100_000) -> int:
    t = _event_timing(torch, fn, 1, 1, warmup=1).median
    return int(min(cap, max(1, round(target_s / max(t, 1e-7)))))


def _timed(torch, fn, target_s, repeats):
    calls = _calls_for(torch, fn, target_s)
    return _event_timing(torch, fn, calls, repeats, warmup=1), calls


def measure_gpu(device: int = 0, quick: bool = False, progress=None) -> MeasuredHardware:
    """The empirical roofline of CUDA device `device` (see the module docstring)."""
    ok, why = gpu_available(device)
    if not ok:
        raise RuntimeError(f"cannot measure a GPU: {why}.")
    import torch

    t_start = time.perf_counter()
    say = progress or (lambda line: None)
    dev = torch.device("cuda", device)
    torch.cuda.set_device(dev)
    props = torch.cuda.get_device_properties(dev)
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    free, total = torch.cuda.mem_get_info(dev)
    repeats = 3 if quick else 7
    target = 0.005 if quick else 0.02
    say(f"{props.name}: {props.multi_processor_count} SMs, L2 {fmt_binary_bytes(l2) if l2 else 'unknown'}, "
        f"{total / 1e9:.1f} GB ({free / 1e9:.1f} GB free); PyTorch {torch.__version__}, CUDA {torch.version.cuda}")

    runs, peaks, peak_sizes = _measure_peaks(torch, dev, free, target, repeats, say)
    sweep, graphs_ok = _sweep_bandwidth(torch, dev, free, l2, target, repeats, quick, say)
    caches = CacheInfo((Cache("L2", l2, 1),), "torch.cuda.get_device_properties") if l2 else CacheInfo()
    # without an L2 size from PyTorch, only the largest working sets are called HBM
    zone_map = ({"L2": (l2 / 4, 0.75 * l2), "DRAM": (4 * l2, float("inf"))} if l2
                else {"DRAM": (sweep[-1].size / 4, float("inf"))})
    import numpy as np
    levels, notes = find_levels(np.array([p.size for p in sweep], float),
                                np.array([p.bandwidth for p in sweep]), caches, 1, 2, zone_map=zone_map,
                                missing_note="not measured: a streaming PyTorch kernel cannot target it")
    levels = {lv.name: lv for lv in levels}
    runs.update(_time_kernels(torch, dev, free, l2, target, repeats, say))

    dram = levels["DRAM"]
    bandwidth, bw_src = _memory_ceiling(dram, sweep, graphs_ok, repeats)
    today = datetime.date.today().isoformat()
    sources = {
        "peak_flops": (f"measured {today}: torch.matmul of random n x n matrices, 2n^3 FLOPs per call, "
                       f"the fastest of {repeats} repeats (CUDA events) after a warm-up; n: "
                       + ", ".join(f"{p} {peak_sizes[p]}" for p in PEAK_PRECISIONS)
                       + "; fp32 with TF32 off, tf32 with it on"),
        "memory_bandwidth": bw_src,
        "memory_capacity": "torch.cuda.mem_get_info (total)",
    }
    how = [f"GPU: {props.name}, {props.multi_processor_count} SMs, compute capability {props.major}.{props.minor}",
           f"PyTorch {torch.__version__}, CUDA {torch.version.cuda}; timings by CUDA events",
           caches.describe(),
           f"{'quick' if quick else 'full'} mode: {repeats} timed repeats after a warm-up"]
    setup = {"threads": 1, "mode": "quick" if quick else "full", "how": how, "peak_sizes": peak_sizes,
             "memory_level": "HBM" if dram.resolved else
             f"largest working set ({fmt_binary_bytes(sweep[-1].size)}; HBM plateau not resolved)",
             "sweep_desc": "sweep of acc += x (fp32) over working sets; bandwidth counts 3 x 4 bytes per element and pass",
             "peak_desc": "torch.matmul of random n x n matrices", "size_label": "working set"}
    name = f"{props.name} (measured)"
    return MeasuredHardware(name, peaks, bandwidth, float(total), sources, levels=levels, notes=notes,
                            sweep=sweep, runs=runs, setup=setup, caches=caches,
                            wall_time_s=time.perf_counter() - t_start, kind="gpu")


def _measure_peaks(torch, dev, free, target, repeats, say):
    """({peak_<prec>: KernelRun}, {prec: FLOP/s}, {prec: n}): torch.matmul per precision, n grown
    until one call lasts about `target` seconds."""
    from ..models.kernels import matmul

    dtypes = {"fp64": torch.float64, "fp32": torch.float32, "tf32": torch.float32,
              "fp16": torch.float16, "bf16": torch.bfloat16}
    runs, peaks, peak_sizes = {}, {}, {}
    for prec in PEAK_PRECISIONS:
        with _matmul_mode(torch, prec):
            n = 1024
            while True:
                mats = [torch.randn(n, n, device=dev, dtype=dtypes[prec]) for _ in range(3)]
                fn = (lambda a, b, c: lambda: torch.matmul(a, b, out=c))(*mats)
                one = _event_timing(torch, fn, 1, 2, warmup=2).best
                # stop when a call is long enough to time, or the next size (4x the memory)
                # would not fit comfortably
                if one >= target / 2 or n >= 16384 or 12 * n * n * mats[0].element_size() > free / 2:
                    break
                n = min(16384, n * 2)
                mats = fn = None
            calls = max(1, round(target / max(one, 1e-7)))
            timing = _event_timing(torch, fn, calls, repeats, warmup=1)
            mats = fn = None
        model = matmul(n, n, n)
        flops, nbytes = model.flops_per_sample, model.bytes(prec)
        runs[f"peak_{prec}"] = KernelRun(f"peak_{prec}", f"matmul, n={n} (peak {prec})", "torch.matmul",
                                         prec, 1, flops, nbytes, timing, calls, nbytes, "HBM", model)
        peaks[prec], peak_sizes[prec] = flops / timing.best, n
        say(f"  peak {prec}: {peaks[prec] / 1e12:.1f} TFLOP/s (n={n}, median {flops / timing.median / 1e12:.1f}, "
            f"spread {timing.spread:.0%})")
    torch.cuda.empty_cache()
    return runs, peaks, peak_sizes


def _sweep_bandwidth(torch, dev, free, l2, target, repeats, quick, say):
    """([SweepPoint], whether CUDA graphs worked): acc += x (fp32) from 1 MiB up."""
    max_ws = int(min(4 * GiB, free / 4, max(1 * GiB, 16 * l2)))
    per_octave = 1 if quick else 2
    sizes, s = [], MiB
    while s <= max_ws:
        sizes.append(int(s) // 256 * 256)
        s *= 2 ** (1 / per_octave)
    n_max = sizes[-1] // 8                         # two fp32 arrays
    x_all = torch.ones(n_max, device=dev, dtype=torch.float32)
    acc_all = torch.zeros(n_max, device=dev, dtype=torch.float32)
    sweep, graphs_ok = [], True
    bw_est = 1e12
    for size in sizes:
        n = size // 8
        x, acc = x_all[:n], acc_all[:n]
        passes = int(max(1, min(2000, round(target * bw_est / (12 * n)))))
        fn, method = _graph_of(torch, lambda: acc.add_(x), passes) if graphs_ok else (None, "")
        if fn is None:
            graphs_ok = False
            fn, method = (lambda: [acc.add_(x) for _ in range(passes)]), "launch loop"
        timing = _event_timing(torch, fn, 1, repeats, warmup=1)
        bw = 12.0 * n * passes / timing.best
        bw_est = bw
        sweep.append(SweepPoint(size, 1, bw, 12.0 * n * passes / timing.median, timing.spread, method,
                                passes, len(timing.seconds)))
        say(f"  {fmt_binary_bytes(size):>9s}: {bw / 1e9:8.1f} GB/s")
    del x_all, acc_all
    torch.cuda.empty_cache()
    return sweep, graphs_ok


def _time_kernels(torch, dev, free, l2, target, repeats, say):
    """{key: KernelRun} for dot, axpy, add (fp32 vectors) and matmul fp16 at four sizes."""
    from ..models.kernels import axpy, dot, elementwise, matmul

    n = int(min(2**27, free / 4 / 3 / 4))            # fp32 vectors, 3 of them in a quarter of free memory
    vec = {k: torch.full((n,), 0.5 + i, device=dev, dtype=torch.float32) for i, k in enumerate("xyz")}
    specs = [
        ("dot", f"dot, n={n} (fp32)", dot(n), "fp32", lambda: torch.dot(vec["x"], vec["y"]), 8 * n),
        ("axpy", f"axpy, n={n} (fp32)", axpy(n), "fp32", lambda: vec["y"].add_(vec["x"], alpha=0.5), 8 * n),
        ("add", f"add, n={n} (fp32)", elementwise(n, inputs=2), "fp32",
         lambda: torch.add(vec["x"], vec["y"], out=vec["z"]), 12 * n),
    ]
    mats = {}
    for m in (256, 1024, 4096, 8192):
        mats[m] = [torch.randn(m, m, device=dev, dtype=torch.float16) for _ in range(3)]
        specs.append((f"matmul_{m}", f"matmul, n={m} (fp16)", matmul(m, m, m), "fp16",
                      (lambda a, b, c: lambda: torch.matmul(a, b, out=c))(*mats[m]), 6 * m * m))
    runs = {}
    for key, label, model, prec, fn, live in specs:
        timing, calls = _timed(torch, fn, target, repeats)
        runs[key] = KernelRun(key, label, "torch", prec, 1, model.flops_per_sample, model.bytes(prec),
                              timing, calls, live, "L2" if l2 and live <= l2 else "HBM", model)
        say("  " + runs[key].describe())
    vec.clear()
    mats.clear()
    torch.cuda.empty_cache()
    return runs


def _memory_ceiling(dram, sweep, graphs_ok, repeats):
    """(bandwidth, its source text): the HBM plateau, or the largest working sets' when the
    plateau was not resolved (said so)."""
    import numpy as np

    if dram.resolved:
        bandwidth = dram.bandwidth
        bw_src = (f"measured: the HBM plateau of the sweep, median of {dram.points} working sets "
                  f"{fmt_binary_bytes(dram.low)}..{fmt_binary_bytes(dram.high)}")
    else:
        bandwidth = float(np.median([p.bandwidth for p in sweep[-2:]]))
        bw_src = f"measured: the bandwidth at the sweep's two largest working sets (HBM plateau not resolved: {dram.note})"
    bw_src += (f"; kernel acc += x (torch, fp32, 12 bytes per element and pass), "
               f"{'CUDA graphs' if graphs_ok else 'launch loops'}, the fastest of {repeats} repeats after a warm-up")
    return bandwidth, bw_src


def _graph_of(torch, step, count):
    """(replay, "CUDA graph") for `count` calls of `step` captured in one CUDA graph, or
    (None, "") when capture fails (old driver, unsupported op)."""
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):       # warm-up on a side stream, as capture requires
            step()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(count):
                step()
        return graph.replay, "CUDA graph"
    except Exception:  # pragma: no cover - depends on the driver
        return None, ""
