"""Speed benchmark of course_lib: ``python benchmarks/course_lib_bench.py`` (``make bench``) prints
figures (it asserts nothing).

Measured here, not in timed tests: shared machines are noisy, so compare figures within one
run. Targets (issue "course_lib: a correct, fast roofline solver"): fresh-process import
≤ 0.5 s, one solve ≤ 50 µs, one serve ≤ 200 µs, a 10,000-point sweep ≤ 20 ms, a widget
redraw well under 100 ms.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time

from course_lib.formatting import fmt_time


def _median_time(fn, repeat=7, number=200):
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        runs.append((time.perf_counter() - t0) / number)
    return statistics.median(runs)


def import_time(runs=5) -> float:
    """Median wall time of `import course_lib` in a fresh interpreter."""
    code = "import time; t=time.perf_counter(); import course_lib; print(time.perf_counter()-t)"
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  check=True).stdout) for _ in range(runs)]
    return statistics.median(times)


def main():
    import numpy as np

    from course_lib import Hardware, Models, serve, solve

    rows = []
    rows.append(("import course_lib (fresh process)", import_time(), 0.5))
    m, hw = Models.ResNet50, Hardware.A100
    solve(m, hw)
    rows.append(("solve(ResNet50, A100, batch 8)", _median_time(lambda: solve(m, hw, 8)), 50e-6))
    llm = Models.Llama3_8B
    rows.append(("solve(Llama3_8B, H100, batch 1)",
                 _median_time(lambda: solve(llm, Hardware.H100, 1)), 50e-6))
    rows.append(("serve(Llama3_8B, H100, 2048 in, 128 out)",
                 _median_time(lambda: serve(llm, Hardware.H100), number=100), 200e-6))
    batches = np.arange(1, 10_001)
    rows.append(("10,000-point sweep: solve(..., batch_size=array).latency",
                 _median_time(lambda: solve(m, hw, batches).latency_si, number=10), 20e-3))
    rows.append(("10,000-point per-layer sweep (layerwise_latency)",
                 _median_time(lambda: solve(m, hw, batches).layerwise_latency_si, repeat=3, number=3), None))
    try:
        from course_lib.widgets import roofline_explorer

        e = roofline_explorer()
        values = [2, 8, 64, 512]

        def change():
            e.controls[0].value = values[change.i % len(values)]
            change.i += 1
        change.i = 0
        rows.append(("widget redraw (roofline_explorer slider change)",
                     _median_time(change, repeat=3, number=10), 0.1))
    except ImportError as err:  # ipywidgets or matplotlib missing
        print(f"(widget benchmark skipped: {err})")

    print(f"{'what':58s} {'median':>12s} {'target':>10s}")
    for what, t, target in rows:
        tgt = "" if target is None else fmt_time(target)
        flag = "" if target is None else ("  ok" if t <= target else "  OVER")
        print(f"{what:58s} {fmt_time(t):>12s} {tgt:>10s}{flag}")


if __name__ == "__main__":
    main()
