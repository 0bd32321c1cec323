"""The student's view in a real browser: JupyterLab started as `make lab` starts it, driven by
Playwright in Debian's chromium (`apt-get install chromium`; never a downloaded browser).

For every notebook in notebooks/: open it, paste in a full set of answers (each taken from the
answer cell with the same nbgrader grade_id in solutions/), Run All, and check what the page
shows: no error output, every image drawn, every widget a widget, no WCAG 2.1 A/AA violation
that axe-core finds in the outputs and rendered markdown (tests/axe_check.py), each explorer's
slider reached with Tab and stepped with an arrow key, redrawing the chart, its alt text and the
numbers in its live region; nbgrader's Validate reporting success; and, with one answer missing,
Validate naming the unanswered question. Plus: students see only student tools
(deploy/student-jupyter), the instructor's `make lab` keeps Formgrader and Create Assignment.

Assertions are on the page's DOM, not on screenshots; a failing test leaves a screenshot, the
page's console and the notebook's text in artifacts/browser/. The timings the issue asks for
are printed at the end of the module (and written to artifacts/browser/timings.txt); they are
targets, not assertions.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import NamedTuple

import nbformat
import pytest

from axe_check import axe_violations, describe
from autograder.cell_code import assigned_names
from course_lib.exercises.question_ids import cell_id, is_solution
from autograder.authoring.cells import read_source

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*/*.ipynb"))
STUDENT_CONFIG = REPO / "deploy" / "student-jupyter"
ARTIFACTS = REPO / "artifacts" / "browser"
# Debian's chromium; BROWSER_TESTS_CHROMIUM names another chromium binary
CHROMIUM = os.environ.get("BROWSER_TESTS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - the dev extra installs it
    sync_playwright = None

MISSING = ("playwright is not installed (pip install -e '.[dev]')" if sync_playwright is None else
           "Debian's chromium is not installed (apt-get install chromium; .ci/run installs it)"
           if not os.access(CHROMIUM, os.X_OK) else None)
if MISSING and os.environ.get("REQUIRE_BROWSER_TESTS"):
    # .ci/run sets this: there the browser tests must run, a skip would hide their absence
    raise RuntimeError(f"REQUIRE_BROWSER_TESTS is set but {MISSING}")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(MISSING), reason=str(MISSING))]

# Console errors that are not the course's (each one justified here; nothing else passes).
# None is needed today: JupyterLab logs debug lines, and the Formgrader's iframe draws a
# Chromium *warning* (allow-scripts with allow-same-origin), which is not an error.
ALLOWED_CONSOLE: list[re.Pattern] = []

TIMINGS: dict[str, float] = {}


# ---- the lab ---------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A JupyterLab server on 127.0.0.1 with a token, run as `make lab` runs it: the venv's
    `jupyter lab notebooks/` from the course folder (here a throw-away copy of the course, so
    answers, checkpoints and a gradebook never land in the repository), `--allow-root` as root.
    Jupyter's per-user folders point into the copy: nothing of the machine's user leaks in."""

    def __init__(self, name: str, student: bool):
        self.tmp = Path(tempfile.mkdtemp(prefix=f"browser-{name}-"))
        self.course = self.tmp / "course"
        self.course.mkdir()
        for part in ("notebooks", "solutions"):
            shutil.copytree(REPO / part, self.course / part)
        shutil.copy(REPO / "nbgrader_config.py", self.course)
        self.port, self.token = _free_port(), os.urandom(12).hex()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ,
                   JUPYTER_CONFIG_DIR=str(self.tmp / "config"),
                   JUPYTER_DATA_DIR=str(self.tmp / "data"),
                   JUPYTER_RUNTIME_DIR=str(self.tmp / "runtime"),
                   JUPYTERLAB_SETTINGS_DIR=str(self.tmp / "settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(self.tmp / "workspaces"),
                   IPYTHONDIR=str(self.tmp / "ipython"),
                   # as `make lab`: the venv's bin/ first (nbgrader's Formgrader runs `alembic`)
                   PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
        env.pop("JUPYTER_CONFIG_PATH", None)
        if student:
            env["JUPYTER_CONFIG_PATH"] = str(STUDENT_CONFIG)
        cmd = [str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser",
               "--ip=127.0.0.1", f"--port={self.port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={self.token}", "notebooks/"]
        if os.geteuid() == 0:
            cmd.append("--allow-root")               # as the Makefile's ROOTFLAG
        self.log = open(self.tmp / "server.log", "w")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(cmd, cwd=self.course, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_until_up()
        except BaseException:
            self.stop()
            raise

    def _wait_until_up(self, timeout=90):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.log.flush()
                raise RuntimeError(f"jupyter lab exited: {(self.tmp / 'server.log').read_text()[-3000:]}")
            if self.status("/api/status") == 200:
                return
            time.sleep(0.2)
        raise RuntimeError(f"jupyter lab did not answer within {timeout} s")

    def status(self, path: str, token=True, follow=False) -> int:
        """HTTP status of GET `path` (with the token unless told otherwise); redirects are
        followed only when asked."""
        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *a, **k):
                return None
        opener = urllib.request.build_opener(*([] if follow else [NoRedirect]))
        if token:
            opener.addheaders = [("Authorization", f"token {self.token}")]
        try:
            with opener.open(self.url + path, timeout=10) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return 0

    def api(self, method: str, path: str):
        req = urllib.request.Request(self.url + path, method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read()
        return json.loads(body) if body else None

    def fresh_copy(self, rel: str):
        """Put the committed student notebook back (an earlier test saved answers into it) and
        shut its kernels down, so every test starts as a student who just opened the lesson."""
        for session in self.api("GET", "/api/sessions"):
            self.api("DELETE", f"/api/sessions/{session['id']}")
        shutil.copy(REPO / "notebooks" / rel, self.course / "notebooks" / rel)
        # and no prediction record yet (course_lib.exercises.predictions)
        (self.course / "notebooks" / rel).with_name(".predictions.jsonl").unlink(missing_ok=True)

    def page_url(self, path="lab") -> str:
        return f"{self.url}/{path}?token={self.token}"

    def stop(self):
        stop_server(self.proc)
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def stop_server(proc: subprocess.Popen) -> None:
    """A Jupyter server started in a session of its own, stopped: SIGTERM lets it shut its
    kernels down (they run in sessions of their own), SIGKILL to the group after 20 s."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.fixture(scope="module")
def browser():
    pw = sync_playwright().start()
    args = ["--no-sandbox"] if os.geteuid() == 0 else []     # chromium's sandbox refuses root
    b = pw.chromium.launch(executable_path=CHROMIUM, args=args)
    yield b
    b.close()
    pw.stop()


def _lab_fixture(name, student):
    def fixture(browser):
        lab = Lab(name, student)
        try:
            # "lab ready": from starting the server to the file browser listing the lessons
            page = browser.new_page()
            page.goto(lab.page_url())
            page.wait_for_selector(".jp-DirListing-item", timeout=90_000)
            TIMINGS[f"lab ready ({name})"] = time.perf_counter() - lab.started
            page.close()
            yield lab
        finally:
            lab.stop()
    return pytest.fixture(scope="module", name=f"{name}_lab")(fixture)


student_lab = _lab_fixture("student", student=True)
instructor_lab = _lab_fixture("instructor", student=False)


@pytest.fixture(scope="module", autouse=True)
def print_timings(request):
    yield
    if not TIMINGS:
        return
    lines = ["browser timings (targets, not assertions; one slider step should be < 0.3 s):"]
    lines += [f"  {what:58s} {t:6.2f} s" for what, t in TIMINGS.items()]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "timings.txt").write_text("\n".join(lines) + "\n")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:   # e.g. pytest-xdist workers: the file has them
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        for line in lines:
            reporter.write_line(line)


# ---- one page, with its console, and evidence when something fails --------------------------
class Page:
    def __init__(self, browser, name):
        self.name = name
        # a HiDPI screen: the explorers' charts must stay sharp on one
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                           device_scale_factor=2)
        self.page = self.context.new_page()
        self.page.set_default_timeout(60_000)
        self.console: list[str] = []
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))

    def errors(self) -> list[str]:
        return [m for m in self.console if m.startswith(("error:", "pageerror:"))
                and not any(p.search(m) for p in ALLOWED_CONSOLE)]

    @contextlib.contextmanager
    def evidence(self):
        """On failure: a screenshot, the console and the page's text in artifacts/browser/."""
        try:
            yield self.page
        except BaseException:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            stem = ARTIFACTS / re.sub(r"[^A-Za-z0-9_.-]+", "_", self.name)
            with contextlib.suppress(Exception):
                self.page.screenshot(path=f"{stem}.png", full_page=True)
            with contextlib.suppress(Exception):
                Path(f"{stem}.console.txt").write_text("\n".join(self.console) + "\n")
                Path(f"{stem}.text.txt").write_text(self.page.inner_text("body"))
            print(f"browser evidence saved: {stem}.png, {stem}.console.txt, {stem}.text.txt")
            raise
        finally:
            self.context.close()


# ---- notebook helpers ------------------------------------------------------------------------
KERNEL_IDLE = """() => [...document.querySelectorAll('.jp-StatusBar-TextItem')]
                      .some(e => /\\|\\s*Idle/.test(e.textContent))"""
CELL = '.jp-WindowedPanel-viewport > .jp-Cell[data-windowed-list-index="{}"]'


def grade_id(cell) -> str | None:
    return cell_id(cell) or None


def answers_from_solutions(path: Path) -> dict[str, str]:
    """grade_id -> the solution's answer, as a student would type it (no BEGIN/END markers):
    every answer cell, code and written (a written answer is also a manually graded cell)."""
    source = REPO / "solutions" / path.relative_to(REPO / "notebooks")
    nb = read_source(source)
    return {grade_id(c): "\n".join(line for line in c.source.splitlines()
                                   if not re.search(r"#+\s*(BEGIN|END) SOLUTION", line))
            for c in nb.cells
            if is_solution(c)}


def open_notebook(page, lab, rel: str, n_cells: int) -> float:
    """Open notebooks/<rel> in a workspace of its own (JupyterLab would otherwise reopen the
    tabs of earlier tests); wait for the kernel to be idle (returns the seconds that took) and
    for every cell to be laid out."""
    t0 = time.perf_counter()
    page.goto(lab.page_url(f"lab/workspaces/{os.urandom(6).hex()}/tree/{rel}"))
    # once in a while JupyterLab asks for a kernel on load (a race): accept its choice
    page.wait_for_function(f"() => ({KERNEL_IDLE})() || !!document.querySelector('.jp-Dialog')",
                           timeout=90_000)
    dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
    if dialog.count():
        dialog.locator(".jp-mod-accept").click()
        page.wait_for_function(KERNEL_IDLE, timeout=90_000)
    idle = time.perf_counter() - t0
    page.wait_for_function(
        f"() => document.querySelectorAll('.jp-WindowedPanel-viewport > .jp-Cell').length >= {n_cells}")
    news = page.locator(".Toastify__toast", has_text="Jupyter news")   # answer it if it is up
    if news.count():
        news.get_by_role("button", name="No", exact=True).click()
    return idle


def set_cell(page, index: int, text: str):
    """Replace cell `index`'s text as a student would: select the cell, Enter to edit,
    select all, type (inserted as one paste; the editor does not auto-indent it)."""
    cell = page.locator(CELL.format(index))
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputPrompt").first.click()
    page.keyboard.press("Enter")
    page.wait_for_selector(CELL.format(index) + " .cm-editor.cm-focused")
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)
    page.keyboard.press("Escape")


def run_all(page, last_code_index: int):
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()
    page.wait_for_function(
        """i => { const c = document.querySelector(
                      `.jp-WindowedPanel-viewport > .jp-Cell[data-windowed-list-index="${i}"]`);
                  return c && /\\[\\d+\\]/.test(c.querySelector('.jp-InputPrompt').textContent); }""",
        arg=last_code_index, timeout=180_000)
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)


