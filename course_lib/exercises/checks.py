"""Checking students' answers: form checks, verify cells and hidden tests on one parser.

Every graded question has an id (its grade_ids' prefix and question, e.g. ``"hello_q2"``)
and one or more answer variables. Each check looks its variables up **by name** in the
namespace it is called from (the notebook's, or the grader's namespace holding the recorded
answers; ``namespace=`` names another), so a missing answer is reported by name, never as a
NameError. Each variable has
a *spec* from ``course_lib.exercises.answer_forms`` -- ``Regime()``, ``Choice(...)``, ``Number(units,
rel_tol)``, ``Ratio(rel_tol)``, ``WholeNumber()``, ``Reason()`` -- whose ``read`` is the one
normalization every check uses.

**Form check** (visible test: is the answer well-formed? never whether it is right)::

    check_form("hello_q3", q3_prediction=Choice(16, 64, 128, 256, 1024), q3_reasoning=Reason())

Raises ``CheckFailed`` (an AssertionError) naming every unanswered variable ("q3_prediction
is not answered yet: replace `raise NotImplementedError()` ...", label ``"unanswered"``) or
malformed one (label ``"not-an-answer"``); returns nothing (nbgrader would read a returned
value as a partial score).

**Verify cell** (prints the answer next to course_lib's, never raises on an answer)::

    verify("hello_q2", "q2_ridge", Number("FLOP/byte", rel_tol=0.02), truth, "explanation")

returns whether the answer holds; with ``mistakes=`` it also names a matching mistake.

**Hidden test** (correctness; runs with nothing but the question's answer variables defined)::

    check_answer("hello_q2", "q2_ridge", Number("FLOP/byte", rel_tol=0.02), truth=ridge,
                 mistakes={"mac-as-1-flop": ridge / 2, "sparse-peak": 2 * ridge},
                 hint="Which two datasheet figures make a ridge point?")

``truth`` and each mistake's value are computed with course_lib in the cell (a regime may
be given as a result with ``.bottleneck``; a mistake may list several values, and None for a
mistake that leads to no valid answer). A right
answer passes. Otherwise ``CheckFailed`` is raised with ``.label``: the first listed mistake
whose value the answer matches (a mistake whose value equals the truth is skipped), with a
message naming the mistake and the step to redo; or ``None`` with the question's ``hint``.
Messages never state the right answer. ``MISCONCEPTIONS`` (label -> mistake, step to redo)
is the table of labels, shared with the instructor's report.

**Commit and reveal** (course_lib.exercises.predictions): a notebook's form check that passes also
*commits* the answer as the question's prediction (recorded with the time; a later, different
answer is a revision). A verify cell starts with ``reveal("hello_q2")``: it shows the truth only
for a committed prediction, and records that it did. Once the truth was shown, ``verify`` judges
the answer graded (the one committed before the reveal) and says so when the notebook now holds
a revision. Nothing is recorded for a check given ``namespace=`` (the grader's).

The older value-based calls (``check_form_number``, ``check_number``, ``check_regime``: the
small test courses of the grader's suite use them) use the same parser; ``check_number``
guesses slips from factors (2, 1000, GiB/GB) where no mistakes are given. Nothing here writes
to stderr (nbgrader fails a test cell with stderr output).

>>> q2_ridge = 306.0
>>> check_form("hello_q2", q2_ridge=Number("FLOP/byte"))
>>> check_answer("hello_q2", "q2_ridge", Number("FLOP/byte"), truth=153.0,
...              mistakes={"sparse-peak": 306.0})
Traceback (most recent call last):
course_lib.exercises.misconceptions.CheckFailed: q2_ridge matches a classic mistake: using the 2:4-sparsity peak instead of the dense one. Use the dense peak: the datasheet headline is often the with-sparsity figure, twice the dense one.
"""
from __future__ import annotations

import math
import sys

from . import declared
from .answer_forms import (Choice, NotAnAnswer, Number, Ratio, Reason, Regime, Spec,
                           WholeNumber)
from .misconceptions import MISCONCEPTIONS, CheckFailed, describe
from ..units import Q_, is_quantity

__all__ = ["check_form", "check_answer", "verify", "reveal", "CheckFailed", "MISCONCEPTIONS",
           "Regime", "Choice", "Number", "Ratio", "WholeNumber", "Reason", "NotAnAnswer",
           # the older, value-based calls
           "check_form_number", "check_regime", "check_number", "Q_"]

_MISSING = object()
_UNANSWERED = "replace `raise NotImplementedError()` in the answer cell above with your answer and run it"
_RERUN = "re-run the setup cell and your answer cells (Run All, or Run > Run All Above)"


