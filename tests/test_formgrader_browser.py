"""Nothing a student supplies runs in a page the instructor opens (issue 28): a class of honest
students and hostile ones is graded through the real path (sandboxed, as root in CI), then
nbgrader's real Formgrader (a Jupyter server with nbgrader's extension, the course's
nbgrader_config.py and autograder.outputs.formgrader_csp, as the hub kit's instructor server has them) is
opened in Debian's chromium: every Manual Grading page, the gradebook's lists and each feedback
page. The payloads live in output metadata (an image's width), output data (SVG with script,
`<math>` tricks, entity-encoded `javascript:` links, markdown and LaTeX outputs), written answers
(entity-encoded links, handlers, MathML and TeX links) and a student's name. Each would call
alert(), fetch a `pwned` URL or log `PWNED`: the test fails on any dialog, any request to such a
URL, any console message from them or any injected script running, and checks that the honest
parts of every submission still show.
"""
from __future__ import annotations

import base64
import contextlib
import os
import socket
import struct
import subprocess
import sys
import time
import urllib.request
import zlib
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.grading.grade import cell_scores
from test_browser import CHROMIUM, MISSING, stop_server, sync_playwright     # Debian's chromium, or why not (REQUIRE_BROWSER_TESTS)
from tiny_course import FAST, SANDBOX, make_course, run_cli, student_nb, write_class

pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(MISSING), reason=str(MISSING)),
              pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")]

# each Manual Grading page as the instructor saw it (kept for a person to look at; git-ignored)
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts" / "formgrader"
Q1, Q2, REFLECTION = "t3units_q1_answer", "t3units_q2_answer", "t3units_q2_reflection"
RIGHT = {Q1: "from course_lib import Q_\nq1_time = Q_(7.36, 'ms')\nq1_regime = 'memory-bound'",
         Q2: "q2_bytes = Q_(16, 'GB')", REFLECTION: "Datasheets count bytes in powers of ten."}
CELLS = ("t3units_q1_form", "t3units_q1_correct", "t3units_q2_correct")
FULL = (1, 2, 2)