def validate(page) -> str:
    """Click nbgrader's Validate; the dialog's text once it has an answer."""
    page.locator(".validate-button").click()
    dialog = page.locator(".jp-Dialog")
    # the dialog opens once the server has validated (it re-runs the notebook: lesson 5
    # measures this machine again), so it gets the same time as its answer below
    dialog.wait_for(timeout=180_000)
    page.wait_for_function("() => { const d = document.querySelector('.jp-Dialog');"
                           " return d && /Validation Results|Success|fail|rror/.test(d.textContent)"
                           " && !/Validating/.test(d.textContent); }", timeout=180_000)
    text = dialog.inner_text()
    dialog.locator(".jp-mod-accept, .jp-Dialog-button").last.click()
    dialog.wait_for(state="detached")
    return text


def notebook_cases():
    return [pytest.param(p, id=p.parent.name) for p in NOTEBOOKS]


# ---- 1. each lesson, answered, in the browser -------------------------------------------------
@pytest.mark.parametrize("path", notebook_cases())
def test_answered_lesson_runs_and_validates(path, browser, student_lab):
    rel = str(path.relative_to(REPO / "notebooks"))
    nb = nbformat.read(path, as_version=4)
    answers = answers_from_solutions(path)
    targets = [(i, grade_id(c)) for i, c in enumerate(nb.cells) if grade_id(c) in answers]
    assert targets, f"{rel}: no answer cells matched solutions/ by grade_id"
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    explorer_cells = [i for i in code if re.search(r"\w*explorer\(", nb.cells[i].source)]
    student_lab.fresh_copy(rel)
    p = Page(browser, f"answered-{path.parent.name}")
    with p.evidence() as page:
        TIMINGS[f"open to kernel idle: {path.parent.name}"] = open_notebook(
            page, student_lab, rel, len(nb.cells))

        for i, gid in targets:
            set_cell(page, i, answers[gid])
        t0 = time.perf_counter()
        run_all(page, code[-1])
        TIMINGS[f"Run All, answered: {path.parent.name}"] = time.perf_counter() - t0

        # every code cell ran (the numbered prompts), none wrote an error or to stderr
        prompts = page.eval_on_selector_all(
            ".jp-WindowedPanel-viewport > .jp-CodeCell .jp-InputArea-prompt",
            "els => els.map(e => e.textContent.trim())")
        unrun = [s for s in prompts if not re.fullmatch(r"\[\d+\]:", s)]
        assert len(prompts) == len(code) and not unrun, f"cells that did not run: {unrun}"
        errors = page.eval_on_selector_all(
            '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]',
            "els => els.map(e => e.textContent.slice(0, 500))")
        assert not errors, f"{rel}: error or stderr output after Run All:\n" + "\n---\n".join(errors)

        # every image is drawn (has a decoded, non-empty bitmap)
        page.wait_for_function("() => [...document.querySelectorAll('.jp-OutputArea-output img')]"
                               ".every(i => i.complete)")
        images = page.eval_on_selector_all(
            ".jp-OutputArea-output img", "els => els.map(i => [i.naturalWidth, i.naturalHeight])")
        assert images and all(w > 0 and h > 0 for w, h in images), f"{rel}: images {images}"

        # every widget is a widget, not its text fallback or an error
        text = page.inner_text(".jp-NotebookPanel .jp-Notebook")
        for bad in ("VBox(", "HBox(", "interactive(", "Error displaying widget",
                    "Failed to load model class"):
            assert bad not in text, f"{rel}: a widget rendered as text: {bad!r}"
        for i in explorer_cells:     # each explorer: a widget box with sliders and a chart
            out = page.locator(CELL.format(i) + " .jp-OutputArea-output")
            assert out.locator(".widget-vbox .course-slider input[type=range]").count() > 0, (
                f"{rel}: cell {i} has no slider")
            assert out.locator("img.widget-image").count() == 1, f"{rel}: cell {i} has no chart"

        # WCAG 2.1 A/AA (axe-core) over the lesson's own content: every output area and every
        # rendered markdown cell, after Run All with correct answers (issue 21)
        violations = axe_violations(page, [".jp-Notebook .jp-OutputArea-output",
                                           ".jp-Notebook .jp-MarkdownOutput"])
        assert not violations, f"{rel}: axe-core finds WCAG 2 A/AA violations:\n{describe(violations)}"
        # formulas read aloud: each typeset formula carries MathML for assistive technology
        math = page.eval_on_selector_all(".jp-MarkdownOutput mjx-container",
                                         "els => els.map(e => !!e.querySelector('mjx-assistive-mml math'))")
        has_math = any(c.cell_type == "markdown" and "$" in c.source for c in nb.cells)
        assert math or not has_math, f"{rel}: no formula was typeset"
        assert all(math), f"{rel}: {math.count(False)} of {len(math)} formulas have no MathML to read aloud"

        for n, i in enumerate(explorer_cells):
            step = check_explorer(page, page.locator(CELL.format(i)), rel)
            TIMINGS[f"slider step to new chart: {path.parent.name} #{n + 1}"] = step

        result = validate(page)
        assert "Success" in result and "failed" not in result, f"{rel}: Validate said:\n{result}"
        assert not p.errors(), f"{rel}: browser console errors:\n" + "\n".join(p.errors())


