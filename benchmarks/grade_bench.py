"""Benchmark: `python -m autograder grade` against ONE serial `nbgrader autograde` call for the
whole class (the fair baseline), and the execution floor, on the same class in the same run.

    .venv/bin/python benchmarks/grade_bench.py [ASSIGNMENT] [--correct 20] [--wrong 10] [--no-hang]

The class is tests/synthetic.py's (correct, partly wrong, blank, syntax error, memory bomb,
deleted test, edited locked cell, warnings: 36 submissions by default), built from a fresh
release. Every side starts from nothing (no gradebook) and is timed wall-clock end to end:

* ours:     python -m autograder grade A --submissions <class>   (collect, preflight of the
            solution, parallel sandboxed grading, clean re-verification, merge)
* baseline: nbgrader generate_assignment A, then ONE `nbgrader autograde A` for the whole class,
            with the course's settings (Execute.timeout = 120 s, add_missing_cells), under
            `prlimit --as` with the same memory limit as ours (else the memory bomb takes 8 GiB)
* floor:    the baseline's autograded notebooks (hidden tests in place) executed again with
            plain nbclient, one after the other; the sum divided by the number of workers is
            what no grader on this machine can beat.

Then the same with one hung submission added (an endless loop in an answer cell): the baseline
waits out its 120 s cell timeout; ours interrupts at the limit derived from the solution's own
time for that cell (max(10 s, 20x)). Targets on 2 cores (issue 36): ours >= 2.5x the baseline and
at or below the floor, >= 4x the baseline with the hung submission; the same score in every test
cell; and the same ratios with another job on the machine (--background-load 2: load ~2). Ours is
also run with --cold-kernels (every kernel started from nothing) on the same class: what the warm
kernels (autograder.sandbox.zygote) buy.

The machine may be shared: compare the ratios within one run, not figures across runs (the
load average before and after is printed with them).
Left out of the class: the hostile student (unsandboxed, under plain nbgrader, it would read the
solutions and rewrite the gradebook -- the tests cover it) and the SIGINT-proof loop (plain
nbgrader abandons that whole submission).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.course import default_jobs
from autograder.grading.grade import cell_scores
from autograder.authoring.release import REPO, SOURCE, assignments, generate

sys.path.insert(0, str(REPO / "tests"))     # the synthetic class is a test helper (tests/synthetic.py)
from synthetic import KINDS, default_roster, make_class  # noqa: E402

ANSWERS = REPO / "tests" / "answers"      # each lesson's wrong answers (the walk-through's)
BENCH_KINDS = tuple(k for k in KINDS if k not in ("hostile", "stubborn_loop", "not_a_notebook", "infinite_loop"))
COURSE_TIMEOUT = 120      # nbgrader_config.py's Execute.timeout


def serial_config(root: Path, timeout: int) -> str:
    return (
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        "c.CourseDirectory.course_id = 'roofline'\n"
        f"c.CourseDirectory.source_directory = {str(SOURCE)!r}\n"
        f"c.CourseDirectory.release_directory = {str(root / 'release')!r}\n"
        f"c.CourseDirectory.db_url = 'sqlite:///{root / 'gradebook.db'}'\n"
        "c.ClearSolutions.code_stub = {'python': '# YOUR CODE HERE\\nraise NotImplementedError()'}\n"
        "c.ClearSolutions.text_stub = 'YOUR ANSWER HERE'\n"
        f"c.Execute.timeout = {timeout}\n"
        f"c.Exchange.root = {str(root / 'exchange')!r}\n"
        # as in nbgrader_config.py: a deleted test cell is put back and graded
        "c.OverwriteCells.add_missing_cells = True\n"
        # as in nbgrader_config.py: generate_assignment writes a declared question's check cells
        # (without it plain nbgrader refuses the sources: solution regions outside solution cells)
        "from autograder.authoring.cells import configure as configure_question_cells\n"
        "configure_question_cells(c)\n"
    )


FLOOR = r"""
import json, sys, time
from pathlib import Path
import nbformat
from nbclient import NotebookClient
total, timeout = 0.0, int(sys.argv[2])
for p in sorted(Path(sys.argv[1]).glob("*/*/*.ipynb")):
    nb = nbformat.read(str(p), as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs = []
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=timeout, allow_errors=True, interrupt_on_timeout=True,
                   resources={"metadata": {"path": str(p.parent)}}).execute()
    total += time.perf_counter() - t0
