"""Lesson 5's measurement against an outside reference (likwid-bench) and against plain numpy.

    python benchmarks/compare_likwid.py              # 5 interleaved rounds, full mode
    python benchmarks/compare_likwid.py 3 --quick    # what nbgrader runs
    python benchmarks/compare_likwid.py --threads 1

Each round runs, in an order that rotates from round to round (so a busy spell on the machine
hits all three alike): ``this_machine(refresh=True)``; likwid-bench's ``peakflops`` (fp64 FMAs
on data in L1: the core's peak) and ``daxpy`` (y = a*x + y, 24 bytes per element like the
sweep's acc += x) in each of the L1, L2, L3 and DRAM zones the sweep reads its plateaus from;
and plain numpy (np.matmul at n=2048 for the peaks, a loop of np.add(acc, x, out=acc) per
thread at the same working sets).

The references are read the way the sweep reads a plateau: its L2 and L3 figures are the
median over the sizes of the level's plateau, each size at its fastest repeat, so the
references take three sizes spanning the same plateau (its first size, log-middle, last),
found by a first this_machine() run that is not counted, each at its fastest run, and their
median. Same working sets, not only the same zone: on a cloud VM the zone's upper part need
not behave like its start (the L3 the OS reports is shared with the host's other tenants), and
where the sweep sees the bandwidth step down inside a zone its plateau ends there, while a
reference at the zone's end would measure the next level. ``--zones`` takes the zone's sizes
instead (start x 1.25, log-middle, end). L1 and DRAM keep one size
each (well inside L1; 6x the last cache). It prints the median of every figure over the
rounds, its spread, and the ratios this_machine / likwid and / numpy, with
the targets of issue 17 (peaks, L3, DRAM within 20% of likwid; L2 within 25%; L1 explained:
numpy's loop, not the cache, limits it there). It asserts nothing.

likwid-bench comes from Debian's ``likwid`` package; without it only numpy is compared.
"""
from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import threading
import time

import numpy as np

LEVELS = ("L1", "L2", "L3", "DRAM")
TARGETS = {"peak fp64": 0.20, "L3": 0.20, "DRAM": 0.20, "L2": 0.25}


