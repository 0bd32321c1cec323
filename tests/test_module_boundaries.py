"""Module boundaries. The grader's modules talk through public names: no module of autograder/
imports another module's private (underscore) helper, which would make that helper an API
nobody declared. Imports point down: no import cycle in course_lib or autograder, and
course_lib.exercises imports nothing from course_lib.questions above it. The six modules that
moved to course_lib.exercises are imported by their new names only."""
from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

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


# ---- imports across the project: what each module loads, read from its source --------------------
# A small model of Python's import statement, applied to every module of course_lib and autograder
# (imports inside functions included: they run too, only later). `import a.b.c` loads a.b.c;
# `from a.b import c` loads the submodule a.b.c when there is one, else a.b (its __init__, which
# defines c); relative imports resolve against the importing module's package.
REPO = PACKAGE.parent
PACKAGES = ("course_lib", "autograder")
#: the six modules that moved to course_lib.exercises (their re-export shims are gone)
REMOVED = frozenset(f"course_lib.{n}" for n in
                    ("checks", "answers", "predictions", "question_ids", "answer_forms", "misconceptions"))


@dataclass(frozen=True)
class Import:
    line: int
    statement: str        # as written, e.g. "from ..exercises import checks"
    module: str           # the absolute module named after `from` / `import`
    names: tuple = ()     # the names a `from` import takes from it (empty for `import`)

    def candidates(self) -> list[str]:
        """The dotted names this import may load, most specific first."""
        return [f"{self.module}.{n}" for n in self.names if n != "*"] + [self.module]


def module_name(path: Path) -> tuple[str, bool]:
    """("course_lib.questions.core", False) for course_lib/questions/core.py; a package's
    __init__.py is named after the package (True: relative imports resolve inside it)."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def imports(source: str, module: str = "", is_package: bool = False) -> list[Import]:
    """Every import statement of `source`, at any depth, its relative names made absolute."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(Import(node.lineno, f"import {alias.name}", alias.name))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[:len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join(parts + ([node.module] if node.module else []))
            names = tuple(a.name for a in node.names)
            found.append(Import(node.lineno, f"from {'.' * node.level}{node.module or ''} import {', '.join(names)}",
                                base, names))
    return found


def project_modules(packages=PACKAGES) -> dict[str, tuple[Path, bool]]:
    out = {}
    for pkg in packages:
        for path in sorted((REPO / pkg).rglob("*.py")):
            name, is_package = module_name(path)
            out[name] = (path, is_package)
    return out


def loaded(imp: Import, modules) -> list[str]:
    """The modules among `modules` that `imp` loads (see the comment above)."""
    if not imp.names:      # import a.b.c: the most specific module there is
        name = imp.module
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return [name] if name else []
    subs = [f"{imp.module}.{n}" for n in imp.names if f"{imp.module}.{n}" in modules]
    attrs = [n for n in imp.names if f"{imp.module}.{n}" not in modules]
    return subs + ([imp.module] if attrs and imp.module in modules else [])


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, dict[str, list[str]]]:
    """{module: {module it loads: ["line N: statement", ...]}} for `sources`
    ({module: (source, is_package)}), edges to modules outside `sources` left out."""
    graph: dict[str, dict[str, list[str]]] = {m: {} for m in sources}
    for module, (source, is_package) in sources.items():
        for imp in imports(source, module, is_package):
            for target in loaded(imp, sources):
                if target != module:
                    graph[module].setdefault(target, []).append(f"line {imp.line}: {imp.statement}")
    return graph


def cycles(graph: dict[str, dict]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, without
    recursion), each sorted, in sorted order."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    component.append(m)
                    if m == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def describe_cycle(component: list[str], graph: dict[str, dict]) -> str:
    lines = [f"import cycle among {', '.join(component)}:"]
    for a in component:
        for b, where in sorted(graph[a].items()):
            if b in component:
                lines.append(f"  {a} -> {b} ({'; '.join(where)})")
    return "\n".join(lines)


def project_graph(packages=PACKAGES) -> dict[str, dict[str, list[str]]]:
    return import_graph({m: (p.read_text(), is_package) for m, (p, is_package) in project_modules(packages).items()})


def test_the_import_model_resolves_relative_submodule_and_attribute_imports():
    src = ("import json\nfrom . import core, REGISTRY\nfrom ..exercises.checks import namespaces\n"
           "def f():\n    from .. import ledger\n    import course_lib.units as u\n")
    found = imports(src, "course_lib.questions", is_package=True)
    assert [(i.line, i.module, i.names) for i in found] == [
        (1, "json", ()), (2, "course_lib.questions", ("core", "REGISTRY")),
        (3, "course_lib.exercises.checks", ("namespaces",)), (5, "course_lib", ("ledger",)), (6, "course_lib.units", ())]
    modules = {"course_lib", "course_lib.ledger", "course_lib.units", "course_lib.questions",
               "course_lib.questions.core", "course_lib.exercises.checks"}
    assert [loaded(i, modules) for i in found] == [
        [], ["course_lib.questions.core", "course_lib.questions"], ["course_lib.exercises.checks"],
        ["course_lib.ledger"], ["course_lib.units"]]
    # in a plain module, one dot is its own package
    assert imports("from .x import y", "autograder.report")[0].module == "autograder.x"


