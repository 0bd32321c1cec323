"""Grading an instructor can trust (issue 7): every finding of that issue, on the tiny course.

One class of t3 (course_lib's own checks) is graded once, then fed back, reported, exported and
graded by hand; the students are the findings: answers in other units and forms, a GB/GiB slip,
a half-right question, a submission that monkeypatches the checks and hooks the kernel, one that
prints every executed cell base64-encoded, one that writes a hidden test's import line itself,
a byte-order mark, stripped nbgrader metadata (repairable and not), a 10 MB output line, /tmp.
"""
from __future__ import annotations

import base64
import binascii
import csv
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.outputs.feedback import leaked_lines, source_secrets
from autograder.grading.grade import cell_scores, grade
from autograder.intake.repair import BOM
from course_lib.exercises.question_ids import cell_id
from tiny_course import (FAST, NO_SANDBOX_FLAG, PY, REPO, SANDBOX, SANDBOX_ARG, needs_sandbox, run_cli,
                         student_nb, write_class)

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")

Q1 = "t3units_q1_answer"
Q2 = "t3units_q2_answer"
REFLECTION = "t3units_q2_reflection"
RIGHT = {Q1: "from course_lib import Q_\nq1_time = Q_(7.36, 'ms')\nq1_regime = 'memory-bound'",
         Q2: "q2_bytes = Q_(16, 'GB')", REFLECTION: "Datasheets count bytes in powers of ten."}
MONKEY = (
    "import sys, builtins, types\n"
    "import course_lib.exercises.checks as _c\n"
    "_c.check_number = _c.check_regime = lambda *a, **k: None       # the checks pass anything\n"
    "_fake = types.ModuleType('course_lib.exercises.checks')\n"
    "_fake.__dict__.update(_c.__dict__)\n"
    "sys.modules['course_lib.exercises.checks'] = _fake                # and so does any re-import\n"
    "def _answer_right(info):                                          # the right value before every cell\n"
    "    globals()['q2_bytes'] = Q_(16, 'GB')\n"
    "get_ipython().events.register('pre_run_cell', _answer_right)\n"
    "get_ipython().input_transformers_cleanup.append(lambda lines: [l.replace('raise ', 'pass #') for l in lines])\n"
)
SPY = (
    "import base64 as _b64\n"
    "def _spy(info):\n"
    "    print('SPY', _b64.b64encode(info.raw_cell.encode()).decode())\n"
    "def _spy_all(result):\n"
    "    print('ALL', _b64.b64encode('\\n'.join(In).encode()).decode())\n"
    "get_ipython().events.register('pre_run_cell', _spy)\n"
    "get_ipython().events.register('post_run_cell', _spy_all)\n"
)
HUGE = "print('x' * 10_000_000)"
TMP = ("import tempfile\nwith tempfile.NamedTemporaryFile(dir='/tmp') as _f:\n    _f.write(b'scratch')\n"
       "print('TMP-WRITABLE')")


def _answers(**over):
    return {**RIGHT, **over}


def _strip_metadata(data: bytes, duplicate_answer: bool = False) -> bytes:
    nb = nbformat.reads(data.decode(), as_version=4)
    for c in nb.cells:
        c.metadata.pop("nbgrader", None)
        c.metadata.pop("deletable", None)
        c.metadata.pop("editable", None)
    if duplicate_answer:      # a second cell assigning the same answers, right next to the first
        nb.cells.insert(2, nbformat.v4.new_code_cell(RIGHT[Q1]))
    return nbformat.writes(nb).encode()


# what each student must score per test cell (the clean verdicts)
EXPECTED = {
    "right": (1, 2, 2), "forms": (1, 2, 2), "gib": (1, 2, 0), "half": (1, 0, 2), "monkey": (1, 0, 0),
    "spy": (1, 2, 2), "importer": (1, 2, 2), "blank": (0, 0, 0), "bom": (1, 2, 2), "bom_collected": (1, 2, 2),
    "stripped": (1, 2, 2), "huge": (1, 2, 2), "tmp": (1, 2, 2), "dict": (1, 2, 0),
}
CELLS = ("t3units_q1_form", "t3units_q1_correct", "t3units_q2_correct")


@pytest.fixture(scope="module")
def course(tiny):
    """The session's tiny course (tests/conftest.py): read-only here, copied where a test changes it."""
    return tiny