def zone_sizes(caches, threads):
    """{level: working sets per thread} inside each level's zone (the zones of plateaus.zones):
    for L2 and L3 three sizes spanning the zone (its start x 1.25, its middle on a log scale,
    its end), as the sweep's plateau spans it; one size well inside L1 and one at 6x the last
    cache for DRAM."""
    from course_lib.measure.plateaus import zones

    z = zones(caches, threads)
    out = {}
    for lv in LEVELS:
        if lv not in z:
            continue
        lo, hi = z[lv]
        if lv == "L1":
            out[lv] = [0.5 * hi]                      # well inside L1
        elif lv == "DRAM":
            out[lv] = [1.5 * lo]                      # 6x the last cache
        else:
            out[lv] = [1.25 * lo, (lo * hi) ** 0.5, hi]
    return {lv: [int(s // 1024 * 1024) for s in sizes] for lv, sizes in out.items()}


def plateau_sizes(levels, sizes):
    """`sizes` with L2's and L3's replaced by three spanning each resolved plateau of a
    this_machine() run (its first size, log-middle, last)."""
    out = dict(sizes)
    for lv in ("L2", "L3"):
        level = levels.get(lv)
        if lv in out and level is not None and level.resolved:
            lo, hi = level.low, level.high
            out[lv] = [int(s // 1024 * 1024) for s in (lo, (lo * hi) ** 0.5, hi)]
    return out


# ---- likwid-bench ------------------------------------------------------------------------------
def likwid_tests():
    """(peakflops test, daxpy test) for the widest vector ISA likwid-bench has here."""
    out = subprocess.run(["likwid-bench", "-a"], capture_output=True, text=True, timeout=30).stdout
    names = {line.split(" - ")[0].strip() for line in out.splitlines() if " - " in line}
    pick = lambda base: next(f"{base}{s}" for s in ("_avx512_fma", "_avx_fma", "_avx", "") if f"{base}{s}" in names)
    return pick("peakflops"), pick("daxpy")


# likwid-bench's run has a fixed cost (its threads' start, a first pass) that a few passes over an
# L3- or DRAM-sized set do not amortize: on the 2-vCPU VM, daxpy at 90 MiB per thread read
# 23 GB/s with 3 passes, 29-35 with 30, 33-34 with 100 (numpy's acc += x: 36-38 at every size)
MIN_PASSES = 50


def likwid(test, size_bytes, threads, traffic=5e7, repeats=10):
    """(MFlops/s, MByte/s) of likwid-bench's `test` on `size_bytes` in all: the fastest of
    `repeats` short runs (about `traffic` bytes each, a millisecond or so, but at least
    ``MIN_PASSES`` passes), as this_machine() takes the fastest of short repeats: on a shared
    machine a run longer than the scheduler's slice measures the other programs' share of the
    CPU as much as the machine. L3- and DRAM-sized sets need the passes more than the brevity."""
    iters = max(MIN_PASSES, int(traffic / size_bytes))
    cmd = ["likwid-bench", "-t", test, "-W", f"N:{size_bytes // 1024}kB:{threads}", "-i", str(iters)]
    best = (0.0, 0.0)
    for _ in range(repeats):
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        flops, mbytes = (re.search(rf"{unit}:\s+([\d.]+)", p.stdout) for unit in ("MFlops/s", "MByte/s"))
        if not (flops and mbytes):
            raise RuntimeError(f"{' '.join(cmd)} printed no MFlops/s and MByte/s (exit {p.returncode}):\n"
                               + (p.stdout + p.stderr)[-1500:])
        flops, mbytes = float(flops.group(1)), float(mbytes.group(1))
        best = max(best, (flops * 1e6, mbytes * 1e6), key=lambda fb: fb[0] or fb[1])
    return best


def round_likwid(tests, sizes, threads):
    """One round of reference figures: a level's bandwidth is the median over its sizes of each
    size's fastest run, the statistic the sweep's plateau uses."""
    peak_test, daxpy_test = tests
    fig = {"peak fp64": likwid(peak_test, 32 * 1024 * threads, threads)[0]}
    for lv, level_sizes in sizes.items():
        repeats = 3 if lv == "DRAM" else (10 if len(level_sizes) == 1 else 5)
        fig[lv] = statistics.median(likwid(daxpy_test, size * threads, threads, repeats=repeats)[1]
                                    for size in level_sizes)
    return fig


# ---- plain numpy --------------------------------------------------------------------------------
def numpy_peak(dtype, threads, n=2048):
    from threadpoolctl import threadpool_limits

    a = np.random.default_rng(0).random((n, n)).astype(dtype)
    b, c = a.copy(), np.empty_like(a)
    with threadpool_limits(threads, user_api="blas"):
        np.matmul(a, b, out=c)
        best = min(_timed(lambda: np.matmul(a, b, out=c)) for _ in range(5))
    return 2 * n**3 / best


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def numpy_stream(size, threads, target_s=0.01):
    """acc += x as a plain loop of numpy calls, one per pass, on every thread at once (B/s)."""
    n = size // 16
    arrays = [(np.ones(n), np.ones(n)) for _ in range(threads)]
    one = _timed(lambda: np.add(arrays[0][1], arrays[0][0], out=arrays[0][1])) or 1e-7
    passes = max(1, int(target_s / one))
    start = threading.Barrier(threads)

    def work(i):
        x, acc = arrays[i]
        start.wait()
        for _ in range(passes):
            np.add(acc, x, out=acc)

    best = float("inf")
    for _ in range(5):
        ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        best = min(best, time.perf_counter() - t0)
    return threads * 24 * n * passes / best


def round_numpy(sizes, threads):
    fig = {"peak fp64": numpy_peak(np.float64, threads), "peak fp32": numpy_peak(np.float32, threads)}
    for lv, level_sizes in sizes.items():
        fig[lv] = statistics.median(numpy_stream(size, threads) for size in level_sizes)
    return fig


# ---- this_machine -----------------------------------------------------------------------------
def round_mine(quick, threads):
    from course_lib.measure import this_machine

    hw = this_machine(quick=quick, threads=threads, refresh=True)
    fig = {"peak fp64": hw.peak_flops_si("fp64"), "peak fp32": hw.peak_flops_si("fp32")}
    for lv in LEVELS:
        level = hw.levels[lv]
        fig[lv] = level.bandwidth if level.points else float("nan")
    fig["ceiling"] = hw.memory_bandwidth_si
    return fig, hw


def spread(values):
    v = [x for x in values if x == x]
    if len(v) < 2:
        return float("nan")
    m = statistics.median(v)
    return (max(v) - min(v)) / m


def med(values):
    v = [x for x in values if x == x]
    return statistics.median(v) if v else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rounds", nargs="?", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=None, help="default: this_machine()'s thread rule")
    ap.add_argument("--zones", action="store_true",
                    help="L2 and L3 at the zones' sizes from the OS's cache sizes, not at this_machine's plateaus")
    args = ap.parse_args(argv)

    from course_lib.measure.system import cache_sizes, choose_threads

    threads = args.threads or choose_threads(None)[0]
    caches = cache_sizes()
    sizes = zone_sizes(caches, threads)
    if not args.zones:
        # the same working sets as this_machine's plateaus (the same n): where the sweep saw the
        # bandwidth step down inside a zone, a reference at the zone's end measures the next level
        _, hw = round_mine(args.quick, threads)
        sizes = plateau_sizes(hw.levels, sizes)
        print("working sets from a first this_machine() run (not counted): "
              + "; ".join(f"{lv} {hw.levels[lv].sizes_text}" for lv in ("L2", "L3") if lv in hw.levels))
    tests = likwid_tests() if shutil.which("likwid-bench") else None
    print(f"{caches.describe()}; {threads} thread(s); {'quick' if args.quick else 'full'} mode; "
          f"working sets per thread: " + "; ".join(f"{lv} " + ", ".join(f"{s // 1024} KiB" for s in ss)
                                                  for lv, ss in sizes.items()))
    print(f"likwid-bench tests: {tests[0]}, {tests[1]}" if tests else "likwid-bench not installed: numpy only")

    runs = {"this_machine": [], "likwid": [], "numpy": []}
    jobs = {"this_machine": lambda: round_mine(args.quick, threads)[0],
            "likwid": (lambda: round_likwid(tests, sizes, threads)) if tests else None,
            "numpy": lambda: round_numpy(sizes, threads)}
    order = [k for k in jobs if jobs[k]]
    for r in range(args.rounds):
        rotated = order[r % len(order):] + order[:r % len(order)]     # interleaved, rotating
        for k in rotated:
            t0 = time.perf_counter()
            runs[k].append(jobs[k]())
            print(f"round {r + 1}: {k} [{time.perf_counter() - t0:.1f} s]", flush=True)

    rows = ["peak fp64", "peak fp32"] + list(sizes)
    print(f"\n{'figure':10s} {'this_machine':>14s} {'spread':>7s} {'likwid':>12s} {'spread':>7s} "
          f"{'numpy':>12s} {'spread':>7s} {'mine/likwid':>12s} {'mine/numpy':>11s}  target")
    for row in rows:
        mine = [f.get(row, float("nan")) for f in runs["this_machine"]]
        ref = [f.get(row, float("nan")) for f in runs["likwid"]]
        npy = [f.get(row, float("nan")) for f in runs["numpy"]]
        unit = 1e9
        m, l_, n_ = med(mine), med(ref), med(npy)
        ratio = m / l_ if l_ == l_ and l_ else float("nan")
        tol = TARGETS.get(row)
        verdict = ("" if tol is None or ratio != ratio else
                   f"within {tol:.0%}: {'yes' if abs(ratio - 1) <= tol else 'NO'}")
        if row == "L1":
            verdict = "explained: numpy's loop, not the cache, limits it"
        print(f"{row:10s} {m / unit:14.1f} {spread(mine):7.0%} {l_ / unit:12.1f} {spread(ref):7.0%} "
              f"{n_ / unit:12.1f} {spread(npy):7.0%} {ratio:12.2f} {m / n_ if n_ else float('nan'):11.2f}  {verdict}")
    print("\n(peaks in GFLOP/s; L1..DRAM in GB/s, all threads together; median over the rounds; spread = "
          "(max - min) / median. likwid's peakflops runs FMAs on data in L1, numpy's peak is np.matmul "
          "at n=2048; likwid's daxpy and numpy's acc += x move 24 bytes per element and pass.)")
    ceil = [f["ceiling"] for f in runs["this_machine"]]
    print(f"this_machine's roofline memory ceiling: median {med(ceil) / 1e9:.1f} GB/s, spread {spread(ceil):.0%}")


if __name__ == "__main__":
    main()