def check_explorer(page, cell, rel) -> float:
    """The explorer in `cell` is a sharp chart with sliders, operable from the keyboard: Tab
    (backwards, from the chip's dropdown) reaches its first slider, which is named; one right
    arrow redraws the chart, and the chart's alt text and the numbers in the live region
    change. Returns the seconds from the key press to the new chart decoded in the page."""
    chart = cell.locator("img.widget-image").first
    numbers = cell.locator(".course-live[role=status][aria-live=polite]").first
    slider = cell.locator(".course-slider input[type=range]").first
    chart.scroll_into_view_if_needed()
    size = chart.evaluate("i => [i.naturalWidth, i.clientWidth, window.devicePixelRatio]")
    assert size[1] > 0 and size[0] >= size[1] * size[2] - 1, (
        f"{rel}: explorer chart {size[0]} px wide shown {size[1]} CSS px wide at "
        f"devicePixelRatio {size[2]}: blurry")
    before_src, before_numbers = chart.get_attribute("src"), numbers.inner_text()
    before_alt = chart.get_attribute("alt")
    assert before_alt and len(before_alt) > 40, f"{rel}: the explorer's chart has no text: {before_alt!r}"
    # keyboard only: from the control after the slider (the next slider or the chip dropdown),
    # Shift+Tab lands on the slider
    slider.evaluate("""s => { const all = [...s.closest('.widget-vbox').querySelectorAll('input, select')];
                              all[all.indexOf(s) + 1].focus(); }""")
    page.keyboard.press("Shift+Tab")
    focused = slider.evaluate("s => document.activeElement === s")
    assert focused, f"{rel}: Shift+Tab from the control after it does not reach the slider"
    name = slider.evaluate("s => s.labels.length ? s.labels[0].textContent : ''")
    assert name.strip(), f"{rel}: the slider has no label"
    t0 = time.perf_counter()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "([img, src]) => img.src !== src && img.complete && img.naturalWidth > 0",
        arg=[chart.element_handle(), before_src], polling="raf", timeout=30_000)
    step = time.perf_counter() - t0
    page.wait_for_function("([el, t]) => el.innerText !== t",
                           arg=[numbers.element_handle(), before_numbers], timeout=30_000)
    assert numbers.inner_text() != before_numbers
    after_alt = chart.get_attribute("alt")
    assert after_alt and after_alt != before_alt, f"{rel}: the chart's alt text did not follow the slider"
    return step


