"""The grading rule holds for every question and cannot be switched off, and what the notebook
says about it is true: scripted students work a small predict-then-verify assignment in real
kernels (a prediction, Q1, an answer worked out by hand, Q2, and a question declared in
course_lib.questions, Q3 = hello_q4), hand it in as notebooks with
their record beside them, and the instructor grades it through the real path.

* honest   -- right from the start: full marks;
* reworder -- right, then rewords Q3's reasoning after its reveal: full marks (same answer);
* byhand   -- works Q2 out wrong, sees the truth, fixes it (then restarts and runs all): no
              correctness points for Q2, and every receipt and verify cell says why;
* envtrick -- sets NBGRADER_EXECUTION in its own kernel, predicts Q1 wrong, sees the truth and
              fixes it: recorded all the same, no correctness points for Q1;
* hider    -- keeps the reveal out of the record (reveal replaced in the kernel) while the verify
              cell's output, the truth, stays in the notebook: flagged, graded on the first commit;
* cleared  -- right answers, outputs cleared and the record deleted: graded by --no-record
              (final: full marks; zero-predictions: no correctness points), flagged either way.
"""
from __future__ import annotations

import csv
import os
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from course_lib.exercises import predictions
from tiny_course import FAST, SANDBOX, WHY_NOT, _notebook, cell, run_cli

