"""`grade`: autograde every submission of an assignment, in parallel, sandboxed, tamper-proof.

1. Preflight: the instructor's solution goes through exactly the path every submission takes
   (sandbox, limits, kernel, the course_lib the kernel imports, the clean re-verification). It
   must earn every autograded point, or grading stops (exit != 0) with the cause and no student's
   score changes. Its per-cell times set the per-cell time limits: max(10 s, 20 x the solution's
   time for that cell), unless --timeout is given.
2. Each submission is autograded by nbgrader's own Autograde converter (Python API, in-process)
   in a worker process, inside a private temporary course: a copy of the gradebook without any
   student data, the student's submitted files (a byte-order mark removed, stripped nbgrader
   metadata put back: autograder.repair), and the assignment's non-notebook files. Its kernel
   runs in the sandbox (autograder.sandbox), hidden tests last (so every other output is safe to
   show in feedback); the answers are recorded right after each answer cell ran.
3. Every test cell is re-verified in a clean process from those records (autograder.verify):
   that verdict is the score; a disagreement with the kernel is reported to the instructor.
4. The parent merges the scores into the course gradebook one student at a time, each in a
   single transaction (a crash leaves every student either fully merged or untouched), and
   moves the autograded notebook into autograded/<student>/<assignment>/.

A submission that cannot be graded is a failure, never a zero: nothing is merged, the cause is
printed and kept (autograded/.autograder/<assignment>/<student>.json) for `export` and `report`.

Merging follows nbgrader's own rules, so the gradebook ends up as serial `nbgrader autograde`
leaves it: auto scores and comments replaced, manual scores kept (a cell that has one is flagged
for review again), late penalties computed from the due date and any extension.

Re-running is idempotent: a submission whose files, the assignment's sources, the grader's
version, course_lib and the sandbox state have not changed since it was last graded is skipped
(--force regrades; a change of limits alone does not trigger regrading).
"""
from __future__ import annotations

import contextlib
import csv
import datetime as dt
import json
import logging
import multiprocessing
import os
import shutil
import signal
import sys
import threading
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

from course_lib.question_ids import cell_id, is_graded, is_solution

from . import __version__
from .course import Course, default_jobs, ensure_assignment, replace_dir, source_extras, template_gradebook, tree_hash
from .release import ensure_tools_on_path, nbgrader_config
from .rundir import RunDir, clean_stale
from .safefiles import copy_tree
from .sandbox import (INSTALL_HELP, RECORDER_REPLACED, UNSANDBOXED_WARNING, Limits, die_with_parent, grader_package,
                      make_spec, matplotlib_cache, missing_packages, package_dirs, probe, sanitize_markdown)
from . import csvsafe, predictions, variants, verify
from . import ledger as hub_ledger

log = logging.getLogger("autograder")

SOLUTION = "(solution)"          # the preflight's student id: not a valid collected student id
MIN_CELL_TIMEOUT = 10            # seconds: the floor of a derived per-cell limit
CELL_TIMEOUT_FACTOR = 20         # x the solution's time for that cell
PREFLIGHT_CELL_TIMEOUT = 120     # seconds per cell while the solution runs (nothing known yet)
PARSE_SECONDS = 60               # reading what a submission supplies outside the sandbox (its prediction record)


@contextlib.contextmanager
def time_limit(seconds: int, what: str):
    """Raise TimeoutError when the block runs longer than `seconds` (in a worker's main thread:
    a hostile file fails its own student, never stalls the class). Elsewhere: no limit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(*_):
        raise TimeoutError(f"{what} took longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class GradingRefused(SystemExit):
    """Grading did not start (no sandbox, a failed preflight); no score was changed."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


