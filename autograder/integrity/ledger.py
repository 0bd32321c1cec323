"""The hub's prediction ledger, on the grading side: `grade --ledger PATH_OR_URL` checks each
notebook's prediction record against what the hub's ledger service (course_hub.service)
received while the student worked.

The record a student hands in is the student's to write: a script the notebook can run can
rewrite it consistently (hashes and chains recomputed). The ledger holds a copy the student
cannot write, timed by the service's clock. A notebook's record is "vouched" when

* every commit, revision and reveal in its record is in the ledger (by digest), and
* for each question the ledger saw revealed, the answer the record grades (committed before its
  first reveal) is the one the ledger holds as committed before the first reveal it received
  (in any copy of the lesson: a fresh copy answered after seeing the truth elsewhere counts).

Otherwise it is flagged "record differs from the hub's ledger", like the other tampering flags
(nbgrader's flag, the export's flag column, the report). A submission graded without a ledger is
"not vouched": information (laptops, Binder), not a penalty.

With a ledger, the ledger is also what is **graded** (graded_record): each question on what the
service received before its first reveal, whatever the handed-in record says; the record is then
the student's copy, compared only to flag it.

The ledger is read from its folder (the service's store, STORE/ledger/<user>.jsonl: on the hub the
instructors' group may read it) or from the service's URL with the instructor's hub token
(JUPYTERHUB_API_TOKEN, which a hub terminal has).
"""
from __future__ import annotations

import enum
import hashlib
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from course_lib import ledger as L
from course_lib.exercises import predictions as P
from course_lib.exercises.question_ids import label as _label

from autograder.integrity.flags import Flag, Reason

# what the instructor reads (the export's and the report's ledger column, each difference's message)
VOUCHED = "vouched"
NOT_VOUCHED = "not vouched"
DIFFERS = "record differs from the hub's ledger"


class Vouch(enum.Enum):
    """The ledger's verdict on a graded submission; the value is its id in the status file."""

    VOUCHED = "vouched"
    NOT_VOUCHED = "not-vouched"     # graded without a ledger: information, not a penalty
    DIFFERS = "differs"             # a flag too (flags.Flag.LEDGER_DIFFERS)

    @property
    def text(self) -> str:
        return {Vouch.VOUCHED: VOUCHED, Vouch.NOT_VOUCHED: NOT_VOUCHED, Vouch.DIFFERS: DIFFERS}[self]

    @classmethod
    def parse(cls, value) -> Vouch:
        """The verdict a status file holds: its id, or the text an older grader kept."""
        for v in cls:
            if value in (v.value, v.text):
                return v
        return cls.NOT_VOUCHED


KINDS = ("commit", "revise", "reveal")
MAX_USER_BYTES = 16 << 20            # one user's ledger (the service's own bound, course_hub.service.ledger)


class LedgerUnavailable(Exception):
    """The ledger named with --ledger cannot be read (says where and why)."""


def load(source: str, users: list[str] | None = None) -> dict[str, list]:
    """{user: [ledger entries]} from a folder (the service's store), one .jsonl file, or the
    service's URL (read with $JUPYTERHUB_API_TOKEN, an instructor's, one user of `users` at a
    time). Each user's ledger is read bounded by what the service stores for one user, so no
    student's flood refuses the class."""
    if source.startswith(("http://", "https://")):
        out: dict[str, list] = {}
        for user in (users if users is not None else [None]):
            out.update(_load_url(source, user))
        return out
    path = Path(source)
    if (path / "ledger").is_dir():          # the course service's store: its ledger is a folder in it
        path = path / "ledger"
    if path.is_dir():
        files = sorted(p for p in path.glob("*.jsonl") if p.is_file())
    elif path.is_file():
        files = [path]
    else:
        raise LedgerUnavailable(f"--ledger {source}: expected the ledger's folder (e.g. /var/lib/roofline-ledger), "
                                "a .jsonl file of it, or the service's URL")
    out: dict[str, list] = {}
    for f in files:
        try:
            with f.open("rb") as handle:          # bounded per user: one student's flood refuses no one else
                raw = handle.read(MAX_USER_BYTES + 1)
            if len(raw) > MAX_USER_BYTES:
                raise LedgerUnavailable(f"--ledger {source}: {f.name} holds more than {MAX_USER_BYTES >> 20} MiB, "
                                        "more than the service stores for one user: not a ledger")
            text = raw.decode("utf-8", errors="replace")
        except PermissionError:
            raise LedgerUnavailable(f"--ledger {source}: {f} is not readable by you (on the hub the ledger is "
                                    "readable by the instructors' group)") from None
        for line in text.splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if isinstance(e, dict) and isinstance(e.get("user"), str):
                out.setdefault(e["user"], []).append(e)
    return out


