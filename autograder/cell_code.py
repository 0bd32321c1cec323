"""What a cell's code does, read from its source without running it (the one place the
autograder parses cells): the names it assigns, reads or leaves free, the answers and questions it
names, and the lines of its hidden-test block.

>>> assigned_names("q1_x = 2; q1_why = 'because'")
['q1_x', 'q1_why']
>>> free_names("y = x + len(z)")
['x', 'z']
>>> question_calls('check_form("hello_q3")')
[('check_form', 'hello_q3', 1)]
"""
from __future__ import annotations

import ast
import builtins
import re

from course_lib.exercises.question_ids import is_question_id

HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
HIDDEN_END = "### END HIDDEN TESTS"
def assigned_names(source: str) -> list[str]:
    """Top-level names a code cell assigns (in order), ignoring the nbgrader delimiters."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names = []
    for node in tree.body:
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name) and n.id not in names:
                    names.append(n.id)
    return names


def used_names(source: str) -> set[str]:
    """Names a test cell reads: as variables, or by name as course_lib.exercises.checks does
    (check_answer("q", "q2_ridge", ...), check_form("q", q2_ridge=...)), or as the variables of a
    question declared in course_lib.questions (grade("wall_q1"))."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.keyword) and n.arg}
    names |= {n.value for n in ast.walk(tree)
              if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier()}
    for n in ast.walk(tree):          # grade("wall_q1"): a question declared in course_lib.questions
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            names.update(declared_variables(n.value))
    return names


def free_names(source: str) -> list[str]:
    """Names a cell reads that it does not define itself (nor are builtins), in first-use order."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    defined, loaded = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                defined.add(node.id)
            else:
                loaded.append((node.lineno, node.col_offset, node.id))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                defined.add((a.asname or a.name).split(".")[0])
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            defined.add(node.name)
    order = list(dict.fromkeys(n for _, _, n in sorted(loaded)))
    return [n for n in order if n not in defined and not hasattr(builtins, n)]


def named_answers(source: str, answers) -> list[str]:
    """Answer variables a cell reads *by name*, as course_lib.exercises.checks does
    (``check_answer("q", "q2_ridge", ...)``, ``check_form("q", q2_ridge=Number())``): string
    constants and keyword names that are among `answers`, in first-use order."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg in answers:
            found.append((node.value.lineno, node.value.col_offset, node.arg))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in answers:
            found.append((node.lineno, node.col_offset, node.value))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # a question declared in course_lib.questions (grade("phases_q3")) reads its variables
            for name in declared_variables(node.value):
                if name in answers:
                    found.append((node.lineno, node.col_offset, name))
    return list(dict.fromkeys(n for _, _, n in sorted(found)))


def declared_variables(qid: str) -> list[str]:
    """The answer variables of a question declared in course_lib.questions, or []."""
    if not re.fullmatch(r"[a-z]+_q\d+[a-z]?", qid):
        return []
    try:
        from course_lib.questions import get

        return get(qid).variables
    except (KeyError, ImportError):
        return []


def question_calls(source: str) -> list[tuple[str, str, int]]:
    """(function name, question id, line) of every call whose first argument is a string that
    is a question id: check_form("hello_q3", ...), reveal("wall_q1", "wall_q2"), show("x_q1")."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "?")
        args = node.args if name == "reveal" else node.args[:1]
        for a in args:
            if isinstance(a, ast.Constant) and is_question_id(a.value):
                out.append((name, a.value, a.lineno))
    return sorted(out, key=lambda t: t[2])


def hidden_test_lines(source: str) -> list[str]:
    """The lines between the hidden-test delimiters of a cell."""
    lines, inside = [], False
    for line in source.splitlines():
        if HIDDEN_BEGIN in line:
            inside = True
            continue
        if HIDDEN_END in line:
            inside = False
            continue
        if inside:
            lines.append(line)
    return lines


def strip_hidden_tests(source: str, placeholder: str = "# (hidden tests: not shown)") -> str:
    out, inside = [], False
    for line in source.splitlines():
        if HIDDEN_BEGIN in line:
            inside = True
            out.append(placeholder)
            continue
        if HIDDEN_END in line:
            inside = False
            continue
        if not inside:
            out.append(line)
    return "\n".join(out)
