"""`report`: the misconception report of an assignment.

For every predict-then-verify question (each answer cell, each answer variable its tests read):
how many students predicted each answer, which answer is the truth, and the share of students
who got the question wrong. Written to reports/<assignment>/:

* misconceptions.csv — notebook, question, variable, answer, count, is_truth, students, wrong, share_wrong
* misconceptions.png — one bar chart per question variable (truth green, wrong answers red)
* scores.csv / scores.png — every student's score per notebook and its distribution

Where the answers come from: the autograder records the value of every answer variable right
after its answer cell ran (notebook metadata "autograder.values"); a notebook without that
record (graded by plain nbgrader) falls back to the literals in its answer cells.
The truth: the same record taken from running the solution notebook through the same pipeline
(cached per version of the sources), which also checks the solution earns full marks.
"Wrong" is the graded result: the question's hidden (correctness) tests did not all pass.
"""
from __future__ import annotations

import ast
import csv
import json
import math
import re
import shutil
import statistics
import tempfile
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import nbformat

from .course import Course, answer_cells, ensure_assignment, source_extras, template_gradebook, tree_hash
from .release import ensure_tools_on_path

NO_ANSWER = "(no answer)"
REL_TOL = 0.02


# ---------------------------------------------------------------------------------------------
# answers -> categories
# ---------------------------------------------------------------------------------------------
def _key(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text.strip().casefold())


def category(value, truth=None) -> str:
    """A printable answer class. `value` is a recorded [type, str, number, units] or None."""
    if not value:
        return NO_ANSWER
    typ, text, num, units = value
    if num is not None and math.isfinite(num):
        if truth and truth[2] not in (None, 0) and math.isfinite(truth[2]) and (units or "") == (truth[3] or ""):
            ratio = num / truth[2]
            if abs(ratio - 1) <= REL_TOL:
                return category(truth)
            return f"{num:.3g}{' ' + units if units else ''} (truth x{ratio:.3g})"
        return f"{num:.3g}{' ' + units if units else ''}"
    if typ == "str":
        if truth and truth[0] == "str" and _key(text) == _key(truth[1]):
            return category(truth)
        return re.sub(r"\s+", " ", text.strip())[:40] or "(empty string)"
    return f"{text[:40]} ({typ})"


def _literal_values(source: str, names) -> dict:
    """Fallback: values of `name = <literal>` assignments in an answer cell."""
    out = {}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return out
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id in names:
                    try:
                        v = ast.literal_eval(node.value)
                    except Exception:
                        continue
                    if isinstance(v, str):
                        out[t.id] = ["str", v[:200], None, ""]
                    elif isinstance(v, (int, float)) and not isinstance(v, bool):
                        out[t.id] = [type(v).__name__, str(v), float(v), ""]
    return out


def recorded_values(autograded_nb: Path, names) -> dict:
    nb = nbformat.read(str(autograded_nb), as_version=4)
    if "autograder" in nb.metadata:
        return nb.metadata["autograder"].get("values") or {}
    out = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
            out.update(_literal_values(cell.source, names))
    return out


# ---------------------------------------------------------------------------------------------
# the truth: the solution notebook through the same pipeline
# ---------------------------------------------------------------------------------------------
def truth(course: Course, assignment: str, limits=None) -> dict:
    """{notebook: {"values": {...}, "scores": {grade_id: (score, max)}}} from the solution."""
    from .grade import capture_map, grade_one
    from .sandbox import Limits, probe

    cache = course.reports / assignment / ".truth.json"
    key = tree_hash(course.source / assignment)
    if cache.is_file():
        try:
            data = json.loads(cache.read_text())
            if data.get("key") == key:
                return data["notebooks"]
        except ValueError:
            pass
    ensure_tools_on_path()
    ensure_assignment(course, assignment)
    notebooks = course.notebooks(assignment)
    capture = capture_map(course, assignment)
    names = {v for vs in capture.values() for v in vs}
    work = Path(tempfile.mkdtemp(prefix="autograder-truth-"))
    try:
        sub = work / "solution"
        sub.mkdir()
        for nb in notebooks:
            shutil.copy(course.source / assignment / f"{nb}.ipynb", sub / f"{nb}.ipynb")
        res = grade_one({"assignment": assignment, "student": "solution", "work": str(work),
                         "template_db": str(template_gradebook(course, work / "template.db")),
                         "extras": str(source_extras(course, assignment, work / "extras")),
                         "limits": asdict(limits or Limits()), "sandbox": probe()[0],
                         "packages": ["course_lib"], "capture": capture, "submitted": str(sub)})
        if not res["success"]:
            raise RuntimeError(f"running the solution of {assignment} failed:\n{res['error'][-3000:]}")
        out = {}
        for nb in notebooks:
            grades = res["data"]["notebooks"][nb]["grades"]
            out[nb] = {"values": recorded_values(Path(res["autograded"]) / f"{nb}.ipynb", names),
                       "scores": {g: [v["auto_score"], v["max_score"]] for g, v in grades.items()}}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"key": key, "notebooks": out}, indent=1))
    return out


