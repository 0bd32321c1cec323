"""Predictions that count: a prediction is committed before the truth is revealed.

Every lesson explains this in its "How your predictions are recorded" note. When a question's
form check passes, the answer (and its reasoning) is **committed**: recorded with the time. The
first commit is kept; a later, different answer is recorded as a revision. A verify cell
**reveals** the truth only for a committed prediction, and records that it did. The grader
then grades each prediction as it was committed before its reveal (autograder.predictions).

The record is kept twice, so it survives both ways work is handed in:

* a file beside the notebook, ``.predictions.jsonl`` (one JSON event per line), which the
  nbgrader exchange carries with the assignment folder;
* the output of the cell that made the event (a JSON display, MIME type ``MIME``), which a
  saved notebook keeps, so a single .ipynb uploaded to an LMS carries it too.

Each event is chained by hash to the previous event of its question and to the previous event
of the whole record, and times run forward: editing the record by hand breaks a chain or
disagrees with a copy kept in the notebook, and the grader flags it to the instructor.
(A student who reprograms the chain and rewrites every copy consistently is not detected by
the chain alone; that takes deliberate programming, and the grader's other checks still
apply.)

While nbgrader runs the notebook (Validate, autograding: ``NBGRADER_EXECUTION`` is set) nothing
is recorded and nothing is withheld.

>>> e = make_event([], "demo_q1", "commit", {"q1": 2.0}, "a reason", t="2026-01-01T00:00:00.000Z")
>>> e["kind"], e["n"], len(e["hash"])
('commit', 0, 64)
>>> check_events([e])
[]
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import uuid
from pathlib import Path

from .question_ids import label as _label      # 'wall_q2b' -> 'Q2B'

__all__ = ["RECORD_FILE", "MIME", "NotCommitted", "commit", "reveal", "recording", "record_path",
           "load_record", "make_event", "event_hash", "check_events", "question_events", "history",
           "notebook_events", "same_value"]

RECORD_FILE = ".predictions.jsonl"
MIME = "application/vnd.roofline.predictions+json"
FORMAT = 1
_SESSION = uuid.uuid4().hex[:12]      # one kernel process = one session
_HERE: Path | None = None


class NotCommitted(Exception):
    """A verify cell ran before its question's form check committed a prediction."""


# ---------------------------------------------------------------------------------------------
# events
# ---------------------------------------------------------------------------------------------
def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def event_hash(event: dict) -> str:
    """sha256 of the event without its own hash."""
    return hashlib.sha256(_canonical({k: v for k, v in event.items() if k != "hash"})).hexdigest()


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def make_event(events: list, question: str, kind: str, values: dict | None = None,
               reasoning: str | None = None, *, t: str | None = None, count=None) -> dict:
    """The next event of a record holding `events` (not appended)."""
    mine = [e for e in events if e.get("q") == question]
    event = {"v": FORMAT, "seq": len(events), "n": len(mine), "kind": kind, "q": question,
             "values": values or {}, "reason": reasoning, "t": t or _now(), "session": _SESSION,
             "count": count, "prev_q": mine[-1]["hash"] if mine else "",
             "prev": events[-1]["hash"] if events else ""}
    event["hash"] = event_hash(event)
    return event


def question_events(events: list, question: str) -> list:
    return [e for e in events if e.get("q") == question]


