"""The feedback page's template (autograder/templates/feedback) rendered by nbconvert from a
notebook made here, without grading: what axe-core found on a late student's page (issue 47) is
checked where it is decided. The whole graded page goes through axe-core in Chromium in
tests/test_accessibility.py."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
from traitlets.config import Config

from autograder.outputs.feedback import TEMPLATES, FeedbackHTMLExporter


def _luminance(hex_colour: str) -> float:
    channels = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _page(late_penalty: float) -> str:
    nb = nbformat.v4.new_notebook()
    long_line = "x = " + " + ".join(["1"] * 200)        # wider than any page: its block scrolls
    c = nbformat.v4.new_code_cell(long_line)
    c.metadata["nbgrader"] = {"grade": True, "grade_id": "t_q1_correct", "solution": False, "locked": True,
                              "points": 2, "score": 2}
    nb.cells = [c, nbformat.v4.new_code_cell("y = 1")]
    config = Config()
    config.FeedbackHTMLExporter.template_name = "feedback"
    config.FeedbackHTMLExporter.extra_template_basedirs = [str(TEMPLATES)]
    # where nbgrader's GenerateFeedback finds the page's bootstrap.min.css
    import nbgrader

    config.HTMLExporter.extra_template_paths = [str(Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
                                                    / "static" / "node_modules" / "bootstrap" / "dist" / "css")]
    resources = {"nbgrader": {"notebook": "nb", "score": 2, "max_score": 4, "late_penalty": late_penalty,
                              "awaiting_points": 0}}
    body, _ = FeedbackHTMLExporter(config=config).from_notebook_node(nb, resources=resources)
    return body


def test_the_late_penalty_line_has_aa_contrast():
    page = _page(0.6)
    assert "Late submission penalty (Score: -0.6)" in page
    colour = re.search(r"li\.late-penalty\s*\{\s*color:\s*(#[0-9a-fA-F]{6})", page).group(1)
    assert _contrast(colour, "#ffffff") >= 4.5, colour


def test_every_code_block_can_be_reached_from_the_keyboard():
    page = _page(0.0)
    blocks = re.findall(r"<pre[^>]*>", page.split('id="notebook"', 1)[1])
    assert len(blocks) == 2 and all('tabindex="0"' in b for b in blocks), blocks
    assert "Late submission penalty" not in page