# ---- looking answers up by name -------------------------------------------------------------
def namespaces(frame) -> list:
    """Where an answer may live, nearest first: the calling frame's locals and globals, then
    the notebook's (IPython's user namespace, or __main__'s). The grader runs a hidden test
    with the recorded answers as the frame's globals; a notebook kernel runs cells in its
    user namespace."""
    spaces = [frame.f_locals, frame.f_globals]
    try:
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None:
            spaces.append(shell.user_ns)
    except Exception:  # pragma: no cover - no IPython: a plain interpreter
        pass
    main = sys.modules.get("__main__")
    if main is not None:
        spaces.append(vars(main))
    return spaces


def _lookup(name: str, spaces):
    if not isinstance(name, str) or not name.isidentifier():
        raise TypeError(f"answers are looked up by variable name (a string such as 'q2_ridge'), got {name!r}")
    for space in spaces:
        if name in space:
            return space[name]
    return _MISSING


def _check_question(question):
    if not isinstance(question, str) or not question:
        raise TypeError(f"the first argument is the question's id, such as 'hello_q2'; got {question!r}")


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# ---- form checks ----------------------------------------------------------------------------
def check_form(question: str, *, namespace: dict | None = None, **specs: Spec) -> None:
    """Each named answer exists and has the form its spec asks for (not whether it is right).
    Returns nothing (a test cell shows no value: nbgrader would read one as a partial score).

    >>> q9_prediction = "Memory Bound."
    >>> check_form("demo_q9", q9_prediction=Regime(), q9_reasoning=Reason())
    Traceback (most recent call last):
    course_lib.exercises.misconceptions.CheckFailed: q9_reasoning is not answered yet: replace `raise NotImplementedError()` in the answer cell above with your answer and run it.
    """
    __tracebackhide__ = True
    _check_question(question)
    if not specs:         # a question declared in course_lib.questions brings its own specs
        q = declared.find(question)
        if q is None:
            raise TypeError("check_form needs the answer variables, e.g. q2_ridge=Number('FLOP/byte'), "
                            f"or the id of a question declared in course_lib.questions; {question!r} is neither")
        specs = q.specs
    return check_form_from(sys._getframe(1), question, specs, namespace)


def check_form_from(frame, question: str, specs: dict, namespace: dict | None = None) -> None:
    """check_form, the answers looked up from `frame` (the cell's, see ``namespaces``) unless
    `namespace` is given: for a caller that checks on behalf of its own caller's cell
    (course_lib.questions.check_form)."""
    __tracebackhide__ = True
    spaces = [namespace] if namespace is not None else namespaces(frame)
    values = {name: _lookup(name, spaces) for name in specs}
    missing = [n for n, v in values.items() if v is _MISSING]
    if missing:
        before = None if namespace is not None else _answered_before(question)
        if before is not None:      # a restarted kernel: the answer cells have not run again
            raise CheckFailed(f"{_label(question)} was answered before ({before}), but this kernel has not run "
                              f"its answer cell: {_RERUN}.", label="unanswered")
        verb = "is" if len(missing) == 1 else "are"
        raise CheckFailed(f"{_names(missing)} {verb} not answered yet: {_UNANSWERED}.", label="unanswered")
    problems = []
    for name, spec in specs.items():
        try:
            spec.read(values[name])
        except NotAnAnswer as e:
            problems.append(f"{name}: {e}")
    if problems:
        raise CheckFailed("\n".join(problems), label="not-an-answer")
    if namespace is None:      # a notebook's own form check: the answer is now committed
        _commit(question, specs, values)


def _label(question: str) -> str:
    return question.split("_", 1)[-1].upper() if "_" in question else question


def _answered_before(question: str) -> str | None:
    """"committed q3 = 1.1 at 12:03:04 UTC" when this notebook's record holds an answer to
    `question` (None: never answered, or no record)."""
    from .predictions import clock, committed_before, show_values

    try:
        last = committed_before(question)
    except OSError:
        return None
    return None if last is None else f"committed {show_values(last['values'])} at {clock(last['t'])}"


def _commit(question: str, specs: dict, values: dict) -> None:
    """Record the well-formed answer as the question's prediction (course_lib.exercises.predictions)."""
    from .answers import UnsupportedAnswer
    from .predictions import commit

    reasons = [spec.read(values[n]) for n, spec in specs.items() if isinstance(spec, Reason)]
    answers = {n: values[n] for n, spec in specs.items() if not isinstance(spec, Reason)}
    try:
        commit(question, answers, " ".join(reasons) or None)
    except UnsupportedAnswer as e:
        raise CheckFailed(f"{_names(list(answers))}: {e}", label="not-an-answer") from None
    except OSError as e:
        raise CheckFailed(f"{_label(question)}: your answer could not be recorded ({e}): keep the notebook in a "
                          "folder you can write to, then run this check again.") from None


