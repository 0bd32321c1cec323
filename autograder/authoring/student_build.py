"""A student's copy of course_lib: the answer key taken out.

What a student's kernel can import must not compute a graded answer. This writes a copy of the
course_lib this interpreter imports (the instructor's, which holds the key) with

* every graded question's solver body replaced by ``return held("<id>")``
  (course_lib.questions.key: the truth is asked of the course service), and each lesson's
  ``TAKEAWAYS`` set to None (the service gives them once every truth was shown);
* ``questions/admissible.json``: the variants each question may be asked with (drawing a
  student's numbers checks them by solving; the copy cannot), which are givens, not truths;
* with ``--practice`` (the public student repository, Binder): ``questions/practice.json``, the
  lesson's own numbers' truths, arithmetic and take-aways as data, for practice without a hub.

A lesson whose module says ``ANSWER_KEY_IN_KERNEL = "<why>"`` keeps its solvers (lesson 5: its
truths and arithmetic measure the machine the kernel runs on, which the service cannot), and so
does any question declared ``measured=True``.

    python -m autograder.authoring.student_build DEST [--practice]    # writes DEST/course_lib
"""
from __future__ import annotations

import argparse
import ast
import json
import shutil
from pathlib import Path

SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")


def _question_call(decorator) -> tuple[str, bool] | None:
    """(question id, measured) of an ``@question("id", ...)`` decorator, else None."""
    if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) == "question" and decorator.args \
            and isinstance(decorator.args[0], ast.Constant) and isinstance(decorator.args[0].value, str):
        measured = any(k.arg == "measured" and isinstance(k.value, ast.Constant) and k.value.value is True
                       for k in decorator.keywords)
        return decorator.args[0].value, measured
    return None


def key_in_kernel(tree: ast.Module) -> str:
    """Why a lesson module keeps its answer key in the kernel (its ANSWER_KEY_IN_KERNEL), or ""."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "ANSWER_KEY_IN_KERNEL" for t in node.targets) \
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return node.value.value
    return ""


def strip_source(text: str) -> str:
    """A lesson module's source with its solvers' bodies and its take-aways taken out."""
    tree = ast.parse(text)
    if key_in_kernel(tree):
        return text
    lines = text.splitlines(keepends=True)
    cuts = []          # (first line, last line, replacement), 1-based, inclusive
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            indent = " " * node.body[0].col_offset
            body = (node.body[0].lineno, node.body[-1].end_lineno)
            for d in node.decorator_list:
                found = _question_call(d)
                if found and not found[1]:
                    cuts.append((*body, f"{indent}from .key import held\n{indent}return held({found[0]!r})\n"))
            if _takeaways_name(node.name):          # take-aways computed when read
                cuts.append((*body, f"{indent}return None\n"))
            elif node.name == "__getattr__":        # PEP 562: what it computes is the lesson's
                cuts.append((*body, f"{indent}raise AttributeError(name)\n"))
        elif isinstance(node, ast.Assign) and any(_takeaways_name(getattr(t, "id", "")) for t in node.targets):
            name = next(t.id for t in node.targets if _takeaways_name(getattr(t, "id", "")))
            cuts.append((node.lineno, node.end_lineno,
                         f"{name} = None      # the course service gives them (course_lib.questions.key)\n"))
    for first, last, new in sorted(cuts, reverse=True):
        lines[first - 1:last] = [new]
    text = "".join(lines)
    if not any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "TAKEAWAYS" for t in n.targets)
               for n in tree.body):
        text += "\nTAKEAWAYS = None      # the course service gives them (course_lib.questions.key)\n"
    return text


def _takeaways_name(name: str) -> bool:
    return "takeaways" in name.lower()


def key_problems(package: Path, *, practice: bool | None = None) -> list[str]:
    """What in the course_lib copy at `package` still holds the answer key (empty: none)."""
    from course_lib.questions.registry import LESSON_MODULES

    package = Path(package)
    out = []
    for module in sorted(set(LESSON_MODULES.values())):
        path = package / "questions" / f"{module}.py"
        if not path.exists():
            continue
        tree = ast.parse(path.read_text())
        if key_in_kernel(tree):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                for d in node.decorator_list:
                    found = _question_call(d)
                    if found and not found[1] and ast.unparse(node.body[-1]) != f"return held({found[0]!r})":
                        out.append(f"{path}: the solver of {found[0]} is still there")
                if _takeaways_name(node.name) and ast.unparse(node.body[-1]) != "return None":
                    out.append(f"{path}: {node.name} still computes the take-aways")
                if node.name == "__getattr__" and ast.unparse(node.body[-1]) != "raise AttributeError(name)":
                    out.append(f"{path}: its __getattr__ may still compute the take-aways")
            elif isinstance(node, ast.Assign) and any(_takeaways_name(getattr(t, "id", "")) for t in node.targets) \
                    and not (isinstance(node.value, ast.Constant) and node.value.value is None):
                out.append(f"{path}: its take-aways are still there")
    for found in package.rglob("*"):
        if found.name in ("variant-secret", ".autograder") or found.name.endswith(".secret"):
            out.append(f"{found}: a course secret")
    if practice is False and (package / "questions" / "practice.json").exists():
        out.append(f"{package / 'questions' / 'practice.json'}: practice truths in a hub's copy")
    return out


def _admissible() -> dict:
    from course_lib.questions import all_questions
    from course_lib.questions.variants import admissible

    return {qid: admissible(qid) for qid, q in sorted(all_questions().items()) if q.space}


def _practice() -> dict:
    import importlib

    from course_lib.questions import all_questions, lesson_module
    from course_lib.questions.key import solution_data

    out = {}
    for qid, q in sorted(all_questions().items()):
        module = importlib.import_module(lesson_module(qid))
        if getattr(module, "ANSWER_KEY_IN_KERNEL", "") or q.measured:
            continue                   # solved in the kernel: no practice data needed
        out[qid] = solution_data(q.solution())
        out[f"takeaways:{qid.split('_', 1)[0]}"] = {"text": getattr(module, "TAKEAWAYS", "")}
    return out


def write(dest: Path, *, practice: bool = False) -> Path:
    """Write the student's copy of this interpreter's course_lib to DEST/course_lib (replacing one
    there); returns its folder."""
    import course_lib

    source = Path(course_lib.__file__).parent
    if not key_problems(source):
        raise SystemExit(f"{source} is a student's copy already (no answer key): run this with the instructor's course_lib")
    target = Path(dest) / "course_lib"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=SKIP)
    strip_package(target, practice=practice)
    return target


def strip_package(target: Path, *, practice: bool) -> None:
    """Take the answer key out of the copy of course_lib at `target` (this interpreter's course_lib
    computes the data files)."""
    from course_lib.questions.registry import LESSON_MODULES

    questions = Path(target) / "questions"
    (questions / "admissible.json").write_text(json.dumps(_admissible(), sort_keys=True) + "\n")
    if practice:
        (questions / "practice.json").write_text(json.dumps(_practice(), sort_keys=True) + "\n")
    else:
        (questions / "practice.json").unlink(missing_ok=True)
    for module in sorted(set(LESSON_MODULES.values())):
        path = questions / f"{module}.py"
        if path.exists():
            path.write_text(strip_source(path.read_text()))
    left = key_problems(target, practice=practice)
    if left:
        raise SystemExit("the student's copy still holds the answer key:\n  " + "\n  ".join(left))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m autograder.authoring.student_build",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("dest", type=Path, help="the folder to write course_lib/ into (put it first on a student's PYTHONPATH)")
    p.add_argument("--practice", action="store_true",
                   help="keep the lesson's own numbers' truths as data (the public student repository, Binder)")
    args = p.parse_args(argv)
    target = write(args.dest, practice=args.practice)
    print(f"wrote {target}: no solver, no take-aways, no secret" + (" (practice truths kept)" if args.practice else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
