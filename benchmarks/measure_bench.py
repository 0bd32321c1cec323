"""How long lesson 5's measurement takes, and how much its figures move from run to run.

    python benchmarks/measure_bench.py            # 3 full measurements (target: <= 20 s each
                                                  # on a 2-core machine)
    python benchmarks/measure_bench.py --quick 5  # 5 quick ones (what nbgrader runs)
    python benchmarks/measure_bench.py --threads 1

Prints each run's wall time, threads and memory ceiling, then the median and spread of the wall
time and of every figure (peaks, level bandwidths, ridge points) against issue 17's target
(spread <= 15% over 5 back-to-back runs on a quiet machine for the peaks, L3 and DRAM), whether
the thread count stayed the same, and whether the classifications notebook 05 grades came out
the same every time. It asserts nothing: compare figures within one run of it. The 1-minute
load average is printed with it: on a busy machine no spread target can hold.
"""
from __future__ import annotations

import argparse
import statistics
import time


def spread(values):
    """(max - min) / median, as the measurement itself reports it."""
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="?", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--sweep-call-ms", type=float, default=None,
                    help="override how long each timed call of the bandwidth sweep lasts (to compare "
                         "against the plan's own rule, in one run of this script)")
    args = ap.parse_args(argv)
    if args.sweep_call_ms:
        import dataclasses

        from course_lib.measure import cpu

        planned = cpu.make_plan
        cpu.make_plan = lambda *a, **k: dataclasses.replace(planned(*a, **k),
                                                            sweep_target_s=args.sweep_call_ms / 1e3)

    from course_lib import Hardware, solve
    from course_lib.measure import this_machine
    from course_lib.models import dot, matmul

    import os

    rows, walls, graded, threads, ceilings = {}, [], [], [], []
    for i in range(args.runs):
        t0 = time.perf_counter()
        hw = this_machine(quick=args.quick, threads=args.threads, refresh=True)
        walls.append(time.perf_counter() - t0)
        figures = {f"peak {p} (GFLOP/s)": hw.peak_flops_si(p) / 1e9 for p in hw.precisions}
        figures.update({f"{lv.name} bandwidth (GB/s)": lv.bandwidth / 1e9
                        for lv in hw.levels.values() if lv.resolved})
        figures["DRAM used for the roofline (GB/s)"] = hw.memory_bandwidth_si / 1e9
        figures.update({f"ridge {p} (FLOP/byte)": hw.ridge_point_si(p) for p in hw.precisions})
        for key in ("dot", "axpy", "add_32768", "matmul_1024"):
            figures[f"{hw.runs[key].name}, median (GFLOP/s)"] = hw.runs[key].achieved_flops / 1e9
        for k, v in figures.items():
            rows.setdefault(k, []).append(v)
        graded.append((solve(dot(2**23), hw, precision="fp64").bottleneck,
                       solve(matmul(1024, 1024, 1024), hw, precision="fp64").bottleneck,
                       hw.level_of(16 * 1024), hw.level_of(2**30),
                       "A100" if Hardware.A100.ridge_point_si("fp16") > hw.ridge_point_si("fp32") else "this machine"))
        unresolved = [n for n, lv in hw.levels.items() if not lv.resolved]
        threads.append(hw.threads)
        ceilings.append(hw.memory_label)
        print(f"run {i + 1}: {walls[-1]:.1f} s wall ({hw.wall_time_s:.1f} s inside), {hw.setup['mode']}, "
              f"{hw.threads} thread(s); memory ceiling {hw.memory_label}; not resolved: "
              f"{', '.join(unresolved) or 'none'}; load average {os.getloadavg()[0]:.1f}", flush=True)
        # this run's targeted figures, so that an outlier run shows which run it was
        print("       " + ", ".join(f"{k.split(' (')[0]} {v:.4g}" for k, v in figures.items()
                                    if k.startswith(("peak", "L3 ", "DRAM bandwidth"))), flush=True)

    print(f"\nmeasurement wall time: median {statistics.median(walls):.1f} s, min {min(walls):.1f}, "
          f"max {max(walls):.1f}, spread {spread(walls):.0%}  (target <= 20 s for a full run)")
    print(f"\n{'figure':42s} {'median':>10s} {'min':>10s} {'max':>10s} {'spread':>7s}  runs  target")
    for k, v in rows.items():
        targeted = k.startswith(("peak", "L3 ", "DRAM bandwidth"))
        verdict = f"<= 15%: {'yes' if spread(v) <= 0.15 else 'NO'}" if targeted else ""
        print(f"{k:42s} {statistics.median(v):10.4g} {min(v):10.4g} {max(v):10.4g} {spread(v):7.0%}  {len(v):4d}  {verdict}")
    print(f"\nthreads per run: {threads} ({'the same every run' if len(set(threads)) == 1 else 'CHANGED'}); "
          f"memory ceiling per run: {sorted(set(ceilings))}")
    same = all(g == graded[0] for g in graded)
    print(f"\ngraded classifications (dot, matmul 1024, 16 KiB, 1 GiB, higher ridge): {graded[0]}; "
          f"{'the same in every run' if same else 'NOT THE SAME: ' + repr(graded)}")


if __name__ == "__main__":
    main()
