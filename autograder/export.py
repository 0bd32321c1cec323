"""`export`: the grades CSV — one row per student, a column per notebook, the total.

A notebook column holds the notebook's score (auto + manual, as in the formgrader); it is empty
when the student has no submission of that assignment, and when grading the submission failed:
a failure is never a zero. Each assignment has two more columns:

* `<assignment>/status`: "graded"; "needs manual grade" (a written answer nobody has graded
  yet: its points are not in the score); "failed: <cause>"; "missing" (no submission from a
  student the gradebook knows);
* `<assignment>/flag`: why the submission needs a look, as nbgrader's flag in the Formgrader
  ("grading failed", the kernel's verdict differing from the re-verification, no or an edited
  prediction record, a prediction changed after its reveal), "flagged" for a flag an instructor
  set in the Formgrader, or empty.

`late_penalty` sums nbgrader's late penalties; `total` = the notebook scores minus the penalties.
With `--with-max` a last row, `(max)`, holds the maximum of each column so a spreadsheet can turn
scores into percentages.
"""
from __future__ import annotations

import csv
from pathlib import Path

from .course import Course
from . import csvsafe


def export(course: Course, out: Path, with_max: bool = False) -> Path:
    from nbgrader.api import Gradebook

    from .status import failed_students, flag_reasons

    if not course.db.is_file():
        raise SystemExit(f"no gradebook at {course.db}: grade something first")
    with Gradebook(course.db_url) as gb:
        notebooks = {}                    # assignment -> [(notebook, max)]
        for a in sorted(gb.assignments, key=lambda a: a.name):
            notebooks[a.name] = [(nb.name, nb.max_score) for nb in sorted(a.notebooks, key=lambda n: n.name)]
        failed = {a: failed_students(course, a) for a in notebooks}
        people = {st.id: st for st in gb.students}
        ids = sorted({st.id for st in gb.students} | {s for f in failed.values() for s in f})
        rows = []
        for sid in ids:
            st = people.get(sid)
            scores, penalty, submitted, manual, flagged = {}, 0.0, set(), set(), set()
            for sub in (st.submissions if st else []):
                a = sub.assignment.name
                submitted.add(a)
                if any(nb.flagged for nb in sub.notebooks):
                    flagged.add(a)
                if sid in failed.get(a, {}):
                    continue
                if sub.needs_manual_grade:
                    manual.add(a)
                for nb in sub.notebooks:
                    scores[(a, nb.name)] = nb.score
                    penalty += nb.late_submission_penalty or 0.0
            row = [sid, (st.last_name or "") if st else "", (st.first_name or "") if st else "",
                   (st.email or "") if st else ""]
            for a, nbs in notebooks.items():
                row += [_fmt(scores[(a, n)]) if (a, n) in scores else "" for n, _ in nbs]
                row.append(f"failed: {failed[a][sid]}" if sid in failed[a] else
                           "needs manual grade" if a in manual else "graded" if a in submitted else "missing")
                # nbgrader's flag decides (an instructor unflags after looking); the grader's
                # reasons say why
                why = flag_reasons(course, a, sid) if (a in flagged or sid in failed[a]) else []
                row.append("; ".join(why) or ("flagged" if a in flagged else ""))
            rows.append(row + [_fmt(penalty), _fmt(sum(scores.values()) - penalty)])
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        w = csvsafe.Writer(f)
        header = ["student_id", "last_name", "first_name", "email"]
        for a, nbs in notebooks.items():
            header += [f"{a}/{n}" for n, _ in nbs] + [f"{a}/status", f"{a}/flag"]
        w.writerow(header + ["late_penalty", "total"])
        w.writerows(rows)
        if with_max:
            maxrow = ["(max)", "", "", ""]
            for a, nbs in notebooks.items():
                maxrow += [_fmt(m) for _, m in nbs] + ["", ""]
            w.writerow(maxrow + ["", _fmt(sum(m for nbs in notebooks.values() for _, m in nbs))])
    return out


def _fmt(x: float) -> str:
    return f"{x:g}"
