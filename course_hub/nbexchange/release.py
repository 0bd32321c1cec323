"""`nbgrader release_assignment` on the service exchange: the course's release/<assignment>/
folder, packed (course_hub.archives.pack: regular files only, nbgrader's ignore/include/size
options applied), uploaded for the course. The service refuses (409) an assignment already
released unless --force; only an instructor of the course may release (403)."""
from __future__ import annotations

import os

from nbgrader.exchange.abc import ExchangeReleaseAssignment as ABCExchangeReleaseAssignment
from nbgrader.utils import ignore_patterns

from .. import archives
from .exchange import Exchange


def packed(exchange: Exchange, folder: str) -> bytes:
    """`folder` as a tar.gz, as nbgrader's own exchange would copy it (its ignore, include and size
    options); a link or special file is left out and said so."""
    cd = exchange.coursedir
    ignore = ignore_patterns(exclude=cd.ignore, include=cd.include, max_file_size=cd.max_file_size, log=exchange.log)
    try:
        data, skipped = archives.pack(folder, ignore, max_bytes=int(1000 * cd.max_dir_size))
    except archives.BadArchive as e:
        exchange.fail(str(e))
    for path in skipped:
        exchange.log.warning("Left out %s: a link or special file (only regular files and folders are sent)",
                             os.path.join(folder, path))
    return data


class ExchangeReleaseAssignment(Exchange, ABCExchangeReleaseAssignment):

    def init_src(self):
        self.src_path = self.coursedir.format_path(self.coursedir.release_directory, '.', self.coursedir.assignment_id)
        if not os.path.isdir(self.src_path):
            source = self.coursedir.format_path(self.coursedir.source_directory, '.', self.coursedir.assignment_id)
            if os.path.isdir(source):
                self.fail("Assignment found in '{}' but not '{}', run `nbgrader generate_assignment` first.".format(
                    source, self.src_path))
            self.fail("Assignment not found at: {}".format(self.src_path))

    def init_dest(self):
        self.require_course()

    def refused(self, status, message):
        if status == 409:
            self.fail("Destination already exists, add --force to overwrite: {} {}".format(
                self.coursedir.course_id, self.coursedir.assignment_id))
        super().refused(status, message)

    def copy_files(self):
        course, assignment = self.coursedir.course_id, self.coursedir.assignment_id
        self.log.info("Source: {}".format(self.src_path))
        self.log.info("Destination: {} (the course service)".format(self.service_url))
        data = packed(self, self.src_path)
        self.call("PUT", course, "assignments", assignment, params={"force": "1" if self.force else None},
                  data=data, content_type="application/gzip")
        self.log.info("Released as: {} {}".format(course, assignment))
