"""`report`: the misconception report of an assignment.

For every predict-then-verify question (each answer cell, each answer variable its tests read):
how many students gave each answer, which answer is right, and the share of students whose
answer for that variable is wrong (each variable judged on its own: one wrong answer of a
two-answer question does not make the other wrong). Helper variables a solution computes on the
way (read by no test of the question as the student's) are not answers and are not listed. Written to reports/<assignment>/:

* misconceptions.csv -- notebook, question, title, answer_cell, variable, answer, count, is_truth,
  truth, students, wrong, share_wrong, label, examples
* misconceptions.png -- one bar chart per question variable (the truth blue and labelled, wrong
  answers hatched vermillion)
* predictions.csv -- per graded question (prediction or by hand) and student: the rule the grade
  used (committed, changed-after-reveal, final, shown-unrecorded, no-record), from what to what an
  answer changed after its reveal, whether the record was missing or looked edited, and the flag
  the instructor is shown (a truth on screen without a recorded reveal, no record and the
  --no-record policy): its message, and its kind in flag_kind (autograder.integrity.flags.Flag's id)
* scores.csv / scores.png -- every student's score per notebook and its distribution; with
  needs_manual_grade (a written answer not graded yet) and flag (nbgrader's flag, with the
  grader's reasons: verdicts differing from the re-verification, no or an edited prediction
  record, a prediction changed after its reveal, a record that differs from the hub's ledger;
  their kinds in flag_kinds) and ledger ("vouched", "not vouched" or "record differs from the
  hub's ledger": autograder.integrity.ledger)
* copies.csv / variants.csv -- possible copies across students' variants, with the evidence, and
  the numbers each student was graded on (autograder.integrity.copies)
* students.csv -- per student: the score less the late penalty, lateness against their own
  deadline, status, flags, ledger, possible copies with the evidence (autograder.outputs.report_tables)
* questions.csv -- per question: mean, spread, range, share with every point, written answers
  awaiting a grade, the labelled misconceptions matched
* report.html -- all of it on one accessible page (autograder.outputs.report_html): tables with headers,
  the charts with text alternatives written from the same rows, the regrade log
  (autograder.grading.regrade); and reports/index.html, the course across assignments

For every graded question the answer counted (and judged) is the one the student committed
before the truth was revealed (autograder.integrity.predictions), not one written afterwards.

Right or wrong is the hidden tests' own verdict -- the clean re-verification that is the score --
not a comparison of printed values: `0.00736 second` for 7.36 ms, `MEMORY`, `0.153 kFLOP/byte`
count as right exactly when the grade says so. For a question with several answers, each answer
is judged by re-running the question's hidden test with the other answers set to the solution's.
A wrong answer is grouped under its misconception label when the check that failed carries one
(`exc.label`, e.g. "weights-only"), else under its value. Only graded students count: a
submission whose grading failed is left out (and listed on the console).

The truth: the solution's record from the preflight of the last `grade` (the same pipeline).
"""
from __future__ import annotations

import csv
import json
import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.course import Course, answer_cells
from autograder.integrity.flags import TRUTH_SHOWN, Flag, Reason
from autograder.integrity.ledger import Vouch
from autograder.integrity.predictions import Rule, counted_answer
from autograder.integrity.predictions import decision_of as _decision
from autograder.grading.status import graded_students
from autograder.outputs.values import decode_entry, show
from autograder.outputs import csvsafe

NO_ANSWER = "(no answer)"
REASONING = ("_reasoning", "_reason", "_explanation")     # as autograder.course.answer_cells
NOT_RECORDED = "(not recordable)"


