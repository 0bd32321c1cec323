"""nbgrader configuration: the course root is this repository.

solutions/<assignment>/<notebook>.ipynb is the single source (instructor version);
`make release` writes the student version to notebooks/<assignment>/<notebook>.ipynb.
Grading run-time data (submitted/, autograded/, feedback/, gradebook.db) is git-ignored.
"""
import os

c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
# The course's id in nbgrader's exchange: roofline, or the one a hub install gave this copy of the
# course (deploy/jupyterhub/setup.sh --course-id writes .autograder/course-id; autograder.locate)
from autograder.locate import course_id_of  # noqa: E402

c.CourseDirectory.course_id = course_id_of(c.CourseDirectory.root)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(c.CourseDirectory.root, "gradebook.db")
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.Execute.timeout = 120
# A submission that deletes a test cell is still graded by the original test: put it back.
c.OverwriteCells.add_missing_cells = True
# nbgrader's own feedback (the formgrader's "Generate feedback" button, `nbgrader generate_feedback`)
# goes through the autograder's scrubbing, exactly as `python -m autograder feedback`: hidden
# tests shown as their verdict, outputs size-capped, ungraded written answers "awaiting
# instructor grading". Only the feedback step's exporter gets the course's template: the
# Formgrader's own HTMLExporter keeps nbgrader's "formgrade" template (never set HTMLExporter.*
# here: every manual-grading page would fail). Without the autograder package installed this
# config fails to load: it must never fall back to nbgrader's pages, which show the hidden tests.
from autograder.outputs.feedback import configure_nbgrader_feedback  # noqa: E402

configure_nbgrader_feedback(c)
# A declared question's check cells (given, form check, hidden test, verify) are not in the
# source notebooks: nbgrader's generate_assignment writes them from the question's declaration
# in course_lib.questions (autograder/authoring/cells.py), as its InstantiateTests does for AUTOTEST.
from autograder.authoring.cells import configure as configure_question_cells  # noqa: E402

configure_question_cells(c)
