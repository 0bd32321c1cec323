"""`collect`: bring students' submissions into submitted/<student>/<assignment>/.

Input, any of:
* a folder laid out SOURCE/<student>/<notebook>.ipynb (or SOURCE/<student>/<assignment>/...,
  nbgrader's own layout), or a zip holding the same folders;
* nbgrader's exchange (`--exchange [ROOT]`): <root>/<course_id>/inbound/<student>+<assignment>+
  <timestamp>+<random>/, the latest submission of each student, with its timestamp.txt (so
  nbgrader's late penalties apply) and submission_secret.txt (`nbgrader release_feedback` needs
  both, and they are kept through grading);
* a Moodle download (folders `Alice Ng_123456_assignsubmission_file_`): the student id is the
  name, lower-cased with underscores (alice_ng), and the name goes into the gradebook;
* a Canvas download (flat `<login>_<userid>_<submissionid>_<file>`): the student id is the
  login; a `late_` marker becomes a timestamp one second after the due date in the gradebook
  (or, without a due date yet, the time of collection), so nbgrader's late penalty applies.

A UTF-8 byte-order mark is removed (nbformat cannot read it) and said so.

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

from .course import COURSE_ID, Course, replace_dir
from .repair import BOM

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")
CANVAS = re.compile(r"^(?P<student>[A-Za-z0-9]+)_(?P<late>late_)?\d+_\d+_(?P<file>.+)$")
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?:file|onlinetext)_?$")
RECORD = ".predictions.jsonl"     # the prediction record beside the notebook (course_lib.predictions)
KEEP = ("timestamp.txt", "submission_secret.txt", RECORD)   # kept as they are: nbgrader's own files, the record
MAX_FILE = 64 * 2**20
MAX_TOTAL = 4 * 2**30
IGNORED = {".DS_Store", "Thumbs.db", "desktop.ini"}


@dataclass
class CollectReport:
    assignment: str
    collected: dict = field(default_factory=dict)      # student -> [notebook, ...]
    problems: list = field(default_factory=list)       # (student, file, message)
    notes: list = field(default_factory=list)          # (student, file, message): collected, but said
    timestamps: dict = field(default_factory=dict)     # student -> timestamp recorded

    def problem(self, student: str, file: str, message: str) -> None:
        self.problems.append((student, file, message))

    def note(self, student: str, file: str, message: str) -> None:
        self.notes.append((student, file, message))

    def format(self) -> str:
        lines = [f"collected {len(self.collected)} submission(s) of {self.assignment}"]
        lines += [f"  note: {s or '-'}: {f + ': ' if f else ''}{m}" for s, f, m in self.notes]
        if self.problems:
            lines.append(f"{len(self.problems)} problem(s), skipped:")
            lines += [f"  {s or '-'}: {f}: {m}" for s, f, m in self.problems]
        return "\n".join(lines)


def moodle_id(folder: str) -> tuple[str, str] | None:
    """'Alice Ng_123456_assignsubmission_file_' -> ('alice_ng', 'Alice Ng')."""
    import unicodedata

    m = MOODLE.match(folder)
    if not m:
        return None
    name = m.group("name").strip()
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "_", ascii_name.lower()).strip("_")
    return (slug or f"moodle_{m.group('id')}"), name


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
                mood = moodle_id(parts[0])
                if mood:
                    yield mood[0], "/".join(parts[1:]), z.read(info), {"name": mood[1]}
                else:
                    yield parts[0], "/".join(parts[1:]), z.read(info), {}
            else:
                m = CANVAS.match(parts[0])
                if not m:
                    report.problem("", info.filename, "not in a student folder and not an LMS file name")
                    continue
                file = re.sub(r"-\d+(\.ipynb)$", r"\1", m.group("file"))   # Canvas resubmission suffix
                yield m.group("student"), file, z.read(info), {"late": bool(m.group("late"))}


def _dir_entries(source: Path, assignment: str, report: CollectReport):
    for entry in sorted(source.iterdir()):
        if entry.name in IGNORED or entry.name.startswith("."):
            continue
        if not entry.is_dir():
            m = CANVAS.match(entry.name)
            if m and entry.is_file() and not entry.is_symlink():
                file = re.sub(r"-\d+(\.ipynb)$", r"\1", m.group("file"))
                yield m.group("student"), file, entry.read_bytes(), {"late": bool(m.group("late"))}
            else:
                report.problem("", entry.name, "not in a student folder")
            continue
        mood = moodle_id(entry.name)
        student, info = (mood[0], {"name": mood[1]}) if mood else (entry.name, {})
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
            yield student, str(f.relative_to(base)), f.read_bytes(), info


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


def _exchange_entries(inbound: Path, assignment: str, report: CollectReport):
    """The latest submission of each student in an nbgrader inbound folder, as nbgrader's own
    collect picks it: <student>+<assignment>+<timestamp>+<random>, newest timestamp wins."""
    from nbgrader.utils import parse_utc

    if not inbound.is_dir():
        raise SystemExit(f"no nbgrader inbound folder at {inbound} (is --exchange right, and the course id "
                         f"{COURSE_ID!r}?)")
    latest: dict[str, tuple] = {}
    for d in sorted(inbound.iterdir()):
        parts = d.name.rsplit("+", 3)
        if len(parts) < 3 or parts[1] != assignment:
            continue
        if not d.is_dir() or d.is_symlink():
            report.problem(parts[0], d.name, "not a submission folder")
            continue
        try:
            when = parse_utc(parts[2])
        except Exception:
            report.problem(parts[0], d.name, "no readable timestamp in the folder name: skipped")
            continue
        if parts[0] not in latest or when > latest[parts[0]][0]:
            latest[parts[0]] = (when, d)
    for student, (when, d) in sorted(latest.items()):
        try:
            import pwd

            owner = pwd.getpwuid(d.stat().st_uid).pw_name
            if owner not in (student, "root") and os.geteuid() == 0:
                report.note(student, d.name, f"the folder belongs to user {owner!r}, not {student!r} (check it)")
        except (KeyError, ImportError):
            pass
        info = {"timestamp": str(when)}
        for f in sorted(d.rglob("*")):
            rel = str(f.relative_to(d))
            if f.is_symlink():
                report.problem(student, rel, "a symbolic link")
            elif f.is_file() and f.name not in IGNORED and ".ipynb_checkpoints" not in f.parts:
                if f.stat().st_size > MAX_FILE:
                    report.problem(student, rel, f"larger than {MAX_FILE // 2**20} MB")
                    continue
                yield student, rel, f.read_bytes(), info


def _due_date(course: Course, assignment: str):
    """The assignment's due date in the course gradebook, or None (no gradebook creates one)."""
    if not course.db.is_file():
        return None
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(course.db_url) as gb:
        try:
            return gb.find_assignment(assignment).duedate
        except MissingEntry:
            return None


