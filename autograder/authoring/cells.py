"""Authoring: a question's check cells, generated from its declaration.

A source notebook in solutions/ holds the lesson's prose and, for each graded question declared
in ``course_lib.questions`` (``@question("wall_q1", ...)``), only what a person writes:

* the **answer cell**: a code cell with the cell id ``wall-q1-prediction`` (a prediction) or
  ``wall-q1-answer`` (worked by hand), the answers between ``### BEGIN SOLUTION`` and
  ``### END SOLUTION``;
* the **reflection cell**, when the question has one (``reflection=1`` in its declaration): a
  markdown cell with the id ``wall-q1-reflection``, the model answer in a solution block.

Everything else is generated here, from the declaration, when nbgrader generates the assignment
(``make release``, the Formgrader's Generate button, ``python -m autograder grade``): nbgrader's
own ``InstantiateTests`` works the same way. For each question:

* the answer and reflection cells get their nbgrader metadata (grade id, points);
* a **given cell** (``givens("wall_q1")``, locked) right before the answer cell, when the
  question has a space of per-student variants;
* after the answer cell, the **form check** (visible, ``form`` points), the **hidden test**
  (``correct`` points) and the **verify cell** (``show("wall_q1")``).

A source cell with a generated cell's id places it: left empty, the generated text goes there
(lesson 4 prints some data between a given cell and its question); with text of its own, it is
kept as written (a given cell that prints more than the givens: ``wall-q6-data``). The
metadata of every cell of a declared question is the declaration's, whatever the source says.

Expanding is idempotent: an expanded notebook expands to itself.
"""
from __future__ import annotations

import copy
import re
from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor

from course_lib.exercises.question_ids import ANSWER_ROLES, ROLES, label

__all__ = ["ExpandQuestions", "expand", "read_source", "generated_text", "question_cells", "cell_id_of",
           "AuthoringError", "metadata_for", "configure",
           "source_problems", "declaration_problems"]

#: a question's cell, named by its cell id: <prefix>-q<N>[<part>]-<role> (the grade id with hyphens)
CELL_ID = re.compile(r"^(?P<prefix>[a-z][a-z0-9]*)-(?P<question>q\d+[a-z]?)-(?P<role>[a-z]+)$")
#: the cells generated for a question, in notebook order (the given one before the answer)
GENERATED_ROLES = ("given", "form", "correct", "verify")
# a question's cells have the grade-id grammar's ROLES; a cell id with another role
# (wall-q8-heading) is the author's prose, left alone


class AuthoringError(ValueError):
    """A source notebook that does not fit its questions' declarations."""


def cell_id_of(qid: str, role: str) -> str:
    """The cell id of `role` for question `qid`: ('wall_q1', 'form') -> 'wall-q1-form'."""
    return f"{qid}_{role}".replace("_", "-")


def metadata_for(q, role: str) -> dict:
    """The nbgrader metadata of `role`'s cell of question `q`, from its declaration."""
    graded = {"form": q.points["form"], "correct": q.points["correct"], "reflection": q.reflection}
    solution = role in ANSWER_ROLES or role == "reflection"
    md = {"grade": role in graded, "grade_id": f"{q.id}_{role}", "locked": not solution}
    if role in graded:
        md["points"] = graded[role]
    md.update({"schema_version": 3, "solution": solution, "task": False})
    return md


