"""`collect`: bring students' submissions into submitted/<student>/<assignment>/.

Input: a folder laid out SOURCE/<student>/<notebook>.ipynb (or SOURCE/<student>/<assignment>/...,
nbgrader's own layout), or an LMS zip download holding the same folders, or Canvas' flat
`<login>_<userid>_<submissionid>_<file>` names.

Every problem is reported and skipped; none stops the batch or touches anyone else's work:
* a file that is not a notebook (any other extension), not valid JSON, or not nbformat 4;
* a notebook the assignment does not have; a notebook the assignment has but the student lacks
  (collected without it: nbgrader scores a missing notebook zero);
* a student id that is not a safe folder name;
* the same student twice (two folders differing only in case, two copies of a notebook): nothing
  is collected for that student, and an earlier collected copy stays as it was;
* unsafe zip entries (absolute paths, '..', oversized files).

Originals are only read. A student's folder in submitted/ is replaced in one rename, and only
when the new submission holds at least one valid notebook.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .course import Course, replace_dir

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")
CANVAS = re.compile(r"^(?P<student>[A-Za-z0-9]+)_(?:late_)?\d+_\d+_(?P<file>.+)$")
MAX_FILE = 64 * 2**20
MAX_TOTAL = 4 * 2**30
IGNORED = {".DS_Store", "Thumbs.db", "desktop.ini"}


@dataclass
class CollectReport:
    assignment: str
    collected: dict = field(default_factory=dict)      # student -> [notebook, ...]
    problems: list = field(default_factory=list)       # (student, file, message)

    def problem(self, student: str, file: str, message: str) -> None:
        self.problems.append((student, file, message))

    def format(self) -> str:
        lines = [f"collected {len(self.collected)} submission(s) of {self.assignment}"]
        if self.problems:
            lines.append(f"{len(self.problems)} problem(s), skipped:")
            lines += [f"  {s or '-'}: {f}: {m}" for s, f, m in self.problems]
        return "\n".join(lines)


def _zip_entries(path: Path, report: CollectReport):
    """(student, relative file, bytes) from an LMS zip, safely."""
    total = 0
    with zipfile.ZipFile(path) as z:
        infos = [i for i in z.infolist() if not i.is_dir()]
        names = [PurePosixPath(i.filename) for i in infos]
        # a single top folder holding everything (e.g. "submissions/") is not a student
        tops = {n.parts[0] for n in names if len(n.parts) > 1}
        strip_top = len(tops) == 1 and all(len(n.parts) > 2 for n in names if n.parts[0] in tops) \
            and not any(len(n.parts) == 1 for n in names)
        for info, name in zip(infos, names):
            if name.is_absolute() or ".." in name.parts or "\\" in info.filename:
                report.problem("", info.filename, "unsafe path in the zip")
                continue
            parts = name.parts[1:] if strip_top else name.parts
            if not parts or parts[0] == "__MACOSX" or parts[-1] in IGNORED:
                continue
            if info.file_size > MAX_FILE:
                report.problem("", info.filename, f"larger than {MAX_FILE // 2**20} MB")
                continue
            total += info.file_size
            if total > MAX_TOTAL:
                report.problem("", info.filename, "the zip unpacks to more than 4 GB: stopped reading it")
                return
            if len(parts) >= 2:
                yield parts[0], "/".join(parts[1:]), z.read(info)
            else:
                m = CANVAS.match(parts[0])
                if not m:
                    report.problem("", info.filename, "not in a student folder and not an LMS file name")
                    continue
                file = re.sub(r"-\d+(\.ipynb)$", r"\1", m.group("file"))   # Canvas resubmission suffix
                yield m.group("student"), file, z.read(info)


def _dir_entries(source: Path, assignment: str, report: CollectReport):
    for entry in sorted(source.iterdir()):
        if entry.name in IGNORED or entry.name.startswith("."):
            continue
        if not entry.is_dir():
            report.problem("", entry.name, "not in a student folder")
            continue
        base = entry / assignment if (entry / assignment).is_dir() else entry
        for f in sorted(base.rglob("*")):
            if f.is_symlink():
                report.problem(entry.name, str(f.relative_to(base)), "a symbolic link")
                continue
            if not f.is_file() or f.name in IGNORED or ".ipynb_checkpoints" in f.parts:
                continue
            if f.stat().st_size > MAX_FILE:
                report.problem(entry.name, str(f.relative_to(base)), f"larger than {MAX_FILE // 2**20} MB")
                continue
            yield entry.name, str(f.relative_to(base)), f.read_bytes()


def check_notebook(data: bytes) -> str | None:
    """Why these bytes are not a gradable notebook, or None."""
    try:
        nb = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as e:
        return f"not valid JSON ({str(e)[:80]})"
    if not isinstance(nb, dict) or "nbformat" not in nb:
        return "JSON, but not a notebook"
    if nb.get("nbformat") != 4:
        return f"nbformat {nb.get('nbformat')}, expected 4 (save it with Jupyter 4 or later)"
    if not isinstance(nb.get("cells"), list):
        return "a notebook without a list of cells"
    import nbformat

    try:
        nbformat.validate(nbformat.from_dict(nb))
    except Exception as e:
        return f"not a valid notebook: {str(e).splitlines()[0][:120]}"
    return None


def collect(course: Course, assignment: str, source: Path) -> CollectReport:
    source = Path(source)
    report = CollectReport(assignment)
    expected = course.notebooks(assignment)
    if not expected:
        raise SystemExit(f"no notebooks for assignment {assignment!r} in {course.source / assignment}")
    if source.is_file() and zipfile.is_zipfile(source):
        entries = _zip_entries(source, report)
    elif source.is_dir():
        entries = _dir_entries(source, assignment, report)
    else:
        raise SystemExit(f"{source} is neither a folder nor a zip file")

    by_student: dict[str, dict] = {}
    spelled: dict[str, set] = {}
    duplicates: set[str] = set()
    for student, rel, data in entries:
        key = student.casefold()
        spelled.setdefault(key, set()).add(student)
        files = by_student.setdefault(key, {})
        name = PurePosixPath(rel).name
        if rel.endswith(".ipynb"):
            stem = name[:-6]
            match = [e for e in expected if e == stem] or [e for e in expected if e.casefold() == stem.casefold()]
            if not match:
                report.problem(student, rel, f"not a notebook of {assignment} (expected {', '.join(e + '.ipynb' for e in expected)})")
                continue
            target = match[0] + ".ipynb"
            if target in files:
                duplicates.add(key)
                report.problem(student, rel, f"a second copy of {target}")
                continue
            files[target] = (rel, data)
        elif name == "timestamp.txt":
            files["timestamp.txt"] = (rel, data)
        else:
            report.problem(student, rel, "not a notebook")

    for key in sorted(by_student):
        names = sorted(spelled[key])
        student = names[0]
        if len(names) > 1:
            duplicates.add(key)
            report.problem(student, "", f"the same student twice ({', '.join(names)})")
        if key in duplicates:
            report.problem(student, "", "duplicate submissions: nothing collected for this student, resolve by hand")
            continue
        if not STUDENT_ID.match(student):
            report.problem(student, "", "not a usable student id (letters, digits, . _ @ + - only)")
            continue
        good = {}
        for target, (rel, data) in sorted(by_student[key].items()):
            if target == "timestamp.txt":
                continue
            why = check_notebook(data)
            if why:
                report.problem(student, rel, why)
            else:
                good[target] = data
        if not good:
            report.problem(student, "", "no valid notebook: nothing collected (an earlier copy, if any, is kept)")
            continue
        for nb in expected:
            if nb + ".ipynb" not in good:
                report.problem(student, nb + ".ipynb", "missing (it will score zero)")
        if "timestamp.txt" in by_student[key]:
            rel, data = by_student[key]["timestamp.txt"]
            try:
                from nbgrader.utils import parse_utc

                parse_utc(data.decode().strip())
                good["timestamp.txt"] = data
            except Exception:
                report.problem(student, rel, "not a readable timestamp: ignored")
        _install(course, assignment, student, good)
        report.collected[student] = sorted(k[:-6] for k in good if k.endswith(".ipynb"))
    return report


def _install(course: Course, assignment: str, student: str, files: dict) -> None:
    """Write one student's files to submitted/<student>/<assignment>, replacing it whole."""
    course.root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".incoming-", dir=course.root) as tmp:
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0700; the sandboxed kernel (nobody) must enter it
        for name, data in files.items():
            (Path(tmp) / name).write_bytes(data)
        replace_dir(Path(tmp), course.submitted / student / assignment)
