"""`grade`: autograde every submission of an assignment, in parallel, sandboxed.

Each submission is autograded by nbgrader's own Autograde converter (Python API, in-process) in a
worker process, inside a private temporary course: a copy of the gradebook without any student
data, the student's submitted files, and the assignment's non-notebook files. Its kernel runs in
the sandbox (autograder.sandbox). The worker returns the scores; the parent merges them into the
course gradebook one student at a time, each in a single transaction (sqlite dislikes concurrent
writers, and a crash then leaves every student either fully merged or untouched), and then moves
the autograded notebook into autograded/<student>/<assignment>/.

Merging follows nbgrader's own rules, so the gradebook ends up exactly as serial
`nbgrader autograde` leaves it: auto scores and comments replaced, manual scores kept (a cell
that has one is flagged for review again), late penalties computed from the due date and any
extension in the course gradebook.

Re-running is idempotent: a submission whose files, the assignment's sources, the grader's version
and the sandbox state have not changed since it was last graded is skipped (--force regrades; a
change of limits alone does not trigger regrading).
"""
from __future__ import annotations

import csv
import datetime as dt
import json
import logging
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

from . import __version__
from .course import (Course, replace_dir, answer_cells, default_jobs, ensure_assignment, source_extras,
                     template_gradebook, tree_hash)
from .release import ensure_tools_on_path, nbgrader_config
from .sandbox import UNSANDBOXED_WARNING, Limits, make_spec, matplotlib_cache, probe

log = logging.getLogger("autograder")