# ---------------------------------------------------------------------------------------------
# answers -> printable categories
# ---------------------------------------------------------------------------------------------
def _ratio(value, truth, spec=None) -> float | None:
    """value / truth, both in the question's declared unit where it has one (`spec`, its answer
    form: 34.3 written for microseconds against a truth kept in milliseconds is 1.07, not 1070);
    None where they cannot be compared (a Quantity against a bare number, with no spec to say
    what the number means)."""
    from course_lib.units import is_quantity

    try:
        if spec is not None and hasattr(spec, "read_truth"):
            v, t = spec.read(value), spec.read_truth(truth)
        elif is_quantity(value) != is_quantity(truth):
            return None
        elif is_quantity(truth):
            v = value.m_as(truth.units) if is_quantity(value) else float(value)
            t = truth.magnitude
        else:
            v, t = float(value.magnitude if is_quantity(value) else value), float(truth)
        v, t = float(v), float(t)
    except Exception:
        return None
    if t == 0 or not math.isfinite(v) or not math.isfinite(t):
        return None
    return v / t


def in_declared_unit(value, spec):
    """A recorded Quantity in its question's declared unit (issue 47: a `q5_latency_us` truth kept
    in milliseconds read "0.0225 ms" where the question asks for microseconds); anything else,
    or a unit it cannot be converted to, as it is."""
    from course_lib.units import is_quantity

    units = getattr(spec, "units", None)
    if not units or not is_quantity(value):
        return value
    try:
        return value.to(units)
    except Exception:       # not convertible (a wrong dimension): shown as recorded
        return value


def category(entry, truth_entry=None, right: bool | None = None, label: str | None = None, spec=None) -> str:
    """The answer class a recorded entry falls in: the truth's when it is right, its
    misconception label or its value (with the ratio to the truth) when wrong."""
    if not isinstance(entry, dict) or entry.get("missing"):
        return NO_ANSWER
    if "error" in entry:
        return NOT_RECORDED
    ok_t, t = decode_entry(truth_entry) if truth_entry else (False, None)
    if right and ok_t:
        return show(in_declared_unit(t, spec))
    ok, v = decode_entry(entry)
    if not ok:
        return NOT_RECORDED
    if label:
        return label
    text = show(v)
    if ok_t and not isinstance(v, str):
        r = _ratio(v, t, spec)
        if r is not None:
            return f"{text} (truth x{r:.3g})"
    return text


# ---------------------------------------------------------------------------------------------
# the truth: the solution's record from the preflight
# ---------------------------------------------------------------------------------------------
def truth(course: Course, assignment: str) -> dict:
    """{notebook: {"answers": ..., "verdicts": ..., "scores": ...}} of the solution, from the
    preflight of the last `grade` run (run again here if the sources changed since)."""
    path = course.state / assignment / "_preflight.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        record = None
    from autograder.grading.preflight import preflight_key
    from autograder.sandbox.bwrap import probe

    sandbox = probe()[0]
    if record is None or record.get("key") != preflight_key(course, assignment, sandbox, ("course_lib",)):
        record = _preflight(course, assignment, sandbox)
    return record["notebooks"]


def _preflight(course: Course, assignment: str, sandbox: bool) -> dict:
    from autograder.integrity import verify
    from autograder.course import ensure_assignment
    from autograder.grading.preflight import PREFLIGHT_CELL_TIMEOUT, base_job, run_preflight
    from autograder.grading.rundir import RunDir
    from autograder.sandbox.bwrap import Limits

    with RunDir("truth") as run:
        release = run.path / "release"
        ensure_assignment(course, assignment, release=release)
        plan = verify.plan(course.source / assignment, course.notebooks(assignment))
        job = base_job(course, assignment, run.path, plan, Limits(cell_timeout=PREFLIGHT_CELL_TIMEOUT),
                        sandbox, ("course_lib",), release)
        try:
            return run_preflight(course, assignment, run.path, plan, job, sandbox, ("course_lib",))
        finally:
            verify.close_verifiers()


