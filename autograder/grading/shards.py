"""Grading a class in shards (`grade A --shard i/N`) on any number of machines that share the
course folder, and `merge A`: the shards' results into the course gradebook.

A shard is a deterministic 1/N of the students who handed in: student `s` belongs to shard
int(sha256(s), 16) mod N. A hash, not a position in the sorted list, so that a submission that
arrives late does not move anyone else to another shard (their earlier results stay up to date).

Each shard grades into a course of its own, `<root>/shards/<assignment>/<i>-of-<N>/` (its own
gradebook, autograded/, status files, logs and preflight), reading the submissions from the
course's submitted/: no two shards ever write the same file, and none writes the course's
gradebook (SQLite is one writer at a time, and not over a network file system). Its gradebook
starts as a copy of the course's (due dates, students, extensions), so late penalties are the
same as unsharded. `merge` then does for every shard's submissions what the worker pool does for
each of its results (autograder.grading.grade._finish): scores merged into the course gradebook one
student per transaction (manual scores kept), the autograded notebooks moved into place, the
status file, the log and nbgrader's flag. A student graded by several shard runs (another N,
a rerun) is merged from the latest; where the course already holds that result, or a newer one
of its own (an unsharded regrade since), it is left alone: `merge` can run as often as wanted.
A student who handed in and whom no shard graded (a shard that never ran, a submission collected
after its shard did) is listed with the shard to run again.
"""
from __future__ import annotations

import hashlib
import re
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from autograder.course import Course, replace_dir
from autograder.grading import regrade
from autograder.integrity import unflag
from autograder.grading.merge import flag_submission, merge_submission, unflag_failure
from autograder.grading.status import FAILURE_FLAGGED, WHOLE, grading_status, status_path, write_json
from autograder.integrity.flags import Flag, Reason

SHARDS = "shards"      # <root>/shards/<assignment>/<i>-of-<N>/
_SPEC = re.compile(r"(\d{1,6})/(\d{1,6})")
_FOLDER = re.compile(r"(\d{1,6})-of-(\d{1,6})")


@dataclass(frozen=True)
class Shard:
    """Shard `index` (0-based) of `count`."""
    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> "Shard":
        """`i/N` (0 <= i < N), as a Kubernetes Indexed Job gives it: `--shard $(JOB_COMPLETION_INDEX)/N`."""
        m = _SPEC.fullmatch(str(text).strip())
        if not m:
            raise ValueError(f"a shard is written i/N (i from 0 to N-1, e.g. 0/4), not {text!r}")
        i, n = int(m.group(1)), int(m.group(2))
        if n < 1 or i >= n:
            raise ValueError(f"shard {text}: i must be 0 to N-1 and N at least 1 (e.g. 0/{max(n, 1)})")
        return cls(i, n)

    @property
    def folder_name(self) -> str:
        return f"{self.index}-of-{self.count}"

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(student: str, count: int) -> int:
    """The shard (0 to count-1) that grades `student`: the same on every machine and every run."""
    return int(hashlib.sha256(student.encode("utf-8")).hexdigest(), 16) % count


def select(students: list[str], shard: Shard) -> list[str]:
    """The students of `students` that `shard` grades."""
    return [s for s in students if shard_of(s, shard.count) == shard.index]


@dataclass
class ShardCourse(Course):
    """A shard's own course: its grading data under `root`, the submissions (and the course's
    nbgrader_config.py) those of the course at `main_root`."""
    main_root: Path = None

    def __post_init__(self):
        super().__post_init__()
        self.main_root = Path(self.main_root).resolve()

    @property
    def submitted(self) -> Path:
        return self.main_root / "submitted"

    def user_config(self):
        return Course(root=self.main_root, source=self.source, release=self.release).user_config()


def shard_root(course: Course, assignment: str, shard: Shard) -> Path:
    return course.root / SHARDS / assignment / shard.folder_name


def shard_course(course: Course, assignment: str, shard: Shard) -> ShardCourse:
    """The course shard `shard` of `assignment` grades into; on its first run its gradebook is
    a copy of the course's (due dates, students, their extensions)."""
    sc = ShardCourse(root=shard_root(course, assignment, shard), source=course.source, release=course.release,
                     main_root=course.root)
    sc.root.mkdir(parents=True, exist_ok=True)
    if not sc.db.exists() and course.db.exists():
        tmp = sc.db.with_suffix(".db.incoming")
        src, out = sqlite3.connect(str(course.db)), sqlite3.connect(str(tmp))
        try:
            with out:
                src.backup(out)
        finally:
            src.close()
            out.close()
        tmp.replace(sc.db)
    return sc


def shard_courses(course: Course, assignment: str) -> list[tuple[Shard, ShardCourse]]:
    """Every shard folder of `assignment` under the course, in order."""
    base = course.root / SHARDS / assignment
    out = []
    for d in sorted(base.iterdir()) if base.is_dir() else []:
        m = _FOLDER.fullmatch(d.name)
        if d.is_dir() and m and int(m.group(1)) < int(m.group(2)):
            shard = Shard(int(m.group(1)), int(m.group(2)))
            out.append((shard, ShardCourse(root=d, source=course.source, release=course.release,
                                           main_root=course.root)))
    return out


class ShardRefused(ValueError):
    """`grade --shard` cannot run as asked (the message says why and what to do)."""


