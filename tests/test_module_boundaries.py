"""The grader's modules talk through public names: no module of autograder/ imports another
module's private (underscore) helper, which would make that helper an API nobody declared."""
from __future__ import annotations

import ast
from pathlib import Path

import autograder

PACKAGE = Path(autograder.__file__).resolve().parent


def private_imports(source: str) -> list[tuple[int, str]]:
    """(line, "from .module import _name") for each relative import of an underscore name
    (dunders such as __version__ are public)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append((node.lineno, f"from {'.' * node.level}{node.module or ''} import {alias.name}"))
    return found


def test_the_check_finds_a_private_import_at_any_depth():
    src = "def f():\n    from .report import show, _decode\nfrom . import __version__\nfrom .x import y\n"
    assert private_imports(src) == [(2, "from .report import _decode")]


def test_no_autograder_module_imports_a_private_helper_of_another():
    offenders = [f"{p.relative_to(PACKAGE.parent)}:{line}: {stmt}"
                 for p in sorted(PACKAGE.rglob("*.py")) for line, stmt in private_imports(p.read_text())]
    assert not offenders, "import the public name instead:\n" + "\n".join(offenders)
