"""`export`: the grades CSV — one row per student, a column per notebook, the total.

A notebook column holds the notebook's score (auto + manual, as in the formgrader); it is empty
when the student has no submission of that assignment, and when grading the submission failed:
a failure is never a zero. Each assignment has four more columns:

* `<assignment>/status`: "graded"; "needs manual grade" (a written answer nobody has graded
  yet: its points are not in the score); "failed: <cause>"; "missing" (no submission from a
  student the gradebook knows);
* `<assignment>/flag`: why the submission needs a look, as nbgrader's flag in the Formgrader
  ("grading failed", the kernel's verdict differing from the re-verification, no or an edited
  prediction record, a prediction changed after its reveal), "flagged" for a flag an instructor
  set in the Formgrader, or empty;
* `<assignment>/ledger`: whether the hub's prediction ledger vouches for the prediction record
  (`grade --ledger`, autograder.integrity.ledger): "vouched", "record differs from the hub's ledger" (also
  a flag), or "not vouched" (graded without a ledger: a laptop or Binder; information, not a
  penalty); empty without a graded submission;
* `<assignment>/variant`: the numbers the student's questions were asked with (course_lib's
  per-student variants: "Q2: ...; Q3: ...", from the course secret), "the lesson's own" without
  a secret, empty for an assignment whose questions do not vary.

`late_penalty` sums nbgrader's late penalties; `total` = the notebook scores minus the penalties.
With `--with-max` a last row, `(max)`, holds the maximum of each column so a spreadsheet can turn
scores into percentages.
"""
from __future__ import annotations

from pathlib import Path

from autograder.course import Course
from autograder.outputs.gradesheet import write_grades_csv


def export(course: Course, out: Path, with_max: bool = False) -> Path:
    if not course.db.is_file():
        raise SystemExit(f"no gradebook at {course.db}: grade something first")
    return write_grades_csv(course, Path(out), with_max=with_max)
