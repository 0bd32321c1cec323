"""`feedback`: HTML feedback per student that leaks no hidden test, by construction.

Why it is safe. The grader runs every cell of a submission *before* any hidden test enters the
kernel (the hidden test cells run last, only to compare the kernel's verdict with the clean one:
autograder.sandbox.execute.SandboxedExecute). So the output of every other cell was produced by a kernel
that had never seen a hidden test: whatever a student prints, in any encoding, from input
history, frames or run-cell hooks, it cannot hold hidden-test text. Hidden test cells
themselves show a placeholder for their source and, for their output, the verdict of the clean
re-verification (passed, or the assertion message), never what the kernel printed.

This costs no extra execution; the alternative, a second run with the hidden tests stripped,
would double grading time for the same pages. A notebook graded some other way (plain nbgrader)
has no such guarantee: there the output of every cell after the first hidden test is replaced by
a note.

Also: outputs over a size cap are cut with a note; a written answer no instructor has graded
yet reads "awaiting instructor grading" (not "0 / 1"); manual scores and comments entered later
(formgrader, `python -m autograder manual`) appear when the feedback is generated again.

nbgrader's own generate_feedback (the formgrader's button, `nbgrader generate_feedback`) does
the same: the course's nbgrader_config.py calls `configure_nbgrader_feedback(c)`.

What the kernel showed is fixed the moment the first hidden test enters it: a later update of
an earlier output (update_display_data with a display_id), a widget's state, an output appended
to an earlier cell never reaches the stored notebook (SandboxedExecute keeps a snapshot of
every other cell's outputs taken then, and no widget state at all).

The page cannot run anything: JavaScript outputs are dropped, HTML/SVG outputs and markdown
cells that could run code (scripts, event handlers, frames, forms, javascript: links) are shown
as text, and the page says so to the browser too (a Content-Security-Policy without any
script). Formulas are MathML written here (autograder.outputs.mathml), so the page needs no MathJax.

As a last check (a second line of defence, not the first) each written page is searched for
hidden-test lines the student could not have written (lines of their own notebook, or of the
release, do not count), also inside base64 (and base64url), base32 and hex blobs, decompressed
when they hold zlib, gzip, bz2 or xz data; a page holding one is withheld and reported.
"""
from __future__ import annotations

import html
import logging
import multiprocessing
import re
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import jinja2
import nbformat
from nbconvert.exporters import HTMLExporter
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import default

from course_lib.exercises.question_ids import cell_id, is_manually_graded, metadata

from autograder.course import Course, default_jobs
from autograder.cell_code import HIDDEN_BEGIN, hidden_test_lines, strip_hidden_tests
from autograder.gradebook import prepare
from autograder.intake.safefiles import read_regular
from autograder.outputs.limits import cap_outputs, cap_total_outputs
from autograder.outputs.page_safety import SanitizeForPage, sanitize_notebook
from autograder.authoring.cells import read_source
from autograder.gradebook import open_gradebook

log = logging.getLogger("autograder")
MIN_LINE = 12     # shorter hidden lines ("else:", ")") give nothing away and are too common to match
TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
PLACEHOLDER = "# (hidden tests: not shown)"
NOT_SHOWN = ("[output not shown: this notebook was graded without the autograder's safe order, and this cell ran "
             "after a hidden test]\n")


def secret_lines(nb, *allowed) -> set[str]:
    """Lines of the notebook's hidden tests that appear nowhere else in it, nor in any of the
    `allowed` notebooks (the release, the student's own submission): text the student could not
    have written. An import that a visible cell also makes is no secret."""
    hidden, visible = set(), set()
    for book in (nb, *allowed):
        for cell in book.cells:
            if cell.cell_type == "code" and HIDDEN_BEGIN in cell.source:
                if book is nb:
                    hidden |= {l.strip() for l in hidden_test_lines(cell.source) if len(l.strip()) >= MIN_LINE}
                visible |= {l.strip() for l in strip_hidden_tests(cell.source).splitlines()}
            else:
                visible |= {l.strip() for l in cell.source.splitlines()}
    visible_text = "\n".join(visible)
    # a hidden line that a visible line contains (an import, say) gives nothing away
    return {h for h in hidden - visible if h not in visible_text}


def _error(ename: str, message: str):
    from nbformat.notebooknode import NotebookNode

    return NotebookNode(output_type="error", ename=ename or "Error", evalue=message,
                        traceback=[f"{ename or 'Error'}: {message}"])


