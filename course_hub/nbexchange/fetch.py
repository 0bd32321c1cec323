"""`nbgrader fetch_assignment` (and the Assignment List's Fetch) on the service exchange: the
released archive, unpacked safely (course_hub.archives.extract: nothing outside the new folder, no
link) into <assignment>/ (or <course>/<assignment>/ with path_includes_course); with
replace_missing_files, only the files the student's copy lacks are added."""
from __future__ import annotations

import fnmatch
import os
import shutil
import tempfile

from nbgrader.exchange.abc import ExchangeFetchAssignment as ABCExchangeFetchAssignment

from .. import archives
from .exchange import Exchange


def unpack(exchange: Exchange, data: bytes, parent: str, skip=lambda name: False) -> tuple[str, str]:
    """Unpack `data` into a new temporary folder inside `parent`: (the temporary folder, the unpacked one)."""
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=parent, prefix=".nbexchange-")
    target = os.path.join(tmp, "unpacked")
    try:
        archives.extract(data, target, skip)
    except archives.BadArchive as e:
        shutil.rmtree(tmp)
        exchange.fail(f"the archive from the course service is not safe to unpack: {e}")
    return tmp, target


class ExchangeFetchAssignment(Exchange, ABCExchangeFetchAssignment):

    def init_src(self):
        course = self.require_course()
        self.check_access(course)
        self.src_path = f"{course}/{self.coursedir.assignment_id}"

    def init_dest(self):
        root = self.local_dir(self.coursedir.course_id, self.coursedir.assignment_id)
        self.dest_path = os.path.abspath(root)
        if os.path.isdir(self.dest_path) and not self.replace_missing_files:
            self.fail("You already have a copy of the assignment in this directory: {}".format(
                os.path.relpath(root, self.assignment_dir) if self.path_includes_course else self.coursedir.assignment_id))

    def refused(self, status, message):
        if status == 404:
            self.fail("Assignment not found: {} (the course service has released no such assignment)".format(self.src_path))
        super().refused(status, message)

    def copy_if_missing(self, src, dest):
        for name in sorted(os.listdir(src)):
            s, d = os.path.join(src, name), os.path.join(dest, name)
            if os.path.isdir(s):
                if not os.path.lexists(d):
                    self.log.warning("Creating missing directory '%s'", os.path.relpath(d, os.getcwd()))
                    os.mkdir(d)
                if os.path.isdir(d) and not os.path.islink(d):
                    self.copy_if_missing(s, d)
            elif not os.path.lexists(d):
                self.log.warning("Replacing missing file '%s'", os.path.relpath(d, os.getcwd()))
                shutil.copyfile(s, d, follow_symlinks=False)

    def copy_files(self):
        course, assignment = self.coursedir.course_id, self.coursedir.assignment_id
        self.log.info("Source: {} (the course service)".format(self.src_path))
        self.log.info("Destination: {}".format(self.dest_path))
        data, _headers = self.call("GET", course, "assignments", assignment, raw=True)
        ignore = list(self.coursedir.ignore)
        skip = lambda name: any(fnmatch.fnmatch(part, g) for part in name.split("/") for g in ignore)  # noqa: E731
        tmp, unpacked = unpack(self, data, os.path.dirname(self.dest_path), skip)
        try:
            if os.path.isdir(self.dest_path):
                self.copy_if_missing(unpacked, self.dest_path)
            else:
                os.rename(unpacked, self.dest_path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.log.info("Fetched as: {} {}".format(course, assignment))
