"""Benchmark: `python -m autograder grade` against serial `nbgrader autograde`, same class, same run.

    .venv/bin/python benchmarks/grade_bench.py [ASSIGNMENT] [--correct 8] [--wrong 6] [--timeout 10]

The class is autograder.synthetic's (correct, partly wrong, blank, syntax error, infinite loop,
memory bomb, deleted test, edited locked cell, warnings), built from a fresh release. Both sides
start from nothing (no gradebook) and are timed wall-clock end to end:

* ours:   python -m autograder grade A --submissions <class>   (collect, gradebook, parallel grading)
* serial: nbgrader generate_assignment A, then one `nbgrader autograde A --student S` per student,
          one after the other, as an instructor would run it, under `prlimit --as` with the same
          memory limit as ours (without one, the memory bomb would simply take 8 GiB of RAM).

Left out of the class: the hostile student (unsandboxed, under plain nbgrader, it reads the
solutions and rewrites the gradebook, which would wreck the comparison — the tests cover it) and
the SIGINT-proof loop (plain nbgrader abandons that whole submission; ours keeps the credit earned
before the hang). Then every test cell's score is compared between the two gradebooks.
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

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder.course import default_jobs  # noqa: E402
from autograder.grade import cell_scores  # noqa: E402
from autograder.release import SOURCE, assignments, generate  # noqa: E402
from autograder.synthetic import KINDS, default_roster, make_class  # noqa: E402

BENCH_KINDS = tuple(k for k in KINDS if k not in ("hostile", "stubborn_loop", "not_a_notebook"))


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
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("assignment", nargs="?", help="default: the first assignment in solutions/")
    ap.add_argument("--correct", type=int, default=8)
    ap.add_argument("--wrong", type=int, default=6)
    ap.add_argument("--timeout", type=int, default=10, help="seconds per cell, both sides")
    ap.add_argument("--memory", type=int, default=4096, help="MB of address space, both sides")
    ap.add_argument("-j", "--jobs", type=int, default=default_jobs())
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args(argv)
    a = args.assignment or assignments()[0]
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}

    work = Path(tempfile.mkdtemp(prefix="grade-bench-"))
    try:
        generate(dest=work / "release", only=[a])
        roster = default_roster(args.correct, args.wrong, BENCH_KINDS)
        manifest = make_class(a, work / "class", release_dir=work / "release", roster=roster)
        students = [s for s, e in manifest["students"].items() if e["gradable"]]
        print(f"{a}: {len(students)} submissions, {os.cpu_count()} CPU cores, "
              f"{args.timeout} s per cell, {args.memory} MB per kernel")

        # ---- ours ----------------------------------------------------------------------------
        ours = work / "ours"
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "autograder", "grade", a, "--root", str(ours),
                            "--submissions", str(work / "class"), "--timeout", str(args.timeout),
                            "--memory", str(args.memory), "-j", str(args.jobs), "-q"],
                           cwd=REPO, env=env, capture_output=True, text=True)
        t_ours = time.perf_counter() - t0
        print(p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr[-2000:])

        # ---- serial nbgrader ------------------------------------------------------------------
        serial = work / "serial"
        serial.mkdir()
        (serial / "nbgrader_config.py").write_text(serial_config(serial, args.timeout))
        for s in students:
            shutil.copytree(ours / "submitted" / s, serial / "submitted" / s)
        limit = ["prlimit", f"--as={args.memory * 2**20}", "--"] if shutil.which("prlimit") else []
        t0 = time.perf_counter()
        subprocess.run([str(bindir / "nbgrader"), "generate_assignment", a, "--force"], cwd=serial, env=env,
                       capture_output=True, check=True)
        failed = []
        for s in students:
            r = subprocess.run(limit + [str(bindir / "nbgrader"), "autograde", a, "--student", s, "--force"],
                               cwd=serial, env=env, capture_output=True, text=True)
            if r.returncode != 0:
                failed.append(s)
        t_serial = time.perf_counter() - t0

        # ---- compare --------------------------------------------------------------------------
        mine = cell_scores("sqlite:///" + str(ours / "gradebook.db"), a)
        theirs = cell_scores("sqlite:///" + str(serial / "gradebook.db"), a)
        diffs = {s: {c: (mine.get(s, {}).get(c), theirs.get(s, {}).get(c))
                     for c in set(mine.get(s, {})) | set(theirs.get(s, {}))
                     if mine.get(s, {}).get(c) != theirs.get(s, {}).get(c)}
                 for s in students}
        diffs = {s: d for s, d in diffs.items() if d}
        cells = sum(len(v) for v in mine.values())
        expected_ok = all(
            sum(v or 0 for k, v in mine.get(s, {}).items() if k.split("/", 1)[1] in manifest["students"][s]["expected"][k.split("/", 1)[0]])
            == sum(manifest["students"][s]["total"].values()) for s in students)
        print(f"serial nbgrader autograde: {t_serial:7.1f} s  ({t_serial / len(students):.1f} s per submission"
              + (f"; failed: {', '.join(failed)}" if failed else "") + ")")
        print(f"python -m autograder grade:  {t_ours:7.1f} s  ({t_ours / len(students):.1f} s per submission, "
              f"{args.jobs} workers)")
        print(f"speed-up: {t_serial / t_ours:.2f}x")
        print(f"scores identical: {'yes' if not diffs and len(mine) == len(theirs) == len(students) else 'NO'} "
              f"({len(students)} students, {cells} graded cells); as the class script planted: "
              f"{'yes' if expected_ok else 'NO'}")
        for s, d in sorted(diffs.items()):
            print(f"  {s}: " + json.dumps({c: {"ours": x, "nbgrader": y} for c, (x, y) in sorted(d.items())}))
        return 0 if not diffs else 1
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