# ---------------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------------
def misconceptions(course: Course, assignment: str, truth_values: dict | None = None) -> list[dict]:
    """One dict per (question variable, answer)."""
    from .grade import cell_scores

    truth_values = truth_values if truth_values is not None else truth(course, assignment)
    graded = cell_scores(course.db_url, assignment)
    rows = []
    for nb in course.notebooks(assignment):
        cells = answer_cells(course.source / assignment / f"{nb}.ipynb")
        names = {v for c in cells for v in c.variables}
        students = sorted(s for s in graded if (course.autograded / s / assignment / f"{nb}.ipynb").is_file())
        values = {s: recorded_values(course.autograded / s / assignment / f"{nb}.ipynb", names) for s in students}
        tv = truth_values.get(nb, {}).get("values", {})
        tscores = truth_values.get(nb, {}).get("scores", {})
        for cell in cells:
            if not cell.variables:
                continue
            hidden = cell.hidden_tests
            for var in cell.variables:
                t = tv.get(var)
                truth_label = category(t) if t else None
                counts = Counter(category(values[s].get(var), t) for s in students)
                if hidden:
                    wrong = sum(1 for s in students
                                if any((graded[s].get(f"{nb}/{g}") or 0) < (tscores.get(g, [0, 0])[1] or 0)
                                       for g in hidden))
                else:
                    wrong = sum(n for label, n in counts.items() if label != truth_label)
                for label, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
                    rows.append({"notebook": nb, "question": cell.question or cell.grade_id, "title": cell.title,
                                 "answer_cell": cell.grade_id, "variable": var, "answer": label, "count": n,
                                 "is_truth": label == truth_label, "truth": truth_label or "",
                                 "students": len(students), "wrong": wrong,
                                 "share_wrong": round(wrong / len(students), 4) if students else 0.0})
                if truth_label and truth_label not in counts:
                    rows.append({"notebook": nb, "question": cell.question or cell.grade_id, "title": cell.title,
                                 "answer_cell": cell.grade_id, "variable": var, "answer": truth_label, "count": 0,
                                 "is_truth": True, "truth": truth_label, "students": len(students),
                                 "wrong": wrong, "share_wrong": round(wrong / len(students), 4) if students else 0.0})
    return rows


def score_rows(course: Course, assignment: str) -> list[dict]:
    from nbgrader.api import Gradebook, MissingEntry

    rows = []
    with Gradebook(course.db_url) as gb:
        try:
            a = gb.find_assignment(assignment)
        except MissingEntry:
            return rows
        maxes = {nb.name: nb.max_score for nb in a.notebooks}
        for sub in sorted(a.submissions, key=lambda s: s.student.id):
            for nb in sub.notebooks:
                rows.append({"notebook": nb.name, "student": sub.student.id, "score": nb.score,
                             "max_score": maxes[nb.name], "needs_manual_grade": nb.needs_manual_grade})
    return rows