def _stream(text: str):
    from nbformat.notebooknode import NotebookNode

    return NotebookNode(output_type="stream", name="stdout", text=text)


KINDS = {"form": "form check", "correct": "correctness check", "reflection": "written answer",
         "answer": "answer", "prediction": "prediction"}


def cell_label(grade_id: str, title: str) -> str:
    """What the feedback page calls a graded cell: its question and what the cell is, e.g.
    "Q3 · When does a matrix multiply become compute-bound?: correctness check"."""
    kind = grade_id.rsplit("_", 1)[-1] if "_" in grade_id else ""
    what = KINDS.get(kind, kind.replace("_", " ") or "test")
    return f"{title}: {what}" if title else what


def verdict_message(v: dict) -> str:
    """The clean verdict's message; for a question with several answers, one line for every
    wrong answer (a hidden test stops at its first failed check)."""
    wrong = [(n, x) for n, x in (v.get("per_variable") or {}).items() if not x.get("passed")]
    if len(wrong) < 2:
        return v.get("message") or ""
    lines = []
    for name, x in wrong:
        msg = (x.get("message") or "wrong").strip()
        lines.append(msg if name in msg else f"{name}: {msg}")
    return "\n".join(lines)


class SafeFeedback(NbGraderPreprocessor):
    """Make an autograded notebook safe to show its student (see the module's docstring)."""

    def preprocess(self, nb, resources):
        meta = nb.metadata.get("autograder", {}) or {}
        verdicts = meta.get("verdicts", {}) or {}
        safe_order = "hidden_run_last" in meta
        hidden_ids = set(meta.get("hidden_run_last", []))
        seen_hidden = False
        title = ""
        for cell in nb.cells:
            m = cell.metadata.get("nbgrader") or {}
            gid = m.get("grade_id")
            if cell.cell_type == "markdown":
                for line in cell.source.splitlines():
                    if line.startswith("#") and re.search(r"\bQ\d+\b", line):
                        title = re.sub(r"\s*\(\d+ points?\)\s*$", "", line.lstrip("#").strip())
            if gid and (m.get("grade") or m.get("solution") or m.get("task")):
                m["feedback_label"] = cell_label(gid, title)    # the template's name for the cell
            if cell.cell_type != "code":
                continue
            is_hidden = HIDDEN_BEGIN in cell.source or gid in hidden_ids
            if is_hidden:
                seen_hidden = True
                cell.source = strip_hidden_tests(cell.source, PLACEHOLDER) if HIDDEN_BEGIN in cell.source \
                    else PLACEHOLDER
                v = verdicts.get(gid)
                if v is not None:
                    cell.outputs = [] if v["passed"] else [_error(v.get("ename") or "AssertionError", verdict_message(v))]
                else:    # no clean verdict: the name of the error only, nothing the kernel printed
                    errs = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
                    cell.outputs = [_error(errs[0].get("ename", "Error"), "(message not shown)")] if errs else []
                cell.execution_count = None
                continue
            if not safe_order and seen_hidden:
                cell.outputs = [_stream(NOT_SHOWN)] if cell.get("outputs") else []
                continue
            v = verdicts.get(gid)
            if v is not None and not v["passed"] and not any(o.get("output_type") == "error" for o in cell.outputs):
                # the kernel let it pass; the check of the recorded answer did not
                cell.outputs = list(cell.outputs) + [_error(v.get("ename") or "AssertionError",
                                                            verdict_message(v) + " (checked again from your recorded answer)")]
            cap_outputs(cell)
        sanitize_notebook(nb, always_render_markdown=True)
        cap_total_outputs(nb.cells)
        self._awaiting(nb, resources)
        nb.metadata.pop("autograder", None)
        nb.metadata.pop("widgets", None)
        return nb, resources

    def _awaiting(self, nb, resources):
        """Mark the manually graded cells nobody has graded yet."""
        from nbgrader.api import MissingEntry

        info = resources.get("nbgrader") or {}
        if not info.get("db_url"):
            return
        total = 0.0
        with open_gradebook(info["db_url"]) as gb:
            for cell in nb.cells:
                m = metadata(cell)
                if not is_manually_graded(cell):
                    continue
                try:
                    g = gb.find_grade(m["grade_id"], info["notebook"], info["assignment"], info["student"])
                except MissingEntry:
                    continue
                if g.manual_score is None and g.auto_score is None:
                    m["awaiting"] = True
                    total += g.max_score or 0.0
        info["awaiting_points"] = total