def _png(width: int = 8, height: int = 8) -> str:
    """A small opaque PNG, base64."""
    raw = b"".join(b"\x00" + b"\x30\x60\x90" * width for _ in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    return base64.b64encode(png).decode()


PNG = _png()
HONEST_PICTURE = ("from IPython.display import display\n"
                  f"display({{'image/png': {PNG!r}, 'text/plain': 'picture'}},\n"
                  "        metadata={'image/png': {'width': 200}}, raw=True)\nprint('HONEST-OUTPUT')\n")
# an image's metadata: nbconvert writes width and height unquoted (the red team's no-click hole)
IMAGE_METADATA = (
    "from IPython.display import display\n"
    f"_png = {PNG!r}\n"
    "display({'image/png': _png, 'text/plain': 'p1'}, raw=True,\n"
    "        metadata={'image/png': {'width': \"320 onerror=alert('PWNED-width')\"}})\n"
    "display({'image/jpeg': _png, 'text/plain': 'p2'}, raw=True,\n"
    "        metadata={'height': \"1 onerror=fetch('/pwned-height')\", 'filenames': {'image/jpeg': '/pwned-filename'},\n"
    "                  'text/html': {'isolated': True}})\n"
    "display({'image/png': 'AAAA\" onerror=\"alert(1)'}, raw=True)\n"
    "print('HONEST-OUTPUT')\n")
# output data: SVG with script, a <math> mutation trick, entity-encoded links, markdown and LaTeX
OUTPUT_DATA = (
    "from IPython.display import display\n"
    "display({'image/svg+xml': '<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"alert(1)\">"
    "<script>fetch(\"/pwned-svg\")</script></svg>'}, raw=True)\n"
    "display({'text/html': '<a id=\"evil\" href=\"&#106;avascript:fetch(&#39;/pwned-entity&#39;)\">entity link</a>"
    "<img src=\"/pwned-img\"><iframe src=\"/pwned-frame\"></iframe><form action=\"/pwned-form\"><button>go</button>"
    "</form><object data=\"/pwned-object\"></object><div style=\"background:url(/pwned-css)\">styled</div>'}, raw=True)\n"
    "display({'text/markdown': '[md link](javascript:fetch(\"/pwned-md-output\")) <img src=x onerror=alert(2)>'},"
    " raw=True)\n"
    "display({'text/latex': '$\\\\href{javascript:fetch(\"/pwned-latex\")}{tex link}$'}, raw=True)\n"
    "display({'application/javascript': 'fetch(\"/pwned-js\")', 'text/plain': 'js'}, raw=True)\n"
    # last: unsanitized, its unclosed <style> would swallow the rest of the page, hiding the others
    "display({'text/html': '<math><mtext><table><mglyph><style><img src=x onerror=alert(\"PWNED-math\")>'}, raw=True)\n"
    "print('HONEST-OUTPUT')\n")
# a written answer (the Formgrader always shows it: it is graded by hand)
WRITTEN = ("Powers of ten. [click me](&#106;avascript:fetch('/pwned-md-link')) "
           "<a href=\"&#x6A;avascript&#58;alert('PWNED-entity')\">entity</a> "
           "<img src=x onerror=\"console.log('PWNED-written')\"> "
           "<math><mi xlink:href=\"javascript:alert(3)\" href=\"javascript:alert(4)\">m</mi></math> "
           "$\\href{javascript:alert(5)}{tex}$ <svg><a href=\"javascript:alert(6)\"><text>svg</text></a></svg> "
           "<details open ontoggle=\"fetch('/pwned-toggle')\"><summary>s</summary>d</details> "
           "[my notes](notes.html) ![figure](figure.svg)")

STUDENT_FILES = {
    "notes.html": "<html><head><script>fetch('/pwned-file-html')</script></head><body onload=\"alert(1)\">n</body></html>",
    "figure.svg": '<svg xmlns="http://www.w3.org/2000/svg" onload="fetch(\'/pwned-file-svg\')"><script>alert(2)</script></svg>',
}
STUDENTS = {
    "honest": {"answers": RIGHT, "explore": HONEST_PICTURE},
    "imgmeta": {"answers": RIGHT, "explore": IMAGE_METADATA},
    "outdata": {"answers": RIGHT, "explore": OUTPUT_DATA},
    "written": {"answers": {**RIGHT, REFLECTION: WRITTEN}, "explore": None},
}
# HTML in a name the gradebook holds (entered by hand or by an LMS import): the Formgrader's
# templates write names unescaped, so only the page's policy stands between it and a script
NAMED = "named"
HOSTILE_NAME = "<img src=x onerror=\"fetch('/pwned-name')\">"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _course_config(c: Course) -> str:
    """The course's nbgrader_config.py for this course folder: the repository's own, with the
    paths of the test's course (it loads autograder's configuration the same way)."""
    text = (Path(__file__).resolve().parent.parent / "nbgrader_config.py").read_text()
    text = text.replace('c.CourseDirectory.source_directory = "solutions"',
                        f"c.CourseDirectory.source_directory = {str(c.source)!r}")
    text = text.replace('c.CourseDirectory.release_directory = "notebooks"',
                        f"c.CourseDirectory.release_directory = {str(c.release)!r}")
    assert str(c.source) in text and str(c.release) in text
    return text


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("formgrader")
    course = make_course(base / "tiny")
    c = Course(root=base / "course", source=course.source, release=course.release)
    c.root.mkdir()
    (c.root / "nbgrader_config.py").write_text(_course_config(c))
    nbs = {s: {"units.ipynb": student_nb(course, "t3", "units", **kw)} for s, kw in STUDENTS.items()}
    nbs[NAMED] = nbs["honest"]
    src = write_class(base / "in", course, "t3", nbs)
    common = ["--root", c.root, "--source", c.source, "--release-dir", c.release]
    run_cli("collect", "t3", src, *common)
    # files handed in beside the notebook (by the exchange or by hand: collect takes notebooks
    # only), which the Formgrader serves from the autograded folder, and the answer links to
    for name, data in STUDENT_FILES.items():
        (c.submitted / "written" / "t3" / name).write_text(data)
    # sandboxed where bubblewrap works (CI): the pages are the subject here, not the sandbox
    g = run_cli("grade", "t3", *common, *FAST, "-j", "2", *([] if SANDBOX else ["--no-sandbox"]),
                check=False, timeout=1200)
    fb = run_cli("feedback", "t3", *common, check=False)

    with c.gradebook() as gb:
        st = gb.find_student(NAMED)
        st.first_name, st.last_name = HOSTILE_NAME, HOSTILE_NAME
        gb.db.commit()
        ids = {s: gb.find_submission_notebook("units", "t3", s).id for s in nbs}
    return {"course": c, "grade": g, "feedback": fb, "ids": ids}


class Formgrader:
    """A Jupyter server in the course folder with nbgrader's Formgrader and the course's page
    policy enabled, on 127.0.0.1 with a token."""

    def __init__(self, root: Path, extensions=("autograder.outputs.formgrader_csp",)):
        import json

        self.tmp = root.parent / "jupyter"
        (self.tmp / "config").mkdir(parents=True, exist_ok=True)
        (self.tmp / "config" / "jupyter_server_config.json").write_text(json.dumps({"ServerApp": {
            "jpserver_extensions": {"nbgrader.server_extensions.formgrader": True, **dict.fromkeys(extensions, True)}}}))
        self.port, self.token = _free_port(), os.urandom(12).hex()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, JUPYTER_CONFIG_DIR=str(self.tmp / "config"), JUPYTER_DATA_DIR=str(self.tmp / "data"),
                   JUPYTER_RUNTIME_DIR=str(self.tmp / "runtime"), IPYTHONDIR=str(self.tmp / "ipython"),
                   PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
        env.pop("JUPYTER_CONFIG_PATH", None)
        cmd = [str(Path(sys.executable).parent / "jupyter"), "server", "--no-browser", "--ip=127.0.0.1",
               f"--port={self.port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}"]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        self.log_path = self.tmp / "server.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + 90
        while True:
            assert self.proc.poll() is None, self.log_path.read_text()[-3000:]
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=5):
                    break
            assert time.monotonic() < deadline, self.log_path.read_text()[-3000:]
            time.sleep(0.2)

    def stop(self):
        stop_server(self.proc)
        self.log.close()