def generated_text(q, role: str) -> str:
    """The source of a generated cell of question `q` (a course_lib.questions.Question)."""
    n, names, graded = label(q.id), ", ".join(q.variables), ", ".join(q.answer_names)
    if role == "given":
        group = group_of(q)
        if len(group) > 1:
            n = f"{label(group[0].id)}-{label(group[-1].id)}"
        return (f"# Your numbers for {n} (locked): drawn for your student id; the lesson's own without one.\n"
                "from course_lib.questions import givens\n"
                f'givens("{q.id}")')
    if role == "form":
        one = len(q.variables) == 1
        return (f"# Form check (visible): {names} {'has' if one else 'have'} the form asked for "
                f"(not whether {'it is' if one else 'they are'} right).\n"
                f"# Once it passes, your {'answer is' if one else 'answers are'} committed: recorded with the time.\n"
                "from course_lib.questions import check_form\n"
                f'check_form("{q.id}")')
    if role == "correct":
        return (f"# Checks {graded} against the truth course_lib computes at grading time; "
                "names the classic mistake a wrong answer matches (hidden test).\n"
                "### BEGIN HIDDEN TESTS\n"
                "from course_lib.questions import grade\n"
                f'grade("{q.id}")\n'
                "### END HIDDEN TESTS")
    if role == "verify":
        return (f"# Verify {n}: once your answer is committed, shows the truth with its arithmetic\n"
                "# and what your answer matches.\n"
                "from course_lib.questions import show\n"
                f'show("{q.id}")')
    raise ValueError(f"no generated cell has the role {role!r} (roles: {GENERATED_ROLES})")


def group_of(q) -> list:
    """The questions asked on one draw with `q` (its `group`), in lesson order; [q] alone without one."""
    if not q.group:
        return [q]
    from course_lib.questions import lesson_questions

    return [m for m in lesson_questions(q.id.split("_", 1)[0]) if m.group == q.group]


def needs_given_cell(q) -> bool:
    """A question with per-student variants prints them in a given cell; a group's first
    question prints the group's."""
    return bool(q.space) and group_of(q)[0].id == q.id


def _declared(qid: str):
    from course_lib.questions import get

    try:
        return get(qid)
    except KeyError:
        return None


def question_cells(nb) -> dict[str, dict[str, int]]:
    """Declared question id -> {role: cell index} for the cells of the source notebook that are
    its questions' (found by cell id)."""
    found: dict[str, dict[str, int]] = {}
    for i, cell in enumerate(nb.cells):
        m = CELL_ID.match(cell.get("id") or "")
        if not m:
            continue
        qid = f"{m['prefix']}_{m['question']}"
        if m["role"] not in ROLES or _declared(qid) is None:      # wall-q8-heading: prose, the author's
            continue
        roles = found.setdefault(qid, {})
        if m["role"] in roles:
            raise AuthoringError(f"two cells have the id {cell.get('id')!r}")
        roles[m["role"]] = i
    return found


def expand(nb):
    """The notebook with every declared question's cells generated (a new notebook; `nb` is
    left as it was). Raises AuthoringError for a question whose cells do not fit its declaration."""
    nb = copy.deepcopy(nb)
    cells = question_cells(nb)
    for qid, roles in cells.items():
        q = _declared(qid)
        answers = [r for r in ANSWER_ROLES if r in roles]
        if len(answers) != 1:
            raise AuthoringError(f"{qid}: needs exactly one answer cell, with the id {cell_id_of(qid, 'prediction')!r} "
                                 f"or {cell_id_of(qid, 'answer')!r}; found {[cell_id_of(qid, r) for r in answers]}")
        if "reflection" in roles and not q.reflection:
            raise AuthoringError(f"{qid}: the cell {cell_id_of(qid, 'reflection')!r} is a graded reflection, but the "
                                 f"declaration gives it no points: add reflection=1 to @question({qid!r}, ...)")

    # walk the notebook once, emitting each cell and the generated ones around its answer cell
    out = []
    placed = {qid: {r for r in roles if r in GENERATED_ROLES} for qid, roles in cells.items()}
    for cell in nb.cells:
        m = CELL_ID.match(cell.get("id") or "")
        qid = f"{m['prefix']}_{m['question']}" if m else None
        if qid not in cells or m["role"] not in ROLES:
            out.append(cell)
            continue
        q, role = _declared(qid), m["role"]
        if role in GENERATED_ROLES or role == "data":
            if not cell.source.strip():            # a placeholder: the generated text goes here
                if role == "data":
                    raise AuthoringError(f"{cell.get('id')!r}: a data cell is written by hand; it is empty")
                cell.source = generated_text(q, role)
            cell.metadata["nbgrader"] = metadata_for(q, role)
            out.append(cell)
            continue
        if role == "reflection":
            if cell.cell_type != "markdown":
                raise AuthoringError(f"{cell.get('id')!r}: a reflection is a markdown cell")
            cell.metadata["nbgrader"] = metadata_for(q, role)
            out.append(cell)
            continue
        if cell.cell_type != "code":
            raise AuthoringError(f"{cell.get('id')!r}: an answer cell is a code cell")
        cell.metadata["nbgrader"] = metadata_for(q, role)
        if needs_given_cell(q) and "given" not in placed[qid] and "data" not in cells[qid]:
            out.append(_cell_with_metadata(q, "given"))
        out.append(cell)
        for r in ("form", "correct", "verify"):
            if r not in placed[qid]:
                out.append(_cell_with_metadata(q, r))
    nb.cells = out
    return nb


