"""Predict before you see: the graded questions declared in course_lib.questions.

* every listed mistake fails its question's tolerance, with margin (a tolerance that accepts
  the mistake it names could never catch it);
* a lesson whose questions are declared uses them in one line each (form check, hidden test,
  verify), so no verify cell's source states an answer, a regime or a method before it runs;
* nothing a student sees above an answer cell -- markdown, the outputs of every cell above,
  earlier questions' verify output included -- shows that question's numeric answer, or says a
  post-reveal explanation of it: with the lesson's own numbers, and with a student's own variant
  where the lesson's questions have a parameter space.
"""
from __future__ import annotations

import contextlib
import io
import re

import pytest

from course_lib.exercises.answer_forms import Choice, Number, Ratio, Reason, Regime
from course_lib.questions import all_questions
from course_lib.exercises.question_ids import metadata as meta
from lesson_questions import SOLUTIONS, strip_delimiters
from autograder.authoring.cells import read_source

QUESTIONS = all_questions()
DECLARED_PREFIXES = {qid.split("_", 1)[0] for qid in QUESTIONS}
#: a listed mistake must sit at least this many tolerances away from the truth
MARGIN = 1.5


def _values(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


@pytest.mark.parametrize("qid", sorted(QUESTIONS))
def test_no_tolerance_accepts_a_listed_mistake(qid):
    q = QUESTIONS[qid]
    sol = q.solution()
    for name in q.answer_names:
        spec, t = q.specs[name], sol.truths[name]
        truth = spec.read_truth(t.value)
        catches = False
        for label, values in t.mistakes.items():
            for v in _values(values):
                if v is None:
                    continue
                wrong = spec.read_truth(v)
                if isinstance(spec, Number):
                    off = abs(wrong / truth - 1) if truth else abs(wrong)
                    assert off >= MARGIN * spec.rel_tol, (
                        f"{qid} {name}: the mistake {label!r} gives {wrong:.4g} against the truth {truth:.4g} "
                        f"({off:.1%} off), inside {MARGIN} x its tolerance {spec.rel_tol:.0%}: re-ask the question")
                    catches = True
                else:
                    catches |= wrong != truth
        if isinstance(spec, (Regime, Choice)) and t.mistakes:
            others = [n for n in q.answer_names if n != name]
            assert catches or others, f"{qid} {name}: no listed mistake differs from the truth"


@pytest.mark.parametrize("qid", sorted(QUESTIONS))
def test_a_question_declares_what_its_cells_need(qid):
    q = QUESTIONS[qid]
    sol = q.solution()
    assert sol.hint, f"{qid}: a wrong answer that matches no mistake gets the hint; it has none"
    assert sol.work is not None, f"{qid}: its verify cell should show the arithmetic (work)"
    for name in q.answer_names:
        assert sol.truths[name].explanation, f"{qid} {name}: no explanation for after the reveal"
    assert any(isinstance(s, Reason) for s in q.specs.values()) or q.rule == "by-hand", \
        f"{qid}: a prediction asks for its reasoning (a Reason() spec)"


# ---- the notebooks --------------------------------------------------------------------------------
CONVERTED = [p for p in SOLUTIONS if p.stem and any(
    meta(c).get("grade_id", "").split("_", 1)[0] in DECLARED_PREFIXES
    for c in read_source(p).cells)]
ONE_LINER = {
    "form": 'from course_lib.questions import check_form\ncheck_form("{qid}")',
    "correct": 'from course_lib.questions import grade\ngrade("{qid}")',
    "verify": 'from course_lib.questions import show\nshow("{qid}")',
}
ROLE = re.compile(r"^([a-z]+_q\d+[a-z]?)_(form|correct|verify)$")


def _code(source: str) -> str:
    lines = [l for l in strip_delimiters(source).splitlines() if l.strip() and not l.lstrip().startswith("#")]
    return "\n".join(lines)


@pytest.mark.parametrize("path", CONVERTED, ids=lambda p: p.parent.name)
def test_declared_questions_use_one_line_cells(path):
    import nbformat

    nb = read_source(path)
    seen = {}
    for cell in nb.cells:
        hit = ROLE.match(meta(cell).get("grade_id", ""))
        if not hit or hit.group(1) not in QUESTIONS:
            continue
        qid, role = hit.groups()
        seen.setdefault(qid, set()).add(role)
        assert _code(cell.source) == ONE_LINER[role].format(qid=qid), \
            f"{meta(cell)['grade_id']}: a declared question's {role} cell is the one-line call, got:\n{cell.source}"
    prefix = path.parent.name
    for qid in (q for q in QUESTIONS if any(q.startswith(p + "_") for p in {k.split('_')[0] for k in seen})):
        assert seen.get(qid) == {"form", "correct", "verify"}, f"{prefix}: {qid} lacks cells: {seen.get(qid)}"


NUMBER = re.compile(r"(?<![\w.])([-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?)"
                    r"\s?(x\b|×|[A-Za-z/%]+(?:/[A-Za-z]+)?)?")
ALIASES = {"byte": {"B", "bytes", "byte"}, "FLOP/byte": {"FLOP/byte", "FLOP/B"}}


def _numbers(text: str):
    """(printed text, value, unit or None, whether it stands as a result: after '=' or '->')."""
    for m in NUMBER.finditer(text):
        s, unit = m.group(1), m.group(2)
        before = text[max(0, m.start() - 3):m.start()]
        yield s, float(s.replace(",", "")), unit, ("=" in before or "->" in before)


def _gives_away(spec, value: float, unit, result: bool, truth: float) -> bool:
    if not truth or abs(value / truth - 1) > max(spec.rel_tol, 0.005):
        return False
    if isinstance(spec, Ratio):
        return unit in ("x", "×") or (result and unit is None)
    if spec.units:
        return unit in ALIASES.get(spec.units, {spec.units}) or (result and unit is None)
    return result


def _run_lesson(path, printed=None):
    """Execute a solution notebook in this process as a student who answers with the solution
    would see it, cell by cell; yields (cell, visible text before this cell). What each code
    cell prints is also appended to `printed`, where given."""
    import matplotlib
    import nbformat

    matplotlib.use("Agg")
    nb = read_source(path)
    ns: dict = {"__name__": "__lesson__"}
    shown: list[str] = []
    for cell in nb.cells:
        m = meta(cell)
        yield cell, "\n".join(shown)
        if cell.cell_type == "markdown":
            if not m.get("solution"):           # a student's own written answer is theirs
                shown.append(cell.source)
            continue
        gid = m.get("grade_id", "")
        if gid.endswith("_correct"):            # hidden tests are not in the student's notebook
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(strip_delimiters(cell.source), f"<{path.stem}:{gid or 'cell'}>", "exec"), ns)
        shown.append(out.getvalue())
        if printed is not None:
            printed.append(out.getvalue())


