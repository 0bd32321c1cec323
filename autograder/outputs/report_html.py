"""report.html: the instructor's report of an assignment as one accessible page (WCAG 2.1 AA),
and index.html beside the assignments' folders: the course across assignments.

The assignment's page: a table per student (score, late, status, flags, ledger, possible copies
with their evidence), per-question statistics (mean, spread, share with every point, the
misconceptions matched), scores per notebook, the answers per question (each judged against the
student's own truth), possible copies, predictions changed after their reveal (only those that
changed), and the regrade log. Headings in order, tables with captions and column headers, both
charts embedded with a text alternative written from the rows that drew them, and text colours
of AA contrast. Everything a student supplied (answers, names) is escaped; the page runs nothing
and loads nothing. The CSV files beside it hold the same data.
"""
from __future__ import annotations

import base64
import html
from pathlib import Path

STYLE = """
body { font-family: system-ui, sans-serif; color: #1a1a1a; background: #fff; margin: 1.5em auto;
       max-width: 70em; line-height: 1.45; padding: 0 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
caption { text-align: left; font-weight: 600; padding: 0.3em 0; }
th, td { border: 1px solid #767676; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; height: auto; }
.truth { font-weight: 600; }
a { color: #0b57a4; }
"""


def _cell(v, num=False) -> str:
    cls = ' class="num"' if num else ""
    return f"<td{cls}>{html.escape(str(v))}</td>"


def _table(caption: str, header: list[str], rows: list[list], nums=(), row_header: bool = False) -> str:
    """A table; with row_header the first column heads each row (a student's id)."""
    head = "".join(f'<th scope="col">{html.escape(h)}</th>' for h in header)

    def first(v, i):
        return f'<th scope="row">{html.escape(str(v))}</th>' if row_header and i == 0 else _cell(v, i in nums)

    body = "".join("<tr>" + "".join(first(v, i) for i, v in enumerate(r)) + "</tr>" for r in rows)
    return (f"<table><caption>{html.escape(caption)}</caption><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>")


def misconceptions_alt(rows: list[dict]) -> str:
    """The bar chart's text: per question variable, each answer's count, the truth named."""
    parts, key = [], None
    for r in rows:
        k = (r["notebook"], r["question"], r["variable"])
        if k != key:
            key = k
            parts.append(f"{r['title'] or r['question']}, {r['variable']}: {r['share_wrong']:.0%} wrong "
                         f"of {r['students']};")
        parts.append(f"{r['answer']}{' (the truth)' if r['is_truth'] else ''}: {r['count']},")
    text = " ".join(parts).rstrip(",;")
    return f"Bar charts of the students' answers per question. {text}." if text else "No answers."


def scores_alt(summary: dict) -> str:
    return "Histograms of the scores per notebook. " + " ".join(
        f"{nb}: {s['n']} students, mean {s['mean']:.1f}, median {s['median']:g}, from {s['min']:g} "
        f"to {s['max']:g} of {s['max_score']:g}." for nb, s in summary.items())


def _image(path: Path, alt: str) -> str:
    if not path.is_file():
        return ""
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt, quote=True)}">'


CSP = ("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'none'; "
       "style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'\">")


def _page(title: str, body: list[str]) -> str:
    # students' answers and names are in it (escaped): the browser is told to run nothing and
    # load nothing but the page's own inline images, as the feedback pages
    return ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n' + CSP + "\n"
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n"
            "<body>\n<main>\n" + "\n".join(p for p in body if p) + "\n</main>\n</body>\n</html>\n")


def _fmt(x, digits: str = "g") -> str:
    return "" if x is None else format(x, digits)


