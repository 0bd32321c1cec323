"""nbgrader's gradebook, opened one way by every command.

nbgrader creates a new gradebook by running `alembic heads` as a command (nbgrader.api's
`get_alembic_version`), which fails with FileNotFoundError wherever the environment's bin/ is
not on PATH (`.venv/bin/python -m autograder ...` without an activated venv) and costs a 2-second
subprocess where it is. `prepare(db_url)` creates the database as nbgrader would, reading the
migrations' head in-process, so that nbgrader, opening it afterwards, finds it made; nothing is
patched and PATH is not touched. `open_gradebook` (and `Course.gradebook()`) is the one way the
autograder opens one; call `prepare` before handing a course to nbgrader's own apps
(generate_assignment, autograde), which open the gradebook themselves.
"""
from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

#: nbgrader's own default course id in a gradebook (nbgrader.api.Gradebook)
DEFAULT_GRADEBOOK_COURSE = "default"


@lru_cache(maxsize=1)
def migrations_head() -> str:
    """The head revision of nbgrader's gradebook migrations: what `alembic heads` prints."""
    import nbgrader
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(nbgrader.__file__).parent / "alembic"))
    head = ScriptDirectory.from_config(cfg).get_current_head()
    if not head:
        raise RuntimeError("nbgrader's gradebook migrations have no single head revision "
                           f"(in {cfg.get_main_option('script_location')}): is nbgrader installed whole?")
    return head


def prepare(db_url: str) -> None:
    """Create the gradebook at `db_url` (its tables and alembic's version row) if it has no tables
    yet, exactly as nbgrader.api.Gradebook would, without the `alembic` command. Idempotent."""
    from nbgrader.api import Base
    from sqlalchemy import create_engine, inspect, text

    if db_url.startswith("sqlite:///"):
        Path(db_url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(db_url)
    try:
        if inspect(engine).get_table_names():
            return
        head = migrations_head()
        with engine.begin() as conn:
            Base.metadata.create_all(bind=conn)
            # IF NOT EXISTS and the count: another process may be making the same gradebook
            conn.execute(text("CREATE TABLE IF NOT EXISTS alembic_version (version_num VARCHAR(32) NOT NULL)"))
            if not conn.execute(text("SELECT COUNT(*) FROM alembic_version")).scalar():
                conn.execute(text("INSERT INTO alembic_version (version_num) VALUES (:v)"), {"v": head})
    finally:
        engine.dispose()


@contextmanager
def open_gradebook(db_url: str, course_id: str = DEFAULT_GRADEBOOK_COURSE):
    """nbgrader's Gradebook at `db_url`, created first if new; closed when the block ends."""
    from nbgrader.api import Gradebook

    prepare(db_url)
    with Gradebook(db_url, course_id) as gb:
        yield gb


def submission_or_none(gb, assignment: str, student: str):
    """The student's submitted assignment in an open gradebook, or None where there is none."""
    from nbgrader.api import MissingEntry

    try:
        return gb.find_submission(assignment, student)
    except MissingEntry:
        return None