def check_events(events: list) -> list[str]:
    """What is wrong with a record (empty: nothing found). The events are in file order."""
    problems = []
    last_t, last_hash, per_q = "", "", {}
    for i, e in enumerate(events):
        where = f"event {i} ({e.get('q', '?')} {e.get('kind', '?')})"
        if not isinstance(e, dict) or e.get("v") != FORMAT:
            problems.append(f"{where}: not an event of this record format")
            continue
        if e.get("hash") != event_hash(e):
            problems.append(f"{where}: its content does not match its hash (edited by hand?)")
        if e.get("seq") != i or e.get("prev") != last_hash:
            problems.append(f"{where}: out of sequence (an event was removed, inserted or reordered)")
        mine = per_q.setdefault(e.get("q"), [])
        if e.get("n") != len(mine) or e.get("prev_q") != (mine[-1]["hash"] if mine else ""):
            problems.append(f"{where}: breaks its question's chain")
        if str(e.get("t", "")) < last_t:
            problems.append(f"{where}: its time {e.get('t')} is earlier than the event before it ({last_t})")
        if e.get("kind") == "reveal" and not any(m.get("kind") in ("commit", "revise") for m in mine):
            problems.append(f"{where}: a reveal without a committed prediction")
        if e.get("kind") not in ("commit", "revise", "reveal"):
            problems.append(f"{where}: unknown kind {e.get('kind')!r}")
        mine.append(e)
        last_t, last_hash = str(e.get("t", "")), e.get("hash", "")
    return problems


def _plain(value):
    """An answer reduced for comparison: numbers to floats in base units, strings to letters
    and digits in lower case, sequences item by item."""
    from .units import is_quantity

    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if is_quantity(value):
        base = value.to_base_units()
        return [_plain(base.magnitude), str(base.units)]
    if isinstance(value, str):
        return "".join(ch for ch in value.casefold() if ch.isalnum())
    if hasattr(value, "dtype") and getattr(value, "size", 0) == 1:    # numpy
        value = value.reshape(()).item() if hasattr(value, "reshape") else value.item()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


