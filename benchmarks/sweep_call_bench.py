"""How long one timed call of lesson 5's bandwidth sweep should last: each cache zone's bandwidth
with calls of several lengths, the lengths alternating round by round.

    python benchmarks/sweep_call_bench.py                     # the plan's threads, 8 rounds,
                                                              # calls of 1/2, 1 and 2x the rule's
    python benchmarks/sweep_call_bench.py --threads 2 --calls 2,4,8 --rounds 8
    python benchmarks/sweep_call_bench.py --zones L3,DRAM --quick

``course_lib.measure.cpu.sweep_call_s`` sets the length: short, so that a call fits between a
busy OS's preemptions; long against the start skew of the team's threads. This times only the
sweep (``measure_sweep``) over each zone's sizes from the plan, so the call length is the one
thing that differs, and prints per zone and length the median over the rounds of the zone's
median bandwidth, its spread, and the seconds the zone took. The order of the lengths rotates
from round to round so that a machine's drift falls on all of them alike. It asserts nothing.

On issue 17's 2-vCPU VM, 2 threads, 8 rounds (benchmarks/results/2026-11-27-vm-2vcpu): 2 ms calls
read L3 at 60.1 GB/s and DRAM at 31.8, 4 ms 63.1 and 32.6, 8 ms 65.3 and 33.5, 16 ms 66.7 and
34.0; the rule then gave 2 ms and now gives 8 ms (4 ms per thread in full mode).
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import time


def main(argv=None):
    from course_lib.measure import cpu
    from course_lib.measure.plateaus import zones
    from course_lib.measure.timing import Timing
    from course_lib.measure.system import cache_sizes

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=None, help="default: the measurement's thread rule")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--calls", default=None, metavar="MS,MS,...",
                    help="call lengths in ms (default: 1/2, 1 and 2x the rule's)")
    ap.add_argument("--zones", default="L2,L3,DRAM", help="cache zones to time, e.g. L3,DRAM")
    ap.add_argument("--quick", action="store_true", help="the quick plan's sizes and repeats")
    args = ap.parse_args(argv)
    threads = args.threads or cpu.decide_threads(None)[0]
    caches = cache_sizes()
    plan = cpu.make_plan(args.quick, threads, caches)
    rule = plan.sweep_target_s * 1e3
    calls = [float(c) for c in args.calls.split(",")] if args.calls else [rule / 2, rule, 2 * rule]
    z, sizes = zones(caches, threads), cpu.sweep_sizes(plan)
    picked = {}
    for name in args.zones.split(","):
        if name not in z:
            raise SystemExit(f"--zones: {name!r} is not a zone on this machine; its zones: {sorted(z)}")
        lo, hi = z[name]
        picked[name] = [s for s in sizes if lo <= s <= hi]
    print(f"{threads} thread(s), {'quick' if args.quick else 'full'} plan, rule {rule:g} ms per call; "
          f"zones: " + "; ".join(f"{n} {len(s)} sizes" for n, s in picked.items()), flush=True)
    cpu.measure_sweep(plan, sizes=[s for ss in picked.values() for s in ss][-1:])   # first touch, page tables
    bw, secs = {}, {}
    for r in range(args.rounds):
        for call in calls[r % len(calls):] + calls[:r % len(calls)]:
            p = dataclasses.replace(plan, sweep_target_s=call / 1e3)
            for name, zs in picked.items():
                if not zs:
                    continue
                t0 = time.perf_counter()
                points = cpu.measure_sweep(p, sizes=zs)
                secs.setdefault((name, call), []).append(time.perf_counter() - t0)
                bw.setdefault((name, call), []).append(statistics.median(q.bandwidth for q in points) / 1e9)
        print(f"round {r + 1}: " + ", ".join(f"{n} {c:g} ms {v[-1]:.1f}" for (n, c), v in bw.items()), flush=True)
    print(f"\n{'zone':5s} {'call':>8s} {'median GB/s':>12s} {'min':>7s} {'max':>7s} {'spread':>7s} {'zone s':>7s}")
    for (name, call), v in sorted(bw.items(), key=lambda kv: (list(picked).index(kv[0][0]), kv[0][1])):
        spread = Timing(tuple(v)).spread          # (max - min) / median, as the measurement reports it
        print(f"{name:5s} {call:6g} ms {statistics.median(v):12.1f} {min(v):7.1f} {max(v):7.1f} {spread:7.0%} "
              f"{statistics.median(secs[(name, call)]):7.2f}" + ("  (the rule's)" if call == rule else ""))


if __name__ == "__main__":
    main()