# ---- 2. one answer missing: Validate names the question ---------------------------------------
def error_messages(dialog: str, sources: list[str]) -> str:
    """What Validate's dialog says in its own words: the error messages, without the failing
    cells' source and the traceback's code listing (which name every variable anyway)."""
    for src in sources:
        dialog = dialog.replace(src, "")
    chrome = ("Validation Results", "The following cell failed", "Cell In[", "----", "Traceback",
              "File ", "Ok")
    return "\n".join(line for line in dialog.splitlines()
                     if line.strip() and not line[0].isspace() and not line.startswith(chrome))


@pytest.mark.parametrize("path", notebook_cases())
def test_validate_names_the_unanswered_question(path, browser, student_lab):
    """Contract with the form checks (course_lib.exercises.checks / the notebooks' form cells): an
    unanswered question is reported by its variable's name, not as a NameError."""
    rel = str(path.relative_to(REPO / "notebooks"))
    nb = nbformat.read(path, as_version=4)
    answers = answers_from_solutions(path)
    targets = [(i, grade_id(c)) for i, c in enumerate(nb.cells) if grade_id(c) in answers]
    code_answers = [(i, g) for i, g in targets if nb.cells[i].cell_type == "code"]
    skip_i, skip_gid = code_answers[min(1, len(code_answers) - 1)]      # the second question
    # the names it should have defined that a visible form check reads
    form_cells = [c.source for c in nb.cells
                  if c.cell_type == "code" and (grade_id(c) or "").endswith("_form")]
    wanted = [n for n in assigned_names(answers[skip_gid]) if any(n in s for s in form_cells)]
    assert wanted, f"{rel}: no form check reads what {skip_gid} defines"

    student_lab.fresh_copy(rel)
    p = Page(browser, f"missing-{path.parent.name}")
    with p.evidence() as page:
        open_notebook(page, student_lab, rel, len(nb.cells))
        for i, gid in targets:
            if i != skip_i:
                set_cell(page, i, answers[gid])
        result = validate(page)
        said = error_messages(result, form_cells)
        assert "Success" not in result, f"{rel}: Validate passed with {skip_gid} unanswered"
        assert any(n in said for n in wanted), (
            f"{rel}: with {skip_gid} unanswered, Validate does not name {wanted}:\n{result}")
        assert "NameError" not in result, (
            f"{rel}: with {skip_gid} unanswered, Validate shows a NameError instead of saying "
            f"the question is not answered yet:\n{result}")
        assert not p.errors(), f"{rel}: browser console errors:\n" + "\n".join(p.errors())


