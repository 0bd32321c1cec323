"""Every lesson opens unmodified in JupyterLab (the student's Jupyter settings, as Binder and
the public student repository use them): JupyterLab writes the kernel's language_info into a
notebook it opens, and course_lib.jupyter_contents serves it already there."""
from __future__ import annotations

import time

import pytest

from test_browser import NOTEBOOKS, REPO, Page, browser, open_notebook, student_lab  # noqa: F401 (fixtures)

pytestmark = pytest.mark.browser

DIRTY_TABS = """() => [...document.querySelectorAll('.lm-TabBar-tab.jp-mod-dirty')].map(t => t.textContent)"""


def test_every_lesson_opens_unmodified(browser, student_lab):
    p = Page(browser, "opens-unmodified")
    with p.evidence() as page:
        for path in NOTEBOOKS:
            rel = str(path.relative_to(REPO / "notebooks"))
            open_notebook(page, student_lab, rel, 3)
            time.sleep(2)       # the kernel's info reply has arrived once it is idle; give the model a moment
            assert page.evaluate(DIRTY_TABS) == [], f"{rel} opens marked modified"
