"""`lint`: the structure grading relies on, checked in the instructor's source notebooks.

    python -m autograder lint [ASSIGNMENT ...]     exit 1 with one line per problem

Every rule reads the notebook only (nothing runs):

* grade ids: unique, lower_snake_case with one prefix per notebook; a question's cells follow
  the grammar of course_lib.exercises.question_ids (<prefix>_<question>_<role>);
* test cells: locked, with points, a visible `_form` test or a hidden `_correct` one, paired per
  question; a hidden test computes its truth with course_lib inside its hidden block and reads
  no name but the answers (it is re-run from them alone); a form test is fully visible and
  starts with a comment; at least the lesson's `min_hidden_tests` hidden tests (its module's
  LESSON, course_lib.questions.registry.Lesson; MIN_CORRECT_TESTS where none is declared);
* answer cells have a solution block; at least the lesson's `min_reflections` written reflections
  are graded by hand; the lesson's declared folder is the notebook's;
* the points a heading announces for a question are the points its graded cells carry;
* question ids passed to check_form / check_answer / reveal / verify (any call whose first
  argument is a string such as "hello_q3") name a question of the notebook, and the cell's own:
  a verify cell reveals its own question (one with a form check, which commits the prediction)
  and verifies only questions it revealed.

`disagreeing_verifies(executed solution)` is the one rule that needs the notebook run (the slow
tests run every solution): on the solution, which passes every hidden test, each verify() must
say the answer holds.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

import nbformat

from course_lib.exercises.question_ids import (ANY_ID, cell_id, metadata, parse, question_of)
from autograder.authoring.cells import AuthoringError, declaration_problems, expand, question_cells, source_problems
from autograder.cell_code import question_calls

#: a lesson's bars where it declares none (course_lib.questions.registry.Lesson has its own)
MIN_CORRECT_TESTS = 4
MIN_REFLECTIONS = 1
# a heading or a bold lead-in that announces points: "### Q3 · ... (4 points)", "**Discussion (2 points).**"
ANNOUNCE = re.compile(r"^(#+ |\*\*).*?\((?:[^()]*?\b)?(\d+(?:\.\d+)?) points?\)", re.IGNORECASE)


def split_blocks(source: str) -> tuple[list[str], list[str]]:
    """(lines inside BEGIN/END SOLUTION or HIDDEN TESTS blocks, lines outside), stripped."""
    inside, outside, depth = [], [], 0
    for line in source.splitlines():
        s = line.strip()
        if re.search(r"#+\s*BEGIN (SOLUTION|HIDDEN TESTS)", s):
            depth += 1
        elif re.search(r"#+\s*END (SOLUTION|HIDDEN TESTS)", s):
            depth = max(0, depth - 1)
        else:
            (inside if depth else outside).append(s)
    return inside, outside


def lint_notebook(nb, where: str = "notebook", min_correct: int = MIN_CORRECT_TESTS,
                  min_reflections: int = MIN_REFLECTIONS) -> list[str]:
    """Every problem of one source notebook, one line each (none: []). The minimums are the
    lesson's own (course_lib.questions.registry.Lesson) where it declares them."""
    return [f"{where}: {p}" for p in _ids(nb) + _tests(nb, min_correct) + _answers(nb, min_reflections) + _points(nb)
            + _question_arguments(nb) + _hidden_test_inputs(nb, where)]


def _ids(nb) -> list[str]:
    ids = [cell_id(c) for c in nb.cells if metadata(c)]
    problems = []
    dupes = sorted(g for g, n in Counter(ids).items() if n > 1)
    if dupes:
        problems.append(f"grade_ids used more than once: {dupes}")
    unreadable = [g for g in ids if not ANY_ID.match(g)]
    if unreadable:
        problems.append(f"grade_ids must be lower_snake_case with a prefix: {unreadable}")
    prefixes = sorted({g.split("_", 1)[0] for g in ids if g})
    if len(prefixes) > 1:
        problems.append(f"one grade_id prefix per notebook, found {prefixes}")
    bad = [cell_id(c) for c in nb.cells if (metadata(c).get("grade") or metadata(c).get("solution"))
           and parse(cell_id(c)) is None]
    if bad:
        problems.append(f"answer and graded cells need ids <prefix>_<question>_<role>, such as hello_q3_form: {bad}")
    return problems