@pytest.fixture(scope="module")
def run(course, tmp_path_factory):
    base = tmp_path_factory.mktemp("t3-graded")
    c = Course(root=base / "course", source=course.source, release=course.release)
    nb = lambda **kw: student_nb(course, "t3", "units", **kw)  # noqa: E731
    students = {
        "right": nb(answers=RIGHT),
        "forms": nb(answers=_answers(**{Q1: "from course_lib import Q_\nq1_time = Q_(0.00736, 'second')\n"
                                            "q1_regime = 'MEMORY'", Q2: "q2_bytes = Q_(1.6e4, 'megabyte')"})),
        "gib": nb(answers=_answers(**{Q2: "q2_bytes = Q_(16, 'GiB')"})),
        "half": nb(answers=_answers(**{Q1: "from course_lib import Q_\nq1_time = Q_(7.36, 'ms')\n"
                                            "q1_regime = 'compute-bound'"})),
        "monkey": nb(answers=_answers(**{Q1: "from course_lib import Q_\n" + MONKEY + "q1_time = Q_(1, 'ms')\n"
                                             "q1_regime = 'compute'", Q2: "q2_bytes = Q_(1, 'GB')"})),
        "spy": nb(answers=_answers(**{Q1: SPY + RIGHT[Q1]})),
        # writes a hidden test's own import line: nothing secret about it when the student wrote it
        "importer": nb(answers=_answers(**{Q1: "from course_lib.exercises.checks import check_number, check_regime\n" + RIGHT[Q1]})),
        "blank": nb(),
        "bom_collected": BOM + nb(answers=RIGHT),
        "huge": nb(answers=RIGHT, explore=HUGE),
        "tmp": nb(answers=RIGHT, explore=TMP),
        "dict": nb(answers=_answers(**{Q2: "q2_bytes = {'GB': 16}"})),      # no answer course_lib can record
    }
    src = write_class(base / "in", course, "t3", {s: {"units.ipynb": d} for s, d in students.items()})
    collect_out = run_cli("collect", "t3", src, "--root", c.root, "--source", c.source, "--release-dir", c.release).stdout
    # submissions that reach submitted/ some other way (by hand, from an exchange): no collect to clean them
    for s, data in (("bom", BOM + nb(answers=RIGHT)), ("stripped", _strip_metadata(nb(answers=RIGHT))),
                    ("ambiguous", _strip_metadata(nb(answers=RIGHT), duplicate_answer=True))):
        (c.submitted / s / "t3").mkdir(parents=True)
        (c.submitted / s / "t3" / "units.ipynb").write_bytes(data)
    common = ["--root", c.root, "--source", c.source, "--release-dir", c.release]
    g = run_cli("grade", "t3", *common, *FAST, *NO_SANDBOX_FLAG, "--out", base / "grades.csv", check=False)
    fb = run_cli("feedback", "t3", *common, check=False)
    rep = run_cli("report", "t3", *common, check=False)
    exp = run_cli("export", "--out", base / "export.csv", *common, check=False)
    return {"base": base, "course": c, "common": common, "collect": collect_out, "grade": g, "feedback": fb,
            "report": rep, "export": exp}


def _page(run, student) -> str:
    return (run["course"].feedback / student / "t3" / "units.html").read_text()


def _text(page: str) -> str:
    """What a reader of the page sees (tags stripped, entities decoded)."""
    import html

    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_scores_are_the_clean_verdicts(run):
    g = run["grade"]
    assert g.returncode == 1, g.stdout + g.stderr[-2000:]        # 1: one submission failed (ambiguous)
    assert f"graded {len(EXPECTED)}, up to date 0, failed 1" in g.stdout, g.stdout
    scores = cell_scores(run["course"].db_url, "t3")
    got = {s: tuple(scores[s][f"units/{c}"] for c in CELLS) for s in EXPECTED}
    assert got == EXPECTED


def test_tampering_earns_nothing_and_is_reported(run):
    """Monkeypatched checks, a replaced sys.modules entry, a pre-run hook that puts the right
    answer back before every cell, an input transformer that disarms `raise`: the kernel passed
    the hidden tests, the clean re-verification of the recorded answers did not, and that is
    the score."""
    out = run["grade"].stdout
    for cell in ("t3units_q1_correct", "t3units_q2_correct"):
        assert re.search(rf"VERDICTS DIFFER: monkey units/{cell}: the kernel gave 2\.0, .* 0 \(scored\)", out), out
    assert "VERDICTS DIFFER: right" not in out and "VERDICTS DIFFER: forms" not in out
    status = json.loads((run["course"].state / "t3" / "monkey.json").read_text())
    assert {d["cell"] for d in status["disagreements"]} == {"t3units_q1_correct", "t3units_q2_correct"}
    # where the instructor looks: nbgrader's flag (the Formgrader), the export, the report

    with run["course"].gradebook() as gb:
        flagged = {s: gb.find_submission_notebook("units", "t3", s).flagged for s in EXPECTED}
    # (these synthetic notebooks carry no prediction record, which is flagged too: issue 15's rule)
    assert flagged["monkey"], flagged
    rows = {r["student_id"]: r for r in csv.DictReader((run["base"] / "export.csv").open())}
    assert "t3units_q1_correct: the kernel's verdict differs" in rows["monkey"]["t3/flag"], rows["monkey"]
    assert "differs" not in rows["right"]["t3/flag"], rows["right"]
    assert re.search(r"FLAGGED: monkey \(units\): t3units_q\d_correct: the kernel's verdict differs",
                     run["report"].stdout), run["report"].stdout
    scores = {r["student"]: r for r in csv.DictReader((run["course"].reports / "t3" / "scores.csv").open())}
    assert "check for tampering" in scores["monkey"]["flag"] and "tampering" not in scores["right"]["flag"]


