"""The Assignment List's "(view feedback)" opens the feedback page: nbgrader's exchange list, as
the students' server extension builds it from the hub kit's nbgrader config, gives the page's path
where nbgrader's own gives the folder (course_hub.feedback_link), and the course's JupyterLab
extension (course_lib/labextension/) opens the page nbgrader's link goes to."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

REPO = Path(__file__).resolve().parent.parent
STAMP = "2026-11-26 10:00:00.000000 UTC"


def layout(tmp_path: Path, fetched: bool) -> None:
    """A student who submitted assignment `a` (two notebooks) of course `c`, and fetched its
    feedback when `fetched`: nbgrader's cache of the submission, the pages in the student's
    folder, an empty exchange."""
    cached = tmp_path / "cache" / "c" / f"s+a+{STAMP}"
    cached.mkdir(parents=True)
    for name in ("lesson", "extra"):
        nbformat.write(nbformat.v4.new_notebook(), str(cached / f"{name}.ipynb"))
    folder = tmp_path / "home" / "c" / "a" / "feedback" / STAMP
    folder.mkdir(parents=True)
    if fetched:
        for name in ("lesson", "extra"):
            (folder / f"{name}.html").write_text("<html></html>")
    (tmp_path / "exchange" / "c").mkdir(parents=True)


def listed_feedback(tmp_path: Path, config: Config, fetched: bool = True) -> list:
    """What the Assignment List's handler is told for each submission of `layout`."""
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange import ExchangeFactory

    layout(tmp_path, fetched)
    c = Config(config)
    c.Exchange.root, c.Exchange.cache = str(tmp_path / "exchange"), str(tmp_path / "cache")
    c.Exchange.path_includes_course = True
    c.CourseDirectory.root, c.CourseDirectory.course_id = str(tmp_path / "home"), "c"
    c.ExchangeList.cached = True            # what the Assignment List's handler sets
    here = os.getcwd()
    os.chdir(tmp_path / "home")
    try:
        lister = ExchangeFactory(config=c).List(coursedir=CourseDirectory(config=c),
                                                authenticator=Authenticator(config=c), config=c)
        return [s["local_feedback_path"] for a in lister.start() for s in a["submissions"]]
    finally:
        os.chdir(here)


def kit_config() -> Config:
    """The hub kit's nbgrader config for every user (placeholders as setup.sh leaves them)."""
    return PyFileConfigLoader("nbgrader_config.student.py", path=str(REPO / "deploy" / "jupyterhub")).load_config()


def test_the_kit_configures_the_list():
    assert kit_config().ExchangeFactory.list == "course_hub.feedback_link.FeedbackPageList"


def test_view_feedback_points_at_the_page(tmp_path):
    got = listed_feedback(tmp_path, kit_config())
    assert got == [str(tmp_path / "home" / "c" / "a" / "feedback" / STAMP / "extra.html")], got
    assert Path(got[0]).is_file()


def test_nbgrader_alone_points_at_the_folder(tmp_path):
    """What the kit changes: nbgrader's own list gives the folder."""
    got = listed_feedback(tmp_path, Config())
    assert got == [str(tmp_path / "home" / "c" / "a" / "feedback" / STAMP)], got


def test_no_feedback_fetched_no_link(tmp_path):
    assert listed_feedback(tmp_path, kit_config(), fetched=False) == [None]


CHROMIUM = os.environ.get("BROWSER_TESTS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.mark.browser
@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK) and not os.environ.get("REQUIRE_BROWSER_TESTS"),
                    reason=f"needs chromium ({CHROMIUM})")
def test_view_feedback_in_jupyterlab_opens_the_page_typeset(tmp_path):
    """JupyterLab with the kit's nbgrader config, a student's submission with fetched feedback (a
    page the course's feedback exporter wrote, with a formula): Nbgrader -> Assignment List ->
    "(view feedback)" opens the page in JupyterLab's HTML viewer by itself (no double-click),
    where the formula is typeset (MathML laid out with a height), not shown as TeX; the file
    browser has moved to the feedback folder with the page selected."""
    from nbformat.v4 import new_markdown_cell
    from playwright.sync_api import sync_playwright
    from test_feedback_math import page as feedback_page

    home = tmp_path / "home"
    layout(tmp_path, fetched=True)
    (home / "c" / "a" / "feedback" / STAMP / "extra.html").write_text(
        feedback_page([new_markdown_cell(r"The ridge: $I^* = \frac{P}{B}$.")]))
    kit = (REPO / "deploy" / "jupyterhub" / "nbgrader_config.student.py").read_text()
    config = tmp_path / "config"
    config.mkdir()
    (config / "nbgrader_config.py").write_text(
        kit.replace("@COURSE_ID@", "c").replace("@EXCHANGE@", str(tmp_path / "exchange"))
        + f"\nc.Exchange.cache = {str(tmp_path / 'cache')!r}\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = os.urandom(12).hex()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(config), "JUPYTER_DATA_DIR": str(tmp_path / "data"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"), "HOME": str(home),
           "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    env.pop("JUPYTER_CONFIG_PATH", None)
    cmd = [str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={home}"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(tmp_path / "server.log", "w")
    server = subprocess.Popen(cmd, cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api?token={token}", timeout=5)
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()
                time.sleep(0.3)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"] if os.geteuid() == 0 else [])
            try:
                page = browser.new_page(viewport={"width": 1300, "height": 800})
                page.set_default_timeout(60_000)
                page.goto(f"http://127.0.0.1:{port}/lab/tree/c?token={token}")
                # the file browser has restored its folder (a later restore would undo the link's move)
                page.locator(".jp-DirListing-item", has_text="a").first.wait_for()
                page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
                page.locator(".lm-Menu-itemLabel").get_by_text("Assignment List", exact=True).click()
                page.get_by_text("(view feedback)").first.click()
                # the page opens by itself: nothing here double-clicks it
                tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current", has_text="extra.html")
                view = page.frame_locator(".jp-HTMLViewer iframe[sandbox]").first
                try:
                    tab.wait_for(timeout=30_000)
                    view.get_by_text("The ridge").wait_for(timeout=30_000)
                finally:
                    page.screenshot(path=str(tmp_path / "view-feedback.png"))
                box = view.locator("mfrac").first.bounding_box()
                assert box and box["height"] > 10, box     # typeset: numerator over denominator
                assert "\\frac" not in view.locator("body").inner_text()
                # the file browser is in the feedback folder (both pages listed), the page selected
                page.locator(".jp-DirListing-item.jp-mod-selected", has_text="extra.html").wait_for()
                assert page.locator(".jp-DirListing-item", has_text="lesson.html").count() == 1
                assert page.locator(".jp-DirListing-item.jp-mod-selected").count() == 1
                assert page.locator(".jp-HTMLViewer").count() == 1
            finally:
                browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)
        log.close()
