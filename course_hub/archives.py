"""The archives the service exchange carries (course_hub.service.exchange, course_hub.nbexchange):
an assignment's folder packed as a tar.gz, read back bounded, unpacked without following anything.

An archive is hostile input, whoever sent it: `members` reads one (a tar.gz, or a zip) without
unpacking it and refuses it (BadArchive, saying what was expected) unless it holds only regular
files and folders (no links, devices or FIFOs), at most MAX_MEMBERS of them, at most MAX_UNPACKED
bytes in all, each name relative (no leading '/', no '..', no backslash or control character),
each part at most 255 characters, no name twice. The gzip stream itself is read through a bound,
so a compression bomb stops at the limit. `extract` unpacks only such an archive, into a folder it
creates, reading each file no further than its declared size. `pack` packs a folder's regular files
and folders: a link (to another student's folder, to the course's secret) is left out, never
followed or opened.
"""
from __future__ import annotations

import gzip
import io
import os
import stat
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

MAX_MEMBERS = 2000
MAX_UNPACKED = 256 << 20          # bytes of all files together, as the archive declares them
MAX_PART = 255                    # characters of one part of a name
MAX_NAME = 1024                   # characters of a whole name
_SLACK = 8 << 20                  # tar headers, pax records, long names: bytes beyond the files' own
FORMATS = ("tar.gz", "zip")


class BadArchive(ValueError):
    """What is wrong with an archive (the service answers 400 with it)."""


def detect(data: bytes) -> str:
    """'tar.gz' or 'zip', from the first bytes; BadArchive for anything else."""
    if data[:2] == b"\x1f\x8b":
        return "tar.gz"
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    raise BadArchive("expected a tar.gz or a zip archive of the assignment's folder")


def clean_name(name: str) -> str:
    """`name` as a safe relative POSIX path ('./a//b/' -> 'a/b'), or BadArchive."""
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        raise BadArchive(f"a member name: expected 1 to {MAX_NAME} characters")
    if name.startswith("/") or "\\" in name or any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        raise BadArchive(f"{name[:80]!r}: expected a relative name without backslashes or control characters")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts:
        raise BadArchive(f"{name[:80]!r}: expected a name inside the folder")
    for part in parts:
        if part == "..":
            raise BadArchive(f"{name[:80]!r}: '..' is not allowed in a name")
        if len(part) > MAX_PART:
            raise BadArchive(f"{name[:80]!r}: expected each part of a name to be at most {MAX_PART} characters")
    return "/".join(parts)


class _Bounded(io.RawIOBase):
    """A reader that refuses to read more than `limit` bytes from `raw`."""

    def __init__(self, raw, limit: int):
        self.raw, self.limit, self.count = raw, limit, 0

    def readable(self):
        return True

    def read(self, n=-1):
        want = self.limit + 1 - self.count if n is None or n < 0 else min(n, self.limit + 1 - self.count)
        data = self.raw.read(max(want, 0))
        self.count += len(data)
        if self.count > self.limit:
            raise BadArchive(f"expected at most {MAX_UNPACKED >> 20} MiB once unpacked")
        return data

    def readinto(self, b):
        data = self.read(len(b))
        b[:len(data)] = data
        return len(data)


class _Listing:
    """The checks every member passes, in order: count, kind, name, size, no name twice."""

    def __init__(self):
        self.files: dict[str, int] = {}
        self.dirs: set[str] = set()
        self.total = 0

    def add(self, name: str, kind: str, size: int) -> str:
        if len(self.files) + len(self.dirs) >= MAX_MEMBERS:
            raise BadArchive(f"expected at most {MAX_MEMBERS} files and folders")
        if kind not in ("file", "dir"):
            raise BadArchive(f"{name[:80]!r} is {kind}: expected only regular files and folders")
        name = clean_name(name)
        parents = [str(p) for p in PurePosixPath(name).parents if str(p) != "."]
        if name in self.files or (kind == "file" and name in self.dirs) or any(p in self.files for p in parents):
            raise BadArchive(f"{name[:80]!r} appears twice (or as both a file and a folder)")
        if kind == "dir":
            self.dirs.add(name)
        else:
            if size < 0:
                raise BadArchive(f"{name[:80]!r}: a negative size")
            self.total += size
            if self.total > MAX_UNPACKED:
                raise BadArchive(f"expected at most {MAX_UNPACKED >> 20} MiB once unpacked")
            self.files[name] = size
        self.dirs.update(parents)
        return name


def _tar_kind(m: tarfile.TarInfo) -> str:
    if m.isreg():
        return "file"
    if m.isdir():
        return "dir"
    if m.issym() or m.islnk():
        return "a link"
    return "a device, FIFO or other special file"


def _zip_count(data: bytes) -> int:
    """The member count a zip's end record declares (read before zipfile reads the directory)."""
    at = data.rfind(b"PK\x05\x06", max(0, len(data) - 65557))
    if at < 0 or at + 22 > len(data):
        raise BadArchive("expected a zip with its end-of-directory record")
    count = struct.unpack("<H", data[at + 10:at + 12])[0]
    if count == 0xFFFF:
        raise BadArchive("expected a zip of at most 65534 members (not zip64)")
    return count


def _zip_kind(info: zipfile.ZipInfo) -> str:
    if info.flag_bits & 1:
        return "encrypted"
    mode = info.external_attr >> 16
    if info.create_system == 3 and mode and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "a link" if stat.S_ISLNK(mode) else "a device, FIFO or other special file"
    return "dir" if info.is_dir() else "file"


