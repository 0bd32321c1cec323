"""The preflight: the instructor's solution graded exactly as a submission before any student is.

It must earn every autograded point, or grading is refused (GradingRefused); its per-cell times
set the per-cell time limits (derived_timeouts). Its record (answers, verdicts, timings) is kept
in autograded/.autograder/<assignment>/_preflight.json and reused while preflight_key matches.
"""
from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path

from course_lib.exercises.question_ids import cell_id, is_graded, is_solution

from autograder import __version__
from autograder.grading.autograde import Graded, grade_one
from autograder.course import Course, source_extras, template_gradebook, tree_hash
from autograder.sandbox.bwrap import Limits, grader_package, missing_packages, package_dirs
from autograder.grading.status import write_json
from autograder.integrity import verify
from autograder.authoring.cells import read_source

MIN_CELL_TIMEOUT = 10            # seconds: the floor of a derived per-cell limit
CELL_TIMEOUT_FACTOR = 20         # x the solution's time for that cell
PREFLIGHT_CELL_TIMEOUT = 120     # seconds per cell while the solution runs (nothing known yet)
IMPORT_ERRORS = ("ModuleNotFoundError", "ImportError")   # a failure that names these: course_lib out of reach


class GradingRefused(SystemExit):
    """Grading did not start (no sandbox, a failed preflight); no score was changed."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def derived_timeouts(timings: dict, floor: int = MIN_CELL_TIMEOUT, factor: int = CELL_TIMEOUT_FACTOR) -> tuple[dict, int, int]:
    """({grade_id: seconds}, seconds for any other cell, seconds for the notebook) from the
    solution's per-cell times {notebook: {grade_id or #index: seconds}}."""
    per, slowest, total = {}, 0.0, 0.0
    for cells in timings.values():
        nb_total = 0.0
        for gid, t in cells.items():
            nb_total += t
            slowest = max(slowest, t)
            if not gid.startswith("#"):
                per[gid] = max(per.get(gid, 0), max(floor, int(factor * t + 0.999)))
        total = max(total, nb_total)
    return per, max(floor, int(factor * slowest + 0.999)), max(300, int(factor * total + 0.999))


def base_job(course: Course, assignment: str, run: Path, plan: dict, limits: Limits, sandbox: bool,
             packages, release: Path) -> dict:
    """What every grade_one job of this assignment shares (the preflight's job adds its student)."""
    return {"assignment": assignment, "work": str(run),
            "template_db": str(template_gradebook(course, run / "template.db")),
            "extras": str(source_extras(course, assignment, run / "extras")),
            "release": str(release), "limits": asdict(limits), "sandbox": sandbox, "packages": list(packages),
            "capture": plan["capture"], "hidden": plan["hidden"], "tests": verify.to_json(plan["tests"]),
            "user_config": course.user_config()}


def preflight_key(course: Course, assignment: str, sandbox: bool, packages) -> str:
    import hashlib

    h = hashlib.sha256()
    for part in (__version__, tree_hash(course.source / assignment), str(sandbox), sys.executable,
                 *[p + tree_hash(Path(p)) for p in package_dirs(tuple(packages), site=False)]):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def saved_preflight(course: Course, assignment: str, sandbox: bool, packages, limits: dict) -> dict | None:
    """The last preflight's record when it still holds: the same solution, grader version, sandbox
    state, course_lib and preflight limits (preflight_key); None otherwise."""
    try:
        record = json.loads((course.state / assignment / "_preflight.json").read_text())
    except (OSError, ValueError):
        return None
    if record.get("key") != preflight_key(course, assignment, sandbox, packages) or record.get("limits") != limits:
        return None
    return record


