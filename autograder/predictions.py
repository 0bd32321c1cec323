"""Predictions that count, on the grading side (course_lib.predictions is the student's side).

A student's notebook commits each prediction when its form check passes and records when a
verify cell revealed the truth. Before grading, the record is read from what was handed in:

* the record file beside the notebook (``.predictions.jsonl``: the nbgrader exchange and the
  folder layouts carry it), and
* the copies in the submitted notebook's outputs (each commit and reveal displays its
  question's events): a single .ipynb uploaded to an LMS carries those;

the two are merged and checked (hashes, chains, sequence, times running forward, the copies
agreeing, no event after the submission time). Then, per predict-then-verify question (an
answer cell whose grade_id ends in ``_prediction``):

=====================  ================================================================
rule                   what the hidden test grades
=====================  ================================================================
committed              the prediction committed before the first reveal (= the final one)
changed-after-reveal   nothing: the final answer differs from the committed prediction
                       and the truth had been shown; the test fails with a plain message
final                  the final answer (never revealed, or never committed)
no-record              the final answer, and the notebook is flagged "no prediction record"
=====================  ================================================================

Questions answered by hand (``_answer`` cells) always grade the final answer. A record with
problems is graded by the rule all the same and flagged to the instructor ("record edited?").
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from course_lib import predictions as P

MAX_RECORD_BYTES = 2**20             # a record is a few kB; a bigger file is not one (and is not read)
CHANGED = "changed-after-reveal"


@dataclass
class Record:
    """The prediction record of one submitted notebook, merged from its carriers."""

    events: list = field(default_factory=list)      # in sequence order
    problems: list = field(default_factory=list)    # what looks edited or inconsistent
    source: str = "none"                            # "file and notebook", "file", "notebook", "none"
    copies: list = field(default_factory=list)      # the notebook's copies alone, merged

    @property
    def present(self) -> bool:
        return self.source != "none"


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
            problems += P.check_events(file_events)
    chains = []
    nb_path = folder / f"{notebook}.ipynb"
    if nb_path.is_file():
        try:
            nb = json.loads(nb_path.read_text(encoding="utf-8-sig"))
            chains = [c for c in P.notebook_events(nb) if c and isinstance(c[-1], dict) and c[-1].get("q") in questions]
        except (OSError, ValueError):
            chains = []
    mine_file = [e for e in (file_events or []) if isinstance(e, dict) and e.get("q") in questions]
    if file_events is None and not chains:
        return Record([], problems, "none")
    by_hash = {e.get("hash"): e for e in mine_file}
    copies = {}
    for chain in chains:
        problems += _check_chain(chain)
        for e in chain:
            copies.setdefault(e.get("hash"), e)
            if file_events is not None and e.get("hash") not in by_hash:
                problems.append(f"{e.get('q')} {e.get('kind')} at {e.get('t')}: in the notebook's copy but not in "
                                f"{P.RECORD_FILE} (removed from the file?)")
    copied = sorted(copies.values(), key=lambda e: (e.get("seq", 0), e.get("n", 0)))
    seqs = {}
    for e in copied:
        seqs.setdefault(e.get("seq"), set()).add(e.get("hash"))
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
    return Record(events, _unique(problems), source, copied)


MAX_PROBLEMS = 50      # said per record; a hostile file makes thousands


def _unique(problems: list) -> list:
    """The problems once each, in order (linear time), at most MAX_PROBLEMS of them."""
    out = list(dict.fromkeys(problems))
    return out if len(out) <= MAX_PROBLEMS else out[:MAX_PROBLEMS] + [f"... and {len(out) - MAX_PROBLEMS} more"]


def _iso(timestamp: str) -> str:
    """nbgrader's '2026-11-26 10:00:00.000000 UTC' as the record's ISO form."""
    from nbgrader.utils import parse_utc

    try:
        t = parse_utc(timestamp)
    except Exception:
        return "9999"
    return t.astimezone(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _check_chain(chain: list) -> list[str]:
    """A copy in the notebook: one question's events, each hashing right and linked in order."""
    out, prev = [], ""
    for i, e in enumerate(chain):
        if not isinstance(e, dict) or e.get("hash") != P.event_hash(e):
            out.append(f"a copy in the notebook holds an event that does not match its hash ({e.get('q', '?')})")
            continue
        if e.get("n") != i or e.get("prev_q") != prev:
            out.append(f"a copy in the notebook breaks {e.get('q')}'s chain")
        prev = e.get("hash")
    return out