def _students_table(students) -> str:
    named = any(r.name for r in students)
    varied = any(r.numbers for r in students)
    rows = [[r.student, *([r.name] if named else []), _fmt(r.score), _fmt(r.max_score) if r.score is not None else "",
             r.late, _fmt(r.penalty) if r.penalty else "", r.status, "; ".join(r.flags), r.ledger,
             "; ".join(f"{c['question']} {c['variable']} = {c['answer']}: {c['evidence']}" for c in r.copies),
             *([r.numbers] if varied else [])]
            for r in students]
    table = _table("Per student: the score (late penalty taken), lateness against the student's own deadline, "
                   "flags, the hub's ledger and possible copies" + (", and the numbers they were graded on"
                                                                   if varied else ""),
                   ["student", *(["name"] if named else []), "score", "out of", "late", "late penalty", "status",
                    "flags", "ledger", "possible copies (evidence)", *(["their numbers"] if varied else [])], rows,
                   nums=(2, 3, 5) if named else (1, 2, 4), row_header=True)
    note = "" if named or not students else (
        "<p>No names: the gradebook has none (a hub with PAM accounts knows only user names; "
        "<code>python -m autograder students import roster.csv</code> or <code>--from-accounts</code> adds them)."
        "</p>")
    return table + note


def _questions_table(questions) -> str:
    rows = [[q.notebook, q.question + (f": {q.title}" if q.title else ""), f"{q.mean:.2f}", f"{q.spread:.2f}",
             f"{q.low:g} to {q.high:g}", f"{q.max_score:g}", f"{q.share_full:.0%}", q.n, q.awaiting or "",
             "; ".join(q.misconceptions)] for q in questions]
    return _table("Per question: the graded students' points on it",
                  ["notebook", "question", "mean", "spread (std. dev.)", "range", "out of",
                   "share with every point", "students", "awaiting a manual grade", "misconceptions matched"],
                  rows, nums=(2, 3, 5, 6, 7, 8))


def _copies_table(copies) -> str:
    if not copies:
        return "<p>No possible copies (the check needs per-student variants: every student on their own numbers).</p>"
    return _table("Possible copies: evidence to look at, never a penalty (the submission is flagged in the Formgrader)",
                  ["student", "question", "variable", "answer", "the student's numbers", "matches", "evidence"],
                  [[c["student"], c["question"], c["variable"], c["answer"], c["own_variant"], c["matches"],
                    c["evidence"]] for c in copies], row_header=True)


def _changes_table(changes) -> str:
    changed = [c for c in changes if c.rule.value == "changed-after-reveal"]
    if not changed:
        return "<p>No prediction was changed after its reveal.</p>"
    return _table("Each prediction changed after its truth was revealed (graded on the one committed before)",
                  ["student", "notebook", "question", "committed", "changed to", "record"],
                  [[c.student, c.notebook, c.title or c.question, c.changed_from, c.changed_to, c.record]
                   for c in changed], row_header=True)


def _regrades_table(regrades) -> str:
    from autograder.outputs.report_tables import describe_state

    if not regrades:
        return "<p>No regrade has changed anything.</p>"
    return _table("What each regrade changed (regrades.jsonl in the course folder)",
                  ["student", "when", "cell", "before", "after", "why"],
                  [[r.get("student", ""), r.get("at", ""), r.get("cell", ""), describe_state(r.get("before")),
                    describe_state(r.get("after")), r.get("why", "")] for r in regrades], row_header=True)


SECTIONS = [("students", "Students"), ("questions", "Questions"), ("scores", "Scores"),
            ("misconceptions", "Misconceptions"), ("copies", "Possible copies"),
            ("changes", "Predictions changed after their reveal"), ("regrades", "Regrades")]


