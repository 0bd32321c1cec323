"""Every student their own numbers: a question's variant, drawn from its parameter space.

A question declared with ``space={"prompt": [512, 1024, 2048], ...}`` beside its canonical
``givens`` is asked with different numbers per student. The draw is deterministic:

* the course secret stays with the instructor; from it and a student id the instructor's side
  derives the student's **variant key**, ``HMAC-SHA256(secret, student id)`` (:func:`student_key`);
* a question's variant is ``admissible(qid)[HMAC-SHA256(key, qid) mod n]`` (:func:`draw`): the
  same key always gives the same numbers, and without the secret nobody can compute another
  student's key (so nobody can pick a friend's variant, nor the grader's for someone else).

Where the kernel finds the key (:func:`identity`), first hit wins:

1. ``ROOFLINE_VARIANT_KEY`` (and ``ROOFLINE_STUDENT``) in the environment: set by the grader for
   the student graded (kernel and clean re-verification) and by the hub for the logged-in user;
   an empty key means the canonical variant;
2. ``.roofline-student.json`` in the notebook's folder or any folder above it, or in the home
   folder, written once by :func:`set_student` (a laptop or Binder: the instructor hands each
   student the key, ``python -m autograder variants A --keys``);
3. nothing: the canonical variant (the lesson's own numbers).

Only **admissible** variants are drawn (:func:`problems`): every listed mistake stays at least
``MARGIN`` tolerances from the truth, every regime, choice and ratio keeps its answer under
``course_lib.sensitivity.STANDARD``, and the question's own assumptions hold (``assumes=``).
Questions declared with one ``group`` (several questions on one request) are drawn together,
``HMAC-SHA256(key, group)``, among the variants admissible for every one of them. A question
whose truth needs this machine's measurement (``measured=True``, lesson 5) is admitted by its
``assumes`` alone, so the variants drawn never depend on the machine drawing them.

>>> from course_lib.questions import get
>>> draw("", "phases_q3") == get("phases_q3").givens        # no key: the canonical numbers
True
>>> key = student_key(b"the course secret, 32 bytes long", "alice")
>>> draw(key, "phases_q3") == draw(key, "phases_q3")
True
"""
from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import os
import re
from functools import lru_cache
from pathlib import Path

from .registry import REGISTRY, get, question_order

__all__ = ["KEY_ENV", "STUDENT_ENV", "STUDENT_FILE", "MARGIN", "student_key", "draw", "admissible", "problems",
           "identity", "current", "set_student", "givens", "describe", "recorded"]

KEY_ENV = "ROOFLINE_VARIANT_KEY"
STUDENT_ENV = "ROOFLINE_STUDENT"
STUDENT_FILE = ".roofline-student.json"
#: a listed mistake must sit at least this many tolerances from the truth (the suite's test_questions.py)
MARGIN = 1.5
KEY_RE = re.compile(r"[0-9a-f]{32}")


def student_key(secret: bytes, student: str) -> str:
    """The variant key of `student` (32 hex digits): what the grader and the hub hand the kernel."""
    if not isinstance(secret, (bytes, bytearray)) or len(secret) < 16:
        raise ValueError("the course secret must be at least 16 bytes (python -m autograder variants --init-secret)")
    if not isinstance(student, str) or not student:
        raise ValueError(f"a student id is a non-empty string, got {student!r}")
    return hmac.new(bytes(secret), b"roofline-variant\0" + student.encode(), hashlib.sha256).hexdigest()[:32]


def _space_points(q) -> list[dict]:
    names = list(q.space)
    return [{**q.givens, **dict(zip(names, combo))} for combo in itertools.product(*(q.space[n] for n in names))]


