"""Private temporary folders of a grading run, and the clean-up of dead runs' folders.

A run folder holds copies of submissions and the hidden tests, so none may outlive its run. The
run holds an exclusive lock (flock) on `<folder>/.lock` for its whole life; its worker processes
inherit it and die with the run (PR_SET_PDEATHSIG), so a folder whose lock can be taken belongs
to a dead run (killed with -9, a crash, a power cut) and is removed at the start of the next
run. Folders of live runs (another instructor, a parallel test) are locked and left alone.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from pathlib import Path

PREFIX = "autograder-run-"
LEGACY = ("autograder-grade-", "autograder-truth-")   # folders of older versions, which had no lock
LEGACY_AGE = 6 * 3600


class RunDir:
    """A locked private folder in the temporary directory, removed on close."""

    def __init__(self, kind: str = "grade", base: str | None = None):
        self.path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-", dir=base))
        self._lock = open(self.path / ".lock", "w")
        fcntl.flock(self._lock, fcntl.LOCK_EX)

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        self._lock.close()

    def __enter__(self) -> "RunDir":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def clean_stale(tmp: Path | None = None) -> list[Path]:
    """Remove the run folders of dead runs (this user's only) in the temporary directory (and
    /tmp, where the kernels' sockets go when it is deep); returns what was removed."""
    places = [Path(tmp)] if tmp else sorted({Path(tempfile.gettempdir()), Path("/tmp")})
    removed = []
    for place in places:
        removed += _clean(place)
    return removed


def _clean(tmp: Path) -> list[Path]:
    removed = []
    try:
        entries = list(tmp.iterdir())
    except OSError:
        return removed
    me = os.geteuid()
    for d in entries:
        try:
            st = d.lstat()
        except OSError:
            continue
        if not d.is_dir() or d.is_symlink() or st.st_uid != me:
            continue
        if d.name.startswith(PREFIX):
            lock = d / ".lock"
            if not lock.exists():
                # just made by a run that has not locked it yet, or a very old crash
                if time.time() - st.st_mtime > 600:
                    shutil.rmtree(d, ignore_errors=True)
                    removed.append(d)
                continue
            try:
                with open(lock) as f:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    shutil.rmtree(d, ignore_errors=True)
                    removed.append(d)
            except OSError:
                continue     # locked: a live run
        elif d.name.startswith(LEGACY) and time.time() - st.st_mtime > LEGACY_AGE:
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed
