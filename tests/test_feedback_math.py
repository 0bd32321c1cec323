"""Feedback pages typeset formulas as MathML when they are generated (no MathJax, no script), and
math a student typed comes out as inert text or plain MathML, never as markup of its own."""
from __future__ import annotations

import html
import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from traitlets.config import Config

from autograder.outputs.feedback import FeedbackHTMLExporter, SafeFeedback, configure_nbgrader_feedback
from autograder.outputs.mathml import tex_to_html

HOSTILE = [r"$<script>alert(1)</script>$", r"$\href{javascript:alert(2)}{x}$",
           r"$$\text{<img src=x onerror=alert(3)>}$$", r"$\style{background:url(javascript:alert(4))}{y}$"]


def exporter() -> FeedbackHTMLExporter:
    """The exporter nbgrader's generate_feedback builds with the course's configuration."""
    from nbgrader.converters import GenerateFeedback

    c = Config()
    configure_nbgrader_feedback(c)
    conv = GenerateFeedback(config=c)
    ex = conv.exporter_class(parent=conv, config=conv.config)
    assert isinstance(ex, FeedbackHTMLExporter)
    return ex


def page(cells) -> str:
    nb = new_notebook(cells=cells)
    resources = {"nbgrader": {"notebook": "t", "score": 1, "max_score": 2, "late_penalty": 0}}
    nb, resources = SafeFeedback().preprocess(nb, resources)
    out, _ = exporter().from_notebook_node(nb, resources=resources)
    return out


def maths(text: str) -> list[str]:
    return re.findall(r"<math\b.*?</math>", text, re.S)


def assert_inert(text: str) -> None:
    assert "<script" not in text.lower()
    assert not re.search(r"<[^>]*\son[a-z]+\s*=", text, re.I), re.findall(r"<[^>]*\son[a-z]+\s*=[^>]*>", text, re.I)
    assert not re.search(r"<[^>]*(href|src|style)\s*=\s*[\"']?[^>]*javascript:", text, re.I)
    for m in maths(text):
        tags = set(re.findall(r"<([a-zA-Z][\w:-]*)", m))
        assert not tags & {"script", "img", "a", "b", "iframe", "style", "svg", "foreignObject"}, tags
        assert not re.search(r"\s(href|src|style|on\w+)\s*=", m, re.I), m


def test_formulas_are_mathml_and_the_page_loads_no_script():
    out = page([new_markdown_cell(r"The ridge is $I^* = \frac{P}{B}$ and $$t = \max(F/P, Q/B)$$."),
                new_code_cell("x", outputs=[new_output("display_data", data={
                    "text/latex": r"$$\sqrt{2}$$", "text/plain": "<IPython.core.display.Math object>"})])])
    found = maths(out)
    assert len(found) == 3, found
    assert "<mfrac>" in found[0] and 'display="inline"' in found[0]
    assert 'display="block"' in found[1] and "<mo>max</mo>" in found[1]
    assert "<msqrt>" in found[2]
    assert "mathjax" not in out.lower() and "<script" not in out.lower()
    meta = re.search(r'<meta[^>]*http-equiv="Content-Security-Policy"[^>]*>', out).group(0)
    csp = re.search(r'content="([^"]*)"', meta).group(1)
    assert "script-src 'none'" in csp and "http" not in csp and "unsafe-eval" not in csp


@pytest.mark.parametrize("tex", HOSTILE)
def test_hostile_math_in_a_written_answer_stays_text(tex):
    """Through the whole feedback path (the grader's markdown sanitizer, then the renderer)."""
    out = page([new_markdown_cell(f"My answer: {tex} done")])
    assert_inert(out)
    assert "done" in out


@pytest.mark.parametrize("tex", HOSTILE)
def test_the_math_renderer_alone_escapes_hostile_math(tex):
    """The renderer is a defence of its own: the sanitizer that runs before it is not relied on."""
    out = exporter().markdown2html({}, f"before {tex} after")
    assert_inert(out)
    assert "before" in out and "after" in out
    visible = html.unescape(re.sub(r"<[^>]+>", "", out))
    if "<script>" in tex:     # the student's text is shown, as characters
        assert "script" in visible and "alert(1)" in visible


def test_the_script_formula_is_drawn_as_characters():
    got = tex_to_html("<script>alert(1)</script>")
    assert got.startswith("<math") and "<mo>&lt;</mo>" in got and "<script" not in got


def test_href_is_dropped_and_the_formula_kept():
    got = tex_to_html(r"\href{javascript:alert(2)}{x}")
    assert "href" not in got and "javascript" not in got and "<mi>x</mi>" in got


def test_tex_that_cannot_be_converted_is_shown_escaped():
    assert tex_to_html(r"\frac{1}{") == '<code class="tex">$\\frac{1}{$</code>'
    # latex2mathml copies \text's argument into the MathML unescaped: rejected, shown as TeX
    got = tex_to_html(r"\text{<b>hi</b>}", display=True)
    assert got == '<code class="tex">$$\\text{&lt;b&gt;hi&lt;/b&gt;}$$</code>'
    assert tex_to_html("x" * 5000).startswith('<code class="tex">')
    assert tex_to_html("{" * 3000 + "x" + "}" * 3000).startswith('<code class="tex">')     # too deep
    entity = tex_to_html(r'\text{<!DOCTYPE x [<!ENTITY a "aaaa">]>&a;}')
    assert entity.startswith('<code class="tex">') and "<!" not in entity


def test_every_formula_of_the_lessons_converts():
    """No lesson formula falls back to TeX on a feedback page."""
    from pathlib import Path

    ex = exporter()
    count = 0
    for path in sorted((Path(__file__).resolve().parent.parent / "solutions").glob("*/*.ipynb")):
        for cell in nbformat.read(str(path), as_version=4).cells:
            if cell.cell_type == "markdown":
                out = ex.markdown2html({"cell": cell}, cell.source)
                assert '<code class="tex">' not in out, (path.name, re.findall(r'<code class="tex">.*?</code>', out))
                count += len(maths(out))
    assert count > 0