def _decoded_blobs(page: str) -> str:
    out = []
    for blob in re.findall(r"(?:SPY|ALL) ([A-Za-z0-9+/=]{8,})", page):
        try:
            out.append(base64.b64decode(blob).decode("utf-8", "replace"))
        except (binascii.Error, ValueError):
            pass
    return "\n".join(out)


def test_a_hook_printing_every_cell_base64_leaks_no_hidden_test(run):
    page = _page(run, "spy")
    decoded = _decoded_blobs(page)
    assert "q1_time" in decoded, "the spy printed nothing readable: the test would prove nothing"
    for marker in ("HIDDEN-Q1-TIME", "HIDDEN-Q1-REGIME", "HIDDEN-Q2-GIB", "check_regime(q1_regime"):
        assert marker not in decoded and marker not in page
    assert "WITHHELD" not in run["feedback"].stdout


def test_feedback_has_no_hidden_test_and_shows_the_verdicts(run):
    assert run["feedback"].returncode == 0, run["feedback"].stdout + run["feedback"].stderr[-2000:]
    for s in EXPECTED:
        page = _page(run, s)
        assert "HIDDEN-Q" not in page and "BEGIN HIDDEN TESTS" not in page
        assert not leaked_lines(page, source_secrets(run["course"], "t3", s))
    assert "GB (10^9 bytes) or GiB (2^30 bytes)?" in _page(run, "gib")        # the clean verdict's message
    assert "hidden tests: not shown" in _page(run, "gib")
    # the monkeypatched kernel printed no error; the page says what the clean check found
    monkey = _page(run, "monkey")
    assert "Your value (read in ms) is too small" in _text(monkey)


def test_a_hidden_test_line_the_student_wrote_does_not_withhold_the_page(run):
    page = _text(_page(run, "importer"))
    assert "from course_lib.exercises.checks import check_number, check_regime" in page
    assert "WITHHELD" not in run["feedback"].stdout


def test_byte_order_marks_and_stripped_metadata_are_graded_with_a_note(run):
    assert "bom_collected: units.ipynb: a UTF-8 byte-order mark removed" in run["collect"]
    out = run["grade"].stdout
    assert "repaired: bom units: a UTF-8 byte-order mark removed" in out
    assert re.search(r"repaired: stripped units: nbgrader metadata put back on \d+ cell", out), out


def test_an_ambiguous_repair_fails_and_is_never_a_zero(run):
    out = run["grade"].stdout
    assert re.search(r"FAILED: ambiguous: cannot be graded: units.ipynb: cannot tell which cell answers "
                     r"t3units_q1_answer", out), out
    assert "ambiguous" not in cell_scores(run["course"].db_url, "t3")
    rows = {r["student_id"]: r for r in csv.DictReader((run["base"] / "export.csv").open())}
    assert rows["ambiguous"]["t3/units"] == "" and rows["ambiguous"]["t3/status"].startswith("failed: cannot be graded")
    # t3's written answer (Why GB and not GiB?) is not graded yet: its point is not in the 5
    assert rows["right"]["t3/status"] == "needs manual grade" and rows["right"]["t3/units"] == "5"
    assert rows["ambiguous"]["t3/flag"].startswith("grading failed: cannot be graded"), rows["ambiguous"]
    # one rule in both files (autograder.outputs.gradesheet): nothing but a failure is an empty total, not 0
    assert (rows["ambiguous"]["late_penalty"], rows["ambiguous"]["total"]) == ("", ""), rows["ambiguous"]
    grades = {r["student_id"]: r for r in csv.DictReader((run["base"] / "grades.csv").open())}
    assert grades["ambiguous"]["total"] == "" and grades["ambiguous"]["status"].startswith("failed:")
    assert "left out (grading failed): ambiguous" in run["report"].stdout
    scores = list(csv.DictReader((run["course"].reports / "t3" / "scores.csv").open()))
    assert sorted(r["student"] for r in scores) == sorted(EXPECTED)


