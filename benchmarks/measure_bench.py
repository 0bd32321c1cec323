"""How long lesson 5's measurement takes, and how much its figures move from run to run.

    python benchmarks/measure_bench.py            # 3 full measurements (target: <= 20 s each
                                                  # on a 2-core machine)
    python benchmarks/measure_bench.py --quick 5  # 5 quick ones (what nbgrader runs)
    python benchmarks/measure_bench.py --threads 1
    python benchmarks/measure_bench.py 5 --ab peak_every_s=None
                                                  # 5 runs of the plan as it is, alternating with
                                                  # 5 of the plan with that field changed

Prints each run's wall time, threads and memory ceiling, then the median and spread of the wall
time and of every figure (peaks, level bandwidths, ridge points) against issue 17's target
(spread <= 15% over 5 back-to-back runs on a quiet machine for the peaks, L3 and DRAM), whether
the thread count stayed the same, and whether the classifications notebook 05 grades came out
the same every time. It asserts nothing: compare figures within one run of it. The 1-minute
load average is printed with it: on a busy machine no spread target can hold.

A shared VM can be slow for its host's sake with nothing running on it (issue 17's 2-vCPU VM: a
whole run at half speed, L1 included, with the load average at 1 and no steal time). So before
every run two **controls** are timed, fixed single-thread loops that nothing in the measurement
adapts to (``controls``): one on the core (np.add in L1), one on memory (a DRAM copy). Their
spread over the runs is the machine's own, and a targeted figure's verdict says when its
control moved by more than 5%: the machine was not quiet, and the target says little there.
``--ab FIELD=VALUE`` compares two plans in one run of this script, alternating, so that the
host's drift falls on both alike.
"""
from __future__ import annotations

import argparse
import statistics
import time


def spread(values):
    """(max - min) / median, as the measurement itself reports it."""
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m else float("nan")


QUIET = 0.05       # a control spread above this: the machine itself moved, not the measurement


def controls() -> dict:
    """{name: GB/s} of two fixed single-thread loops that nothing adapts to the machine, so they
    move only when the machine does (its clocks, a host's other tenants):
    "core"   -- np.add on two 2 KiB arrays (in L1), the fastest of 5 blocks of ~15 ms;
    "memory" -- np.copyto between two 256 MiB arrays (DRAM), the fastest of 3 copies."""
    import numpy as np

    x, acc = np.ones(256), np.ones(256)
    calls, best = 40000, float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            np.add(acc, x, out=acc)
        best = min(best, time.perf_counter() - t0)
    core = 24 * 256 * calls / best / 1e9
    src, dst = np.ones(2**25), np.zeros(2**25)
    np.copyto(dst, src)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return {"core": core, "memory": 2 * src.nbytes / best / 1e9}


# which control a targeted figure moves with
CONTROL_OF = {"peak": "core", "L3 ": "memory", "DRAM bandwidth": "memory"}


def verdict(figure: str, values, controls_of_runs) -> str:
    """Issue 17's target for a figure it names (peaks, L3, DRAM: spread <= 15%), and whether the
    control that figure moves with held still over the same runs; "" for other figures.

    >>> verdict("peak fp64 (GFLOP/s)", [100, 104, 98], [{"core": 15.0}, {"core": 15.2}, {"core": 15.1}])
    '<= 15%: yes'
    >>> verdict("DRAM bandwidth (GB/s)", [30, 40, 35], [{"memory": 20}, {"memory": 25}, {"memory": 21}])
    '<= 15%: NO (the memory control moved: the machine was not quiet)'
    >>> verdict("L1 bandwidth (GB/s)", [1, 2], [{}, {}])
    ''
    """
    control = next((c for prefix, c in CONTROL_OF.items() if figure.startswith(prefix)), None)
    if control is None:
        return ""
    out = f"<= 15%: {'yes' if spread(values) <= 0.15 else 'NO'}"
    if spread([c[control] for c in controls_of_runs]) > QUIET:
        out += f" (the {control} control moved: the machine was not quiet)"
    return out


def parse_fields(pairs):
    """{field: value} from FIELD=VALUE strings, the values as Python literals (0, 1, 0.008, None)."""
    import ast
    import dataclasses

    from course_lib.measure.cpu import Plan

    names = {f.name for f in dataclasses.fields(Plan)}
    out = {}
    for pair in pairs or ():
        field, sep, value = pair.partition("=")
        if not sep or field not in names:
            raise SystemExit(f"--plan/--ab take FIELD=VALUE with FIELD one of {sorted(names)}; got {pair!r}")
        try:
            out[field] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise SystemExit(f"{pair!r}: the value must be a Python literal (a number, True, None)") from None
    return out