def _record_names(course: Course, names: dict) -> None:
    """First and last names (from Moodle folder names) into the gradebook, never overwriting."""
    if not names:
        return
    from nbgrader.api import Gradebook, MissingEntry

    from .release import ensure_tools_on_path

    ensure_tools_on_path()
    with Gradebook(course.db_url) as gb:
        for student, full in names.items():
            first, _, last = full.rpartition(" ")
            try:
                st = gb.find_student(student)
                if st.first_name or st.last_name:
                    continue
            except MissingEntry:
                pass
            gb.update_or_create_student(student, first_name=first or None, last_name=last or None)


def collect(course: Course, assignment: str, source: Path | None = None, *, exchange: Path | str | None = None,
            from_exchange: bool = False) -> CollectReport:
    """Collect from `source` (a folder or a zip), or from nbgrader's exchange (from_exchange,
    root `exchange`, else $AUTOGRADER_EXCHANGE, else the course config's Exchange.root:
    autograder.locate.exchange_root)."""
    import datetime as dt

    report = CollectReport(assignment)
    expected = course.notebooks(assignment)
    if not expected:
        raise SystemExit(f"no notebooks for assignment {assignment!r} in {course.source / assignment}")
    if from_exchange:
        from .locate import exchange_root

        root = exchange_root(str(exchange) if exchange else None, course.root)
        entries = _exchange_entries(root / COURSE_ID / "inbound", assignment, report)
    elif source is None:
        raise SystemExit("name a folder or zip to collect from, or --exchange")
    elif Path(source).is_file() and zipfile.is_zipfile(source):
        entries = _zip_entries(Path(source), report)
    elif Path(source).is_dir():
        entries = _dir_entries(Path(source), assignment, report)
    else:
        raise SystemExit(f"{source} is neither a folder nor a zip file")

    by_student: dict[str, dict] = {}
    spelled: dict[str, set] = {}
    infos: dict[str, dict] = {}
    duplicates: set[str] = set()
    for student, rel, data, info in entries:
        key = student.casefold()
        spelled.setdefault(key, set()).add(student)
        files = by_student.setdefault(key, {})
        seen = infos.setdefault(key, {})
        if info.get("name") and seen.get("name") and seen["name"] != info["name"]:
            duplicates.add(key)
            report.problem(student, rel, f"two students map to the id {student!r} ({seen['name']}, {info['name']}): "
                                         "rename one folder")
            continue
        seen.update(info)
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
        elif name in KEEP and "/" not in rel.strip("/"):
            files[name] = (rel, data)
        else:
            report.problem(student, rel, "not a notebook")

    due = None
    names = {}
    for key in sorted(by_student):
        names_spelled = sorted(spelled[key])
        student = names_spelled[0]
        if len(names_spelled) > 1:
            duplicates.add(key)
            report.problem(student, "", f"the same student twice ({', '.join(names_spelled)})")
        if key in duplicates:
            report.problem(student, "", "duplicate submissions: nothing collected for this student, resolve by hand")
            continue
        if not STUDENT_ID.match(student):
            report.problem(student, "", "not a usable student id (letters, digits, . _ @ + - only)")
            continue
        good = {}
        for target, (rel, data) in sorted(by_student[key].items()):
            if target in KEEP:
                continue
            why = check_notebook(data)
            if why:
                report.problem(student, rel, why)
                continue
            if data.startswith(BOM):
                data = data[len(BOM):]
                report.note(student, rel, "a UTF-8 byte-order mark removed")
            good[target] = data
        if not good:
            report.problem(student, "", "no valid notebook: nothing collected (an earlier copy, if any, is kept)")
            continue
        for nb in expected:
            if nb + ".ipynb" not in good:
                report.problem(student, nb + ".ipynb", "missing (it will score zero)")
        from nbgrader.utils import parse_utc

        if "timestamp.txt" in by_student[key]:
            rel, data = by_student[key]["timestamp.txt"]
            try:
                parse_utc(data.decode().strip())
                good["timestamp.txt"] = data
            except Exception:
                report.problem(student, rel, "not a readable timestamp: ignored")
        elif infos[key].get("timestamp"):
            good["timestamp.txt"] = infos[key]["timestamp"].encode()
        if infos[key].get("late") and "timestamp.txt" not in good:
            due = due if due is not None else (_due_date(course, assignment) or False)
            if due:
                when = due + dt.timedelta(seconds=1)
                report.note(student, "", f"marked late by Canvas: timestamp {when} (1 s after the due date)")
            else:
                when = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
                report.note(student, "", f"marked late by Canvas, and {assignment} has no due date in the gradebook "
                                         f"yet: timestamp {when} (now)")
            good["timestamp.txt"] = f"{when.strftime('%Y-%m-%d %H:%M:%S.%f')} UTC".encode()
        if "submission_secret.txt" in by_student[key]:
            good["submission_secret.txt"] = by_student[key]["submission_secret.txt"][1]
        if RECORD in by_student[key]:      # checked when graded (autograder.predictions)
            good[RECORD] = by_student[key][RECORD][1]
        if "timestamp.txt" in good:
            report.timestamps[student] = good["timestamp.txt"].decode().strip()
        if infos[key].get("name"):
            names[student] = infos[key]["name"]
        _install(course, assignment, student, good)
        report.collected[student] = sorted(k[:-6] for k in good if k.endswith(".ipynb"))
    _record_names(course, names)
    return report


def _install(course: Course, assignment: str, student: str, files: dict) -> None:
    """Write one student's files to submitted/<student>/<assignment>, replacing it whole."""
    course.root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".incoming-", dir=course.root) as tmp:
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0700; the sandboxed kernel (nobody) must enter it
        for name, data in files.items():
            (Path(tmp) / name).write_bytes(data)
        replace_dir(Path(tmp), course.submitted / student / assignment)
