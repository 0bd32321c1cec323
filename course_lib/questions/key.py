"""Where a question's truth comes from: the answer key.

The instructor's course_lib (and the grader's, and the course service's) solves each question
itself. The copy a student's kernel runs does not: its solvers are stubs that raise
:class:`KeyHeld` (autograder.authoring.student_build writes it), so nothing importable in the
kernel computes a graded answer, and a verify cell asks for the truth instead:

* on a hub, the **course service** (``COURSE_SERVICE_URL``, the user's hub token): it records
  the reveal before it answers, refuses a question the student has not committed to it, and
  computes the truth of the student's own variant (course_hub.service.key);
* on Binder or a laptop (the student repository), the lesson's own numbers' truths, kept as
  data beside the package (``practice.json``): practice, graded by no one.

A truth travels as JSON: numbers, text, lists, and Quantities as ``{"$q": [magnitude, units]}``.

>>> from course_lib.units import Q_
>>> decode(encode({"v": Q_(2.5, "ms"), "m": [1.0, None]})) == {"v": Q_(2.5, "ms"), "m": [1.0, None]}
True
"""
from __future__ import annotations

import contextlib
import io
import json
import numbers
import urllib.error
import urllib.request
from pathlib import Path

from .. import ledger
from .solution import Solution, Truth

__all__ = ["KeyHeld", "KeyUnavailable", "held", "encode", "decode", "solution_data", "solution_from",
           "PRACTICE_FILE", "practice", "from_service", "TIMEOUT"]

PRACTICE_FILE = Path(__file__).with_name("practice.json")
TIMEOUT = 10.0          # seconds for the service's answer (it solves one question)


class KeyHeld(Exception):
    """This copy of course_lib holds no answer key (a student's): the course service has it."""

    def __init__(self, qid: str):
        super().__init__(f"{qid}: the answer key is not in this copy of course_lib (the course service holds it)")
        self.qid = qid


class KeyUnavailable(Exception):
    """No truth can be shown here now (says why and what to do); in a notebook, one line."""

    def _render_traceback_(self):     # IPython: the lines shown instead of a traceback
        return [f"\x1b[0;31mTruth not available\x1b[0m: {self}"]


def held(qid: str):
    """A student copy's solver body: the truth is not here."""
    raise KeyHeld(qid)


def encode(obj):
    """A truth (or a mistake's value) as JSON data."""
    if hasattr(obj, "magnitude") and hasattr(obj, "units"):        # a pint Quantity
        return {"$q": [float(obj.magnitude), str(obj.units)]}
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, (str, int)):
        return obj
    if isinstance(obj, numbers.Real):
        return float(obj)
    raise TypeError(f"cannot send a truth of type {type(obj).__name__}")


def decode(obj):
    from ..units import Q_

    if isinstance(obj, dict):
        if set(obj) == {"$q"} and isinstance(obj["$q"], list) and len(obj["$q"]) == 2:
            return Q_(float(obj["$q"][0]), str(obj["$q"][1]))
        return {k: decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    return obj


def solution_data(sol, lessons=None) -> dict:
    """A Solution as JSON data, its arithmetic (`work`) as the text it prints; `lessons`, the
    lesson's own solution where the student's numbers differ (its values name a mistake)."""
    work = ""
    if sol.work is not None:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            sol.work()
        work = buf.getvalue()
    return {"truths": {n: {"value": encode(t.value), "mistakes": encode(t.mistakes), "explanation": t.explanation}
                       for n, t in sol.truths.items()},
            "hint": sol.hint, "work": work,
            "lessons": None if lessons is None else {n: encode(t.value) for n, t in lessons.truths.items()}}


def solution_from(data: dict):
    """(Solution, the lesson's own Solution or None) from `solution_data`'s JSON."""
    if not isinstance(data, dict) or not isinstance(data.get("truths"), dict):
        raise KeyUnavailable("the answer key's reply is not a solution")
    text = str(data.get("work") or "")

    def work():
        print(text, end="")

    truths = {n: Truth(decode(t.get("value")), decode(t.get("mistakes") or {}), str(t.get("explanation") or ""))
              for n, t in data["truths"].items()}
    sol = Solution(truths, hint=str(data.get("hint") or ""), work=work if text else None)
    lessons = data.get("lessons")
    own = None if not isinstance(lessons, dict) else Solution({n: Truth(decode(v)) for n, v in lessons.items()})
    return sol, own


def practice(qid: str) -> dict | None:
    """The lesson's own truth of `qid` from the practice data beside the package, else None."""
    try:
        data = json.loads(PRACTICE_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entry = data.get(qid) if isinstance(data, dict) else None
    return entry if isinstance(entry, dict) else None


def from_service(qid: str, folder: Path, what: str = "reveal") -> dict | None:
    """Ask the course service for `qid`'s truth (it records the reveal first); None where no
    service is advertised. Raises KeyUnavailable with the service's reason when it refuses."""
    where = ledger.advertised()
    if where is None:
        return None
    url, token = where
    body = {"question": qid, "assignment": Path(folder).name[:100], "notebook": ledger.notebook_name()[:200]}
    request = urllib.request.Request(
        f"{url}/key/{what}", data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return json.loads(response.read(1 << 20))
    except urllib.error.HTTPError as e:
        try:
            reason = json.loads(e.read(4096)).get("error")
        except ValueError:
            reason = None
        raise KeyUnavailable(reason or f"the course service answered {e.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise KeyUnavailable(f"the course service cannot be reached ({e}); run the cell again in a moment, "
                             "and tell your instructor if it keeps failing") from None
