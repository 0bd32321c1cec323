"""What `grade` refuses or accepts before it touches any student (issue 47), without grading:
a regrade of one question names the question as the lessons declare it (its cells are generated
from the declaration, not written in solutions/), and a course_lib change that leaves a varying
question without an admissible variant is refused with what to change, where it used to pass
the preflight and fail every student. `export` shows such a change, never a traceback.
"""
from __future__ import annotations

import io

import pytest

from course_lib.questions import get
from course_lib.questions import variants as V

from autograder.authoring import variants
from autograder.course import Course
from autograder.grading import regrade
from autograder.grading.grade import GradingRefused, grade

A = "01_hello_roofline"


@pytest.fixture
def course(tmp_path):
    """The course's own lessons, graded into an empty folder (no submission: nothing to grade)."""
    return Course(root=tmp_path / "course")


@pytest.fixture
def widened(monkeypatch):
    """hello_q1's tolerance widened from 2% to 60%, past the mistake it must tell apart; the
    admissible variants computed again under it, and again after."""
    monkeypatch.setattr(get("hello_q1").specs["q1_intensity"], "rel_tol", 0.6)
    V._admissible.cache_clear()
    yield
    monkeypatch.undo()
    V._admissible.cache_clear()


def test_a_question_regrade_knows_the_generated_cells(course):
    found = regrade.questions(course, A)
    assert {"hello_q1", "hello_q1_correct", "hello_q8"} <= found
    s = grade(course, A, question="hello_q1", sandbox=False, progress=False, stream=io.StringIO())
    assert s.question == "hello_q1" and s.graded == [] and s.failed == {}
    with pytest.raises(GradingRefused, match="no graded question or cell 'hello_q9'"):
        grade(course, A, question="hello_q9", sandbox=False, progress=False, stream=io.StringIO())


def test_a_tolerance_that_leaves_no_admissible_variant_is_refused_before_any_student(course, widened):
    variants.init_secret(course)
    bad = variants.unaskable(course, A)
    assert [u.question for u in bad] == ["hello_q1"]
    u = bad[0]
    assert u.size == 9 and u.declared_in.endswith("course_lib/questions/hello.py")
    assert any("inside 1.5 x 60%" in p for p in u.problems)
    with pytest.raises(GradingRefused) as e:
        grade(course, A, sandbox=False, progress=False, stream=io.StringIO())
    msg = str(e.value)
    assert "no student was" in msg and "hello_q1: none of the 9 variants" in msg and "hello.py" in msg
    assert not course.db.exists() and not course.autograded.exists()      # nothing touched


def test_without_a_course_secret_nothing_is_drawn_and_nothing_refused(course, widened):
    assert variants.unaskable(course, A) == []


def test_the_export_shows_a_question_that_can_no_longer_be_drawn(course, widened):
    from autograder.outputs.gradesheet import _variants

    variants.init_secret(course)
    shown = _variants(course, [A])("ann", A)
    assert shown.startswith("cannot be drawn now: hello_q1: no admissible variant")


def test_a_grading_process_leaves_no_matplotlib_cache_folder_behind(tmp_path):
    """Issue 47: every kernel's home asked for a fresh autograder-mpl-* folder in /tmp, none
    removed. Without a font cache of the grading user's own (an empty MPLCONFIGDIR), one folder
    is built per grading process, shared by its calls, and removed when the process exits."""
    import os
    import subprocess
    import sys

    (tmp_path / "mplconfig").mkdir()
    (tmp_path / "tmp").mkdir()
    code = ("from autograder.sandbox.bwrap import matplotlib_cache\n"
            "a, b = matplotlib_cache(), matplotlib_cache()\n"
            "import os; print(a == b, os.path.isdir(a), a)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "MPLCONFIGDIR": str(tmp_path / "mplconfig"), "TMPDIR": str(tmp_path / "tmp")})
    same, existed, folder = p.stdout.split()
    assert (same, existed) == ("True", "True") and folder.startswith(str(tmp_path / "tmp")), p.stderr
    assert list((tmp_path / "tmp").glob("autograder-mpl-*")) == []