# ---- 3. students see student tools; the instructor keeps the instructor's ---------------------
def _tools(page) -> dict:
    menus = page.eval_on_selector_all(".lm-MenuBar-itemLabel", "els => els.map(e => e.textContent)")
    tabs = page.eval_on_selector_all(".jp-SideBar .lm-TabBar-tab",
                                     "els => els.map(e => e.title || e.textContent)")
    items = []
    if "Nbgrader" in menus:
        page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
        items = page.eval_on_selector_all(".lm-Menu-itemLabel", "els => els.map(e => e.textContent)")
        page.keyboard.press("Escape")
    return {"menus": menus, "tabs": tabs, "nbgrader_menu": items,
            "validate": page.locator(".validate-button").count()}


def test_instructor_lab_keeps_formgrader_and_create_assignment(browser, instructor_lab):
    rel = str(NOTEBOOKS[0].relative_to(REPO / "notebooks"))
    assert instructor_lab.status("/formgrader", follow=True) == 200
    p = Page(browser, "instructor-tools")
    with p.evidence() as page:
        open_notebook(page, instructor_lab, rel, len(nbformat.read(NOTEBOOKS[0], as_version=4).cells))
        tools = _tools(page)
        assert "Formgrader" in tools["nbgrader_menu"], tools
        assert any("Create Assignment" in t for t in tools["tabs"]), tools
        assert tools["validate"] == 1
        # the Formgrader opens and lists the course's assignments from solutions/
        page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
        page.locator(".lm-Menu-itemLabel").get_by_text("Formgrader", exact=True).click()
        frame = page.frame_locator("iframe[src*='formgrader']")
        first = NOTEBOOKS[0].parent.name
        frame.locator("#main-table, table").first.wait_for()
        frame.get_by_text(first).first.wait_for(timeout=60_000)
        assert not p.errors(), "browser console errors:\n" + "\n".join(p.errors())


