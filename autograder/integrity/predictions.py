"""Predictions that count, on the grading side (course_lib.exercises.predictions is the student's side).

A student's notebook commits each prediction when its form check passes and records when a
verify cell revealed the truth. Before grading, the record is read from what was handed in:

* the record file beside the notebook (``.predictions.jsonl``: the nbgrader exchange and the
  folder layouts carry it), and
* the copies in the submitted notebook's outputs (each commit and reveal displays its
  question's events): a single .ipynb uploaded to an LMS carries those;

the two are merged and checked (hashes, chains, sequence, times running forward, the copies
agreeing, no event after the submission time). The record is read before any kernel runs: the
grader's kernels record too (nothing in a kernel switches recording off), on a private copy
that is thrown away. Then, per graded question (an answer cell whose grade_id ends in
``_prediction`` or, worked out by hand, ``_answer``: the rule is the same for both):

=====================  ================================================================
rule                   what the hidden test grades
=====================  ================================================================
committed              the answer committed before the first reveal (= the final one)
changed-after-reveal   nothing: the final answer differs from the committed one and the
                       truth had been shown; the test fails with a plain message
final                  the final answer (never revealed)
shown-unrecorded       nothing: the truth is on screen in the submitted notebook (its verify
                       cell's output) but no answer was committed before it
no-record              the final answer (``--no-record final``, the default) or nothing
                       (``--no-record zero-predictions``): no record in the file or the
                       notebook's outputs
=====================  ================================================================

A verify cell whose output is saved in the notebook while the record holds no reveal of its
question (the reveal was kept out of the record) counts as revealed at the earliest moment the
record allows: the first committed answer is graded. That, a record with problems ("record
edited?") and a missing record are flagged to the instructor either way.
"""
from __future__ import annotations

import datetime as dt
import enum
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from course_lib.exercises import predictions as P
from course_lib.exercises.answers import MAX_RECORD_CHARS
from course_lib.exercises.question_ids import label as _label, question_of, role_of

from autograder.integrity.flags import Flag, Reason

MAX_RECORD_BYTES = 2**20             # a record is a few kB; a bigger file is not one (and is not read)
#: one recorded value's JSON, in the record file or the notebook's copies: the grader's own recorder
#: refuses a bigger answer (course_lib.exercises.answers.record), so a bigger one is none
MAX_VALUE_CHARS = MAX_RECORD_CHARS
#: events of one question (each distinct one once, however many receipts repeat it); an honest
#: record holds a few: a commit, its revisions, a reveal after each
MAX_EVENTS_PER_QUESTION = 1000
#: what a submission without any record earns for its questions (grade --no-record)
NO_RECORD_POLICIES = ("final", "zero-predictions")
ANSWER_SUFFIXES = ("_prediction", "_answer")    # the answer cells a graded question's rule applies to


@dataclass
class Record:
    """The prediction record of one submitted notebook, merged from its carriers."""

    events: list = field(default_factory=list)      # in sequence order
    problems: list = field(default_factory=list)    # what looks edited or inconsistent
    source: str = "none"                            # "file and notebook", "file", "notebook", "none"
    copies: list = field(default_factory=list)      # the notebook's copies alone, merged
    shown: list = field(default_factory=list)       # questions whose truth the notebook's outputs show
    foreign: list = field(default_factory=list)     # of those, truths the hub's answer key never showed this student

    @property
    def present(self) -> bool:
        return self.source != "none"


class RecordOverLimits(ValueError):
    """A prediction record over what the grader reads (MAX_VALUE_CHARS, MAX_EVENTS_PER_QUESTION):
    no honest notebook makes one, and grading it would cost unbounded time; the submission
    fails with this reason (never a zero)."""