def test_the_cycle_check_finds_and_names_a_cycle_through_a_function_and_an_init():
    pkg = {
        "pkg": ("from .a import A\n", True),                              # pkg -> pkg.a
        "pkg.a": ("A = 1\ndef f():\n    from .b import g\n", False),      # pkg.a -> pkg.b, in a function
        "pkg.b": ("from pkg import A\n", False),                          # pkg.b -> pkg (its __init__'s A)
        "pkg.c": ("from . import a\n", False),                            # on no cycle
    }
    graph = import_graph(pkg)
    assert cycles(graph) == [["pkg", "pkg.a", "pkg.b"]]
    text = describe_cycle(cycles(graph)[0], graph)
    assert "pkg.a -> pkg.b (line 3: from .b import g)" in text and "pkg.b -> pkg (line 1: from pkg import A)" in text
    assert "pkg.c" not in text
    graph["pkg.b"].clear()
    assert cycles(graph) == []


@pytest.mark.parametrize("packages", [("course_lib",), ("autograder",), PACKAGES], ids="+".join)
def test_no_import_cycle(packages):
    """Layers point down: no module imports, even inside a function, one that imports it back
    (through any chain). A cycle works until someone moves an import to the top of a file."""
    graph = project_graph(packages)
    assert len(graph) > 10, "the modules were not found"
    found = cycles(graph)
    assert not found, ("break each cycle: move what both need into the lower module (or a small "
                       "new one)\n" + "\n".join(describe_cycle(c, graph) for c in found))


def test_exercises_know_nothing_of_the_questions_above_them():
    """course_lib.exercises (answer forms, checks, the record) sits below course_lib.questions:
    it asks about a declared question through course_lib.exercises.declared, which
    course_lib.questions fills when imported; and neither imports the grader."""
    graph = project_graph()
    wrong = [f"{a} -> {b} ({'; '.join(where)})" for a, targets in graph.items() for b, where in targets.items()
             if (a.startswith("course_lib.exercises") and b.startswith("course_lib.questions"))
             or (a.split(".")[0] == "course_lib" and b.split(".")[0] == "autograder")]
    assert not wrong, "\n".join(wrong)
    code = ("import importlib, pkgutil, sys\nimport course_lib.exercises as E\n"
            "for m in pkgutil.iter_modules(E.__path__):\n    importlib.import_module(f'course_lib.exercises.{m.name}')\n"
            "assert 'course_lib.questions' not in sys.modules, 'course_lib.exercises imported course_lib.questions'\n"
            "from course_lib.exercises import declared\nassert declared.find('hello_q1') is None\n"
            "import course_lib.questions\nassert declared.find('hello_q1').rule == 'by-hand'\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stderr


# ---- the removed names ----------------------------------------------------------------------------
def _code_cells(path: Path) -> list[tuple[str, str]]:
    nb = nbformat.read(path, as_version=4)
    # IPython's %magics and !commands are not Python: blank them (imports never hide there)
    return [(c.get("id") or str(i), "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                                              for line in c.source.splitlines()))
            for i, c in enumerate(nb.cells) if c.cell_type == "code"]


def _removed_imports(source: str, module: str = "", is_package: bool = False, depth: int = 0) -> list[str]:
    """Imports of a removed module in `source`, and in the code its string constants hold (a test
    writes notebook cells as strings): "line N: statement"."""
    try:
        tree_imports = imports(source, module, is_package)
    except SyntaxError:
        return []
    found = [f"line {i.line}: {i.statement}" for i in tree_imports if REMOVED & set(i.candidates())]
    if depth == 0:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "import" in node.value:
                found += [f"line {node.lineno} (in a string): {hit.split(': ', 1)[1]}"
                          for hit in _removed_imports(node.value, depth=1)]
    return found


def test_the_removed_name_check_sees_every_spelling():
    old = "course_lib." + "checks"        # spelled in two parts: this file is scanned too
    spellings = [f"import {old}", f"import {old} as c", f"from {old} import check_answer",
                 "from course_lib import " + "answers", "def f():\n    from course_lib import Q_, " + "predictions",
                 f"x = 'from {old} import verify'"]
    for src in spellings:
        assert _removed_imports(src), src
    assert _removed_imports("from ..answer_" + "forms import Ratio", "course_lib.questions.core")
    assert _removed_imports("from .. import misconcep" + "tions", "course_lib.questions.core")
    assert _removed_imports("from . import question_" + "ids", "course_lib.widgets")
    for src in ["from course_lib.exercises import checks", "from course_lib.exercises.answers import encode",
                "import course_lib.exercises.predictions as P"]:
        assert not _removed_imports(src), src
    assert not _removed_imports("from . import checks", "course_lib.exercises", is_package=True)
    assert not _removed_imports("from ..checks import x", "course_lib.exercises.sub.m")


def test_nothing_imports_a_removed_module():
    """course_lib.checks, .answers, .predictions, .question_ids, .answer_forms and .misconceptions
    live in course_lib.exercises: no module, test, benchmark, deployment file or notebook imports
    the old names."""
    offenders = []
    files = [p for top in (*PACKAGES, "tests", "benchmarks", "deploy") for p in sorted((REPO / top).rglob("*.py"))]
    files += sorted(REPO.glob("*.py"))
    for path in files:
        name, is_package = module_name(path) if path.parts[len(REPO.parts)] in PACKAGES else ("", False)
        offenders += [f"{path.relative_to(REPO)}: {hit}" for hit in _removed_imports(path.read_text(), name, is_package)]
    notebooks = sorted(REPO.glob("solutions/*/*.ipynb")) + sorted(REPO.glob("notebooks/*/*.ipynb"))
    assert notebooks, "no notebooks found"
    for path in notebooks:
        for cell, source in _code_cells(path):
            offenders += [f"{path.relative_to(REPO)} cell {cell}: {hit}" for hit in _removed_imports(source)]
    assert len(files) > 50
    assert not offenders, "import course_lib.exercises.<name> instead:\n" + "\n".join(offenders)