def test_student_lab_shows_only_student_tools(browser, student_lab):
    rel = str(NOTEBOOKS[0].relative_to(REPO / "notebooks"))
    assert student_lab.status("/formgrader") == 404
    assert student_lab.status("/formgrader", token=False) == 404
    p = Page(browser, "student-tools")
    with p.evidence() as page:
        open_notebook(page, student_lab, rel, len(nbformat.read(NOTEBOOKS[0], as_version=4).cells))
        tools = _tools(page)
        assert "Nbgrader" not in tools["menus"], f"an instructor menu for students: {tools}"
        assert not any("Create Assignment" in t or "Assignment" in t for t in tools["tabs"]), tools
        assert tools["validate"] == 1, "students keep Validate"
        # the command palette offers none of the instructor's tools, nor the Assignment List
        page.keyboard.press("Control+Shift+C")
        palette = page.locator(".lm-CommandPalette-input")
        palette.wait_for()
        for word in ("Formgrader", "Create Assignment", "Assignment List", "Course List"):
            palette.fill(word)
            found = page.eval_on_selector_all(".lm-CommandPalette-itemLabel",
                                              "els => els.map(e => e.textContent)")
            assert not [f for f in found if word.lower() in f.lower()], f"{word}: {found}"
        page.keyboard.press("Escape")
        body = page.inner_text("body")
        assert "Error fetching" not in body and "exchange directory" not in body
        assert not p.errors(), "browser console errors:\n" + "\n".join(p.errors())


