"""How an LMS names a download: Moodle's participant folders and Canvas's flat file names."""
from __future__ import annotations

import re

from autograder.intake.report import CollectReport

CANVAS = re.compile(r"^(?P<student>[A-Za-z0-9]+)_(?P<late>late_)?(?P<user>\d{1,20})_\d{1,20}_(?P<file>.+)$")


MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d{1,20})_assignsubmission_(?:file|onlinetext)_?$")


MOODLE_LIKE = re.compile(r"_assignsubmission_(?:file|onlinetext)_?$")


MOODLE_FORM = "'<full name>_<participant id>_assignsubmission_file_'"


CANVAS_FORM = "'<login>_<user id>_<submission id>_<file>'"


NOT_LMS = (f"not in a student folder and not an LMS file name (expected <student>/<notebook>.ipynb, Moodle's "
           f"{MOODLE_FORM[:-1]}/<file>' or Canvas's {CANVAS_FORM})")


SOURCES = ("expected a folder or a zip of student folders (<student>/<notebook>.ipynb), of a Moodle download "
           f"({MOODLE_FORM[1:-1]}/ folders) or of a Canvas download ({CANVAS_FORM[1:-1]} files); or --exchange")


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


def canvas_file(m: re.Match) -> tuple[str, str, dict]:
    """(student, file, info) of a Canvas file name matched by CANVAS."""
    file = re.sub(r"-\d+(\.ipynb)$", r"\1", m.group("file"))   # Canvas resubmission suffix
    return m.group("student"), file, {"late": bool(m.group("late")), "lms_id": m.group("user")}


def not_moodle(folder: str, report: CollectReport, said: set) -> bool:
    """Whether `folder` looks like a Moodle folder but lacks the participant id (said once)."""
    if MOODLE.match(folder) or not MOODLE_LIKE.search(folder):
        return False
    if folder not in said:
        said.add(folder)
        report.problem("", folder, f"a Moodle folder without its participant id (expected {MOODLE_FORM}): "
                                   "not collected")
    return True