def test_an_answer_that_cannot_be_recorded_fails_with_a_clear_message(run):
    page = _text(_page(run, "dict"))
    assert "q2_bytes could not be recorded: a value of type dict cannot be recorded as an answer: answers are " \
           "str, int, float, bool, None, pint Quantities" in page


def test_a_huge_output_is_cut_in_the_stored_notebook_and_the_feedback(run):
    book = nbformat.read(str(run["course"].autograded / "huge" / "t3" / "units.ipynb"), as_version=4)
    text = "".join(o.get("text", "") for c in book.cells for o in c.get("outputs", []))
    assert "output cut by the grader: 10,000,001 characters" in text and len(text) < 200_000
    page = _page(run, "huge")
    assert "output cut by the grader" in page and len(page) < 2_000_000


@needs_sandbox
def test_the_sandbox_has_a_private_writable_tmp(run):
    assert "TMP-WRITABLE" in _page(run, "tmp")


def test_report_uses_the_hidden_tests_checks_and_counts_graded_students(run):
    assert run["report"].returncode == 0, run["report"].stderr[-2000:]
    rows = list(csv.DictReader((run["course"].reports / "t3" / "misconceptions.csv").open()))

    def var(name):
        return [r for r in rows if r["variable"] == name]

    graded = len(EXPECTED)
    for name in ("q1_time", "q1_regime", "q2_bytes"):
        rs = var(name)
        assert sum(int(r["count"]) for r in rs) == graded and all(int(r["students"]) == graded for r in rs)
    truth = lambda name: next(int(r["count"]) for r in var(name) if r["is_truth"] == "True")  # noqa: E731
    right_q1 = sum(1 for s, e in EXPECTED.items() if e[1])
    # other units and forms are right: 0.00736 second, MEMORY, 1.6e4 megabyte
    assert truth("q1_regime") == right_q1
    assert truth("q1_time") == right_q1 + 1              # + half: its time is right, its regime is not
    assert truth("q2_bytes") == sum(1 for e in EXPECTED.values() if e[2])
    gib = [r for r in var("q2_bytes") if r["answer"] == "gib-vs-gb"]
    assert len(gib) == 1 and gib[0]["count"] == "1" and gib[0]["label"] == "gib-vs-gb" and "16 GiB" in gib[0]["examples"]
    # share wrong = the graded result: the question's hidden test scored below its points
    scores = cell_scores(run["course"].db_url, "t3")
    # q2_bytes is its question's only answer: its wrong count is the graded result
    wrong = sum(1 for s in EXPECTED if scores[s]["units/t3units_q2_correct"] < 2)
    assert {int(r["wrong"]) for r in var("q2_bytes")} == {wrong}
    # q1_time shares its question with q1_regime: counted on its own verdict (issue 20), so the
    # student whose time is right and regime wrong ("half") fails the question, not the variable
    q1_failed = sum(1 for s in EXPECTED if scores[s]["units/t3units_q1_correct"] < 2)
    assert {int(r["wrong"]) for r in var("q1_time")} == {graded - truth("q1_time")} == {q1_failed - 1}


def test_manual_grading_awaits_then_shows_and_survives_a_regrade(run, tmp_path):
    c, common = run["course"], run["common"]
    page = _page(run, "right")
    assert "awaiting instructor grading" in page and re.search(r"1(\.0)? points awaiting instructor grading", page)
    template = tmp_path / "todo.csv"
    run_cli("manual", "t3", "--template", template, "--awaiting", *common)
    rows = list(csv.DictReader(template.open()))
    assert {r["student_id"] for r in rows} == set(EXPECTED) - {"blank"}      # blank left the stub: 0 already
    assert all(r["grade_id"] == "t3units_q2_reflection" and r["points"] == "" for r in rows)
    bad = run_cli("manual", "t3", "--student", "right", "--cell", "t3units_q2_reflection", "--points", "5", *common,
                  check=False)
    assert bad.returncode != 0 and "expected 0 to 1" in bad.stderr
    run_cli("manual", "t3", "--student", "right", "--cell", "t3units_q2_reflection", "--points", "1",
            "--comment", "Exactly: powers of ten.", *common)
    with template.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student_id", "grade_id", "points", "comment"])
        w.writerow(["gib", "t3units_q2_reflection", "0.5", "Half right."])
    run_cli("manual", "t3", "--csv", template, *common)
    run_cli("feedback", "t3", "--student", "right", "--student", "gib", *common)
    right = _page(run, "right")
    assert "Exactly: powers of ten." in _text(right) and "awaiting instructor grading" not in right
    assert re.search(r"Score: 1\.0 / 1\.0", right)
    listing = run_cli("manual", "t3", *common).stdout
    assert "right" in listing and "units/t3units_q2_reflection: 1 of 1" in listing
    # a regrade keeps the manual scores
    run_cli("grade", "t3", "--force", "--student", "right", "--student", "gib", *common, *FAST, *NO_SANDBOX_FLAG)

    with c.gradebook() as gb:
        assert gb.find_grade(REFLECTION, "units", "t3", "right").manual_score == 1.0
        assert gb.find_grade(REFLECTION, "units", "t3", "gib").manual_score == 0.5