# ---------------------------------------------------------------------------------------------
# The worker: one submission, one private course
# ---------------------------------------------------------------------------------------------
def autograde_config(root: Path, spec_json: str, job: dict, user_config: dict | None = None):
    """nbgrader Config of a worker's private course: the course's own nbgrader settings, with
    the paths of the private course and nbgrader's autograde pipeline with Execute replaced by
    SandboxedExecute."""
    from traitlets.config import Config
    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.preprocessors import AssignLatePenalties, IgnorePattern, LimitOutput, SaveAutoGrades

    from .sandbox import SandboxedExecute

    limits = Limits(**job["limits"])
    c = Config(user_config or {})
    c.merge(nbgrader_config(root))
    (root / "exchange").mkdir(exist_ok=True)
    # nbgrader's list without its final CheckCellMetadata: the sanitizing step before execution
    # has validated the metadata already, and execution does not change it (0.2 s a submission)
    c.Autograde.autograde_preprocessors = [SandboxedExecute, IgnorePattern, ClearMetadataPreprocessor,
                                           LimitOutput, SaveAutoGrades, AssignLatePenalties]
    c.SandboxedExecute.sandbox_spec = spec_json
    c.SandboxedExecute.timeout = limits.cell_timeout
    c.SandboxedExecute.startup_timeout = limits.startup_timeout
    c.SandboxedExecute.notebook_timeout = limits.notebook_timeout
    c.SandboxedExecute.capture = json.dumps(job["capture"])
    c.SandboxedExecute.recorder = job.get("recorder") or ""
    c.SandboxedExecute.deferred = json.dumps(job["hidden"])
    c.SandboxedExecute.cell_timeouts = json.dumps(job.get("cell_timeouts") or {})
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


def _failure_cause(log_text: str, error: str) -> str:
    """One line saying why nbgrader failed, from its log and the error (not "see the above
    traceback")."""
    import re

    lines = [l.strip() for l in (log_text + "\n" + error).splitlines() if l.strip()]
    for pat in (r"^(?:[\w.]+\.)?\w*(?:Error|Exception): .+", r"^\[\w+\] .*(?:ERROR|error).*"):
        hits = [l for l in lines if re.match(pat, l) and "the above traceback" not in l
                and "NbGraderException" not in l]
        if hits:
            return hits[-1][:300]
    return (lines[-1] if lines else "autograde failed (see the log)")[:300]


def _prediction_decisions(nb, tests: list, record, no_record: str = "final") -> None:
    """Which answer each graded question is graded on (autograder.predictions), into the
    notebook's metadata, where verify.grading_values reads it."""
    questions = predictions.question_cells(tests)
    if not questions or record is None:
        return
    meta = nb.metadata.setdefault("autograder", {})
    answers = meta.get("answers", {}) or {}
    decisions = {}
    for q, cells in questions.items():
        entries = {n: (answers.get(cell) or {}).get(n, {"missing": True}) for n, cell in cells.items()}
        decisions[q] = predictions.decide(record, q, list(cells), entries, no_record).to_json()
    meta["predictions"] = {"source": record.source, "problems": record.problems, "questions": decisions}


