"""A real nbgrader round trip for every assignment in solutions/.

One temporary course directory and gradebook for the whole module: generate_assignment for each
assignment, submissions from four "students", autograde, then read the scores from the gradebook.

* ``solution``  -- the instructor notebook: full marks on every autograded test;
* ``untouched`` -- the student release as handed out: 0 on every autograded test;
* ``wrong``     -- the release with each answer cell replaced by tests/answers/a<assignment>.py's
                   WRONG source (well-formed, wrong values): exactly the ``_form`` points;
* ``tamperer``  -- ``wrong``, plus: one hidden test cell edited to ``pass`` with its points raised
                   to 100, every other hidden test edited to ``pass``, and one hidden and one
                   visible test cell deleted. nbgrader must grade the edited cells with the
                   original tests; a deleted cell must never score more than the original would.

With the WRONG answers, only hidden tests may raise: verify cells must survive any well-formed
answer.
"""
from __future__ import annotations

import copy
import importlib.util
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from course_lib.exercises.question_ids import metadata as meta
from autograder.authoring.cells import read_source

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
ANSWERS = REPO / "tests" / "answers"
ASSIGNMENTS = sorted(p.parent.name for p in SOLUTIONS.glob("*/*.ipynb"))
STUDENTS = ("solution", "untouched", "wrong", "tamperer")

pytestmark = [
    pytest.mark.skipif(not ASSIGNMENTS, reason="no notebooks in solutions/ yet"),
    # nbgrader 0.9.6's gradebook code trips SQLAlchemy 2's autoflush warnings; harmless, not ours
    pytest.mark.filterwarnings("ignore:Object of type <Submitted:sqlalchemy.exc.SAWarning"),
]


@dataclass(frozen=True)
class Score:
    auto: float | None
    max: float
    needs_manual: bool
    code: bool          # an autograded test cell (a code cell), not a written answer


