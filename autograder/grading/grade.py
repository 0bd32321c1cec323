"""`grade`: autograde every submission of an assignment, in parallel, sandboxed, tamper-proof.

1. Preflight: the instructor's solution goes through exactly the path every submission takes
   (sandbox, limits, kernel, the course_lib the kernel imports, the clean re-verification). It
   must earn every autograded point, or grading stops (exit != 0) with the cause and no student's
   score changes. Its per-cell times set the per-cell time limits: max(10 s, 20 x the solution's
   time for that cell), unless --timeout is given.
2. Each submission is autograded by nbgrader's own Autograde converter (Python API, in-process)
   in a worker process, inside a private temporary course: a copy of the gradebook without any
   student data, the student's submitted files (a byte-order mark removed, stripped nbgrader
   metadata put back: autograder.intake.repair), and the assignment's non-notebook files. Its kernel
   runs in the sandbox (autograder.sandbox.bwrap), hidden tests last (so every other output is safe to
   show in feedback); the answers are recorded right after each answer cell ran.
3. Every test cell is re-verified in a clean process from those records (autograder.integrity.verify):
   that verdict is the score; a disagreement with the kernel is reported to the instructor.
4. The parent merges the scores into the course gradebook one student at a time, each in a
   single transaction (a crash leaves every student either fully merged or untouched), and
   moves the autograded notebook into autograded/<student>/<assignment>/.

A submission that cannot be graded is a failure, never a zero: nothing is merged, the cause is
printed and kept (autograded/.autograder/<assignment>/<student>.json) for `export` and `report`.

Merging follows nbgrader's own rules, so the gradebook ends up as serial `nbgrader autograde`
leaves it: auto scores and comments replaced, manual scores kept, late penalties computed from
the due date and any extension. Unlike nbgrader, a regrade keeps a manual grade's status where the
student's answer is unchanged (a changed one is left for review), takes the late penalty from the
score with its manual grades, and logs what it changed (autograder.grading.regrade).

Re-running is idempotent: a submission whose files, the assignment's sources, the grader's
version, course_lib and the sandbox state have not changed since it was last graded is skipped
(--force regrades; a change of limits alone does not trigger regrading).
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

from autograder import __version__
from autograder.grading.autograde import Graded, grade_one, worker_init
from autograder.sandbox.zygote import close_zygotes
from autograder.course import Course, default_jobs, ensure_assignment, replace_dir, tree_hash
from autograder.integrity.flags import Flag, Reason
from autograder.grading.merge import flag_submission, merge_submission, unflag_failure
from autograder.grading.preflight import (PREFLIGHT_CELL_TIMEOUT, GradingRefused, derived_timeouts, base_job,
                        run_preflight, saved_preflight)
from autograder.grading.rundir import RunDir, clean_stale
from autograder.sandbox.bwrap import INSTALL_HELP, UNSANDBOXED_WARNING, Limits, matplotlib_cache, package_dirs, probe
from autograder.grading.status import FAILURE_FLAGGED, WHOLE, grading_status, status_path, write_json
from autograder.integrity import predictions, unflag, verify
from autograder.authoring import variants
from autograder.integrity import ledger as hub_ledger
from autograder.grading import deadlines, regrade
from autograder.gradebook import open_gradebook

log = logging.getLogger("autograder")

SOLUTION = "(solution)"          # the preflight's student id: not a valid collected student id


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
    why: str = ""                                  # the regrade log's reason (autograder.grading.regrade)
    question: str | None = None                    # merge only this question's cells
    changes: dict = field(default_factory=dict)    # student -> [what the regrade changed]
    kernels: dict = field(default_factory=dict)    # "warm" / "cold" / "cold: why" -> how many submissions


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


def _up_to_date(course: Course, assignment: str, student: str, fp: str) -> bool:
    from nbgrader.api import MissingEntry

    st = grading_status(course, assignment, student)
    if st.get("status", "graded") != "graded" or st.get("fingerprint") != fp \
            or not (course.autograded / student / assignment).is_dir():
        return False
    with course.gradebook() as gb:
        try:
            gb.find_submission(assignment, student)
        except MissingEntry:
            return False
    return True


def grade(course: Course, assignment: str, *, students: list[str] | None = None, jobs: int | None = None,
          limits: Limits | None = None, force: bool = False, sandbox: bool | None = None,
          packages=("course_lib",), progress: bool = True, stream=None, no_record: str = "final",
          ledger: str | None = None, question: str | None = None, why: str | None = None,
          warm: bool = True) -> GradeSummary:
    """Autograde the submissions of `assignment` found in course.submitted.

    no_record: what a submission without any prediction record earns for its questions
    (autograder.integrity.predictions.NO_RECORD_POLICIES): "final" (its final answers) or "zero-predictions".
    ledger: the hub's prediction ledger (a folder, file or URL: autograder.integrity.ledger) to check each
    record against; without it every submission is "not vouched".

    sandbox: None or True -- required (GradingRefused with install instructions where bubblewrap
    does not work); False -- unsandboxed, with a loud warning (--no-sandbox).
    limits: cell_timeout / notebook_timeout None -- derived from the solution's preflight times.
    question: regrade (always) and merge only this question's cells (autograder.grading.regrade);
    why: the reason the regrade log records (default: what made it regrade).
    warm: each kernel forked from its worker's preloaded interpreter into a new sandbox
    (autograder.sandbox.zygote); False: a cold kernel, started from nothing."""
    stream = stream or sys.stderr
    t0 = time.monotonic()
    limits = limits or Limits(cell_timeout=None, notebook_timeout=None)
    jobs = jobs or default_jobs()
    clean_stale()

    sandbox, reason = _sandbox_or_refuse(sandbox, stream)
    if question is not None and question not in regrade.questions(course, assignment):
        raise GradingRefused(f"{assignment} has no graded question or cell {question!r}")
    if bad := variants.unaskable(course, assignment):      # before any student is touched
        raise GradingRefused(f"{assignment} cannot be graded; no student was: "
                             + " ".join(u.message for u in bad))
    todo, skipped, fps, keys, ledger_entries = _to_grade(course, assignment, students, sandbox, packages, no_record,
                                                         force or question is not None, ledger)
    summary = GradeSummary(assignment, [], skipped, {}, {}, sandbox, reason, 0.0, jobs, question=question,
                           why=why or (f"regrade of {question}" if question else "--force" if force else
                                       "the submission, its sources or the grader changed"))
    if not todo:
        summary.seconds = time.monotonic() - t0
        return summary

    matplotlib_cache()   # warm once, before the workers fork
    with RunDir("grade") as run:
        job_base = _preflight(course, assignment, run.path, limits, sandbox, packages, force, summary, warm)
        records, extensions = _gradebook_entries(course, assignment, todo)
        from_service = bool(ledger) and hub_ledger.answers_from_service(ledger)   # only its reveals count
        jobs_of = {s: {**job_base, "student": s, "slot": str(i), "submitted": str(course.submitted / s / assignment),
                       "student_record": records.get(s), "variant_key": keys[s], "no_record": no_record,
                       "ledger": ledger_entries[s], "extension": extensions.get(s),
                       "answers_from_the_service": from_service} for i, s in enumerate(todo)}
        bar = Progress(len(todo), f"grading {assignment}", stream) if progress else None
        _run_workers(course, assignment, run.path, todo, jobs_of, fps, sandbox, jobs, summary, bar)
    summary.seconds = time.monotonic() - t0
    return summary


def _sandbox_or_refuse(sandbox: bool | None, stream) -> tuple[bool, str]:
    """(sandboxed, why bubblewrap does not work here or ""): GradingRefused where the sandbox is
    required and does not work; unsandboxed on request, with a loud warning."""
    works, reason = probe()
    if sandbox is None or sandbox:
        if not works:
            raise GradingRefused(INSTALL_HELP.format(reason=reason))
        sandbox = True
    else:
        msg = UNSANDBOXED_WARNING.format(reason="--no-sandbox" + ("" if works else f"; and here: {reason}"))
        log.warning(msg)
        print(msg, file=stream, flush=True)
    return sandbox, reason


def _to_grade(course: Course, assignment: str, students: list[str] | None, sandbox: bool, packages,
              no_record: str, force: bool, ledger: str | None) -> tuple[list, list, dict, dict, dict]:
    """(students to grade, students up to date, {student: fingerprint}, {student: variant key},
    {student: their hub ledger entries, or None without --ledger})."""
    all_students = course.students(assignment)
    wanted = [s for s in all_students if students is None or s in students]
    pkg_dirs = package_dirs(tuple(packages), site=False)
    secret = variants.load_secret(course)
    keys = {s: variants.key_for(secret, s) for s in wanted}
    todo, skipped, fps = [], [], {}
    if no_record not in predictions.NO_RECORD_POLICIES:
        raise ValueError(f"no_record is one of {predictions.NO_RECORD_POLICIES}, not {no_record!r}")
    entries = hub_ledger.load(ledger, wanted) if ledger else None
    ledger_entries = {s: None if entries is None else entries.get(s, []) for s in wanted}
    late_fps = regrade.deadline_fingerprints(course, assignment, wanted)   # due date, extension, late policy
    for s in wanted:
        fps[s] = (_fingerprint(course, assignment, s, sandbox, pkg_dirs, no_record) + variants.fingerprint(keys[s])
                  + hub_ledger.fingerprint(ledger_entries[s]) + late_fps[s])
        if not force and _up_to_date(course, assignment, s, fps[s]):
            skipped.append(s)
        else:
            todo.append(s)
    return todo, skipped, fps, keys, ledger_entries


def _preflight(course: Course, assignment: str, run: Path, limits: Limits, sandbox: bool, packages, force: bool,
               summary: GradeSummary, warm: bool = True) -> dict:
    """The preflight (the last one's record where it still holds, unless `force`), and what every
    student's job shares: the limits it derived, the solution's answers (the truth)."""
    release = run / "release"
    ensure_assignment(course, assignment, release=release)
    plan = verify.plan(course.source / assignment, course.notebooks(assignment))
    pre_limits = Limits(**{**asdict(limits), "cell_timeout": limits.cell_timeout or PREFLIGHT_CELL_TIMEOUT,
                           "notebook_timeout": limits.notebook_timeout or 900})
    job_base = {**base_job(course, assignment, run, plan, pre_limits, sandbox, packages, release), "warm": warm}
    record = None if force else saved_preflight(course, assignment, sandbox, packages, job_base["limits"])
    summary.preflight_reused = record is not None
    if record is None:
        try:
            record = run_preflight(course, assignment, run, plan, job_base, sandbox, packages)
        finally:
            verify.close_verifiers()      # the workers start their own
            close_zygotes()
    summary.preflight_seconds = record["seconds"]
    per_cell, other, nb_limit = derived_timeouts({nb: d["timings"] for nb, d in record["notebooks"].items()})
    eff = Limits(**{**asdict(limits), "cell_timeout": limits.cell_timeout or other,
                    "notebook_timeout": limits.notebook_timeout or nb_limit})
    summary.cell_timeouts = {} if limits.cell_timeout else per_cell
    return {**job_base, "limits": asdict(eff), "cell_timeouts": summary.cell_timeouts,
            "truth": record["notebooks"], "variant_questions": variants.questions(course, assignment),
            "recorder": record.get("recorder", "")}


def _gradebook_entries(course: Course, assignment: str, todo: list) -> tuple[dict, dict]:
    """({student: their gradebook record}, {student: their extension, in seconds}) for the private
    gradebooks of the workers."""
    from nbgrader.api import MissingEntry

    records, extensions = {}, {}
    with course.gradebook() as gb:
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
                    extensions[s] = ext.total_seconds()
            except MissingEntry:
                pass
    # the course's extension records (autograder.grading.deadlines) are the instructor's word
    extensions.update({s: d.total_seconds() for s in todo
                       if (d := deadlines.extension_delta(course, assignment, s)) is not None})
    return records, extensions


def _run_workers(course: Course, assignment: str, run: Path, todo: list, jobs_of: dict, fps: dict, sandbox: bool,
                 jobs: int, summary: GradeSummary, bar: Progress | None) -> None:
    """grade_one for each student in `todo` in a pool of worker processes; each result merged by
    _finish as it comes in."""
    ctx = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    with ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=ctx, initializer=worker_init,
                             initargs=(os.getpid(),)) as pool:
        futures = {pool.submit(grade_one, jobs_of[s]): s for s in todo}
        try:
            for fut in as_completed(futures):
                s = futures[fut]
                try:
                    res = fut.result()
                except Exception:
                    res = Graded(s, cause="the worker crashed", error=traceback.format_exc())
                _finish(course, assignment, res, fps[s], sandbox, summary)
                shutil.rmtree(run / "s" / str(todo.index(s)), ignore_errors=True)
                if bar:
                    bar.step(s + ("" if res.success else " FAILED"))
        except KeyboardInterrupt:
            for f in futures:
                f.cancel()
            raise


def _finish(course: Course, assignment: str, res: Graded, fp: str, sandboxed: bool, summary: GradeSummary) -> None:
    s = res.student
    if res.kernels:
        summary.kernels[res.kernels] = summary.kernels.get(res.kernels, 0) + 1
    logs = course.state / assignment / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / f"{s}.log").write_text((res.log or "") + ("\n" + res.error if res.error else ""))
    dest = course.autograded / s / assignment
    if res.success and res.autograded:
        before = regrade.snapshot(course.db_url, assignment, s)       # a regrade keeps what was graded
        unchanged = regrade.unchanged_cells(regrade.graded_cells(course, assignment, s), Path(res.autograded))
        data = regrade.only_question(res.data, summary.question) if summary.question else res.data
        merge_submission(course.db_url, assignment, s, data)
        if changed := regrade.settle(course, assignment, s, before, unchanged, summary.why):
            summary.changes[s] = changed
        replace_dir(Path(res.autograded), dest)
        regrade.remember_cells(course, assignment, s, dest)
        failure_flags = grading_status(course, assignment, s).get(FAILURE_FLAGGED) or []
        write_json(status_path(course, assignment, s), res.graded_status(fp, sandboxed))
        unflag_failure(course.db_url, assignment, s, failure_flags)
        # what an instructor looked at and unflagged (`unflag`) is not flagged again
        flag_submission(course.db_url, assignment, s, unflag.still_to_flag(course, assignment, s, res.flag_reasons))
        summary.graded.append(s)
        if res.stopped:
            summary.stopped[s] = res.stopped
        if res.notes:
            summary.notes[s] = res.notes
        if res.warnings:
            summary.warnings[s] = res.warnings
        if res.predictions:
            summary.predictions[s] = res.predictions
        if res.flags:
            summary.flags[s] = res.flags
    else:
        # as nbgrader does: no autograded copy of a failed submission; it is retried next run.
        # Nothing is merged: a failure is never a zero (export and report leave it out).
        if dest.exists():
            shutil.rmtree(dest)
        cause = res.cause or "autograde failed (see the log)"
        earlier = grading_status(course, assignment, s).get(FAILURE_FLAGGED) or []
        # an earlier grade stays in the gradebook: flag it (a first failure has no entry to flag);
        # what this flag added is kept, to be taken back once the submission is graded again
        newly = flag_submission(course.db_url, assignment, s, {WHOLE: [Reason(Flag.GRADING_FAILED, cause)]})
        write_json(status_path(course, assignment, s),
                   {**res.failed_status(cause), FAILURE_FLAGGED: sorted(set(earlier) | set(newly))})
        summary.failed[s] = cause
        if res.warnings:
            summary.warnings[s] = res.warnings


# ---------------------------------------------------------------------------------------------
# Scores out of the gradebook
# ---------------------------------------------------------------------------------------------
def scores(course: Course, assignment: str) -> dict[str, dict[str, float]]:
    """{student: {notebook: score, ...}} for the submissions of `assignment` in the gradebook."""
    from nbgrader.api import MissingEntry

    out = {}
    with course.gradebook() as gb:
        try:
            a = gb.find_assignment(assignment)
        except MissingEntry:
            return {}
        for sub in a.submissions:
            out[sub.student.id] = {nb.name: nb.score for nb in sub.notebooks}
    return out


def cell_scores(db_url: str, assignment: str) -> dict[str, dict[str, float | None]]:
    """{student: {"notebook/grade_id": auto_score}}: every test cell's auto score."""
    from nbgrader.api import MissingEntry

    out = {}
    with open_gradebook(db_url) as gb:
        try:
            a = gb.find_assignment(assignment)
        except MissingEntry:
            return {}
        for sub in a.submissions:
            out[sub.student.id] = {f"{nb.name}/{g.name}": g.auto_score for nb in sub.notebooks for g in nb.grades}
    return out
