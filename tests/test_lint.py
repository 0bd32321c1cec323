"""`python -m autograder lint` and the grade-id grammar (course_lib.exercises.question_ids): each rule
fires on a lesson broken the way an author would break it, and only there."""
from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest

from autograder.cli import main
from autograder.course import question_of as autograder_question_of
from autograder.authoring.lint import disagreeing_verifies, lint_notebook
from autograder.cell_code import question_calls
from course_lib.exercises.question_ids import (cell_id, grade_id, is_answer_cell, is_manually_graded, is_test_cell, label,
                                     parse, points, question_of)
from autograder.authoring.cells import read_source

REPO = Path(__file__).resolve().parent.parent
WALL = REPO / "solutions" / "02_memory_wall" / "memory_wall.ipynb"


@pytest.fixture(scope="module")
def wall():
    return read_source(WALL)


def broken(nb, gid, old, new):
    """A copy of nb with `old` replaced by `new` in the source of cell `gid` (a heading: gid None
    and the first markdown cell holding `old`)."""
    nb = copy.deepcopy(nb)
    cell = next(c for c in nb.cells if (cell_id(c) == gid if gid else c.cell_type == "markdown" and old in c.source))
    assert old in cell.source, f"{gid}: {old!r} not in its source"
    cell.source = cell.source.replace(old, new)
    return nb


# ---- the grammar ---------------------------------------------------------------------------------
@pytest.mark.parametrize("gid, question, role", [
    ("hello_q3_correct", "hello_q3", "correct"),
    ("wall_q2b_form", "wall_q2b", "form"),
    ("wall_q12_prediction", "wall_q12", "prediction"),
    ("t1one_q1_answer", "t1one_q1", "answer"),
    ("quant_reality_reflection", "quant_reality", "reflection"),
    ("hello_setup", None, None),
    ("hello_gemm_reality", None, None),
    ("quant_givens_decode", None, None),
    ("Wall_Q1_form", None, None),
    ("", None, None),
])
def test_the_grammar_takes_a_grade_id_apart(gid, question, role):
    assert question_of(gid) == question
    assert autograder_question_of(gid) == question          # the autograder groups by the same
    assert (parse(gid).role if parse(gid) else None) == role


def test_a_sub_question_is_its_own_question():
    p = parse("wall_q2b_form")
    assert (p.prefix, p.question, p.number, p.part, p.question_id) == ("wall", "q2b", 2, "b", "wall_q2b")
    assert question_of("wall_q2b_form") != question_of("wall_q2_form")
    assert label("wall_q2b") == "Q2B"
    assert grade_id("wall", "q2b", "verify") == "wall_q2b_verify"
    with pytest.raises(ValueError, match="not a grade id"):
        grade_id("wall", "Q2", "form")


def test_metadata_helpers_read_the_cells_of_a_lesson(wall):
    by_id = {cell_id(c): c for c in wall.cells if cell_id(c)}
    assert is_answer_cell(by_id["wall_q1_prediction"]) and not is_test_cell(by_id["wall_q1_prediction"])
    assert is_test_cell(by_id["wall_q1_form"]) and points(by_id["wall_q1_form"]) == 1
    assert is_manually_graded(by_id["wall_q1_reflection"]) and not is_test_cell(by_id["wall_q1_reflection"])
    assert points(by_id["wall_q1_verify"]) == 0 and cell_id({"metadata": {}}) == ""


# ---- the rules -------------------------------------------------------------------------------------
def test_every_lesson_passes(wall):
    assert lint_notebook(wall, "wall") == []


