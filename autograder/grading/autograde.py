"""Autograde one submission in a worker process, inside a private temporary course (grade_one).

nbgrader's own Autograde converter runs the submission's kernel in the sandbox; every test is
then re-verified in a clean process (autograder.integrity.verify) and the clean verdicts become the scores
in the private gradebook, which the parent merges (autograder.grading.merge).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import shutil
import signal
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from course_lib.exercises.question_ids import cell_id

from autograder.integrity.flags import Flag, Reason
from autograder.authoring.release import nbgrader_config
from autograder.intake.safefiles import Refusal, copy_tree
from autograder.outputs.page_safety import sanitize_notebook
from autograder.sandbox.bwrap import Limits, die_with_parent, make_spec
from autograder.sandbox.zygote import forget_zygotes, kernel_kind, warm_spool
from autograder.sandbox.execute import RECORDER_REPLACED
from autograder.integrity import predictions, verify
from autograder.authoring import variants
from autograder.integrity import ledger as hub_ledger
from autograder.gradebook import open_gradebook

#: all the grader's own work on what a submission supplies, outside the sandbox, together: reading
#: its notebooks (repair), its prediction record (file and receipts), the hub's ledger against it,
#: and deciding what the record grades (the verify inputs built from it). Not the kernel's run
#: (its own limits) nor the clean re-verification (VERIFY_TIMEOUT_PER_TEST)
PARSE_SECONDS = 60
#: a submitted notebook without its outputs (cells, sources, metadata), the part nbgrader parses
#: after the grader has read the receipts in the outputs: an honest one is well under 1 MB
MAX_CELLS_BYTES = 16 * 2**20


@dataclass
class Graded:
    """What grading one submission produced: grade_one's result, sent from the worker to the
    parent (autograder.grading.grade merges it; autograder.grading.preflight checks the solution's)."""
    student: str
    success: bool = False
    cause: str = ""                 # one line: why it could not be graded
    cause_error: str = ""           # the exception's class name in that line, where it names one
    log: str = ""                   # nbgrader's log
    error: str = ""                 # the traceback, and the kernel's last output on a failure
    data: dict | None = None        # the submission in the private gradebook (read_submission)
    autograded: str | None = None   # the folder of the autograded notebooks
    seconds: float = 0.0
    stopped: dict = field(default_factory=dict)       # notebook -> why its kernel was stopped
    notes: list = field(default_factory=list)         # what autograder.intake.repair put back
    flags: list = field(default_factory=list)         # the kernel's verdict differing from the clean one
    verdicts: dict = field(default_factory=dict)      # notebook -> grade_id -> the clean verdict
    predictions: list = field(default_factory=list)   # prediction record findings
    flag_reasons: dict = field(default_factory=dict)  # notebook -> [flags.Reason]: why it is flagged
    warnings: list = field(default_factory=list)      # refused files, a replaced recorder
    recorder: str = ""
    answers: dict = field(default_factory=dict)       # notebook -> the recorded answers
    timings: dict = field(default_factory=dict)       # notebook -> grade_id -> seconds
    variant: dict = field(default_factory=dict)       # the student's assigned variant
    ledger: hub_ledger.Vouch | None = None            # the hub's ledger's verdict (autograder.integrity.ledger)
    kernels: str = ""                                 # "warm", "cold" or "cold: why not warm" (autograder.sandbox.zygote)

    def graded_status(self, fingerprint: str, sandboxed: bool) -> dict:
        """The status file of a graded submission (autograder.grading.status)."""
        return {"status": "graded", "fingerprint": fingerprint,
                "graded_at": dt.datetime.now(dt.timezone.utc).isoformat(), "sandboxed": sandboxed,
                "seconds": round(self.seconds, 2), "stopped": self.stopped, "notes": self.notes,
                "disagreements": self.flags, "predictions": self.predictions,
                "variant": self.variant or {},
                "flags": {nb: [r.to_json() for r in reasons] for nb, reasons in self.flag_reasons.items()},
                "ledger": (self.ledger or hub_ledger.Vouch.NOT_VOUCHED).value,
                "warnings": self.warnings}

    def failed_status(self, cause: str) -> dict:
        """The status file of a submission that could not be graded: never a zero."""
        return {"status": "failed", "cause": cause,
                "at": dt.datetime.now(dt.timezone.utc).isoformat(), "notes": self.notes,
                "warnings": self.warnings}


class OverBudget(BaseException):
    """What a submission supplies took longer to read than the grader gives it (PARSE_SECONDS).
    A BaseException, as KeyboardInterrupt: neither an `except Exception` nor an `except OSError`
    (TimeoutError is one) in the code it interrupts swallows it and reads on."""


@contextlib.contextmanager
def time_limit(seconds: float, what: str, message: str | None = None):
    """Raise OverBudget when the block runs longer than `seconds` (in a worker's main thread:
    a hostile file fails its own student, never stalls the class). Elsewhere: no limit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if seconds <= 0:
        raise OverBudget(message or f"{what} took longer than {seconds:g} s")

    def expired(*_):
        raise OverBudget(message or f"{what} took longer than {seconds:g} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class Budget:
    """PARSE_SECONDS for every step of one submission that walks what the student supplied
    outside the sandbox, all steps together (the time between them, the kernel's run, is not
    counted): `with budget("reading ..."):` raises OverBudget once the steps so far have used it."""

    def __init__(self, seconds: float | None = None):
        self.seconds = PARSE_SECONDS if seconds is None else seconds
        self.spent = 0.0

    @contextlib.contextmanager
    def __call__(self, what: str):
        t0 = time.monotonic()
        try:
            with time_limit(self.seconds - self.spent, what,
                            f"{what}: over the grader's limit of {self.seconds:g} s for reading what a submission "
                            "hands in (its notebooks and prediction record)"):
                yield
        finally:
            self.spent += time.monotonic() - t0


def autograde_config(root: Path, spec_json: str, job: dict, user_config: dict | None = None):
    """nbgrader Config of a worker's private course: the course's own nbgrader settings, with
    the paths of the private course and nbgrader's autograde pipeline with Execute replaced by
    SandboxedExecute."""
    from traitlets.config import Config
    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.preprocessors import AssignLatePenalties, IgnorePattern, LimitOutput, SaveAutoGrades

    from autograder.sandbox.execute import SandboxedExecute

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
    from nbgrader.api import MissingEntry

    with open_gradebook(db_url) as gb:
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


def _failure_cause(log_text: str, error: str) -> tuple[str, str]:
    """One line saying why nbgrader failed, from its log and the error (not "see the above
    traceback"), and the class name of the exception it reports ('' where it names none)."""
    import re

    lines = [l.strip() for l in (log_text + "\n" + error).splitlines() if l.strip()]
    for pat in (r"^(?:[\w.]+\.)?(\w*(?:Error|Exception)): .+", r"^\[\w+\] .*(?:ERROR|error).*"):
        hits = [(l, re.match(pat, l)) for l in lines if re.match(pat, l) and "the above traceback" not in l
                and "NbGraderException" not in l]
        if hits:
            line, m = hits[-1]
            return line[:300], (m.group(1) if m.groups() else "")
    return (lines[-1] if lines else "autograde failed (see the log)")[:300], ""


def _prediction_decisions(nb, tests: list, record, no_record: str = "final") -> None:
    """Which answer each graded question is graded on (autograder.integrity.predictions), into the
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
                          spec_args: tuple, records: dict, budget: Budget | None = None) -> tuple[dict, list, dict]:
    """Re-verify every test in a clean process; the clean verdicts become the scores in the
    private gradebook and go into each notebook's metadata. Returns (verdicts, disagreements,
    the autograded notebooks). `budget`: what deciding on the prediction record and building
    the verify inputs from it may take (the rest of the submission's PARSE_SECONDS)."""
    import nbformat.v4

    tests = verify.from_json(job["tests"])
    notebooks = {}
    for p in sorted(dest.glob("*.ipynb")):
        # nbgrader has just written and validated these: read and write without validating again
        notebooks[p.stem] = nbformat.v4.reads(p.read_text())
    with (budget or Budget())("deciding what its prediction record grades"):
        for nb_name, nb in notebooks.items():
            _prediction_decisions(nb, tests.get(nb_name, []), records.get(nb_name), job.get("no_record") or "final")
        jobs = verify.verification_jobs(tests, notebooks,
                                        variants.student_truth(job.get("truth"), job.get("variant_key")))
    vbase = Path(job["work"]) / "v" / str(os.getpid())     # this worker's clean process, reused
    limits, sandbox, packages = spec_args[0], spec_args[1], spec_args[2]
    results = verify.run_clean(jobs, lambda: make_spec(vbase, a, None, None, *spec_args),
                               key=f"{sandbox}:{limits.memory_mb}:{limits.tasks}:{packages}",
                               log_file=Path(job["work"]) / "v" / f"{os.getpid()}.log",
                               env=variants.kernel_env(job.get("variant_key", ""), student))
    verdicts, flags = {}, []
    gb_url = "sqlite:///" + str(root / "gradebook.db")
    with open_gradebook(gb_url) as gb:
        for nb_name, cells in tests.items():
            nb = notebooks.get(nb_name)
            if nb is None:
                continue
            by_gid = {cell_id(c) or None: c for c in nb.cells}
            mine = {}
            for t in cells:
                key = verify.JobKey(nb_name, t.grade_id)
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
                one = {n: key._replace(values=verify.Values.ONE_ANSWER, variable=n) for n in t.names}
                per = {n: results[k] for n, k in one.items() if k in results}
                if per:
                    v["per_variable"] = {n: {"passed": x["passed"], "message": x["message"], "label": x["label"]}
                                         for n, x in per.items()}
                c = results.get(key._replace(values=verify.Values.COMMITTED))
                if c is not None:    # the prediction as committed, for the report
                    v["committed"] = {"passed": c["passed"], "message": c["message"], "label": c["label"]}
                mine[t.grade_id] = v
                # the kernel ran the final answers: compare it with their clean verdict
                same_values = results.get(key._replace(values=verify.Values.FINAL), r)
                if ran is not None and (kernel_score or 0.0) != same_values["score"]:
                    flags.append({"notebook": nb_name, "cell": t.grade_id, "kernel": kernel_score,
                                  "clean": same_values["score"], "message": same_values["message"]})
            verdicts[nb_name] = mine
            nb.metadata.setdefault("autograder", {})["verdicts"] = mine
            sanitize_notebook(nb)     # the formgrader shows this notebook: nothing in it may run
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


def worker_init(parent: int) -> None:
    import warnings

    from sqlalchemy.exc import SAWarning

    die_with_parent(parent)
    verify.forget_verifiers()
    forget_zygotes()
    # nbgrader 0.9's gradebook code trips SQLAlchemy 2's session warnings by the hundred: harmless
    # and not free (a formatted warning per flush)
    warnings.filterwarnings("ignore", category=SAWarning)


def _prediction_records(submitted: Path, tests: dict) -> dict:
    """{notebook: autograder.integrity.predictions.Record} read from the submission as handed in (its
    record file and the receipts in its outputs, which nbgrader clears before it executes)."""
    stamp = submitted / "timestamp.txt"
    at = stamp.read_text(errors="replace").strip() if stamp.is_file() else None
    return {nb: predictions.read_record(submitted, nb, predictions.questions_of(cells), at)
            for nb, cells in tests.items() if predictions.prediction_questions(cells)}


def grade_one(job: dict) -> Graded:
    """Autograde one submission (runs in a worker process)."""
    from nbgrader.apps import NbGraderAPI

    from autograder.intake.repair import Unrepairable

    t0 = time.monotonic()
    _fast_private_gradebooks()
    a, student = job["assignment"], job["student"]
    work = Path(job["work"])
    base, root = _private_course(job)
    kbase = base / "k"      # the kernel's home and run directory (warm: in the worker's spool)
    out = Graded(student)
    # regular files only, opened without following links (a link to /etc/shadow or the solution
    # is refused and reported, never read): everything later reads this copy
    mine = root / "submitted" / student / a
    refused = copy_tree(job["submitted"], mine)
    for rel, why, _ in refused:
        out.warnings.append(f"{rel}: {why}")
    budget = Budget()
    try:
        # a notebook of the assignment refused for its size: nbgrader would score it as missing,
        # a zero; it is a failure
        _refused_notebooks(refused, job)
        tests = verify.from_json(job["tests"])
        with budget("reading its notebooks"):
            _repair(mine, job, out.notes)
        _private_student(root, job)
        expected = variants.assigned(job.get("variant_key", ""), job.get("variant_questions") or [])
        out.variant = expected
        with budget("reading the prediction record handed in"):
            records = _prediction_records(mine, tests)
            hub_ledger.apply(out, records, tests, job.get("ledger"),     # --ledger: the hub's copy
                             job.get("answers_from_the_service", False))
            out.predictions += variants.mismatches(records, expected)
        with budget("reading its notebooks"):
            # read: nbgrader clears the outputs before it runs anything; cleared here, it does
            # not parse and validate megabytes of them (receipts) again and again
            _drop_outputs(mine)
        limits = Limits(**job["limits"])
        spec_args = (limits, job["sandbox"], tuple(job["packages"]), work)
        spool = warm_spool(work) if job.get("warm") and job["sandbox"] else None
        kbase = spool / base.name if spool else base / "k"
        spec = make_spec(kbase, a, root / "submitted" / student / a, Path(job["extras"]), *spec_args, zygote=spool)
        spec.env.update(variants.kernel_env(job.get("variant_key", ""), student))   # the student's numbers
        out.kernels = kernel_kind(spec) if job["sandbox"] else ""
        api = NbGraderAPI(config=autograde_config(root, spec.to_json(), job, job.get("user_config")))
        api.log.setLevel(logging.WARNING)
        result = api.autograde(a, student, force=True, create=True)
        out.log = result.get("log", "") or ""
        out.error = result.get("error", "") or ""
        dest = root / "autograded" / student / a
        if result.get("success") and dest.is_dir():
            out.verdicts, out.flags, books = _apply_clean_verdicts(root, a, student, dest, job, spec_args, records,
                                                                   budget)
            _take_notebooks(out, books)
            out.data = read_submission("sqlite:///" + str(root / "gradebook.db"), a, student)
            out.autograded = str(dest)
            out.success = True
        else:
            out.cause, out.cause_error = _failure_cause(out.log, out.error)
    except Unrepairable as e:
        out.cause = f"cannot be graded: {e}"
        out.error = str(e)
    except (OverBudget, predictions.RecordOverLimits, TooLarge) as e:
        out.cause = f"not graded: {e}"[:500]
        out.error = traceback.format_exc()
    except verify.VerifyError as e:
        out.cause, out.cause_error = str(e), e.ename
        out.error = traceback.format_exc()
    except Exception as e:
        out.error = traceback.format_exc()
        out.cause = f"{type(e).__name__}: {e}"[:300]
    from autograder.sandbox.bwrap import close_socket_dirs

    close_socket_dirs()
    klog = kbase / "kernel.log"
    if not out.success and klog.is_file():
        out.error += "\n--- kernel output (last 3000 characters) ---\n" + klog.read_text(errors="replace")[-3000:]
    if kbase.parent != base:
        shutil.rmtree(kbase, ignore_errors=True)      # the spool holds only the submission being graded
    out.seconds = time.monotonic() - t0
    return out


class TooLarge(ValueError):
    """A submitted notebook larger than the grader reads (safefiles.MAX_FILE, MAX_CELLS_BYTES)."""


def _refused_notebooks(refused: list, job: dict) -> None:
    """TooLarge where copy_tree refused a notebook of the assignment for its size."""
    names = {f"{nb}.ipynb" for nb in job.get("tests") or {}}
    for rel, why, reason in refused:
        if rel in names and reason in (Refusal.TOO_LARGE, Refusal.SUBMISSION_TOO_LARGE):
            raise TooLarge(f"{rel}: {why}")


def _drop_outputs(folder: Path) -> None:
    """The outputs of the notebooks in `folder` (the private copy, once the prediction record was
    read from it) removed, as nbgrader's first step (ClearOutput) would: nbgrader then reads and
    validates only the cells. TooLarge when what is left is over MAX_CELLS_BYTES."""
    for p in sorted(folder.glob("*.ipynb")):
        try:
            nb = json.loads(p.read_bytes())
        except (OSError, ValueError):
            continue        # nbgrader says what is wrong with it
        cells = nb.get("cells") if isinstance(nb, dict) else None
        if not isinstance(cells, list):
            continue
        cleared = 0
        for c in cells:
            if isinstance(c, dict) and c.get("outputs"):
                c["outputs"] = []
                cleared += 1
        text = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
        if len(text) > MAX_CELLS_BYTES:
            raise TooLarge(f"{p.name} is {len(text) / 2**20:.0f} MB without its outputs (cells, sources and metadata): "
                           f"more than {MAX_CELLS_BYTES // 2**20} MB is not read")
        if cleared:
            try:
                data = text.encode("utf-8")
            except UnicodeEncodeError:      # a lone surrogate ("\ud800" in the JSON): kept escaped
                data = (json.dumps(nb, indent=1) + "\n").encode("ascii")
            p.write_bytes(data)


def _private_course(job: dict) -> tuple[Path, Path]:
    """(the worker's folder for this submission, the private course in it): a copy of the
    gradebook without any student data and the assignment's non-notebook files."""
    a, student = job["assignment"], job["student"]
    base = Path(job["work"]) / "s" / str(job.get("slot") or student)   # short: unix socket paths are limited
    if base.exists():
        shutil.rmtree(base)
    root = base / "course"
    (root / "submitted" / student).mkdir(parents=True)
    os.chmod(root, 0o700)       # the private gradebook, the hidden tests: never for the kernel's uid
    shutil.copy(job["template_db"], root / "gradebook.db")
    shutil.copytree(job["extras"], root / "source" / a)
    return base, root


def _repair(mine: Path, job: dict, notes: list) -> None:
    """Each submitted notebook with its stripped nbgrader metadata put back (autograder.intake.repair);
    "notebook: what was repaired" lines appended to `notes` as each is done. Unrepairable names
    the notebook."""
    from autograder.intake.repair import Unrepairable, fix_file

    for p in sorted(mine.glob("*.ipynb")):
        try:
            notes += [f"{p.stem}: {n}" for n in fix_file(p, Path(job["release"]) / job["assignment"] / p.name,
                                                         job["capture"])]
        except Unrepairable as e:
            raise Unrepairable(f"{p.name}: {e}") from None


def _private_student(root: Path, job: dict) -> None:
    """The student's gradebook record and extension, copied into the private gradebook (late
    penalties and the merged record need them)."""

    a, student = job["assignment"], job["student"]
    if job.get("student_record") or job.get("extension"):
        with open_gradebook("sqlite:///" + str(root / "gradebook.db")) as gb:
            gb.update_or_create_student(student, **(job.get("student_record") or {}))
            if job.get("extension"):
                import datetime as dt

                gb.add_submission(a, student, extension=dt.timedelta(seconds=float(job["extension"])))


def _take_notebooks(out: Graded, books: dict) -> None:
    """What the autograded notebooks' metadata says, into `out`: why each is flagged, the
    prediction findings, the recorded answers and times, a replaced recorder, a stopped kernel."""
    for f in out.flags:
        out.flag_reasons.setdefault(f["notebook"], []).append(Reason(
            Flag.KERNEL_DIFFERS, f"{f['cell']}: the kernel's verdict differs from the re-verification (check for tampering)"))
    for name, book in books.items():
        meta = book.metadata.get("autograder", {})
        reasons = predictions.summarize(meta)
        out.predictions += [f"{name}: {r.message}" for r in reasons]
        if reasons:
            out.flag_reasons.setdefault(name, []).extend(reasons)
        out.answers[name] = meta.get("answers", {})
        out.timings[name] = meta.get("timings", {})
        out.recorder = out.recorder or meta.get("recorder", "")
        if meta.get("recorder_replaced"):
            out.warnings.append(f"{name}: {RECORDER_REPLACED}: the answers recorded after that failed their tests")
        if meta.get("stopped"):
            out.stopped[name] = meta["stopped"]
