"""A question added the way README's "Adding a question" says (its declaration, its heading and
answer cell, its wrong answer) releases, lints and grades with nothing else written: in a copy
of the course, `python -m autograder lint` passes, `make release`'s generator writes its given,
form-check, hidden-test and verify cells into the student notebook (no hidden test, no
solution), and nbgrader's autograde gives the solution the question's points and a blank or
wrong answer none. (Slow tier: it runs nbgrader's kernels.)"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parent.parent
A, NB = "02_memory_wall", "memory_wall"

DECLARATION = textwrap.dedent('''

    # ---- Q8 (added by tests/test_add_question.py) ------------------------------------------------------
    @question("wall_q8", rule="by-hand", specs={"q8_ridge": Number("FLOP/byte", rel_tol=0.02)},
              givens={"chip": "H100"}, space={"chip": ["H100", "A100", "H200", "B200"]},
              labels={"chip": lambda k: "on " + chip_words(k)})
    def q8(chip):
        from .. import Hardware

        hw = Hardware.get(chip)
        ridge = (hw.peak_flops("fp16") / hw.memory_bandwidth).m_as("FLOP/byte")
        return Solution({"q8_ridge": Truth(ridge, mistakes={"inverted-ratio": 1 / ridge})},
                        hint="The ridge is the chip's dense fp16 peak divided by its bandwidth.")
''')
HEADING = "### Q8 · Your chip's ridge point (3 points)\n\n*By hand.* Compute the ridge point of the chip printed below."
SOLUTION = ("# q8_ridge: the ridge point of your chip, FLOP/byte\n### BEGIN SOLUTION\n"
            "from course_lib import Hardware\n"
            "q8_ridge = (Hardware.H100.peak_flops('fp16') / Hardware.H100.memory_bandwidth).m_as('FLOP/byte')\n"
            "### END SOLUTION")
#: the inverted ratio, bandwidth / peak, from course_lib's own H100 figures
WRONG = ("from course_lib import Hardware\n"
         "q8_ridge = (Hardware.H100.memory_bandwidth / Hardware.H100.peak_flops('fp16')).m_as('byte/FLOP')")


def _copy_course(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints", ".predictions.jsonl")
    for part in ("course_lib", "autograder"):
        shutil.copytree(REPO / part, dest / part, ignore=ignore)
    (dest / "solutions").mkdir()
    shutil.copytree(REPO / "solutions" / A, dest / "solutions" / A, ignore=ignore)
    shutil.copy(REPO / "solutions" / "running_this_notebook.md", dest / "solutions")
    shutil.copy(REPO / "nbgrader_config.py", dest)
    return dest


def _add_question(course: Path) -> None:
    """The three edits README's "Adding a question" names, and nothing else."""
    module = course / "course_lib" / "questions" / "wall.py"
    text = module.read_text().replace("``wall_q1`` ... ``wall_q7``", "``wall_q1`` ... ``wall_q8``", 1)
    module.write_text(text + DECLARATION)
    path = course / "solutions" / A / f"{NB}.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if c.get("id") == "wall-q7-reflection") + 1
    heading = nbformat.v4.new_markdown_cell(HEADING)
    heading.id = "wall-q8-heading"
    answer = nbformat.v4.new_code_cell(SOLUTION)
    answer.id = "wall-q8-answer"
    nb.cells[at:at] = [heading, answer]
    nbformat.write(nb, str(path))


GRADE = textwrap.dedent('''
    import json, sys
    from pathlib import Path
    import nbformat
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from autograder.authoring.cells import read_source
    from autograder.authoring.release import nbgrader_config
    from autograder.gradebook import prepare

    root, a, nb, wrong = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    config = nbgrader_config(root)
    prepare(config.CourseDirectory.db_url)
    api = NbGraderAPI(config=config)
    gen = api.generate_assignment(a, force=True, create=True)
    assert gen["success"], gen
    release = nbformat.read(str(root / "release" / a / f"{nb}.ipynb"), as_version=4)
    wrong_nb = nbformat.read(str(root / "release" / a / f"{nb}.ipynb"), as_version=4)
    for c in wrong_nb.cells:
        if c.get("id") == "wall-q8-answer":
            c.source = wrong
    subs = {"solution": read_source(root / "source" / a / f"{nb}.ipynb"), "blank": release, "wrong": wrong_nb}
    for s, book in subs.items():
        dest = root / "submitted" / s / a / f"{nb}.ipynb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(book, str(dest))
        run = api.autograde(a, s, force=True, create=True)
        assert run["success"], run
    out = {}
    with Gradebook(config.CourseDirectory.db_url, course_id=config.CourseDirectory.course_id) as gb:
        for s in subs:
            sub = gb.find_submission_notebook(nb, a, s)
            out[s] = {g.name: [g.auto_score, g.max_score] for g in sub.grades if g.name.startswith("wall_q8")}
    print(json.dumps(out))
''')


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("added")
    course = _copy_course(root / "repo")
    _add_question(course)
    return course


def _run(course: Path, *args, timeout=600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(course)}      # the copy's course_lib and autograder
    env.pop("NBGRADER_VALIDATING", None)
    return subprocess.run([sys.executable, *args], cwd=course, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_the_copy_imports_its_own_packages(course):
    r = _run(course, "-c", "import course_lib, autograder; print(course_lib.__file__); print(autograder.__file__)")
    assert r.returncode == 0, r.stderr
    assert all(line.startswith(str(course)) for line in r.stdout.split()), r.stdout


def test_it_lints(course):
    r = _run(course, "-m", "autograder", "lint", "--source", str(course / "solutions"))
    assert r.returncode == 0, r.stdout + r.stderr


def test_it_releases_with_its_cells_and_nothing_secret(course):
    r = _run(course, "-m", "autograder.authoring.release")
    assert r.returncode == 0, r.stderr
    nb = nbformat.read(str(course / "notebooks" / A / f"{NB}.ipynb"), as_version=4)
    cells = {c.get("id"): c for c in nb.cells}
    order = [c.get("id") for c in nb.cells]
    i = order.index("wall-q8-answer")
    assert order[i - 1:i + 4] == ["wall-q8-given", "wall-q8-answer", "wall-q8-form", "wall-q8-correct", "wall-q8-verify"]
    assert cells["wall-q8-correct"].metadata["nbgrader"]["points"] == 2
    assert cells["wall-q8-form"].metadata["nbgrader"]["points"] == 1
    assert 'grade("wall_q8")' not in cells["wall-q8-correct"].source       # the hidden test is hidden
    assert "m_as('FLOP/byte')" not in cells["wall-q8-answer"].source        # and the solution cleared
    assert 'check_form("wall_q8")' in cells["wall-q8-form"].source


def test_it_grades(course, tmp_path):
    root = tmp_path / "grading"
    (root / "source").mkdir(parents=True)
    shutil.copytree(course / "solutions" / A, root / "source" / A)
    shutil.copy(course / "solutions" / "running_this_notebook.md", root / "source")
    r = _run(course, "-c", GRADE, str(root), A, NB, WRONG, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    scores = json.loads(r.stdout.strip().splitlines()[-1])
    assert scores["solution"] == {"wall_q8_form": [1.0, 1.0], "wall_q8_correct": [2.0, 2.0]}, scores
    assert scores["blank"] == {"wall_q8_form": [0.0, 1.0], "wall_q8_correct": [0.0, 2.0]}, scores
    assert scores["wrong"]["wall_q8_correct"] == [0.0, 2.0] and scores["wrong"]["wall_q8_form"] == [1.0, 1.0], scores
