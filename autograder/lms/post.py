"""`export --lms`: each student's score of an assignment to its LMS line item (AGS).

In order, so that a refusal posts nothing: decide every score from the gradebook (rules), map
students to LMS users (gradebook lms_user_id, else the hub's launch record), get the access
token and check its scopes, find or create each line item, read what the LMS already holds;
then post only what differs. A second run therefore posts nothing (each "unchanged"); a changed
score is an update of the same line item (AGS keeps one result per user and line item).
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from datetime import datetime, timezone

from autograder.course import Course
from autograder.lms import roster as rosters
from autograder.lms.ags import LINEITEM, LINEITEM_READ, RESULT_READ, SCORE, Ags
from autograder.lms.config import LmsConfig
from autograder.lms.errors import LmsError
from autograder.lms.rules import Decision, Held, Rule, decide


class Outcome(enum.Enum):
    POSTED = "posted"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    HELD = "not posted"


@dataclass(frozen=True)
class Line:
    """What happened to one student's score of one assignment."""
    assignment: str
    student: str
    outcome: Outcome
    score: float | None = None
    maximum: float = 0.0
    why: str = ""
    held: Held | None = None      # why it was not posted (HELD), as data: the summary counts by it
    shown: float | None = None    # HELD: the score the LMS still shows from an earlier export

    def text(self) -> str:
        if self.outcome is Outcome.HELD:
            return f"{self.assignment} {self.student}: not posted: {self.why}"
        return f"{self.assignment} {self.student}: {self.outcome.value} {self.score:g} / {self.maximum:g}"


@dataclass
class Result:
    lines: list[Line]
    created: list[str]            # assignments whose line item was created in this run
    rule: Rule
    error: str = ""               # why posting stopped part-way (the lines say how far it got)


def lms_ids(course: Course, roster: rosters.Roster) -> dict[str, str]:
    """student id -> LMS user id: the gradebook's lms_user_id where set, else the launch record."""

    with course.gradebook() as gb:
        own = {s.id: s.lms_user_id for s in gb.students if s.lms_user_id}
    return {**roster.lms_id, **own}


def export_to_lms(course: Course, config: LmsConfig, assignments: list[str], rule: Rule) -> Result:
    roster = rosters.read(config.roster_file, config.issuer, config.deployment_id)
    lineitems_url = config.lineitems_url or roster.lineitems_url
    if not lineitems_url:
        raise LmsError("no line items URL: set lineitems_url in lms.json, or launch the course from the LMS once "
                       "(the hub records the launch's AGS endpoint in roster_file)")
    decisions = {a: decide(course, a, rule) for a in assignments}
    ids = lms_ids(course, roster)
    explicit = {a: config.lineitems.get(a) or roster.lesson_lineitem.get(a) for a in assignments}
    ags = Ags(config, lineitems_url)
    creating = any(not u for u in explicit.values())
    ags.connect(need=(SCORE, LINEITEM) if creating else (SCORE,),
                want=(RESULT_READ,) if creating else (RESULT_READ, LINEITEM_READ))

    items, created = {}, []
    for a in assignments:
        maximum = decisions[a][0].maximum if decisions[a] else 0.0
        if maximum <= 0:
            raise LmsError(f"{a}: the gradebook gives it no points (max score {maximum:g}): nothing to post")
        items[a], new = ags.find_or_create(a, a, maximum, explicit[a])
        if new:
            created.append(a)
    existing = {a: ags.results(items[a]) for a in assignments}

    result = Result([], created, rule)
    stamp = datetime.now(timezone.utc).isoformat(timespec="microseconds")
    try:
        for a in assignments:
            for d in decisions[a]:
                result.lines.append(_one(ags, a, items[a], d, ids.get(d.student), existing[a], stamp))
    except LmsError as e:          # stopped part-way: what was posted is listed, then why it stopped
        result.error = str(e)
    return result


def _shown(result: dict | None, item: dict, maximum: float) -> float | None:
    """The score an LMS result holds, on the assignment's scale; None without one."""
    if not result:
        return None
    got, top = result.get("resultScore"), result.get("resultMaximum") or item.get("scoreMaximum")
    if not isinstance(got, (int, float)) or not isinstance(top, (int, float)) or top <= 0:
        return None
    return got / top * maximum


def _one(ags: Ags, assignment: str, item: dict, d: Decision, user: str | None, have: dict | None, stamp: str) -> Line:
    prev = (have or {}).get(user) if user else None
    if d.held is not None:
        # held now, but an earlier export (--flagged comment, a score since flagged) may have
        # posted it: say what the LMS still shows rather than "held back" alone (issue 47)
        shown = _shown(prev, item, d.maximum)
        why = d.held.value + (f" ({d.detail})" if d.detail else "")
        if shown is not None:
            why += f"; the LMS still shows {shown:g} / {d.maximum:g} from an earlier export"
        return Line(assignment, d.student, Outcome.HELD, maximum=d.maximum, why=why, held=d.held, shown=shown)
    if not user:
        return Line(assignment, d.student, Outcome.HELD, d.score, d.maximum, Held.NO_LMS_ID.value, held=Held.NO_LMS_ID)
    if prev is not None and _same(prev, d, item):
        return Line(assignment, d.student, Outcome.UNCHANGED, d.score, d.maximum)
    ags.post(item, user, d.score, d.maximum, d.comment, stamp)
    return Line(assignment, d.student, Outcome.UPDATED if prev is not None else Outcome.POSTED, d.score, d.maximum)


def _same(result: dict, d: Decision, item: dict) -> bool:
    """Whether the LMS's result is this score already (results are on the line item's scale)."""
    got, top = result.get("resultScore"), result.get("resultMaximum") or item.get("scoreMaximum")
    if not isinstance(got, (int, float)) or not isinstance(top, (int, float)) or top <= 0:
        return False
    same_score = math.isclose(got / top, d.score / d.maximum, rel_tol=1e-9, abs_tol=1e-9)
    return same_score and result.get("comment", d.comment) == d.comment


def held_summary(lines: list[Line]) -> list[str]:
    """What this run held back, by reason, with what would post it: every run says it."""
    out = []
    for why in Held:
        who = sorted({l.student for l in lines if l.held is why})
        if who:
            label = "flagged" if why is Held.FLAGGED else why.value
            out.append(f"held back, {label}: {len(who)} ({', '.join(who)})" + HOW_TO_POST.get(why, ""))
    return out


#: what posts a held score (the instructor's choice)
HOW_TO_POST = {
    Held.FLAGGED: "; to post them: look, then `python -m autograder unflag A STUDENT`, or --flagged comment",
    Held.MANUAL: "; to post them: grade the written answers (Formgrader, or `python -m autograder manual A`)",
    Held.FAILED: "; to post them: fix the cause and grade again",
}


def format_result(r: Result) -> str:
    counts = {o: sum(l.outcome is o for l in r.lines) for o in Outcome}
    head = [f"scoring rule: {r.rule.describe()}"]
    head += [f"line item created for {a}" for a in r.created]
    tail = [f"STOPPED: {r.error}"] if r.error else []
    return "\n".join(head + [l.text() for l in r.lines] + held_summary(r.lines)
                     + ["; ".join(f"{n} {o.value}" for o, n in counts.items())] + tail)