def _load_url(url: str, user: str | None = None) -> dict[str, list]:
    token = os.environ.get(L.TOKEN_ENV, "").strip()
    if not token:
        raise LedgerUnavailable(f"--ledger {url}: reading the service needs your hub token in ${L.TOKEN_ENV} "
                                "(a terminal on the hub has it), or pass the ledger's folder instead")
    query = "" if user is None else "?" + urllib.parse.urlencode({"user": user})
    request = urllib.request.Request(url.rstrip("/") + "/events" + query, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            # one user's, or (asked for everyone's) a class of them: JSON costs up to ~2x the stored bytes
            raw = r.read(4 * MAX_USER_BYTES + 1 if user is not None else None)
            if user is not None and len(raw) > 4 * MAX_USER_BYTES:
                raise LedgerUnavailable(f"--ledger {url}: {user}'s ledger is larger than the service stores for one user")
            data = json.loads(raw)
    except urllib.error.HTTPError as e:
        raise LedgerUnavailable(f"--ledger {url}: the service answered {e.code}: "
                                f"{e.read(500).decode(errors='replace')}") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise LedgerUnavailable(f"--ledger {url}: cannot read it ({e})") from None
    events = data.get("events") if isinstance(data, dict) else None
    if not isinstance(events, dict):
        raise LedgerUnavailable(f"--ledger {url}: expected {{\"events\": {{user: [...]}}}} from the service")
    return {u: [e for e in es if isinstance(e, dict)] for u, es in events.items() if isinstance(es, list)}


def fingerprint(entries: list | None) -> str:
    """What a student's grading depends on from the ledger ("" without one: earlier fingerprints hold)."""
    if entries is None:
        return ""
    return "ledger=" + hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()[:16]


def _values_hash(values) -> str:
    return hashlib.sha256(L._canonical(values or {})).hexdigest()


def _ledger_history(entries: list, question: str) -> dict:
    """The ledger's view of one question, in the order the service received the events: the
    entry committed last before the first reveal, and that reveal."""
    committed, revealed = None, None
    for e in sorted((e for e in entries if e.get("question") == question), key=lambda e: str(e.get("received", ""))):
        if e.get("kind") in ("commit", "revise") and revealed is None:
            committed = e
        elif e.get("kind") == "reveal" and committed is not None and revealed is None:
            revealed = e
    return {"committed": committed, "revealed": revealed}


def _same(entry: dict, values) -> bool:
    """Whether a ledger entry holds `values` (the record's encoded values)."""
    if isinstance(entry.get("values"), dict):
        return P.same_value(entry["values"], values or {})
    return entry.get("values_hash") == _values_hash(values)


def compare(record, questions, entries: list) -> list[str]:
    """What in one notebook's record (autograder.integrity.predictions.Record) for `questions` disagrees
    with the student's ledger `entries`; empty: the ledger vouches for it."""
    questions = set(questions)
    mine = [e for e in entries if e.get("question") in questions]
    digests = {e.get("digest") for e in mine}
    out, seen, missing = [], set(), []
    for q in sorted(questions):
        h = _ledger_history(mine, q)
        if h["revealed"] is None:
            continue
        rec = P.history(record.events, q, after=False)     # no revision decoded: not used here
        shown = h["committed"].get("values")
        what = P.show_values(shown) if isinstance(shown, dict) else "an answer"
        if not rec["revealed"]:
            out.append(f"{DIFFERS}: the ledger has {_label(q)}'s truth shown at {P.clock(h['revealed'].get('received'))} "
                       f"after {what} was committed; the record shows no reveal")
        elif not _same(h["committed"], rec["committed"]):
            out.append(f"{DIFFERS}: the ledger has {what} committed for {_label(q)} before its first reveal (at "
                       f"{P.clock(h['revealed'].get('received'))}); the record grades "
                       f"{P.show_values(rec['committed'])}")
    for e in list(record.events) + list(record.copies):
        if not isinstance(e, dict) or e.get("q") not in questions or e.get("kind") not in KINDS:
            continue
        d = L.digest(e)
        if d not in seen:
            seen.add(d)
            if d not in digests:
                missing.append(e)
    if missing:
        e = missing[0]
        first = f"{_label(e['q'])} {e['kind']} at {P.clock(e.get('t'))}" + (
            f", {P.show_values(e.get('values'))}" if e["kind"] != "reveal" else "")
        unreachable = sum(m.get("ledger") == L.UNREACHABLE for m in missing)
        out.append(f"{DIFFERS}: {len(missing)} of the record's {len(seen)} commits and reveals are not in the "
                   f"ledger (the first: {first})" + (f"; the notebook noted the ledger unreachable for {unreachable} "
                                                      "of them" if unreachable else ""))
    return list(dict.fromkeys(out))


def check(records: dict, questions: dict, entries: list | None) -> dict:
    """{"status": a Vouch, "problems": {notebook: [lines]}} for
    one submission: `records` {notebook: Record}, `questions` {notebook: question ids},
    `entries` the student's ledger entries (None: graded without a ledger)."""
    if entries is None:
        return {"status": Vouch.NOT_VOUCHED, "problems": {}}
    problems = {nb: lines for nb, rec in records.items() if (lines := compare(rec, questions.get(nb, ()), entries))}
    return {"status": Vouch.DIFFERS if problems else Vouch.VOUCHED, "problems": problems}


#: the marker the course service leaves in its ledger's folder when it is the answer key
ANSWER_KEY_MARKER = "ANSWER_KEY"


def answers_from_service(source: str) -> bool:
    """Whether the hub behind the ledger `source` shows truths only through its answer key (the
    course service's reveals): its folder holds ANSWER_KEY_MARKER, or its URL says so."""
    if source.startswith(("http://", "https://")):
        try:
            with urllib.request.urlopen(source.rstrip("/") + "/", timeout=60) as r:
                data = json.loads(r.read(1 << 16))
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise LedgerUnavailable(f"--ledger {source}: cannot read it ({e})") from None
        return isinstance(data, dict) and data.get("answer_key") is True
    path = Path(source)
    if (path / "ledger").is_dir():
        path = path / "ledger"
    return (path / ANSWER_KEY_MARKER).is_file()


def graded_record(entries: list, questions, handed_in, answers_from_the_service: bool = False):
    """The record grading reads on a hub (an autograder.integrity.predictions.Record): the
    service's events for `questions`, in the order and at the times it received them, not what
    the notebook says. Replayed or rewritten records change nothing; a reveal the service made
    (the truth it answered) counts though the kernel recorded none. Values too long for the
    ledger are taken from the handed-in event with the same digest; the truths the notebook
    shows (`handed_in.shown`) still count. Where the service is the answer key
    (`answers_from_the_service`), only its own reveals count (a kernel's posted reveal is a copy:
    a replayed one proves nothing), and a truth the notebook shows that the service never showed
    this student is `foreign` (graded with no correctness points)."""
    from autograder.integrity.predictions import Record

    questions = set(questions)
    by_digest = {L.digest(e): e for e in [*handed_in.events, *handed_in.copies] if isinstance(e, dict)}
    mine = sorted((e for e in entries if e.get("question") in questions and e.get("kind") in KINDS
                   and not (answers_from_the_service and e.get("kind") == "reveal" and e.get("by") != "service")),
                  key=lambda e: str(e.get("received", "")))
    events = []
    for i, e in enumerate(mine):
        values = e.get("values")
        if e["kind"] != "reveal" and not isinstance(values, dict):
            values = (by_digest.get(e.get("digest")) or {}).get("values")
        events.append({"q": e["question"], "kind": e["kind"], "values": values, "t": e.get("received"), "seq": i})
    revealed = {e["q"] for e in events if e["kind"] == "reveal"}
    foreign = [q for q in handed_in.shown if q not in revealed] if answers_from_the_service else []
    return Record(events, [], "hub ledger" if events else "none", [], list(handed_in.shown), foreign)


def apply(out, records: dict, tests: dict, entries: list | None, answers_from_the_service: bool = False) -> None:
    """grade_one's hook: the ledger's verdict into the grading result `out` (an
    autograde.Graded: its ledger, and each difference as a flag reason and a prediction-record
    line); with a ledger, each of `records` is replaced by the ledger's (graded_record)."""
    from autograder.integrity.predictions import questions_of

    questions = {nb: questions_of(cells) for nb, cells in tests.items()}
    result = check(records, questions, entries)
    out.ledger = result["status"]
    if entries is not None:         # on a hub, the service's record is the one graded
        for nb in records:
            records[nb] = graded_record(entries, questions.get(nb, ()), records[nb], answers_from_the_service)
    for nb, lines in result["problems"].items():
        out.flag_reasons.setdefault(nb, []).extend(Reason(Flag.LEDGER_DIFFERS, line) for line in lines)
        out.predictions += [f"{nb}: {line}" for line in lines]


def status(course, assignment: str, student: str) -> Vouch | None:
    """The ledger's verdict on a graded submission (None when it was not graded)."""
    from autograder.grading.status import grading_status

    st = grading_status(course, assignment, student)
    if st.get("status") != "graded":
        return None
    return Vouch.parse(st.get("ledger"))