def test_the_cli_exits_1_with_a_line_per_problem(tmp_path, capsys):
    source = tmp_path / "solutions"
    (source / "02_memory_wall").mkdir(parents=True)
    nb = nbformat.read(str(WALL), as_version=4)          # the source, as an author edits it
    nb.cells = [c for c in nb.cells if c.get("id") != "wall-q1-reflection"]
    next(c for c in nb.cells if c.cell_type == "markdown").source += "\n\nAs Q11 shows."
    nbformat.write(nb, str(source / "02_memory_wall" / "memory_wall.ipynb"))
    assert main(["lint", "--source", str(source)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2, lines
    assert all(line.startswith("02_memory_wall/memory_wall.ipynb: ") for line in lines)
    assert "no markdown cell has the id 'wall-q1-reflection'" in lines[0] and "names Q11" in lines[1]
    assert main(["lint", "--source", str(source), "02_memory_wall"]) == 1
    with pytest.raises(SystemExit, match="unknown assignment"):
        main(["lint", "--source", str(source), "nope"])


@pytest.mark.parametrize("gid, old, new, problem", [
    ("wall_q1_form", 'check_form("wall_q1"', 'check_form("wall_q11"', "names no question of this notebook"),
    ("wall_q2_form", 'check_form("wall_q2"', 'check_form("wall_q1"', "in a cell of question wall_q2"),
    ("wall_q1_correct", 'grade("wall_q1"', 'grade("wall_q2"', "in a cell of question wall_q1"),
    ("wall_q2_verify", 'show("wall_q2")', 'show("wall_q1")', "reveals its own question first"),
    (None, "(4 points)", "(5 points)", "headings announce different points"),
    ("wall_q1_form", "# Form check", "Form check", "must start with a comment"),
    ("wall_q2_correct", "### BEGIN HIDDEN TESTS", "", "has no hidden-test block"),
])
def test_each_rule_names_the_cell(wall, gid, old, new, problem):
    problems = lint_notebook(broken(wall, gid, old, new), "wall")
    assert len(problems) == 1 and problem in problems[0], problems
    if gid:
        assert gid in problems[0]


@pytest.mark.parametrize("key, value, problem", [
    ("locked", False, "must be locked"),
    ("points", 0, "has no points"),
    ("grade_id", "wall_q1_forms", "must be a visible '_form' or a hidden '_correct' test"),
    ("grade_id", "wall_q2_answer", "grade_ids used more than once"),
    ("grade_id", "memwall_q1_form", "one grade_id prefix per notebook"),
])
def test_metadata_rules(wall, key, value, problem):
    nb = copy.deepcopy(wall)
    next(c for c in nb.cells if cell_id(c) == "wall_q1_form").metadata["nbgrader"][key] = value
    problems = lint_notebook(nb, "wall")
    assert any(problem in p for p in problems), problems


def test_a_consistently_renamed_sub_question_passes(wall):
    nb = copy.deepcopy(wall)
    for c in nb.cells:
        c.source = c.source.replace("wall_q2", "wall_q2b").replace("### Q2 ", "### Q2b ")
        if cell_id(c).startswith("wall_q2_"):
            c.metadata["nbgrader"]["grade_id"] = cell_id(c).replace("wall_q2_", "wall_q2b_")
    assert any(cell_id(c) == "wall_q2b_form" for c in nb.cells)
    assert lint_notebook(nb, "wall") == []


def test_question_calls_reads_any_call_with_a_question_id_first():
    src = ('show("x_q1")\ngrade("x_q2b", 3)\nreveal("x_q1", "x_q3")\nprint("not_a_question")\n'
           'verify(name, "x_q4")\ncheck_form("x_q5", q5=1)')
    assert question_calls(src) == [("show", "x_q1", 1), ("grade", "x_q2b", 2), ("reveal", "x_q1", 3),
                                   ("reveal", "x_q3", 3), ("check_form", "x_q5", 6)]


def test_a_verify_that_calls_the_solution_wrong_is_named(wall):
    nb = copy.deepcopy(wall)
    cells = {cell_id(c): c for c in nb.cells}
    cells["wall_q1_verify"].outputs = [nbformat.v4.new_output("stream", name="stdout", text=(
        "q1_speedup: 1.643\ncourse_lib:  1.643\nYour prediction holds.\n"))]
    cells["wall_q2_verify"].outputs = [nbformat.v4.new_output("stream", name="stdout", text=(
        "q2_ms: 7.4\ncourse_lib: 3.7\nYour prediction differs. Time = bytes / bandwidth.\n"))]
    problems = disagreeing_verifies(nb)
    assert [p.split(":")[0] for p in problems] == ["cell wall_q2_verify"] + [
        f"cell {g}" for g in cells if g.endswith("_verify") and g not in ("wall_q1_verify", "wall_q2_verify")
        and "verify(" in cells[g].source], problems
    assert "Your prediction differs. Time = bytes / bandwidth." in problems[0]


def test_a_hidden_test_reading_more_than_the_answers_is_named(wall):
    nb = broken(wall, "wall_q1_correct", "### BEGIN HIDDEN TESTS\n", "### BEGIN HIDDEN TESTS\n_ = helper_truth\n")
    problems = lint_notebook(nb, "wall")
    assert len(problems) == 1 and "wall_q1_correct reads helper_truth" in problems[0], problems
