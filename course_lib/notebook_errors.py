"""One clear line, not a traceback, for the errors a student meets on the way.

* ``CheckFailed`` (a form check or hidden test) and ``NotCommitted`` (a verify cell run before
  its form check) render as their message: both define IPython's ``_render_traceback_``.
* An answer cell still raising ``NotImplementedError()`` says which question is not answered
  yet (the answer variables its first comment names) and what to do.

Each stays an error (the cell's output is an error with its ename and evalue): Run All stops at
it, and nbgrader counts a failing test cell as failed. ``install`` is called when course_lib is
imported in an IPython kernel; elsewhere it does nothing.
"""
from __future__ import annotations

import linecache
import re
import sys

__all__ = ["install", "unanswered_message"]

_NAME = re.compile(r"\b(q(\d+)[a-z]?_\w+)")


def unanswered_message(source: str) -> str:
    """The line an unanswered answer cell shows, from the cell's source.

    >>> unanswered_message("# q3_prediction: one of 16, 64; q3_reasoning: one sentence\\nraise NotImplementedError()")
    'Q3 is not answered yet: replace raise NotImplementedError() with your answer (q3_prediction, q3_reasoning), then run this cell and the form check below it.'
    """
    names = []
    for line in source.splitlines():
        if "NotImplementedError" in line:
            break
        for name, _ in _NAME.findall(line):
            if name not in names:
                names.append(name)
    if not names:
        return ("This cell is not answered yet: replace raise NotImplementedError() with your answer, then run "
                "this cell and the form check below it.")
    number = _NAME.match(names[0]).group(2)
    return (f"Q{number} is not answered yet: replace raise NotImplementedError() with your answer "
            f"({', '.join(names)}), then run this cell and the form check below it.")


def _handler(shell, etype, value, tb, tb_offset=None):
    """IPython custom exception handler: shows the error (IPython does not show what a handler
    returns), as one line when an answer cell raised it itself, else as the usual traceback."""
    last = tb
    while last is not None and last.tb_next is not None:
        last = last.tb_next
    frame = last.tb_frame if last is not None else None
    if (frame is not None and frame.f_code.co_name == "<module>" and frame.f_globals is shell.user_ns
            and not str(value)):
        line = unanswered_message("".join(linecache.getlines(frame.f_code.co_filename)))
        value._render_traceback_ = lambda: [f"\x1b[0;31mNot answered yet\x1b[0m: {line}"]
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)


def install() -> None:
    """Register the handler in the running IPython kernel, unless another one is registered."""
    if "IPython" not in sys.modules:
        return
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except Exception:  # pragma: no cover - a broken IPython: keep its default tracebacks
        return
    if shell is None or not hasattr(shell, "set_custom_exc"):
        return
    if shell.custom_exceptions not in ((), (NotImplementedError,)):
        return          # someone else's handler: leave it
    shell.set_custom_exc((NotImplementedError,), _handler)