def measure(args, fields):
    """One this_machine() run with the plan's `fields` replaced; (hardware, wall seconds)."""
    import dataclasses

    from course_lib.measure import cpu, this_machine

    planned = cpu.make_plan
    cpu.make_plan = lambda *a, **k: dataclasses.replace(planned(*a, **k), **fields)
    try:
        t0 = time.perf_counter()
        hw = this_machine(quick=args.quick, threads=args.threads, refresh=True)
        return hw, time.perf_counter() - t0
    finally:
        cpu.make_plan = planned


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="?", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--sweep-call-ms", type=float, default=None,
                    help="override how long each timed call of the bandwidth sweep lasts (to compare "
                         "against the plan's own rule, in one run of this script)")
    ap.add_argument("--plan", action="append", metavar="FIELD=VALUE",
                    help="change a field of the measurement's Plan in every run")
    ap.add_argument("--ab", action="append", metavar="FIELD=VALUE",
                    help="alternate runs of the plan as it is (arm A) with runs where these fields "
                         "are changed (arm B), `runs` of each")
    args = ap.parse_args(argv)
    base = parse_fields(args.plan)
    if args.sweep_call_ms:
        base["sweep_target_s"] = args.sweep_call_ms / 1e3
    arms = {"A (the plan as it is)": base}
    if args.ab:
        arms["B (" + ", ".join(args.ab) + ")"] = {**base, **parse_fields(args.ab)}
    results = {arm: Arm() for arm in arms}
    for i in range(args.runs):
        for arm, fields in arms.items():
            results[arm].add(i, args, fields, label=arm[0] if len(arms) > 1 else "")
    for arm, res in results.items():
        if len(arms) > 1:
            print(f"\n==== arm {arm}")
        res.summary()


class Arm:
    """The runs of one plan and their figures."""

    def __init__(self):
        self.rows, self.walls, self.graded, self.threads, self.ceilings, self.controls = {}, [], [], [], [], []

    def add(self, i, args, fields, label=""):
        import os

        from course_lib import Hardware, solve
        from course_lib.models import dot, matmul

        self.controls.append(controls())
        hw, wall = measure(args, fields)
        self.walls.append(wall)
        figures = {f"peak {p} (GFLOP/s)": hw.peak_flops_si(p) / 1e9 for p in hw.precisions}
        figures.update({f"{lv.name} bandwidth (GB/s)": lv.bandwidth / 1e9
                        for lv in hw.levels.values() if lv.resolved})
        figures["DRAM used for the roofline (GB/s)"] = hw.memory_bandwidth_si / 1e9
        figures.update({f"ridge {p} (FLOP/byte)": hw.ridge_point_si(p) for p in hw.precisions})
        for key in ("dot", "axpy", "add_32768", "matmul_1024"):
            figures[f"{hw.runs[key].name}, median (GFLOP/s)"] = hw.runs[key].achieved_flops / 1e9
        for k, v in figures.items():
            self.rows.setdefault(k, []).append(v)
        self.graded.append((solve(dot(2**23), hw, precision="fp64").bottleneck,
                            solve(matmul(1024, 1024, 1024), hw, precision="fp64").bottleneck,
                            hw.level_of(16 * 1024), hw.level_of(2**30),
                            "A100" if Hardware.A100.ridge_point_si("fp16") > hw.ridge_point_si("fp32")
                            else "this machine"))
        unresolved = [n for n, lv in hw.levels.items() if not lv.resolved]
        self.threads.append(hw.threads)
        self.ceilings.append(hw.memory_label)
        print(f"run {i + 1}{label}: {wall:.1f} s wall ({hw.wall_time_s:.1f} s inside), {hw.setup['mode']}, "
              f"{hw.threads} thread(s); memory ceiling {hw.memory_label}; not resolved: "
              f"{', '.join(unresolved) or 'none'}; load average {os.getloadavg()[0]:.1f}; "
              f"controls: core {self.controls[-1]['core']:.1f}, memory {self.controls[-1]['memory']:.1f} GB/s"
              + "".join(f"; plan {f}={getattr(hw.setup['plan'], f)!r}" for f in fields), flush=True)
        # this run's targeted figures, so that an outlier run shows which run it was
        print("       " + ", ".join(f"{k.split(' (')[0]} {v:.4g}" for k, v in figures.items()
                                    if k.startswith(tuple(CONTROL_OF))), flush=True)

    def summary(self):
        walls, rows = self.walls, self.rows
        print(f"\nmeasurement wall time: median {statistics.median(walls):.1f} s, min {min(walls):.1f}, "
              f"max {max(walls):.1f}, spread {spread(walls):.0%}  (target <= 20 s for a full run)")
        for name in ("core", "memory"):
            v = [c[name] for c in self.controls]
            print(f"control {name!r} before each run: median {statistics.median(v):.1f} GB/s, spread "
                  f"{spread(v):.0%}: " + ("the machine held still" if spread(v) <= QUIET else
                                         f"the machine itself moved by more than {QUIET:.0%}"))
        print(f"\n{'figure':42s} {'median':>10s} {'min':>10s} {'max':>10s} {'spread':>7s}  runs  target")
        for k, v in rows.items():
            print(f"{k:42s} {statistics.median(v):10.4g} {min(v):10.4g} {max(v):10.4g} {spread(v):7.0%}  "
                  f"{len(v):4d}  {verdict(k, v, self.controls)}")
        print(f"\nthreads per run: {self.threads} "
              f"({'the same every run' if len(set(self.threads)) == 1 else 'CHANGED'}); "
              f"memory ceiling per run: {sorted(set(self.ceilings))}")
        same = all(g == self.graded[0] for g in self.graded)
        print(f"\ngraded classifications (dot, matmul 1024, 16 KiB, 1 GiB, higher ridge): {self.graded[0]}; "
              f"{'the same in every run' if same else 'NOT THE SAME: ' + repr(self.graded)}")


if __name__ == "__main__":
    main()