def _walk(data: bytes, on_file=None):
    """Check every member of the archive `data` (see the module's docstring); call
    on_file(name, size, reader) for each regular file. Returns the _Listing."""
    listing = _Listing()
    fmt = detect(data)
    try:
        if fmt == "tar.gz":
            stream = _Bounded(gzip.GzipFile(fileobj=io.BytesIO(data)), MAX_UNPACKED + _SLACK)
            with tarfile.open(fileobj=stream, mode="r|") as tf:
                for m in tf:
                    name = listing.add(m.name, _tar_kind(m), m.size)
                    if on_file and m.isreg():
                        on_file(name, m.size, tf.extractfile(m))
        else:
            if _zip_count(data) > MAX_MEMBERS:
                raise BadArchive(f"expected at most {MAX_MEMBERS} files and folders")
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                for info in zf.infolist():
                    kind = _zip_kind(info)
                    name = listing.add(info.filename, kind, info.file_size)
                    if on_file and kind == "file":
                        with zf.open(info) as f:
                            on_file(name, info.file_size, f)
    except BadArchive:
        raise
    except (tarfile.TarError, zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError,
            NotImplementedError, RuntimeError) as e:
        raise BadArchive(f"expected a readable {fmt} archive ({type(e).__name__}: {str(e)[:120]})") from None
    return listing


def members(data: bytes) -> dict[str, int]:
    """The regular files of the archive `data` and their sizes, checked (BadArchive) and not unpacked."""
    return dict(_walk(data).files)


def notebooks(files) -> list[str]:
    """The notebook ids (names without .ipynb) at the top of an archive's files."""
    return sorted(n[:-6] for n in files if "/" not in n and n.endswith(".ipynb") and len(n) > 6)


def extract(data: bytes, dest: Path, skip=lambda name: False) -> list[str]:
    """Unpack the archive `data` into the new folder `dest` (created here: it must not exist) and
    return the files written; `skip(name)` True leaves a file out. Nothing is written outside
    `dest`, no link is made or followed, no file grows past its declared size."""
    dest = Path(dest)
    _walk(data)                           # refuse a bad archive before writing anything
    os.mkdir(dest, 0o755)
    written = []

    def on_file(name, size, reader):
        if skip(name):
            return
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if Path(os.path.realpath(target.parent)) != Path(os.path.realpath(dest)).joinpath(*PurePosixPath(name).parts[:-1]):
            raise BadArchive(f"{name[:80]!r}: its folder is not inside the destination")
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as out:
            left = size
            while left > 0:
                chunk = reader.read(min(left, 1 << 20))
                if not chunk:
                    break
                out.write(chunk)
                left -= len(chunk)
            if left < 0 or reader.read(1):
                raise BadArchive(f"{name[:80]!r}: more bytes than its declared size")
        written.append(name)

    listing = _walk(data, on_file)
    for d in sorted(listing.dirs):
        (dest / d).mkdir(parents=True, exist_ok=True)
    return written


def _open_regular(path: str) -> tuple[int, os.stat_result] | None:
    """A descriptor of the regular file at `path`, or None if it is anything else (never followed)."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    fst = os.fstat(fd)
    if not stat.S_ISREG(fst.st_mode) or (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        return None
    return fd, fst


def pack(folder: Path, ignore=None, max_bytes: int = MAX_UNPACKED) -> tuple[bytes, list[str]]:
    """A tar.gz of the folder's regular files and folders (names relative to it) and the paths left
    out because they are links or special files. `ignore(dirpath, names)` -> names to leave out
    (shutil.copytree's convention, as nbgrader.utils.ignore_patterns); BadArchive when the files
    exceed `max_bytes` or MAX_MEMBERS."""
    folder = Path(folder)
    buf = io.BytesIO()
    skipped: list[str] = []
    total = count = 0
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tf:
        for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
            ignored = set(ignore(dirpath, dirnames + filenames)) if ignore else set()
            rel_dir = os.path.relpath(dirpath, folder)
            keep = []
            for d in sorted(dirnames):
                full = os.path.join(dirpath, d)
                if d in ignored:
                    continue
                if not stat.S_ISDIR(os.lstat(full).st_mode):
                    skipped.append(os.path.normpath(os.path.join(rel_dir, d)))
                    continue
                keep.append(d)
                info = tarfile.TarInfo(os.path.normpath(os.path.join(rel_dir, d)))
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tf.addfile(info)
                count += 1
            dirnames[:] = keep
            for f in sorted(filenames):
                if f in ignored:
                    continue
                rel = os.path.normpath(os.path.join(rel_dir, f))
                opened = _open_regular(os.path.join(dirpath, f))
                if opened is None:
                    skipped.append(rel)
                    continue
                fd, st = opened
                with os.fdopen(fd, "rb") as src:
                    total += st.st_size
                    count += 1
                    if total > max_bytes:
                        raise BadArchive(f"{folder}: more than {max_bytes >> 20} MiB of files")
                    if count > MAX_MEMBERS:
                        raise BadArchive(f"{folder}: more than {MAX_MEMBERS} files and folders")
                    info = tarfile.TarInfo(rel)
                    info.size, info.mode, info.mtime = st.st_size, 0o644, int(st.st_mtime)
                    tf.addfile(info, src)
    return buf.getvalue(), skipped