def _test_cells(nb) -> dict:
    return {cell_id(c): c for c in nb.cells
            if c.cell_type == "code" and metadata(c).get("grade") and not metadata(c).get("solution")}


def _tests(nb, min_correct: int) -> list[str]:
    problems = []
    tests = _test_cells(nb)
    for g, cell in tests.items():
        m = metadata(cell)
        if not m.get("locked"):
            problems.append(f"test cell {g} must be locked")
        if not m.get("points", 0) > 0:
            problems.append(f"test cell {g} has no points")
        if (parse(g) or (None, None, None))[2] not in ("form", "correct"):
            problems.append(f"autograded test {g} must be a visible '_form' or a hidden '_correct' test")
    correct = sorted(g for g in tests if g.endswith("_correct"))
    form = sorted(g for g in tests if g.endswith("_form"))
    if len(correct) < min_correct:
        problems.append(f"{len(correct)} hidden '_correct' tests, at least {min_correct} needed")
    unpaired = sorted({question_of(g) for g in correct} ^ {question_of(g) for g in form})
    if unpaired:
        problems.append(f"every _correct test needs a _form test and vice versa: {unpaired}")
    for g in correct:
        src = tests[g].source
        if "BEGIN HIDDEN TESTS" not in src:
            problems.append(f"{g} has no hidden-test block")
        elif not any("course_lib" in line for line in split_blocks(src)[0]):
            problems.append(f"{g} must compute its expected value with course_lib inside the hidden block")
    for g in form:
        src = tests[g].source
        if "HIDDEN TESTS" in src:
            problems.append(f"the form test {g} must be fully visible")
        if not src.lstrip().startswith("#"):
            problems.append(f"{g} must start with a comment saying what it checks")
    return problems


def _hidden_test_inputs(nb, where: str) -> list[str]:
    """A hidden test is re-run from the recorded answers alone (autograder.integrity.verify): it may read
    nothing else that the notebook defines (grading refuses it in the preflight)."""
    from autograder.integrity.verify import test_cells

    return [f"{t.grade_id} reads {', '.join(t.unknown)}, which no answer cell before it assigns: a hidden "
            "test imports or computes everything but the answers itself"
            for t in test_cells(Path(where), nb) if t.hidden and t.unknown]


def _answers(nb, min_reflections: int) -> list[str]:
    problems = []
    for c in nb.cells:
        m = metadata(c)
        if c.cell_type == "code" and m.get("solution") and not m.get("grade") and "BEGIN SOLUTION" not in c.source:
            problems.append(f"answer cell {cell_id(c)} has no solution block")
    reflections = sum(1 for c in nb.cells
                      if c.cell_type == "markdown" and metadata(c).get("grade") and metadata(c).get("solution"))
    if reflections < min_reflections:
        problems.append(f"{reflections} manually graded written reflection(s), at least {min_reflections} needed")
    return problems


def _points(nb) -> list[str]:
    """What the headings announce for a question = what its graded cells carry."""
    carried = defaultdict(float)
    for c in nb.cells:
        m = metadata(c)
        if m.get("grade") and parse(cell_id(c)):
            carried[parse(cell_id(c)).question] += float(m.get("points", 0) or 0)
    in_headings, anywhere = defaultdict(float), defaultdict(float)
    for cell in nb.cells:
        if cell.cell_type != "markdown" or metadata(cell).get("grade"):
            continue
        for line in cell.source.splitlines():
            hit = ANNOUNCE.match(line.strip())
            if not hit:
                continue
            for q in carried:   # "Q3" for q3; the word itself ("Reality-check ...") for named questions
                label = rf"\bQ{q[1:]}\b" if re.fullmatch(r"q\d+[a-z]?", q) else rf"\b{q}"
                if re.search(label, line, re.IGNORECASE):
                    anywhere[q] += float(hit.group(2))
                    if hit.group(1).startswith("#"):
                        in_headings[q] += float(hit.group(2))
    # a question's heading states its total, or heading + bold lead-ins (a reflection's point) add up to it
    wrong = {q: (in_headings.get(q, 0.0), pts) for q, pts in carried.items()
             if pts not in (in_headings.get(q, 0.0), anywhere.get(q, 0.0))}
    if wrong:
        return ["headings announce different points than the graded cells carry (question: (heading, cells)): "
                + str(dict(sorted(wrong.items())))]
    return []


