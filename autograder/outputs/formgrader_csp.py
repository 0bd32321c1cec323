"""A Jupyter server extension: nbgrader's Formgrader pages are served with a Content-Security-Policy
that lets only the Formgrader's own scripts run.

Student content reaches these pages (Manual Grading renders each autograded notebook) already
rebuilt from allow-lists (autograder.outputs.page_safety); this policy is the second line: were anything
to slip through, the browser would still run no script of it and send no request outside the
server. The Formgrader's pages load their scripts from the server ('self') and carry a few inline
ones of their own in <head> (page variables, toggle_name), a constant one in the nav and a few
inline handlers (`onclick="toggle_name(true);"`): the policy allows exactly those, by hash,
computed from each page's <head> as sent (only the template writes there: the notebook and the
student's name are in <body>) and from the constant scripts and handlers of nbgrader's templates. Everything a notebook could add (scripts, handlers, javascript:
URLs, frames, objects, remote images or styles) is refused by the browser.

Enabled in the instructor's server by `ServerApp.jpserver_extensions` (the hub kit's setup.sh,
the Makefile's `make lab`).
"""
from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

from tornado.web import OutputTransform

_HEAD = re.compile(rb"<head\b.*?</head>", re.S | re.I)
_INLINE_SCRIPT = re.compile(rb"<script\b(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.S | re.I)
_HANDLER = re.compile(rb"""\son[a-z]+\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)     # onClick="..." too


def template_constants() -> set[bytes]:
    """The inline scripts and handlers nbgrader's Formgrader templates hold as constant text (no
    Jinja expression in them): `onclick="toggle_name(true);"`, the tooltips' script in the nav.
    Read from the installed nbgrader, so that its next version's are the ones allowed."""
    from nbgrader.server_extensions.formgrader import handlers

    found = set()
    for path in Path(handlers.template_path).rglob("*"):
        if path.suffix in (".tpl", ".j2", ".html"):
            text = path.read_bytes()
            texts = _INLINE_SCRIPT.findall(text) + [a or b for a, b in _HANDLER.findall(text)]
            found |= {t for t in texts if b"{{" not in t and b"{%" not in t}
    return found


_CONSTANTS: set[bytes] | None = None


def _hash(text: bytes) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text).digest()).decode() + "'"


def policy(page: bytes) -> str:
    """The Content-Security-Policy for one Formgrader page."""
    global _CONSTANTS
    if _CONSTANTS is None:
        _CONSTANTS = template_constants()
    head = _HEAD.search(page)
    scripts = _INLINE_SCRIPT.findall(head.group(0)) if head else []
    hashes = sorted({_hash(s) for s in scripts} | {_hash(t) for t in _CONSTANTS})
    return ("default-src 'self'; "
            f"script-src 'self' 'unsafe-hashes' {' '.join(hashes)}; "
            "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "
            "connect-src 'self'; object-src 'none'; frame-src 'none'; base-uri 'none'; form-action 'self'; "
            "frame-ancestors 'self'")


# A student's own files, served as they were handed in (nbgrader's SubmissionFilesHandler, for the
# images a notebook links to): an HTML or SVG file opened there must not run in the instructor's
# origin, whatever its type says: sandboxed (an origin of its own), no script, nothing loaded.
STUDENT_FILE_POLICY = ("default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; "
                       "base-uri 'none'; form-action 'none'; frame-ancestors 'self'; sandbox")
_STUDENT_FILE = re.compile(r"/formgrader/submissions/(?!components/)[^/]+/(?!(?:next_incorrect|prev_incorrect|next|prev)"
                           r"/?$)[^/].*$")


def policy_for(path: str, content_type: str, page: bytes | None) -> str | None:
    """The policy for a response of the Formgrader (None: not one of its pages or files);
    `page`: the whole body, when the first chunk holds it all."""
    if "/formgrader/" not in path or "/formgrader/static/" in path:
        return None
    if _STUDENT_FILE.search(path):
        return STUDENT_FILE_POLICY
    if content_type.startswith("text/html"):
        # a page that is streamed (not whole in its first chunk) gets no inline script at all
        return policy(page or b"")
    return None


class FormgraderPolicy(OutputTransform):
    """Adds the policy to every HTML page under <base_url>formgrader/ and to every student's file
    it serves (a tornado transform: it sees each response's first chunk, which for these pages is
    the whole page)."""

    def __init__(self, request):
        super().__init__(request)
        self.path = request.path or ""

    def transform_first_chunk(self, status_code, headers, chunk, finishing):
        csp = policy_for(self.path, headers.get("Content-Type", ""), chunk if finishing else None)
        if csp:
            headers.add("Content-Security-Policy", csp)
        return status_code, headers, chunk


def _jupyter_server_extension_points():
    return [{"module": "autograder.outputs.formgrader_csp"}]


def _load_jupyter_server_extension(serverapp) -> None:
    serverapp.web_app.transforms.append(FormgraderPolicy)
    serverapp.log.info("autograder.outputs.formgrader_csp: the Formgrader's pages run only the Formgrader's scripts")