# ---------------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------------
def _variable_verdict(var: str, tests: list, verdicts: dict) -> tuple[bool, str | None]:
    """(right, label) of one answer variable from its question's clean verdicts."""
    right, label = True, None
    for gid in tests:
        v = verdicts.get(gid)
        if v is None:
            return False, None    # not re-verified: cannot say it is right
        if v.get("committed"):    # a prediction changed after the reveal: judge the one committed
            v = {**v["committed"], "per_variable": None}
        if v["passed"]:
            continue
        per = (v.get("per_variable") or {}).get(var)
        if per is not None:
            if not per["passed"]:
                right, label = False, label or per.get("label")
        else:
            right, label = False, label or v.get("label")
    return right, label


def answer_variables(cell, tests: dict) -> list[str]:
    """The answers of an answer cell: the variables a test of its question reads from that cell
    ({grade_id: verify.TestCell}; by name, or declared in course_lib.questions) without assigning
    them itself, in the order the tests read them. A helper the solution computes on the way
    (`capacity`, which a test either never reads or computes for itself) is not one, nor is a
    free-text reasoning variable (q3_reasoning: it earns nothing)."""
    from autograder.cell_code import assigned_names

    out = []
    for g in cell.tests:
        t = tests.get(g)
        if t is None:
            continue
        own = set(assigned_names(t.source))
        out += [n for n in t.names if t.sources.get(n) == cell.grade_id and n not in own and n not in out
                and not n.endswith(REASONING)]
    return out


def _spec(grade_id: str, var: str):
    """The answer form course_lib.questions declares for `var` of the question of `grade_id`, or None."""
    from course_lib.questions import get

    try:
        return get(grade_id.rsplit("_", 1)[0]).specs.get(var)
    except Exception:       # not a declared question: compared as recorded
        return None


def _own_truths_label(owns: dict, lesson_entry: dict, spec=None) -> str:
    """How the report names the truth of a variable whose students had their own numbers: the
    truths they were graded on (a few, then the count), not the lesson's own, in the question's
    declared unit."""
    shown = []
    for entry in [e or lesson_entry for e in owns.values()]:
        ok, v = decode_entry(entry)
        text = show(in_declared_unit(v, spec)) if ok else "?"
        if text not in shown:
            shown.append(text)
    listed = ", ".join(shown[:4]) + (f" and {len(shown) - 4} more" if len(shown) > 4 else "")
    return f"the truth, each student's own ({listed})"


def misconceptions(course: Course, assignment: str, truth_record: dict | None = None) -> list[dict]:
    """One dict per (question variable, answer class)."""
    from autograder.integrity.copies import own_truth_entry
    from autograder.integrity.verify import test_cells

    truth_record = truth_record if truth_record is not None else truth(course, assignment)
    students = graded_students(course, assignment)
    rows = []
    for nb in course.notebooks(assignment):
        src = course.source / assignment / f"{nb}.ipynb"
        cells = answer_cells(src)
        by_id = {t.grade_id: t for t in test_cells(src)}
        reads = {g: set(t.names) for g, t in by_id.items()}
        books = {}
        for s in students:
            p = course.autograded / s / assignment / f"{nb}.ipynb"
            if p.is_file():
                books[s] = nbformat.read(str(p), as_version=4).metadata.get("autograder", {}) or {}
        tv = truth_record.get(nb, {}).get("answers", {})
        for cell in cells:
            hidden = cell.hidden_tests
            for var in answer_variables(cell, by_id):
                t_entry = tv.get(cell.grade_id, {}).get(var)
                spec = _spec(cell.grade_id, var)
                truth_label = category(t_entry, t_entry, right=True, spec=spec) if t_entry else None
                # with per-student variants each student has their own truth (autograder.authoring.variants):
                # a right answer is "the truth" whatever its number, a wrong one's ratio is to its own
                owns = {s: own_truth_entry(course, assignment, s, cell.grade_id, var) for s in books}
                own_truths = bool(any(owns.values()) and truth_label)
                if own_truths:
                    truth_label = _own_truths_label(owns, t_entry, spec)
                tests = [g for g in hidden if var in reads.get(g, set())]
                counts, labels, examples, n_wrong = Counter(), {}, {}, 0
                for s, meta in books.items():
                    entry = counted_answer(meta, cell, var)
                    if tests:
                        right, label = _variable_verdict(var, tests, meta.get("verdicts", {}))
                    else:
                        right, label = None, None
                    own = owns[s]
                    cat = (truth_label if right and own and truth_label
                           else category(entry, own or t_entry, right=right, label=label, spec=spec))
                    if right is None and truth_label is not None and cat == truth_label:
                        right = True
                    n_wrong += not right       # this variable's own verdict, not its question's
                    counts[cat] += 1
                    if label:
                        labels[cat] = label
                        ok, v = decode_entry(entry)
                        if ok:
                            examples.setdefault(cat, [])
                            if show(v) not in examples[cat] and len(examples[cat]) < 3:
                                examples[cat].append(show(v))
                base = {"notebook": nb, "question": cell.question or cell.grade_id, "title": cell.title,
                        "answer_cell": cell.grade_id, "variable": var, "truth": truth_label or "",
                        "own_truths": own_truths,
                        "students": len(books), "wrong": n_wrong,
                        "share_wrong": round(n_wrong / len(books), 4) if books else 0.0}
                for cat, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
                    rows.append({**base, "answer": cat, "count": n, "is_truth": cat == truth_label,
                                 "label": labels.get(cat, ""), "examples": "; ".join(examples.get(cat, []))})
                if truth_label and truth_label not in counts:
                    rows.append({**base, "answer": truth_label, "count": 0, "is_truth": True, "label": "",
                                 "examples": ""})
    return rows


