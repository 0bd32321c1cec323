"""nbgrader configuration: the course root is this repository.

solutions/<assignment>/<notebook>.ipynb is the single source (instructor version);
`make release` writes the student version to notebooks/<assignment>/<notebook>.ipynb.
Grading run-time data (submitted/, autograded/, feedback/, gradebook.db) is git-ignored.
"""
import os

c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = "roofline"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(c.CourseDirectory.root, "gradebook.db")
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.Execute.timeout = 120
# A submission that deletes a test cell is still graded by the original test: put it back.
c.OverwriteCells.add_missing_cells = True