def _apply_clean_verdicts(root: Path, a: str, student: str, dest: Path, job: dict,
                          spec_args: tuple, records: dict) -> tuple[dict, list, dict]:
    """Re-verify every test in a clean process; the clean verdicts become the scores in the
    private gradebook and go into each notebook's metadata. Returns (verdicts, disagreements,
    the autograded notebooks)."""
    import nbformat.v4
    from nbgrader.api import Gradebook

    tests = verify.from_json(job["tests"])
    notebooks = {}
    for p in sorted(dest.glob("*.ipynb")):
        # nbgrader has just written and validated these: read and write without validating again
        notebooks[p.stem] = nbformat.v4.reads(p.read_text())
    for nb_name, nb in notebooks.items():
        _prediction_decisions(nb, tests.get(nb_name, []), records.get(nb_name), job.get("no_record") or "final")
    jobs = verify.verification_jobs(tests, notebooks, variants.student_truth(job.get("truth"), job.get("variant_key")))
    vbase = Path(job["work"]) / "v" / str(os.getpid())     # this worker's clean process, reused
    limits, sandbox, packages = spec_args[0], spec_args[1], spec_args[2]
    results = verify.run_clean(jobs, lambda: make_spec(vbase, a, None, None, *spec_args),
                               key=f"{sandbox}:{limits.memory_mb}:{limits.tasks}:{packages}",
                               log_file=Path(job["work"]) / "v" / f"{os.getpid()}.log",
                               env=variants.kernel_env(job.get("variant_key", ""), student))
    verdicts, flags = {}, []
    gb_url = "sqlite:///" + str(root / "gradebook.db")
    with Gradebook(gb_url) as gb:
        for nb_name, cells in tests.items():
            nb = notebooks.get(nb_name)
            if nb is None:
                continue
            by_gid = {cell_id(c) or None: c for c in nb.cells}
            mine = {}
            for t in cells:
                key = f"{nb_name}/{t.grade_id}"
                if key not in results:
                    continue
                r = results[key]
                g = gb.find_grade(t.grade_id, nb_name, a, student)
                kernel_score = g.auto_score
                g.auto_score = r["score"]
                g.needs_manual_grade = False
                cell = by_gid.get(t.grade_id)
                ran = verify.kernel_passed(cell) if cell is not None else None
                v = {"passed": r["passed"], "score": r["score"], "points": t.points, "message": r["message"],
                     "label": r["label"], "ename": r["ename"], "hidden": t.hidden, "kernel_score": kernel_score,
                     "kernel_ran": ran is not None}
                per = {n: results[f"{key}|{n}"] for n in t.names if f"{key}|{n}" in results}
                if per:
                    v["per_variable"] = {n: {"passed": x["passed"], "message": x["message"], "label": x["label"]}
                                         for n, x in per.items()}
                if f"{key}|committed" in results:    # the prediction as committed, for the report
                    c = results[f"{key}|committed"]
                    v["committed"] = {"passed": c["passed"], "message": c["message"], "label": c["label"]}
                mine[t.grade_id] = v
                # the kernel ran the final answers: compare it with their clean verdict
                same_values = results.get(f"{key}|final", r)
                if ran is not None and (kernel_score or 0.0) != same_values["score"]:
                    flags.append({"notebook": nb_name, "cell": t.grade_id, "kernel": kernel_score,
                                  "clean": same_values["score"], "message": same_values["message"]})
            verdicts[nb_name] = mine
            nb.metadata.setdefault("autograder", {})["verdicts"] = mine
            sanitize_markdown(nb.cells)     # the formgrader shows this notebook: nothing in it may run
            path = dest / f"{nb_name}.ipynb"
            mode = path.stat().st_mode
            path.chmod(mode | 0o200)      # nbgrader leaves autograded notebooks read-only (444)
            path.write_text(nbformat.v4.writes(nb))
            path.chmod(mode)
        gb.db.commit()
    _late_penalties(root, a, student, list(notebooks), job)
    return verdicts, flags, notebooks


def _late_penalties(root: Path, a: str, student: str, notebooks: list, job: dict) -> None:
    """nbgrader's late penalty again, now on the clean scores."""
    from nbformat.v4 import new_notebook
    from nbgrader.preprocessors import AssignLatePenalties

    cfg = autograde_config(root, "{}", job, job.get("user_config"))
    pp = AssignLatePenalties(config=cfg)
    for nb in notebooks:
        pp.preprocess(new_notebook(), {"nbgrader": {"notebook": nb, "assignment": a, "student": student,
                                                    "db_url": "sqlite:///" + str(root / "gradebook.db")}})


def _worker_init(parent: int) -> None:
    import warnings

    from sqlalchemy.exc import SAWarning

    die_with_parent(parent)
    verify.forget_verifiers()
    # nbgrader 0.9's gradebook code trips SQLAlchemy 2's session warnings by the hundred: harmless
    # and not free (a formatted warning per flush)
    warnings.filterwarnings("ignore", category=SAWarning)


def _prediction_records(submitted: Path, tests: dict) -> dict:
    """{notebook: autograder.predictions.Record} read from the submission as handed in (its
    record file and the receipts in its outputs, which nbgrader clears before it executes)."""
    stamp = submitted / "timestamp.txt"
    at = stamp.read_text(errors="replace").strip() if stamp.is_file() else None
    return {nb: predictions.read_record(submitted, nb, predictions.questions_of(cells), at)
            for nb, cells in tests.items() if predictions.prediction_questions(cells)}


