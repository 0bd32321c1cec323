"""Predictions that count: a prediction is committed before the truth is revealed.

Every lesson explains this in its "How your predictions are recorded" note. When a question's
form check passes, the answer (and its reasoning) is **committed**: recorded with the time. The
first commit is kept; a later, different answer is recorded as a revision. A verify cell
**reveals** the truth only for a committed prediction, and records that it did. The grader
then grades each prediction as it was committed before its reveal (autograder.integrity.predictions).

The record is kept twice, so it survives both ways work is handed in:

* a file beside the notebook, ``.predictions.jsonl`` (one JSON event per line), which the
  nbgrader exchange carries with the assignment folder;
* the output of the cell that made the event (a JSON display, MIME type ``MIME``), which a
  saved notebook keeps, so a single .ipynb uploaded to an LMS carries it too.

On a hub that advertises a ledger, each event is also posted to it (course_lib.ledger): a copy
the student cannot write, which the grader compares with the record (autograder.integrity.ledger).

Each event is chained by hash to the previous event of its question and to the previous event
of the whole record, and times run forward: editing the record by hand breaks a chain or
disagrees with a copy kept in the notebook, and the grader flags it to the instructor.
(A student who reprograms the chain and rewrites every copy consistently is not detected by
the chain alone; that takes deliberate programming, and the grader's other checks still
apply.)

Every question, a prediction or an answer worked out by hand, is graded on the answer committed
before its truth was first revealed; a change afterwards is recorded as a revision and earns no
correctness points. The receipts say so, echoing the committed value, and a verify cell judges
the committed answer (``graded``).

Nothing a student's kernel can set switches recording off: nbgrader's Validate records like Run
All (it runs the notebook in its own folder). The grader's kernels record too, on a private
copy that is thrown away: the grader reads the record from what was handed in, before any
kernel runs (autograder.integrity.predictions).

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
import uuid
from pathlib import Path

from .. import ledger
from . import declared
from .question_ids import label as _label      # 'wall_q2b' -> 'Q2B'

__all__ = ["RECORD_FILE", "MIME", "NotCommitted", "commit", "reveal", "record_path", "load_record",
           "make_event", "event_hash", "check_events", "question_events", "history", "graded",
           "committed_before", "notebook_events", "same_value", "show_values", "show_value", "clock", "RULE"]

RECORD_FILE = ".predictions.jsonl"
MIME = "application/vnd.roofline.predictions+json"
FORMAT = 1
_SESSION = uuid.uuid4().hex[:12]      # one kernel process = one session
_HERE: Path | None = None


#: the rule every question is graded by, as the receipts state it
RULE = ("the answer committed before its verify cell shows the truth is graded; a change after that "
        "earns no correctness points")


class NotCommitted(Exception):
    """A verify cell ran before its question's form check committed a prediction. In a notebook
    it shows as its one-line message (no traceback), and is still an error: Run All stops."""

    def _render_traceback_(self):     # IPython: the lines shown instead of a traceback
        return [f"\x1b[0;31mNot committed yet\x1b[0m: {self}"]


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
               reasoning: str | None = None, *, t: str | None = None, count=None, variant=None) -> dict:
    """The next event of a record holding `events` (not appended). `variant`: the givens a
    commit was made for (a question with a parameter space, course_lib.questions.variants)."""
    mine = [e for e in events if e.get("q") == question]
    event = {"v": FORMAT, "seq": len(events), "n": len(mine), "kind": kind, "q": question,
             "values": values or {}, "reason": reasoning, "t": t or _now(), "session": _SESSION,
             "count": count, "prev_q": mine[-1]["hash"] if mine else "",
             "prev": events[-1]["hash"] if events else ""}
    if variant is not None:
        event["variant"] = variant
    event["hash"] = event_hash(event)
    return event


def question_events(events: list, question: str) -> list:
    return [e for e in events if e.get("q") == question]


def check_events(events: list) -> list[str]:
    """What is wrong with a record (empty: nothing found). The events are in file order."""
    problems = []
    last_t, last_hash, per_q, committed = "", "", {}, set()
    for i, e in enumerate(events):
        where = f"event {i} ({e.get('q', '?')} {e.get('kind', '?')})" if isinstance(e, dict) else f"event {i}"
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
        if e.get("kind") == "reveal" and e.get("q") not in committed:
            problems.append(f"{where}: a reveal without a committed prediction")
        if e.get("kind") not in ("commit", "revise", "reveal"):
            problems.append(f"{where}: unknown kind {e.get('kind')!r}")
        if e.get("kind") in ("commit", "revise"):
            committed.add(e.get("q"))
        mine.append(e)
        last_t, last_hash = str(e.get("t", "")), e.get("hash", "")
    return problems


def _plain(value):
    """An answer reduced for comparison: numbers to floats in base units, strings to letters
    and digits in lower case, sequences item by item."""
    from ..units import is_quantity

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
    """Two answers, each {variable: encoded value} (course_lib.exercises.answers), are the same answer:
    the same numbers (to 1e-9, in whatever units), the same words (ignoring case, spaces and
    dashes). Changing 'Memory Bound' to 'memory-bound' is not a change of prediction."""
    from .answers import UnsupportedAnswer, decode

    if not isinstance(a, dict) or not isinstance(b, dict) or a.keys() != b.keys():
        return False
    try:
        return all(_close(_plain(decode(a[k])), _plain(decode(b[k]))) for k in a)
    except (UnsupportedAnswer, TypeError, ValueError):
        return a == b


def history(events: list, question: str, *, after: bool = True) -> dict:
    """What the record says about one question.

    committed   -- the values committed last before the first reveal (None: never committed)
    committed_t -- when those values were committed (that event's time)
    revealed    -- whether the truth was shown (revealed_t: when first)
    first       -- the values of the first commit (first_t: when)
    after       -- values committed after the first reveal that differ from `committed`
                   (None with ``after=False``: each of those comparisons decodes a revision, and
                   grading reads only `committed`, `first` and `revealed`)
    last        -- the values committed last (last_t: when)

    Without `after`, no value is decoded: one pass over the events, linear in their number.
    """
    mine = question_events(events, question)
    committed, revealed, first, last = None, False, None, None
    changed = [] if after else None
    committed_t = revealed_t = first_t = last_t = None
    for e in mine:
        kind, values = e.get("kind"), e.get("values")
        if kind in ("commit", "revise"):
            last, last_t = values, e.get("t")
            if first is None:
                first, first_t = values, e.get("t")
            if not revealed:
                committed, committed_t = values, e.get("t")
            elif after and values != committed and not same_value(values, committed):
                changed.append(values)
        elif kind == "reveal" and committed is not None and not revealed:
            revealed, revealed_t = True, e.get("t")
    return {"committed": committed, "committed_t": committed_t, "revealed": revealed,
            "revealed_t": revealed_t, "first": first, "first_t": first_t, "after": changed,
            "last": last, "last_t": last_t, "events": len(mine)}


def show_values(values: dict) -> str:
    """{name: encoded value} as "q1_speedup = 3.171, ..." for a receipt."""
    from .answers import UnsupportedAnswer, decode

    try:
        return ", ".join(f"{n} = {show_value(decode(v))}" for n, v in (values or {}).items()) or "nothing"
    except (UnsupportedAnswer, TypeError, ValueError):
        return "an unreadable value"


def show_value(value) -> str:
    """A short form of one answer: numbers to 4 significant digits, strings quoted."""
    from ..units import is_quantity

    if is_quantity(value):
        return f"{show_value(value.magnitude)} {value.units:~P}"
    if hasattr(value, "dtype") and getattr(value, "size", 2) == 1:      # numpy
        return show_value(value.item())
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(show_value(v) for v in value) + ")"
    return repr(value)


def clock(t: str | None) -> str:
    """An event's time as HH:MM:SS UTC."""
    return f"{(t or '')[11:19]} UTC"


# ---------------------------------------------------------------------------------------------
# the record file and the notebook copies
# ---------------------------------------------------------------------------------------------
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
        event = make_event(events, question, kind, values, reasoning, count=_execution_count(),
                           variant=_variant(question) if kind in ("commit", "revise") else None)
        if ledger.advertised() and not ledger.post(event, path.parent):
            # on a hub: the ledger keeps its own copy; a failed post is noted, never fatal
            event["ledger"] = ledger.UNREACHABLE
            event["hash"] = event_hash(event)
        f.write(json.dumps(event, sort_keys=True) + "\n")
        f.flush()
    return event, events + [event]


def _variant(question: str):
    """The numbers this kernel asks `question` with, where it has a parameter space (else None)."""
    return declared.variant(question)


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
    """Record `values` ({variable: value}) as the answer of `question` (a form check calls this
    once the form is right), and show a receipt that echoes what is graded. Returns the event
    written, or None when nothing new was recorded (the same answer again).
    Raises course_lib.exercises.answers.UnsupportedAnswer for a value that cannot be written down."""
    from .answers import encode

    encoded = {name: encode(v) for name, v in values.items()}
    events = load_record(record_path())
    mine = [e for e in question_events(events, question) if e.get("kind") in ("commit", "revise")]
    if mine and same_value(mine[-1].get("values"), encoded) and mine[-1].get("reason") == reasoning:
        _show(_receipt(question, events, encoded, new=False), question, events)
        return None
    event, events = _append(question, "revise" if mine else "commit", encoded, reasoning)
    _show(_receipt(question, events, encoded, new=True), question, events)
    return event


def _rule(question: str) -> str:
    """"Rule: ..." as a receipt states it, with the question's kind where course_lib.questions
    declares it ("Rule (worked by hand): ...")."""
    kinds = {"prediction": "a prediction", "by-hand": "worked by hand"}
    try:
        q = declared.find(question)
        kind = kinds.get(q.rule) if q is not None else None
    except Exception:       # its lesson module fails to import
        kind = None
    return f"Rule ({kind}): {RULE}." if kind else f"Rule: {RULE}."


def _receipt(question: str, events: list, current: dict, new: bool) -> str:
    """What a form check says after committing: the value graded, when it was committed, and
    the rule; after a revision past the reveal, that the revision earns no correctness points."""
    label = _label(question)
    h = history(events, question)
    if not h["revealed"]:
        verb = "revised" if new and h["events"] > 1 else "committed"
        since = "" if new else " (unchanged since)"
        return (f"{label}: answer {verb} at {clock(h['committed_t'])}: {show_values(h['committed'])}{since}. "
                f"{_rule(question)}")
    graded_text = f"{show_values(h['committed'])}, committed at {clock(h['committed_t'])} before the truth was shown"
    if same_value(h["committed"], current):
        return f"{label}: graded on {graded_text} (your answer is unchanged). {_rule(question)}"
    return (f"{label}: graded on {graded_text}. Your revision {show_values(current)} (recorded at "
            f"{clock(h['last_t'])}) is kept in the record but earns no correctness points. {_rule(question)}")


def graded(question: str) -> dict | None:
    """The answer graded for `question` as this kernel's record stands, once its truth was
    shown: {"values": {name: encoded}, "t": commit time} (None: not revealed yet, or no record)."""
    h = history(load_record(record_path()), question)
    if not h["revealed"] or h["committed"] is None:
        return None
    return {"values": h["committed"], "t": h["committed_t"]}


def committed_before(question: str) -> dict | None:
    """The last committed answer of `question` in this kernel's record (None: never answered):
    {"values": ..., "t": ...}; a restarted kernel's form check uses it."""
    h = history(load_record(record_path()), question)
    return None if h["last"] is None else {"values": h["last"], "t": h["last_t"]}


def reveal(*questions: str) -> None:
    """Let a verify cell show the truth of `questions`: only once each has a committed
    prediction; records the reveal. Raises NotCommitted otherwise, saying what to run first
    (and reveals nothing)."""
    __tracebackhide__ = True      # IPython shows the notebook's line, not this one
    if not questions:
        raise TypeError("reveal needs the question ids, e.g. reveal('wall_q1')")
    events = load_record(record_path())
    lacking = [q for q in questions
               if not any(e.get("kind") in ("commit", "revise") for e in question_events(events, q))]
    if lacking:
        labels = " and ".join(_label(q) for q in lacking)
        raise NotCommitted(
            f"{labels}: no committed prediction yet. Answer, then run the form check (the test cell "
            "right below the answer): it records your answer, and then this cell shows the truth.")
    for q in questions:
        mine = question_events(events, q)
        if mine[-1].get("kind") != "reveal":
            _, events = _append(q, "reveal")
        h = history(events, q)
        _show(f"{_label(q)}: the truth is shown below (the reveal is recorded); graded on "
              f"{show_values(h['committed'])}, committed at {clock(h['committed_t'])}.", q, events)


def notebook_events(nb) -> list[list]:
    """Every chain of events a saved notebook's outputs carry (one per receipt)."""
    chains = []
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) or []:
            payload = (out.get("data") or {}).get(MIME)
            if isinstance(payload, dict) and isinstance(payload.get("events"), list):
                chains.append(payload["events"])
    return chains