def _close(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return a == b


def same_value(a: dict, b: dict) -> bool:
    """Two answers, each {variable: encoded value} (course_lib.answers), are the same answer:
    the same numbers (to 1e-9, in whatever units), the same words (ignoring case, spaces and
    dashes). Changing 'Memory Bound' to 'memory-bound' is not a change of prediction."""
    from .answers import UnsupportedAnswer, decode

    if not isinstance(a, dict) or not isinstance(b, dict) or a.keys() != b.keys():
        return False
    try:
        return all(_close(_plain(decode(a[k])), _plain(decode(b[k]))) for k in a)
    except (UnsupportedAnswer, TypeError, ValueError):
        return a == b


def history(events: list, question: str) -> dict:
    """What the record says about one question.

    committed  -- the values committed last before the first reveal (None: never committed)
    revealed   -- whether the truth was shown
    first      -- the values of the first commit
    after      -- values committed after the first reveal that differ from `committed`
    """
    mine = question_events(events, question)
    committed, revealed, first, after = None, False, None, []
    for e in mine:
        if e["kind"] in ("commit", "revise"):
            if first is None:
                first = e["values"]
            if not revealed:
                committed = e["values"]
            elif not same_value(e["values"], committed):
                after.append(e["values"])
        elif e["kind"] == "reveal" and committed is not None:
            revealed = True
    return {"committed": committed, "revealed": revealed, "first": first, "after": after,
            "events": len(mine)}


# ---------------------------------------------------------------------------------------------
# the record file and the notebook copies
# ---------------------------------------------------------------------------------------------
def recording() -> bool:
    """False while nbgrader runs the notebook (Validate, autograding)."""
    return not os.environ.get("NBGRADER_EXECUTION")


def record_path() -> Path:
    """The record beside the notebook (the kernel's working folder when first asked)."""
    global _HERE
    if _HERE is None:
        _HERE = Path.cwd()
    return _HERE / RECORD_FILE


def load_record(path: Path) -> list:
    """The events of a record file, in order (unreadable lines become unparseable markers)."""
    path = Path(path)
    if not path.is_file():
        return []
    events = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except ValueError:
            events.append({"unparseable": line[:200]})
    return events


class _Locked:
    """An exclusive lock on the record while appending (two kernels on one notebook)."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        self.f = open(self.path, "a+", encoding="utf-8")
        try:
            import fcntl

            fcntl.flock(self.f, fcntl.LOCK_EX)
        except (ImportError, OSError):   # Windows or a file system without locks
            pass
        return self.f

    def __exit__(self, *exc):
        self.f.close()


def _append(question: str, kind: str, values=None, reasoning=None) -> tuple[dict, list]:
    path = record_path()
    with _Locked(path) as f:
        events = load_record(path)
        event = make_event(events, question, kind, values, reasoning, count=_execution_count())
        f.write(json.dumps(event, sort_keys=True) + "\n")
        f.flush()
    return event, events + [event]


def _execution_count():
    try:
        from IPython import get_ipython

        ip = get_ipython()
        return getattr(ip, "execution_count", None)
    except Exception:  # pragma: no cover - no IPython
        return None


def _show(text: str, question: str, events: list) -> None:
    """A receipt in the cell's output (in a notebook; a plain script gets none): readable text,
    plus the question's chain as JSON that the saved notebook keeps."""
    payload = {"question": question, "events": question_events(events, question)}
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - no IPython: no notebook to keep the copy
        return
    if get_ipython() is not None:
        display({"text/plain": text, MIME: payload}, raw=True)




def commit(question: str, values: dict, reasoning: str | None = None) -> dict | None:
    """Record `values` ({variable: value}) as the prediction of `question` (a form check calls
    this once the form is right). Returns the event written, or None when nothing new was
    recorded (the same answer again, or nbgrader is running the notebook).
    Raises course_lib.answers.UnsupportedAnswer for a value that cannot be written down."""
    if not recording():
        return None
    from .answers import encode

    encoded = {name: encode(v) for name, v in values.items()}
    events = load_record(record_path())
    mine = [e for e in question_events(events, question) if e.get("kind") in ("commit", "revise")]
    label = _label(question)
    if mine and same_value(mine[-1].get("values"), encoded) and mine[-1].get("reason") == reasoning:
        _show(f"{label}: your answer is committed (unchanged since {mine[-1]['t'][11:19]} UTC).",
              question, events)
        return None
    revealed = any(e.get("kind") == "reveal" for e in question_events(events, question))
    event, events = _append(question, "revise" if mine else "commit", encoded, reasoning)
    if not mine:
        text = (f"{label}: answer committed at {event['t'][11:19]} UTC; its verify cell may now show the "
                f"truth. If {label} is marked *prediction*, this is the answer graded, not a later one.")
    elif revealed:
        text = (f"{label}: changed after the truth was shown, recorded as a revision. If {label} is marked "
                "*prediction* it is graded on the answer committed before the reveal (this change earns "
                "no correctness points); if *by hand*, on your final answer.")
    else:
        text = f"{label}: answer revised at {event['t'][11:19]} UTC, before the truth was shown: the new one counts."
    _show(text, question, events)
    return event


def reveal(*questions: str) -> None:
    """Let a verify cell show the truth of `questions`: only once each has a committed
    prediction; records the reveal. Raises NotCommitted otherwise, saying what to run first
    (and reveals nothing)."""
    __tracebackhide__ = True      # IPython shows the notebook's line, not this one
    if not questions:
        raise TypeError("reveal needs the question ids, e.g. reveal('wall_q1')")
    if not recording():
        return
    events = load_record(record_path())
    lacking = [q for q in questions
               if not any(e.get("kind") in ("commit", "revise") for e in question_events(events, q))]
    if lacking:
        labels = " and ".join(_label(q) for q in lacking)
        raise NotCommitted(
            f"{labels}: no committed prediction yet. Answer, then run the form check (the test cell "
            "right below the answer): it records your prediction, and then this cell shows the truth.")
    for q in questions:
        mine = question_events(events, q)
        if mine[-1].get("kind") != "reveal":
            _, events = _append(q, "reveal")
        _show(f"{_label(q)}: the truth is shown below (the reveal is recorded).", q, events)


def notebook_events(nb) -> list[list]:
    """Every chain of events a saved notebook's outputs carry (one per receipt)."""
    chains = []
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) or []:
            payload = (out.get("data") or {}).get(MIME)
            if isinstance(payload, dict) and isinstance(payload.get("events"), list):
                chains.append(payload["events"])
    return chains
