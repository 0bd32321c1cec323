"""The course's late policy: a percentage of the score per day late (or part of one), up to a cap.

Kept in the course folder as late_policy.json ({"percent_per_day": 10, "cap_percent": 50,
"grace_minutes": 0}; `python -m autograder late-policy`), and applied by nbgrader itself: the
course's config names PercentPerDay as AssignLatePenalties' plugin (Course.user_config), so the
worker that grades a submission computes its penalty against the student's own deadline (the due
date plus any extension, autograder.grading.deadlines). Without the file nbgrader's default
applies: no penalty.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float

FILE = "late_policy.json"


@dataclass(frozen=True)
class LatePolicy:
    percent_per_day: float
    cap_percent: float = 100.0
    grace_minutes: float = 0.0

    def __post_init__(self):
        for name, v, top in (("percent per day", self.percent_per_day, 100), ("cap", self.cap_percent, 100),
                             ("grace minutes", self.grace_minutes, 7 * 24 * 60)):
            if not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= top:
                raise ValueError(f"the late policy's {name} is a number from 0 to {top}, not {v!r}")

    def penalty_percent(self, seconds_late: float) -> float:
        """The share of the score taken (percent) for a submission `seconds_late` late."""
        late = seconds_late - self.grace_minutes * 60
        if late <= 0:
            return 0.0
        return min(self.cap_percent, self.percent_per_day * math.ceil(late / 86400))

    @property
    def text(self) -> str:
        grace = f" after {self.grace_minutes:g} min of grace" if self.grace_minutes else ""
        return f"{self.percent_per_day:g}% of the score per day late (or part of one){grace}, at most {self.cap_percent:g}%"


def path(root: Path) -> Path:
    return Path(root) / FILE


def read(root: Path) -> LatePolicy | None:
    p = path(root)
    if not p.is_file():
        return None
    try:
        d = json.loads(p.read_text())
        return LatePolicy(float(d["percent_per_day"]), float(d.get("cap_percent", 100)),
                          float(d.get("grace_minutes", 0)))
    except (ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"{p}: not a late policy ({e}); expected "
                         '{"percent_per_day": 10, "cap_percent": 50, "grace_minutes": 0}') from None


def write(root: Path, policy: LatePolicy | None) -> Path:
    p = path(root)
    if policy is None:
        p.unlink(missing_ok=True)
    else:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(asdict(policy), indent=1) + "\n")
    return p


def configure(c, root: Path) -> None:
    """Point nbgrader's AssignLatePenalties at PercentPerDay with the course's policy, if it has one."""
    policy = read(root)
    if policy is None:
        return
    c.AssignLatePenalties.plugin_class = "autograder.grading.late.PercentPerDay"
    c.PercentPerDay.percent_per_day = policy.percent_per_day
    c.PercentPerDay.cap_percent = policy.cap_percent
    c.PercentPerDay.grace_minutes = policy.grace_minutes


class PercentPerDay(LateSubmissionPlugin):
    """nbgrader late-submission plugin: LatePolicy's percentage of the notebook's score."""

    percent_per_day = Float(0.0, help="percent of the score taken per day late (or part of one)").tag(config=True)
    cap_percent = Float(100.0, help="the most taken, in percent").tag(config=True)
    grace_minutes = Float(0.0, help="minutes after the deadline that cost nothing").tag(config=True)

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        pct = LatePolicy(self.percent_per_day, self.cap_percent, self.grace_minutes).penalty_percent(total_seconds_late)
        return round((score or 0.0) * pct / 100.0, 6)
