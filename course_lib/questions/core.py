"""A graded question, declared once: its answers' specs, its truth, its named mistakes, its hint
and the arithmetic shown after the reveal (lesson 1 introduces the cells that use it).

A lesson's module (``course_lib.questions.phases`` for ``phases_q3``...) declares each graded
question with :func:`question`; the notebook then needs one line per cell:

* form check (visible test): ``check_form("phases_q3")`` takes the specs from here;
* hidden test: ``grade("phases_q3")`` checks every answer variable against the truth computed
  now, naming the classic mistake an answer matches;
* verify cell: ``show("phases_q3")`` reveals (only a committed prediction), prints the
  arithmetic, then each answer next to the truth, naming the mistake it looks like.

The hidden test and the verify cell read the same :class:`Solution`, so they cannot disagree,
and nothing in a verify cell's source states the answer or how to find it before it runs.

>>> from course_lib.exercises.answer_forms import Ratio, Reason
>>> @question("demo_q1", rule="prediction", specs={"q1_x": Ratio(rel_tol=0.1), "q1_why": Reason()})
... def _demo():
...     return Solution({"q1_x": Truth(2.0, mistakes={"inverted-ratio": 0.5})}, hint="Divide.")
>>> get("demo_q1").answer_names
['q1_x']
>>> q1_x = 0.5
>>> grade("demo_q1")
Traceback (most recent call last):
course_lib.exercises.misconceptions.CheckFailed: q1_x matches a classic mistake: dividing the wrong way round. Check which quantity goes on top of the ratio the question asks for.
>>> del REGISTRY["demo_q1"]
"""
from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import ledger
from ..exercises import checks, predictions
from ..exercises.answer_forms import Reason, Spec
from ..exercises.misconceptions import CheckFailed
from . import key, variants
from .registry import REGISTRY, get, lesson_module, lessons, question_order
from .solution import Solution, Truth

__all__ = ["Question", "Solution", "Truth", "question", "get", "REGISTRY", "RULES", "takeaways", "lesson_questions",
           "check_form", "grade", "show", "lesson_module", "revealed", "after", "OtherLesson"]

#: how a question is graded; each heading says which (and so does the form check's receipt)
RULES = {
    "prediction": "a prediction: graded on the answer you commit before its verify cell shows the truth",
    "by-hand": "worked by hand: graded on the answer you commit before its verify cell shows the truth",
}

#: the points of a question's form check (visible) and hidden test, unless its declaration says otherwise
POINTS = {"form": 1, "correct": 2}


@dataclass(frozen=True)
class Question:
    id: str
    rule: str
    specs: dict                          # answer variable -> Spec (Reason() for a reasoning)
    solve: Callable[..., Solution]
    givens: dict                         # the canonical parameters, passed to `solve`
    space: dict = field(default_factory=dict)    # parameter -> the values a variant may take
    labels: dict = field(default_factory=dict)   # parameter -> "{value}-token prompt" (given cells)
    assumes: Callable[..., str | None] | None = None   # givens -> a violated assumption, or None
    group: str = ""                      # questions on one set of givens (one request): drawn together
    measured: bool = False               # its truth needs this machine's measurement: `assumes` admits
    points: dict = field(default_factory=lambda: dict(POINTS))   # its form check's and hidden test's points
    reflection: float = 0                # its written reflection's points (graded by hand); 0: none
    same_for_everyone: str = ""          # why it has no variants (lessons that draw them say why not)
    min_variants: int = 4                # 200 students draw at least this many of its variants

    @property
    def answer_names(self) -> list[str]:
        """The variables graded for correctness (every spec but the reasonings)."""
        return [n for n, s in self.specs.items() if not isinstance(s, Reason)]

    @property
    def variables(self) -> list[str]:
        return list(self.specs)

    def solution(self, **givens) -> Solution:
        sol = self.solve(**{**self.givens, **givens})
        if not isinstance(sol, Solution):
            raise TypeError(f"{self.id}: its solver must return a Solution, got {type(sol).__name__}")
        if set(sol.truths) != set(self.answer_names):
            raise ValueError(f"{self.id}: the solver gives truths for {sorted(sol.truths)}, "
                             f"the specs name {sorted(self.answer_names)}")
        return sol


