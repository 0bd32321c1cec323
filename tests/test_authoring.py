"""A declared question's cells are generated (autograder.authoring.cells), and `python -m autograder
lint` holds the source notebooks and the declarations to the course's rules: each rule fires on a
lesson broken the way an author would break it, and names the fix."""
from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import nbformat
import pytest

from autograder.authoring.cells import (GENERATED_ROLES, AuthoringError, declaration_problems, expand, generated_text,
                                  metadata_for, question_cells, source_problems)
from autograder.authoring.lint import lint
from course_lib.exercises.question_ids import cell_id, metadata
from course_lib.questions import REGISTRY, get, lesson_questions
from course_lib.questions.registry import lessons

REPO = Path(__file__).resolve().parent.parent
SOURCES = sorted((REPO / "solutions").glob("*/*.ipynb"))
WALL = REPO / "solutions" / "02_memory_wall" / "memory_wall.ipynb"


@pytest.fixture(scope="module")
def wall():
    return nbformat.read(str(WALL), as_version=4)


def _by_id(nb) -> dict:
    return {c.get("id"): c for c in nb.cells}


# ---- generation ------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.parent.name)
def test_every_declared_question_gets_its_cells_in_order_and_expanding_twice_changes_nothing(path):
    raw = nbformat.read(str(path), as_version=4)
    nb = expand(raw)
    assert expand(nb) == nb
    assert raw == nbformat.read(str(path), as_version=4), "expand changed the notebook it was given"
    order = [cell_id(c) for c in nb.cells]
    for qid in question_cells(raw):
        q = get(qid)
        answer = next(g for g in order if g in (f"{qid}_prediction", f"{qid}_answer"))
        i = order.index(answer)
        assert order[i + 1:i + 4] == [f"{qid}_form", f"{qid}_correct", f"{qid}_verify"], order[i - 1:i + 4]
        cells = {cell_id(c): c for c in nb.cells if cell_id(c).startswith(qid + "_")}
        assert metadata(cells[f"{qid}_form"])["points"] == q.points["form"]
        assert metadata(cells[f"{qid}_correct"])["points"] == q.points["correct"]
        assert metadata(cells[answer])["solution"] and not metadata(cells[answer])["locked"]
        if q.reflection:
            assert metadata(cells[f"{qid}_reflection"])["points"] == q.reflection
        assert f'grade("{qid}")' in cells[f"{qid}_correct"].source
        assert "### BEGIN HIDDEN TESTS" in cells[f"{qid}_correct"].source


def test_a_question_with_variants_gets_a_given_cell_right_before_its_answer(wall):
    nb = expand(wall)
    order = [cell_id(c) for c in nb.cells]
    assert order[order.index("wall_q1_prediction") - 1] == "wall_q1_given"
    assert _by_id(nb)["wall-q1-given"].source == generated_text(get("wall_q1"), "given")
    assert "wall_q3_given" not in order            # wall_q3 asks everyone the same numbers
    assert "wall_q6_given" not in order and "wall_q6_data" in order     # its data cell prints more


def test_an_empty_cell_with_a_generated_id_places_it_and_a_written_one_is_kept(wall):
    nb = copy.deepcopy(wall)
    at = next(i for i, c in enumerate(nb.cells) if c.get("id") == "wall-q1-prediction")
    placeholder = nbformat.v4.new_code_cell("")
    placeholder.id = "wall-q1-given"
    nb.cells.insert(at - 1, placeholder)          # above the heading's neighbour, not beside the answer
    custom = nbformat.v4.new_code_cell("# my own verify\nfrom course_lib.questions import show\nshow(\"wall_q2\")")
    custom.id = "wall-q2-verify"
    nb.cells.insert(next(i for i, c in enumerate(nb.cells) if c.get("id") == "wall-q2-answer") + 1, custom)
    out = expand(nb)
    order = [c.get("id") for c in out.cells]
    assert order.index("wall-q1-given") == at - 1 and order.count("wall-q1-given") == 1
    assert _by_id(out)["wall-q1-given"].source == generated_text(get("wall_q1"), "given")
    assert _by_id(out)["wall-q2-verify"].source.startswith("# my own verify")
    assert order.count("wall-q2-verify") == 1
    assert metadata(_by_id(out)["wall-q2-verify"]) == metadata_for(get("wall_q2"), "verify")


def test_the_declaration_decides_the_metadata_whatever_the_source_says(wall):
    nb = copy.deepcopy(wall)
    _by_id(nb)["wall-q1-reflection"].metadata["nbgrader"] = {"grade": True, "grade_id": "wall_q1_reflection",
                                                             "points": 9, "solution": True}
    assert metadata(_by_id(expand(nb))["wall-q1-reflection"])["points"] == get("wall_q1").reflection


def test_a_source_that_does_not_fit_its_declaration_is_refused(wall):
    nb = copy.deepcopy(wall)
    _by_id(nb)["wall-q2-answer"].id = "wall-q2-reflection"
    with pytest.raises(AuthoringError, match="needs exactly one answer cell"):
        expand(nb)


