"""Submissions from a zip: of student folders, a Moodle download or a Canvas download, read safely."""
from __future__ import annotations

import zipfile
from pathlib import Path, PurePosixPath

from autograder.intake.lms_names import CANVAS, NOT_LMS, SOURCES, canvas_file, moodle_id, not_moodle
from autograder.intake.report import IGNORED, MAX_ENTRIES, MAX_FILE, MAX_NAME, MAX_TOTAL, CollectReport

def zip_entries(path: Path, report: CollectReport):
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
                if not_moodle(parts[0], report, said):
                    continue
                mood = moodle_id(parts[0])
                student, rel, what = (mood[0], "/".join(parts[1:]), {"name": mood[1], "lms_id": mood[2]}) if mood \
                    else (parts[0], "/".join(parts[1:]), {})
            else:
                m = CANVAS.match(parts[0])
                if not m:
                    report.problem("", info.filename, NOT_LMS)
                    continue
                student, rel, what = canvas_file(m)
            try:
                data = z.read(info)
            except (zipfile.BadZipFile, RuntimeError, NotImplementedError, EOFError, OSError, ValueError) as e:
                report.problem("", info.filename, f"cannot be read from the zip ({str(e)[:120]}): skipped")
                continue
            yield student, rel, data, what