@pytest.fixture(scope="module")
def session(graded):
    server = Formgrader(graded["course"].root)
    pw = sync_playwright().start()
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"] if os.geteuid() == 0 else [])
    context = browser.new_context()
    seen = {"dialogs": [], "requests": [], "console": []}
    context.on("request", lambda r: seen["requests"].append(r.url))
    page = context.new_page()
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.on("console", lambda m: seen["console"].append(f"{m.type}: {m.text}"))
    page.goto(f"{server.url}/api/status?token={server.token}")      # the token's cookie
    try:
        yield {"server": server, "page": page, "seen": seen, **graded}
    finally:
        browser.close()
        pw.stop()
        server.stop()


# nbgrader's formgrade template loads MathJax from this CDN (a fixed <script src> in its <head>); the
# page's policy refuses it, and needs none: every formula on the page is MathML already
TEMPLATE_MATHJAX = "https://cdnjs.cloudflare.com/ajax/libs/mathjax/"


def _payload_traces(seen: dict) -> list[str]:
    """What a payload that ran would have left: a dialog, a request to a pwned URL (or anywhere
    but this server), a console message naming it, or an inline script or handler the page's
    policy had to refuse (the sanitizer should have removed it first)."""
    traces = [f"dialog: {d}" for d in seen["dialogs"]]
    traces += [f"request: {u}" for u in seen["requests"] if "pwned" in u.lower()
               or not u.startswith(("http://127.0.0.1:", "data:", TEMPLATE_MATHJAX))]
    traces += [f"console: {m}" for m in seen["console"] if "pwned" in m.lower()
               or ("Content Security Policy" in m and TEMPLATE_MATHJAX not in m)]
    return traces


def _visit(session, path: str, settle_ms: int = 1500):
    seen = session["seen"]
    for v in seen.values():
        v.clear()
    page = session["page"]
    response = page.goto(session["server"].url + path)
    page.wait_for_load_state("load")
    page.wait_for_timeout(settle_ms)
    return response


def test_the_class_is_graded_and_every_submission_keeps_full_marks(graded):
    g = graded["grade"]
    assert f"graded {len(STUDENTS) + 1}, up to date 0, failed 0" in g.stdout, g.stdout + g.stderr[-3000:]
    scores = cell_scores(graded["course"].db_url, "t3")
    got = {s: tuple(scores[s][f"units/{c}"] for c in CELLS) for s in [*STUDENTS, NAMED]}
    assert got == {s: FULL for s in got}


