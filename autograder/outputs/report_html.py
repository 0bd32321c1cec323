"""report.html: the instructor's report as one accessible page (WCAG 2.1 AA).

Headings in order, tables with captions and column headers, both charts embedded with a text
alternative written from the rows that drew them, and text colours of AA contrast. The CSV
files beside it hold the same data.
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


def _table(caption: str, header: list[str], rows: list[list], nums=()) -> str:
    head = "".join(f'<th scope="col">{html.escape(h)}</th>' for h in header)
    body = "".join("<tr>" + "".join(_cell(v, i in nums) for i, v in enumerate(r)) + "</tr>" for r in rows)
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


def write_report_html(out: Path, assignment: str, rows: list[dict], changes: list, summary: dict) -> Path:
    """Write out/report.html from the report's rows (the same ones the CSVs and PNGs hold)."""
    page = [f"<h1>Report: {html.escape(assignment)}</h1>",
            "<p>The same data as misconceptions.csv, predictions.csv and scores.csv beside this page.</p>",
            "<h2>Scores</h2>",
            _table("Scores per notebook", ["notebook", "students", "mean", "median", "lowest", "highest",
                                           "out of"],
                   [[nb, s["n"], f"{s['mean']:.1f}", f"{s['median']:g}", f"{s['min']:g}", f"{s['max']:g}",
                     f"{s['max_score']:g}"] for nb, s in summary.items()], nums=range(1, 7)),
            _image(out / "scores.png", scores_alt(summary)),
            "<h2>Misconceptions</h2>",
            _table("Answers per question (the truth in bold text and marked)", [
                "notebook", "question", "variable", "answer", "students", "the truth?", "label"],
                [[r["notebook"], r["title"] or r["question"], r["variable"], r["answer"], r["count"],
                  "yes, the truth" if r["is_truth"] else "no", r["label"] or ""] for r in rows], nums=(4,)),
            _image(out / "misconceptions.png", misconceptions_alt(rows)),
            "<h2>Predictions changed after their reveal</h2>",
            _table("Per question and student: the rule the grade used", [
                "notebook", "question", "student", "rule", "from", "to", "record"],
                [[c.notebook, c.title or c.question, c.student, c.rule.value, c.changed_from, c.changed_to,
                  c.record] for c in changes])]
    # students' answers are in it (escaped): the browser is told to run nothing and load nothing
    # but the page's own inline images, as the feedback pages
    text = ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; script-src \'none\'; '
            'style-src \'unsafe-inline\'; img-src data:; base-uri \'none\'; form-action \'none\'">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>Report: {html.escape(assignment)}</title>\n<style>{STYLE}</style>\n</head>\n"
            f"<body>\n<main>\n" + "\n".join(p for p in page if p) + "\n</main>\n</body>\n</html>\n")
    path = out / "report.html"
    path.write_text(text, encoding="utf-8")
    return path
