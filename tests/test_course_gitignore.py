"""Nothing private of a course reaches git (issue 47): the course folder is a clone of this
repository, so its .gitignore is this one, and every key, LMS file, launch record, extension and
regrade log the tools write there must be ignored. Each file is written by its own tool, or at the
path the tool reads it from (taken from the code, never a copy of the name here), in a fresh git
repository holding nothing but the repository's .gitignore; `git status` must show none of them.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.grading import regrade
from autograder.grading.shards import Shard, shard_root
from autograder.lms import config as lms_config
from autograder.lms import gradebook_csv
from autograder.lms.__main__ import keygen
from autograder.authoring import variants
from course_hub import lti

REPO = Path(__file__).resolve().parent.parent


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.org", "HOME": str(folder),
                               "PATH": "/usr/bin:/bin"}).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_every_private_file_the_tools_write_into_the_course_folder_is_ignored(tmp_path):
    folder = tmp_path / "course"
    folder.mkdir()
    _git(folder, "init", "-q")
    shutil.copy(REPO / ".gitignore", folder / ".gitignore")
    _git(folder, "add", ".gitignore")
    _git(folder, "commit", "-q", "-m", "the course")
    course = Course(root=folder)

    written = []
    written += keygen(folder)                                  # the LMS tool's key pair
    cfg = lms_config.default_path(folder)                      # export --lms reads it here
    cfg.write_text(json.dumps({"client_id": "1", "token_url": "https://lms.example.org/token",
                               "private_key_file": "lti-tool-key.pem"}))
    written.append(cfg)
    for fmt in gradebook_csv.Format:                           # export --lms-csv's default output
        p = lms_config.import_csv_path(folder, fmt.value)
        p.write_text("student,grade\nann,1\n")
        written.append(p)
    record = folder / lti.LAUNCH_RECORD                        # the hub's launch record, copied in
    lti.append_record(record, {"user": "ann-1a2b3c", "name": "Ann Lee", "email": "ann@example.org",
                               "sis_id": "S123"})
    written.append(record)
    # an extension with its reason and the regrade log, where the grading code keeps them
    from autograder.grading import deadlines

    ext = deadlines.extensions_path(course)
    ext.write_text(json.dumps({"assignment": "a", "student": "ann", "until": "2027-02-04T12:00:00+00:00",
                               "reason": "medical note", "by": "prof", "at": "2027-02-01T00:00:00+00:00"}) + "\n")
    log = regrade.log_path(course)
    log.write_text(json.dumps({"student": "ann", "cell": "nb/(score)", "before": 1, "after": 2}) + "\n")
    written += [ext, log, variants.init_secret(course)]
    shard = shard_root(course, "a", Shard(0, 2))
    shard.mkdir(parents=True)
    (shard / "gradebook.db").write_bytes(b"")
    written.append(shard / "gradebook.db")

    assert all(p.is_file() for p in written)
    assert _git(folder, "status", "--porcelain", "--untracked-files=all") == ""
    ignored = _git(folder, "status", "--porcelain", "--ignored", "--untracked-files=all")
    for p in written:      # each one ignored, not merely absent
        assert str(p.relative_to(folder)) in ignored
