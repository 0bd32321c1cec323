"""A tiny course for the autograder's tests (fast kernels), shared by the test modules.

* t1 (one.ipynb): `answer` must be 42 -- a visible form test (1), a hidden test (2), a test cell
  that warns on stderr and passes (1), an explore cell.
* t2 (first.ipynb, second.ipynb): the same notebook twice.
* t3 (units.ipynb): course_lib's own checks -- Q1 a time and a regime (form 1, hidden 2, one
  hidden test reading both answers), Q2 a byte count whose hidden test (2) labels the GB/GiB
  slip "gib-vs-gb", and a written answer graded by hand (1).

Grading is sandboxed where bubblewrap works; elsewhere the tests grade with --no-sandbox and the
ones that need the sandbox skip, saying why.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.sandbox.bwrap import probe
from course_lib.exercises.question_ids import cell_id

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
SANDBOX, WHY_NOT = probe()
#: how the tests grade: sandboxed where bubblewrap works, else explicitly without (--no-sandbox)
SANDBOX_ARG = None if SANDBOX else False
NO_SANDBOX_FLAG = [] if SANDBOX else ["--no-sandbox"]
needs_sandbox = pytest.mark.skipif(not SANDBOX, reason=f"no working bubblewrap here: {WHY_NOT}")
FAST = ["--timeout", "10", "--notebook-timeout", "60", "--memory", "2048", "-q"]


def cell(kind, source, grade_id=None, *, grade=False, solution=False, locked=False, points=None):
    c = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
    if grade_id:
        c.id = grade_id.replace("_", "-")
        m = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
             "solution": solution, "task": False}
        if points is not None:
            m["points"] = points
        c.metadata["nbgrader"] = m
    return c


HIDDEN = ("# Checks the answer (hidden test).\n### BEGIN HIDDEN TESTS\n"
          "_secret_truth_value = 6 * 7    # SECRET-HIDDEN-LINE\n"
          "assert answer == _secret_truth_value, \"answer is not the right number\"\n"
          "### END HIDDEN TESTS")


def _notebook(cells) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
                   "language_info": {"name": "python"}}
    nb.cells = cells
    return nb


def tiny_notebook(prefix: str) -> nbformat.NotebookNode:
    return _notebook([
        cell("markdown", "# Tiny\n### Q1 · The answer (3 points)"),
        cell("code", "# answer: a number\n### BEGIN SOLUTION\nanswer = 42\n### END SOLUTION",
             f"{prefix}_q1_answer", solution=True),
        cell("code", "# Checks the form (visible).\nassert isinstance(answer, (int, float))",
             f"{prefix}_q1_form", grade=True, locked=True, points=1),
        cell("code", HIDDEN, f"{prefix}_q1_correct", grade=True, locked=True, points=2),
        cell("code", "# A test cell that warns on stderr before passing (visible).\n"
                     "import warnings, numpy\nwarnings.warn('old API', DeprecationWarning)\n"
                     "warnings.warn('careful', UserWarning)\nnumpy.float64(1.0) / 0.0\nassert True",
             f"{prefix}_warns", grade=True, locked=True, points=1),
        cell("code", "# explore here\n"),
    ])


UNITS_Q1 = ("# q1_time: the step's time (a Quantity); q1_regime: 'memory-bound' or 'compute-bound'\n"
            "### BEGIN SOLUTION\nfrom course_lib import Q_\nq1_time = Q_(7.36, 'ms')\nq1_regime = 'memory-bound'\n"
            "### END SOLUTION")
UNITS_Q2 = "# q2_bytes: the weights' size (a Quantity)\n### BEGIN SOLUTION\nq2_bytes = Q_(16, 'GB')\n### END SOLUTION"
UNITS_HIDDEN_1 = ("# Checks q1_time and q1_regime against course_lib (hidden test).\n### BEGIN HIDDEN TESTS\n"
                  "from course_lib import Q_\nfrom course_lib.exercises.checks import check_number, check_regime\n"
                  "check_number(q1_time, Q_(7.36, 'ms'), rel_tol=0.02)   # HIDDEN-Q1-TIME\n"
                  "check_regime(q1_regime, 'memory-bound')   # HIDDEN-Q1-REGIME\n### END HIDDEN TESTS")
UNITS_HIDDEN_2 = ("# Checks q2_bytes, naming the GB/GiB slip (hidden test).\n### BEGIN HIDDEN TESTS\n"
                  "from course_lib import Q_\nfrom course_lib.exercises.checks import check_number\n"
                  "_ratio = Q_(q2_bytes).m_as('GB') / 16 if hasattr(q2_bytes, 'm_as') else float(q2_bytes) / 16e9\n"
                  "if abs(_ratio - 1.073741824) < 0.005:   # HIDDEN-Q2-GIB\n"
                  "    _slip = AssertionError('GB (10^9 bytes) or GiB (2^30 bytes)?')\n"
                  "    _slip.label = 'gib-vs-gb'\n    raise _slip\n"
                  "check_number(q2_bytes, Q_(16, 'GB'), rel_tol=0.01)\n### END HIDDEN TESTS")


def units_notebook() -> nbformat.NotebookNode:
    p = "t3units"
    return _notebook([
        cell("markdown", "# Units\n### Q1 · A time and a regime (3 points)"),
        cell("code", UNITS_Q1, f"{p}_q1_answer", solution=True),
        cell("code", "# Checks the form of q1_time (visible).\nfrom course_lib.exercises.checks import check_form_number\n"
                     "check_form_number(q1_time, 'ms')", f"{p}_q1_form", grade=True, locked=True, points=1),
        cell("code", UNITS_HIDDEN_1, f"{p}_q1_correct", grade=True, locked=True, points=2),
        cell("markdown", "### Q2 · Bytes (3 points)"),
        cell("code", UNITS_Q2, f"{p}_q2_answer", solution=True),
        cell("code", UNITS_HIDDEN_2, f"{p}_q2_correct", grade=True, locked=True, points=2),
        cell("markdown", "Why GB and not GiB? (1 point)"),
        cell("markdown", "### BEGIN SOLUTION\nVendors count bytes in powers of ten.\n### END SOLUTION",
             f"{p}_q2_reflection", grade=True, solution=True, points=1),
        cell("code", "# explore here\n"),
    ])


def make_course(base: Path) -> Course:
    """t1, t2 and t3 in base/source, released into base/release."""
    from autograder.authoring.release import generate

    src = base / "source"
    for a, nbs in (("t1", ["one"]), ("t2", ["first", "second"])):
        (src / a).mkdir(parents=True)
        for name in nbs:
            nbformat.write(tiny_notebook(f"{a}{name}"), str(src / a / f"{name}.ipynb"))
    (src / "t3").mkdir(parents=True)
    nbformat.write(units_notebook(), str(src / "t3" / "units.ipynb"))
    generate(dest=base / "release", source=src)
    return Course(root=base / "course", source=src, release=base / "release")


def student_nb(course, a, nb, answer="answer = 42", explore=None, edit=None, answers=None) -> bytes:
    """The release of a/nb with its answer cell(s) filled in: `answer` for every *_answer cell,
    or `answers` {grade_id suffix: source}; `explore` replaces the explore cell."""
    book = nbformat.read(str(course.release / a / f"{nb}.ipynb"), as_version=4)
    for c in book.cells:
        gid = cell_id(c)
        if answers is not None:
            for suffix, src in answers.items():
                if gid.endswith(suffix):
                    c.source = src
        elif gid.endswith("_answer"):
            c.source = answer
        if explore is not None and c.source.startswith("# explore"):
            c.source = explore
        if edit and gid.endswith(edit[0]):
            c.source = edit[1]
    return nbformat.writes(book).encode()


def write_class(dest: Path, course, a, students: dict) -> Path:
    for s, files in students.items():
        (dest / s).mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (dest / s / name).write_bytes(data)
    return dest


def run_cli(*args, env=None, check=True, cwd=REPO, timeout=600):
    """`python -m autograder ARGS`: in this process (nbgrader's import paid once), or as a child
    process where `env` or `cwd` must differ from this process's."""
    if env is None and Path(cwd).resolve() == Path.cwd().resolve():
        p = _cli_in_process([str(a) for a in args])
    else:
        p = subprocess.run([PY, "-m", "autograder", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                           env={**os.environ, **(env or {})}, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"exit {p.returncode}\n{p.stdout}\n{p.stderr[-3000:]}")
    return p


def _cli_in_process(argv: list[str]) -> subprocess.CompletedProcess:
    """autograder.cli.main(argv) with its stdout, stderr and the autograder log captured, its exit
    status as a child process's would be."""
    import contextlib
    import io
    import logging

    from autograder.cli import main

    out, err = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.WARNING)
    logger = logging.getLogger("autograder")
    logger.addHandler(handler)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
                if e.code is not None and not isinstance(e.code, int):
                    print(e.code, file=sys.stderr)
    finally:
        logger.removeHandler(handler)
    return subprocess.CompletedProcess(["autograder", *argv], code or 0, out.getvalue(), err.getvalue())
