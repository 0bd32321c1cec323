"""Where the course is, and where its nbgrader exchange is, for `python -m autograder`.

The course directory holds nbgrader_config.py, solutions/ (the instructor notebooks), notebooks/
(the student release) and, unless --root says otherwise, the grading data. It is, in order:
`--course-dir`, `$AUTOGRADER_ROOT`, or the nearest folder holding nbgrader_config.py from the
working directory upward. The package may be installed anywhere (a shared hub environment):
nothing is looked up next to the installed code.

The exchange is: `--exchange ROOT`, `$AUTOGRADER_EXCHANGE`, an exchange plugin nbgrader's own
configuration selects (`c.ExchangeFactory`: the hub's course service, course_hub.nbexchange), or
the `Exchange.root` it sets (the course's nbgrader_config.py, then ~/.jupyter, the environment's
and the system's etc/jupyter, in nbgrader's order of precedence).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from course_hub.names import COURSE_ID

CONFIG_FILE = "nbgrader_config.py"
DEFAULT_SOURCE = "solutions"
DEFAULT_RELEASE = "notebooks"
#: `--exchange` given without a value: the configured exchange
CONFIGURED = "(configured)"


#: the course's id in nbgrader's exchange unless the course folder's COURSE_ID_FILE names another
DEFAULT_COURSE_ID = "roofline"
#: written by the hub kit (deploy/jupyterhub/setup.sh --course-id) into the instructor's copy
COURSE_ID_FILE = Path(".autograder") / "course-id"


def course_id_of(course_dir) -> str:
    """The course's id in nbgrader's exchange: what <course_dir>/.autograder/course-id says (one
    line, a short lower-case name), else roofline. A file that says anything else is an error."""
    path = Path(course_dir) / COURSE_ID_FILE
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return DEFAULT_COURSE_ID
    if not COURSE_ID.fullmatch(text):
        raise CourseNotFound(f"{path}: expected one short lower-case course id (letters, digits, _ -), "
                             f"found {text[:40]!r}")
    return text


class CourseNotFound(SystemExit):
    """A one-line explanation of where the course was looked for (exits the CLI with it)."""


@dataclass(frozen=True)
class CourseDir:
    path: Path
    source: Path
    release: Path
    found_by: str            # how it was found, for messages
    course_id: str = DEFAULT_COURSE_ID


def find_config_upward(start: Path) -> Path | None:
    """The nearest nbgrader_config.py in `start` or a folder above it."""
    start = Path(start).resolve()
    for folder in (start, *start.parents):
        if (folder / CONFIG_FILE).is_file():
            return folder / CONFIG_FILE
    return None


def _load(path: Path):
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    if not path.is_file():
        return Config()
    return PyFileConfigLoader(path.name, str(path.parent)).load_config()


def locate_course(course_dir: str | os.PathLike | None = None, environ=None, cwd=None) -> CourseDir:
    """The course directory (see the module's docstring), with its source and release folders as
    its nbgrader_config.py names them (solutions/ and notebooks/ unless it says otherwise)."""
    environ = os.environ if environ is None else environ
    if course_dir:
        path, found_by = Path(course_dir), "--course-dir"
    elif environ.get("AUTOGRADER_ROOT"):
        path, found_by = Path(environ["AUTOGRADER_ROOT"]), "$AUTOGRADER_ROOT"
    else:
        here = Path(cwd or os.getcwd())
        config = find_config_upward(here)
        if config is None:
            raise CourseNotFound(f"no course here: {here} and the folders above it hold no {CONFIG_FILE}; "
                                 f"pass --course-dir DIR or set AUTOGRADER_ROOT")
        path, found_by = config.parent, f"{config}"
    path = path.expanduser().resolve()
    if not path.is_dir():
        raise CourseNotFound(f"{path} (from {found_by}) is not a folder: expected the course directory")
    cd = _load(path / CONFIG_FILE).get("CourseDirectory", {})
    source = path / str(cd.get("source_directory", DEFAULT_SOURCE))
    release = path / str(cd.get("release_directory", DEFAULT_RELEASE))
    if not source.is_dir():
        raise CourseNotFound(f"{path} (from {found_by}) has no {source.name}/ folder of instructor notebooks: "
                             f"is it the course directory?")
    return CourseDir(path, source, release, found_by, course_id_of(path))


def configured_exchange(course_dir: Path | None = None) -> Path | None:
    """Exchange.root as nbgrader would read it, or None where nothing sets it."""
    from jupyter_core.paths import jupyter_config_path

    # nbgrader's precedence: the working directory's config, then jupyter_config_path() in order
    folders = ([Path(course_dir)] if course_dir else []) + [Path(p) for p in jupyter_config_path()]
    for folder in folders:
        try:
            root = _load(folder / CONFIG_FILE).get("Exchange", {}).get("root")
        except Exception:   # an unreadable or broken config elsewhere is not ours to judge
            continue
        if root:
            return Path(str(root))
    return None


@dataclass(frozen=True)
class PluginExchange:
    """An exchange nbgrader reaches through its configured plugin classes (c.ExchangeFactory), such
    as the hub's course service: autograder runs nbgrader's own commands with them."""

    classes: tuple          # ((operation, class name), ...)

    def apply(self, c) -> None:
        for op, cls in self.classes:
            setattr(c.ExchangeFactory, op, cls)

    def __str__(self) -> str:
        return "the exchange nbgrader's configuration selects (" + dict(self.classes).get("collect", "?") + ")"


def configured_exchange_factory(course_dir: Path | None = None) -> dict:
    """nbgrader's ExchangeFactory settings (operation -> class name) as its configuration files
    set them, in nbgrader's precedence; {} where none does (nbgrader's own folder exchange)."""
    from jupyter_core.paths import jupyter_config_path

    folders = ([Path(course_dir)] if course_dir else []) + [Path(p) for p in jupyter_config_path()]
    out: dict = {}
    for folder in reversed(folders):        # the lowest precedence first, overridden by the higher
        try:
            section = _load(folder / CONFIG_FILE).get("ExchangeFactory", {})
        except Exception:   # an unreadable or broken config elsewhere is not ours to judge
            continue
        out.update({str(k): str(v) for k, v in section.items() if isinstance(v, str)})
    return out


def exchange_of(explicit: str | None = None, course_dir: Path | None = None, environ=None,
                must_exist: bool = True) -> Path | PluginExchange:
    """The exchange to use: a folder given (`explicit`, $AUTOGRADER_EXCHANGE), else the plugin
    nbgrader's configuration selects (the hub's course service), else its Exchange.root."""
    environ = os.environ if environ is None else environ
    if not explicit and not environ.get("AUTOGRADER_EXCHANGE"):
        plugin = configured_exchange_factory(course_dir)
        if plugin.get("collect") and not plugin["collect"].startswith("nbgrader."):
            return PluginExchange(tuple(sorted(plugin.items())))
    return exchange_root(explicit, course_dir, environ, must_exist)


def exchange_root(explicit: str | None = None, course_dir: Path | None = None, environ=None,
                  must_exist: bool = True) -> Path:
    """The exchange: `explicit`, $AUTOGRADER_EXCHANGE, or nbgrader's configured Exchange.root;
    a one-line error if none of them names one, or (must_exist) the folder does not exist."""
    environ = os.environ if environ is None else environ
    if explicit:
        root, found_by = Path(explicit), "--exchange"
    elif environ.get("AUTOGRADER_EXCHANGE"):
        root, found_by = Path(environ["AUTOGRADER_EXCHANGE"]), "$AUTOGRADER_EXCHANGE"
    else:
        root, found_by = configured_exchange(course_dir), "nbgrader's Exchange.root"
        if root is None:
            raise SystemExit("no nbgrader exchange configured: pass --exchange ROOT, set AUTOGRADER_EXCHANGE, "
                             "or set c.Exchange.root in nbgrader_config.py")
    if must_exist and not root.is_dir():
        raise SystemExit(f"the exchange {root} (from {found_by}) does not exist: create it "
                         f"(deploy/jupyterhub/setup.sh does) or pass --exchange ROOT")
    return root.expanduser().resolve()