def read_record(folder: Path, notebook: str, questions, submitted_at: str | None = None) -> Record:
    """The record of `notebook` (folder/notebook.ipynb) for `questions` (question ids such as
    "wall_q1"): the file's events and the notebook's copies, merged and checked."""
    folder = Path(folder)
    questions = set(questions)
    problems = []
    file_events = None
    path = folder / P.RECORD_FILE
    if path.is_file():
        if path.stat().st_size > MAX_RECORD_BYTES:
            problems.append(f"{P.RECORD_FILE} is larger than {MAX_RECORD_BYTES // 2**20} MB: not read")
        else:
            file_events = P.load_record(path)
            _check_limits(file_events, questions, P.RECORD_FILE)
            problems += P.check_events(file_events)
    chains, shown = [], []
    nb_path = folder / f"{notebook}.ipynb"
    if nb_path.is_file():
        try:
            nb = json.loads(nb_path.read_text(encoding="utf-8-sig"))
            chains = [c for c in P.notebook_events(nb)
                      if c and isinstance(c[-1], dict) and _key(c[-1].get("q")) in questions]
            shown = truth_shown(nb, questions)
        except (OSError, ValueError):
            chains = []
    if any(not isinstance(e, dict) for chain in chains for e in chain):
        problems.append("a copy in the notebook holds something that is not an event (left out)")
        chains = [[e for e in chain if isinstance(e, dict)] for chain in chains]
    mine_file = [e for e in (file_events or []) if isinstance(e, dict) and _key(e.get("q")) in questions]
    if file_events is None and not chains:
        return Record([], problems, "none", shown=shown)
    by_hash = {_key(e.get("hash")): e for e in mine_file}
    copies = {}
    for chain in chains:
        for e in chain:
            if _key(e.get("q")) in questions:       # a receipt shows its own question's events
                copies.setdefault(_key(e.get("hash")), e)
    # the limits before any event is hashed: every distinct event once, however many receipts repeat it
    _check_limits(list(copies.values()), questions, "the receipts in the notebook")
    verified: dict = {}
    for chain in chains:
        problems += _check_chain(chain, verified)
        for e in chain:
            if file_events is not None and _key(e.get("hash")) not in by_hash:
                problems.append(f"{_short(e.get('q'))} {_short(e.get('kind'))} at {_short(e.get('t'))}: in the "
                                f"notebook's copy but not in {P.RECORD_FILE} (removed from the file?)")
    copied = sorted(copies.values(), key=lambda e: (_number(e.get("seq")), _number(e.get("n"))))
    seqs = {}
    for e in copied:
        seqs.setdefault(_key(e.get("seq")), set()).add(_key(e.get("hash")))
    if any(len(h) > 1 for h in seqs.values()):
        problems.append("the notebook's copies hold two different histories")
    if file_events is not None:
        events = mine_file
        source = "file and notebook" if chains else "file"
    else:
        events, source = copied, "notebook"
    if submitted_at:
        late = [e for e in events if str(e.get("t", "")) > _iso(submitted_at)]
        if late:
            problems.append(f"{len(late)} event(s) dated after the submission time {submitted_at}")
    return Record(events, _unique(problems), source, copied, shown)