@pytest.mark.parametrize("student", [s for s in STUDENTS if s != "honest"])
def test_manual_grading_of_a_hostile_submission_runs_nothing_and_shows_its_honest_parts(session, student):
    response = _visit(session, f"/formgrader/submissions/{session['ids'][student]}")
    assert response.status == 200
    page = session["page"]
    # its policy: only the Formgrader's own scripts
    csp = response.header_values("content-security-policy")
    assert any("script-src 'self'" in v and "object-src 'none'" in v for v in csp), csp
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"manual-grading-{student}.png"), full_page=True)
    text = page.inner_text("#notebook-container")
    # the honest parts: the answers' code, their outputs, the written answer's text, the grading controls
    assert "q1_regime = 'memory-bound'" in text and ("HONEST-OUTPUT" in text or student == "written")
    assert page.locator("input.score").count() >= 1
    if student == "written":
        assert "Powers of ten." in text
    links = page.eval_on_selector_all("#notebook-container a[href]", "els => els.map(e => e.href)")
    assert not [h for h in links if h.lower().startswith(("javascript:", "data:"))], links
    # click every link and summary of the notebook: a javascript: link left behind would run now,
    # a link to a file the student handed in opens it (sandboxed by the policy)
    url = page.url
    for i in range(page.locator("#notebook-container a, #notebook-container summary").count()):
        with contextlib.suppress(Exception):
            page.locator("#notebook-container a, #notebook-container summary").nth(i).click(timeout=1000)
            page.wait_for_timeout(300)
        if page.url != url:
            page.goto(url)
    page.wait_for_timeout(500)
    assert _payload_traces(session["seen"]) == []
    assert page.evaluate("typeof window.PWNED") == "undefined"


def test_the_honest_submission_shows_its_picture_at_its_width(session):
    _visit(session, f"/formgrader/submissions/{session['ids']['honest']}")
    page = session["page"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "manual-grading-honest.png"), full_page=True)
    assert _payload_traces(session["seen"]) == []
    img = page.locator(".output_png img").first
    assert img.get_attribute("width") == "200"
    assert page.evaluate("el => el.naturalWidth", img.element_handle()) == 8
    assert "Datasheets count bytes in powers of ten." in page.inner_text("#notebook-container")


def test_a_name_holding_html_runs_nothing_in_the_formgrader(session):
    """The name reaches the page unescaped (nbgrader's template): the policy refuses its handler."""
    for path in (f"/formgrader/submissions/{session['ids'][NAMED]}", "/formgrader/gradebook/t3/units",
                 "/formgrader/manage_students"):
        _visit(session, path)
        seen = session["seen"]
        assert not seen["dialogs"] and not [u for u in seen["requests"] if "pwned" in u], (path, seen)


FORMGRADER_PAGES = ("/formgrader", "/formgrader/manage_assignments", "/formgrader/manage_submissions/t3",
                    "/formgrader/gradebook", "/formgrader/gradebook/t3", "/formgrader/gradebook/t3/units",
                    "/formgrader/manage_students", "/formgrader/manage_students/honest",
                    "/formgrader/manage_students/honest/t3")


@pytest.mark.parametrize("path", FORMGRADER_PAGES)
def test_every_formgrader_page_works_under_the_policy(session, path):
    """The Formgrader's own scripts and handlers all run: nothing of the page is refused, and its
    tables fill in from its API."""
    response = _visit(session, path, settle_ms=2000)
    assert response.status == 200
    assert response.header_values("content-security-policy")
    refused = [m for m in session["seen"]["console"] if "Content Security Policy" in m and TEMPLATE_MATHJAX not in m]
    assert refused == []
    assert session["page"].locator("td").count() > 0, session["page"].content()[:2000]


@pytest.mark.parametrize("name", list(STUDENT_FILES))
def test_a_student_s_file_served_by_the_formgrader_runs_nothing(session, name):
    """nbgrader serves the files of a submission from its own origin (for a notebook's images):
    an HTML or SVG file opened there, from a link in the answer or typed, runs nothing."""
    response = _visit(session, f"/formgrader/submissions/{session['ids']['written']}/{name}")
    assert response.status == 200 and "sandbox" in " ".join(response.header_values("content-security-policy"))
    seen = session["seen"]
    assert not seen["dialogs"] and not [u for u in seen["requests"] if "pwned" in u.lower()], seen
    assert session["page"].evaluate("typeof window.PWNED") == "undefined"


@pytest.mark.parametrize("student", list(STUDENTS))
def test_each_feedback_page_runs_nothing(session, student):
    path = session["course"].feedback / student / "t3" / "units.html"
    assert path.is_file(), session["feedback"].stdout + session["feedback"].stderr[-2000:]
    seen = session["seen"]
    for v in seen.values():
        v.clear()
    page = session["page"]
    page.goto(path.as_uri())
    page.wait_for_timeout(1000)
    for link in page.locator("a, summary").all():
        with contextlib.suppress(Exception):
            link.click(timeout=1000, no_wait_after=True)
    assert not seen["dialogs"] and not [u for u in seen["requests"] if "pwned" in u.lower()], seen
    assert not [m for m in seen["console"] if "pwned" in m.lower()]