def question(qid: str, *, rule: str, specs: dict, givens: dict | None = None, space: dict | None = None,
             labels: dict | None = None, assumes: Callable[..., str | None] | None = None,
             group: str = "", measured: bool = False, points: dict | None = None, reflection: float = 0,
             same_for_everyone: str = "", min_variants: int = 4):
    """Declare a graded question (a decorator for its solver). `givens` are the canonical
    parameters (the lesson's own numbers); `space` the values each may take in a student's
    variant (course_lib.questions.variants), the canonical ones among them; `labels` how a given
    cell words each (a format string, or a function of the value); `assumes(**givens)` says what
    a variant would break (e.g. "the batch does not fit"), or None. Questions with the same
    `group` (and the same space) are asked on one draw: a student gets one request for all of
    them. `measured`: the truth needs this machine's measurement, so a variant is admitted by
    `assumes` alone (which must not measure: every machine must draw the same variants).

    The notebook's cells for the question are generated from this (autograder.authoring.cells):
    `points` of its form check and hidden test (default POINTS), `reflection` the points of its
    written reflection (0: it has none). `same_for_everyone` says why a question of a lesson with
    variants has none; `min_variants` lowers the number of variants 200 students must draw
    (python -m autograder lint checks both; say why in a comment)."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {sorted(RULES)}, got {rule!r}")
    if not specs or not all(isinstance(s, Spec) for s in specs.values()):
        raise TypeError(f"{qid}: specs maps each answer variable to a Spec, e.g. "
                        "{'q3_prediction': Ratio(rel_tol=0.1), 'q3_reasoning': Reason()}")

    space = {k: list(v) for k, v in (space or {}).items()}
    for name, values in space.items():
        if name not in (givens or {}):
            raise ValueError(f"{qid}: space names {name!r}, which is not among its givens {sorted(givens or {})}")
        if (givens or {})[name] not in values:
            raise ValueError(f"{qid}: the canonical {name}={givens[name]!r} is not in its space {values}")

    points = {**POINTS, **(points or {})}
    if set(points) != set(POINTS) or not all(isinstance(v, (int, float)) and v > 0 for v in points.values()):
        raise ValueError(f"{qid}: points gives the form check's and the hidden test's points, such as {POINTS}; "
                         f"got {points}")
    if not isinstance(reflection, (int, float)) or reflection < 0:
        raise ValueError(f"{qid}: reflection is its written reflection's points (0 for none), got {reflection!r}")

    def register(solve):
        REGISTRY[qid] = Question(qid, rule, dict(specs), solve, dict(givens or {}), space, dict(labels or {}),
                                 assumes, group, measured, points, reflection, same_for_everyone, min_variants)
        return solve

    return register


def _caller_namespace(frame) -> dict:
    """The answers visible where the cell runs, nearest first (as course_lib.exercises.checks looks)."""
    merged: dict = {}
    for space in reversed(checks.namespaces(frame)):
        merged.update(space)
    return merged


def check_form(qid: str) -> None:
    """The visible form check of a declared question: each answer has the form its spec asks
    for (not whether it is right); a passing check commits the answer (course_lib.exercises.predictions)."""
    __tracebackhide__ = True
    q = get(qid)
    frame = sys._getframe(1)
    # checks.check_form looks the names up from ITS caller's frame: call it as the cell would
    return checks.check_form_from(frame, qid, q.specs)


def grade(qid: str, *, namespace: dict | None = None, givens: dict | None = None) -> None:
    """The hidden test of a declared question: every answer variable against the truth
    computed now, for the variant of the student graded (or `givens`). Raises CheckFailed naming
    every wrong variable (the first one's label)."""
    __tracebackhide__ = True
    q = get(qid)
    ns = namespace if namespace is not None else _caller_namespace(sys._getframe(1))
    mine = givens if givens is not None else variants.current(qid)      # the student's variant
    try:
        sol, lessons = q.solution(**mine), _lessons_own(q, mine)
    except key.KeyHeld:
        raise key.KeyUnavailable(f"{qid}: the hidden check runs when your work is graded, with the instructor's "
                                 "answer key; it is not in this kernel. Run the verify cell to see the truth.") from None
    failures = []
    for name in q.answer_names:
        t = sol.truths[name]
        try:
            checks.check_answer(qid, name, q.specs[name], t.value, mistakes=_mistakes(lessons, name, t),
                                hint=sol.hint, namespace=ns)
        except CheckFailed as e:
            failures.append(e)
    if len(failures) == 1:
        raise failures[0]
    if failures:
        raise CheckFailed("\n".join(str(e) for e in failures), label=failures[0].label)


def show(qid: str, *, namespace: dict | None = None) -> None:
    """The verify cell of a declared question: reveals the truth (only for a committed
    prediction, recording the reveal), prints the arithmetic, then each answer next to the
    truth, naming the classic mistake it looks like."""
    __tracebackhide__ = True
    q = get(qid)
    ns = namespace if namespace is not None else _caller_namespace(sys._getframe(1))
    _own_lesson(qid)
    mine = variants.current(qid)                   # this student's own numbers
    _practice_reachable(q, mine)                   # before the reveal is recorded: nothing logged for nothing shown
    checks.reveal(qid)
    sol, lessons = _truth(q, mine)
    if sol.work is not None:
        sol.work()
        print()
    for name in q.answer_names:
        t = sol.truths[name]
        checks.verify(qid, name, q.specs[name], t.value, t.explanation, mistakes=_mistakes(lessons, name, t),
                      namespace=ns)


class OtherLesson(RuntimeError):
    """A verify cell of another lesson's question: its reveal belongs to that lesson's record."""


def _lesson_here() -> str | None:
    """The prefix of the lesson whose notebook this kernel runs (the record's folder is that
    lesson's folder), or None in a folder of no lesson's name (a scratch notebook, a test)."""
    folder = predictions.record_path().parent.name
    return next((prefix for prefix, lesson in lessons().items() if lesson.assignment == folder), None)


def _own_lesson(qid: str) -> None:
    """Refuse to reveal another lesson's question here: its reveal would be logged in this
    lesson's record, where nothing grades it, while its own lesson's record shows nothing."""
    here = _lesson_here()
    prefix = qid.split("_", 1)[0]
    if here is not None and prefix != here:
        raise OtherLesson(f"{qid} is a question of lesson {lessons()[prefix].assignment}: its truth is shown by the "
                          f"verify cell in that lesson's notebook, where its reveal is recorded and graded. "
                          f"This notebook is lesson {lessons()[here].assignment}'s.")


def _record_of(qid: str) -> Path:
    """The record that holds `qid`'s reveal: this notebook's, or, for another lesson's question
    asked from a lesson's notebook (a cell that shows lesson 2's Q6 in lesson 4), that lesson's
    record in its sibling folder."""
    here_path = predictions.record_path()
    here, prefix = _lesson_here(), qid.split("_", 1)[0]
    if here is None or prefix == here:
        return here_path
    return here_path.parent.parent / lessons()[prefix].assignment / here_path.name


def _truth(q: Question, mine: dict) -> tuple[Solution, Solution | None]:
    """The truth of `q` for the numbers `mine`, and the lesson's own where they differ: solved
    here with the answer key, else from the course service (which records the reveal), else the
    lesson's own numbers' practice data (course_lib.questions.key)."""
    try:
        return q.solution(**mine), _lessons_own(q, mine)
    except key.KeyHeld:
        pass
    data = key.from_service(q.id, predictions.record_path().parent)
    if data is None and all(mine.get(k) == v for k, v in q.givens.items()):
        data = key.practice(q.id)
        if data is not None:
            print(PRACTICE_NOTE)
    if data is None:
        raise key.KeyUnavailable(f"{q.id}: the truth of your numbers is kept by the course service on your course's "
                                 "hub, and this kernel reaches none. Open the lesson on the hub to see it.")
    return key.solution_from(data)


#: what a verify cell says where the truth comes from the practice data (the public student repository)
PRACTICE_NOTE = ("Practice: no course hub here, so this is the lesson's own numbers' truth from the practice "
                 "data, and this record is graded by no one (hand in from your course's hub).")


def _practice_reachable(q: Question, mine: dict) -> None:
    """In a practice copy (the public student repository: practice data beside the package, no
    course service), raise KeyUnavailable before anything is recorded where no truth can be shown:
    numbers other than the lesson's own, or a question without practice data."""
    if not key.PRACTICE_FILE.exists() or ledger.advertised() is not None:
        return
    if all(mine.get(k) == v for k, v in q.givens.items()) and key.practice(q.id) is not None:
        return
    raise key.KeyUnavailable(f"{q.id}: this is practice (no course hub here), and the practice data holds only the "
                             "lesson's own numbers' truths, not your numbers'. Nothing was recorded. Open the lesson "
                             "on your course's hub to see your truth.")


def _lessons_own(q: Question, mine: dict) -> Solution | None:
    """The lesson's own solution where the student's numbers are not the lesson's (else None)."""
    return None if all(mine.get(k) == v for k, v in q.givens.items()) else q.solution()


def _mistakes(lessons: Solution | None, name: str, truth: Truth) -> dict:
    """The truth's named mistakes; for a student on other numbers, first of all the lesson's own
    answer (a student who copies it is told so, not sent after physics)."""
    return truth.mistakes if lessons is None else {"lesson-numbers": lessons.truths[name].value, **truth.mistakes}


def lesson_questions(prefix: str) -> list[Question]:
    """The declared questions of one lesson (`prefix`, e.g. "phases"), in question order."""
    importlib.import_module(lesson_module(f"{prefix}_q0"))
    return sorted((q for q in REGISTRY.values() if q.id.split("_", 1)[0] == prefix), key=lambda q: question_order(q.id))


def _pending(qids) -> list[str]:
    """Of the questions `qids`, those whose truth this student has not been shown yet, each as
    "Q4 (not committed yet)" or "Q4 (committed, its verify cell not run yet)"."""
    pending = []
    for qid in qids:
        get(qid)
        events = predictions.load_record(_record_of(qid))
        kinds = {e.get("kind") for e in predictions.question_events(events, qid)}
        if "reveal" not in kinds:
            label = qid.split("_", 1)[1].upper()
            state = "not committed yet" if not kinds & {"commit", "revise"} else "committed, its verify cell not run yet"
            if _record_of(qid) != predictions.record_path():
                label, state = f"lesson {lessons()[qid.split('_', 1)[0]].assignment[:2].lstrip('0')}'s {label}", \
                    f"{state}, in that lesson's notebook"
            pending.append(f"{label} ({state})")
    return pending


#: what a cell that holds content back prints (see `after`)
WAITING = "shown here once"


def revealed(*qids: str) -> bool:
    """Whether every question of `qids` has had its truth shown to this student."""
    return not _pending(qids)


def after(*qids: str, what: str = "What this cell shows") -> bool:
    """Whether content that gives away the answers of `qids` may be shown now: True once each
    question's truth was shown (its verify cell ran on a committed answer); otherwise prints
    which questions unlock it and returns False. A cell shows a figure, a table or an explorer
    that states an answer only ``if after("hello_q4", what="The roofline picture"):``."""
    pending = _pending(qids)
    if pending:
        names = [q.split(" (")[0] for q in pending]
        truth = f"{names[0]}'s truth has" if len(names) == 1 else f"the truths of {_and(names)} have"
        print(f"{what}: {WAITING} {truth} been shown. Still to do: {', '.join(pending)}. "
              "Then run this cell again.")
    return not pending


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def takeaways(prefix: str) -> None:
    """The lesson's take-aways (its module's TAKEAWAYS), shown only once every graded question
    of the lesson has had its truth shown; until then, which question comes next."""
    module = importlib.import_module(lesson_module(f"{prefix}_q0"))
    events = predictions.load_record(predictions.record_path())
    pending = []
    for q in lesson_questions(prefix):
        mine = predictions.question_events(events, q.id)
        kinds = {e.get("kind") for e in mine}
        if "reveal" not in kinds:
            label = q.id.split("_", 1)[1].upper()
            state = "not committed yet" if not kinds & {"commit", "revise"} else "committed, its verify cell not run yet"
            pending.append(f"{label} ({state})")
    if pending:
        print("The take-aways appear here once every question's truth has been shown. Still to do: "
              + ", ".join(pending) + ".")
        return
    text = getattr(module, "TAKEAWAYS", None)
    if text is None:                # a student's copy: the take-aways are the course service's (or practice data)
        data = key.from_service(f"{prefix}_q0", predictions.record_path().parent, what="takeaways") \
            or key.practice(f"takeaways:{prefix}") or {}
        text = str(data.get("text") or "")
    text = text.strip()
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display

        if get_ipython() is not None:
            display(Markdown(text))
            return
    except ImportError:  # pragma: no cover
        pass
    print(text)
