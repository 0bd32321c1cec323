"""Where a course's files live, and the nbgrader pieces every command shares.

By default the course is this repository, laid out as nbgrader_config.py says: the sources in
solutions/, the student release in notebooks/, and the grading data (submitted/, autograded/,
feedback/, gradebook.db, reports/) at the root. `--root` moves the grading data elsewhere
(tests and the benchmark grade in a temporary directory) while the sources stay in solutions/.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from course_lib.exercises.question_ids import metadata, question_of, role_of

from autograder.authoring.release import (HEADER_FILE, REPO, RELEASE, SOURCE, assignments, insert_header,
                                          nbgrader_config)
from autograder.cell_code import HIDDEN_BEGIN, assigned_names, used_names
from autograder.gradebook import open_gradebook, prepare

from autograder.locate import DEFAULT_COURSE_ID

#: the course id of a course whose folder names none (autograder.locate.course_id_of)
COURSE_ID = DEFAULT_COURSE_ID


@dataclass
class Course:
    root: Path = REPO
    source: Path = SOURCE
    release: Path = RELEASE
    #: its id in nbgrader's exchange (the course folder's .autograder/course-id, autograder.locate)
    course_id: str = COURSE_ID

    def __post_init__(self):
        self.root, self.source, self.release = (Path(p).resolve() for p in (self.root, self.source, self.release))

    # grading data
    @property
    def db(self) -> Path:
        return self.root / "gradebook.db"

    @property
    def db_url(self) -> str:
        return "sqlite:///" + str(self.db)

    @property
    def submitted(self) -> Path:
        return self.root / "submitted"

    @property
    def autograded(self) -> Path:
        return self.root / "autograded"

    @property
    def feedback(self) -> Path:
        return self.root / "feedback"

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def state(self) -> Path:
        """The autograder's own bookkeeping (fingerprints, logs); a dot-folder nbgrader ignores."""
        return self.autograded / ".autograder"

    def gradebook(self):
        """The course's nbgrader gradebook, created if new (autograder.gradebook): `with
        course.gradebook() as gb: ...`. The one way a command opens it."""
        return open_gradebook(self.db_url)

    def assignments(self) -> list[str]:
        return assignments(self.source)

    def notebooks(self, assignment: str) -> list[str]:
        """Notebook names (without .ipynb) of an assignment, from its source folder."""
        return sorted(p.stem for p in (self.source / assignment).glob("*.ipynb"))

    def user_config(self):
        """The course's own nbgrader_config.py (late-penalty plugins and the like), if any, and its
        late policy (autograder.grading.late); the paths it sets are replaced by ours."""
        from traitlets.config import Config
        from traitlets.config.loader import PyFileConfigLoader

        from autograder.grading import late

        path = self.root / "nbgrader_config.py"
        c = PyFileConfigLoader(path.name, str(path.parent)).load_config() if path.is_file() else Config()
        late.configure(c, self.root)     # the course's late policy (late_policy.json), if any
        return c

    def config(self, release: Path | None = None):
        """nbgrader Config for this course (absolute source / release folders)."""
        c = self.user_config()
        c.merge(nbgrader_config(self.root, source=str(self.source), release=str(release or self.release), db=self.db))
        c.CourseDirectory.course_id = self.course_id
        c.CourseDirectory.submitted_directory = "submitted"
        c.CourseDirectory.autograded_directory = "autograded"
        c.CourseDirectory.feedback_directory = "feedback"
        # the nbgrader exchange is not used for grading; point it at an empty folder of ours
        (self.state / "exchange").mkdir(parents=True, exist_ok=True)
        c.Exchange.root = str(self.state / "exchange")
        return c

    def students(self, assignment: str) -> list[str]:
        """Students with a submission of `assignment` in submitted/."""
        if not self.submitted.is_dir():
            return []
        return sorted(p.name for p in self.submitted.iterdir()
                      if p.is_dir() and not p.name.startswith(".") and (p / assignment).is_dir())


def ensure_assignment(course: Course, assignment: str, release: Path | None = None) -> None:
    """Put the assignment (its notebooks, grade cells, hidden tests) into the gradebook, creating
    the gradebook if needed: nbgrader generate_assignment into `release` (the student version the
    gradebook matches, <release>/<assignment>/) or a throw-away folder."""
    from nbgrader.apps import NbGraderAPI

    if not (course.source / assignment).is_dir():
        raise SystemExit(f"no assignment {assignment!r} in {course.source}")
    course.root.mkdir(parents=True, exist_ok=True)
    prepare(course.db_url)                 # nbgrader's generate_assignment opens it
    with tempfile.TemporaryDirectory(prefix="autograder-release-") as tmp:
        api = NbGraderAPI(config=course.config(release=Path(release or tmp)))
        result = api.generate_assignment(assignment, force=True, create=True)
        if not result["success"]:
            raise RuntimeError(f"nbgrader generate_assignment {assignment} failed:\n"
                               f"{result.get('log', '')}\n{result.get('error', '')}")
        if release:          # the student version exactly as released: the shared header in place
            header = course.source / HEADER_FILE
            for nb in (Path(release) / assignment).glob("*.ipynb"):
                insert_header(nb, header.read_text() if header.is_file() else None)


