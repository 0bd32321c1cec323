"""`export`: the grades CSV — one row per student, a column per notebook, the total.

A notebook column holds the notebook's score (auto + manual, as in the formgrader); it is empty
when the student has no submission of that assignment. `late_penalty` sums nbgrader's late
penalties; `total` = the notebook scores minus the penalties. With `--with-max` a last row, `(max)`,
holds the maximum of each column so a spreadsheet can turn scores into percentages.
"""
from __future__ import annotations

import csv
from pathlib import Path

from .course import Course


def export(course: Course, out: Path, with_max: bool = False) -> Path:
    from nbgrader.api import Gradebook

    if not course.db.is_file():
        raise SystemExit(f"no gradebook at {course.db}: grade something first")
    with Gradebook(course.db_url) as gb:
        columns = []                    # (assignment, notebook, max)
        for a in sorted(gb.assignments, key=lambda a: a.name):
            for nb in sorted(a.notebooks, key=lambda n: n.name):
                columns.append((a.name, nb.name, nb.max_score))
        rows = []
        for st in sorted(gb.students, key=lambda s: s.id):
            scores, penalty, any_sub = {}, 0.0, False
            for sub in st.submissions:
                any_sub = True
                for nb in sub.notebooks:
                    scores[(sub.assignment.name, nb.name)] = nb.score
                    penalty += nb.late_submission_penalty or 0.0
            if not any_sub:
                continue
            total = sum(scores.values()) - penalty
            rows.append([st.id, st.last_name or "", st.first_name or "", st.email or ""]
                        + [_fmt(scores[(a, n)]) if (a, n) in scores else "" for a, n, _ in columns]
                        + [_fmt(penalty), _fmt(total)])
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student_id", "last_name", "first_name", "email"]
                   + [f"{a}/{n}" for a, n, _ in columns] + ["late_penalty", "total"])
        w.writerows(rows)
        if with_max:
            w.writerow(["(max)", "", "", ""] + [_fmt(m) for _, _, m in columns]
                       + ["", _fmt(sum(m for _, _, m in columns))])
    return out


def _fmt(x: float) -> str:
    return f"{x:g}"