def _declared() -> set[str]:
    from course_lib.questions import all_questions

    return set(all_questions())


def _question_arguments(nb) -> list[str]:
    known = {question_of(cell_id(c)) for c in nb.cells} - {None}
    committed = {question_of(g) for g in _test_cells(nb) if g.endswith("_form")}   # a form check commits
    problems = []
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        gid = cell_id(c)
        own = question_of(gid)
        calls = question_calls(c.source)
        revealed = {q for f, q, _ in calls if f in ("reveal", "show")}    # show() reveals first
        where = f"cell {gid}" if gid else f"a cell ({c.source.strip()[:40]!r})"
        for f, q, line in calls:
            if q not in known and f in ("after", "revealed") and q in _declared():
                continue        # only reads another lesson's record (lesson 4 showing lesson 2's Q6 once revealed there)
            if q not in known:
                problems.append(f"{where} line {line}: {f}({q!r}) names no question of this notebook "
                                f"(its questions: {', '.join(sorted(known))})")
            elif own and q != own and q not in revealed and f not in ("after", "revealed"):   # these only read
                problems.append(f"{where} line {line}: {f}({q!r}) in a cell of question {own}")
        if (parse(gid) or (None, None, None))[2] == "verify" and own in committed and own not in revealed:
            problems.append(f"cell {gid}: a verify cell reveals its own question first: reveal({own!r})")
    return problems


VERIFY_HOLDS, VERIFY_DIFFERS = "Your prediction holds.", "Your prediction differs."   # course_lib.exercises.checks.verify


def disagreeing_verifies(executed) -> list[str]:
    """Verify cells of an executed solution notebook in which verify() calls the solution's
    answer wrong, or that call verify() and print no verdict."""
    problems = []
    for c in executed.cells:
        gid = cell_id(c)
        if c.cell_type != "code" or (parse(gid) or (None, None, None))[2] != "verify":
            continue
        text = "".join(o.get("text", "") for o in c.get("outputs", []) if o.get("output_type") == "stream")
        calls = sum(1 for f, _, _ in question_calls(c.source) if f == "verify")
        if VERIFY_DIFFERS in text:
            line = next(line for line in text.splitlines() if VERIFY_DIFFERS in line)
            problems.append(f"cell {gid}: verify() disagrees with the hidden tests, which the solution passes: {line}")
        elif calls and VERIFY_HOLDS not in text:
            problems.append(f"cell {gid}: calls verify() but printed no verdict")
    return problems


def lint(source: Path, assignments: list[str] | None = None) -> list[str]:
    """The problems of every notebook of `assignments` (default: all) under `source`."""
    known = sorted(p.name for p in source.iterdir() if p.is_dir() and list(p.glob("*.ipynb")))
    unknown = sorted(set(assignments or ()) - set(known))
    if unknown:
        raise SystemExit(f"unknown assignment(s) {', '.join(unknown)}; the assignments are: {', '.join(known)}")
    from course_lib.questions.registry import lessons as declared_lessons

    declared = declared_lessons()
    problems = []
    lessons: dict[str, list] = {}          # question prefix -> (source notebooks, where)
    for a in assignments or known:
        for path in sorted((source / a).glob("*.ipynb")):
            where = f"{a}/{path.name}"
            raw = nbformat.read(str(path), as_version=4)
            try:
                prefixes = sorted({q.split("_", 1)[0] for q in question_cells(raw)})
            except AuthoringError:             # two cells with one id: said below
                prefixes = []
            bars = [declared[p] for p in prefixes if p in declared]
            for lesson in bars:
                if lesson.assignment != a:
                    problems.append(f"{where}: its questions' lesson declares the folder {lesson.assignment!r} "
                                    f"(LESSON = Lesson(...)): rename one")
            authoring = source_problems(raw, where)
            problems += authoring
            if not authoring:
                problems += lint_notebook(expand(raw), where,
                                          min((b.min_hidden_tests for b in bars), default=MIN_CORRECT_TESTS),
                                          min((b.min_reflections for b in bars), default=MIN_REFLECTIONS))
            for prefix in prefixes:
                lessons.setdefault(prefix, ([], where))[0].append(raw)
    for prefix, (notebooks, where) in sorted(lessons.items()):
        problems += declaration_problems(prefix, notebooks, where)
    return problems