print(json.dumps({"seconds": total}))
"""


def run_class(a: str, work: Path, class_dir: Path, students: list, args, env: dict, label: str) -> dict:
    bindir = Path(sys.executable).parent
    limit = ["prlimit", f"--as={args.memory * 2**20}", "--"] if shutil.which("prlimit") else []
    timeout = args.timeout or COURSE_TIMEOUT

    def grade(root: Path, extra: list) -> tuple[float, str]:
        cmd = [sys.executable, "-m", "autograder", "grade", a, "--root", str(root), "--submissions", str(class_dir),
               "--memory", str(args.memory), "-j", str(args.jobs), "-q", *extra] + (
                   ["--timeout", str(args.timeout)] if args.timeout else [])
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        lines = p.stdout.splitlines()
        head = [i for i, line in enumerate(lines) if line.startswith(f"{a}: graded")]
        # the summary line and the kernels line under it
        return seconds, ("\n  ".join(lines[head[0]:head[0] + 2]) if head else p.stderr[-2000:])

    ours = work / f"ours-{label}"
    t_ours, summary = grade(ours, [])
    t_cold = cold_summary = None
    if args.cold:
        t_cold, cold_summary = grade(work / f"cold-{label}", ["--cold-kernels"])

    serial = work / f"serial-{label}"
    serial.mkdir()
    (serial / "nbgrader_config.py").write_text(serial_config(serial, timeout))
    for s in students:
        shutil.copytree(ours / "submitted" / s, serial / "submitted" / s)
    t0 = time.perf_counter()
    subprocess.run([str(bindir / "nbgrader"), "generate_assignment", a, "--force"], cwd=serial, env=env,
                   capture_output=True, check=True)
    r = subprocess.run(limit + [str(bindir / "nbgrader"), "autograde", a, "--force"], cwd=serial, env=env,
                       capture_output=True, text=True)
    t_serial = time.perf_counter() - t0

    mine = cell_scores("sqlite:///" + str(ours / "gradebook.db"), a)
    theirs = cell_scores("sqlite:///" + str(serial / "gradebook.db"), a)
    diffs = {}
    for s in students:
        d = {c: (mine.get(s, {}).get(c), theirs.get(s, {}).get(c))
             for c in set(mine.get(s, {})) | set(theirs.get(s, {})) if mine.get(s, {}).get(c) != theirs.get(s, {}).get(c)}
        if d:
            diffs[s] = d
    return {"ours": t_ours, "cold": t_cold, "cold_summary": cold_summary, "serial": t_serial, "summary": summary, "serial_rc": r.returncode, "diffs": diffs,
            "cells": sum(len(v) for v in mine.values()), "graded": len(mine), "serial_dir": serial, "limit": limit}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("assignment", nargs="?", help="default: the first assignment in solutions/")
    ap.add_argument("--correct", type=int, default=20)
    ap.add_argument("--wrong", type=int, default=10)
    ap.add_argument("--timeout", type=int, default=None,
                    help="seconds per cell, both sides (default: the course's 120 s for nbgrader, derived for ours)")
    ap.add_argument("--memory", type=int, default=4096, help="MB of address space, both sides")
    ap.add_argument("-j", "--jobs", type=int, default=default_jobs())
    ap.add_argument("--no-hang", action="store_true", help="skip the run with a hung submission")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--no-cold", dest="cold", action="store_false",
                    help="skip the run of ours with --cold-kernels (what the warm kernels buy)")
    ap.add_argument("--background-load", type=int, default=0, metavar="N",
                    help="keep N busy processes running throughout (another job on the machine: 2 on 2 cores "
                         "is load ~2)")
    args = ap.parse_args(argv)
    a = args.assignment or assignments()[0]
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}

    work = Path(tempfile.mkdtemp(prefix="grade-bench-"))
    ok = True
    load = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.background_load)]
    try:
        if load:
            print(f"background load: {len(load)} busy process(es) running throughout (another job on the machine)")
            time.sleep(60)      # the 1-minute load average catches up before it is printed as "before"
        generate(dest=work / "release", only=[a])
        roster = default_roster(args.correct, args.wrong, BENCH_KINDS)
        manifest = make_class(a, work / "class", release_dir=work / "release", roster=roster, answers_dir=ANSWERS)
        students = [s for s, e in manifest["students"].items() if e["gradable"]]
        print(f"{a}: {len(students)} submissions, {os.cpu_count()} CPU cores, {args.jobs} workers, "
              f"{args.memory} MB per kernel; cell time limit: "
              + (f"{args.timeout} s both sides" if args.timeout else f"nbgrader {COURSE_TIMEOUT} s (the course's), "
                                                                    "ours derived from the solution"))
        print("  machine before: load average %.2f, %.2f, %.2f (uptime)" % os.getloadavg())
        r = run_class(a, work, work / "class", students, args, env, "plain")

        floor_cmd = r["limit"] + [sys.executable, "-c", FLOOR, str(r["serial_dir"] / "autograded"),
                                  str(args.timeout or COURSE_TIMEOUT)]
        f = subprocess.run(floor_cmd, cwd=work, env=env, capture_output=True, text=True)
        floor_total = json.loads(f.stdout.strip().splitlines()[-1])["seconds"] if f.returncode == 0 else float("nan")
        floor = floor_total / args.jobs
        print(f"  {r['summary']}")
        print(f"  one serial nbgrader autograde: {r['serial']:7.1f} s"
              + ("" if r["serial_rc"] == 0 else f"  (exit {r['serial_rc']})"))
        print(f"  python -m autograder grade:    {r['ours']:7.1f} s  (warm kernels)")
        if r["cold"] is not None:
            print(f"  the same, --cold-kernels:      {r['cold']:7.1f} s  ({r['cold'] / r['ours']:.2f}x the warm time)")
        print(f"  floor (nbclient {floor_total:.1f} s / {args.jobs}): {floor:7.1f} s")
        print(f"  speed-up over the baseline: {r['serial'] / r['ours']:.2f}x (issue 36: >= 2.5x); "
              f"ours / floor: {r['ours'] / floor:.2f}x (issue 36: <= 1.0x, at or below the floor)")
        same = not r["diffs"] and r["graded"] == len(students)
        print(f"  scores identical cell by cell: {'yes' if same else 'NO'} ({len(students)} students, {r['cells']} cells)")
        for s, d in sorted(r["diffs"].items()):
            print(f"    {s}: " + json.dumps({c: {"ours": x, "nbgrader": y} for c, (x, y) in sorted(d.items())}))
        ok &= same

        if not args.no_hang:
            hung = make_class(a, work / "class-hung", release_dir=work / "release", roster=roster + [("hung", "infinite_loop")],
                              answers_dir=ANSWERS)
            students_h = [s for s, e in hung["students"].items() if e["gradable"]]
            h = run_class(a, work, work / "class-hung", students_h, args, env, "hung")
            print(f"with one hung submission ({len(students_h)} submissions):")
            print(f"  {h['summary']}")
            print(f"  one serial nbgrader autograde: {h['serial']:7.1f} s")
            print(f"  python -m autograder grade:    {h['ours']:7.1f} s  (warm kernels)")
            if h["cold"] is not None:
                print(f"  the same, --cold-kernels:      {h['cold']:7.1f} s")
            print(f"  speed-up over the baseline: {h['serial'] / h['ours']:.2f}x (issue 36: >= 4x)")
            same_h = not h["diffs"] and h["graded"] == len(students_h)
            print(f"  scores identical cell by cell: {'yes' if same_h else 'NO'}")
            for s, d in sorted(h["diffs"].items()):
                print(f"    {s}: " + json.dumps({c: {"ours": x, "nbgrader": y} for c, (x, y) in sorted(d.items())}))
            ok &= same_h
        print("  machine after: load average %.2f, %.2f, %.2f (uptime)" % os.getloadavg())
        return 0 if ok else 1
    finally:
        for proc in load:
            proc.kill()
            proc.wait()
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
