"""Predictions in a real browser (JupyterLab in Debian's chromium, as tests/test_browser.py drives
it): what a student sees when a check fails, after a revision past the reveal, and after a kernel
restart. Every message is one line with no traceback, and none hides the answer that is graded."""
from __future__ import annotations

import re

from test_browser import (KERNEL_IDLE, Page, browser, fresh_lesson, open_notebook, pytestmark,  # noqa: F401
                          run_cell, set_cell, student_lab)

WRONG_Q1 = ('q1_speedup = 989.4 / 312\n'
            'q1_reasoning = "The H100 has about three times the FLOP/s of the A100, so it is three times faster."')


def one_line(text: str) -> bool:
    """An error shown as a single line (no traceback, no library frames)."""
    lines = [l for l in text.splitlines() if l.strip()]
    return len(lines) == 1 and "Traceback" not in text and ".py" not in text


def test_revision_restart_and_errors_tell_the_truth_in_one_line(browser, student_lab):
    rel, n_cells, at, answers = fresh_lesson(student_lab, "02_memory_wall")
    p = Page(browser, "predictions-revision-02_memory_wall")
    with p.evidence() as page:
        open_notebook(page, student_lab, rel, n_cells)
        run_cell(page, at["wall_setup"])
        unanswered = run_cell(page, at["wall_q1_prediction"])
        assert one_line(unanswered) and "Q1 is not answered yet: replace raise NotImplementedError()" in unanswered, \
            unanswered
        form = run_cell(page, at["wall_q1_form"])
        assert one_line(form) and "q1_speedup and q1_reasoning are not answered yet" in form, form
        early = run_cell(page, at["wall_q1_verify"])
        assert one_line(early) and "Q1: no committed prediction yet" in early, early

        set_cell(page, at["wall_q1_prediction"], WRONG_Q1)
        run_cell(page, at["wall_q1_prediction"])
        committed = run_cell(page, at["wall_q1_form"])
        assert re.search(r"Q1: answer committed at \d\d:\d\d:\d\d UTC: q1_speedup = 3\.171\. Rule( \(a prediction\))?: ", committed), committed
        assert "*" not in committed and " If " not in committed, committed
        first = run_cell(page, at["wall_q1_verify"])
        assert "Your prediction differs" in first, first

        set_cell(page, at["wall_q1_prediction"], answers["wall_q1_prediction"])
        run_cell(page, at["wall_q1_prediction"])
        revised = run_cell(page, at["wall_q1_form"])
        assert "Q1: graded on q1_speedup = 3.171, committed at" in revised and "Your revision" in revised, revised
        assert "earns no correctness points" in revised and "unchanged" not in revised, revised
        again = run_cell(page, at["wall_q1_verify"])
        assert "(differs from the truth); your revision, " in again and "matches it, but earns no correctness points" in again
        assert "Your prediction holds" not in again, again

        # Kernel > Restart Kernel: the names are gone, the record is not
        page.locator(".lm-MenuBar-itemLabel", has_text="Kernel").click()
        page.locator(".lm-Menu-itemLabel").get_by_text(re.compile(r"^Restart Kernel")).first.click()
        page.locator(".jp-Dialog .jp-mod-accept").click()
        page.locator(".jp-Dialog").wait_for(state="detached")
        page.wait_for_timeout(2000)          # the status bar hears of the restart, then the kernel is idle
        page.wait_for_function(KERNEL_IDLE, timeout=90_000)
        restarted = run_cell(page, at["wall_q1_form"])
        assert one_line(restarted) and "Q1 was answered before (committed q1_speedup = " in restarted, restarted
        assert "re-run the setup cell and your answer cells (Run All, or Run > Run All Above)" in restarted, restarted
        # the cells above run again, as Run All would: the graded commit is still named
        run_cell(page, at["wall_setup"])
        run_cell(page, at["wall_q1_prediction"])
        rerun = run_cell(page, at["wall_q1_form"])
        assert "Q1: graded on q1_speedup = 3.171" in rerun and "earns no correctness points" in rerun, rerun
        assert "unchanged since" not in rerun, rerun
        assert not p.errors(), "browser console errors:\n" + "\n".join(p.errors())
