"""`feedback`: HTML feedback per student, with no hidden-test source anywhere in it.

nbgrader's generate_feedback renders the autograded notebook, in which the hidden tests have
been put back (that is how they ran), so its feedback shows them, and their tracebacks quote
them line by line. Here a preprocessor runs before the HTML export:
* the hidden block of every test cell is replaced by a one-line placeholder;
* an error in such a cell is reduced to its type and message (the assertion message only);
* any line of hidden-test source that shows up in any output (a student may print `In` or
  inspect frames) is blanked out.
Then every written page is checked again against the hidden-test lines of the source
notebooks; a page that still contains one is deleted and reported.
"""
from __future__ import annotations

import html
import logging
import multiprocessing
import re
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor

from .course import HIDDEN_BEGIN, HIDDEN_END, Course, default_jobs, hidden_test_lines, strip_hidden_tests
from .release import ensure_tools_on_path

log = logging.getLogger("autograder")
MIN_LINE = 12     # shorter hidden lines ("else:", ")") give nothing away and are too common to scrub


def secret_lines(nb) -> set[str]:
    """Lines of the notebook's hidden tests that appear nowhere else in it (an import that a
    visible test also makes is no secret)."""
    hidden, visible = set(), set()
    for cell in nb.cells:
        if cell.cell_type == "code" and HIDDEN_BEGIN in cell.source:
            hidden |= {l.strip() for l in hidden_test_lines(cell.source) if len(l.strip()) >= MIN_LINE}
            visible |= {l.strip() for l in strip_hidden_tests(cell.source).splitlines()}
        else:
            visible |= {l.strip() for l in cell.source.splitlines()}
    visible_text = "\n".join(visible)
    # a hidden line that a visible line contains (an import, say) gives nothing away
    return {h for h in hidden - visible if h not in visible_text}


def _scrub(text: str, secrets: set[str]) -> str:
    if not isinstance(text, str):
        return text
    out = []
    for line in text.splitlines(keepends=True):
        plain = re.sub(r"\x1b\[[0-9;]*m", "", line)
        if any(s in plain for s in secrets) or HIDDEN_BEGIN in plain or HIDDEN_END in plain:
            out.append("[hidden test line removed]\n" if line.endswith("\n") else "[hidden test line removed]")
        else:
            out.append(line)
    return "".join(out)


class HideHiddenTests(NbGraderPreprocessor):
    """Remove hidden tests from the sources and outputs of a notebook about to become feedback."""

    def preprocess(self, nb, resources):
        secrets = secret_lines(nb)
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            had_hidden = HIDDEN_BEGIN in cell.source
            if had_hidden:
                cell.source = strip_hidden_tests(cell.source)
            for out in cell.get("outputs", []):
                kind = out.get("output_type")
                if kind == "error":
                    if had_hidden:
                        out["traceback"] = [f"{out.get('ename', 'Error')}: {_scrub(out.get('evalue', ''), secrets)}"]
                    else:
                        out["traceback"] = [_scrub(t, secrets) for t in out.get("traceback", [])]
                    out["evalue"] = _scrub(out.get("evalue", ""), secrets)
                elif kind == "stream":
                    out["text"] = _scrub(out.get("text", ""), secrets)
                elif kind in ("execute_result", "display_data"):
                    data = out.get("data", {})
                    for mime in list(data):
                        if mime.startswith("text/") or mime in ("application/javascript", "application/json"):
                            value = data[mime]
                            data[mime] = _scrub("".join(value) if isinstance(value, list) else value, secrets) \
                                if isinstance(value, (str, list)) else value
        nb.metadata.pop("autograder", None)
        return nb, resources


def feedback_config(course: Course):
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import GetGrades

    c = course.config()
    c.GenerateFeedback.preprocessors = [GetGrades, HideHiddenTests, CSSHTMLHeaderPreprocessor]
    return c


def source_secrets(course: Course, assignment: str) -> set[str]:
    secrets = set()
    for nb in course.notebooks(assignment):
        secrets |= secret_lines(nbformat.read(str(course.source / assignment / f"{nb}.ipynb"), as_version=4))
    return secrets


def leaked_lines(page: str, secrets: set[str]) -> list[str]:
    """Hidden-test lines readable in an HTML page (tags stripped, entities decoded)."""
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    return sorted(s for s in secrets if s in text)


def _feedback_one(args) -> dict:
    root, source, release, assignment, student = args
    from nbgrader.apps import NbGraderAPI

    course = Course(root=Path(root), source=Path(source), release=Path(release))
    try:
        api = NbGraderAPI(config=feedback_config(course))
        api.log.setLevel(logging.WARNING)
        res = api.generate_feedback(assignment, student, force=True)
        return {"student": student, "success": bool(res.get("success")),
                "error": res.get("error", "") or ""}
    except Exception:
        return {"student": student, "success": False, "error": traceback.format_exc()}


def feedback(course: Course, assignment: str, students: list[str] | None = None,
             jobs: int | None = None) -> dict:
    """Write feedback/<student>/<assignment>/<notebook>.html for every autograded submission."""
    ensure_tools_on_path()
    graded = sorted(p.parent.name for p in course.autograded.glob(f"*/{assignment}")
                    if p.is_dir() and not p.parent.name.startswith("."))
    todo = [s for s in graded if students is None or s in students]
    results = {"written": [], "failed": {}, "leaks": {}}
    if not todo:
        return results
    secrets = source_secrets(course, assignment)
    ctx = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    args = [(str(course.root), str(course.source), str(course.release), assignment, s) for s in todo]
    with ProcessPoolExecutor(max_workers=min(jobs or default_jobs(), len(todo)), mp_context=ctx) as pool:
        for fut in as_completed([pool.submit(_feedback_one, a) for a in args]):
            r = fut.result()
            if not r["success"]:
                results["failed"][r["student"]] = (r["error"].strip().splitlines() or ["failed"])[-1]
                continue
            for page in sorted((course.feedback / r["student"] / assignment).glob("*.html")):
                leaks = leaked_lines(page.read_text(errors="replace"), secrets)
                if leaks:
                    page.unlink()
                    results["leaks"][str(page)] = leaks
                else:
                    results["written"].append(str(page))
    return results