@dataclass
class PredictionRow:
    """One student's graded question in predictions.csv: the rule its grade used, and its flag."""

    notebook: str
    question: str
    title: str
    student: str
    rule: Rule
    record: str                     # where the record came from (predictions.Record.source); "none"
    record_problems: str = ""
    changed_from: str = ""          # the answer committed, where it changed after the reveal
    changed_to: str = ""            # ... and the one the notebook ends with
    reason: Reason | None = None

    FIELDS = ["notebook", "question", "title", "student", "rule", "from", "to", "record", "record_problems", "flag",
              "flag_kind"]

    @property
    def flag(self) -> Flag | None:
        return self.reason.flag if self.reason else None

    def csv_row(self) -> dict:
        return {"notebook": self.notebook, "question": self.question, "title": self.title, "student": self.student,
                "rule": self.rule.value, "from": self.changed_from, "to": self.changed_to, "record": self.record,
                "record_problems": self.record_problems, "flag": self.reason.message if self.reason else "",
                "flag_kind": self.flag.value if self.flag else ""}


def _answers_text(values) -> str:
    from course_lib.exercises.answers import decode

    try:
        return ", ".join(f"{n} = {show(decode(v))}" for n, v in (values or {}).items())
    except Exception:
        return "(unreadable)"


def changes_after_reveal(course: Course, assignment: str) -> list[PredictionRow]:
    """Per predict-then-verify question: each student who changed the answer after its truth was
    revealed, from what to what; and how many graded notebooks had no prediction record."""
    rows = []
    for nb in course.notebooks(assignment):
        cells = [c for c in answer_cells(course.source / assignment / f"{nb}.ipynb") if c.kind in ("prediction", "answer")]
        for s in graded_students(course, assignment):
            p = course.autograded / s / assignment / f"{nb}.ipynb"
            if not p.is_file():
                continue
            meta = nbformat.read(str(p), as_version=4).metadata.get("autograder", {}) or {}
            rec = meta.get("predictions") or {}
            for cell in cells:
                d = _decision(meta, cell)
                if not d:
                    continue
                row = PredictionRow(nb, cell.question, cell.title, s, d.rule, rec.get("source", ""),
                                    "; ".join(rec.get("problems", [])), reason=d.reason)
                if d.rule is Rule.CHANGED:
                    row.changed_from, row.changed_to = _answers_text(d.committed), _answers_text(d.final)
                rows.append(row)
    return rows


