"""Predictions that count, end to end: scripted students work a lesson in a real kernel as they
would in JupyterLab (answer, run the form check, run the verify cell, change their mind, save),
hand it in through the real nbgrader exchange or as a single uploaded .ipynb, and the
instructor collects, grades (sandboxed) and reports.

* honest    -- right predictions from the start: full marks;
* changer   -- predicts Q1 wrong (the FLOP ratio), sees the truth, corrects Q1 and re-runs:
               no correctness points for Q1, full points everywhere else;
* uploader  -- the changer again, but hands in only the .ipynb (as to an LMS): the copies of the
               record in its outputs are enough for the same grade;
* stranger  -- the solution run by nbgrader-like tools elsewhere (no record at all): graded on
               its final answers and flagged "no prediction record";
* editor    -- the changer, who then edits the record file by hand so that the committed value
               is the right one: flagged, and still no correctness points for Q1.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.sandbox.bwrap import probe
from course_lib.exercises import predictions
from course_lib.exercises.question_ids import cell_id, is_solution
from tiny_course import run_cli     # in this process: the process boundary is not what these tests are about
from autograder.authoring.cells import read_source

REPO = Path(__file__).resolve().parent.parent
A = "02_memory_wall"
NB = "memory_wall"
SANDBOX, WHY_NOT = probe()

pytestmark = [
    pytest.mark.skipif(not (REPO / "solutions" / A).is_dir(), reason=f"no {A} in solutions/"),
    pytest.mark.skipif(not SANDBOX, reason=f"grading needs the sandbox: {WHY_NOT}"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

WRONG_Q1 = ('q1_speedup = 989.4 / 312\n'
            'q1_reasoning = "The H100 has about three times the FLOP/s of the A100, so it is three times faster."\n')


def solution_answers() -> dict:
    nb = read_source(REPO / "solutions" / A / f"{NB}.ipynb")
    return {cell_id(c): "\n".join(
                l for l in c.source.splitlines() if "### BEGIN SOLUTION" not in l and "### END SOLUTION" not in l)
            for c in nb.cells if is_solution(c) and c.cell_type == "code"}


def run(*args, cwd=None, check=True):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NBGRADER")}
    p = subprocess.run([sys.executable, "-m", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                       env=env, timeout=900)
    if check:
        assert p.returncode == 0, f"{args} failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p


def gid(cell) -> str:
    return cell_id(cell)


class Student:
    """A kernel on a notebook in its assignment folder, run cell by cell as in JupyterLab."""

    def __init__(self, folder: Path):
        from nbclient import NotebookClient

        self.folder, self.path = folder, folder / f"{NB}.ipynb"
        self.nb = nbformat.read(self.path, as_version=4)
        env = {k: v for k, v in os.environ.items() if not k.startswith("NBGRADER")}
        self.client = NotebookClient(self.nb, kernel_name="python3", allow_errors=True, timeout=180,
                                     resources={"metadata": {"path": str(folder)}})
        self.client.km = self.client.create_kernel_manager()
        self.client.start_new_kernel(env=env, cwd=str(folder))
        self.client.start_new_kernel_client()

    def index(self, grade_id: str) -> int:
        return next(i for i, c in enumerate(self.nb.cells) if gid(c) == grade_id)

    def answer(self, grade_id: str, source: str) -> None:
        self.nb.cells[self.index(grade_id)].source = source

    def run(self, *grade_ids: str) -> None:
        for g in grade_ids:
            i = self.index(g)
            self.client.execute_cell(self.nb.cells[i], i)

    def run_all(self) -> None:
        for i, cell in enumerate(self.nb.cells):
            if cell.cell_type == "code":
                self.client.execute_cell(cell, i)

    def save_and_stop(self) -> None:
        nbformat.write(self.nb, self.path)
        self.client._cleanup_kernel()


def work(folder: Path, answers: dict, change_q1: bool) -> None:
    s = Student(folder)
    for g, src in answers.items():
        s.answer(g, src)
    if change_q1:
        s.answer("wall_q1_prediction", WRONG_Q1)
    s.run_all()                     # commits every answer, reveals every truth
    if change_q1:
        s.answer("wall_q1_prediction", answers["wall_q1_prediction"])      # seen the truth: "fixed"
        s.run("wall_q1_prediction", "wall_q1_form", "wall_q1_verify")
    s.save_and_stop()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("predictions")
    exchange, course = base / "exchange", base / "course"
    exchange.mkdir()
    os.chmod(exchange, 0o1777)
    # into a folder of its own: notebooks/ is the committed release other tests read meanwhile
    run_cli("release", A, "--release-dir", base / "release", "--exchange", exchange)
    answers = solution_answers()
    # three students through the exchange: fetch, work, submit
    for student, change in (("honest", False), ("changer", True), ("editor", True)):
        home = base / student
        home.mkdir()
        run("nbgrader", "fetch_assignment", A, "--course", "roofline", f"--Exchange.root={exchange}", cwd=home)
        work(home / A, answers, change)
        if student == "editor":
            record = home / A / predictions.RECORD_FILE
            events = predictions.load_record(record)
            first = next(e for e in events if e["q"] == "wall_q1" and e["kind"] == "commit")
            first["values"]["q1_speedup"] = {"type": "float", "value": 1.6429622363903873}
            first["hash"] = predictions.event_hash(first)
            record.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in events))
        run("nbgrader", "submit", A, "--course", "roofline", f"--Exchange.root={exchange}",
            f"--student={student}", cwd=home)
    run_cli("collect", A, "--exchange", exchange, "--root", course)
    # two more as single notebooks (an LMS download): the changer's notebook alone, and a solution
    # run elsewhere (no record anywhere)
    lms = base / "lms"
    work_dir = base / "uploader-work"
    shutil.copytree(base / "changer" / A, work_dir)
    (lms / "uploader").mkdir(parents=True)
    shutil.copy(work_dir / f"{NB}.ipynb", lms / "uploader" / f"{NB}.ipynb")
    (lms / "stranger").mkdir()
    shutil.copy(REPO / "solutions" / A / f"{NB}.ipynb", lms / "stranger" / f"{NB}.ipynb")
    run_cli("collect", A, lms, "--root", course)
    g = run_cli("grade", A, "--root", course, "-q")
    r = run_cli("report", A, "--root", course)
    return {"course": course, "grade": g.stdout + g.stderr, "report": r.stdout,
            "scores": cell_scores(course)}


def cell_scores(course: Path) -> dict:
    from autograder.grading.grade import cell_scores as scores

    return scores("sqlite:///" + str(course / "gradebook.db"), A)


def correct_scores(scores: dict, student: str) -> dict:
    return {k.split("/")[1]: v for k, v in scores[student].items() if k.endswith("_correct")}


def test_a_prediction_right_from_the_start_earns_full_marks(graded):
    s = correct_scores(graded["scores"], "honest")
    assert s and all(v == 2.0 for v in s.values()), s


@pytest.mark.parametrize("student", ["changer", "uploader"])
def test_a_prediction_changed_after_the_reveal_earns_no_correctness_points(graded, student):
    s = correct_scores(graded["scores"], student)
    assert s.pop("wall_q1_correct") == 0.0
    assert all(v == 2.0 for v in s.values()), s            # every other question in full
    assert graded["scores"][student][f"{NB}/wall_q1_form"] == 1.0   # form points unaffected


def test_the_feedback_says_so_plainly(graded):
    page = graded["course"] / "autograded" / "changer" / A / f"{NB}.ipynb"
    meta = nbformat.read(page, as_version=4).metadata["autograder"]
    v = meta["verdicts"]["wall_q1_correct"]
    assert "changed after its truth was revealed" in v["message"] and "no correctness points" in v["message"]
    assert meta["predictions"]["questions"]["wall_q1"]["rule"] == "changed-after-reveal"
    assert v["committed"]["passed"] is False      # what was committed was wrong too
    run_cli("feedback", A, "--root", graded["course"], "--student", "changer")
    html = (graded["course"] / "feedback" / "changer" / A / f"{NB}.html").read_text()
    assert "changed after its truth was revealed" in html


def test_no_record_is_graded_on_final_answers_and_flagged(graded):
    s = correct_scores(graded["scores"], "stranger")
    assert s and all(v == 2.0 for v in s.values()), s
    assert "stranger memory_wall: no prediction record" in graded["grade"]
    assert "no prediction record (graded on final answers): stranger" in graded["report"]


def test_a_hand_edited_record_is_flagged_and_earns_nothing_for_the_changed_prediction(graded):
    assert "editor memory_wall: prediction record:" in graded["grade"], graded["grade"]
    assert "PREDICTION RECORD EDITED? editor" in graded["report"]
    assert correct_scores(graded["scores"], "editor")["wall_q1_correct"] == 0.0


def test_the_report_counts_committed_predictions_and_shows_the_change(graded):
    rows = list(csv.DictReader(open(graded["course"] / "reports" / A / "predictions.csv")))
    changed = {r["student"]: r for r in rows if r["question"] == "wall_q1" and r["rule"] == "changed-after-reveal"}
    assert set(changed) == {"changer", "uploader", "editor"}
    assert "3.17" in changed["changer"]["from"] and "1.64" in changed["changer"]["to"]
    assert "wall_q1: 3 of 5 changed the prediction after the reveal" in graded["report"]
    mis = list(csv.DictReader(open(graded["course"] / "reports" / A / "misconceptions.csv")))
    q1 = [r for r in mis if r["question"] == "wall_q1" and r["variable"] == "q1_speedup"]
    # the three changers are counted with the prediction they committed: the peak ratio
    peak = [r for r in q1 if r["label"] == "peak-ratio"]
    assert peak and int(peak[0]["count"]) == 3, q1


def test_the_submitted_notebooks_carry_the_record_in_their_outputs(graded):
    nb = json.loads((graded["course"] / "submitted" / "uploader" / A / f"{NB}.ipynb").read_text())
    chains = predictions.notebook_events(nb)
    assert any(c[-1]["q"] == "wall_q1" and [e["kind"] for e in c] == ["commit", "reveal", "revise"] for c in chains)
    assert not (graded["course"] / "submitted" / "uploader" / A / predictions.RECORD_FILE).exists()
    assert (graded["course"] / "submitted" / "changer" / A / predictions.RECORD_FILE).exists()