class FeedbackHTMLExporter(HTMLExporter):
    """nbgrader's HTMLExporter with the course's feedback template: used by generate_feedback only.

    Setting HTMLExporter.template_name (and its template folders) in the course's config would
    also change the exporter the Formgrader renders submissions with: its manual-grading pages
    need nbgrader's own "formgrade" template (HTTP 500, TemplateNotFound, otherwise)."""

    @default("template_name")
    def _feedback_template_name(self):
        return "feedback"

    @jinja2.pass_context
    def markdown2html(self, context, source):
        """nbconvert's markdown filter, formulas as MathML (autograder.outputs.mathml): no MathJax."""
        from nbconvert.filters.markdown_mistune import MarkdownWithMath

        from autograder.outputs.mathml import MathMLRenderer

        cell = context.get("cell", {})
        renderer = MathMLRenderer(
            escape=False, attachments=cell.get("attachments", {}), embed_images=self.embed_images,
            path=context.get("resources", {}).get("metadata", {}).get("path", ""),
            anchor_link_text=self.anchor_link_text, exclude_anchor_links=self.exclude_anchor_links,
            **self.lexer_options)
        return MarkdownWithMath(renderer=renderer).render(source)

    def default_filters(self):
        from autograder.outputs.mathml import latex_output_to_html

        yield from super().default_filters()     # its markdown2html is the method above
        yield ("latex_output_to_html", latex_output_to_html)


def configure_nbgrader_feedback(c) -> None:
    """Make nbgrader's generate_feedback (CLI, formgrader) produce the safe pages: called by the
    course's nbgrader_config.py and by `python -m autograder feedback`. Only the feedback step's
    exporter is configured; the Formgrader's HTMLExporter keeps its own template."""
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import GetGrades

    c.GenerateFeedback.preprocessors = [GetGrades, SafeFeedback, CSSHTMLHeaderPreprocessor]
    # Every page nbconvert renders for nbgrader (the Formgrader's Manual Grading too) shows the
    # notebook only after autograder.outputs.page_safety rebuilt it from its allow-lists: an exporter's
    # preprocessors only, never its template (the Formgrader needs its own "formgrade" one)
    c.HTMLExporter.preprocessors = [SanitizeForPage]
    c.GenerateFeedback.exporter_class = FeedbackHTMLExporter
    # nbgrader's API (the formgrader's button) forces HTMLExporter.template_name = "feedback" and,
    # unless configured, nbgrader's own template folder (whose feedback page shows hidden tests):
    # this section, the subclass's, overrides both for the feedback exporter alone
    c.FeedbackHTMLExporter.template_name = "feedback"
    c.FeedbackHTMLExporter.extra_template_basedirs = [str(TEMPLATES)]


def feedback_config(course: Course):
    c = course.config()
    configure_nbgrader_feedback(c)
    return c


def source_secrets(course: Course, assignment: str, student: str | None = None) -> set[str]:
    """Hidden-test lines of the assignment that `student` could not have written: not in the
    release, not in their own submission."""
    secrets = set()
    for nb in course.notebooks(assignment):
        allowed = []
        for p in ([course.release / assignment / f"{nb}.ipynb"]
                  + ([course.submitted / student / assignment / f"{nb}.ipynb"] if student else [])):
            try:     # never through a link (safefiles): a link to the solution would allow everything
                allowed.append(nbformat.reads(read_regular(p).decode("utf-8-sig"), as_version=4))
            except Exception:
                pass
        secrets |= secret_lines(read_source(course.source / assignment / f"{nb}.ipynb"), *allowed)
    return secrets


_B64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_B32 = re.compile(r"[A-Z2-7]{16,}={0,6}")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2}){8,}")
MAX_DECODED = 64 * 2**20          # bytes decoded from one page in all (a decompression bomb stops there)


def _unpacked(data: bytes, budget: list) -> list[bytes]:
    """`data` and, where it is zlib/gzip/bz2/xz data, what it decompresses to (bounded)."""
    import bz2
    import lzma
    import zlib

    out = [data]
    makers = [lambda: zlib.decompressobj(15), lambda: zlib.decompressobj(-15), lambda: zlib.decompressobj(31),
              bz2.BZ2Decompressor, lzma.LZMADecompressor]
    for make in makers:
        if budget[0] <= 0:
            break
        try:
            d = make()
            got = d.decompress(data, max_length=budget[0]) if hasattr(d, "unconsumed_tail") or \
                isinstance(d, (bz2.BZ2Decompressor, lzma.LZMADecompressor)) else d.decompress(data)
        except Exception:
            continue
        if got:
            budget[0] -= len(got)
            out.append(got)
    return out


