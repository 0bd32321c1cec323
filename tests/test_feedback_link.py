"""The Assignment List's "(view feedback)" points at the feedback page (autograder.feedback_link):
nbgrader's exchange list, as the students' server extension builds it from the hub kit's
nbgrader config, gives the page's path where nbgrader's own gives the folder."""
from __future__ import annotations

import os
from pathlib import Path

import nbformat
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

REPO = Path(__file__).resolve().parent.parent
STAMP = "2026-11-26 10:00:00.000000 UTC"


def listed_feedback(tmp_path: Path, config: Config, fetched: bool = True) -> list:
    """A student who submitted assignment `a` of course `c` (and fetched its feedback when
    `fetched`): what the Assignment List's handler is told for each submission."""
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange import ExchangeFactory

    cached = tmp_path / "cache" / "c" / f"s+a+{STAMP}"
    cached.mkdir(parents=True)
    for name in ("lesson", "extra"):
        nbformat.write(nbformat.v4.new_notebook(), str(cached / f"{name}.ipynb"))
    folder = tmp_path / "home" / "c" / "a" / "feedback" / STAMP
    folder.mkdir(parents=True)
    if fetched:
        for name in ("lesson", "extra"):
            (folder / f"{name}.html").write_text("<html></html>")
    (tmp_path / "exchange").mkdir()
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
    assert kit_config().ExchangeFactory.list == "autograder.feedback_link.FeedbackPageList"


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
