"""Release: student notebooks generated from the nbgrader sources in solutions/.

`generate(dest)` runs nbgrader's generate_assignment in a throw-away course directory (so no
gradebook is left behind) and writes `dest/<assignment>/<notebook>.ipynb`. The committed
notebooks/ folder is exactly what `generate` produces; a test checks it.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "solutions"
RELEASE = REPO / "notebooks"


def assignments(source: Path = SOURCE) -> list[str]:
    """Assignment folders in solutions/, in course order."""
    return sorted(p.name for p in source.iterdir() if p.is_dir() and any(p.glob("*.ipynb")))


def ensure_tools_on_path() -> None:
    """nbgrader runs `alembic` as a command to create its gradebook: put this interpreter's
    scripts folder (the venv's bin/) on PATH so it is found without an activated venv."""
    import os
    import sys

    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


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
    c.Exchange.root = str(Path(root) / "exchange")
    return c


def generate(dest: Path = RELEASE, only: list[str] | None = None, source: Path = SOURCE) -> list[Path]:
    """Generate the student release of each assignment into `dest`; returns the notebooks written."""
    from nbgrader.apps import NbGraderAPI

    ensure_tools_on_path()
    dest = Path(dest)
    written = []
    with tempfile.TemporaryDirectory(prefix="release-") as tmp:
        root = Path(tmp)
        shutil.copytree(source, root / "source", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
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


def release_to_exchange(names: list[str], exchange: Path, release: Path = RELEASE, course_id: str = "roofline",
                        source: Path = SOURCE) -> list[Path]:
    """Copy released assignments into an nbgrader exchange (`nbgrader release_assignment`):
    <exchange>/<course_id>/outbound/<assignment>/, where students' `nbgrader fetch_assignment`
    finds them. The assignment is recorded in a throw-away gradebook (nbgrader checks it)."""
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI

    ensure_tools_on_path()
    exchange = Path(exchange)
    exchange.mkdir(parents=True, exist_ok=True)
    out = []
    with tempfile.TemporaryDirectory(prefix="release-") as tmp:
        c = nbgrader_config(Path(tmp), source=str(Path(source).resolve()), release=str(Path(release).resolve()))
        c.CourseDirectory.course_id = course_id
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
            out.append(exchange / course_id / "outbound" / a)
    return out


if __name__ == "__main__":
    for p in generate():
        print(p.relative_to(REPO))