def test_a_missing_reflection_is_named_by_lint_and_a_part_of_a_lesson_still_expands(wall):
    nb = copy.deepcopy(wall)
    nb.cells.remove(_by_id(nb)["wall-q1-reflection"])
    (problem,) = source_problems(nb, "wall")
    assert "no markdown cell has the id 'wall-q1-reflection': add the cell, or reflection=0" in problem
    assert "wall_q1_reflection" not in [cell_id(c) for c in expand(nb).cells]    # a test's part of a lesson


def test_a_reflection_the_declaration_gives_no_points_is_refused(wall, monkeypatch):
    monkeypatch.setitem(REGISTRY, "wall_q1", dataclasses.replace(get("wall_q1"), reflection=0))
    with pytest.raises(AuthoringError, match=r"add reflection=1 to @question\('wall_q1'"):
        expand(wall)


# ---- lint: the source notebook -------------------------------------------------------------------
def test_the_course_lints_clean():
    assert lint(REPO / "solutions") == []


def test_a_hand_copy_of_a_generated_cell_and_stale_metadata_are_named(wall):
    nb = copy.deepcopy(wall)
    copied = nbformat.v4.new_code_cell(generated_text(get("wall_q2"), "form"))
    copied.id = "wall-q2-form"
    nb.cells.insert(next(i for i, c in enumerate(nb.cells) if c.get("id") == "wall-q2-answer") + 1, copied)
    _by_id(nb)["wall-q1-prediction"].metadata["nbgrader"] = {"grade_id": "wall_q1_prediction", "solution": True}
    problems = source_problems(nb, "wall")
    assert len(problems) == 2, problems
    assert "'wall-q2-form' is what make release generates: delete it" in problems[0] + problems[1]
    assert "'wall-q1-prediction' carries nbgrader metadata" in problems[0] + problems[1]


# ---- lint: the declarations ------------------------------------------------------------------------
def _problems(nb, prefix="wall"):
    return declaration_problems(prefix, [nb], "wall")


def test_the_declarations_of_every_lesson_hold():
    by_prefix = {}
    for p in SOURCES:
        raw = nbformat.read(str(p), as_version=4)
        for qid in question_cells(raw):
            by_prefix.setdefault(qid.split("_", 1)[0], []).append(raw)
    assert sorted(by_prefix) == sorted(lessons())          # every declared lesson has its notebook
    for prefix, nbs in by_prefix.items():
        assert declaration_problems(prefix, nbs[:1], prefix) == []


def test_a_declared_question_without_its_answer_cell_is_named(wall):
    nb = copy.deepcopy(wall)
    nb.cells.remove(_by_id(nb)["wall-q3-answer"])
    (problem,) = _problems(nb)
    assert "wall_q3 declared in course_lib/questions/wall.py but no answer cell" in problem


def test_a_question_the_prose_or_the_takeaways_name_must_exist(wall, monkeypatch):
    import course_lib.questions.wall as module

    nb = copy.deepcopy(wall)
    _by_id(nb)["wall-001"].source += "\n\nSee Q9 below."
    monkeypatch.setattr(module, "TAKEAWAYS", module.TAKEAWAYS + "\n* As Q12 showed.")
    problems = _problems(nb)
    assert len(problems) == 2, problems
    assert "TAKEAWAYS names Q12" in problems[0] and "markdown cell 'wall-001' names Q9" in problems[1]


def test_a_stale_docstring_list_is_named(wall, monkeypatch):
    import course_lib.questions.wall as module

    monkeypatch.setattr(module, "__doc__", module.__doc__.replace("``wall_q7``", "``wall_q6``", 1))
    (problem,) = _problems(wall)
    assert "its docstring lists ['wall_q1', 'wall_q6']" in problem and "update the docstring" in problem


def test_the_variant_rule_is_checked_from_the_declaration(wall, monkeypatch):
    monkeypatch.setitem(REGISTRY, "wall_q6", dataclasses.replace(get("wall_q6"), min_variants=50))
    monkeypatch.setitem(REGISTRY, "wall_q3", dataclasses.replace(get("wall_q3"), same_for_everyone=""))
    problems = _problems(wall)
    assert len(problems) == 2, problems
    assert "wall_q3 asks everyone the same numbers" in problems[0] and "same_for_everyone=" in problems[0]
    assert "wall_q6: 200 students draw" in problems[1] and "fewer than 50" in problems[1]


def test_every_question_of_a_lesson_that_says_so_varies_or_says_why():
    for prefix in (p for p, lesson in lessons().items() if lesson.every_question_varies):
        for q in lesson_questions(prefix):
            assert bool(q.space) != bool(q.same_for_everyone), q.id


def test_generated_roles_are_the_ones_the_grammar_knows():
    from course_lib.exercises.question_ids import ROLES

    assert set(GENERATED_ROLES) <= set(ROLES)