def truth_shown(nb: dict, questions) -> list[str]:
    """The questions (of `questions`) whose truth a saved notebook shows: a verify cell with
    output other than an error or a receipt. A verify cell is one whose grade_id ends in
    ``_verify`` (the question it names) or whose source reveals questions by id
    (``reveal("hello_q4", "hello_q5")``, ``show("hello_q4")``): metadata a student stripped
    does not hide it."""
    questions = set(questions)
    out = []
    for cell in nb.get("cells", []) if isinstance(nb, dict) else []:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        outputs = [o for o in cell.get("outputs") or [] if isinstance(o, dict)]
        if any(o.get("output_type") == "error" and o.get("ename") == "NotCommitted" for o in outputs):
            continue        # reveal refused: whatever the cell printed before it is no truth
        if not any(o.get("output_type") != "error" and P.MIME not in (o.get("data") or {}) for o in outputs):
            continue
        gid = str(((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id") or "")
        source = cell.get("source") or ""
        source = "".join(source) if isinstance(source, list) else str(source)
        named = {gid[: -len("_verify")]} if gid.endswith("_verify") else set()
        for args in _REVEALS.findall(source):
            named |= set(_QUOTED.findall(args))
        out += sorted(q for q in named & questions if q not in out)
    return out


# linear: an unclosed call takes the rest of the source (non-overlapping), rather than each of a
# million "show(" scanning to the end again
_REVEALS = re.compile(r"\b(?:reveal|show)\s*\(([^)]*)")
_QUOTED = re.compile(r"""["']([A-Za-z]\w*)["']""")


MAX_PROBLEMS = 50      # said per record; a hostile file makes thousands
MAX_PROBLEM_CHARS = 300


def _unique(problems: list) -> list:
    """The problems once each, in order (linear time), at most MAX_PROBLEMS of them, each at most
    MAX_PROBLEM_CHARS long (a problem may quote what the record holds)."""
    out = list(dict.fromkeys(p if len(p) <= MAX_PROBLEM_CHARS else p[:MAX_PROBLEM_CHARS] + "..." for p in problems))
    return out if len(out) <= MAX_PROBLEMS else out[:MAX_PROBLEMS] + [f"... and {len(out) - MAX_PROBLEMS} more"]


def _iso(timestamp: str) -> str:
    """nbgrader's '2026-11-26 10:00:00.000000 UTC' as the record's ISO form."""
    from nbgrader.utils import parse_utc

    try:
        t = parse_utc(timestamp)
    except Exception:
        return "9999"
    return t.astimezone(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _key(value):
    """A value from the record usable as a dict key (a hostile one may be a list or a dict)."""
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)[:200]


def _short(value, n: int = 40) -> str:
    """A value from the record quoted in a problem: at most `n` characters."""
    text = str(value) if isinstance(value, (str, int, float, bool, type(None))) else type(value).__name__
    return text if len(text) <= n else text[:n] + "..."


def _number(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else -1.0


def _check_limits(events: list, questions: set, where: str) -> None:
    """RecordOverLimits where `events` (from one carrier: the file, or the notebook's copies, each
    distinct event once) hold, for one of `questions` (those graded: their events are walked and
    their values decoded), more than MAX_EVENTS_PER_QUESTION events or a value of more than
    MAX_VALUE_CHARS characters of JSON. Linear: each value is written out once."""
    counts: dict = {}
    for e in events:
        if not isinstance(e, dict) or not isinstance(e.get("q"), str) or e["q"] not in questions:
            continue
        q = e["q"]
        counts[q] = counts.get(q, 0) + 1
        if counts[q] > MAX_EVENTS_PER_QUESTION:
            raise RecordOverLimits(f"{where}: more than {MAX_EVENTS_PER_QUESTION:,} events for {_label(q)} "
                                   "(an honest record holds a few)")
        values = e.get("values")
        for name, value in (values.items() if isinstance(values, dict) else [("values", values)]):
            size = len(json.dumps(value))
            if size > MAX_VALUE_CHARS:
                raise RecordOverLimits(f"{where}: a value of {_label(q)} ({_short(name)}) of {size:,} characters "
                                       f"of JSON, more than an answer can be ({MAX_VALUE_CHARS:,})")


def _check_chain(chain: list, verified: dict | None = None) -> list[str]:
    """A copy in the notebook: one question's events, each hashing right and linked in order.
    `verified` ({hash: event} whose hash was checked, shared by the copies): an event repeated
    by later receipts is compared with the one checked, not hashed again."""
    out, prev = [], ""
    verified = {} if verified is None else verified
    for i, e in enumerate(chain):
        h = e.get("hash") if isinstance(e, dict) else None
        seen = verified.get(h) if isinstance(h, str) else None
        if seen is not None and (seen is e or seen == e):
            ok = True
        else:
            ok = isinstance(e, dict) and h == P.event_hash(e)
            if ok:
                verified[h] = e
        if not ok:
            out.append(f"a copy in the notebook holds an event that does not match its hash "
                       f"({_short(e.get('q', '?')) if isinstance(e, dict) else '?'})")
            continue
        if e.get("n") != i or e.get("prev_q") != prev:
            out.append(f"a copy in the notebook breaks {_short(e.get('q'))}'s chain")
        prev = e.get("hash")
    return out


# ---------------------------------------------------------------------------------------------
# the rule
# ---------------------------------------------------------------------------------------------
class Rule(enum.Enum):
    """What the hidden test of a graded question grades (the table in this module's docstring);
    the value is the rule's name in the notebook's metadata and the report."""

    COMMITTED = "committed"
    CHANGED = "changed-after-reveal"
    FINAL = "final"
    SHOWN = "shown-unrecorded"
    NO_RECORD = "no-record"


@dataclass
class Decision:
    rule: Rule
    committed: dict | None = None   # {name: encoded value} committed before the reveal
    final: dict | None = None       # {name: encoded value} the submitted notebook ends with
    message: str = ""
    withheld: bool = False          # the hidden test grades nothing (fails with `message`)
    reason: Reason | None = None    # what the instructor is flagged about this question

    def to_json(self) -> dict:
        """The decision in the notebook's metadata (verify.grading_values and the report read it
        back with from_json): the rule's and the flag's ids, the flag's message beside its id."""
        return {"rule": self.rule.value, "committed": self.committed, "final": self.final, "message": self.message,
                "withheld": self.withheld, "flag": self.reason.flag.value if self.reason else "",
                "flag_message": self.reason.message if self.reason else ""}

    @classmethod
    def from_json(cls, data: dict) -> Decision:
        flag = Flag.parse(data.get("flag"))
        # an older grader kept the message alone under "flag"
        message = data.get("flag_message", "" if flag is not Flag.UNKNOWN else data.get("flag"))
        return cls(Rule(data["rule"]), data.get("committed"), data.get("final"), data.get("message") or "",
                   bool(data.get("withheld")), Reason(flag, str(message or "")) if flag else None)


def decide(record: Record, question: str, names: list, final_entries: dict, no_record: str = "final") -> Decision:
    """The rule for one graded question, given the final answers' record entries
    ({name: {"value": ...} | {"error": ...} | {"missing": True}}) and the policy for a
    submission without any record (NO_RECORD_POLICIES). Where the record file and the
    notebook's copies disagree (one was edited), the stricter reading wins."""
    if no_record not in NO_RECORD_POLICIES:
        raise ValueError(f"--no-record is one of {', '.join(NO_RECORD_POLICIES)}, not {no_record!r}")
    final = {n: e["value"] for n, e in final_entries.items() if isinstance(e, dict) and "value" in e}
    shown = question in record.shown
    if question in record.foreign:
        return _foreign_truth(question, final)
    if not record.present:
        if shown:
            return _shown_uncommitted(question, final)
        if no_record == "zero-predictions":
            return Decision(Rule.NO_RECORD, None, final, withheld=True,
                            reason=Reason(Flag.NO_RECORD_ZERO, "no prediction record: no correctness points "
                                          "(--no-record zero-predictions)"),
                            message=f"No prediction record was handed in for {_label(question)} (neither "
                            f"{P.RECORD_FILE} nor the notebook's saved outputs), so {_label(question)} earns no "
                            "correctness points (its form and reflection points are not affected). Hand in the "
                            "notebook with its outputs and the record file beside it.")
        return Decision(Rule.NO_RECORD, None, final,
                        reason=Reason(Flag.NO_RECORD, "no prediction record: graded on the final answer"))
    d = _decide(record.events, question, names, final, shown)
    if record.copies and record.copies != record.events and not d.withheld:
        from_copies = _decide(record.copies, question, names, final, shown)
        if from_copies.withheld:
            return from_copies
    return d


MAX_SHOWN_CHARS = 300     # a value quoted in a message


def _shown(values) -> str:
    text = P.show_values(values)
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS] + "..."


def _shown_uncommitted(question: str, final: dict) -> Decision:
    label = _label(question)
    return Decision(Rule.SHOWN, None, final, withheld=True,
                    reason=Reason(Flag.TRUTH_SHOWN_UNCOMMITTED,
                                  "the truth is in the notebook's outputs, and no answer was committed before it"),
                    message=f"{label}'s truth is shown in the notebook (its verify cell's output), but no answer to "
                    f"{label} was committed before it, so {label} earns no correctness points (its form and "
                    "reflection points are not affected).")


def _foreign_truth(question: str, final: dict) -> Decision:
    label = _label(question)
    return Decision(Rule.SHOWN, None, final, withheld=True,
                    reason=Reason(Flag.TRUTH_SHOWN_UNRECORDED,
                                  "the truth is in the notebook's outputs, and the hub's answer key never showed it "
                                  "to this student (copied from someone else's notebook?)"),
                    message=f"{label}'s truth is shown in the notebook, but the course service never showed it to "
                    f"you: it came from somewhere else, so {label} earns no correctness points (its form and "
                    "reflection points are not affected).")


def _decide(events: list, question: str, names: list, final: dict, shown: bool = False) -> Decision:
    # what grading reads: the commit before the first reveal, the first commit (no revision after
    # the reveal is decoded or compared: one pass over the events)
    h = P.history(events, question, after=False)
    committed, reason = h["committed"], None
    if shown and not h["revealed"]:
        # the truth is on screen, yet the record holds no reveal: revealed as early as the record
        # allows, right after the first commit
        if h["first"] is None:
            return _shown_uncommitted(question, final)
        committed = h["first"]
        reason = Reason(Flag.TRUTH_SHOWN_UNRECORDED,
                        "the truth is in the notebook's outputs without a recorded reveal: graded on the first commit")
    elif not h["revealed"] or committed is None:
        return Decision(Rule.FINAL, committed, final)
    # the answers a commit records: a question's reasoning variables are kept as its reason, and
    # graded on the final notebook like any written part
    committed = {n: v for n, v in committed.items() if n in names} if isinstance(committed, dict) else {}
    ends = {n: final[n] for n in committed if n in final}
    if committed and len(ends) == len(committed) and P.same_value(committed, ends):
        return Decision(Rule.COMMITTED, committed, final, reason=reason)
    label = _label(question)
    why = ("before the reveal" if reason is None else
           "first (the notebook shows its truth, and the record holds no reveal: it counts as revealed then)")
    return Decision(Rule.CHANGED, committed, final, withheld=True, reason=reason,
                    message=f"{label} was changed after its truth was revealed: you committed {_shown(committed)} "
                    f"{why}, and the notebook ends with {_shown({n: final[n] for n in committed if n in final})}. "
                    "An answer counts as committed before "
                    f"the truth is shown, so {label} earns no correctness points (its form and reflection "
                    "points are not affected).")


def answer_question(cell: str) -> str | None:
    """The question an answer cell's grade_id belongs to ("wall_q1_prediction" -> "wall_q1"),
    for the cells the rule applies to; None for any other cell."""
    for suffix in ANSWER_SUFFIXES:
        if cell.endswith(suffix):
            return cell[: -len(suffix)]
    return None


def decision_of(meta: dict, cell) -> Decision | None:
    """The rule the grader applied to this answer cell's question, as an autograded notebook's
    metadata (`meta`, its "autograder" part) records it, or None (not a graded question's answer
    cell, or nothing recorded)."""
    if answer_question(cell.grade_id) is None:
        return None
    d = (((meta.get("predictions") or {}).get("questions") or {}).get(cell.question))
    return Decision.from_json(d) if d else None


def counted_answer(meta: dict, cell, var: str):
    """The answer the report (and the copy check) counts: for a graded question, the answer
    committed before the truth was revealed; otherwise the final answer."""
    d = decision_of(meta, cell)
    if d and d.rule in (Rule.COMMITTED, Rule.CHANGED) and var in (d.committed or {}):
        return {"value": d.committed[var]}
    return (meta.get("answers", {}).get(cell.grade_id) or {}).get(var)


def question_cells(tests) -> dict[str, dict]:
    """{question: {answer name: answer cell grade_id}} of the graded questions among a
    notebook's TestCells (the names its hidden tests read from a `*_prediction` or `*_answer`
    answer cell)."""
    out: dict[str, dict] = {}
    for t in tests:
        if not t.hidden:
            continue
        for name, cell in t.sources.items():
            q = answer_question(cell)
            if q is not None:
                out.setdefault(q, {}).setdefault(name, cell)
    return out


def prediction_questions(tests) -> dict[str, list]:
    """{question: [answer names]} of the graded questions (see question_cells)."""
    return {q: list(cells) for q, cells in question_cells(tests).items()}


def questions_of(tests) -> set[str]:
    """Every question id ("wall_q1") whose answer cells a notebook's TestCells read."""
    return {question_of(cell) for t in tests for cell in t.sources.values()} - {None}


def summarize(meta: dict) -> list[Reason]:
    """What the instructor is flagged about one autograded notebook's prediction record."""
    rec = (meta or {}).get("predictions") or {}
    if not rec:
        return []
    out = []
    decisions = {q: Decision.from_json(d) for q, d in sorted((rec.get("questions") or {}).items())}
    if rec.get("source") == "none" and decisions:
        zero = any(d.rule is Rule.NO_RECORD and d.withheld for d in decisions.values())
        out.append(Reason(Flag.NO_RECORD_ZERO, "no prediction record (no correctness points for its questions: "
                          "--no-record zero-predictions)") if zero else
                   Reason(Flag.NO_RECORD, "no prediction record (graded on the final answers)"))
    for p in rec.get("problems", []):
        out.append(Reason(Flag.RECORD_EDITED, f"prediction record: {p}"))
    for q, d in decisions.items():
        if d.rule is Rule.CHANGED:
            out.append(Reason(Flag.CHANGED_AFTER_REVEAL, f"{_label(q)} changed after the reveal: no correctness points"))
        if d.reason is not None and d.rule is not Rule.NO_RECORD:
            out.append(Reason(d.reason.flag, f"{_label(q)}: {d.reason.message}"))
    return out