def reveal(*questions: str) -> None:
    """First line of a verify cell: show the truth only for a committed prediction, and record
    the reveal (course_lib.exercises.predictions.reveal).

    >>> reveal("demo_q9")
    Traceback (most recent call last):
    course_lib.exercises.predictions.NotCommitted: Q9: no committed prediction yet. Answer, then run the form check (the test cell right below the answer): it records your answer, and then this cell shows the truth.
    """
    __tracebackhide__ = True
    from .predictions import reveal as _reveal

    _reveal(*questions)


# ---- hidden tests -----------------------------------------------------------------------------
def _mistake_values(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _matching_mistakes(spec, answer, truth, mistakes) -> list[str]:
    """Labels, in the order given, of the mistakes whose value the answer matches."""
    found = []
    for label, values in (mistakes or {}).items():
        if label not in MISCONCEPTIONS:
            raise ValueError(f"unknown misconception label {label!r}; add it to "
                             f"course_lib.exercises.misconceptions.MISCONCEPTIONS (known: {sorted(MISCONCEPTIONS)})")
        for v in _mistake_values(values):
            if v is None:           # this mistake leads to no valid answer here
                continue
            wrong = spec.read_truth(v)
            if spec.agrees(wrong, truth) or spec.agrees(truth, wrong):
                continue            # indistinguishable from the truth here: not a mistake
            if spec.agrees(answer, wrong):
                found.append(label)
                break
    return found


def _mistake_message(name: str, labels: list[str]) -> str:
    if labels[0] == "lesson-numbers":       # no physics mistake: other numbers
        text = f"{name} is {describe(labels[0])}"
    else:
        text = f"{name} matches a classic mistake: {describe(labels[0])}"
    for other in labels[1:]:
        text += f" (It also matches {MISCONCEPTIONS[other].mistake}.)"
    return text


def _wrong_message(name, spec, answer, truth, hint) -> str:
    if isinstance(spec, Number):
        direction = "large" if answer > truth else "small"
        tol = f"{spec.rel_tol:.0%}" if spec.rel_tol >= 0.01 else f"{spec.rel_tol:.1%}"
        text = (f"{name} does not match course_lib (it is too {direction}"
                + (f", by more than {tol})." if spec.rel_tol else ")."))
    elif isinstance(spec, Regime):
        text = f"{name}: the roofline disagrees with {answer!r}."
    else:
        text = f"{name}: course_lib does not find {answer!r}."
    return text + (f" {hint}" if hint else "")


def check_answer(question: str, name: str, spec: Spec, truth, *, mistakes: dict | None = None,
                 hint: str = "", namespace: dict | None = None) -> None:
    """The hidden test of one answer variable (see the module docstring).

    >>> q9_prediction = "compute"
    >>> check_answer("demo_q9", "q9_prediction", Regime(), "memory-bound",
    ...              mistakes={"weights-only": "compute-bound"})
    Traceback (most recent call last):
    course_lib.exercises.misconceptions.CheckFailed: q9_prediction matches a classic mistake: counting only the weights' bytes. Add the bytes each sample moves on its own: activations read and written by every layer, and for an LLM the KV cache.
    """
    __tracebackhide__ = True
    _check_question(question)
    value = _lookup(name, [namespace] if namespace is not None else namespaces(sys._getframe(1)))
    if value is _MISSING:
        raise CheckFailed(f"{name} is not answered yet: {_UNANSWERED}.", label="unanswered")
    try:
        answer = spec.read(value)
    except NotAnAnswer as e:
        raise CheckFailed(f"{name}: {e}", label="not-an-answer") from None
    t = spec.read_truth(truth)
    if spec.agrees(answer, t):
        return
    labels = _matching_mistakes(spec, answer, t, mistakes)
    if labels:
        raise CheckFailed(_mistake_message(name, labels), label=labels[0])
    raise CheckFailed(_wrong_message(name, spec, answer, t, hint), label=None)


# ---- verify cells -------------------------------------------------------------------------------
def verify(question: str, name: str, spec: Spec, truth, explanation: str = "", *,
           mistakes: dict | None = None, namespace: dict | None = None) -> bool:
    """Print the answer graded next to course_lib's; say whether it holds and, if not, which
    classic mistake it matches.

    Once the question's truth was shown (course_lib.exercises.predictions), the answer graded is the one
    committed before the reveal: a notebook that now holds a revision gets both, the verdict on
    the committed one and a line saying the revision earns no correctness points. A kernel that
    has not run the answer cell (restarted) is judged on the committed answer too.
    Never raises on the answer (a missing or malformed one is reported); returns whether the
    answer graded holds.

    >>> q9_prediction = "compute"
    >>> verify("demo_q9", "q9_prediction", Regime(), "memory-bound", "Intensity is below the ridge.")
    q9_prediction: 'compute-bound'
    course_lib:    'memory-bound'
    Your prediction differs. Intensity is below the ridge.
    False
    """
    _check_question(question)
    t = spec.read_truth(truth)
    value = _lookup(name, [namespace] if namespace is not None else namespaces(sys._getframe(1)))
    graded = _graded(question, name)        # this notebook's record (a hidden test never verifies)
    if graded is None:
        shown, right, labels = _judge(spec, value, t, mistakes)
        width = max(len(name), len("course_lib")) + 1
        print(f"{name + ':':{width}s} {shown}")
        print(f"{'course_lib:':{width}s} {spec.show(t)}")
        _verdict("Your prediction", right, labels, explanation)
        return right
    committed, when = graded
    g_shown, right, labels = _judge(spec, committed, t, mistakes)
    same = value is not _MISSING and _same_answer(spec, value, committed)
    if same:
        width = max(len(name), len("course_lib")) + 1
        print(f"{name + ':':{width}s} {g_shown}   (committed at {when})")
        print(f"{'course_lib:':{width}s} {spec.show(t)}")
        _verdict("Your prediction", right, labels, explanation)
        return right
    first = f"{name} (committed {when[:5]} UTC, graded):"
    now = f"{name} (now):"
    width = max(len(first), len(now), len("course_lib:"))
    print(f"{first:{width}s} {g_shown}")
    if value is _MISSING:
        print(f"{now:{width}s} not defined in this kernel ({_RERUN})")
    else:
        print(f"{now:{width}s} {_judge(spec, value, t, None)[0]}")
    print(f"{'course_lib:':{width}s} {spec.show(t)}")
    _verdict("Your committed answer", right, labels, explanation)
    if value is not _MISSING:
        holds = _judge(spec, value, t, None)[1]
        print(f"You committed {g_shown} at {when[:5]} UTC ({'matches' if right else 'differs from'} the truth); "
              f"your revision, {_judge(spec, value, t, None)[0]}, "
              f"{'matches it, but earns' if holds else 'does not match it' + ('' if right else ' either') + ', and earns'} no "
              f"correctness points: {_label(question)} is graded on the answer committed before the truth was shown.")
    return right


def _judge(spec, value, t, mistakes) -> tuple[str, bool, list]:
    """(how the answer reads, whether it holds, the mistakes it matches)."""
    if value is _MISSING:
        return f"not answered yet ({_UNANSWERED})", False, []
    try:
        answer = spec.read(value)
    except NotAnAnswer as e:
        return f"{value!r} is not an answer: {e}", False, []
    right = spec.agrees(answer, t)
    return spec.show(answer), right, ([] if right else _matching_mistakes(spec, answer, t, mistakes))


def _verdict(who: str, right: bool, labels: list, explanation: str) -> None:
    if right:
        print(f"{who} holds.")
    else:
        named = (f" It is {describe(labels[0])}" if labels and labels[0] == "lesson-numbers"
                 else f" It matches a classic mistake: {describe(labels[0])}" if labels else "")
        print(f"{who} differs." + named + (f" {explanation}" if explanation else ""))


def _graded(question: str, name: str):
    """(the committed value of `name`, "HH:MM:SS UTC") once the question's truth was shown in
    this notebook (course_lib.exercises.predictions); None before, or without a record."""
    from .answers import UnsupportedAnswer, decode
    from .predictions import clock, graded

    try:
        g = graded(question)
    except OSError:
        return None
    if g is None or name not in g["values"]:
        return None
    try:
        return decode(g["values"][name]), clock(g["t"])
    except (UnsupportedAnswer, TypeError, ValueError):
        return None


def _same_answer(spec, value, committed) -> bool:
    from .answers import UnsupportedAnswer, encode
    from .predictions import same_value

    try:
        return same_value({"x": encode(value)}, {"x": encode(committed)})
    except (UnsupportedAnswer, TypeError, ValueError):
        return False


# ---- the older, value-based calls (same parser) ---------------------------------------------------
def _form(spec, value):
    try:
        return spec.read(value)
    except NotAnAnswer as e:
        raise CheckFailed(str(e), label="not-an-answer") from None


def check_form_number(prediction, units=None, reasoning=None) -> None:
    """The prediction is a finite number, or a Quantity convertible to `units`.

    >>> check_form_number(Q_(4.5, "ms"), "ms")
    >>> check_form_number(Q_(4.5, "GB"), "ms")
    Traceback (most recent call last):
    course_lib.exercises.misconceptions.CheckFailed: the answer has units GB, which do not convert to ms: check what the question asks for.
    """
    __tracebackhide__ = True
    if units is None and is_quantity(prediction):
        units = f"{prediction.units}"     # the old call accepted any Quantity here
    _form(Number(units), prediction)
    if reasoning is not None:
        _form(Reason(), reasoning)


def check_regime(prediction, truth) -> None:
    """The predicted regime equals `truth` (a regime string or anything with ``.bottleneck``).

    >>> check_regime("Memory Bound", "memory-bound")
    """
    __tracebackhide__ = True
    spec = Regime()
    got, t = _form(spec, prediction), spec.read_truth(truth)
    if got != t:
        raise CheckFailed(
            f"The roofline disagrees with '{got}'. Compare the arithmetic intensity (FLOPs per "
            "byte moved) with the ridge point (peak FLOP/s per byte/s of bandwidth).")


_HINTS = (  # factor -> (label, hint) for check_number without computed mistakes
    (2.0, None, "off by a factor of 2: check 2 FLOPs per multiply-accumulate, and 2 bytes per fp16 element"),
    (4.0, "bytes-per-element", "off by a factor of 4: check bytes per element (fp32 = 4, fp16 = 2, int8 = 1)"),
    (1000.0, "unit-prefix", "off by a factor of 1000: check the unit prefixes (k, M, G, T; ms vs µs)"),
    (1e6, "unit-prefix", "off by a factor of a million: check the unit prefixes"),
    (1.073741824, "gib-vs-gb", "off by 7%: decimal GB (10⁹ B) vs binary GiB (2³⁰ B)?"),
    (1.024, "gib-vs-gb", "off by 2.4%: decimal kB (1000 B) vs binary KiB (1024 B)?"),
)


def check_number(answer, truth, rel_tol: float = 0.02, units: str | None = None) -> None:
    """`answer` matches `truth` within `rel_tol` (value-based hidden test).

    `truth` is a Quantity or a float. A bare-number answer is read in `units` if given, else
    in the truth's units; a Quantity answer is converted, so 153, Q_(153, "FLOP/byte") and
    Q_(0.153, "kFLOP/byte") all match a truth of 153 FLOP/byte.

    >>> check_number(Q_(0.153, "kFLOP/byte"), Q_(153.0, "FLOP/byte"))
    >>> check_number(306, Q_(153.0, "FLOP/byte"))
    Traceback (most recent call last):
    course_lib.exercises.misconceptions.CheckFailed: Your value (read in FLOP/B) is too large, off by a factor of 2: check 2 FLOPs per multiply-accumulate, and 2 bytes per fp16 element.
    """
    __tracebackhide__ = True
    t_units = units or (f"{truth.units}" if is_quantity(truth) else None)
    spec = Number(t_units, rel_tol)
    t = spec.read_truth(truth)
    a = _form(spec, answer)
    if spec.agrees(a, t):
        return
    unit_txt = f" (read in {Q_(1, t_units).units:~P})" if t_units is not None else ""
    if a == 0 or t == 0 or (a > 0) != (t > 0):
        raise CheckFailed(f"Your value{unit_txt} is not within {rel_tol:.0%} of course_lib's.")
    ratio = max(a / t, t / a)
    direction = "large" if a > t else "small"
    # unit hints only for dimensioned answers: for a ratio or a count, a factor of 2 says
    # nothing about FLOPs per MAC
    dimensioned = t_units is not None and not Q_(1, t_units).dimensionless
    for factor, label, hint in _HINTS if dimensioned else ():
        # near-1 factors (GB vs GiB) need a tight match, or they catch unrelated slips
        if math.isclose(ratio, factor, rel_tol=max(rel_tol, 0.03) if factor > 1.5 else 0.004):
            raise CheckFailed(f"Your value{unit_txt} is too {direction}, {hint}.", label=label)
    raise CheckFailed(
        f"Your value{unit_txt} is too {direction} (not within {rel_tol:.0%}). "
        "Redo the arithmetic step by step: FLOPs, then bytes, then the ratio.")