@dataclass
class ScoreRow:
    """One graded student's notebook in scores.csv."""

    notebook: str
    student: str
    score: float                      # less its late penalty: the one mean every page shows
    max_score: float
    needs_manual_grade: bool = False
    flagged: bool = False             # nbgrader's flag (an instructor may have cleared it)
    reasons: list = field(default_factory=list)   # [flags.Reason] the last grading gave
    ledger: Vouch | None = None

    FIELDS = ["notebook", "student", "score", "max_score", "needs_manual_grade", "flag", "flag_kinds", "ledger"]

    @property
    def flag(self) -> str:
        """What the instructor reads: the grader's reasons, or "flagged" for a flag set by hand."""
        if not self.flagged:
            return ""
        return "; ".join(r.message for r in self.reasons) or "flagged"

    def csv_row(self) -> dict:
        return {"notebook": self.notebook, "student": self.student, "score": self.score, "max_score": self.max_score,
                "needs_manual_grade": self.needs_manual_grade, "flag": self.flag,
                "flag_kinds": "; ".join(r.flag.value for r in self.reasons) if self.flagged else "",
                "ledger": self.ledger.text if self.ledger else ""}


def score_rows(course: Course, assignment: str) -> list[ScoreRow]:
    """Every graded student's score per notebook (failed gradings left out: they are no zeros)."""
    from nbgrader.api import MissingEntry

    from autograder.integrity.copy_flags import reasons as copy_reasons
    from autograder.integrity.ledger import status as ledger_status
    from autograder.grading.status import failed_students, flags

    failed = failed_students(course, assignment)
    copies = copy_reasons(course, assignment)
    rows = []
    with course.gradebook() as gb:
        try:
            a = gb.find_assignment(assignment)
        except MissingEntry:
            return rows
        maxes = {nb.name: nb.max_score for nb in a.notebooks}
        for sub in sorted(a.submissions, key=lambda s: s.student.id):
            if sub.student.id in failed:
                continue
            reasons = flags(course, assignment, sub.student.id)
            vouch = ledger_status(course, assignment, sub.student.id)
            mine = copies.get(sub.student.id, {})
            for nb in sub.notebooks:
                # every flag with its reason: the grader's (the status file) and the copy check's
                # after the late penalty, as the course page, the export and the LMS: one mean everywhere
                rows.append(ScoreRow(nb.name, sub.student.id, nb.score - (nb.late_submission_penalty or 0.0),
                                     maxes[nb.name], nb.needs_manual_grade,
                                     nb.flagged, reasons.get(nb.name, []) + mine.get(nb.name, []), vouch))
    return rows


def _write_csv(path: Path, rows: list[dict], fields: list[str]) -> None:
    with open(path, "w", newline="") as f:
        w = csvsafe.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def _figure(nrows, ncols, w, h):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def plot_misconceptions(rows: list[dict], path: Path) -> None:
    panels = []
    for r in rows:
        key = (r["notebook"], r["question"], r["variable"])
        if not panels or panels[-1][0] != key:
            panels.append((key, []))
        panels[-1][1].append(r)
    if not panels:
        return
    ncols = 2 if len(panels) > 1 else 1
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = _figure(nrows, ncols, 7 * ncols, 2.4 * nrows + 0.6)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, ((nb, q, var), rs) in zip(axes.flat, panels):
        labels = [r["answer"] for r in rs][::-1]
        counts = [r["count"] for r in rs][::-1]
        # colour is never the only carrier: the truth is also named on its label, wrong answers
        # are hatched; blue and vermillion stay apart with the common colour-vision deficiencies
        colors = ["#0072B2" if r["is_truth"] else ("lightgrey" if r["answer"] == NO_ANSWER else "#D55E00")
                  for r in rs][::-1]
        hatches = ["" if r["is_truth"] or r["answer"] == NO_ANSWER else "//" for r in rs][::-1]
        bars = ax.barh(range(len(rs)), counts, color=colors, edgecolor="white")
        for bar, hatch in zip(bars, hatches):
            bar.set_hatch(hatch)
        short = [l if len(l) <= 32 else l[:31] + "…" for l in labels]
        ax.set_yticks(range(len(rs)), [f"{l} (truth)" if r["is_truth"] else l
                                       for l, r in zip(short, rs[::-1])], fontsize=8)
        title = rs[0]["title"] or q
        title = title if len(title) <= 60 else title[:59] + "…"
        ax.set_title(f"{title}\n{var}: {rs[0]['share_wrong']:.0%} wrong of {rs[0]['students']}", fontsize=9)
        ax.set_xlabel("students", fontsize=8)
        ax.xaxis.get_major_locator().set_params(integer=True)
    fig.suptitle("Predictions vs the truth (blue, labelled; wrong answers hatched)", fontsize=11)
    fig.savefig(path, dpi=100)


