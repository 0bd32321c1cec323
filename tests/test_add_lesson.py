"""A lesson added the way README's "Adding a lesson" says (a module of course_lib.questions
named for its prefix, declaring LESSON and its questions; a source notebook in its folder; its
wrong answers) is found, linted, released and graded with nothing else written: in a copy of the
course, the registry lists it, the per-lesson tests that read the registry run on it,
`python -m autograder lint` passes, the release writes its generated cells, and nbgrader's
autograde gives its solution the question's points and a blank answer none. (Slow tier.)"""
from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import nbformat
import pytest

from test_add_question import REPO, _run

A, NB, PREFIX = "99_tiny", "tiny", "tiny"      # after every lesson of the course

MODULE = textwrap.dedent('''\
    """Lesson 99, "Tiny": its graded question (``tiny_q1``)."""
    from __future__ import annotations

    from ..exercises.answer_forms import Number
    from .core import Solution, Truth, question
    from .registry import Lesson

    #: one question, no reflection: the bars are the lesson's own
    LESSON = Lesson("99_tiny", min_hidden_tests=1, min_reflections=0, min_robust_checks=0,
                    every_question_varies=True)


    @question("tiny_q1", rule="by-hand", specs={"q1_ridge": Number("FLOP/byte", rel_tol=0.02)},
              givens={"chip": "H100"}, space={"chip": ["H100", "A100", "H200", "B200"]})
    def q1(chip):
        from .. import Hardware

        hw = Hardware.get(chip)
        ridge = (hw.peak_flops("fp16") / hw.memory_bandwidth).m_as("FLOP/byte")
        return Solution({"q1_ridge": Truth(ridge, mistakes={"inverted-ratio": 1 / ridge})},
                        hint="The ridge is the chip's dense fp16 peak divided by its bandwidth.")
''')
SOLUTION = ("# q1_ridge: the ridge point of your chip, FLOP/byte\n### BEGIN SOLUTION\n"
            "from course_lib import Hardware\n"
            "q1_ridge = (Hardware.H100.peak_flops('fp16') / Hardware.H100.memory_bandwidth).m_as('FLOP/byte')\n"
            "### END SOLUTION")

GRADE = textwrap.dedent('''
    import json, sys
    from pathlib import Path
    import nbformat
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from autograder.authoring.cells import read_source
    from autograder.authoring.release import nbgrader_config
    from autograder.gradebook import prepare

    root, a, nb = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    config = nbgrader_config(root)
    prepare(config.CourseDirectory.db_url)
    api = NbGraderAPI(config=config)
    assert api.generate_assignment(a, force=True, create=True)["success"]
    release = nbformat.read(str(root / "release" / a / f"{nb}.ipynb"), as_version=4)
    out = {}
    for s, book in {"solution": read_source(root / "source" / a / f"{nb}.ipynb"), "blank": release}.items():
        dest = root / "submitted" / s / a / f"{nb}.ipynb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(book, str(dest))
        assert api.autograde(a, s, force=True, create=True)["success"]
    with Gradebook(config.CourseDirectory.db_url, course_id=config.CourseDirectory.course_id) as gb:
        for s in ("solution", "blank"):
            sub = gb.find_submission_notebook(nb, a, s)
            out[s] = {g.name: [g.auto_score, g.max_score] for g in sub.grades}
    print(json.dumps(out))
''')


def _add_lesson(course: Path) -> None:
    """The steps README's "Adding a lesson" names, and nothing else."""
    (course / "course_lib" / "questions" / f"{PREFIX}.py").write_text(MODULE)
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
                   "language_info": {"name": "python"}}
    title = nbformat.v4.new_markdown_cell("# Lesson 99 · Tiny\n\nOne question, predicted by hand.")
    heading = nbformat.v4.new_markdown_cell("### Q1 · Your chip's ridge point (3 points)\n\n"
                                            "*By hand.* Compute the ridge point of the chip printed below.")
    answer = nbformat.v4.new_code_cell(SOLUTION)
    title.id, heading.id, answer.id = "tiny-title", "tiny-q1-heading", "tiny-q1-answer"
    nb.cells = [title, heading, answer]
    (course / "solutions" / A).mkdir()
    nbformat.write(nb, str(course / "solutions" / A / f"{NB}.ipynb"))
    (course / "tests" / "answers" / f"a{A}.py").write_text(
        '"""Classic mistakes for lesson 99, "Tiny" (see a01_hello_roofline.py for the format)."""\n\n'
        "MISTAKES = {\n"
        '    "tiny_q1_answer": [\n'
        '        ("inverted-ratio", "from course_lib import Hardware\\n"\n'
        """                           "q1_ridge = (Hardware.H100.memory_bandwidth / Hardware.H100.peak_flops('fp16'))"\n"""
        """                           ".m_as('byte/FLOP')\\n"),\n"""
        "    ],\n}\n")


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("lesson") / "repo"
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints", ".predictions.jsonl")
    for part in ("course_lib", "autograder", "course_hub", "solutions", "tests"):
        shutil.copytree(REPO / part, root / part, ignore=ignore)
    for f in ("nbgrader_config.py", "conftest.py", "pyproject.toml"):
        shutil.copy(REPO / f, root)
    _add_lesson(root)
    return root


def test_the_registry_finds_the_lesson_from_its_module_alone(course):
    r = _run(course, "-c", "from course_lib.questions.registry import lessons; print(list(lessons()))")
    assert r.returncode == 0, r.stderr
    found = json.loads(r.stdout.strip().replace("'", '"'))
    assert found[-1] == PREFIX and len(found) == len(set(found))      # in course order: its folder is the last


def test_the_per_lesson_tests_run_on_it(course):
    # these read the registry, not a list of lessons: the new one is among their cases
    r = _run(course, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
             "tests/test_authoring.py::test_the_declarations_of_every_lesson_hold",
             "tests/test_authoring.py::test_every_question_of_a_lesson_that_says_so_varies_or_says_why",
             "tests/test_variants.py", "-k", "tiny or declarations or says_so", timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "tiny_q1" in _run(course, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly",
                             "tests/test_variants.py", "-k", "tiny").stdout


def test_it_lints_and_releases_with_its_cells(course):
    r = _run(course, "-m", "autograder", "lint", "--source", str(course / "solutions"))
    assert r.returncode == 0, r.stdout + r.stderr
    r = _run(course, "-m", "autograder.authoring.release")
    assert r.returncode == 0, r.stderr
    order = [c.get("id") for c in nbformat.read(str(course / "notebooks" / A / f"{NB}.ipynb"), as_version=4).cells]
    i = order.index("tiny-q1-answer")
    assert order[i - 1:i + 4] == ["tiny-q1-given", "tiny-q1-answer", "tiny-q1-form", "tiny-q1-correct", "tiny-q1-verify"]


def test_it_grades(course, tmp_path):
    root = tmp_path / "grading"
    (root / "source").mkdir(parents=True)
    shutil.copytree(course / "solutions" / A, root / "source" / A)
    r = _run(course, "-c", GRADE, str(root), A, NB, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    scores = json.loads(r.stdout.strip().splitlines()[-1])
    assert scores["solution"] == {"tiny_q1_form": [1.0, 1.0], "tiny_q1_correct": [2.0, 2.0]}, scores
    assert scores["blank"] == {"tiny_q1_form": [0.0, 1.0], "tiny_q1_correct": [0.0, 2.0]}, scores