def _cell_with_metadata(q, role: str):
    cell = nbformat.v4.new_code_cell(generated_text(q, role), metadata={"nbgrader": metadata_for(q, role)})
    cell.id = cell_id_of(q.id, role)
    return cell


def read_source(path: Path | str):
    """A source notebook as nbgrader sees it: read, then expanded."""
    return expand(nbformat.read(str(path), as_version=4))


def configure(c) -> None:
    """Put ExpandQuestions first among nbgrader's GenerateAssignment preprocessors in the
    traitlets Config `c` (the course's nbgrader_config.py and every config of ours call this)."""
    from nbgrader.converters import GenerateAssignment

    defaults = GenerateAssignment.class_traits()["preprocessors"].make_dynamic_default()
    c.GenerateAssignment.preprocessors = [ExpandQuestions] + [p for p in defaults if p is not ExpandQuestions]


class ExpandQuestions(NbGraderPreprocessor):
    """nbgrader preprocessor (first in GenerateAssignment): a source notebook's declared
    questions get their generated cells before nbgrader locks, checksums and saves them."""

    def preprocess(self, nb, resources):
        return expand(nb), resources


# ---- what `python -m autograder lint` checks of a source notebook and its declarations ----------
#: a question named in prose: "Q3", "Q2b" (a word boundary on both sides)
MENTION = re.compile(r"\bQ(\d+)([a-z]?)\b")
#: how many students the variant rule draws for, and the key it draws with (any fixed secret:
#: the rule is about the space, not about one course's students)
LINT_STUDENTS, LINT_SECRET = 200, b"autograder-lint-variant-rule"


def source_problems(nb, where: str = "notebook") -> list[str]:
    """Problems of a source notebook that expanding would hide or refuse, each with its fix."""
    problems = []
    try:
        cells = question_cells(nb)
    except AuthoringError as e:
        return [f"{where}: {e}"]
    for qid, roles in cells.items():
        q = _declared(qid)
        for role, i in roles.items():
            cell = nb.cells[i]
            if (cell.get("metadata") or {}).get("nbgrader"):
                problems.append(f"{where}: cell {cell.get('id')!r} carries nbgrader metadata; a declared question's "
                                "metadata comes from its declaration: delete the cell's 'nbgrader' metadata")
            if role in GENERATED_ROLES and cell.source.strip() and cell.source.strip() == generated_text(q, role):
                problems.append(f"{where}: cell {cell.get('id')!r} is what make release generates: delete it "
                                "(or leave it empty to place the generated cell there)")
        if q.reflection and "reflection" not in roles:       # expanding goes on: a test may take a part
            problems.append(f"{where}: {qid}: its declaration gives its reflection {q.reflection} point(s), but no "
                            f"markdown cell has the id {cell_id_of(qid, 'reflection')!r}: add the cell, or "
                            "reflection=0")
    try:
        expand(nb)
    except AuthoringError as e:
        problems.append(f"{where}: {e}")
    return problems