def plot_scores(rows: list[ScoreRow], path: Path) -> None:
    nbs = sorted({r.notebook for r in rows})
    if not nbs:
        return
    fig, axes = _figure(1, len(nbs), 5 * len(nbs), 3.2)
    for ax, nb in zip(axes.flat, nbs):
        scores = [r.score for r in rows if r.notebook == nb]
        top = max(r.max_score for r in rows if r.notebook == nb)
        ax.hist(scores, bins=[x - 0.5 for x in range(int(top) + 2)], color="tab:blue", edgecolor="white")
        ax.set_xlim(-0.5, top + 0.5)
        ax.set_title(f"{nb}: mean {statistics.mean(scores):.1f} / {top:g}, n={len(scores)}", fontsize=9)
        ax.set_xlabel("score")
        ax.set_ylabel("students")
        ax.yaxis.get_major_locator().set_params(integer=True)
    fig.savefig(path, dpi=100)


def report(course: Course, assignment: str, out_dir: Path | None = None) -> dict:
    from autograder.grading.deadlines import retake_penalties

    out = Path(out_dir or course.reports / assignment)
    out.mkdir(parents=True, exist_ok=True)
    retake_penalties(course)      # scores may have changed in the Formgrader; index.html reads every assignment
    rows = misconceptions(course, assignment)
    _write_csv(out / "misconceptions.csv", rows,
               ["notebook", "question", "title", "answer_cell", "variable", "answer", "count", "is_truth",
                "truth", "students", "wrong", "share_wrong", "label", "examples"])
    plot_misconceptions(rows, out / "misconceptions.png")
    changes = changes_after_reveal(course, assignment)
    _write_csv(out / "predictions.csv", [c.csv_row() for c in changes], PredictionRow.FIELDS)
    from autograder.grading.regrade import read_log
    from autograder.grading.status import failed_students
    from autograder.integrity.copies import write_copies
    from autograder.integrity.copy_flags import check as flag_copies
    from autograder.outputs import report_tables
    from autograder.outputs.report_html import write_course_html, write_report_html

    copies = flag_copies(course, assignment, write_copies(course, assignment, out))   # flagged before it is read
    srows = score_rows(course, assignment)
    _write_csv(out / "scores.csv", [r.csv_row() for r in srows], ScoreRow.FIELDS)
    plot_scores(srows, out / "scores.png")
    summary = score_summary(srows)
    students = report_tables.student_rows(course, assignment, copies)
    _write_csv(out / "students.csv", [_student_csv(r) for r in students], STUDENT_FIELDS)
    questions = report_tables.question_stats(course, assignment, rows)
    _write_csv(out / "questions.csv", [_question_csv(q) for q in questions], QUESTION_FIELDS)
    regrades = read_log(course, assignment)
    write_report_html(out, assignment, rows, changes, summary, students=students, questions=questions,
                      copies=copies, regrades=regrades, heading=_deadline_line(course, assignment))
    names, cells, stats = report_tables.course_table(course)
    course_page = write_course_html(out.parent, names, cells, stats) if out.parent == course.reports else None
    return {"dir": str(out), "rows": rows, "scores": summary, "failed": failed_students(course, assignment),
            "predictions": changes, "copies": copies, "score_rows": srows, "students": students,
            "questions": questions, "regrades": regrades, "course_page": str(course_page or "")}


