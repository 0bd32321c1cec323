"""`collect`: bring students' submissions into submitted/<student>/<assignment>/.

Input, any of:
* a folder laid out SOURCE/<student>/<notebook>.ipynb (or SOURCE/<student>/<assignment>/...,
  nbgrader's own layout), or a zip holding the same folders;
* nbgrader's exchange (`--exchange [ROOT]`): <root>/<course_id>/inbound/<student>+<assignment>+
  <timestamp>+<random>/, the latest submission of each student, with its timestamp.txt (so
  nbgrader's late penalties apply) and submission_secret.txt (`nbgrader release_feedback` needs
  both, and they are kept through grading);
* a Moodle download (folders `Alice Ng_123456_assignsubmission_file_`): the student id is the
  name, lower-cased with underscores (alice_ng), and the name and Moodle's participant id
  (123456) go into the gradebook (lms_user_id). Two participants whose names give one id ("Bob
  Smith!" and "Bob Smith") are told apart by that participant id: the one the gradebook already
  knows under the id keeps it, the other is refused with a message; where the gradebook knows
  neither, both are refused (never one silently replacing the other);
* a Canvas download (flat `<login>_<userid>_<submissionid>_<file>`): the student id is the
  login; a `late_` marker becomes a timestamp one second after the due date in the gradebook
  (or, without a due date yet, the time of collection), so nbgrader's late penalty applies.

Submission times come from the exchange (its folder name and timestamp.txt, written by
nbgrader's submit) or from the LMS's own metadata (Canvas's late_ marker), never from a file in
an upload: a timestamp.txt in a folder or zip is ignored and said so.

An exchange submission must be the student's own: its folder and everything in it owned by the
uid of the student it names (or by root or the grader's own user, who could write anything
anyway). One made by another user (`bob+A+<later time>+x` created by mallory) is refused and
reported, and the student's own latest submission is collected instead. The hub kit makes the
inbound sticky (1733), so no student can remove or rename another's entries either.

A UTF-8 byte-order mark is removed (nbformat cannot read it) and said so.

Every problem is reported and skipped; none stops the batch or touches anyone else's work:
* a file that is not a notebook (any other extension), not valid JSON, or not nbformat 4;
* a notebook the assignment does not have; a notebook the assignment has but the student lacks
  (collected without it: nbgrader scores a missing notebook zero);
* a student id that is not a safe folder name;
* the same student twice (two folders differing only in case, two copies of a notebook): nothing
  is collected for that student, and an earlier collected copy stays as it was;
* unsafe zip entries (absolute paths, '..', oversized files, over-long names, too many entries);
* symbolic links, FIFOs, devices and sockets: never followed or opened (autograder.safefiles).

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
from .safefiles import read_regular, walk

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")
CANVAS = re.compile(r"^(?P<student>[A-Za-z0-9]+)_(?P<late>late_)?\d+_\d+_(?P<file>.+)$")
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?:file|onlinetext)_?$")
RECORD = ".predictions.jsonl"     # the prediction record beside the notebook (course_lib.exercises.predictions)
KEEP = ("timestamp.txt", "submission_secret.txt", RECORD)   # kept as they are: nbgrader's own files, the record
MAX_FILE = 64 * 2**20
MAX_TOTAL = 4 * 2**30
MAX_ENTRIES = 20_000     # files in one LMS zip
MAX_NAME = 512           # characters of a path in a zip or a folder
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


def moodle_id(folder: str) -> tuple[str, str, str] | None:
    """'Alice Ng_123456_assignsubmission_file_' -> ('alice_ng', 'Alice Ng', '123456')."""
    import unicodedata

    m = MOODLE.match(folder)
    if not m:
        return None
    name = m.group("name").strip()
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "_", ascii_name.lower()).strip("_")
    return (slug or f"moodle_{m.group('id')}"), name, m.group("id")


def _zip_entries(path: Path, report: CollectReport):
    """(student, relative file, bytes) from an LMS zip, safely."""
    total = 0
    with zipfile.ZipFile(path) as z:
        infos = [i for i in z.infolist() if not i.is_dir()]
        if len(infos) > MAX_ENTRIES:
            report.problem("", path.name, f"more than {MAX_ENTRIES:,} files in the zip: not read")
            return
        long = [i for i in infos if len(i.filename) > MAX_NAME]
        for i in long:
            report.problem("", i.filename[:80] + "...", f"a name longer than {MAX_NAME} characters")
        infos = [i for i in infos if len(i.filename) <= MAX_NAME]
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
                    yield mood[0], "/".join(parts[1:]), z.read(info), {"name": mood[1], "lms_id": mood[2]}
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
                try:
                    data = read_regular(entry, MAX_FILE)
                except OSError as e:
                    report.problem("", entry.name, str(e))
                    continue
                yield m.group("student"), file, data, {"late": bool(m.group("late"))}
            else:
                report.problem("", entry.name, "not in a student folder")
            continue
        if entry.is_symlink():
            report.problem("", entry.name, "a symbolic link: refused")
            continue
        mood = moodle_id(entry.name)
        student, info = (mood[0], {"name": mood[1], "lms_id": mood[2]}) if mood else (entry.name, {})
        inner = entry / assignment
        base = inner if inner.is_dir() and not inner.is_symlink() else entry
        files, refused = walk(base, MAX_FILE, MAX_TOTAL, skip=IGNORED | {".ipynb_checkpoints"})
        for rel, why in refused:
            report.problem(entry.name, rel, why)
        for rel, data in files:
            yield student, rel, data, info


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
        why = not_owned_by(d, parts[0])
        if why:     # made in someone else's name: refused, and never hides their own latest one
            report.problem(parts[0], d.name, f"{why}: refused (another user may have made it in {parts[0]}'s name; "
                                             f"{parts[0]}'s own latest submission is collected instead)")
            continue
        if parts[0] not in latest or when > latest[parts[0]][0]:
            latest[parts[0]] = (when, d)
    for student, (when, d) in sorted(latest.items()):
        info = {"timestamp": str(when), "exchange": True}
        files, refused = walk(d, MAX_FILE, MAX_TOTAL, skip=IGNORED | {".ipynb_checkpoints"})
        for rel, why in refused:
            report.problem(student, rel, why)
        for rel, data in files:
            yield student, rel, data, info


def _user_name(uid: int) -> str:
    import pwd

    try:
        return f"user {pwd.getpwuid(uid).pw_name!r}"
    except KeyError:
        return f"uid {uid} (no such user)"


def not_owned_by(folder: Path, student: str) -> str | None:
    """Why `folder` (an exchange submission) cannot be `student`'s own, or None: it and
    everything in it must be owned by the student's uid, root, or the grader's own user."""
    import pwd

    trusted = {0, os.geteuid()}
    try:
        mine = pwd.getpwnam(student).pw_uid
    except KeyError:
        mine = None
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in [None] + dirnames + filenames:
            p = dirpath if name is None else os.path.join(dirpath, name)
            if name is None and dirpath != str(folder):
                continue
            try:
                uid = os.lstat(p).st_uid
            except OSError:
                continue
            if uid in trusted or uid == mine:
                continue
            what = "the folder" if p == str(folder) else os.path.relpath(p, folder)
            if mine is None:
                return f"{what} belongs to {_user_name(uid)} and there is no user {student!r} here to own it"
            return f"{what} belongs to {_user_name(uid)}, not to {student!r}"
    return None


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


def _gradebook_lms_ids(course: Course, students) -> dict:
    """{student id: lms_user_id} of those `students` the gradebook knows with an LMS id."""
    if not course.db.is_file():
        return {}
    from nbgrader.api import Gradebook, MissingEntry

    out = {}
    with Gradebook(course.db_url) as gb:
        for s in students:
            try:
                lms = gb.find_student(s).lms_user_id
            except MissingEntry:
                continue
            if lms:
                out[s] = lms
    return out


def _colliding(course: Course, by_student: dict, infos: dict) -> dict:
    """{key: why} for the LMS participants refused because another participant's name gives the
    same student id: the gradebook's owner of that id keeps it; where it knows none, all are
    refused."""
    groups: dict[str, list] = {}
    for key in by_student:
        groups.setdefault(key[0], []).append(key)
    clashes = {sid: keys for sid, keys in groups.items() if len(keys) > 1}
    if not clashes:
        return {}
    known = _gradebook_lms_ids(course, list(clashes))
    out = {}
    for sid, keys in clashes.items():
        keys = sorted(keys, key=lambda k: (len(k[1]), k[1]))

        def who(k):
            return f"{infos[k].get('name') or sid!r} (LMS id {k[1] or 'none'})"
        owner = [k for k in keys if k[1] and k[1] == known.get(sid)]
        for k in keys:
            if owner and k == owner[0]:
                continue
            if owner:
                out[k] = (f"{who(k)} gives the student id {sid!r}, which belongs to {who(owner[0])}: not collected "
                          "(collect it by hand under another id)")
            else:
                out[k] = (f"{', '.join(who(x) for x in keys)} give the same student id {sid!r}: nothing collected for "
                          "them (collect them by hand under distinct ids)")
    return out


def _record_names(course: Course, names: dict) -> None:
    """First and last names and the LMS id (from Moodle folder names) into the gradebook, never
    overwriting."""
    if not names:
        return
    from nbgrader.api import Gradebook, MissingEntry

    from .release import ensure_tools_on_path

    ensure_tools_on_path()
    with Gradebook(course.db_url) as gb:
        for student, (full, lms_id) in names.items():
            first, _, last = full.rpartition(" ")
            new = {}
            try:
                st = gb.find_student(student)
                if not (st.first_name or st.last_name):
                    new.update(first_name=first or None, last_name=last or None)
                if lms_id and not st.lms_user_id:
                    new["lms_user_id"] = lms_id
            except MissingEntry:
                new.update(first_name=first or None, last_name=last or None, lms_user_id=lms_id or None)
            if new:
                gb.update_or_create_student(student, **new)


def collect(course: Course, assignment: str, source: Path | None = None, *, exchange: Path | str | None = None,
            from_exchange: bool = False) -> CollectReport:
    """Collect from `source` (a folder or a zip), or from nbgrader's exchange (from_exchange,
    root `exchange`, else $AUTOGRADER_EXCHANGE, else the course config's Exchange.root:
    autograder.locate.exchange_root)."""
    report = CollectReport(assignment)
    expected = course.notebooks(assignment)
    if not expected:
        raise SystemExit(f"no notebooks for assignment {assignment!r} in {course.source / assignment}")
    entries = _entries_of(course, assignment, source, exchange, from_exchange, report)
    by_student, spelled, infos, duplicates = _by_student(entries, expected, assignment, report)

    for key, why in _colliding(course, by_student, infos).items():
        duplicates.add(key)
        report.problem(sorted(spelled[key])[0], "", why)
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
        good = _valid_notebooks(student, by_student[key], report)
        if not good:
            report.problem(student, "", "no valid notebook: nothing collected (an earlier copy, if any, is kept)")
            continue
        for nb in expected:
            if nb + ".ipynb" not in good:
                report.problem(student, nb + ".ipynb", "missing (it will score zero)")
        due = _submission_time(course, assignment, student, by_student[key], infos[key], good, report, due)
        if "submission_secret.txt" in by_student[key]:
            good["submission_secret.txt"] = by_student[key]["submission_secret.txt"][1]
        if RECORD in by_student[key]:      # checked when graded (autograder.predictions)
            good[RECORD] = by_student[key][RECORD][1]
        if "timestamp.txt" in good:
            report.timestamps[student] = good["timestamp.txt"].decode().strip()
        if infos[key].get("name"):
            names[student] = (infos[key]["name"], infos[key].get("lms_id"))
        _install(course, assignment, student, good)
        report.collected[student] = sorted(k[:-6] for k in good if k.endswith(".ipynb"))
    _record_names(course, names)
    return report


def _entries_of(course: Course, assignment: str, source: Path | None, exchange: Path | str | None,
                from_exchange: bool, report: CollectReport):
    """The (student, path, bytes, info) entries of the exchange, a zip or a folder."""
    if from_exchange:
        from .locate import exchange_root

        root = exchange_root(str(exchange) if exchange else None, course.root)
        return _exchange_entries(root / COURSE_ID / "inbound", assignment, report)
    elif source is None:
        raise SystemExit("name a folder or zip to collect from, or --exchange")
    elif Path(source).is_file() and zipfile.is_zipfile(source):
        return _zip_entries(Path(source), report)
    elif Path(source).is_dir():
        return _dir_entries(Path(source), assignment, report)
    else:
        raise SystemExit(f"{source} is neither a folder nor a zip file")


def _by_student(entries, expected: list, assignment: str, report: CollectReport) -> tuple[dict, dict, dict, set]:
    """The entries per LMS participant, key (student id casefolded, LMS id): ({key: {file name:
    (path, bytes)}}, {key: the ids as spelled}, {key: what the LMS said}, {keys with two copies
    of a notebook})."""
    by_student: dict[str, dict] = {}
    spelled: dict[str, set] = {}
    infos: dict[str, dict] = {}
    duplicates: set[str] = set()
    for student, rel, data, info in entries:
        # one LMS participant is one student: two participants whose names give one id are told
        # apart here, and resolved below (never one replacing the other)
        key = (student.casefold(), info.get("lms_id", ""))
        spelled.setdefault(key, set()).add(student)
        files = by_student.setdefault(key, {})
        seen = infos.setdefault(key, {})
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
    return by_student, spelled, infos, duplicates


def _valid_notebooks(student: str, files: dict, report: CollectReport) -> dict:
    """{notebook file name: bytes} of the student's notebooks that are valid (a byte-order mark
    removed); each invalid one reported."""
    good = {}
    for target, (rel, data) in sorted(files.items()):
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
    return good


def _submission_time(course: Course, assignment: str, student: str, files: dict, info: dict, good: dict,
                     report: CollectReport, due):
    """good["timestamp.txt"]: the exchange's timestamp, the LMS's, or for a submission Canvas
    marked late without one, 1 s after the due date (else now). Returns the due date as looked
    up (None: not yet, False: none), so the gradebook is asked once."""
    import datetime as dt

    from nbgrader.utils import parse_utc

    if "timestamp.txt" in files and not info.get("exchange"):
        report.note(student, files["timestamp.txt"][0],
                    "a timestamp.txt in an upload is not the submission time (that comes from the exchange or "
                    "the LMS's own metadata): ignored")
    elif "timestamp.txt" in files:
        rel, data = files["timestamp.txt"]
        try:
            parse_utc(data.decode().strip())
            good["timestamp.txt"] = data
        except Exception:
            report.problem(student, rel, "not a readable timestamp: ignored")
    if "timestamp.txt" not in good and info.get("timestamp"):
        good["timestamp.txt"] = info["timestamp"].encode()
    if info.get("late") and "timestamp.txt" not in good:
        due = due if due is not None else (_due_date(course, assignment) or False)
        if due:
            when = due + dt.timedelta(seconds=1)
            report.note(student, "", f"marked late by Canvas: timestamp {when} (1 s after the due date)")
        else:
            when = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
            report.note(student, "", f"marked late by Canvas, and {assignment} has no due date in the gradebook "
                                     f"yet: timestamp {when} (now)")
        good["timestamp.txt"] = f"{when.strftime('%Y-%m-%d %H:%M:%S.%f')} UTC".encode()
    return due


def _install(course: Course, assignment: str, student: str, files: dict) -> None:
    """Write one student's files to submitted/<student>/<assignment>, replacing it whole."""
    course.root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".incoming-", dir=course.root) as tmp:
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0700; the sandboxed kernel (nobody) must enter it
        for name, data in files.items():
            (Path(tmp) / name).write_bytes(data)
        replace_dir(Path(tmp), course.submitted / student / assignment)