# ---- predictions count as committed (course_lib.exercises.predictions) -----------------------
class FreshLesson(NamedTuple):
    rel: str            # its path under notebooks/
    n_cells: int
    at: dict            # grade_id -> the cell's index
    answers: dict       # grade_id -> the solution's answer (answers_from_solutions)


def fresh_lesson(lab, assignment: str) -> FreshLesson:
    """Lesson `assignment` as a student starts it: a fresh copy in `lab`, its cells' indices by
    grade_id and the solution's answers. Skips the test when notebooks/ does not hold it."""
    path = next((p for p in NOTEBOOKS if p.parent.name == assignment), None)
    if path is None:
        pytest.skip(f"lesson {assignment} is not in notebooks/")
    rel = str(path.relative_to(REPO / "notebooks"))
    nb = nbformat.read(path, as_version=4)
    lab.fresh_copy(rel)
    return FreshLesson(rel, len(nb.cells), {grade_id(c): i for i, c in enumerate(nb.cells) if grade_id(c)},
                       answers_from_solutions(path))


def run_cell(page, index: int) -> str:
    """Run one cell as a student does (select it, Shift+Enter); its output text once done."""
    cell = page.locator(CELL.format(index))
    cell.scroll_into_view_if_needed()
    before = cell.locator(".jp-InputPrompt").first.text_content()
    cell.locator(".jp-InputPrompt").first.click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(
        """([i, before]) => { const c = document.querySelector(
                 `.jp-WindowedPanel-viewport > .jp-Cell[data-windowed-list-index="${i}"]`);
               const p = c && c.querySelector('.jp-InputPrompt').textContent;
               return p && /\\[\\d+\\]/.test(p) && p !== before; }""",
        arg=[index, before], timeout=90_000)
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)
    return cell.locator(".jp-OutputArea").inner_text()


def test_verify_shows_the_truth_only_for_a_committed_prediction(browser, student_lab):
    """A student runs Q1's verify cell before its form check: no truth, a message saying what to
    run; after the form check the truth is shown. The saved notebook and the folder both keep
    the record (commit, then reveal)."""
    rel, n_cells, at, answers = fresh_lesson(student_lab, "02_memory_wall")
    p = Page(browser, "predictions-02_memory_wall")
    with p.evidence() as page:
        open_notebook(page, student_lab, rel, n_cells)
        run_cell(page, at["wall_setup"])
        set_cell(page, at["wall_q1_prediction"], answers["wall_q1_prediction"])
        run_cell(page, at["wall_q1_prediction"])
        early = run_cell(page, at["wall_q1_verify"])
        assert "no committed prediction yet" in early and "run the form check" in early, early
        assert "bandwidth ratio" not in early and "course_lib:" not in early, early   # no truth shown
        committed = run_cell(page, at["wall_q1_form"])
        assert "Q1: answer committed at" in committed, committed
        shown = run_cell(page, at["wall_q1_verify"])
        assert "Q1: the truth is shown below" in shown and "Your prediction holds" in shown, shown
        page.keyboard.press("Control+s")
        saved = student_lab.course / "notebooks" / rel
        page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=30_000)
        outs = [o for c in nbformat.read(saved, as_version=4).cells for o in c.get("outputs", [])]
        chains = [o["data"]["application/vnd.roofline.predictions+json"]["events"] for o in outs
                  if "application/vnd.roofline.predictions+json" in o.get("data", {})]
        assert [e["kind"] for e in max(chains, key=len)] == ["commit", "reveal"], chains
        record = saved.with_name(".predictions.jsonl").read_text().splitlines()
        assert [json.loads(line)["kind"] for line in record] == ["commit", "reveal"]
        assert not p.errors(), "browser console errors:\n" + "\n".join(p.errors())
