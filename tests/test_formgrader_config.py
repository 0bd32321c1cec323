"""The course's nbgrader_config.py gives nbgrader's feedback step the course's safe template and
leaves the Formgrader's own exporter alone (its manual-grading pages render with nbgrader's
"formgrade" template; a global HTMLExporter.template_name made every one of them HTTP 500)."""
from __future__ import annotations

from pathlib import Path

import nbformat
from nbconvert.exporters import HTMLExporter
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

REPO = Path(__file__).resolve().parent.parent


def course_config() -> Config:
    loader = PyFileConfigLoader("nbgrader_config.py", path=str(REPO))
    return loader.load_config()


def formgrader_config() -> Config:
    """The config the Formgrader's exporter is built with: its own extra config, then the
    course's configuration on top (as nbgrader loads them)."""
    from nbgrader.server_extensions.formgrader.formgrader import FormgradeExtension

    c = Config()
    c.merge(FormgradeExtension.build_extra_config(FormgradeExtension.__new__(FormgradeExtension)))
    c.merge(course_config())
    return c


def test_the_course_config_gives_every_html_exporter_the_sanitizer_and_nothing_else():
    from autograder.outputs.page_safety import SanitizeForPage

    c = course_config()
    # preprocessors only: a global template_name (or template folders) breaks the Formgrader
    assert dict(c.HTMLExporter) == {"preprocessors": [SanitizeForPage]}
    assert c.GenerateFeedback.exporter_class.__name__ == "FeedbackHTMLExporter"


def test_the_formgrader_renders_a_submission_with_its_own_template():
    exporter = HTMLExporter(config=formgrader_config())
    assert exporter.template_name == "formgrade"
    nb = next((REPO / "solutions").glob("01_*/*.ipynb"))
    html, _ = exporter.from_notebook_node(nbformat.read(str(nb), as_version=4), resources={
        "assignment_id": "a", "notebook_id": nb.stem, "submission_id": "x", "index": 0, "total": 1,
        "base_url": "/user/i", "student": "s", "last_name": "", "first_name": "", "notebook_path": "p"})
    # the Formgrader's page: its grading controls and its bootstrap, not the feedback page
    assert "bootstrap.min.css" in html and "formgrade" in html.lower()
    assert "awaiting instructor grading" not in html


def test_generate_feedback_uses_the_course_template():
    from nbgrader.converters import GenerateFeedback

    from autograder.outputs.feedback import TEMPLATES, FeedbackHTMLExporter

    c = formgrader_config()
    # nbgrader's API forces this name before generating feedback (apps/api.py generate_feedback)
    c.HTMLExporter.template_name = "feedback"
    conv = GenerateFeedback(config=c)
    exporter = conv.exporter_class(parent=conv, config=conv.config)
    assert isinstance(exporter, FeedbackHTMLExporter)
    assert exporter.template_name == "feedback"
    assert str(TEMPLATES) in exporter.extra_template_basedirs
    # the course's template (its own note for ungraded written answers), not nbgrader's
    template = exporter.environment.get_template("index.html.j2")
    assert Path(template.filename).is_relative_to(TEMPLATES), template.filename


def test_feedback_names_every_wrong_answer_of_a_question():
    from autograder.outputs.feedback import verdict_message

    v = {"passed": False, "message": "q1_time: too small",
         "per_variable": {"q1_time": {"passed": False, "message": "q1_time: too small"},
                          "q1_regime": {"passed": False, "message": "expected a regime"},
                          "q1_other": {"passed": True, "message": ""}}}
    assert verdict_message(v).splitlines() == ["q1_time: too small", "q1_regime: expected a regime"]
    one = {**v, "per_variable": {**v["per_variable"], "q1_regime": {"passed": True, "message": ""}}}
    assert verdict_message(one) == "q1_time: too small"


def test_feedback_labels_cells_by_question():
    from autograder.outputs.feedback import cell_label

    assert cell_label("hello_q3_correct", "Q3 · When does it turn?") == "Q3 · When does it turn?: correctness check"
    assert cell_label("hello_q3_reflection", "Q3 · When does it turn?") == "Q3 · When does it turn?: written answer"