def decoded_texts(text: str, depth: int = 2, budget: list | None = None) -> list[str]:
    """Texts hidden in `text` as base64 (or base64url), base32 or hex blobs, decompressed where
    they hold compressed data, `depth` levels deep (a blob inside a blob)."""
    import base64
    import binascii

    budget = budget if budget is not None else [MAX_DECODED]
    found = []
    blobs = set()
    joined = re.sub(r"(?<=[A-Za-z0-9+/=_-])[ \t]*\r?\n[ \t]*(?=[A-Za-z0-9+/=_-])", "", text)
    for source in {text, joined}:      # a blob wrapped over several lines too
        blobs |= {("64", m) for m in _B64.findall(source)}
        blobs |= {("32", m) for m in _B32.findall(source)}
        blobs |= {("16", m) for m in _HEX.findall(source)}
    for kind, blob in sorted(blobs):
        if budget[0] <= 0:
            break
        raws = []
        try:
            if kind == "16":
                raws.append(binascii.unhexlify(blob))
            elif kind == "32":
                raws.append(base64.b32decode(blob + "=" * (-len(blob) % 8)))
            else:
                core = blob.rstrip("=")
                for off in range(4):       # the blob may start anywhere within a 4-character group
                    part = core[off:]
                    part = part[: len(part) - len(part) % 4] if len(part) % 4 == 1 else part
                    padded = part + "=" * (-len(part) % 4)
                    for alt in (None, b"-_"):
                        try:
                            raws.append(base64.b64decode(padded, altchars=alt) if alt is None
                                        else base64.urlsafe_b64decode(padded))
                        except (binascii.Error, ValueError):
                            pass
        except (binascii.Error, ValueError):
            continue
        for raw in raws:
            budget[0] -= len(raw)
            for data in _unpacked(raw, budget):
                t = data.decode("utf-8", "replace")
                if _texty(t):        # binary noise (any long letter run "decodes") holds no line
                    found.append(t)
                    if depth > 1 and budget[0] > 0:
                        found += decoded_texts(t, depth - 1, budget)
    return found


def _texty(t: str) -> bool:
    sample = t[:4096]
    return bool(sample) and sum(c.isprintable() or c in "\n\t\r" for c in sample) >= 0.9 * len(sample)


def leaked_lines(page: str, secrets: set[str]) -> list[str]:
    """Hidden-test lines readable in an HTML page (tags stripped, entities decoded), also once
    decoded from base64/base32/hex and decompressed (decoded_texts)."""
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    hits = {s for s in secrets if s in text}
    if secrets - hits:
        decoded = "\n".join(decoded_texts(text))
        hits |= {s for s in secrets if s in decoded}
    return sorted(hits)


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
    prepare(course.db_url)
    graded = sorted(p.parent.name for p in course.autograded.glob(f"*/{assignment}")
                    if p.is_dir() and not p.parent.name.startswith("."))
    todo = [s for s in graded if students is None or s in students]
    results = {"written": [], "failed": {}, "leaks": {}}
    if not todo:
        return results
    from autograder.grading.deadlines import retake_penalties

    retake_penalties(course, assignment, todo)    # the page shows the penalty of the score as it is now
    ctx = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    args = [(str(course.root), str(course.source), str(course.release), assignment, s) for s in todo]
    with ProcessPoolExecutor(max_workers=min(jobs or default_jobs(), len(todo)), mp_context=ctx) as pool:
        for fut in as_completed([pool.submit(_feedback_one, a) for a in args]):
            r = fut.result()
            if not r["success"]:
                results["failed"][r["student"]] = (r["error"].strip().splitlines() or ["failed"])[-1]
                continue
            secrets = source_secrets(course, assignment, r["student"])
            for page in sorted((course.feedback / r["student"] / assignment).glob("*.html")):
                leaks = leaked_lines(page.read_text(errors="replace"), secrets)
                if leaks:
                    page.unlink()
                    results["leaks"][str(page)] = leaks
                else:
                    results["written"].append(str(page))
    return results