def for_shard(course: Course, assignment: str, spec: str, students: list[str] | None,
              submissions: str | None) -> tuple[ShardCourse, list[str]]:
    """(the shard's course, the students it grades) for `grade --shard spec` (`students`: --student)."""
    try:
        shard = Shard.parse(spec)
    except ValueError as e:
        raise ShardRefused(f"--shard: {e}") from None
    if submissions:
        raise ShardRefused("--shard reads the course's submitted/ and collects nothing (the shards would collect "
                           "into one folder at once): collect first, `python -m autograder collect "
                           f"{assignment} SOURCE`, then grade the shards")
    mine = select(course.students(assignment), shard)
    if students is not None:
        mine = [s for s in mine if s in students]
    return shard_course(course, assignment, shard), mine


@dataclass
class MergeSummary:
    assignment: str
    shards: list = field(default_factory=list)      # "i/N" of the shard folders read
    graded: list = field(default_factory=list)      # merged as graded
    failed: dict = field(default_factory=dict)      # merged as failed: student -> cause
    current: list = field(default_factory=list)     # the course held these results, or newer ones, already
    flags: dict = field(default_factory=dict)       # student -> [why flagged]
    missing: dict = field(default_factory=dict)     # handed in, graded by no shard: student -> "i/N" of its shard(s)


def _when(st: dict) -> str:
    return st.get("graded_at") or st.get("at") or ""


def merge_shards(course: Course, assignment: str) -> MergeSummary:
    """Every shard's latest result per student into the course (see the module's docstring)."""
    summary = MergeSummary(assignment)
    latest: dict[str, tuple[dict, ShardCourse]] = {}
    for shard, sc in shard_courses(course, assignment):
        summary.shards.append(str(shard))
        d = sc.state / assignment
        for p in sorted(d.glob("*.json")) if d.is_dir() else []:
            if p.name.startswith(("_", ".")):      # _preflight.json
                continue
            st = grading_status(sc, assignment, p.stem)
            if st.get("status") in ("graded", "failed") and _when(st) > _when(latest.get(p.stem, ({}, None))[0]):
                latest[p.stem] = (st, sc)
    counts = sorted({int(x.split("/")[1]) for x in summary.shards})
    for student in course.students(assignment):
        if student not in latest and not grading_status(course, assignment, student):
            # a shard that did not run (a pod that failed), or a submission collected after it ran
            summary.missing[student] = ", ".join(f"{shard_of(student, n)}/{n}" for n in counts)
    if latest:
        _ensure_in_gradebook(course, assignment)
    for student, (st, sc) in sorted(latest.items()):
        if _when(grading_status(course, assignment, student)) >= _when(st):
            # the course holds this result already, or a newer one of its own (an unsharded regrade)
            summary.current.append(student)
            continue
        _merge_one(course, sc, assignment, student, st, summary)
    return summary


def _ensure_in_gradebook(course: Course, assignment: str) -> None:
    """The assignment recorded in the course gradebook (a course graded only in shards has none yet)."""
    from nbgrader.api import MissingEntry

    from autograder.course import ensure_assignment

    if course.db.exists():
        with course.gradebook() as gb:
            try:
                gb.find_assignment(assignment)
                return
            except MissingEntry:
                pass
    ensure_assignment(course, assignment)


def _merge_one(course: Course, sc: ShardCourse, assignment: str, student: str, st: dict,
               summary: MergeSummary) -> None:
    """One shard result into the course, as the worker pool merges one (grade._finish)."""
    from autograder.grading.autograde import read_submission

    logs = course.state / assignment / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = sc.state / assignment / "logs" / f"{student}.log"
    if log.is_file():
        shutil.copyfile(log, logs / f"{student}.log")
    dest = course.autograded / student / assignment
    data = read_submission(sc.db_url, assignment, student) if st.get("status") == "graded" else None
    src = sc.autograded / student / assignment
    if data is not None and src.is_dir():
        # as grade._finish merges: manual grades and their status kept, the student's extension and
        # the late penalty on the whole score, the changes logged
        before = regrade.snapshot(course.db_url, assignment, student)
        unchanged = regrade.unchanged_cells(regrade.graded_cells(course, assignment, student), src)
        merge_submission(course.db_url, assignment, student, data)
        regrade.settle(course, assignment, student, before, unchanged, f"merged from shard {sc.root.name}")
        replace_dir(src, dest)
        regrade.remember_cells(course, assignment, student, dest)
        failure_flags = grading_status(course, assignment, student).get(FAILURE_FLAGGED) or []
        write_json(status_path(course, assignment, student), st)
        unflag_failure(course.db_url, assignment, student, failure_flags)
        reasons = {nb: [Reason.from_json(r) for r in rs] for nb, rs in (st.get("flags") or {}).items()}
        flag_submission(course.db_url, assignment, student, unflag.still_to_flag(course, assignment, student, reasons))
        summary.graded.append(student)
        why = [r.message for rs in reasons.values() for r in rs]
        if why:
            summary.flags[student] = why
        return
    cause = st.get("cause") or "the shard's result is incomplete (no gradebook entry or autograded notebooks)"
    if dest.exists():
        shutil.rmtree(dest)
    earlier = grading_status(course, assignment, student).get(FAILURE_FLAGGED) or []
    newly = flag_submission(course.db_url, assignment, student, {WHOLE: [Reason(Flag.GRADING_FAILED, cause)]})
    write_json(status_path(course, assignment, student),
               {**st, "status": "failed", "cause": cause, FAILURE_FLAGGED: sorted(set(earlier) | set(newly))})
    summary.failed[student] = cause
