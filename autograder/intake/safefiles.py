"""Reading and copying what a student handed in without following anything they pointed at.

Whoever put a file into submitted/ or the exchange (nbgrader collect, a hand copy, autograder
collect), the grader, often root, only opens regular files: each path is checked with lstat and
opened with O_NOFOLLOW relative to its folder's descriptor, and the opened file must still be
the regular file that was checked. A symbolic link (to /etc/shadow, to the solution), a FIFO, a
device or a socket is refused and reported, never read.
"""
from __future__ import annotations

import enum
import os
import stat
from pathlib import Path
from typing import NamedTuple

MAX_FILE = 64 * 2**20        # bytes of one handed-in file
MAX_TOTAL = 256 * 2**20      # bytes of one submission


class Refusal(enum.Enum):
    """Why a file was refused: what a caller decides on (never the message's text)."""
    LINK = "link"
    NOT_REGULAR = "not a regular file"
    TOO_LARGE = "too large"                 # the file alone, over its limit
    SUBMISSION_TOO_LARGE = "submission too large"   # the files read so far and this one, over the total
    CHANGED = "changed while read"
    UNREADABLE = "unreadable"


class Refused(OSError):
    """A path that is not a regular file (or is too large) where one was expected."""

    def __init__(self, message: str, reason: Refusal):
        super().__init__(message)
        self.reason = reason


class RefusedFile(NamedTuple):
    """One refused path under a walked folder: its relative path, the message, and the reason."""
    path: str
    why: str
    reason: Refusal


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


def _open_regular(name: str, dir_fd: int | None, limit: int) -> tuple[int, os.stat_result]:
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if not stat.S_ISREG(st.st_mode):
        raise Refused(f"{_kind(st.st_mode)}: refused",
                      Refusal.LINK if stat.S_ISLNK(st.st_mode) else Refusal.NOT_REGULAR)
    if st.st_size > limit:
        raise Refused(f"larger than {limit // 2**20} MB: refused", Refusal.TOO_LARGE)
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    fst = os.fstat(fd)
    if not stat.S_ISREG(fst.st_mode) or (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        raise Refused("changed while it was read: refused", Refusal.CHANGED)
    return fd, fst


def _read_fd(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    with os.fdopen(fd, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise Refused(f"larger than {limit // 2**20} MB: refused", Refusal.TOO_LARGE)
            chunks.append(chunk)
    return b"".join(chunks)


def read_regular(path: Path | str, limit: int = MAX_FILE) -> bytes:
    """The bytes of `path`, which must be a regular file, no symbolic link, at most `limit` bytes
    (its folders are the caller's: they were made by the grader or checked by walk())."""
    path = Path(path)
    dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fd, _ = _open_regular(path.name, dfd, limit)
    finally:
        os.close(dfd)
    return _read_fd(fd, limit)


def walk(top: Path | str, limit: int = MAX_FILE, total: int = MAX_TOTAL, skip=()):
    """(relative path, bytes) of every regular file under `top`, and a RefusedFile for
    everything refused, as two lists. Symbolic links are never followed (not to folders either);
    folders named in `skip` and files named in `skip` are left out."""
    files, refused, size = [], [], 0
    top = str(top)
    try:
        st = os.lstat(top)
    except OSError as e:
        return [], [RefusedFile(".", f"cannot be read: {e.strerror}", Refusal.UNREADABLE)]
    if not stat.S_ISDIR(st.st_mode):
        return [], [RefusedFile(".", f"{_kind(st.st_mode)}, not a folder: refused",
                                Refusal.LINK if stat.S_ISLNK(st.st_mode) else Refusal.NOT_REGULAR)]
    for dirpath, dirnames, filenames, dirfd in os.fwalk(top, follow_symlinks=False):
        rel_dir = os.path.relpath(dirpath, top)
        kept = []
        for d in sorted(dirnames):
            if d in skip:
                continue
            if stat.S_ISLNK(os.stat(d, dir_fd=dirfd, follow_symlinks=False).st_mode):
                refused.append(RefusedFile(d if rel_dir == "." else os.path.join(rel_dir, d),
                                           "a symbolic link: refused", Refusal.LINK))
                continue
            kept.append(d)
        dirnames[:] = kept
        for name in sorted(filenames):
            if name in skip:
                continue
            rel = name if rel_dir == "." else os.path.join(rel_dir, name)
            try:
                fd, fst = _open_regular(name, dirfd, limit)
                if size + fst.st_size > total:
                    os.close(fd)
                    raise Refused(f"the submission is larger than {total // 2**20} MB in all: refused",
                                  Refusal.SUBMISSION_TOO_LARGE)
                data = _read_fd(fd, limit)
                size += len(data)
                files.append((rel, data))
            except OSError as e:
                refused.append(RefusedFile(rel, str(e), e.reason) if isinstance(e, Refused) else
                               RefusedFile(rel, f"cannot be read: {e.strerror}", Refusal.UNREADABLE))
    return files, refused


def copy_tree(src: Path | str, dst: Path | str, limit: int = MAX_FILE, total: int = MAX_TOTAL, skip=()) -> list:
    """Copy the regular files under `src` into `dst` (made as needed); returns what was refused,
    [RefusedFile]."""
    files, refused = walk(src, limit, total, skip)
    dst = Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    for rel, data in files:
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return refused
