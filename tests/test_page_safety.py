"""autograder.outputs.page_safety: everything a notebook supplies, rebuilt from allow-lists before a page
shows it, checked on the page nbgrader's Formgrader renders (its exporter, with the course's
configuration) by parsing that page; the browser test (tests/test_formgrader_browser.py) runs the
same payloads in chromium."""
from __future__ import annotations

import copy
from html.parser import HTMLParser

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

from autograder.outputs.page_safety import clean_html, sanitize_notebook
from test_formgrader_config import formgrader_config

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
HONEST_FIGURE = (f'<figure class="course-figure" style="margin:0"><img src="data:image/png;base64,{PNG}" '
                 'alt="roofline of the A100" style="max-width:100%"><details><summary>The chart\'s data as a table'
                 '</summary><table><caption>points</caption><thead><tr><th scope="col">batch</th></tr></thead>'
                 '<tbody><tr><td>1</td></tr></tbody></table></details></figure>')

# (where, payload): each would run script, load something or navigate to script if shown as is
OUTPUT_PAYLOADS = [
    new_output("display_data", data={"image/png": PNG}, metadata={"image/png": {"width": "320 onerror=alert(1)"}}),
    new_output("display_data", data={"image/jpeg": PNG}, metadata={"height": "1 onerror=alert(2)",
                                                                   "filenames": {"image/jpeg": "/pwned.png"}}),
    new_output("display_data", data={"image/png": 'AAAA" onerror="alert(3)'}),
    new_output("display_data", data={"text/html": "<b>x</b>"}, metadata={"text/html": {"isolated": True}}),
    new_output("display_data", data={"image/svg+xml": '<svg onload="alert(4)"><script>alert(5)</script></svg>'}),
    new_output("display_data", data={"text/html": '<a href="&#106;avascript:alert(6)">entity</a>'}),
    new_output("display_data", data={"text/html": '<a href="jav&#x09;ascript:alert(7)">tab</a>'}),
    new_output("display_data", data={"text/html": '<a href="data:text/html,<script>alert(8)</script>">d</a>'}),
    new_output("display_data", data={"text/html": "<math><mtext><table><mglyph><style><img src=x onerror=alert(9)>"}),
    new_output("display_data", data={"text/html": '<iframe src="/x"></iframe><object data="/y"></object>'
                                                  '<form action="/z"><button>b</button></form>'}),
    new_output("display_data", data={"text/html": '<div style="background:url(/pwned-css)">s</div><img src="/p">'}),
    new_output("display_data", data={"text/markdown": "[m](javascript:alert(10)) <img src=x onerror=alert(11)>"}),
    new_output("display_data", data={"text/latex": "$\\href{javascript:alert(12)}{t}$"}),
    new_output("display_data", data={"application/javascript": "alert(13)", "text/plain": "js"}),
    new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": "x"}}),
    new_output("stream", name='stdout" onmouseover="alert(14)', text="s"),
]
WRITTEN_PAYLOADS = [
    "[click](&#106;avascript:alert(20))",
    '<a href="&#x6A;avascript&#58;alert(21)">entity</a>',
    '<img src=x onerror="alert(22)">',
    '<math><mi xlink:href="javascript:alert(23)" href="javascript:alert(24)">m</mi></math>',
    "$\\href{javascript:alert(25)}{tex}$",
    '<svg><a href="javascript:alert(26)"><text>s</text></a></svg>',
    '<details open ontoggle="alert(27)"><summary>s</summary></details>',
    "<script>alert(28)</script>",
    "![img](javascript:alert(29))",
    "[ref][r]\n\n[r]: javascript:alert(30)",
]


class Page(HTMLParser):
    """Every element of a page with its attributes, and the text of its scripts."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements, self.scripts, self._in_script = [], [], False

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script and data.strip():
            self.scripts.append(data)


def rendered(nb) -> Page:
    """The Formgrader's Manual Grading page of `nb`, parsed."""
    from nbconvert.exporters import HTMLExporter

    html, _ = HTMLExporter(config=formgrader_config()).from_notebook_node(nb, resources={
        "assignment_id": "a", "notebook_id": "n", "submission_id": "x", "index": 0, "total": 1,
        "base_url": "/user/i", "student": "s", "last_name": "", "first_name": "", "notebook_path": "p"})
    page = Page()
    page.feed(html)
    return page


def dangers(page: Page, baseline: Page) -> list:
    """What the page has beyond the template's own (the baseline: an empty notebook's page)."""
    known = {(t, tuple(sorted(a.items()))) for t, a in baseline.elements}
    found = []
    for tag, attrs in page.elements:
        if (tag, tuple(sorted(attrs.items()))) in known:
            continue
        if tag in ("script", "iframe", "object", "embed", "form", "svg", "style", "base", "meta", "link"):
            found.append((tag, attrs))
        for name, value in attrs.items():
            v = (value or "").strip().lower()
            if name.startswith("on") or name in ("srcdoc", "formaction", "xlink:href", "action"):
                found.append((tag, name, value))
            elif name in ("href", "src", "data") and (v.startswith(("javascript:", "vbscript:"))
                                                      or v.startswith("data:") and not v.startswith("data:image/png")
                                                      and not v.startswith("data:image/jpeg")
                                                      or name == "src" and not v.startswith("data:")):
                found.append((tag, name, value))
            elif name == "style" and "url(" in v:
                found.append((tag, name, value))
    found += [s for s in page.scripts if s not in baseline.scripts]
    return found


@pytest.fixture(scope="module")
def baseline():
    return rendered(new_notebook(cells=[new_markdown_cell("text"), new_code_cell("1")]))


def test_no_output_payload_survives_onto_the_formgrader_page(baseline):
    nb = new_notebook(cells=[new_code_cell("x", outputs=[copy.deepcopy(o)]) for o in OUTPUT_PAYLOADS])
    sanitize_notebook(nb)
    nbformat.validate(nb)
    assert dangers(rendered(nb), baseline) == []


def test_without_the_sanitizer_the_payloads_would_reach_the_page(baseline):
    """The check above can fail: nbconvert alone writes them (the red team's width payload)."""
    from nbconvert.exporters import HTMLExporter

    nb = new_notebook(cells=[new_code_cell("x", outputs=[copy.deepcopy(o)]) for o in OUTPUT_PAYLOADS[:1]])
    html, _ = HTMLExporter(template_name="classic").from_notebook_node(nb)
    page = Page()
    page.feed(html)
    assert any(len(d) == 3 and d[1] == "onerror" for d in dangers(page, baseline))


@pytest.mark.parametrize("payload", WRITTEN_PAYLOADS)
def test_no_written_answer_payload_survives_onto_the_formgrader_page(baseline, payload):
    cell = new_markdown_cell("Powers of ten. " + payload)
    cell.metadata["nbgrader"] = {"grade_id": "q_reflection", "solution": True, "grade": True, "points": 1,
                                 "locked": False, "schema_version": 3}
    nb = new_notebook(cells=[cell])
    page = rendered(nb)           # the Formgrader's exporter sanitizes it as it renders
    assert dangers(page, baseline) == []
    sanitize_notebook(nb)         # and what the grader stores is safe on its own
    assert "Powers of ten." in nb.cells[0].source
    assert dangers(rendered(nb), baseline) == []


def test_metadata_names_and_ids_keep_their_grammar(baseline):
    cell = new_markdown_cell("answer")
    cell.metadata["nbgrader"] = {"grade_id": '"><img src=x onerror=alert(1)>', "solution": True, "points": 1}
    cell.metadata["tags"] = ['x" onmouseover="alert(2)', "fine-tag"]
    cell.metadata["anything"] = {"a": "<script>"}
    code = new_code_cell("1")
    nb = new_notebook(cells=[cell, code, new_raw_cell('<img src=x onerror="alert(5)">')])
    # what a hand-edited notebook can hold (nbformat's constructors would refuse it)
    code["execution_count"] = "<img src=x onerror=alert(3)>"
    code["id"] = '"><script>alert(4)</script>'
    nb.metadata.update({"title": "<script>alert(6)</script>",
                        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)<script>"},
                        "language_info": {"name": 'python" onclick="alert(7)'}})
    sanitize_notebook(nb)
    nbformat.validate(nb)
    assert "nbgrader" not in cell.metadata and cell.metadata["tags"] == ["fine-tag"] and "anything" not in cell.metadata
    assert code.execution_count is None and code.id.isalnum()
    assert nb.metadata.kernelspec.display_name == "Python 3 (ipykernel)script" and "title" not in nb.metadata
    assert dangers(rendered(nb), baseline) == []


def test_the_course_s_own_outputs_and_an_honest_answer_look_the_same():
    assert clean_html(HONEST_FIGURE) == HONEST_FIGURE
    table = "<table><tr><th>layer</th><th>×</th></tr><tr><td>conv1</td><td>1</td></tr></table>"
    assert clean_html(table) == "<table><tbody><tr><th>layer</th><th>×</th></tr><tr><td>conv1</td><td>1</td></tr></tbody></table>"
    out = new_output("display_data", data={"image/png": PNG, "text/plain": "fig"},
                     metadata={"image/png": {"width": 200, "height": 100}})
    nb = new_notebook(cells=[new_code_cell("x", outputs=[out]), new_markdown_cell("An *honest* answer: $a/b$.")])
    sanitize_notebook(nb)
    assert nb.cells[0].outputs[0].metadata == {"image/png": {"width": 200, "height": 100}}
    assert nb.cells[0].outputs[0].data == {"image/png": PNG, "text/plain": "fig"}
    assert nb.cells[1].source == "An *honest* answer: $a/b$."       # plain markdown is left as written
    page = rendered(nb)
    img = [a for t, a in page.elements if t == "img" and a.get("src", "").endswith(PNG)]
    assert [(a.get("width"), a.get("height")) for a in img] == [("200", "100")], img
    assert ("math", {"display": "inline"}) in page.elements        # formulas as MathML: no MathJax needed


def test_a_prediction_receipt_is_kept_as_data():
    from course_lib.exercises.predictions import MIME

    out = new_output("display_data", data={MIME: {"events": []}, "text/plain": "Q1 committed"})
    nb = new_notebook(cells=[new_code_cell("x", outputs=[out])])
    sanitize_notebook(nb)
    assert nb.cells[0].outputs[0].data[MIME] == {"events": []}