# ---------------------------------------------------------------------------------------------
# the rule
# ---------------------------------------------------------------------------------------------
@dataclass
class Decision:
    rule: str                       # committed | changed-after-reveal | final | no-record
    committed: dict | None = None   # {name: encoded value} committed before the reveal
    final: dict | None = None       # {name: encoded value} the submitted notebook ends with
    message: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def _label(question: str) -> str:
    return question.split("_", 1)[-1].upper()


def decide(record: Record, question: str, names: list, final_entries: dict) -> Decision:
    """The rule for one prediction question, given the final answers' record entries
    ({name: {"value": ...} | {"error": ...} | {"missing": True}}). Where the record file and the
    notebook's copies disagree (one was edited), the stricter reading wins."""
    final = {n: e["value"] for n, e in final_entries.items() if isinstance(e, dict) and "value" in e}
    if not record.present:
        return Decision("no-record", None, final)
    d = _decide(record.events, question, names, final)
    if record.copies and record.copies != record.events and d.rule != CHANGED:
        from_copies = _decide(record.copies, question, names, final)
        if from_copies.rule == CHANGED:
            return from_copies
    return d


def _decide(events: list, question: str, names: list, final: dict) -> Decision:
    h = P.history(events, question)
    if not h["revealed"] or h["committed"] is None:
        return Decision("final", h["committed"], final)
    committed = {n: v for n, v in h["committed"].items() if n in names}
    if set(committed) == set(names) and len(final) == len(names) and P.same_value(committed, final):
        return Decision("committed", committed, final)
    from .report import show

    def shown(values):
        from course_lib.answers import decode

        try:
            return ", ".join(f"{n} = {show(decode(v))}" for n, v in values.items()) or "nothing"
        except Exception:
            return "an unreadable value"

    label = _label(question)
    return Decision(CHANGED, committed, final,
                    f"{label} was changed after its truth was revealed: you committed {shown(committed)} "
                    f"before the reveal, and the notebook ends with {shown(final)}. A prediction counts as "
                    f"committed before the truth is shown, so {label} earns no correctness points (its form "
                    "and reflection points are not affected).")


def prediction_questions(tests) -> dict[str, list]:
    """{question: [answer names]} of the predict-then-verify questions among a notebook's
    TestCells (the names its hidden tests read from a `*_prediction` answer cell)."""
    out: dict[str, list] = {}
    for t in tests:
        if not t.hidden:
            continue
        for name, cell in t.sources.items():
            if cell.endswith("_prediction"):
                q = cell[: -len("_prediction")]
                if name not in out.setdefault(q, []):
                    out[q].append(name)
    return out


def questions_of(tests) -> set[str]:
    """Every question id ("wall_q1") whose answer cells a notebook's TestCells read."""
    return {cell.rsplit("_", 1)[0] for t in tests for cell in t.sources.values()}


def summarize(meta: dict) -> list[str]:
    """Lines for the instructor about one autograded notebook's prediction record."""
    rec = (meta or {}).get("predictions") or {}
    if not rec:
        return []
    out = []
    if rec.get("source") == "none" and rec.get("questions"):
        out.append("no prediction record (graded on the final answers)")
    for p in rec.get("problems", []):
        out.append(f"prediction record: {p}")
    for q, d in sorted((rec.get("questions") or {}).items()):
        if d.get("rule") == CHANGED:
            out.append(f"{_label(q)} changed after the reveal: no correctness points")
    return out