def grade_one(job: dict) -> dict:
    """Autograde one submission (runs in a worker process)."""
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI

    from .repair import Unrepairable, fix_file

    t0 = time.monotonic()
    _fast_private_gradebooks()
    a, student = job["assignment"], job["student"]
    work = Path(job["work"])
    base = work / "s" / str(job.get("slot") or student)   # short: unix socket paths are limited
    if base.exists():
        shutil.rmtree(base)
    root = base / "course"
    (root / "submitted" / student).mkdir(parents=True)
    os.chmod(root, 0o700)       # the private gradebook, the hidden tests: never for the kernel's uid
    shutil.copy(job["template_db"], root / "gradebook.db")
    shutil.copytree(job["extras"], root / "source" / a)
    out = {"student": student, "success": False, "log": "", "error": "", "cause": "", "data": None,
           "autograded": None, "seconds": 0.0, "stopped": {}, "notes": [], "flags": [], "verdicts": {},
           "predictions": [], "flag_reasons": {}, "warnings": [], "recorder": "",
           "answers": {}, "timings": {}}
    # regular files only, opened without following links (a link to /etc/shadow or the solution
    # is refused and reported, never read): everything later reads this copy
    mine = root / "submitted" / student / a
    for rel, why in copy_tree(job["submitted"], mine):
        out["warnings"].append(f"{rel}: {why}")
    try:
        for p in sorted((root / "submitted" / student / a).glob("*.ipynb")):
            try:
                out["notes"] += [f"{p.stem}: {n}" for n in fix_file(p, Path(job["release"]) / a / p.name,
                                                                   job["capture"])]
            except Unrepairable as e:
                raise Unrepairable(f"{p.name}: {e}") from None
        if job.get("student_record") or job.get("extension"):
            with Gradebook("sqlite:///" + str(root / "gradebook.db")) as gb:
                gb.update_or_create_student(student, **(job.get("student_record") or {}))
                if job.get("extension"):
                    from nbgrader.utils import parse_utc

                    gb.add_submission(a, student, extension=parse_utc(job["extension"]))
        tests = verify.from_json(job["tests"])
        with time_limit(PARSE_SECONDS, "reading the prediction record handed in"):
            records = _prediction_records(mine, tests)
            hub_ledger.apply(out, records, tests, job.get("ledger"))     # --ledger: the hub's copy
        expected = variants.assigned(job.get("variant_key", ""), job.get("variant_questions") or [])
        out["variant"] = expected
        out["predictions"] += variants.mismatches(records, expected)
        limits = Limits(**job["limits"])
        spec_args = (limits, job["sandbox"], tuple(job["packages"]), work)
        spec = make_spec(base / "k", a, root / "submitted" / student / a, Path(job["extras"]), *spec_args)
        spec.env.update(variants.kernel_env(job.get("variant_key", ""), student))   # the student's numbers
        api = NbGraderAPI(config=autograde_config(root, spec.to_json(), job, job.get("user_config")))
        api.log.setLevel(logging.WARNING)
        result = api.autograde(a, student, force=True, create=True)
        out["log"] = result.get("log", "") or ""
        out["error"] = result.get("error", "") or ""
        dest = root / "autograded" / student / a
        if result.get("success") and dest.is_dir():
            out["verdicts"], out["flags"], books = _apply_clean_verdicts(root, a, student, dest, job, spec_args,
                                                                         records)
            for f in out["flags"]:
                out["flag_reasons"].setdefault(f["notebook"], []).append(
                    f"{f['cell']}: the kernel's verdict differs from the re-verification (check for tampering)")
            for name, book in books.items():
                meta = book.metadata.get("autograder", {})
                lines = predictions.summarize(meta)
                out["predictions"] += [f"{name}: {line}" for line in lines]
                if lines:
                    out["flag_reasons"].setdefault(name, []).extend(lines)
                out["answers"][name] = meta.get("answers", {})
                out["timings"][name] = meta.get("timings", {})
                out["recorder"] = out["recorder"] or meta.get("recorder", "")
                if meta.get("recorder_replaced"):
                    out["warnings"].append(f"{name}: {RECORDER_REPLACED}: the answers recorded after that failed "
                                           "their tests")
                if meta.get("stopped"):
                    out["stopped"][name] = meta["stopped"]
            out["data"] = read_submission("sqlite:///" + str(root / "gradebook.db"), a, student)
            out["autograded"] = str(dest)
            out["success"] = True
        else:
            out["cause"] = _failure_cause(out["log"], out["error"])
    except Unrepairable as e:
        out["cause"] = f"cannot be graded: {e}"
        out["error"] = str(e)
    except verify.VerifyError as e:
        out["cause"] = str(e)
        out["error"] = traceback.format_exc()
    except Exception as e:
        out["error"] = traceback.format_exc()
        out["cause"] = f"{type(e).__name__}: {e}"[:300]
    from .sandbox import close_socket_dirs

    close_socket_dirs()
    klog = base / "k" / "kernel.log"
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


