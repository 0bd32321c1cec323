"""The clean re-verification program (autograder.integrity.verify.Verifier runs it; see verify.py).

It runs as `python -I -c <this file's source>` in a sandbox of its own, where only the Python
install and course_lib are visible (not the autograder package): so it imports nothing but the
standard library and course_lib, and does nothing when imported. It reads one job a line as JSON
on stdin and prints the verdicts of its tests as JSON, each job in a child it forks.

strip_warnings is also the kernel's (autograder.sandbox.execute imports it from here): one definition.
"""
import ast
import builtins
import contextlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import warnings

_WARNING_LINE = re.compile(r"^\S.*:\d+: \w*Warning: ")


def strip_warnings(text: str) -> str:
    """Drop Python warning messages (`file:line: XWarning: msg` and the source line after it)."""
    out, skip_indented = [], False
    for line in text.splitlines(keepends=True):
        if _WARNING_LINE.match(line):
            skip_indented = True
            continue
        if skip_indented and line.startswith((" ", "\t")):
            continue
        skip_indented = False
        out.append(line)
    return "".join(out)


def fail(ename, message, label=None):
    return {"passed": False, "score": 0.0, "ename": ename, "message": message[:2000],
            "label": label if isinstance(label, str) else None}


def run(test):
    from course_lib.exercises.answers import decode    # imported by main() before any job

    ns = {"__name__": "__main__", "__builtins__": builtins}
    for name, entry in test["values"].items():
        if "value" in entry:
            try:
                ns[name] = decode(entry["value"])
            except Exception as e:
                return fail("UnsupportedAnswer", f"{name}: {e}")
        elif "error" in entry:
            return fail("UnsupportedAnswer", f"{name} could not be recorded: {entry['error']}")
        elif "withheld" in entry:     # the rule grades nothing (autograder.integrity.predictions)
            return fail("PredictionChanged", entry["withheld"], entry.get("rule") or "changed-after-reveal")
    try:
        tree = ast.parse(test["source"])
    except SyntaxError as e:
        return fail("SyntaxError", str(e))
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    err = io.StringIO()
    value = None
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(tree, "<" + test["grade_id"] + ">", "exec"), ns)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), "<" + test["grade_id"] + ">", "eval"), ns)
    except Exception as e:
        return fail(type(e).__name__, str(e), getattr(e, "label", None))
    rest = strip_warnings(err.getvalue())
    if rest.strip():     # as nbgrader: output on stderr fails a test cell
        return fail("Stderr", rest.strip()[-500:])
    points = test["points"]
    if value is not None:   # as nbgrader: a number as the cell's value is partial credit
        try:
            grade = float(repr(value))
        except (TypeError, ValueError):
            grade = None
        if grade is not None and grade >= 0:
            if grade > points:
                return fail("ValueError", "partial credit cannot be greater than maximum points for cell")
            return {"passed": grade == points, "score": grade, "ename": None,
                    "message": f"partial credit {grade:g} of {points:g}", "label": None}
    return {"passed": True, "score": points, "ename": None, "message": "", "label": None}


def verdicts(job):
    os.environ.update(job.get("env") or {})   # the graded student's variant (this child only)
    out = {}
    for test in job["tests"]:
        try:
            out[test["key"]] = run(test)
        except BaseException as e:   # SystemExit, KeyboardInterrupt raised by a test: a failure
            out[test["key"]] = fail(type(e).__name__, str(e))
    return {"results": out}


def main():
    warnings.simplefilter("ignore")
    try:
        # imported once: every forked child starts with them
        from course_lib.exercises.answers import decode  # noqa: F401
        import course_lib.exercises.checks  # noqa: F401
    except Exception as e:
        print(json.dumps({"fatal": f"cannot import course_lib.exercises.answers: {type(e).__name__}: {e}",
                          "ename": type(e).__name__}), flush=True)
        sys.exit(0)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        # one child per submission, forked from this process, which has only imported course_lib:
        # nothing a test did for one submission is there for the next (in memory)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            # and a working folder of its own: a check a test calls may write there (course_lib's
            # prediction record, read back by later checks), and the next submission's child must
            # not read what this one's wrote (another student's answer in its messages)
            here = tempfile.mkdtemp(prefix="verify-")
            os.chdir(here)
            try:
                data = json.dumps(verdicts(json.loads(line))).encode()
            except BaseException as e:
                data = json.dumps({"fatal": f"{type(e).__name__}: {e}"}).encode()
            finally:
                os.chdir("/")
                shutil.rmtree(here, ignore_errors=True)
            view = memoryview(data)
            while view:
                view = view[os.write(w, view):]
            os._exit(0)
        os.close(w)
        chunks = []
        while True:
            chunk = os.read(r, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(r)
        _, status = os.waitpid(pid, 0)
        text = b"".join(chunks).decode()
        print(text if text else json.dumps({"fatal": f"the verifying process died (status {status})"}), flush=True)


if __name__ == "__main__":
    main()