def _docstring_ids(module, prefix: str) -> list[str]:
    head = (module.__doc__ or "").split("\n\n", 1)[0]
    return re.findall(rf"``({prefix}_q\d+[a-z]?)``", head)


def declaration_problems(prefix: str, notebooks: list, where: str) -> list[str]:
    """Problems of one lesson's declarations (course_lib/questions/<module>.py) against its
    source notebooks (read, not expanded): every question in a notebook, the docstring's list,
    the questions the take-aways and the prose name, and the variant rule."""
    import importlib
    import json

    from course_lib.questions import lesson_module, lesson_questions
    from course_lib.questions import variants as V

    module = importlib.import_module(lesson_module(f"{prefix}_q0"))
    declared = lesson_questions(prefix)
    ids = [q.id for q in declared]
    mod = module.__name__.replace(".", "/") + ".py"
    problems = []
    present = set()
    for nb in notebooks:
        present |= set(question_cells(nb))
    missing = [q for q in ids if q not in present]
    if missing:
        problems.append(f"{where}: {', '.join(missing)} declared in {mod} but no answer cell has its id "
                        f"(e.g. {cell_id_of(missing[0], 'prediction')!r}): add the cell, or remove the declaration")
    named = _docstring_ids(module, prefix)
    if named and (named[0] != ids[0] or named[-1] != ids[-1] or not set(named) <= set(ids)):
        problems.append(f"{mod}: its docstring lists {named}, the declared questions are {ids}: update the docstring")
    from course_lib.exercises.question_ids import cell_id, question_of

    written = {question_of(cell_id(c)) for nb in notebooks for c in nb.cells} - {None}   # hand-made questions
    numbers = {label(q).lower() for q in (*ids, *present, *written)}
    texts = [("TAKEAWAYS", getattr(module, "TAKEAWAYS", ""))] + [
        (f"markdown cell {c.get('id')!r}", c.source) for nb in notebooks for c in nb.cells if c.cell_type == "markdown"]
    for name, text in texts:
        unknown = sorted({m.group(0) for m in MENTION.finditer(text) if m.group(0).lower() not in numbers})
        if unknown:
            problems.append(f"{where}: {name} names {', '.join(unknown)}, which this lesson does not ask "
                            "(renumbered?): update the text")
    lesson = getattr(module, "LESSON", None)
    every = bool(lesson and lesson.every_question_varies)
    for q in declared:
        if q.same_for_everyone and q.space:
            problems.append(f"{mod}: {q.id} has a space and says same_for_everyone: drop one")
        if every and not q.space and not q.same_for_everyone:
            problems.append(f"{mod}: {q.id} asks everyone the same numbers in a lesson that gives each student "
                            "their own (LESSON.every_question_varies): give it a space, or say why in same_for_everyone=")
        if q.space:
            try:
                drawn = {json.dumps(V.draw(V.student_key(LINT_SECRET, f"s{i}"), q.id), sort_keys=True)
                         for i in range(LINT_STUDENTS)}
            except Exception as e:                 # a solver that fails on a variant
                problems.append(f"{mod}: {q.id}: drawing its variants fails: {type(e).__name__}: {e}")
                continue
            if len(drawn) < q.min_variants:
                problems.append(f"{mod}: {q.id}: {LINT_STUDENTS} students draw {len(drawn)} variant(s), fewer than "
                                f"{q.min_variants}: widen its space, or lower min_variants= and say why")
    return problems


def main(argv: list[str] | None = None) -> int:
    """python -m autograder.authoring.cells SOURCE.ipynb DEST.ipynb: the source notebook with its
    generated cells (what nbgrader's generate_assignment starts from), to run or read it whole."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m autograder.authoring.cells SOURCE.ipynb DEST.ipynb", file=sys.stderr)
        return 2
    src, dest = Path(args[0]), Path(args[1])
    if dest.resolve() == src.resolve():
        print("DEST must not be SOURCE: the source keeps only what a person writes", file=sys.stderr)
        return 2
    nbformat.write(read_source(src), str(dest))
    print(dest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
