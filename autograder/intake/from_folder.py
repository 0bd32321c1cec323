"""Submissions from a folder: of student folders, a Moodle download or a Canvas download."""
from __future__ import annotations

from pathlib import Path

from autograder.intake.lms_names import CANVAS, NOT_LMS, canvas_file, moodle_id, not_moodle
from autograder.intake.report import IGNORED, MAX_FILE, MAX_TOTAL, CollectReport
from autograder.intake.safefiles import read_regular, walk

def folder_entries(source: Path, assignment: str, report: CollectReport):
    for entry in sorted(source.iterdir()):
        if entry.name in IGNORED or entry.name.startswith("."):
            continue
        if not entry.is_dir():
            m = CANVAS.match(entry.name)
            if m and entry.is_file() and not entry.is_symlink():
                student, file, what = canvas_file(m)
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
        if not_moodle(entry.name, report, set()):
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