STUDENT_FIELDS = ["student", "name", "score", "max_score", "late", "late_penalty", "status", "flags", "ledger",
                  "copies", "numbers"]
QUESTION_FIELDS = ["notebook", "question", "title", "max_score", "students", "mean", "spread", "min", "max",
                   "share_full", "awaiting_manual", "misconceptions"]


def _student_csv(r) -> dict:
    return {"student": r.student, "name": r.name, "score": "" if r.score is None else r.score,
            "max_score": r.max_score, "late": r.late, "late_penalty": r.penalty, "status": r.status,
            "flags": "; ".join(r.flags), "ledger": r.ledger,
            "copies": "; ".join(f"{c['question']} {c['variable']}: {c['evidence']}" for c in r.copies),
            "numbers": r.numbers}


def _question_csv(q) -> dict:
    return {"notebook": q.notebook, "question": q.question, "title": q.title, "max_score": q.max_score,
            "students": q.n, "mean": round(q.mean, 4), "spread": round(q.spread, 4), "min": q.low, "max": q.high,
            "share_full": round(q.share_full, 4), "awaiting_manual": q.awaiting,
            "misconceptions": "; ".join(q.misconceptions)}


def _deadline_line(course: Course, assignment: str) -> str:
    """"Due ...; late policy: ...; N extension(s)", or "" without a due date."""
    from autograder.grading import deadlines, late

    due = deadlines.due_date(course, assignment)
    if due is None:
        return ""
    policy = late.read(course.root)
    n = len(deadlines.extensions(course, assignment))
    return (f"Due {due.strftime('%Y-%m-%d %H:%M UTC')}; late policy: "
            + (policy.text if policy else "none (no penalty)") + f"; {n} extension(s).")


def score_summary(srows: list[ScoreRow]) -> dict:
    """{notebook: {n, mean, median, min, max, max_score}} of the graded students' scores."""
    summary = {}
    for nb in sorted({r.notebook for r in srows}):
        s = [r.score for r in srows if r.notebook == nb]
        summary[nb] = {"n": len(s), "mean": statistics.mean(s), "median": statistics.median(s),
                       "min": min(s), "max": max(s), "max_score": max(r.max_score for r in srows if r.notebook == nb)}
    return summary


# ---------------------------------------------------------------------------------------------
# the console's summary of the report (python -m autograder report)
# ---------------------------------------------------------------------------------------------
def format_report(result: dict) -> str:
    """What `report` prints: where the files are, then one short section per finding."""
    preds, srows = result.get("predictions", []), result.get("score_rows", [])
    from autograder.integrity.copies import format_copies

    lines = [f"report written to {result['dir']}/ (report.html, students.csv, questions.csv, misconceptions.csv/.png, "
             "predictions.csv, scores.csv/.png, copies.csv)"
             + (f" and the course page {result['course_page']}" if result.get("course_page") else "") + "; "
             "a predict-then-verify question counts the prediction committed before its reveal"]
    lines += _misconception_lines(result["rows"])
    lines += _change_lines(preds)
    lines += _no_record_lines(preds)
    lines += _truth_shown_lines(preds)
    lines += _edited_record_lines(preds)
    lines += format_copies(result.get("copies", []))
    lines += [f"  left out (grading failed): {student}: {cause}" for student, cause in sorted(result.get("failed", {}).items())]
    lines += _flagged_lines(srows)
    lines += _score_lines(result["scores"])
    return "\n".join(lines)


