"""Benchmark: a whole class the night before grades are due. A synthetic class of 300 students
(the mix of benchmarks/grade_bench.py, blocks of 38: 20 right, 10 wrong, and one each of blank,
syntax error, memory bomb, deleted test, edited locked cell, warnings, hostile (tries to read the
solutions, write the gradebook and reach the network) and hung (an endless loop)), graded from
nothing by `python -m autograder grade` on this machine.

    .venv/bin/python benchmarks/class_bench.py [ASSIGNMENT] [--students 300] [-j JOBS] [--keep]

Prints the wall time, the per-submission time (p50, p95, max: each submission's own time in its
worker, from its status file), the peak memory of each worker with everything it started (its
kernels, its clean verifier; sampled every 0.2 s from /proc) and of the parent, the machine's load
before and after (`uptime`), and a table of what more cores or N shards would take. The table is an
EXTRAPOLATION from this run, not a measurement: wall(C cores) = fixed + (sum of per-submission
times) / C, never below fixed + the slowest submission; N shards of this machine = N machines of
its cores, plus `merge` (not timed here). It assumes each core as fast as here, and every
submission independent (they are: nothing is shared but the read-only course).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from autograder.authoring.release import REPO, assignments, generate
from autograder.course import default_jobs

sys.path.insert(0, str(REPO / "tests"))     # the synthetic class is a test helper (tests/synthetic.py)
from synthetic import make_class  # noqa: E402

ANSWERS = REPO / "tests" / "answers"
#: one block of the class: grade_bench's mix (20 right, 10 wrong, the broken ones), the hostile one
#: and a hung one
BLOCK = ([("correct", 20), ("wrong_all", 1), ("wrong", 9)]
         + [(k, 1) for k in ("blank", "syntax_error", "memory_bomb", "deletes_test", "edits_locked", "warnings",
                             "hostile", "infinite_loop")])


def roster(n: int) -> list[tuple[str, str]]:
    """n students, the block's mix repeated (the last block cut short), in a fixed shuffled order (any
    part of the class has the mix, as a real one does)."""
    import random

    kinds = [k for k, count in BLOCK for _ in range(count)]
    random.Random(36).shuffle(kinds)
    return [(f"{kinds[i % len(kinds)]}_{i:04d}", kinds[i % len(kinds)]) for i in range(n)]


class MemorySampler(threading.Thread):
    """The peak resident memory of each child of `pid` with all its descendants, and of `pid`."""

    def __init__(self, pid: int, every: float = 0.2):
        super().__init__(daemon=True)
        self.pid, self.every, self.stop = pid, every, threading.Event()
        self.peak_worker: dict[int, int] = {}
        self.peak_parent = 0

    @staticmethod
    def _table() -> tuple[dict, dict]:
        parent, rss = {}, {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                parent[int(d)] = int(fields[1])
                rss[int(d)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, IndexError, ValueError):
                continue
        return parent, rss

    def run(self) -> None:
        while not self.stop.wait(self.every):
            parent, rss = self._table()
            kids: dict[int, list] = {}
            for p, pp in parent.items():
                kids.setdefault(pp, []).append(p)

            def tree(p):
                return rss.get(p, 0) + sum(tree(c) for c in kids.get(p, []))

            self.peak_parent = max(self.peak_parent, rss.get(self.pid, 0))
            for w in kids.get(self.pid, []):
                self.peak_worker[w] = max(self.peak_worker.get(w, 0), tree(w))


def _load() -> str:
    return "load average %.2f, %.2f, %.2f" % os.getloadavg()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("assignment", nargs="?", help="default: the first assignment in solutions/")
    ap.add_argument("--students", type=int, default=300)
    ap.add_argument("-j", "--jobs", type=int, default=default_jobs())
    ap.add_argument("--memory", type=int, default=4096, help="MB of address space per kernel")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args(argv)
    a = args.assignment or assignments()[0]
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    work = Path(tempfile.mkdtemp(prefix="class-bench-"))
    try:
        generate(dest=work / "release", only=[a])
        manifest = make_class(a, work / "class", release_dir=work / "release", roster=roster(args.students),
                              answers_dir=ANSWERS)
        kinds = {}
        for e in manifest["students"].values():
            kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
        print(f"{a}: a class of {args.students} ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}); "
              f"{os.cpu_count()} CPU cores, {args.jobs} workers, {args.memory} MB per kernel")
        print(f"  before: {_load()}")
        root = work / "course"
        cmd = [sys.executable, "-m", "autograder", "grade", a, "--root", str(root), "--submissions",
               str(work / "class"), "--memory", str(args.memory), "-j", str(args.jobs), "-q"]
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sampler = MemorySampler(p.pid)
        sampler.start()
        out, err = p.communicate()
        wall = time.perf_counter() - t0
        sampler.stop.set()
        sampler.join()
        print(f"  after:  {_load()}")
        summary = next((l for l in out.splitlines() if l.startswith(f"{a}: graded")), err[-2000:])
        pre = next((l.strip() for l in out.splitlines() if l.strip().startswith("preflight:")), "")
        kernels = next((l.strip() for l in out.splitlines() if l.strip().startswith("kernels:")), "")
        print(f"  {summary}")
        print(f"  {kernels[:160]}")       # warm (forked from each worker's zygote) or cold
        print(f"  {pre[:160]}")

        state = root / "autograded" / ".autograder" / a
        seconds, failed = [], 0
        for f in sorted(state.glob("*.json")):
            if f.name.startswith("_"):
                continue
            st = json.loads(f.read_text())
            if st.get("status") == "graded":
                seconds.append(float(st.get("seconds", 0.0)))
            else:
                failed += 1
        seconds.sort()
        p50 = statistics.median(seconds)
        p95 = seconds[min(len(seconds) - 1, int(round(0.95 * (len(seconds) - 1))))]
        total = sum(seconds)
        print(f"  wall time: {wall:.1f} s for {len(seconds)} graded + {failed} failed submissions "
              f"({wall / max(1, args.students):.2f} s a student)")
        print(f"  per submission (in its worker): p50 {p50:.2f} s, p95 {p95:.2f} s, max {seconds[-1]:.2f} s; "
              f"sum {total:.0f} s")
        peaks = sorted(sampler.peak_worker.values(), reverse=True)
        print(f"  peak memory per worker (with its kernels and verifier): "
              + ", ".join(f"{b / 2**20:.0f} MB" for b in peaks[:args.jobs])
              + f"; the parent: {sampler.peak_parent / 2**20:.0f} MB")

        # the extrapolation: fixed = what is not the submissions' own time
        fixed = max(0.0, wall - total / args.jobs)
        print(f"  EXTRAPOLATED from this run (fixed {fixed:.0f} s: collect, preflight, start; "
              f"{total:.0f} s of submissions; not measured):")
        print(f"    {'where':<34} {'wall':>9}")
        for cores in (args.jobs, 16, 64):
            t = fixed + max(total / cores, seconds[-1])
            label = f"1 machine, {cores} cores" + (" (measured)" if cores == args.jobs else "")
            print(f"    {label:<34} {(wall if cores == args.jobs else t) / 60:6.1f} min")
        for n in (4, 16):
            t = fixed + max(total / (n * args.jobs), seconds[-1])
            print(f"    {f'{n} shards x {args.jobs} cores (+ merge)':<34} {t / 60:6.1f} min")
        return 0 if p.returncode in (0, 1) and seconds else 1
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