pytestmark = [pytest.mark.skipif(not SANDBOX, reason=f"grading needs the sandbox: {WHY_NOT}"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

A, NB = "p1", "rules"
SETUP = ("# Setup (locked)\nfrom course_lib import Hardware, Models, Q_, solve\n"
         "from course_lib.exercises.checks import Number, Reason, Regime, check_form, reveal, verify\n"
         "decode = solve(Models.Llama3_8B, Hardware.H100, batch_size=1, precision='fp16')")
Q1_RIGHT = ("q1_regime = 'memory-bound'\n"
            "q1_reasoning = 'Decode at batch 1 reads every weight for two FLOPs each, far below the ridge.'")
Q1_WRONG = ("q1_regime = 'compute-bound'\n"
            "q1_reasoning = 'Eight billion parameters make so many FLOPs that the tensor cores are the limit.'")
Q2_RIGHT = "q2_ms = decode.latency.m_as('ms')"
Q2_WRONG = "q2_ms = decode.latency.m_as('ms') / 2"
Q3_RIGHT = ("q4_prediction = 'memory-bound'\n"
            "q4_reasoning = 'Every layer reads and writes its activations, which roughly doubles the bytes.'")
Q3_REWORDED = ("q4_prediction = 'memory-bound'\n"
               "q4_reasoning = 'The activations each layer moves add about as many bytes as the weights.'")
HIDDEN_Q1 = ("# Checks q1_regime (hidden test).\n### BEGIN HIDDEN TESTS\n"
             "from course_lib import Hardware, Models, solve\nfrom course_lib.exercises.checks import Regime, check_answer\n"
             "check_answer('rules_q1', 'q1_regime', Regime(), solve(Models.Llama3_8B, Hardware.H100, batch_size=1))\n"
             "### END HIDDEN TESTS")
HIDDEN_Q2 = ("# Checks q2_ms (hidden test).\n### BEGIN HIDDEN TESTS\n"
             "from course_lib import Hardware, Models, solve\nfrom course_lib.exercises.checks import Number, check_answer\n"
             "check_answer('rules_q2', 'q2_ms', Number('ms', rel_tol=0.02),\n"
             "             solve(Models.Llama3_8B, Hardware.H100, batch_size=1).latency)\n### END HIDDEN TESTS")


def source_notebook() -> nbformat.NotebookNode:
    sol = lambda src: f"### BEGIN SOLUTION\n{src}\n### END SOLUTION"   # noqa: E731
    return _notebook([
        cell("markdown", "# Rules\n### Q1 · Decode's regime (prediction, 3 points)"),
        cell("code", SETUP, "rules_setup", locked=True),
        cell("code", "# q1_regime: 'memory-bound' or 'compute-bound'; q1_reasoning: one sentence\n" + sol(Q1_RIGHT),
             "rules_q1_prediction", solution=True),
        cell("code", "# Form check (visible).\ncheck_form('rules_q1', q1_regime=Regime(), q1_reasoning=Reason())",
             "rules_q1_form", grade=True, locked=True, points=1),
        cell("code", HIDDEN_Q1, "rules_q1_correct", grade=True, locked=True, points=2),
        cell("code", "# Verify Q1 (locked).\nreveal('rules_q1')\nprint(decode)\n"
                     "verify('rules_q1', 'q1_regime', Regime(), decode, 'Intensity is far below the ridge.')",
             "rules_q1_verify", locked=True),
        cell("markdown", "### Q2 · Decode's time per token (by hand, 3 points)"),
        cell("code", "# q2_ms: the time of one decode step (ms)\n" + sol(Q2_RIGHT), "rules_q2_answer", solution=True),
        cell("code", "# Form check (visible).\ncheck_form('rules_q2', q2_ms=Number('ms'))",
             "rules_q2_form", grade=True, locked=True, points=1),
        cell("code", HIDDEN_Q2, "rules_q2_correct", grade=True, locked=True, points=2),
        cell("code", "# Verify Q2 (locked).\nreveal('rules_q2')\n"
                     "verify('rules_q2', 'q2_ms', Number('ms', rel_tol=0.02), decode.latency, 'Bytes over bandwidth.')",
             "rules_q2_verify", locked=True),
        # a question declared in course_lib.questions: its hidden test reads the reasoning too
        cell("markdown", "### Q3 · ResNet-50's regime at batch 1 (prediction, 3 points)"),
        cell("code", "# q4_prediction: 'memory-bound' or 'compute-bound'; q4_reasoning: one sentence\n" + sol(Q3_RIGHT),
             "hello_q4_prediction", solution=True),
        cell("code", "# Form check (visible).\nfrom course_lib import questions\nquestions.check_form('hello_q4')",
             "hello_q4_form", grade=True, locked=True, points=1),
        cell("code", "# Hidden test.\n### BEGIN HIDDEN TESTS\nfrom course_lib.questions import grade\n"
                     "grade('hello_q4')\n### END HIDDEN TESTS", "hello_q4_correct", grade=True, locked=True, points=2),
        cell("code", "# Verify (locked).\nfrom course_lib import questions\nquestions.show('hello_q4')",
             "hello_q4_verify", locked=True),
    ])


def gid(c) -> str:
    return c.metadata.get("nbgrader", {}).get("grade_id", "")


def text(c) -> str:
    """What a cell shows: its streams, displays and errors, as plain text."""
    out = []
    for o in c.get("outputs", []):
        if o.output_type == "stream":
            out.append(o.text)
        elif o.output_type in ("display_data", "execute_result"):
            out.append(o.data.get("text/plain", ""))
        elif o.output_type == "error":
            out.append("\n".join(o.traceback))
    return "\n".join(out)


class Student:
    """A kernel on a notebook in its folder, run cell by cell as in JupyterLab."""

    def __init__(self, folder: Path):
        from nbclient import NotebookClient

        self.folder, self.path = folder, folder / f"{NB}.ipynb"
        self.nb = nbformat.read(self.path, as_version=4)
        env = {k: v for k, v in os.environ.items() if not k.startswith("NBGRADER")}
        self.client = NotebookClient(self.nb, kernel_name="python3", allow_errors=True, timeout=120,
                                     resources={"metadata": {"path": str(folder)}})
        self.client.km = self.client.create_kernel_manager()
        self.client.start_new_kernel(env=env, cwd=str(folder))
        self.client.start_new_kernel_client()

    def cell(self, grade_id: str):
        return next(c for c in self.nb.cells if gid(c) == grade_id)

    def answer(self, grade_id: str, source: str) -> None:
        self.cell(grade_id).source = source

    def run(self, *grade_ids: str) -> None:
        for g in grade_ids:
            i = next(i for i, c in enumerate(self.nb.cells) if gid(c) == g)
            self.client.execute_cell(self.nb.cells[i], i)

    def code(self, source: str) -> str:
        """Run a scratch cell (not saved in the notebook); returns what it showed."""
        c = nbformat.v4.new_code_cell(source)
        self.nb.cells.append(c)
        try:
            self.client.execute_cell(c, len(self.nb.cells) - 1)
        finally:
            self.nb.cells.pop()
        return text(c)

    def run_all(self) -> None:
        for i, c in enumerate(self.nb.cells):
            if c.cell_type == "code":
                self.client.execute_cell(c, i)

    def save_and_stop(self) -> None:
        nbformat.write(self.nb, self.path)
        self.client._cleanup_kernel()


def fetch(release: Path, home: Path) -> Path:
    home.mkdir(parents=True)
    nb = nbformat.read(release / A / f"{NB}.ipynb", as_version=4)
    nbformat.write(nb, home / f"{NB}.ipynb")
    return home


def fill(s: Student, q1=Q1_RIGHT, q2=Q2_RIGHT) -> None:
    s.answer("rules_q1_prediction", q1)
    s.answer("rules_q2_answer", q2)
    s.answer("hello_q4_prediction", Q3_RIGHT)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from autograder.authoring.release import generate

    base = tmp_path_factory.mktemp("rules")
    (base / "source" / A).mkdir(parents=True)
    nbformat.write(source_notebook(), str(base / "source" / A / f"{NB}.ipynb"))
    generate(dest=base / "release", source=base / "source")
    course = Course(root=base / "course", source=base / "source", release=base / "release")
    lms, seen = base / "lms", {}

    s = Student(fetch(course.release, lms / "honest"))
    fill(s)
    s.run_all()
    s.save_and_stop()

    # by hand, wrong; the truth; fixed; a restart before the answer cells ran; Restart & Run All
    s = Student(fetch(course.release, lms / "byhand"))
    fill(s, q2=Q2_WRONG)
    s.run_all()
    s.answer("rules_q2_answer", Q2_RIGHT)
    s.run("rules_q2_answer", "rules_q2_form", "rules_q2_verify")
    seen["revised form"], seen["revised verify"] = text(s.cell("rules_q2_form")), text(s.cell("rules_q2_verify"))
    s.save_and_stop()
    s = Student(lms / "byhand")
    s.run("rules_setup", "rules_q2_form", "rules_q2_verify")
    seen["restarted form"], seen["restarted verify"] = text(s.cell("rules_q2_form")), text(s.cell("rules_q2_verify"))
    seen["restarted form outputs"] = s.cell("rules_q2_form").outputs
    s.run_all()
    seen["run all form"], seen["run all verify"] = text(s.cell("rules_q2_form")), text(s.cell("rules_q2_verify"))
    s.save_and_stop()

    # a fresh notebook: Run All stops at the first unanswered cell, with one line
    s = Student(fetch(course.release, base / "fresh"))
    s.run_all()
    seen["fresh"] = {gid(c): c.outputs for c in s.nb.cells if c.cell_type == "code"}
    s.save_and_stop()

    # a declared question's reasoning reworded after the reveal: the answer is the same
    s = Student(fetch(course.release, lms / "reworder"))
    fill(s)
    s.run_all()
    s.answer("hello_q4_prediction", Q3_REWORDED)
    s.run("hello_q4_prediction", "hello_q4_form", "hello_q4_verify")
    s.save_and_stop()

    s = Student(fetch(course.release, lms / "envtrick"))
    seen["envtrick"] = s.code("import os\nos.environ['NBGRADER_EXECUTION'] = 'autograde'")
    fill(s, q1=Q1_WRONG)
    s.run_all()
    s.answer("rules_q1_prediction", Q1_RIGHT)
    s.run("rules_q1_prediction", "rules_q1_form", "rules_q1_verify")
    s.save_and_stop()

    s = Student(fetch(course.release, lms / "hider"))
    s.code("import course_lib.exercises.predictions as P\nP.reveal = lambda *questions: None")
    fill(s, q1=Q1_WRONG)
    s.run_all()
    s.answer("rules_q1_prediction", Q1_RIGHT)
    s.run("rules_q1_prediction", "rules_q1_form", "rules_q1_verify")
    s.save_and_stop()

    s = Student(fetch(course.release, lms / "cleared"))
    fill(s)
    s.run_all()
    for c in s.nb.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    s.save_and_stop()
    (lms / "cleared" / predictions.RECORD_FILE).unlink()

    common = ["--root", course.root, "--source", course.source, "--release-dir", course.release]
    run_cli("collect", A, lms, *common)
    g = run_cli("grade", A, *common, *FAST)
    r = run_cli("report", A, *common)
    rows = list(csv.DictReader(open(course.root / "reports" / A / "predictions.csv")))
    scores = cell_scores(course)
    z = run_cli("grade", A, *common, *FAST, "--no-record", "zero-predictions", "--student", "cleared")
    zr = run_cli("report", A, *common)
    return {"course": course, "seen": seen, "grade": g.stdout + g.stderr, "report": r.stdout, "rows": rows,
            "scores": scores, "zero": z.stdout + z.stderr, "zero_scores": cell_scores(course),
            "zero_report": zr.stdout,
            "zero_rows": list(csv.DictReader(open(course.root / "reports" / A / "predictions.csv")))}


def cell_scores(course) -> dict:
    from autograder.grading.grade import cell_scores as scores

    return {s: {k.split("/")[1]: v for k, v in d.items() if k.endswith("_correct")}
            for s, d in scores(course.db_url, A).items()}


def test_right_answers_earn_full_marks(graded):
    assert graded["scores"]["honest"] == {"rules_q1_correct": 2.0, "rules_q2_correct": 2.0, "hello_q4_correct": 2.0}


def test_a_reworded_reasoning_after_the_reveal_is_no_change_of_the_answer(graded):
    assert graded["scores"]["reworder"] == graded["scores"]["honest"]
    rows = {r["student"] + r["question"]: r for r in graded["rows"]}
    assert rows["reworderhello_q4"]["rule"] == "committed"


def test_a_by_hand_answer_changed_after_its_reveal_earns_no_correctness_points(graded):
    assert graded["scores"]["byhand"] == {"rules_q1_correct": 2.0, "rules_q2_correct": 0.0, "hello_q4_correct": 2.0}
    page = graded["course"].autograded / "byhand" / A / f"{NB}.ipynb"
    meta = nbformat.read(page, as_version=4).metadata["autograder"]
    assert meta["predictions"]["questions"]["rules_q2"]["rule"] == "changed-after-reveal"
    assert "Q2 was changed after its truth was revealed" in meta["verdicts"]["rules_q2_correct"]["message"]
    assert "Q2 changed after the reveal: no correctness points" in graded["grade"]


def test_the_receipt_and_the_verify_cell_say_which_answer_is_graded_after_a_revision(graded):
    seen = graded["seen"]
    form, verify = seen["revised form"], seen["revised verify"]
    assert "Q2: graded on q2_ms = " in form and "committed at" in form and "before the truth was shown" in form
    assert "Your revision q2_ms = " in form and "earns no correctness points" in form
    assert "Your prediction holds" not in verify
    assert "q2_ms (committed " in verify and ", graded):" in verify
    assert "Your committed answer differs." in verify
    assert "(differs from the truth); your revision, " in verify and "matches it, but earns no correctness points" in verify


def test_after_a_restart_the_form_check_says_to_rerun_the_answer_cells(graded):
    seen = graded["seen"]
    assert "Q2 was answered before (committed q2_ms = " in seen["restarted form"]
    assert "re-run the setup cell and your answer cells (Run All, or Run > Run All Above)" in seen["restarted form"]
    assert "not answered yet" not in seen["restarted form"]
    [err] = [o for o in seen["restarted form outputs"] if o.output_type == "error"]
    assert err.ename == "CheckFailed" and len(err.traceback) == 1, err.traceback
    # the verify cell judges the committed answer even with the answer cell not run
    assert "not defined in this kernel" in seen["restarted verify"]
    assert "Your committed answer differs." in seen["restarted verify"]


def test_restart_and_run_all_does_not_hide_the_graded_commit(graded):
    seen = graded["seen"]
    assert "unchanged since" not in seen["run all form"]
    assert "Q2: graded on q2_ms = " in seen["run all form"] and "earns no correctness points" in seen["run all form"]
    assert "matches it, but earns no correctness points" in seen["run all verify"]


def test_run_all_on_a_fresh_notebook_stops_with_one_line_at_the_first_question(graded):
    outs = graded["seen"]["fresh"]
    [err] = [o for o in outs["rules_q1_prediction"] if o.output_type == "error"]
    assert err.ename == "NotImplementedError" and len(err.traceback) == 1, err.traceback
    assert err.traceback[0].endswith("Q1 is not answered yet: replace raise NotImplementedError() with your answer "
                                     "(q1_regime, q1_reasoning), then run this cell and the form check below it.")
    # (nbclient runs on past errors where JupyterLab's Run All stops) every error is one line
    errors = [o for out in outs.values() for o in out if o.output_type == "error"]
    assert {e.ename for e in errors} == {"NotImplementedError", "CheckFailed", "NotCommitted"}
    assert all(len(e.traceback) == 1 for e in errors), [e.traceback for e in errors]
    [nc] = [o for o in outs["rules_q1_verify"] if o.output_type == "error"]
    assert "Q1: no committed prediction yet" in nc.traceback[0]


def test_nbgraders_variable_in_the_students_kernel_changes_nothing(graded):
    assert graded["scores"]["envtrick"] == {"rules_q1_correct": 0.0, "rules_q2_correct": 2.0, "hello_q4_correct": 2.0}
    rows = {r["student"] + r["question"]: r for r in graded["rows"]}
    assert rows["envtrickrules_q1"]["rule"] == "changed-after-reveal"


def test_a_truth_on_screen_without_a_recorded_reveal_is_flagged_and_graded_on_the_first_commit(graded):
    assert graded["scores"]["hider"] == {"rules_q1_correct": 0.0, "rules_q2_correct": 2.0, "hello_q4_correct": 2.0}
    rows = {r["student"] + r["question"]: r for r in graded["rows"]}
    assert rows["hiderrules_q1"]["rule"] == "changed-after-reveal"
    assert "without a recorded reveal" in rows["hiderrules_q1"]["flag"]
    assert "hider rules: Q1: the truth is in the notebook's outputs without a recorded reveal" in graded["grade"]
    assert "TRUTH SHOWN WITHOUT A RECORDED REVEAL? hider (rules) rules_q1" in graded["report"]
    assert not rows["honestrules_q1"]["flag"]


def test_no_record_is_graded_by_the_instructors_policy_and_flagged_either_way(graded):
    assert graded["scores"]["cleared"] == graded["scores"]["honest"]
    assert "cleared rules: no prediction record (graded on the final answers)" in graded["grade"]
    assert "no prediction record (graded on final answers): cleared (rules)" in graded["report"]
    rows = {r["student"] + r["question"]: r for r in graded["rows"]}
    assert rows["clearedrules_q1"]["rule"] == "no-record" and "final answer" in rows["clearedrules_q1"]["flag"]
    # --no-record zero-predictions: no correctness points; the others untouched
    assert graded["zero_scores"]["cleared"] == {"rules_q1_correct": 0.0, "rules_q2_correct": 0.0, "hello_q4_correct": 0.0}
    assert graded["zero_scores"]["honest"] == graded["scores"]["honest"]
    assert "cleared rules: no prediction record (no correctness points for its questions" in graded["zero"]
    rows = {r["student"] + r["question"]: r for r in graded["zero_rows"]}
    assert "no correctness points" in rows["clearedrules_q2"]["flag"]
    assert "no prediction record (no correctness points: --no-record zero-predictions): cleared (rules)" \
        in graded["zero_report"]


def test_nbgraders_validate_records_like_run_all(graded, tmp_path):
    import subprocess
    import sys

    nb = nbformat.read(graded["course"].release / A / f"{NB}.ipynb", as_version=4)
    for c in nb.cells:
        c.source = {"rules_q1_prediction": Q1_RIGHT, "rules_q2_answer": Q2_RIGHT,
                    "hello_q4_prediction": Q3_RIGHT}.get(gid(c), c.source)
    nbformat.write(nb, tmp_path / f"{NB}.ipynb")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NBGRADER")}
    p = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "validate", f"{NB}.ipynb"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=300)
    assert "Success! Your notebook passes all the tests." in p.stdout, p.stdout + p.stderr
    events = predictions.load_record(tmp_path / predictions.RECORD_FILE)
    assert [(e["q"], e["kind"]) for e in events] == [(q, k) for q in ("rules_q1", "rules_q2", "hello_q4")
                                                     for k in ("commit", "reveal")]