def flag_submission(db_url: str, assignment: str, student: str, reasons: dict) -> None:
    """Set nbgrader's flag (the Formgrader's "Flagged?") on each notebook of the student's
    submission that `reasons` names ({notebook: [why, ...]}; "*" for every notebook). A flag is
    never cleared here: an instructor unflags in the Formgrader after looking."""
    from nbgrader.api import Gradebook, MissingEntry

    if not reasons:
        return
    with Gradebook(db_url) as gb:
        try:
            sub = gb.find_submission(assignment, student)
        except MissingEntry:
            return
        for nb in sub.notebooks:
            if reasons.get(nb.name) or reasons.get("*"):
                nb.flagged = True
        gb.db.commit()


def flag_reasons(course: Course, assignment: str, student: str) -> list[str]:
    """Why the last grading flagged this submission: "notebook: why" lines (a failure, a
    disagreement with the re-verification, a prediction record missing or edited, a prediction
    changed after its reveal); empty when nothing did."""
    st = grading_status(course, assignment, student)
    if st.get("status") == "failed":
        return [f"grading failed: {st.get('cause', 'failed')}"]
    return [f"{nb}: {why}" for nb, whys in sorted((st.get("flags") or {}).items()) for why in whys]


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
    notes: dict = field(default_factory=dict)      # student -> [what was repaired]
    predictions: dict = field(default_factory=dict)  # student -> [prediction record findings]
    flags: dict = field(default_factory=dict)      # student -> [kernel and clean verdicts disagree]
    warnings: dict = field(default_factory=dict)   # student -> [refused files, a replaced recorder]
    preflight_seconds: float = 0.0
    cell_timeouts: dict = field(default_factory=dict)
    preflight_reused: bool = False                 # the last run's preflight matched (no --force)


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



def _fingerprint(course: Course, assignment: str, student: str, sandboxed: bool, packages: list,
                 no_record: str = "final") -> str:
    import hashlib

    h = hashlib.sha256()
    # not the limits: rerunning with another --timeout does not regrade everything (use --force);
    # course_lib (the copy the kernel imports) is: the hidden tests' truth comes from it; and
    # another --no-record policy is (the default adds nothing, so earlier fingerprints hold)
    for part in (__version__, tree_hash(course.source / assignment),
                 tree_hash(course.submitted / student / assignment), str(sandboxed),
                 *[tree_hash(Path(p)) for p in packages], *([f"no-record={no_record}"] if no_record != "final" else [])):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def status_path(course: Course, assignment: str, student: str) -> Path:
    return course.state / assignment / f"{student}.json"


def grading_status(course: Course, assignment: str, student: str) -> dict:
    """What the last run did with this submission: {"status": "graded"|"failed", ...} or {}."""
    p = status_path(course, assignment, student)
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return {}


def failed_students(course: Course, assignment: str) -> dict[str, str]:
    """{student: cause} of the submissions whose last grading failed."""
    d = course.state / assignment
    out = {}
    for p in sorted(d.glob("*.json")) if d.is_dir() else []:
        if p.name.startswith(("_", ".")):   # _preflight.json: not a student (ids start alphanumeric)
            continue
        try:
            st = json.loads(p.read_text())
        except ValueError:
            continue
        if st.get("status") == "failed":
            out[p.stem] = st.get("cause", "failed")
    return out


def _up_to_date(course: Course, assignment: str, student: str, fp: str) -> bool:
    from nbgrader.api import Gradebook, MissingEntry

    st = grading_status(course, assignment, student)
    if st.get("status", "graded") != "graded" or st.get("fingerprint") != fp \
            or not (course.autograded / student / assignment).is_dir():
        return False
    with Gradebook(course.db_url) as gb:
        try:
            gb.find_submission(assignment, student)
        except MissingEntry:
            return False
    return True


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