def load_wrong(assignment: str) -> dict:
    path = ANSWERS / f"a{assignment}.py"
    if not path.exists():
        raise FileNotFoundError(f"{path.relative_to(REPO)} is missing: every assignment needs a WRONG dict")
    spec = importlib.util.spec_from_file_location(f"answers_a{assignment}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.WRONG


def answer_ids(nb) -> list[str]:
    """grade_ids of the autograded answer cells (code cells with a solution, not graded themselves)."""
    return [meta(c)["grade_id"] for c in nb.cells
            if c.cell_type == "code" and meta(c).get("solution") and not meta(c).get("grade")]


def graded_ids(nb, suffix: str) -> list[str]:
    return [meta(c)["grade_id"] for c in nb.cells
            if c.cell_type == "code" and meta(c).get("grade") and meta(c)["grade_id"].endswith(suffix)]




def with_wrong_answers(release, wrong: dict):
    nb = copy.deepcopy(release)
    for cell in nb.cells:
        gid = meta(cell).get("grade_id")
        if cell.cell_type == "code" and gid in wrong:
            cell.source = wrong[gid]
    return nb


def tampered(release, wrong: dict):
    """The plan of tampering and the notebook: (edited ids, deleted ids, notebook)."""
    nb = with_wrong_answers(release, wrong)
    correct, form = graded_ids(nb, "_correct"), graded_ids(nb, "_form")
    deleted = {correct[-1], form[-1]}
    edited = [g for g in correct if g not in deleted]
    for cell in nb.cells:
        gid = meta(cell).get("grade_id")
        if gid in edited:
            cell.source = "pass"
            if gid == edited[0]:
                cell.metadata["nbgrader"]["points"] = 100
    nb.cells = [c for c in nb.cells if meta(c).get("grade_id") not in deleted]
    return edited, sorted(deleted), nb


def kernel_config(config):
    """Encrypt the kernel's ZMQ transport where possible, so ipykernel does not warn on stderr."""
    try:
        import zmq

        if zmq.has("curve"):
            config.KernelManager.transport_encryption = "auto"
    except Exception:  # pragma: no cover
        pass
    return config


@pytest.fixture(scope="session")
def graded(tmp_path_factory):
    """Grade every student's submission of every assignment once; return scores and plans."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.font_manager  # noqa: F401  (build the font cache before any kernel needs it)
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI

    from autograder.authoring.release import nbgrader_config
    from autograder.gradebook import prepare

    root = tmp_path_factory.mktemp("course")
    shutil.copytree(SOLUTIONS, root / "source", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    config = kernel_config(nbgrader_config(root))
    prepare(config.CourseDirectory.db_url)          # nbgrader's apps open it; no `alembic` command
    api = NbGraderAPI(config=config)

    result = {"root": root, "errors": {}, "scores": {}, "plans": {}, "config": config}
    for a in ASSIGNMENTS:
        gen = api.generate_assignment(a, force=True, create=True)
        if not gen["success"]:
            result["errors"][a] = f"generate_assignment failed:\n{gen.get('error')}\n{gen.get('log')}"
            continue
        source_path = next((root / "source" / a).glob("*.ipynb"))
        release_path = root / "release" / a / source_path.name
        release = nbformat.read(release_path, as_version=4)
        submissions = {"solution": read_source(source_path), "untouched": release}
        try:
            wrong = load_wrong(a)
        except Exception as e:  # reported by the tests that need it
            result["errors"][(a, "wrong")] = f"{type(e).__name__}: {e}"
        else:
            result["plans"][(a, "answers")] = (sorted(answer_ids(release)), sorted(wrong))
            submissions["wrong"] = with_wrong_answers(release, wrong)
            edited, deleted, nb = tampered(release, wrong)
            result["plans"][(a, "tamper")] = (edited, deleted)
            submissions["tamperer"] = nb
        for student, nb in submissions.items():
            dest = root / "submitted" / student / a / source_path.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, dest)
        for student in submissions:
            run = api.autograde(a, student, force=True, create=True)
            if not run["success"]:
                result["errors"][(a, student)] = f"autograde failed:\n{run.get('error')}\n{run.get('log')}"

    with Gradebook(config.CourseDirectory.db_url, course_id=config.CourseDirectory.course_id) as gb:
        for a in ASSIGNMENTS:
            try:
                assignment = gb.find_assignment(a)
            except Exception:
                continue
            for notebook in assignment.notebooks:
                for student in STUDENTS:
                    try:
                        sub = gb.find_submission_notebook(notebook.name, a, student)
                    except Exception:
                        continue
                    result["scores"][(a, student)] = {
                        g.name: Score(g.auto_score, g.max_score, bool(g.needs_manual_grade),
                                      g.cell.cell_type == "code")
                        for g in sub.grades}
    return result


def scores(graded, a, student) -> dict[str, Score]:
    for key in (a, (a, student)):
        if key in graded["errors"]:
            pytest.fail(f"{a}, {student}: {graded['errors'][key]}")
    if (a, student) not in graded["scores"]:
        pytest.fail(f"{a}: no grades for the '{student}' submission in the gradebook")
    return graded["scores"][(a, student)]


def autograded(s: dict[str, Score]) -> dict[str, Score]:
    return {g: v for g, v in s.items() if v.code}


def fmt(s: dict[str, Score]) -> str:
    return ", ".join(f"{g}={v.auto}/{v.max}" for g, v in sorted(s.items()))


# ---- the tests ----------------------------------------------------------------------------
@pytest.mark.parametrize("a", ASSIGNMENTS)
def test_solution_gets_full_marks(graded, a):
    s = autograded(scores(graded, a, "solution"))
    assert s, f"{a}: no autograded tests"
    short = {g: v for g, v in s.items() if v.auto != v.max}
    assert not short, f"{a}: the solution notebook loses points on {fmt(short)}"


@pytest.mark.parametrize("a", ASSIGNMENTS)
def test_untouched_release_gets_nothing(graded, a):
    s = autograded(scores(graded, a, "untouched"))
    scored = {g: v for g, v in s.items() if v.auto}
    assert not scored, f"{a}: the unanswered release scores points on {fmt(scored)}"


@pytest.mark.parametrize("a", ASSIGNMENTS)
def test_answers_file_covers_every_answer_cell(graded, a):
    scores(graded, a, "wrong")      # fails with the loading error if the file is missing
    cells, wrong = graded["plans"][(a, "answers")]
    assert cells == wrong, (f"tests/answers/a{a}.py WRONG must have exactly one entry per answer cell; "
                            f"missing {sorted(set(cells) - set(wrong))}, extra {sorted(set(wrong) - set(cells))}")


@pytest.mark.parametrize("a", ASSIGNMENTS)
def test_wrong_answers_get_exactly_the_form_points(graded, a):
    s = autograded(scores(graded, a, "wrong"))
    form_short = {g: v for g, v in s.items() if g.endswith("_form") and v.auto != v.max}
    correct_scored = {g: v for g, v in s.items() if g.endswith("_correct") and v.auto}
    assert not form_short, (f"{a}: well-formed answers (tests/answers/a{a}.py) fail form tests "
                            f"{fmt(form_short)}; fix the WRONG source or the form test")
    assert not correct_scored, (f"{a}: wrong answers (tests/answers/a{a}.py) pass hidden tests "
                                f"{fmt(correct_scored)}; the hidden test or the WRONG value is too lax")


@pytest.mark.parametrize("a", ASSIGNMENTS)
def test_edited_test_cells_are_graded_by_the_original(graded, a):
    s = scores(graded, a, "tamperer")
    wrong = scores(graded, a, "wrong")
    edited, _ = graded["plans"][(a, "tamper")]
    for g in edited:
        assert s[g].max == wrong[g].max, f"{a}: editing {g}'s points changed its max score to {s[g].max}"
        assert wrong[g].auto == 0, (
            f"{a}: cannot check {g}: the WRONG answer already passes the original test")
        assert s[g].auto == 0, (
            f"{a}: {g} replaced by 'pass' scored {s[g].auto}; nbgrader must restore the locked source")


@pytest.mark.parametrize("a", ASSIGNMENTS)
def test_deleted_test_cells_never_gain_points(graded, a):
    s = scores(graded, a, "tamperer")
    wrong = scores(graded, a, "wrong")
    _, deleted = graded["plans"][(a, "tamper")]
    add_back = bool(graded["config"].OverwriteCells.get("add_missing_cells", False))
    for g in deleted:
        assert g in s, f"{a}: the gradebook lost the grade row of the deleted cell {g}"
        if add_back:
            # nbgrader puts the original cell back and runs it: scored exactly like the original
            assert (s[g].auto, s[g].needs_manual) == (wrong[g].auto, wrong[g].needs_manual), (
                f"{a}: deleted {g} scored {s[g].auto}, the original test gives {wrong[g].auto}")
        else:
            # nbgrader 0.9.6's default: the cell is not run, gets no automatic score and is
            # flagged for a human, so it counts 0 until someone looks
            assert s[g].auto is None and s[g].needs_manual, (
                f"{a}: deleted {g} got auto score {s[g].auto} (needs manual grade: {s[g].needs_manual})")
        assert (s[g].auto or 0) <= (wrong[g].auto or 0)
    total = sum(v.auto or 0 for v in autograded(s).values())
    assert total <= sum(v.auto or 0 for v in autograded(wrong).values()), (
        f"{a}: tampering with test cells raised the total")


@pytest.mark.parametrize("a", ASSIGNMENTS)
def test_wrong_answers_break_only_the_hidden_tests(graded, a):
    """With well-formed wrong answers every other cell (verify cells above all) still runs."""
    scores(graded, a, "wrong")
    path = next((graded["root"] / "autograded" / "wrong" / a).glob("*.ipynb"))
    nb = nbformat.read(path, as_version=4)
    broken = []
    for i, cell in enumerate(nb.cells):
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        gid = meta(cell).get("grade_id", f"cell {i}")
        if errors and not gid.endswith("_correct"):
            broken.append(f"{gid}: {errors[0].get('ename')}: {errors[0].get('evalue', '')[:200]}")
    assert not broken, f"{a}: with the WRONG answers these cells raise: " + "; ".join(broken)
