"""`collect`: bring students' submissions into submitted/<student>/<assignment>/.

Input, any of:
* a folder laid out SOURCE/<student>/<notebook>.ipynb (or SOURCE/<student>/<assignment>/...,
  nbgrader's own layout), or a zip holding the same folders;
* nbgrader's exchange (`--exchange [ROOT]`): <root>/<course_id>/inbound/<student>+<assignment>+
  <timestamp>+<random>/, the latest submission of each student, with its timestamp.txt (so
  nbgrader's late penalties apply) and submission_secret.txt (`nbgrader release_feedback` needs
  both, and they are kept through grading);
* a Moodle download (folders `Alice Ng_123456_assignsubmission_file_`): the student id is the
  name, lower-cased with underscores and accents dropped (alice_ng), and the name and Moodle's
  participant id (123456) go into the gradebook (lms_user_id);
* a Canvas download (flat `<login>_<userid>_<submissionid>_<file>`): the student id is the
  login, and Canvas's user id goes into the gradebook (lms_user_id); a `late_` marker becomes a
  timestamp one second after the due date in the gradebook (or, without a due date yet, the time
  of collection), so nbgrader's late penalty applies.

Who an LMS participant is, the LMS says: its participant (user) id, never the name. A participant
the gradebook knows by that id is collected under the student id it has there, whatever the LMS
now calls them ("Jose Ng" renamed "José Ng" or "Joseph Ng"). Two participants with different
LMS ids whose names give one student id, in any case ("José Ng" and "Jose Ng", "Ann Lee" and
"ann lee", Canvas logins "JDoe" and "jdoe"), are never one student, in one download or across
collects: a student the course already has under that id (in the gradebook with another LMS id,
or under the id but for case, in the gradebook or in submitted/) keeps it and their work, and
the newcomer is refused; within one download, where the course knows none of them by its LMS
id, all of them are refused. Each refusal names both participants and both ids. One LMS id
under two names in one download is refused too. A student the gradebook has without an LMS id
takes the first participant collected under their id.

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
* a student id that is not a safe folder name; a participant refused as above; a Moodle folder
  without its participant id, a file neither in a student folder nor named as Canvas names it;
* the same student twice (two folders differing only in case, two copies of a notebook): nothing
  is collected for that student, and an earlier collected copy stays as it was;
* unsafe zip entries (absolute paths, '..', oversized files, over-long names, too many entries);
* symbolic links, FIFOs, devices and sockets: never followed or opened (autograder.intake.safefiles).

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

from autograder.course import COURSE_ID, Course, replace_dir
from autograder.intake.repair import BOM
from autograder.intake.safefiles import read_regular, walk
from course_hub.names import STUDENT_ID

CANVAS = re.compile(r"^(?P<student>[A-Za-z0-9]+)_(?P<late>late_)?(?P<user>\d{1,20})_\d{1,20}_(?P<file>.+)$")
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d{1,20})_assignsubmission_(?:file|onlinetext)_?$")
MOODLE_LIKE = re.compile(r"_assignsubmission_(?:file|onlinetext)_?$")
MOODLE_FORM = "'<full name>_<participant id>_assignsubmission_file_'"
CANVAS_FORM = "'<login>_<user id>_<submission id>_<file>'"
NOT_LMS = (f"not in a student folder and not an LMS file name (expected <student>/<notebook>.ipynb, Moodle's "
           f"{MOODLE_FORM[:-1]}/<file>' or Canvas's {CANVAS_FORM})")
SOURCES = ("expected a folder or a zip of student folders (<student>/<notebook>.ipynb), of a Moodle download "
           f"({MOODLE_FORM[1:-1]}/ folders) or of a Canvas download ({CANVAS_FORM[1:-1]} files); or --exchange")
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


def _canvas(m: re.Match) -> tuple[str, str, dict]:
    """(student, file, info) of a Canvas file name matched by CANVAS."""
    file = re.sub(r"-\d+(\.ipynb)$", r"\1", m.group("file"))   # Canvas resubmission suffix
    return m.group("student"), file, {"late": bool(m.group("late")), "lms_id": m.group("user")}


def _not_moodle(folder: str, report: CollectReport, said: set) -> bool:
    """Whether `folder` looks like a Moodle folder but lacks the participant id (said once)."""
    if MOODLE.match(folder) or not MOODLE_LIKE.search(folder):
        return False
    if folder not in said:
        said.add(folder)
        report.problem("", folder, f"a Moodle folder without its participant id (expected {MOODLE_FORM}): "
                                   "not collected")
    return True


def _zip_entries(path: Path, report: CollectReport):
    """(student, relative file, bytes, info) from an LMS zip, safely."""
    total = 0
    said: set = set()
    try:
        z = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise SystemExit(f"{path} is not a readable zip file ({e}); {SOURCES}")
    with z:
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
                if _not_moodle(parts[0], report, said):
                    continue
                mood = moodle_id(parts[0])
                student, rel, what = (mood[0], "/".join(parts[1:]), {"name": mood[1], "lms_id": mood[2]}) if mood \
                    else (parts[0], "/".join(parts[1:]), {})
            else:
                m = CANVAS.match(parts[0])
                if not m:
                    report.problem("", info.filename, NOT_LMS)
                    continue
                student, rel, what = _canvas(m)
            try:
                data = z.read(info)
            except (zipfile.BadZipFile, RuntimeError, NotImplementedError, EOFError, OSError, ValueError) as e:
                report.problem("", info.filename, f"cannot be read from the zip ({str(e)[:120]}): skipped")
                continue
            yield student, rel, data, what


def _dir_entries(source: Path, assignment: str, report: CollectReport):
    for entry in sorted(source.iterdir()):
        if entry.name in IGNORED or entry.name.startswith("."):
            continue
        if not entry.is_dir():
            m = CANVAS.match(entry.name)
            if m and entry.is_file() and not entry.is_symlink():
                student, file, what = _canvas(m)
                try:
                    data = read_regular(entry, MAX_FILE)
                except OSError as e:
                    report.problem("", entry.name, str(e))
                    continue
                yield student, file, data, what
            else:
                report.problem("", entry.name, NOT_LMS)
            continue
        if entry.is_symlink():
            report.problem("", entry.name, "a symbolic link: refused")
            continue
        if _not_moodle(entry.name, report, set()):
            continue
        mood = moodle_id(entry.name)
        student, info = (mood[0], {"name": mood[1], "lms_id": mood[2]}) if mood else (entry.name, {})
        inner = entry / assignment
        base = inner if inner.is_dir() and not inner.is_symlink() else entry
        files, refused = walk(base, MAX_FILE, MAX_TOTAL, skip=IGNORED | {".ipynb_checkpoints"})
        for rel, why, _ in refused:
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


def _exchange_entries(inbound: Path, assignment: str, report: CollectReport, course_id: str = COURSE_ID):
    """The latest submission of each student in an nbgrader inbound folder, as nbgrader's own
    collect picks it: <student>+<assignment>+<timestamp>+<random>, newest timestamp wins."""
    from nbgrader.utils import parse_utc

    if not inbound.is_dir():
        raise SystemExit(f"no nbgrader inbound folder at {inbound} (is --exchange right, and the course id "
                         f"{course_id!r}?)")
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
        for rel, why, _ in refused:
            report.problem(student, rel, why)
        for rel, data in files:
            yield student, rel, data, info


def _plugin_entries(course: Course, assignment: str, plugin, report: CollectReport):
    """The latest submission of each student, as nbgrader's collect with the configured exchange
    plugin (the hub's course service) writes them into a throw-away course folder: their
    timestamp.txt is the exchange's (the service's clock; one in an upload is left out there)."""
    from nbgrader.apps import NbGraderAPI

    with tempfile.TemporaryDirectory(prefix="collect-") as tmp:
        c = course.config()
        c.CourseDirectory.root = tmp
        c.CourseDirectory.course_id = course.course_id
        c.CourseDirectory.db_url = f"sqlite:///{Path(tmp) / 'gradebook.db'}"
        plugin.apply(c)
        result = NbGraderAPI(config=c).collect(assignment, update=True)
        if not result.get("success"):
            raise SystemExit(f"collecting {assignment} from {plugin} failed:\n"
                             f"{(result.get('error') or result.get('log') or '').strip()[-2000:]}")
        submitted = Path(tmp) / "submitted"
        for d in sorted(submitted.iterdir()) if submitted.is_dir() else []:
            folder = d / assignment
            if not folder.is_dir() or folder.is_symlink():
                continue
            stamp = folder / "timestamp.txt"
            info = {"timestamp": stamp.read_text(errors="replace").strip() if stamp.is_file() else None,
                    "exchange": True}
            files, refused = walk(folder, MAX_FILE, MAX_TOTAL, skip=IGNORED | {".ipynb_checkpoints"})
            for rel, why, _ in refused:
                report.problem(d.name, rel, why)
            for rel, data in files:
                yield d.name, rel, data, info


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
    from nbgrader.api import MissingEntry

    with course.gradebook() as gb:
        try:
            return gb.find_assignment(assignment).duedate
        except MissingEntry:
            return None


def _known_students(course: Course) -> dict:
    """{student id: (who, LMS id or "")} of every student the course has: in the gradebook (who:
    their name, else the id) and in submitted/ (folders only, no LMS id)."""
    known = {}
    if course.db.is_file():

        with course.gradebook() as gb:
            for st in gb.students:
                name = " ".join(n for n in (st.first_name, st.last_name) if n)
                known[st.id] = (name or st.id, str(st.lms_user_id or ""))
    if course.submitted.is_dir():
        for d in course.submitted.iterdir():
            if d.name not in known and not d.name.startswith(".") and d.is_dir() and not d.is_symlink():
                known[d.name] = (d.name, "")
    return known


def _who(label: str, lms: str) -> str:
    return f"{label!r} (LMS id {lms or 'none'})"


def _identify(course: Course, by_student: dict, spelled: dict, infos: dict) -> dict:
    """{key: (student id, None)} for each participant to collect, {key: (id as spelled, why)} for
    each refused. An LMS participant the course knows by its LMS id keeps the student id it has;
    two participants with different LMS ids never share one (nor ids differing only in case):
    the course's holder of the id keeps it, and newcomers are refused; within one download,
    where the course holds none, all are refused."""
    known = _known_students(course)
    by_lms: dict[str, list] = {}
    by_case: dict[str, list] = {}
    for sid, (_, lms) in sorted(known.items()):
        by_case.setdefault(sid.casefold(), []).append(sid)
        if lms:
            by_lms.setdefault(lms, []).append(sid)

    def lms_of(key):
        return key[1] if key[0] == "lms" else ""

    def who(key):
        return _who(sorted(infos[key]["labels"])[0], lms_of(key))

    out, cand = {}, {}
    for key in by_student:
        names, lms = sorted(spelled[key]), lms_of(key)
        if lms and len(names) > 1:
            labels = ", ".join(map(repr, sorted(infos[key]["labels"])))
            out[key] = (names[0], f"LMS id {lms} comes under two names ({labels}) in one download: nothing "
                                  "collected for it, resolve by hand")
        elif lms and len(by_lms.get(lms, ())) > 1:
            out[key] = (names[0], f"{who(key)}: the gradebook has LMS id {lms} for more than one student "
                                  f"({', '.join(sorted(by_lms[lms]))}): not collected, resolve by hand")
        elif lms and lms in by_lms:
            cand[key] = by_lms[lms][0]
            if cand[key] != names[0]:       # said once collected
                infos[key]["renamed"] = (f"{who(key)}: collected as {cand[key]!r}, the student id the gradebook has "
                                         f"for LMS id {lms} (the name now gives {names[0]!r})")
        else:
            cand[key] = names[0]
    groups: dict[str, list] = {}
    for key, sid in cand.items():
        groups.setdefault(sid.casefold(), []).append(key)
    for cf, keys in groups.items():
        keys = sorted(keys, key=lambda k: (len(lms_of(k)), lms_of(k), cand[k]))
        holders = by_case.get(cf, [])
        owner = [k for k in keys if lms_of(k) and any(h == cand[k] and known[h][1] == lms_of(k) for h in holders)]
        for k in keys:
            sid, lms = cand[k], lms_of(k)
            taken = [h for h in holders if h != sid or (lms and known[h][1] and known[h][1] != lms)]
            if owner and k == owner[0] and not taken:
                out[k] = (sid, None)
            elif taken:
                h = taken[0]
                case = "" if h == sid else \
                    f"{'' if known[h][0] == h else f' as {h!r}'} (ids differing only in case are one student)"
                out[k] = (sid, f"{who(k)} gives the student id {sid!r}, which belongs to {_who(*known[h])}{case}: "
                               "not collected (collect it by hand under another id)")
            elif owner:
                out[k] = (sid, f"{who(k)} gives the student id {sid!r}, which belongs to {who(owner[0])}: not "
                               "collected (collect it by hand under another id)")
            elif len(keys) > 1:
                ids = sorted({cand[x] for x in keys})
                same = repr(ids[0]) if len(ids) == 1 else f"{' / '.join(map(repr, ids))} (one id but for case)"
                out[k] = (sid, f"{', '.join(who(x) for x in keys)} give the same student id {same}: nothing "
                               "collected for them (collect them by hand under distinct ids)")
            else:
                out[k] = (sid, None)
    return out


_NOT_IN_NAMES = re.compile(r"[<>&\"`\x00-\x1f\x7f]")


def display_name(name: str) -> str:
    """A name as the gradebook keeps it: nothing a page could read as markup (nbgrader's
    Formgrader writes names into its pages unescaped), at most 100 characters."""
    return re.sub(r"\s+", " ", _NOT_IN_NAMES.sub(" ", name)).strip()[:100]


def _record_names(course: Course, names: dict) -> None:
    """First and last names (from Moodle folder names) and the LMS id (Moodle's participant id,
    Canvas's user id) into the gradebook, never overwriting."""
    if not names:
        return
    from nbgrader.api import MissingEntry

    with course.gradebook() as gb:
        for student, (full, lms_id) in names.items():
            first, _, last = full.rpartition(" ")
            new = {}
            try:
                st = gb.find_student(student)
                if full and not (st.first_name or st.last_name):
                    new.update(first_name=first or None, last_name=last or None)
                if lms_id and not st.lms_user_id:
                    new["lms_user_id"] = lms_id
            except MissingEntry:
                if full:
                    new.update(first_name=first or None, last_name=last or None)
                new["lms_user_id"] = lms_id or None
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

    identity = _identify(course, by_student, spelled, infos)
    due = None
    names = {}
    for key in sorted(by_student):
        names_spelled = sorted(spelled[key])
        student, why = identity[key]
        if len(names_spelled) > 1 and key[0] != "lms":
            duplicates.add(key)
            report.problem(student, "", f"the same student twice ({', '.join(names_spelled)})")
        elif why:
            if (student, "", why) not in report.problems:      # a group's refusal, said once
                report.problem(student, "", why)
            continue
        if key in duplicates:
            report.problem(student, "", "duplicate submissions: nothing collected for this student, resolve by hand")
            continue
        if not STUDENT_ID.fullmatch(student):
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
        if RECORD in by_student[key]:      # checked when graded (autograder.integrity.predictions)
            good[RECORD] = by_student[key][RECORD][1]
        if "timestamp.txt" in good:
            report.timestamps[student] = good["timestamp.txt"].decode().strip()
        if infos[key].get("lms_id"):
            names[student] = (infos[key].get("name") or "", infos[key]["lms_id"])
        _install(course, assignment, student, good)
        if infos[key].get("renamed"):
            report.note(student, "", infos[key]["renamed"])
        report.collected[student] = sorted(k[:-6] for k in good if k.endswith(".ipynb"))
    for student, (full, lms_id) in list(names.items()):
        shown = display_name(full)
        if shown != full:
            report.note(student, "", f"the name {full!r} is recorded as {shown!r}: markup characters "
                                     "(<, >, &, \", `) and control characters are left out of names")
            names[student] = (shown, lms_id)
    _record_names(course, names)
    _lateness_notes(course, assignment, report)
    return report


def _lateness_notes(course: Course, assignment: str, report: CollectReport) -> None:
    """A note for each submission collected after the student's own deadline (the due date, or
    their extension: autograder.grading.deadlines), and for each one an extension made on time."""
    from autograder.grading import deadlines

    due = deadlines.due_date(course, assignment)
    if due is None:
        return
    exts = deadlines.extensions(course, assignment)
    for student in sorted(report.collected):
        stamp = report.timestamps.get(student)
        try:
            late = deadlines.lateness(course, assignment, student, stamp, due, exts.get(student))
        except Exception:       # a timestamp nbgrader cannot read: nbgrader will say so when grading
            continue
        if late.seconds_late > 0 or late.extension:
            report.note(student, "", late.text)


def _entries_of(course: Course, assignment: str, source: Path | None, exchange: Path | str | None,
                from_exchange: bool, report: CollectReport):
    """The (student, path, bytes, info) entries of the exchange, a zip or a folder."""
    if from_exchange:
        from autograder.locate import PluginExchange, exchange_of

        where = exchange_of(str(exchange) if exchange else None, course.root)
        if isinstance(where, PluginExchange):
            return _plugin_entries(course, assignment, where, report)
        return _exchange_entries(where / course.course_id / "inbound", assignment, report, course.course_id)
    elif source is None:
        raise SystemExit(f"name a folder or zip to collect from: {SOURCES}")
    source = Path(source)
    if source.is_dir():
        return _dir_entries(source, assignment, report)
    elif not source.exists():
        raise SystemExit(f"{source}: no such file or folder ({SOURCES})")
    elif source.is_file() and (zipfile.is_zipfile(source) or source.suffix.lower() == ".zip"):
        return _zip_entries(source, report)
    else:
        raise SystemExit(f"{source} is neither a folder nor a zip file ({SOURCES})")


def _by_student(entries, expected: list, assignment: str, report: CollectReport) -> tuple[dict, dict, dict, set]:
    """The entries per participant, key ("lms", LMS id) for an LMS participant, else ("", student
    id casefolded): ({key: {file name: (path, bytes)}}, {key: the ids as spelled}, {key: what the
    LMS said, and "labels": the names it gave}, {keys with two copies of a notebook})."""
    by_student: dict[str, dict] = {}
    spelled: dict[str, set] = {}
    infos: dict[str, dict] = {}
    duplicates: set[str] = set()
    for student, rel, data, info in entries:
        # one LMS participant is one student, whatever its name: two participants whose names give
        # one id are told apart here, and resolved by _identify (never one replacing the other)
        key = ("lms", info["lms_id"]) if info.get("lms_id") else ("", student.casefold())
        spelled.setdefault(key, set()).add(student)
        files = by_student.setdefault(key, {})
        seen = infos.setdefault(key, {"labels": set()})
        seen.update(info)
        seen["labels"].add(info.get("name") or student)
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
