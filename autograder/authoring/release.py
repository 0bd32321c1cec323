"""Release: student notebooks generated from the nbgrader sources in solutions/.

`generate(dest)` runs nbgrader's generate_assignment in a throw-away course directory (so no
gradebook is left behind) and writes `dest/<assignment>/<notebook>.ipynb`. The committed
notebooks/ folder is exactly what `generate` produces; a test checks it.

The header every lesson shares ("Running this notebook") is kept once, in
solutions/running_this_notebook.md; a source notebook names it with the line HEADER_MARK,
which the release replaces with the file's text.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

# The development checkout this package is imported from (an editable install: `make release`,
# the tests). An installed copy has no course next to it: the CLI locates the course instead
# (autograder.locate: --course-dir, $AUTOGRADER_ROOT, nbgrader_config.py upward).
REPO = Path(__file__).resolve().parent.parent.parent
SOURCE = REPO / "solutions"
RELEASE = REPO / "notebooks"
HEADER_FILE = "running_this_notebook.md"
HEADER_MARK = f"<!-- {HEADER_FILE}: the header all lessons share, put here by make release -->"


def assignments(source: Path = SOURCE) -> list[str]:
    """Assignment folders in solutions/, in course order."""
    return sorted(p.name for p in source.iterdir() if p.is_dir() and any(p.glob("*.ipynb")))


def ensure_tools_on_path() -> None:
    """nbgrader runs `alembic` as a command to create its gradebook: put this interpreter's
    scripts folder (the venv's bin/) on PATH so it is found without an activated venv.
    (And spare that 2-second command where the answer can be read from nbgrader's files.)"""
    import os
    import sys

    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    _fast_alembic_version()


def alembic_head() -> str | None:
    """The head revision of nbgrader's gradebook migrations, read from its alembic scripts:
    what `alembic heads` prints, which nbgrader runs (a 2 s subprocess) for every new gradebook."""
    import re

    import nbgrader

    versions = Path(nbgrader.__file__).parent / "alembic" / "versions"
    revisions, downs = set(), set()
    for f in versions.glob("*.py"):
        text = f.read_text()
        m = re.search(r"^revision\s*=\s*['\"]([0-9A-Za-z_]+)['\"]", text, re.M)
        if m:
            revisions.add(m.group(1))
        d = re.search(r"^down_revision\s*=\s*(.+)$", text, re.M)
        if d:
            downs.update(re.findall(r"['\"]([0-9A-Za-z_]+)['\"]", d.group(1)))
    heads = revisions - downs
    return heads.pop() if len(heads) == 1 else None


def _fast_alembic_version() -> None:
    import nbgrader.api

    if getattr(nbgrader.api.get_alembic_version, "_autograder", False):
        return
    head = alembic_head()
    if head:
        def get_alembic_version() -> str:
            return head

        get_alembic_version._autograder = True
        nbgrader.api.get_alembic_version = get_alembic_version


def nbgrader_config(root: Path, source="source", release="release", db: Path | None = None):
    """A traitlets Config for a course rooted at `root`."""
    from traitlets.config import Config

    c = Config()
    c.CourseDirectory.root = str(root)
    c.CourseDirectory.course_id = "roofline"
    c.CourseDirectory.source_directory = source
    c.CourseDirectory.release_directory = release
    c.CourseDirectory.db_url = "sqlite:///" + str(db or (Path(root) / "gradebook.db"))
    c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
    c.Execute.timeout = 120
    # a submission that deletes a test cell is graded by the original test, put back
    c.OverwriteCells.add_missing_cells = True
    c.Exchange.root = str(Path(root) / "exchange")
    # a declared question's form check, hidden test, verify and given cells are generated
    from autograder.authoring.cells import configure

    configure(c)
    return c


def generate(dest: Path = RELEASE, only: list[str] | None = None, source: Path = SOURCE) -> list[Path]:
    """Generate the student release of each assignment into `dest`; returns the notebooks written."""
    from nbgrader.apps import NbGraderAPI

    ensure_tools_on_path()
    dest = Path(dest)
    written = []
    with tempfile.TemporaryDirectory(prefix="release-") as tmp:
        root = Path(tmp)
        # a prediction record left by running a notebook in the checkout is nobody's to hand out
        shutil.copytree(source, root / "source", ignore=shutil.ignore_patterns(".ipynb_checkpoints",
                                                                               ".predictions.jsonl"))
        header = source / HEADER_FILE
        for nb in (root / "source").glob("*/*.ipynb"):
            insert_header(nb, header.read_text() if header.is_file() else None)
        api = NbGraderAPI(config=nbgrader_config(root))
        for a in only or assignments(source):
            result = api.generate_assignment(a, force=True, create=True)
            if not result["success"]:
                raise RuntimeError(f"nbgrader generate_assignment {a} failed:\n{result['log']}\n{result['error']}")
            out = dest / a
            if out.exists():
                shutil.rmtree(out)
            shutil.copytree(root / "release" / a, out)
            written += sorted(out.glob("*.ipynb"))
    return written


def insert_header(path: Path, header: str | None) -> None:
    """Replace the HEADER_MARK line of the notebook's markdown cells with `header` (in place);
    a notebook without the mark is left alone, one with it but no header file is an error."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    marked = [c for c in nb.cells if c.cell_type == "markdown" and HEADER_MARK in c.source]
    if not marked:
        return
    if header is None:
        raise FileNotFoundError(f"{path.name} asks for the shared header, but {HEADER_FILE} is not in the sources")
    for c in marked:
        c.source = c.source.replace(HEADER_MARK, header.rstrip("\n"))
    nbformat.write(nb, str(path))


def release_to_exchange(names: list[str], exchange, release: Path = RELEASE, course_id: str = "roofline",
                        source: Path = SOURCE) -> list:
    """Release assignments to an nbgrader exchange (`nbgrader release_assignment`): a folder
    (<exchange>/<course_id>/outbound/<assignment>/, where students' `nbgrader fetch_assignment`
    finds them) or the plugin nbgrader's configuration selects (autograder.locate.PluginExchange:
    the hub's course service). The assignment is recorded in a throw-away gradebook (nbgrader
    checks it)."""
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI

    from autograder.locate import PluginExchange

    ensure_tools_on_path()
    plugin = exchange if isinstance(exchange, PluginExchange) else None
    if plugin is None:
        exchange = Path(exchange)
        exchange.mkdir(parents=True, exist_ok=True)
    out = []
    with tempfile.TemporaryDirectory(prefix="release-") as tmp:
        c = nbgrader_config(Path(tmp), source=str(Path(source).resolve()), release=str(Path(release).resolve()))
        c.CourseDirectory.course_id = course_id
        if plugin is not None:
            plugin.apply(c)
        else:
            c.Exchange.root = str(exchange)
        c.Exchange.assignment_dir = tmp
        c.ExchangeReleaseAssignment.force = True     # releasing again replaces the old copy
        api = NbGraderAPI(config=c)
        for a in names:
            with Gradebook(c.CourseDirectory.db_url, course_id) as gb:
                gb.update_or_create_assignment(a)
            result = api.release_assignment(a)
            if not result["success"]:
                raise RuntimeError(f"nbgrader release_assignment {a} failed:\n{result.get('log', '')}\n"
                                   f"{result.get('error', '')}")
            out.append(f"{course_id}/{a} ({plugin})" if plugin is not None else exchange / course_id / "outbound" / a)
    return out


if __name__ == "__main__":
    for p in generate():
        print(p.relative_to(REPO))