def test_nbgrader_generate_feedback_scrubs_the_same_way(run, tmp_path):
    """The formgrader's "Generate feedback" button and `nbgrader generate_feedback` load the
    course's nbgrader_config.py: the same hidden-test placeholders and verdicts."""
    c = run["course"]
    root = tmp_path / "course"
    shutil.copytree(c.root, root, ignore=shutil.ignore_patterns("feedback", "reports"))
    shutil.copy(REPO / "nbgrader_config.py", root / "nbgrader_config.py")
    bindir = Path(PY).parent
    p = subprocess.run([str(bindir / "nbgrader"), "generate_feedback", "t3", "--student", "spy", "--force"],
                       cwd=root, capture_output=True, text=True, env={**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}",
                                                                       "AUTOGRADER_ROOT": str(root)})
    page_path = root / "feedback" / "spy" / "t3" / "units.html"
    assert page_path.is_file(), p.stdout + p.stderr[-3000:]
    page = page_path.read_text()
    assert "HIDDEN-Q" not in page and "hidden tests: not shown" in page and "awaiting instructor grading" in page
    assert "HIDDEN-Q" not in _decoded_blobs(page) and "q1_time" in _decoded_blobs(page)
    # the same through nbgrader's Python API, as the formgrader calls it, with the config it loads
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    cfg = PyFileConfigLoader("nbgrader_config.py", str(root)).load_config()
    cfg.CourseDirectory.root = str(root)
    page_path.unlink()
    res = NbGraderAPI(config=cfg).generate_feedback("t3", "spy", force=True)
    assert res["success"], res
    assert "HIDDEN-Q" not in page_path.read_text() and "hidden tests: not shown" in page_path.read_text()


# ---------------------------------------------------------------------------------------------
# the preflight
# ---------------------------------------------------------------------------------------------
def _one_student_course(course, tmp_path, a="t1"):
    """A copy of the tiny course's sources (to break) and one graded class of `a`."""
    src = tmp_path / "source"
    shutil.copytree(course.source, src)
    c = Course(root=tmp_path / "c", source=src, release=course.release)
    students = {"ann": {"one.ipynb": student_nb(course, a, "one")},
                "bob": {"one.ipynb": student_nb(course, a, "one", "answer = 41")}}
    return c, write_class(tmp_path / "in", course, a, students)


def _dump(db: Path) -> str:
    return "\n".join(sqlite3.connect(str(db)).iterdump())


def test_preflight_refuses_when_the_solution_loses_points_and_changes_nothing(course, tmp_path):
    c, src = _one_student_course(course, tmp_path)
    common = ["--root", c.root, "--source", c.source, "--release-dir", c.release]
    run_cli("grade", "t1", "--submissions", src, *common, *FAST, *NO_SANDBOX_FLAG)
    before = _dump(c.db)
    path = c.source / "t1" / "one.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    nb.cells[1].source = nb.cells[1].source.replace("answer = 42", "answer = 40")     # the solution is now wrong
    nbformat.write(nb, str(path))
    p = run_cli("grade", "t1", "--force", *common, *FAST, *NO_SANDBOX_FLAG, check=False)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "the instructor's solution does not earn every autograded point" in p.stderr
    assert "one/t1one_q1_correct: 0 of 2" in p.stderr and "answer is not the right number" in p.stderr
    assert _dump(c.db) == before


def test_a_hidden_test_reading_a_non_answer_name_is_refused(course, tmp_path):
    c, src = _one_student_course(course, tmp_path)
    path = c.source / "t1" / "one.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    nb.cells.insert(1, nbformat.v4.new_code_cell("helper_truth = 42"))
    nb.cells[4].source = nb.cells[4].source.replace("_secret_truth_value = 6 * 7", "_secret_truth_value = helper_truth")
    nbformat.write(nb, str(path))
    p = run_cli("grade", "t1", "--submissions", src, "--root", c.root, "--source", c.source, "--release-dir",
                c.release, *FAST, *NO_SANDBOX_FLAG, check=False)
    assert p.returncode == 2 and "one/t1one_q1_correct reads helper_truth" in p.stderr, p.stderr