def _misconception_lines(rows: list[dict]) -> list[str]:
    """Per question variable: the share wrong, the truth and the most common wrong answer."""
    panels: dict = {}
    for r in rows:
        panels.setdefault((r["notebook"], r["question"], r["variable"]), []).append(r)
    lines = []
    for rs in panels.values():
        first = rs[0]
        wrong = [x for x in rs if not x["is_truth"] and x["answer"] != NO_ANSWER and x["count"]]
        top = f"; most common wrong answer: {wrong[0]['answer']} ({wrong[0]['count']})" if wrong else ""
        # "the truth, each student's own (...)" names itself; a single truth is "truth 0.5 FLOP/B"
        truth = first["truth"] if first.get("own_truths") else f"truth {first['truth'] or '?'}"
        lines.append(f"  {first['question']} {first['variable']}: {first['share_wrong']:.0%} wrong, {truth}{top}")
    return lines


def _change_lines(preds: list[PredictionRow]) -> list[str]:
    """Per question: how many changed the prediction after the reveal, and the commonest changes."""
    by_q: dict = {}
    for r in preds:
        by_q.setdefault((r.notebook, r.question), []).append(r)
    lines = []
    for (nb, q), rs in sorted(by_q.items()):
        changed = [r for r in rs if r.rule is Rule.CHANGED]
        if changed:
            moves = Counter(f"{r.changed_from} -> {r.changed_to}" for r in changed)
            lines.append(f"  {q}: {len(changed)} of {len(rs)} changed the prediction after the reveal ("
                         + "; ".join(f"{m} x{n}" for m, n in moves.most_common(3)) + ")")
    return lines


def _no_record_lines(preds: list[PredictionRow]) -> list[str]:
    """The notebooks handed in without a prediction record, by the --no-record policy they were graded under."""
    unrecorded = sorted({(r.notebook, r.student, r.flag is Flag.NO_RECORD_ZERO) for r in preds if r.record == "none"})
    lines = []
    for zero, policy in ((False, "graded on final answers"), (True, "no correctness points: --no-record zero-predictions")):
        who = [(nb, s) for nb, s, z in unrecorded if z == zero]
        if who:
            lines.append(f"  no prediction record ({policy}): " + ", ".join(f"{s} ({nb})" for nb, s in who))
    return lines


def _truth_shown_lines(preds: list[PredictionRow]) -> list[str]:
    shown = sorted({(r.notebook, r.student, r.question) for r in preds if r.flag in TRUTH_SHOWN})
    return [f"  TRUTH SHOWN WITHOUT A RECORDED REVEAL? {s} ({nb}) {q}" for nb, s, q in shown]


def _edited_record_lines(preds: list[PredictionRow]) -> list[str]:
    edited = sorted({(r.notebook, r.student, r.record_problems) for r in preds if r.record_problems})
    return [f"  PREDICTION RECORD EDITED? {s} ({nb}): {why}" for nb, s, why in edited]


def _flagged_lines(srows: list[ScoreRow]) -> list[str]:
    """The flagged notebooks with why, the students the hub's ledger did not vouch for, and the
    written answers awaiting a manual grade."""
    lines = [f"  FLAGGED: {r.student} ({r.notebook}): {r.flag}" for r in srows if r.flagged]
    unvouched = sorted({r.student for r in srows if r.ledger is Vouch.NOT_VOUCHED})
    if unvouched:
        lines.append(f"  not vouched (graded without the hub's prediction ledger; information, not a penalty): "
                     f"{', '.join(unvouched)}")
    waiting = sorted({r.student for r in srows if r.needs_manual_grade})
    if waiting:
        lines.append(f"  needs manual grade (written answers not graded yet): {', '.join(waiting)}")
    return lines


def _score_lines(scores: dict) -> list[str]:
    return [f"  {nb}: n={s['n']} mean {s['mean']:.1f} median {s['median']:g} min {s['min']:g} max {s['max']:g} "
            f"(of {s['max_score']:g})" for nb, s in scores.items()]