def _job_base(course: Course, assignment: str, run: Path, plan: dict, limits: Limits, sandbox: bool,
              packages, release: Path) -> dict:
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
    if not res["success"]:
        cause = res["cause"]
        if "No module named" in cause or "cannot import" in cause:
            cause = f"the {'sandboxed ' if sandbox else ''}kernel cannot import course_lib from {where}: {cause}"
        raise GradingRefused(f"{assignment}: the instructor's solution could not be graded, so no student was: "
                             f"{cause}\n(details, from the log:\n{res['log'][-3000:]}\n{res['error'][-1500:]})")
    lost = []
    for nb, d in res["data"]["notebooks"].items():
        for gid, g in d["grades"].items():
            if g["auto_score"] is not None and g["max_score"] and g["auto_score"] < g["max_score"] \
                    and gid not in _manual_cells(course, assignment, nb):
                v = res["verdicts"].get(nb, {}).get(gid, {})
                lost.append(f"{nb}/{gid}: {g['auto_score']:g} of {g['max_score']:g}"
                            + (f" ({v.get('ename')}: {v.get('message')})" if v else ""))
    for f in res["flags"]:
        lost.append(f"{f['notebook']}/{f['cell']}: the kernel gave {f['kernel']}, the clean re-verification {f['clean']}")
    if lost:
        cause = _preflight_cause(res, packages, sandbox)
        raise GradingRefused(f"{assignment}: the instructor's solution does not earn every autograded point, so no "
                             f"student was graded{': ' + cause if cause else ''}\n  " + "\n  ".join(lost))
    record = {"key": preflight_key(course, assignment, sandbox, packages), "limits": job_base["limits"],
              "seconds": round(time.monotonic() - t0, 2), "recorder": res.get("recorder", ""),
              "notebooks": {nb: {"answers": res["answers"].get(nb, {}), "timings": res["timings"].get(nb, {}),
                                 "verdicts": res["verdicts"].get(nb, {}),
                                 "scores": {g: [v["auto_score"], v["max_score"]] for g, v in d["grades"].items()}}
                            for nb, d in res["data"]["notebooks"].items()}}
    _write_json(course.state / assignment / "_preflight.json", record)
    shutil.rmtree(run / "s" / "p", ignore_errors=True)
    shutil.rmtree(sub, ignore_errors=True)
    return record


def _manual_cells(course: Course, assignment: str, nb: str) -> set:
    import nbformat

    book = nbformat.read(str(course.source / assignment / f"{nb}.ipynb"), as_version=4)
    return {cell_id(c) for c in book.cells if is_graded(c) and is_solution(c)}


def _preflight_cause(res: dict, packages, sandbox: bool) -> str:
    """The likely cause of a solution losing points, from its failures."""
    msgs = [v.get("message", "") or "" for nb in res["verdicts"].values() for v in nb.values() if not v.get("passed")]
    for m in msgs:
        if "No module named" in m or "could not be recorded" in m or "cannot import" in m:
            where = ", ".join(package_dirs(tuple(packages), site=False)) or "the Python installation"
            return (f"the {'sandboxed ' if sandbox else ''}kernel cannot import course_lib from {where}: {m}")
    return ""