def leaks(path, solution=None) -> list[str]:
    """What a student running the lesson sees of an answer before its answer cell, the truths
    being `solution(question)`'s, by default those of whoever runs it
    (course_lib.questions.variants: the lesson's own without an id)."""
    from course_lib.questions import variant

    solution = solution or (lambda q: q.solution(**variant(q.id)))
    problems = []
    for cell, before in _run_lesson(path):
        hit = re.match(r"^([a-z]+_q\d+[a-z]?)_(prediction|answer)$", meta(cell).get("grade_id", ""))
        if not hit or hit.group(1) not in QUESTIONS:
            continue
        q = QUESTIONS[hit.group(1)]
        sol = solution(q)
        for name in q.answer_names:
            spec, t = q.specs[name], sol.truths[name]
            for sentence in re.split(r"(?<=[.:;])\s+", t.explanation):
                if len(sentence) > 30 and sentence in before:
                    problems.append(f"{q.id} {name}: its explanation is on screen before the commit: {sentence!r}")
            if not isinstance(spec, Number):
                continue
            truth = spec.read_truth(t.value)
            for text, value, unit, result in _numbers(before):
                if _gives_away(spec, value, unit, result, truth):
                    problems.append(f"{q.id} {name}: {text!r} {unit or ''} is on screen before the answer cell "
                                    f"(the answer is {truth:.4g} {spec.units or ''}, tolerance {spec.rel_tol:.0%})")
    return problems


@pytest.mark.parametrize("path", CONVERTED, ids=lambda p: p.parent.name)
def test_nothing_above_an_answer_cell_gives_its_answer_away(path, monkeypatch):
    from course_lib.questions import variants as V

    monkeypatch.delenv(V.KEY_ENV, raising=False)         # the lesson's own numbers
    problems = leaks(path)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", CONVERTED, ids=lambda p: p.parent.name)
def test_printed_numbers_read_as_words_not_python(path):
    """What the cells print says "never" or names a chip where Python would print inf, nan or
    None (lesson 1's Q7 verify printed "crossover batch inf"; a measured machine's ridge label
    read "None ridge 10.1")."""
    printed: list[str] = []
    for _ in _run_lesson(path, printed):
        pass
    artefacts = re.findall(r"[^\n]*(?<![\w.'\"])(?:inf|nan|None)(?![\w'\"(])[^\n]*", "\n".join(printed))
    assert not artefacts, "\n".join(artefacts)


def _spaced(path) -> list[str]:
    import nbformat

    ids = {meta(c).get("grade_id", "").rsplit("_", 1)[0] for c in read_source(path).cells}
    return sorted(q for q in ids & set(QUESTIONS) if QUESTIONS[q].space)


@pytest.mark.parametrize("path", [p for p in CONVERTED if _spaced(p)], ids=lambda p: p.parent.name)
def test_nor_in_a_students_own_variant(path, monkeypatch):
    """The same, run as a student whose every question with a space has other numbers than the
    lesson's own: the given cells and the verify cells above an answer cell show that student's
    numbers, and none of them gives that student's answer away."""
    from course_lib.questions import student_key
    from course_lib.questions import variants as V

    spaced = _spaced(path)
    keys = (student_key(b"the leak test's course secret", f"s{i}") for i in range(2000))
    key = next(k for k in keys if all(V.draw(k, q) != QUESTIONS[q].givens for q in spaced))
    monkeypatch.setenv(V.KEY_ENV, key)
    monkeypatch.setenv(V.STUDENT_ENV, "leak-check")
    assert all(V.current(q) != QUESTIONS[q].givens for q in spaced)
    problems = leaks(path)
    assert not problems, "\n".join(problems)
