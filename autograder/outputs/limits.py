"""How much of a student's outputs is stored and shown (the formgrader, the feedback pages): each
output capped, a notebook's outputs capped in all. What they may hold is autograder.outputs.page_safety's.
Used by autograder.sandbox.execute and autograder.outputs.feedback."""
from __future__ import annotations

import json

from nbformat.notebooknode import NotebookNode


MAX_OUTPUT_CHARS = 100_000     # per output (a text, an image's base64): more is cut with a note


CUT_NOTE = "\n[... output cut by the grader: {n:,} characters, the first {k:,} shown ...]\n"


MAX_NOTEBOOK_OUTPUT_CHARS = 2_000_000   # all outputs of a notebook together: later ones are dropped with a note


TOTAL_NOTE = ("[... outputs dropped by the grader: this notebook's outputs passed {limit:,} characters in all "
              "...]\n")


def output_chars(out) -> int:
    """Characters an output (or a message's content) holds: text, data, traceback."""
    n = 0
    for key in ("text", "evalue"):
        v = out.get(key)
        n += len(v) if isinstance(v, str) else sum(len(x) for x in v) if isinstance(v, list) else 0
    for v in (out.get("data") or {}).values():
        n += len(v) if isinstance(v, str) else sum(len(x) for x in v) if isinstance(v, list) else len(json.dumps(v))
    n += sum(len(t) for t in out.get("traceback") or [])
    n += len(json.dumps(out.get("metadata") or {}))
    return n


def cap_total_outputs(cells, limit: int = MAX_NOTEBOOK_OUTPUT_CHARS) -> None:
    """Keep the outputs of `cells` up to `limit` characters in all; the rest are replaced by one
    note per cell: 2,500 outputs of 95,000 characters make no 238 MB page."""
    total = 0
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            size = output_chars(out)
            if total + size > limit:
                kept.append(NotebookNode(output_type="stream", name="stdout", text=TOTAL_NOTE.format(limit=limit)))
                total = limit + 1
                break
            total += size
            kept.append(out)
        cell.outputs = kept


def cap_outputs(cell, limit: int = MAX_OUTPUT_CHARS) -> None:
    """Cut every output of `cell` longer than `limit` characters, saying so: a 10 MB line must
    not be stored in the gradebook's notebooks and fed back whole."""
    note = CUT_NOTE
    for out in cell.get("outputs", []):
        kind = out.get("output_type")
        if kind == "stream":
            text = out.get("text", "")
            text = "".join(text) if isinstance(text, list) else text
            if len(text) > limit and not text[limit:].startswith("\n[... output cut by the grader: "):
                out["text"] = text[:limit] + note.format(n=len(text), k=limit)
        elif kind == "error":
            tb = out.get("traceback", [])
            if sum(len(t) for t in tb) + len(out.get("evalue", "")) > limit:
                out["evalue"] = out.get("evalue", "")[:limit // 2]
                kept, size = [], 0
                for t in tb:
                    if size + len(t) > limit // 2:
                        kept.append(note.format(n=sum(len(x) for x in tb), k=size))
                        break
                    kept.append(t)
                    size += len(t)
                out["traceback"] = kept
        elif kind in ("execute_result", "display_data"):
            data = out.get("data", {})
            for mime in list(data):
                value = data[mime]
                text = "".join(value) if isinstance(value, list) else value
                if isinstance(text, str) and len(text) > limit:
                    if mime.startswith("text/") and mime != "text/html":
                        data[mime] = text[:limit] + note.format(n=len(text), k=limit)
                    else:   # an image or HTML cut in half is garbage: drop it, keep the note
                        del data[mime]
                        data.setdefault("text/plain", f"[{mime} output of {len(text):,} characters removed by the "
                                                      f"grader: more than {limit:,}]")