# ---------------------------------------------------------------------------------------------
# The worker: one submission, one private course
# ---------------------------------------------------------------------------------------------
def autograde_config(root: Path, spec_json: str, limits: Limits, capture: dict, user_config: dict | None = None):
    """nbgrader Config of a worker's private course: the course's own nbgrader settings, with
    the paths of the private course and nbgrader's autograde pipeline with Execute replaced by
    SandboxedExecute."""
    from traitlets.config import Config
    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, IgnorePattern,
                                        LimitOutput, SaveAutoGrades)

    from .sandbox import SandboxedExecute

    c = Config(user_config or {})
    c.merge(nbgrader_config(root))
    (root / "exchange").mkdir(exist_ok=True)
    c.Autograde.autograde_preprocessors = [SandboxedExecute, IgnorePattern, ClearMetadataPreprocessor,
                                           LimitOutput, SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
    c.SandboxedExecute.sandbox_spec = spec_json
    c.SandboxedExecute.timeout = limits.cell_timeout
    c.SandboxedExecute.startup_timeout = limits.startup_timeout
    c.SandboxedExecute.notebook_timeout = limits.notebook_timeout
    c.SandboxedExecute.capture = json.dumps(capture)
    c.SandboxedExecute.shutdown_kernel = "immediate"   # the sandbox is thrown away anyway
    return c


_FAST_SQLITE = False


def _fast_private_gradebooks() -> None:
    """In a worker every gradebook is a private throw-away copy: skip fsync on its ~50 commits."""
    global _FAST_SQLITE
    if _FAST_SQLITE:
        return
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    @event.listens_for(Engine, "connect")
    def _pragmas(dbapi_connection, _record):
        cur = dbapi_connection.cursor()
        cur.execute("PRAGMA synchronous=OFF")
        cur.execute("PRAGMA journal_mode=MEMORY")
        cur.close()

    _FAST_SQLITE = True


def read_submission(db_url: str, assignment: str, student: str) -> dict | None:
    """A student's submission in a gradebook as plain data."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url) as gb:
        try:
            sub = gb.find_submission(assignment, student)
        except MissingEntry:
            return None
        data = {"timestamp": sub.timestamp.isoformat() if sub.timestamp else None, "notebooks": {}}
        for nb in sub.notebooks:
            data["notebooks"][nb.name] = {
                "late_submission_penalty": nb.late_submission_penalty,
                "grades": {g.name: {"auto_score": g.auto_score, "manual_score": g.manual_score,
                                    "needs_manual_grade": g.needs_manual_grade, "max_score": g.max_score}
                           for g in nb.grades},
                "comments": {c.name: {"auto_comment": c.auto_comment} for c in nb.comments},
            }
        return data


def capture_map(course: Course, assignment: str) -> dict:
    """{answer cell grade_id: [its answer variables]} over the assignment's notebooks."""
    return {cell.grade_id: cell.variables for nb in course.notebooks(assignment)
            for cell in answer_cells(course.source / assignment / f"{nb}.ipynb") if cell.variables}


def grade_one(job: dict) -> dict:
    """Autograde one submission (runs in a worker process)."""
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI

    t0 = time.monotonic()
    _fast_private_gradebooks()
    a, student = job["assignment"], job["student"]
    base = Path(job["work"]) / "students" / student
    if base.exists():
        shutil.rmtree(base)
    root = base / "course"
    (root / "submitted" / student).mkdir(parents=True)
    shutil.copy(job["template_db"], root / "gradebook.db")
    shutil.copytree(job["extras"], root / "source" / a)
    shutil.copytree(job["submitted"], root / "submitted" / student / a, symlinks=False)
    out = {"student": student, "success": False, "log": "", "error": "", "data": None,
           "autograded": None, "seconds": 0.0, "stopped": {}}
    try:
        if job.get("student_record") or job.get("extension"):
            with Gradebook("sqlite:///" + str(root / "gradebook.db")) as gb:
                gb.update_or_create_student(student, **(job.get("student_record") or {}))
                if job.get("extension"):
                    from nbgrader.utils import parse_utc

                    gb.add_submission(a, student, extension=parse_utc(job["extension"]))
        limits = Limits(**job["limits"])
        spec = make_spec(base / "sandbox", a, Path(job["submitted"]), Path(job["extras"]), limits,
                         job["sandbox"], tuple(job["packages"]))
        api = NbGraderAPI(config=autograde_config(root, spec.to_json(), limits, job["capture"], job.get("user_config")))
        api.log.setLevel(logging.WARNING)
        result = api.autograde(a, student, force=True, create=True)
        out["success"] = bool(result.get("success"))
        out["log"] = result.get("log", "") or ""
        out["error"] = result.get("error", "") or ""
        out["data"] = read_submission("sqlite:///" + str(root / "gradebook.db"), a, student)
        dest = root / "autograded" / student / a
        if out["success"] and dest.is_dir():
            out["autograded"] = str(dest)
            import nbformat

            for p in dest.glob("*.ipynb"):
                meta = nbformat.read(str(p), as_version=4).metadata.get("autograder", {})
                if meta.get("stopped"):
                    out["stopped"][p.stem] = meta["stopped"]
    except Exception:
        out["error"] = traceback.format_exc()
    klog = base / "sandbox" / "kernel.log"
    if not out["success"] and klog.is_file():
        out["error"] += "\n--- kernel output (last 3000 characters) ---\n" + klog.read_text(errors="replace")[-3000:]
    out["seconds"] = time.monotonic() - t0
    return out


# ---------------------------------------------------------------------------------------------
# Merge into the course gradebook: one transaction per student
# ---------------------------------------------------------------------------------------------
def _add_submission(db, assignment, student) -> None:
    """nbgrader's Gradebook.add_submission without its commit: the new submission mirrors the
    assignment (a Grade per grade cell, a Comment per solution cell), flushed but uncommitted."""
    from nbgrader.api import Comment, Grade, SubmittedAssignment, SubmittedNotebook

    with db.no_autoflush:
        sub = SubmittedAssignment(assignment=assignment, student=student)
        for notebook in assignment.notebooks:
            nb = SubmittedNotebook(notebook=notebook, assignment=sub)
            for cell in notebook.grade_cells:
                Grade(cell_id=cell.id, notebook=nb)
            for cell in notebook.solution_cells:
                Comment(cell_id=cell.id, notebook=nb)
            for cell in notebook.task_cells:
                Comment(cell_id=cell.id, notebook=nb)
                Grade(cell_id=cell.id, notebook=nb)
        db.add(sub)
    db.flush()
    db.expire_all()    # so that the new rows load their relationships (a Grade's cell, its name)


def merge_submission(db_url: str, assignment: str, student: str, data: dict) -> None:
    from nbgrader import utils
    from nbgrader.api import Gradebook, MissingEntry, Student

    with Gradebook(db_url) as gb:
        db = gb.db
        try:
            try:
                st = gb.find_student(student)
            except MissingEntry:
                st = Student(id=student)
                db.add(st)
            try:
                sub = gb.find_submission(assignment, student)
            except MissingEntry:
                _add_submission(db, gb.find_assignment(assignment), st)
                sub = gb.find_submission(assignment, student)
            if data.get("timestamp"):
                sub.timestamp = utils.parse_utc(data["timestamp"])
            for nb in sub.notebooks:
                new = data["notebooks"].get(nb.name)
                if new is None:
                    continue
                for g in nb.grades:
                    ng = new["grades"].get(g.name)
                    if ng is None:
                        continue
                    g.auto_score = ng["auto_score"]
                    # nbgrader: flag for review when there is no auto score or a manual one exists
                    g.needs_manual_grade = bool(g.auto_score is None or g.manual_score is not None)
                for c in nb.comments:
                    nc = new["comments"].get(c.name)
                    if nc is not None:
                        c.auto_comment = nc["auto_comment"]
                nb.late_submission_penalty = new["late_submission_penalty"]
            db.commit()
        except BaseException:
            db.rollback()
            raise


def _write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------
@dataclass
class GradeSummary:
    assignment: str
    graded: list
    skipped: list
    failed: dict
    stopped: dict
    sandboxed: bool
    sandbox_reason: str
    seconds: float
    jobs: int


class Progress:
    def __init__(self, total: int, label: str, stream=None):
        self.total, self.done, self.label, self.t0 = total, 0, label, time.monotonic()
        self.stream = stream or sys.stderr
        self.tty = getattr(self.stream, "isatty", lambda: False)()

    def step(self, note: str = "") -> None:
        self.done += 1
        elapsed = time.monotonic() - self.t0
        eta = elapsed / self.done * (self.total - self.done) if self.done else 0
        width = 30
        fill = int(width * self.done / max(1, self.total))
        line = (f"{self.label} [{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} "
                f"{elapsed:5.1f}s eta {eta:4.0f}s {note}")
        if self.tty:
            self.stream.write("\r" + line[:150].ljust(150))
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def _fingerprint(course: Course, assignment: str, student: str, sandboxed: bool) -> str:
    import hashlib

    h = hashlib.sha256()
    # not the limits: rerunning with another --timeout does not regrade everything (use --force)
    for part in (__version__, tree_hash(course.source / assignment),
                 tree_hash(course.submitted / student / assignment), str(sandboxed)):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def _up_to_date(course: Course, assignment: str, student: str, fp: str) -> bool:
    from nbgrader.api import Gradebook, MissingEntry

    state = course.state / assignment / f"{student}.json"
    if not state.is_file() or not (course.autograded / student / assignment).is_dir():
        return False
    try:
        if json.loads(state.read_text()).get("fingerprint") != fp:
            return False
    except ValueError:
        return False
    with Gradebook(course.db_url) as gb:
        try:
            gb.find_submission(assignment, student)
        except MissingEntry:
            return False
    return True


def grade(course: Course, assignment: str, *, students: list[str] | None = None, jobs: int | None = None,
          limits: Limits | None = None, force: bool = False, sandbox: bool | None = None,
          packages=("course_lib",), progress: bool = True, stream=None) -> GradeSummary:
    """Autograde the submissions of `assignment` found in course.submitted."""
    from nbgrader.api import Gradebook, MissingEntry

    stream = stream or sys.stderr
    t0 = time.monotonic()
    limits = limits or Limits()
    jobs = jobs or default_jobs()
    ensure_tools_on_path()
    ensure_assignment(course, assignment)

    works, reason = probe()
    if sandbox is None:
        sandbox = works
    elif sandbox and not works:
        raise SystemExit(f"the sandbox was required but does not work here: {reason}")
    if not sandbox:
        msg = UNSANDBOXED_WARNING.format(reason=reason if not works else "disabled by --no-sandbox")
        log.warning(msg)
        print(msg, file=stream, flush=True)

    all_students = course.students(assignment)
    wanted = [s for s in all_students if students is None or s in students]
    todo, skipped = [], []
    fps = {}
    for s in wanted:
        fps[s] = _fingerprint(course, assignment, s, sandbox)
        if not force and _up_to_date(course, assignment, s, fps[s]):
            skipped.append(s)
        else:
            todo.append(s)
    summary = GradeSummary(assignment, [], skipped, {}, {}, sandbox, reason, 0.0, jobs)
    if not todo:
        summary.seconds = time.monotonic() - t0
        return summary

    capture = capture_map(course, assignment)
    matplotlib_cache()   # warm once, before the workers fork
    work = Path(tempfile.mkdtemp(prefix="autograder-grade-"))
    try:
        template = template_gradebook(course, work / "template.db")
        extras = source_extras(course, assignment, work / "extras")
        records, extensions = {}, {}
        with Gradebook(course.db_url) as gb:
            for s in todo:
                try:
                    st = gb.find_student(s)
                    records[s] = {k: getattr(st, k) for k in ("first_name", "last_name", "email", "lms_user_id")
                                  if getattr(st, k) is not None}
                except MissingEntry:
                    pass
                try:
                    ext = gb.find_submission(assignment, s).extension
                    if ext is not None:
                        extensions[s] = ext.isoformat()
                except MissingEntry:
                    pass
        job_base = {"assignment": assignment, "work": str(work), "template_db": str(template),
                    "extras": str(extras), "limits": asdict(limits), "sandbox": sandbox,
                    "packages": list(packages), "capture": capture, "user_config": course.user_config()}
        bar = Progress(len(todo), f"grading {assignment}", stream) if progress else None
        ctx = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
        with ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=ctx) as pool:
            futures = {pool.submit(grade_one, {**job_base, "student": s,
                                               "submitted": str(course.submitted / s / assignment),
                                               "student_record": records.get(s),
                                               "extension": extensions.get(s)}): s for s in todo}
            try:
                for fut in as_completed(futures):
                    s = futures[fut]
                    try:
                        res = fut.result()
                    except Exception:
                        res = {"student": s, "success": False, "data": None, "autograded": None,
                               "error": traceback.format_exc(), "log": "", "seconds": 0.0, "stopped": {}}
                    _finish(course, assignment, res, fps[s], sandbox, summary)
                    if bar:
                        bar.step(s + ("" if res["success"] else " FAILED"))
            except KeyboardInterrupt:
                for f in futures:
                    f.cancel()
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary.seconds = time.monotonic() - t0
    return summary