def write_report_html(out: Path, assignment: str, rows: list[dict], changes: list, summary: dict, *,
                      students=(), questions=(), copies=(), regrades=(), heading: str = "") -> Path:
    """Write out/report.html from the report's rows (the same ones the CSVs and PNGs hold)."""
    nav = ('<nav aria-label="Sections"><ul>' + "".join(f'<li><a href="#{i}">{html.escape(t)}</a></li>'
                                                       for i, t in SECTIONS)
           + '<li><a href="../index.html">The course across assignments</a></li></ul></nav>')
    page = [f"<h1>Report: {html.escape(assignment)}</h1>",
            f"<p>{html.escape(heading)}</p>" if heading else "",
            "<p>The same data as the CSV files beside this page (scores.csv, misconceptions.csv, "
            "predictions.csv, copies.csv).</p>", nav,
            '<h2 id="students">Students</h2>', _students_table(students),
            '<h2 id="questions">Questions</h2>', _questions_table(questions),
            '<h2 id="scores">Scores</h2>',
            _table("Scores per notebook (less late penalties, as everywhere)", ["notebook", "students", "mean", "median", "lowest", "highest",
                                           "out of"],
                   [[nb, s["n"], f"{s['mean']:.1f}", f"{s['median']:g}", f"{s['min']:g}", f"{s['max']:g}",
                     f"{s['max_score']:g}"] for nb, s in summary.items()], nums=range(1, 7)),
            _image(out / "scores.png", scores_alt(summary)),
            '<h2 id="misconceptions">Misconceptions</h2>',
            "<p>Each answer is judged against the student's own truth (with per-student variants, the numbers "
            "that student was asked with); a wrong number shows its ratio to that truth, in the question's "
            "unit.</p>",
            _table("Answers per question (the truth marked)", [
                "notebook", "question", "variable", "answer", "students", "the truth?", "label"],
                [[r["notebook"], r["title"] or r["question"], r["variable"], r["answer"], r["count"],
                  "yes, the truth" if r["is_truth"] else "no", r["label"] or ""] for r in rows], nums=(4,)),
            _image(out / "misconceptions.png", misconceptions_alt(rows)),
            '<h2 id="copies">Possible copies</h2>', _copies_table(list(copies)),
            '<h2 id="changes">Predictions changed after their reveal</h2>', _changes_table(changes),
            '<h2 id="regrades">Regrades</h2>', _regrades_table(list(regrades))]
    path = out / "report.html"
    path.write_text(_page(f"Report: {assignment}", page), encoding="utf-8")
    return path


def write_course_html(reports: Path, assignments: list[str], cells: dict, stats: dict) -> Path:
    """reports/index.html: a row per student, a column per assignment (its score, and what to look
    at: late, awaiting a manual grade, flagged, possible copy), each assignment's report linked."""
    head = "".join(f'<th scope="col"><a href="{html.escape(a, quote=True)}/report.html">{html.escape(a)}</a></th>'
                   if (reports / a / "report.html").is_file() else f'<th scope="col">{html.escape(a)}</th>'
                   for a in assignments)
    body = []
    for s, per in cells.items():
        tds = "".join(f"<td>{html.escape(per[a].text)}"
                      + (f"<br><small>{html.escape('; '.join(per[a].notes))}</small>" if per[a].notes else "")
                      + "</td>" for a in assignments)
        body.append(f'<tr><th scope="row">{html.escape(s)}</th>{tds}</tr>')
    means = "".join(f'<td class="num">{"" if stats[a]["mean"] is None else format(stats[a]["mean"], ".1f")}'
                    f' / {stats[a]["max"]:g} (n={stats[a]["n"]})</td>' for a in assignments)
    body.append(f'<tr><th scope="row">mean</th>{means}</tr>')
    table = (f"<table><caption>Every student's score per assignment (late penalties taken) and what to look at"
             f"</caption><thead><tr><th scope=\"col\">student</th>{head}</tr></thead>"
             f"<tbody>{''.join(body)}</tbody></table>")
    page = ["<h1>Course report</h1>",
            "<p>Each assignment's column links to its report (run <code>python -m autograder report "
            "ASSIGNMENT</code> for one that has none yet).</p>", table]
    reports.mkdir(parents=True, exist_ok=True)
    path = reports / "index.html"
    path.write_text(_page("Course report", page), encoding="utf-8")
    return path