def _venv_with_course_lib_from(copy_root: Path, tmp_path: Path) -> Path:
    """A Python environment whose course_lib is `copy_root`/course_lib (listed first on its path),
    with this environment's packages behind it: a second checkout installed in another venv."""
    import sysconfig

    venv = tmp_path / "venv2"
    subprocess.run([PY, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "00_second_checkout.pth").write_text(str(copy_root) + "\n")
    (site / "01_course_env.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    return venv / "bin" / "python"


@pytest.mark.parametrize("complete", [True, False], ids=["same-version", "older-without-answers"])
def test_course_lib_from_a_second_copy_grades_correctly_or_refuses_never_zeros(course, tmp_path, complete):
    other = tmp_path / "other-checkout"
    shutil.copytree(REPO / "course_lib", other / "course_lib", ignore=shutil.ignore_patterns("__pycache__"))
    if not complete:
        # an older copy of the course library, from before the answer recorder
        (other / "course_lib" / "exercises" / "answers.py").unlink()
    python = _venv_with_course_lib_from(other, tmp_path)
    where = subprocess.run([str(python), "-c", "import course_lib; print(course_lib.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout
    assert str(other) in where, "the test environment does not import the second copy"
    c, src = _one_student_course(course, tmp_path)
    # run from the repository, as an instructor would: the grader itself imports ./course_lib
    p = subprocess.run([str(python), "-m", "autograder", "grade", "t1", "--submissions", str(src), "--root",
                        str(c.root), "--source", str(c.source), "--release-dir", str(c.release), *FAST,
                        *NO_SANDBOX_FLAG], cwd=REPO, capture_output=True, text=True, timeout=600)
    scores = {s: sum(v.values()) for s, v in cell_scores(c.db_url, "t1").items()}
    if complete:
        assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    if p.returncode == 0:       # graded correctly...
        assert scores == {"ann": 4, "bob": 2}, p.stdout
    else:                       # ...or refused, naming the copy the kernel imports: never zeros
        assert p.returncode == 2, p.stdout + p.stderr[-3000:]
        assert f"kernel cannot import course_lib from {other / 'course_lib'}" in p.stderr, p.stderr
        assert scores == {}
    if not complete and SANDBOX:
        # sandboxed, the kernel sees only the copy it imports, which lacks course_lib.exercises.answers
        # (unsandboxed, the editable install's finder serves that module from this checkout)
        assert p.returncode == 2


# ---------------------------------------------------------------------------------------------
# clean-up: kill -9, stale folders, time limits
# ---------------------------------------------------------------------------------------------
def _processes_mentioning(text: str) -> list[str]:
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmd:
            out.append(f"{pid}: {cmd[:200]}")
    return out


def test_kill_9_of_grade_leaves_no_process_and_no_stale_copy(course, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    students = {f"s{i}": {"one.ipynb": student_nb(course, "t1", "one",
                                                  ("import time\ntime.sleep(3)\n" if i < 2 else "")
                                                  + ("answer = 42" if i % 2 else "answer = 1"))}
                for i in range(6)}
    src = write_class(tmp_path / "in", course, "t1", students)
    root = tmp_path / "c"
    cmd = [PY, "-m", "autograder", "grade", "t1", "--root", str(root), "--source", str(course.source),
           "--release-dir", str(course.release), "--submissions", str(src), "-j", "2", "--timeout", "20",
           "--memory", "2048", *NO_SANDBOX_FLAG]
    env = {**os.environ, "TMPDIR": str(tmp)}
    p = subprocess.Popen(cmd, cwd=REPO, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env,
                         start_new_session=True)
    deadline, seen = time.monotonic() + 180, []
    for line in p.stderr:
        seen.append(line)
        if "grading t1 [" in line or time.monotonic() > deadline:
            break
    os.kill(p.pid, signal.SIGKILL)          # the grader only, as `kill -9 PID` does: not its group
    p.wait()
    assert any("grading t1 [" in line for line in seen), "".join(seen)[-3000:]
    for _ in range(50):
        left = _processes_mentioning(str(tmp_path))
        if not left:
            break
        time.sleep(0.2)
    assert not left, "processes outlived kill -9 of grade:\n" + "\n".join(left)
    assert list(tmp.glob("autograder-run-*")), "the killed run left no folder: the test did not kill it mid-run"
    run_cli(*cmd[3:], env={"TMPDIR": str(tmp)})
    assert not list(tmp.glob("autograder-run-*")), "the stale run folder outlived the next run"
    final = {s: sum(v or 0 for v in cells.values()) for s, cells in cell_scores("sqlite:///" + str(root / "gradebook.db"), "t1").items()}
    assert final == {s: (4 if int(s[1:]) % 2 else 2) for s in students}


def test_a_live_runs_folder_is_not_cleaned(tmp_path):
    from autograder.grading.rundir import RunDir, clean_stale

    live = RunDir("grade")
    try:
        dead = Path(live.path.parent) / "autograder-run-grade-deadbeef"
        dead.mkdir()
        (dead / ".lock").write_text("")
        (dead / "hidden.ipynb").write_text("secret")
        removed = clean_stale()
        assert dead in removed and not dead.exists()
        assert live.path.exists() and live.path not in removed
    finally:
        live.close()
    assert not live.path.exists()


def test_a_hung_cell_costs_the_derived_limit_not_two_minutes(course, tmp_path):
    c = Course(root=tmp_path / "c", source=course.source, release=course.release)
    src = write_class(tmp_path / "in", course, "t1", {
        "hung": {"one.ipynb": student_nb(course, "t1", "one", "while True:\n    pass")},
        "fine": {"one.ipynb": student_nb(course, "t1", "one")}})
    from autograder.intake.collect import collect

    collect(c, "t1", src)
    s = grade(c, "t1", progress=False, sandbox=SANDBOX_ARG)
    # max(10 s, 20 x the solution's time for that cell, as the preflight measured it): an answer
    # cell of microseconds gets 10 s (a loaded machine may stretch the solution's run a little)
    import json

    solution_s = json.loads((c.state / "t1" / "_preflight.json").read_text())["notebooks"]["one"]["timings"]
    assert s.cell_timeouts["t1one_q1_answer"] == max(10, int(20 * solution_s["t1one_q1_answer"] + 0.999))
    assert s.cell_timeouts["t1one_q1_answer"] < 60 and min(s.cell_timeouts.values()) >= 10
    book = nbformat.read(str(c.autograded / "hung" / "t1" / "one.ipynb"), as_version=4)
    answer = next(cc for cc in book.cells if cell_id(cc) == "t1one_q1_answer")
    assert any(o.get("ename") in ("KeyboardInterrupt", "CellTimeoutError") for o in answer.outputs)
    assert {k: sum(v.values()) for k, v in cell_scores(c.db_url, "t1").items()} == {"hung": 1, "fine": 4}


# ---------------------------------------------------------------------------------------------
# collect: the nbgrader exchange, Moodle, Canvas
# ---------------------------------------------------------------------------------------------
def _inbound(exchange: Path, student: str, a: str, when: str, files: dict) -> Path:
    d = exchange / "roofline" / "inbound" / f"{student}+{a}+{when}+r4nd0m"
    d.mkdir(parents=True)
    for name, data in files.items():
        (d / name).write_bytes(data)
    return d


@pytest.mark.filterwarnings(r"ignore:Passing unrecognized arguments to super\(ExchangeReleaseFeedback\)")  # nbgrader's
def test_collect_from_the_nbgrader_exchange_and_release_feedback(course, tmp_path):
    exchange = tmp_path / "exchange"
    old, new = "2030-01-01 10:00:00.000000 UTC", "2030-01-02 09:30:00.000000 UTC"
    _inbound(exchange, "ann", "t1", old, {"one.ipynb": student_nb(course, "t1", "one", "answer = 1"),
                                          "timestamp.txt": old.encode(), "submission_secret.txt": b"s3cret-old"})
    _inbound(exchange, "ann", "t1", new, {"one.ipynb": student_nb(course, "t1", "one"),
                                          "timestamp.txt": new.encode(), "submission_secret.txt": b"s3cret-new"})
    _inbound(exchange, "bob", "t1", old, {"one.ipynb": student_nb(course, "t1", "one", "answer = 41"),
                                          "timestamp.txt": old.encode(), "submission_secret.txt": b"bob-secret"})
    c = Course(root=tmp_path / "c", source=course.source, release=course.release)
    common = ["--root", c.root, "--source", c.source, "--release-dir", c.release]
    out = run_cli("collect", "t1", "--exchange", exchange, *common).stdout
    assert "collected 2 submission(s)" in out, out
    ann = c.submitted / "ann" / "t1"
    assert (ann / "timestamp.txt").read_text() == new and (ann / "submission_secret.txt").read_text() == "s3cret-new"
    assert "answer = 42" in (ann / "one.ipynb").read_text()
    # $AUTOGRADER_EXCHANGE is the default root
    assert "collected 2" in run_cli("collect", "t1", "--exchange", *common,
                                    env={"AUTOGRADER_EXCHANGE": str(exchange)}).stdout
    run_cli("grade", "t1", *common, *FAST, *NO_SANDBOX_FLAG)
    run_cli("feedback", "t1", *common)
    for where in (c.autograded, c.feedback):
        assert (where / "ann" / "t1" / "timestamp.txt").read_text() == new
        assert (where / "ann" / "t1" / "submission_secret.txt").read_text() == "s3cret-new"

    with c.gradebook() as gb:
        assert str(gb.find_submission("t1", "ann").timestamp).startswith("2030-01-02 09:30")
    # nbgrader's own release_feedback finds what it needs
    from nbgrader.apps import NbGraderAPI

    cfg = c.config()
    cfg.Exchange.root = str(exchange)
    res = NbGraderAPI(config=cfg).release_feedback("t1", "ann")
    assert res["success"], res
    assert list((exchange / "roofline" / "feedback").glob("*.html"))


def test_collect_moodle_folders_and_canvas_late_with_the_late_penalty(course, tmp_path):
    import datetime as dt


    c = Course(root=tmp_path / "c", source=course.source, release=course.release)
    c.root.mkdir(parents=True)
    (c.root / "nbgrader_config.py").write_text("c = get_config()\nc.LateSubmissionPlugin.penalty_method = 'zero'\n")
    common = ["--root", c.root, "--source", c.source, "--release-dir", c.release]
    from autograder.course import ensure_assignment

    ensure_assignment(c, "t1")
    due = dt.datetime(2030, 1, 1, 12, 0, 0)
    with c.gradebook() as gb:
        gb.update_or_create_assignment("t1", duedate=due)
    good = student_nb(course, "t1", "one")
    moodle = tmp_path / "moodle"
    for folder in ("Alice Ng_123456_assignsubmission_file_", "Zoë Müller_123457_assignsubmission_file_"):
        (moodle / folder).mkdir(parents=True)
        (moodle / folder / "one.ipynb").write_bytes(BOM + good)
    out = run_cli("collect", "t1", moodle, *common).stdout
    assert "collected 2" in out and (c.submitted / "alice_ng" / "t1" / "one.ipynb").is_file()
    assert (c.submitted / "zoe_muller" / "t1").is_dir()
    with c.gradebook() as gb:
        st = gb.find_student("alice_ng")
        assert (st.first_name, st.last_name) == ("Alice", "Ng")
    canvas = tmp_path / "canvas"
    canvas.mkdir()
    (canvas / "carol_12_345_one.ipynb").write_bytes(good)
    (canvas / "dave_late_13_346_one-1.ipynb").write_bytes(good)
    out = run_cli("collect", "t1", canvas, *common).stdout
    assert "dave: marked late by Canvas: timestamp 2030-01-01 12:00:01" in out, out
    assert not (c.submitted / "carol" / "t1" / "timestamp.txt").exists()
    run_cli("grade", "t1", *common, *FAST, *NO_SANDBOX_FLAG)
    rows = {r["student_id"]: r for r in csv.DictReader(open(run_cli("export", "--out", tmp_path / "g.csv",
                                                                    *common).stdout.split()[-1]))}
    assert rows["carol"]["total"] == "4" and rows["alice_ng"]["total"] == "4"
    assert rows["dave"]["late_penalty"] == "4" and rows["dave"]["total"] == "0"     # nbgrader's "zero" penalty


def test_the_report_judges_each_variable_on_its_own(run):
    """Q1 asks for a time and a regime: `half` has the time right and the regime wrong, so it
    counts as wrong for q1_regime only (a per-question count made it wrong for both)."""
    rows = list(csv.DictReader((run["course"].reports / "t3" / "misconceptions.csv").open()))
    wrong = {r["variable"]: int(r["wrong"]) for r in rows if r["answer_cell"] == Q1}
    # graded: every student of EXPECTED; q1_time wrong: monkey (1 ms), blank; q1_regime also half
    assert wrong == {"q1_time": 2, "q1_regime": 3}, wrong
    half = {r["variable"]: r["answer"] for r in rows if r["answer_cell"] == Q1 and r["is_truth"] == "True"}
    assert set(half) == {"q1_time", "q1_regime"}


def test_a_helper_variable_of_the_solution_is_no_answer():
    from autograder.authoring.cells import read_source
    from autograder.course import answer_cells
    from autograder.cell_code import assigned_names
    from autograder.outputs.report import answer_variables
    from autograder.integrity.verify import test_cells

    src = REPO / "solutions" / "03_two_phases" / "two_phases.ipynb"
    tests = {t.grade_id: t for t in test_cells(src)}
    q5 = next(c for c in answer_cells(src) if c.grade_id == "phases_q5_answer")
    cell = next(c for c in read_source(src).cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == "phases_q5_answer")
    assert "capacity" in assigned_names(cell.source)      # the solution's helper
    assert answer_variables(q5, tests) == ["q5_capacity_gb", "q5_max_batch"]