def grade(course: Course, assignment: str, *, students: list[str] | None = None, jobs: int | None = None,
          limits: Limits | None = None, force: bool = False, sandbox: bool | None = None,
          packages=("course_lib",), progress: bool = True, stream=None, no_record: str = "final",
          ledger: str | None = None) -> GradeSummary:
    """Autograde the submissions of `assignment` found in course.submitted.

    no_record: what a submission without any prediction record earns for its questions
    (autograder.predictions.NO_RECORD_POLICIES): "final" (its final answers) or "zero-predictions".
    ledger: the hub's prediction ledger (a folder, file or URL: autograder.ledger) to check each
    record against; without it every submission is "not vouched".

    sandbox: None or True -- required (GradingRefused with install instructions where bubblewrap
    does not work); False -- unsandboxed, with a loud warning (--no-sandbox).
    limits: cell_timeout / notebook_timeout None -- derived from the solution's preflight times."""
    from nbgrader.api import Gradebook, MissingEntry

    stream = stream or sys.stderr
    t0 = time.monotonic()
    limits = limits or Limits(cell_timeout=None, notebook_timeout=None)
    jobs = jobs or default_jobs()
    ensure_tools_on_path()
    clean_stale()

    works, reason = probe()
    if sandbox is None or sandbox:
        if not works:
            raise GradingRefused(INSTALL_HELP.format(reason=reason))
        sandbox = True
    else:
        msg = UNSANDBOXED_WARNING.format(reason="--no-sandbox" + ("" if works else f"; and here: {reason}"))
        log.warning(msg)
        print(msg, file=stream, flush=True)

    all_students = course.students(assignment)
    wanted = [s for s in all_students if students is None or s in students]
    pkg_dirs = package_dirs(tuple(packages), site=False)
    secret = variants.load_secret(course)
    keys = {s: variants.key_for(secret, s) for s in wanted}
    todo, skipped, fps = [], [], {}
    if no_record not in predictions.NO_RECORD_POLICIES:
        raise ValueError(f"no_record is one of {predictions.NO_RECORD_POLICIES}, not {no_record!r}")
    entries = hub_ledger.load(ledger) if ledger else None
    ledger_entries = {s: None if entries is None else entries.get(s, []) for s in wanted}
    for s in wanted:
        fps[s] = (_fingerprint(course, assignment, s, sandbox, pkg_dirs, no_record) + variants.fingerprint(keys[s])
                  + hub_ledger.fingerprint(ledger_entries[s]))
        if not force and _up_to_date(course, assignment, s, fps[s]):
            skipped.append(s)
        else:
            todo.append(s)
    summary = GradeSummary(assignment, [], skipped, {}, {}, sandbox, reason, 0.0, jobs)
    if not todo:
        summary.seconds = time.monotonic() - t0
        return summary

    matplotlib_cache()   # warm once, before the workers fork
    with RunDir("grade") as run:
        release = run.path / "release"
        ensure_assignment(course, assignment, release=release)
        plan = verify.plan(course.source / assignment, course.notebooks(assignment))
        pre_limits = Limits(**{**asdict(limits), "cell_timeout": limits.cell_timeout or PREFLIGHT_CELL_TIMEOUT,
                               "notebook_timeout": limits.notebook_timeout or 900})
        job_base = _job_base(course, assignment, run.path, plan, pre_limits, sandbox, packages, release)
        record = None if force else saved_preflight(course, assignment, sandbox, packages, job_base["limits"])
        summary.preflight_reused = record is not None
        if record is None:
            try:
                record = run_preflight(course, assignment, run.path, plan, job_base, sandbox, packages)
            finally:
                verify.close_verifiers()      # the workers start their own
        summary.preflight_seconds = record["seconds"]
        per_cell, other, nb_limit = derived_timeouts({nb: d["timings"] for nb, d in record["notebooks"].items()})
        eff = Limits(**{**asdict(limits), "cell_timeout": limits.cell_timeout or other,
                        "notebook_timeout": limits.notebook_timeout or nb_limit})
        summary.cell_timeouts = {} if limits.cell_timeout else per_cell

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
        job_base = {**job_base, "limits": asdict(eff), "cell_timeouts": summary.cell_timeouts,
                    "truth": record["notebooks"], "variant_questions": variants.questions(course, assignment),
                    "recorder": record.get("recorder", "")}
        bar = Progress(len(todo), f"grading {assignment}", stream) if progress else None
        ctx = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
        with ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=ctx, initializer=_worker_init,
                                 initargs=(os.getpid(),)) as pool:
            futures = {pool.submit(grade_one, {**job_base, "student": s, "slot": str(i),
                                               "submitted": str(course.submitted / s / assignment),
                                               "student_record": records.get(s), "variant_key": keys[s],
                                               "no_record": no_record, "ledger": ledger_entries[s],
                                               "extension": extensions.get(s)}): s for i, s in enumerate(todo)}
            try:
                for fut in as_completed(futures):
                    s = futures[fut]
                    try:
                        res = fut.result()
                    except Exception:
                        res = {"student": s, "success": False, "data": None, "autograded": None, "cause":
                               "the worker crashed", "error": traceback.format_exc(), "log": "", "seconds": 0.0,
                               "stopped": {}, "notes": [], "flags": [], "warnings": []}
                    _finish(course, assignment, res, fps[s], sandbox, summary)
                    shutil.rmtree(run.path / "s" / str(todo.index(s)), ignore_errors=True)
                    if bar:
                        bar.step(s + ("" if res["success"] else " FAILED"))
            except KeyboardInterrupt:
                for f in futures:
                    f.cancel()
                raise
    summary.seconds = time.monotonic() - t0
    return summary


