"""The Assignment List's "(view feedback)" shows the student their feedback page, not only its folder.

nbgrader's JupyterLab extension runs `filebrowser:go-to-path` on the submission's
`local_feedback_path`, which nbgrader's exchange sets to the feedback *folder*
(feedback/<timestamp>/): the file browser moves there and the student must find the page. Given
a file, the same command moves to its folder and selects the file. This list (nbgrader's own,
configured with `c.ExchangeFactory.list`) points the link at the page of the submission's first
notebook; the course's JupyterLab extension (course_lib/labextension/, installed with the
package) then opens that page in JupyterLab's HTML viewer. nbgrader's JavaScript is unchanged.
"""
from __future__ import annotations

import os

from nbgrader.exchange.default.list import ExchangeList


def feedback_page(submission: dict) -> str | None:
    """The feedback page of the submission's first notebook that has one fetched, or None."""
    for nb in submission.get("notebooks") or []:
        path = nb.get("local_feedback_path")
        if nb.get("has_local_feedback") and path and os.path.isfile(path):
            return os.path.abspath(path)
    return None


def point_at_pages(assignments: list) -> list:
    """An exchange list's assignments, each submission's `local_feedback_path` its feedback page
    where one is fetched (also used by the service exchange's list, course_hub.nbexchange)."""
    for info in assignments:
        for sub in info.get("submissions", [info]):
            page = feedback_page(sub) if sub.get("local_feedback_path") else None
            if page:
                sub["local_feedback_path"] = page
    return assignments


class FeedbackPageList(ExchangeList):
    """nbgrader's ExchangeList; a submission's `local_feedback_path` is its feedback page."""

    def parse_assignments(self):
        return point_at_pages(super().parse_assignments())