def run_preflight(course: Course, assignment: str, run: Path, plan: dict, job_base: dict, sandbox: bool,
                  packages) -> dict:
    """Grade the instructor's solution exactly as a submission; raise GradingRefused unless it
    earns every autograded point. Returns the record (answers, verdicts, timings) and saves it
    for the report: autograded/.autograder/<assignment>/_preflight.json."""
    t0 = time.monotonic()
    problems = []
    for nb, gid, names in plan["unverifiable"]:
        if gid in plan["hidden"]:
            problems.append(f"{nb}/{gid} reads {', '.join(names)}, which no answer cell before it assigns: a hidden "
                            "test must compute everything but the answers itself (it is re-run from the recorded "
                            "answers alone)")
    missing = missing_packages(tuple(packages))
    for name, why in missing.items():
        here = grader_package(name)
        problems.append(f"the {'sandboxed ' if sandbox else ''}kernel cannot import {name}: {why} "
                        f"({sys.executable} with the kernel's clean environment"
                        + (f"; this grader imports it from {here}, which the kernel does not see: install it "
                           f"into this environment, e.g. pip install -e <checkout>)" if here else ")"))
    if problems:
        raise GradingRefused(f"{assignment}: grading refused before any student was graded:\n  " + "\n  ".join(problems))
    sub = run / "preflight-solution"
    sub.mkdir()
    for nb in course.notebooks(assignment):
        shutil.copy(course.source / assignment / f"{nb}.ipynb", sub / f"{nb}.ipynb")
    job = {**job_base, "student": "solution", "slot": "p", "submitted": str(sub)}
    res = grade_one(job)
    where = ", ".join(package_dirs(tuple(packages), site=False)) or "the Python installation"
    if not res.success:
        cause = res.cause
        if res.cause_error in IMPORT_ERRORS:
            cause = f"the {'sandboxed ' if sandbox else ''}kernel cannot import course_lib from {where}: {cause}"
        raise GradingRefused(f"{assignment}: the instructor's solution could not be graded, so no student was: "
                             f"{cause}\n(details, from the log:\n{res.log[-3000:]}\n{res.error[-1500:]})")
    lost = []
    for nb, d in res.data["notebooks"].items():
        for gid, g in d["grades"].items():
            if g["auto_score"] is not None and g["max_score"] and g["auto_score"] < g["max_score"] \
                    and gid not in _manual_cells(course, assignment, nb):
                v = res.verdicts.get(nb, {}).get(gid, {})
                lost.append(f"{nb}/{gid}: {g['auto_score']:g} of {g['max_score']:g}"
                            + (f" ({v.get('ename')}: {v.get('message')})" if v else ""))
    for f in res.flags:
        lost.append(f"{f['notebook']}/{f['cell']}: the kernel gave {f['kernel']}, the clean re-verification {f['clean']}")
    if lost:
        cause = _preflight_cause(res, packages, sandbox)
        raise GradingRefused(f"{assignment}: the instructor's solution does not earn every autograded point, so no "
                             f"student was graded{': ' + cause if cause else ''}\n  " + "\n  ".join(lost))
    record = {"key": preflight_key(course, assignment, sandbox, packages), "limits": job_base["limits"],
              "seconds": round(time.monotonic() - t0, 2), "recorder": res.recorder,
              "notebooks": {nb: {"answers": res.answers.get(nb, {}), "timings": res.timings.get(nb, {}),
                                 "verdicts": res.verdicts.get(nb, {}),
                                 "scores": {g: [v["auto_score"], v["max_score"]] for g, v in d["grades"].items()}}
                            for nb, d in res.data["notebooks"].items()}}
    write_json(course.state / assignment / "_preflight.json", record)
    shutil.rmtree(run / "s" / "p", ignore_errors=True)
    shutil.rmtree(sub, ignore_errors=True)
    return record


def _manual_cells(course: Course, assignment: str, nb: str) -> set:
    import nbformat

    book = read_source(course.source / assignment / f"{nb}.ipynb")
    return {cell_id(c) for c in book.cells if is_graded(c) and is_solution(c)}


def _preflight_cause(res: Graded, packages, sandbox: bool) -> str:
    """The likely cause of a solution losing points, from its failures."""
    failed = [v for nb in res.verdicts.values() for v in nb.values() if not v.get("passed")]
    for v in failed:
        m = v.get("message", "") or ""
        if v.get("ename") in IMPORT_ERRORS + ("UnsupportedAnswer",):
            where = ", ".join(package_dirs(tuple(packages), site=False)) or "the Python installation"
            return (f"the {'sandboxed ' if sandbox else ''}kernel cannot import course_lib from {where}: {m}")
    return ""