def _write_csv(path: Path, rows: list[dict], fields: list[str]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def _figure(nrows, ncols, w, h):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def plot_misconceptions(rows: list[dict], path: Path) -> None:
    panels = []
    for r in rows:
        key = (r["notebook"], r["question"], r["variable"])
        if not panels or panels[-1][0] != key:
            panels.append((key, []))
        panels[-1][1].append(r)
    if not panels:
        return
    ncols = 2 if len(panels) > 1 else 1
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = _figure(nrows, ncols, 7 * ncols, 2.4 * nrows + 0.6)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, ((nb, q, var), rs) in zip(axes.flat, panels):
        labels = [r["answer"] for r in rs][::-1]
        counts = [r["count"] for r in rs][::-1]
        colors = ["tab:green" if r["is_truth"] else ("lightgrey" if r["answer"] == NO_ANSWER else "tab:red")
                  for r in rs][::-1]
        ax.barh(range(len(rs)), counts, color=colors)
        ax.set_yticks(range(len(rs)), [l if len(l) <= 32 else l[:31] + "…" for l in labels], fontsize=8)
        title = rs[0]["title"] or q
        title = title if len(title) <= 60 else title[:59] + "…"
        ax.set_title(f"{title}\n{var}: {rs[0]['share_wrong']:.0%} wrong of {rs[0]['students']}", fontsize=9)
        ax.set_xlabel("students", fontsize=8)
        ax.xaxis.get_major_locator().set_params(integer=True)
    fig.suptitle("Predictions vs the truth (green)", fontsize=11)
    fig.savefig(path, dpi=100)


def plot_scores(rows: list[dict], path: Path) -> None:
    nbs = sorted({r["notebook"] for r in rows})
    if not nbs:
        return
    fig, axes = _figure(1, len(nbs), 5 * len(nbs), 3.2)
    for ax, nb in zip(axes.flat, nbs):
        scores = [r["score"] for r in rows if r["notebook"] == nb]
        top = max(r["max_score"] for r in rows if r["notebook"] == nb)
        ax.hist(scores, bins=[x - 0.5 for x in range(int(top) + 2)], color="tab:blue", edgecolor="white")
        ax.set_xlim(-0.5, top + 0.5)
        ax.set_title(f"{nb}: mean {statistics.mean(scores):.1f} / {top:g}, n={len(scores)}", fontsize=9)
        ax.set_xlabel("score")
        ax.set_ylabel("students")
        ax.yaxis.get_major_locator().set_params(integer=True)
    fig.savefig(path, dpi=100)


def report(course: Course, assignment: str, out_dir: Path | None = None) -> dict:
    out = Path(out_dir or course.reports / assignment)
    out.mkdir(parents=True, exist_ok=True)
    rows = misconceptions(course, assignment)
    _write_csv(out / "misconceptions.csv", rows,
               ["notebook", "question", "title", "answer_cell", "variable", "answer", "count", "is_truth",
                "truth", "students", "wrong", "share_wrong"])
    plot_misconceptions(rows, out / "misconceptions.png")
    srows = score_rows(course, assignment)
    _write_csv(out / "scores.csv", srows, ["notebook", "student", "score", "max_score", "needs_manual_grade"])
    plot_scores(srows, out / "scores.png")
    summary = {}
    for nb in sorted({r["notebook"] for r in srows}):
        s = [r["score"] for r in srows if r["notebook"] == nb]
        summary[nb] = {"n": len(s), "mean": statistics.mean(s), "median": statistics.median(s),
                       "min": min(s), "max": max(s),
                       "max_score": max(r["max_score"] for r in srows if r["notebook"] == nb)}
    return {"dir": str(out), "rows": rows, "scores": summary}


def format_report(result: dict) -> str:
    lines = [f"report written to {result['dir']}/ (misconceptions.csv/.png, scores.csv/.png)"]
    seen = set()
    for r in result["rows"]:
        key = (r["notebook"], r["question"], r["variable"])
        if key in seen:
            continue
        seen.add(key)
        wrong = [x for x in result["rows"] if (x["notebook"], x["question"], x["variable"]) == key
                 and not x["is_truth"] and x["answer"] != NO_ANSWER and x["count"]]
        top = f"; most common wrong answer: {wrong[0]['answer']} ({wrong[0]['count']})" if wrong else ""
        lines.append(f"  {r['question']} {r['variable']}: {r['share_wrong']:.0%} wrong, truth {r['truth'] or '?'}{top}")
    for nb, s in result["scores"].items():
        lines.append(f"  {nb}: n={s['n']} mean {s['mean']:.1f} median {s['median']:g} "
                     f"min {s['min']:g} max {s['max']:g} (of {s['max_score']:g})")
    return "\n".join(lines)