def _finish(course: Course, assignment: str, res: dict, fp: str, sandboxed: bool, summary: GradeSummary) -> None:
    s = res["student"]
    logs = course.state / assignment / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / f"{s}.log").write_text((res.get("log") or "") + ("\n" + res["error"] if res.get("error") else ""))
    if res.get("data"):
        merge_submission(course.db_url, assignment, s, res["data"])
    dest = course.autograded / s / assignment
    if res["success"] and res.get("autograded"):
        replace_dir(Path(res["autograded"]), dest)
        _write_json(course.state / assignment / f"{s}.json",
                    {"fingerprint": fp, "graded_at": dt.datetime.now(dt.timezone.utc).isoformat(),
                     "sandboxed": sandboxed, "seconds": round(res["seconds"], 2), "stopped": res["stopped"]})
        summary.graded.append(s)
        if res["stopped"]:
            summary.stopped[s] = res["stopped"]
    else:
        # as nbgrader does: no autograded copy of a failed submission; it is retried next run
        if dest.exists():
            shutil.rmtree(dest)
        (course.state / assignment / f"{s}.json").unlink(missing_ok=True)
        err = (res.get("error") or "").strip().splitlines()
        summary.failed[s] = err[-1] if err else "autograde failed (see the log)"


# ---------------------------------------------------------------------------------------------
# Scores out of the gradebook
# ---------------------------------------------------------------------------------------------
def scores(course: Course, assignment: str) -> dict[str, dict[str, float]]:
    """{student: {notebook: score, ...}} for the submissions of `assignment` in the gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    out = {}
    with Gradebook(course.db_url) as gb:
        try:
            a = gb.find_assignment(assignment)
        except MissingEntry:
            return {}
        for sub in a.submissions:
            out[sub.student.id] = {nb.name: nb.score for nb in sub.notebooks}
    return out


def cell_scores(db_url: str, assignment: str) -> dict[str, dict[str, float | None]]:
    """{student: {"notebook/grade_id": auto_score}}: every test cell's auto score."""
    from nbgrader.api import Gradebook, MissingEntry

    out = {}
    with Gradebook(db_url) as gb:
        try:
            a = gb.find_assignment(assignment)
        except MissingEntry:
            return {}
        for sub in a.submissions:
            out[sub.student.id] = {f"{nb.name}/{g.name}": g.auto_score for nb in sub.notebooks for g in nb.grades}
    return out


def write_grades_csv(course: Course, assignment: str, path: Path) -> Path:
    """One row per student of this assignment: a column per notebook, the total and the maximum."""
    from nbgrader.api import Gradebook

    nbs = course.notebooks(assignment)
    sc = scores(course, assignment)
    with Gradebook(course.db_url) as gb:
        a = gb.find_assignment(assignment)
        maxes = {nb.name: nb.max_score for nb in a.notebooks}
        penalties = {sub.student.id: sum(nb.late_submission_penalty or 0 for nb in sub.notebooks)
                     for sub in a.submissions}
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student_id"] + nbs + ["late_penalty", "total", "max_score"])
        for s in sorted(sc):
            row = [sc[s].get(nb, 0.0) for nb in nbs]
            total = sum(row) - penalties.get(s, 0.0)
            w.writerow([s] + [_fmt(x) for x in row] + [_fmt(penalties.get(s, 0.0)), _fmt(total),
                                                      _fmt(sum(maxes.get(nb, 0) for nb in nbs))])
    return path


def _fmt(x: float) -> str:
    return f"{x:g}"
