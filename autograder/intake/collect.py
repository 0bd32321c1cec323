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

Each source reads in its own module: from_folder, from_zip, from_exchange (the exchange and its
plugin); the LMS's file names in lms_names, who a participant is in identities.
"""
from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from autograder.course import Course, replace_dir
from autograder.intake.from_exchange import exchange_entries, plugin_entries
from autograder.intake.from_folder import folder_entries
from autograder.intake.from_zip import zip_entries
from autograder.intake.identities import display_name, identify, record_names
from autograder.intake.lms_names import SOURCES
from autograder.intake.repair import BOM
from autograder.intake.report import KEEP, RECORD, CollectReport
from course_hub.names import STUDENT_ID


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

    identity = identify(course, by_student, spelled, infos)
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
    record_names(course, names)
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
            return plugin_entries(course, assignment, where, report)
        return exchange_entries(where / course.course_id / "inbound", assignment, report, course.course_id)
    elif source is None:
        raise SystemExit(f"name a folder or zip to collect from: {SOURCES}")
    source = Path(source)
    if source.is_dir():
        return folder_entries(source, assignment, report)
    elif not source.exists():
        raise SystemExit(f"{source}: no such file or folder ({SOURCES})")
    elif source.is_file() and (zipfile.is_zipfile(source) or source.suffix.lower() == ".zip"):
        return zip_entries(source, report)
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
        # one id are told apart here, and resolved by identify (never one replacing the other)
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