def template_gradebook(course: Course, dest: Path) -> Path:
    """A copy of the gradebook without any student data: what each parallel worker starts from.
    (Assignments keep their due dates, so late penalties are computed as nbgrader would.)"""
    src = sqlite3.connect(str(course.db))
    out = sqlite3.connect(str(dest))
    with out:
        src.backup(out)
    src.close()
    with out:
        for table in ("grade", "comment", "submitted_notebook", "submitted_assignment", "student"):
            out.execute(f"DELETE FROM {table}")
    out.execute("VACUUM")
    out.close()
    return dest


def source_extras(course: Course, assignment: str, dest: Path) -> Path:
    """The assignment's non-notebook source files (data files...), which nbgrader copies into
    every autograded submission. Notebooks (the solutions) are left out, and so is a prediction
    record left by running a solution in place."""
    src = course.source / assignment
    out = dest / assignment
    out.mkdir(parents=True, exist_ok=True)
    for p in src.rglob("*"):
        rel = p.relative_to(src)
        if p.is_file() and p.suffix != ".ipynb" and ".ipynb_checkpoints" not in rel.parts \
                and "__pycache__" not in rel.parts and p.name != ".predictions.jsonl":
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, out / rel)
    return out


def tree_hash(path: Path) -> str:
    """sha256 over the relative paths and contents of the files under `path`."""
    h = hashlib.sha256()
    if path.is_file():
        h.update(path.read_bytes())
        return h.hexdigest()
    for p in sorted(path.rglob("*")):
        if p.is_symlink():      # never followed (a link in submitted/ is refused when graded)
            h.update(str(p.relative_to(path)).encode() + b"\0->" + os.readlink(p).encode() + b"\0")
        elif p.is_file() and ".ipynb_checkpoints" not in p.parts:
            h.update(str(p.relative_to(path)).encode() + b"\0")
            h.update(p.read_bytes() + b"\0")
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------
# The structure of a source notebook: answer cells, their variables, their tests
# ---------------------------------------------------------------------------------------------
_nbgrader = metadata       # a cell's nbgrader metadata (course_lib.exercises.question_ids)


@dataclass
class AnswerCell:
    notebook: str
    grade_id: str
    question: str | None       # e.g. wall_q1
    title: str                 # the "### Q1 · ..." heading above it
    variables: list            # the answer variables the tests read (no helpers, no reasoning)
    tests: list                # grade_ids of the question's test cells
    hidden_tests: list         # those with hidden tests (correctness)

    @property
    def kind(self) -> str:
        return role_of(self.grade_id)   # prediction / answer


def answer_cells(notebook_path: Path) -> list[AnswerCell]:
    from autograder.authoring.cells import read_source

    nb = read_source(notebook_path)
    name = notebook_path.stem
    tests: dict[str, list] = {}
    hidden: dict[str, list] = {}
    used: dict[str, set] = {}
    for cell in nb.cells:
        m = _nbgrader(cell)
        if cell.cell_type == "code" and m.get("grade") and not m.get("solution"):
            q = question_of(m.get("grade_id"))
            tests.setdefault(q, []).append(m["grade_id"])
            used.setdefault(q, set()).update(used_names(cell.source))
            if HIDDEN_BEGIN in cell.source:
                hidden.setdefault(q, []).append(m["grade_id"])
    out, title = [], ""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("#") and re.search(r"\bQ\d+\b", line):
                    title = re.sub(r"\s*\(\d+ points?\)\s*$", "", line.lstrip("#").strip())
            continue
        m = _nbgrader(cell)
        if cell.cell_type != "code" or not m.get("solution") or m.get("grade"):
            continue
        q = question_of(m.get("grade_id"))
        names = [n for n in assigned_names(cell.source)
                 if n in used.get(q, set()) and not n.endswith(("_reasoning", "_reason", "_explanation"))]
        out.append(AnswerCell(name, m["grade_id"], q, title, names, tests.get(q, []), hidden.get(q, [])))
    return out


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover
        return max(1, os.cpu_count() or 1)


def replace_dir(src: Path, dest: Path) -> None:
    """Put `src` at `dest` (replacing it) with renames, so dest is never half-written."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    incoming = dest.parent / f".{dest.name}.incoming"
    old = dest.parent / f".{dest.name}.old"
    for p in (incoming, old):
        if p.exists():
            shutil.rmtree(p)
    shutil.copytree(src, incoming)
    if dest.exists():
        os.replace(dest, old)
    os.replace(incoming, dest)
    if old.exists():
        shutil.rmtree(old)