def _finish(course: Course, assignment: str, res: dict, fp: str, sandboxed: bool, summary: GradeSummary) -> None:
    s = res["student"]
    logs = course.state / assignment / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / f"{s}.log").write_text((res.get("log") or "") + ("\n" + res["error"] if res.get("error") else ""))
    dest = course.autograded / s / assignment
    if res["success"] and res.get("autograded"):
        merge_submission(course.db_url, assignment, s, res["data"])
        replace_dir(Path(res["autograded"]), dest)
        _write_json(status_path(course, assignment, s),
                    {"status": "graded", "fingerprint": fp,
                     "graded_at": dt.datetime.now(dt.timezone.utc).isoformat(), "sandboxed": sandboxed,
                     "seconds": round(res["seconds"], 2), "stopped": res["stopped"], "notes": res.get("notes", []),
                     "disagreements": res.get("flags", []), "predictions": res.get("predictions", []),
                     "variant": res.get("variant") or {}, "flags": res.get("flag_reasons", {}),
                     "ledger": res.get("ledger") or hub_ledger.NOT_VOUCHED,
                     "warnings": res.get("warnings", [])})
        flag_submission(course.db_url, assignment, s, res.get("flag_reasons", {}))
        summary.graded.append(s)
        if res["stopped"]:
            summary.stopped[s] = res["stopped"]
        if res.get("notes"):
            summary.notes[s] = res["notes"]
        if res.get("warnings"):
            summary.warnings[s] = res["warnings"]
        if res.get("predictions"):
            summary.predictions[s] = res["predictions"]
        if res.get("flags"):
            summary.flags[s] = res["flags"]
    else:
        # as nbgrader does: no autograded copy of a failed submission; it is retried next run.
        # Nothing is merged: a failure is never a zero (export and report leave it out).
        if dest.exists():
            shutil.rmtree(dest)
        cause = res.get("cause") or "autograde failed (see the log)"
        _write_json(status_path(course, assignment, s),
                    {"status": "failed", "cause": cause,
                     "at": dt.datetime.now(dt.timezone.utc).isoformat(), "notes": res.get("notes", []),
                     "warnings": res.get("warnings", [])})
        summary.failed[s] = cause
        # an earlier grade stays in the gradebook: flag it (a first failure has no entry to flag)
        flag_submission(course.db_url, assignment, s, {"*": [cause]})
        if res.get("warnings"):
            summary.warnings[s] = res["warnings"]


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
    """One row per student of this assignment: a column per notebook, the total, the maximum and
    the status ("graded", or "failed: <cause>" with the score columns empty: never a zero)."""
    from nbgrader.api import Gradebook

    nbs = course.notebooks(assignment)
    sc = scores(course, assignment)
    failed = failed_students(course, assignment)
    with Gradebook(course.db_url) as gb:
        a = gb.find_assignment(assignment)
        maxes = {nb.name: nb.max_score for nb in a.notebooks}
        penalties = {sub.student.id: sum(nb.late_submission_penalty or 0 for nb in sub.notebooks)
                     for sub in a.submissions}
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csvsafe.Writer(f)
        w.writerow(["student_id"] + nbs + ["late_penalty", "total", "max_score", "status"])
        top = _fmt(sum(maxes.get(nb, 0) for nb in nbs))
        for s in sorted(set(sc) | set(failed)):
            if s in failed:
                w.writerow([s] + [""] * len(nbs) + ["", "", top, f"failed: {failed[s]}"])
                continue
            row = [sc[s].get(nb, 0.0) for nb in nbs]
            total = sum(row) - penalties.get(s, 0.0)
            w.writerow([s] + [_fmt(x) for x in row] + [_fmt(penalties.get(s, 0.0)), _fmt(total), top, "graded"])
    return path


def _fmt(x: float) -> str:
    return f"{x:g}"
