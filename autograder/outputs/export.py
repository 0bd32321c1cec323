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

* `<assignment>/late`: against the student's own deadline (the due date, or their extension:
  autograder.grading.deadlines): "on time", "on time (extended to ...: reason)", "late by 1 d 2 h";
  empty without a due date;
* `<assignment>/copies`: the evidence of a possible copy (autograder.integrity.copy_flags: the last
  `grade` or `report`), which also sets the Formgrader flag ("possible copy" in the flag column).

`late_penalty` sums nbgrader's late penalties; `total` = the notebook scores minus the penalties
(raw points: a lesson with more points weighs more); `mean_percent` = the mean over the
assignments of each one's score in percent (each assignment weighs the same; one not handed in
counts 0, a failed grading is left out). A last row, `(max)`, holds the maximum of each column
so a spreadsheet can turn scores into percentages (`--no-max` leaves it out).

The name and e-mail columns come from the gradebook's student records: an LMS download fills
them, a hub with PAM accounts knows only user names (`python -m autograder students import
roster.csv` adds them).
"""
from __future__ import annotations

from pathlib import Path

from autograder.course import Course
from autograder.outputs.gradesheet import write_grades_csv


def export(course: Course, out: Path, with_max: bool = True) -> Path:
    if not course.db.is_file():
        raise SystemExit(f"no gradebook at {course.db}: grade something first")
    return write_grades_csv(course, Path(out), with_max=with_max)
