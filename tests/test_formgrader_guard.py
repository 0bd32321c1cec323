"""The Formgrader without its side doors (autograder.outputs.formgrader_guard, issue 34): what it
refuses, lists and hides, checked against the installed nbgrader's own routes and template (a
new nbgrader that renames them fails here). tests/test_hub_installs.py checks the same over HTTP
on the hub kit, in an instructor's server."""
from __future__ import annotations

import re
from pathlib import Path

from autograder.outputs import formgrader_guard as guard


def nbgrader_routes() -> dict:
    from nbgrader.server_extensions.formgrader import apihandlers

    return {pattern: handler for pattern, handler in apihandlers.default_handlers}


def test_every_refused_call_is_one_of_nbgraders_routes_with_that_method():
    routes = nbgrader_routes()
    for path, method in guard.REFUSED:
        handler = routes.get("/formgrader/api/" + path)
        assert handler is not None, path
        assert method.lower() in vars(handler), (path, method, handler)


def test_release_generate_collect_autograde_and_creation_are_refused_with_the_command_to_use():
    assert "autograder release" in guard.refusal("assignment/02_memory_wall/release", "POST")
    assert "autograder release" in guard.refusal("assignment/02_memory_wall/assign", "POST")
    assert "autograder release" in guard.refusal("assignment/02_memory_wall/unrelease", "POST")
    assert "autograder collect" in guard.refusal("assignment/02_memory_wall/collect", "POST")
    assert "autograder grade" in guard.refusal("submission/02_memory_wall/bob/autograde", "POST")
    assert "solutions/" in guard.refusal("assignment/new_one", "PUT")
    # what stays: reading, manual grading, feedback
    for path, method in (("assignment/02_memory_wall", "GET"), ("assignments", "GET"),
                         ("assignment/02_memory_wall/generate_feedback", "POST"),
                         ("assignment/02_memory_wall/release_feedback", "POST"),
                         ("assignment/02_memory_wall/bob/release_feedback", "POST"),
                         ("grade/7", "PUT"), ("submitted_notebook/7/flag", "POST")):
        assert guard.refusal(path, method) is None, (path, method)


def test_the_list_holds_released_assignments_and_those_handed_in_not_drafts():
    listed = [{"name": "01", "status": "released", "num_submissions": 0},
              {"name": "02", "status": "draft", "num_submissions": 0},
              {"name": "03", "status": "draft", "num_submissions": 4}]
    assert [a["name"] for a in guard.visible(listed)] == ["01", "03"]


def test_the_manage_assignments_page_loses_its_add_link_and_hides_the_buttons():
    from nbgrader.server_extensions.formgrader import handlers

    template = (Path(handlers.template_path) / "manage_assignments.tpl").read_bytes()
    assert guard._ADD_LINK.search(template), "nbgrader's template has no such link any more"
    page = b'<html><head><title>x</title></head><body>' + template + b'</body></html>'
    out = guard.page("/user/alice/formgrader/manage_assignments", page)
    assert b"createAssignmentModal" not in out
    assert b"td.release a" in out and b'id="autograder-note"' in out
    # each button's cell is one nbgrader's script fills in
    script = (Path(handlers.static_path) / "js" / "manage_assignments.js").read_text()
    for cls in re.findall(r"td\.(\w[\w-]*) a", guard.HIDDEN_CSS):
        if cls != "autograde":
            assert f'addClass("text-center {cls}")' in script, cls
    # other pages pass unchanged
    assert guard.page("/user/alice/formgrader/gradebook", page) is page


def test_a_hand_grade_goes_through_nbgraders_own_grade_route_and_then_the_penalty():
    """Issue 47: the Formgrader's hand grade left the late penalty of the old score; the guard
    answers nbgrader's own grade route with nbgrader's handler, then after_hand_grade."""
    from nbgrader.server_extensions.formgrader import apihandlers

    ours = dict(guard._handlers())
    pattern = "/formgrader/api/grade/([^/]+)"
    assert nbgrader_routes()[pattern] is apihandlers.GradeHandler
    assert issubclass(ours[pattern], apihandlers.GradeHandler) and "put" in vars(ours[pattern])


def test_the_manual_grading_page_of_a_late_notebook_says_its_penalty():
    """Issue 47: the Formgrader showed no penalty anywhere (27 there, 24.3 everywhere else)."""
    from nbgrader.server_extensions.formgrader import handlers

    ours = dict(guard._handlers())
    pattern = "/formgrader/submissions/([^/]+)/?"
    assert {r[0]: r[1] for r in handlers.default_handlers}[pattern] is handlers.SubmissionHandler
    assert issubclass(ours[pattern], handlers.SubmissionHandler)
    note = guard.penalty_note(2.7, 27.0)
    assert "Late submission penalty: -2.7 of this notebook's score 27, so 24.3 in the export" in note
    assert guard.penalty_note(0.0, 27.0) == ""
    page = b'<body><div class="container"><div class="panel">nb</div></div></body>'
    assert guard.with_note(page, note) == page.replace(b'<div class="container">',
                                                       b'<div class="container">' + note.encode())
    assert guard.with_note(page, "") == page and guard.with_note(b"<p>other</p>", note) == b"<p>other</p>"


def test_a_flagged_notebooks_page_says_why_and_how_to_unflag():
    note = guard.flag_note(["units: the prediction record looks edited", "<b>possible copy</b>"], "t3", "ann")
    assert "Flagged: units: the prediction record looks edited; &lt;b&gt;possible copy&lt;/b&gt;." in note
    assert "python -m autograder unflag t3 ann --reason" in note
    assert "flagged by hand (no reason recorded)" in guard.flag_note([], "t3", "ann")