def _values(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


def problems(qid: str, givens: dict) -> list[str]:
    """Why the variant `givens` of question `qid` may not be asked (empty: admissible)."""
    from ..exercises.answer_forms import Choice, Number, Ratio, Regime
    from ..sensitivity import STANDARD, perturb

    q = get(qid)
    out = []
    if q.assumes is not None:
        why = q.assumes(**givens)
        if why:
            out.append(f"assumption: {why}")
    if q.measured:          # solving would measure this machine: what another one admits could differ
        return out
    try:
        sol = q.solution(**givens)
    except (ValueError, KeyError) as e:
        return out + [f"cannot be solved: {e}"]
    for name in q.answer_names:
        spec, t = q.specs[name], sol.truths[name]
        if not isinstance(spec, Number):
            continue
        truth = spec.read_truth(t.value)
        for label, vals in t.mistakes.items():
            for v in _values(vals):
                if v is None:
                    continue
                wrong = spec.read_truth(v)
                off = abs(wrong / truth - 1) if truth else abs(wrong)
                if off < MARGIN * spec.rel_tol:
                    out.append(f"{name}: the mistake {label!r} ({wrong:.4g}) is {off:.1%} from the truth "
                               f"({truth:.4g}), inside {MARGIN} x {spec.rel_tol:.0%}")
    for change in STANDARD:
        try:
            with perturb(**change):
                moved = q.solution(**givens)
        except (ValueError, KeyError) as e:        # e.g. a question's own premise breaks under the change
            out.append(f"cannot be solved under {change}: {e}")
            continue
        for name in q.answer_names:
            spec = q.specs[name]
            now, was = spec.read_truth(moved.truths[name].value), spec.read_truth(sol.truths[name].value)
            if isinstance(spec, (Regime, Choice)) and now != was:
                out.append(f"{name}: {was} becomes {now} under {change}")
            elif isinstance(spec, Ratio) and abs(now / was - 1) > spec.rel_tol:
                out.append(f"{name}: the ratio moves {now / was - 1:+.1%} under {change}, past its tolerance")
    return out


def _members(q) -> list:
    """The questions drawn together with `q`: its group (declared with the same space), or itself."""
    if not q.group:
        return [q]
    members = sorted((o for o in REGISTRY.values() if o.group == q.group), key=lambda o: question_order(o.id))
    for o in members:
        if o.space != q.space:
            raise ValueError(f"{o.id} and {q.id} are drawn together (group {q.group!r}) but declare different "
                             f"spaces: {o.space} and {q.space}")
    return members


#: a student's copy of course_lib (no answer key to check variants with) keeps them as data
ADMISSIBLE_FILE = Path(__file__).with_name("admissible.json")


@lru_cache(maxsize=None)
def _admissible_data() -> dict:
    try:
        data = json.loads(ADMISSIBLE_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@lru_cache(maxsize=None)
def _admissible(qid: str) -> tuple:
    q = get(qid)
    if not q.space:
        return (json.dumps(q.givens, sort_keys=True),)
    if qid in _admissible_data():
        return tuple(json.dumps(g, sort_keys=True) for g in _admissible_data()[qid])
    members = _members(q)
    return tuple(json.dumps(g, sort_keys=True) for g in _space_points(q)
                 if not any(problems(m.id, {**m.givens, **{n: g[n] for n in q.space}}) for m in members))


def admissible(qid: str) -> list[dict]:
    """The variants of `qid` that may be asked, in the space's order (the canonical one alone for a
    question without a space)."""
    return [json.loads(g) for g in _admissible(qid)]


def draw(key: str | None, qid: str) -> dict:
    """The givens of `qid` for the variant key `key` ("" or None: the canonical givens)."""
    q = get(qid)
    if not key or not q.space:
        return dict(q.givens)
    if not KEY_RE.fullmatch(key):
        raise ValueError(f"a variant key is 32 hex digits (from your instructor), got {key!r}")
    options = admissible(qid)
    if not options:
        raise RuntimeError(f"{qid}: no admissible variant in its space (variants.problems(qid, givens) says why)")
    h = hmac.new(key.encode(), (q.group or qid).encode(), hashlib.sha256).digest()
    return options[int.from_bytes(h[:8], "big") % len(options)]


# ---- whose numbers ---------------------------------------------------------------------------------
def _student_files() -> list[Path]:
    here = Path.cwd().resolve()
    return [d / STUDENT_FILE for d in (here, *here.parents)] + [Path.home() / STUDENT_FILE]


def identity() -> tuple[str, str, str]:
    """(student id, variant key, where they came from); ("", "", "none") without either."""
    if KEY_ENV in os.environ:
        return os.environ.get(STUDENT_ENV, ""), os.environ[KEY_ENV].strip().lower(), "environment"
    for path in _student_files():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            return str(data.get("student", "")), str(data.get("key", "")).strip().lower(), str(path)
    return "", "", "none"


def current(qid: str) -> dict:
    """The givens of `qid` for whoever runs this kernel (the canonical ones for nobody)."""
    return draw(identity()[1], qid)


def recorded(qid: str) -> dict | None:
    """What a committed prediction records about its variant: the givens it was made for, or
    None for a question without a space."""
    try:
        q = get(qid)
    except (KeyError, ImportError):     # a lesson not declared yet
        return None
    if not q.space:
        return None
    try:
        return current(qid)
    except ValueError:
        return None


def set_student(student: str, key: str = "", *, folder: str | Path | None = None) -> Path:
    """Remember who you are on a laptop or Binder (once): `student` is your id as the course
    knows it, `key` the 32-hex-digit variant key your instructor gave you. Written to
    ``.roofline-student.json`` in your home folder (or `folder`); rerun the lesson's cells after."""
    if not isinstance(student, str) or not student.strip():
        raise ValueError(f"set_student needs your student id as a string, e.g. set_student('jdoe', '<key>'); "
                         f"got {student!r}")
    key = (key or "").strip().lower()
    if key and not KEY_RE.fullmatch(key):
        raise ValueError(f"a variant key is 32 hex digits, as your instructor gave it; got {key!r}")
    path = Path(folder or Path.home()) / STUDENT_FILE
    path.write_text(json.dumps({"student": student.strip(), "key": key}) + "\n", encoding="utf-8")
    if KEY_ENV in os.environ:
        print(f"Saved to {path}, but this server already names you ({os.environ.get(STUDENT_ENV) or 'by key'}): "
              "its numbers win.")
    elif not key:
        print(f"Saved to {path}. Without a key from your instructor you get the lesson's own numbers.")
    else:
        print(f"Saved to {path}: rerun the given cells to see your numbers.")
    return path


def describe(qid: str, givens: dict) -> str:
    """The givens of `qid` in words ("a 1024-token prompt, 64 sequences")."""
    q = get(qid)
    names = list(q.space) or list(givens)
    return ", ".join(_label(q.labels.get(n, "{name} {value}"), n, givens[n]) for n in names)


def _label(label, name: str, value) -> str:
    """A given in words: `label` is a format string ("{value}-token prompt") or a function of the
    value (a chip's key -> its name and datasheet figures)."""
    return label(value) if callable(label) else label.format(name=name, value=value)


def givens(qid: str) -> None:
    """A given cell: prints the numbers of question `qid` for whoever runs the kernel."""
    q = get(qid)
    student, key, _ = identity()
    g = draw(key, qid)
    label = "/".join(m.id.split("_", 1)[1].upper() for m in _members(q))     # "Q1/Q2/Q3" for a group
    if key and q.space:
        print(f"Your numbers for {label} ({student or 'your key'}): {describe(qid, g)}.")
    else:
        print(f"Numbers for {label}: {describe(qid, g)} (the lesson's own: no student id is set; with a key "
              "from your instructor, run course_lib.questions.set_student('your id', 'key') once).")
