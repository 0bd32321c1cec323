"""What a student supplied, made safe to show in any page an instructor or student opens (the
Formgrader's Manual Grading, the feedback pages, exported HTML).

Everything in a submitted notebook is hostile input: outputs *and* their metadata, markdown and
raw cells, cell and notebook metadata. Nothing is matched against patterns of known attacks;
it is parsed and rebuilt from allow-lists:

* HTML (text/html outputs, markdown rendered to HTML) goes through nh3 (the Rust `ammonia`
  sanitizer, an HTML5 parser): only the tags and attributes listed here survive, URLs are judged
  after entity decoding (`&#106;avascript:` is `javascript:`), `data:` URLs only as a raster
  image's `src`, styles only the few layout properties listed, formulas as MathML from
  autograder.outputs.mathml's allow-list;
* a markdown cell that could produce anything beyond plain text formatting is rendered here
  (formulas as MathML), cleaned, and stored as that HTML on one line, which nbconvert's markdown
  renderer passes through unchanged;
* output metadata keeps only an image's width and height (whole numbers), `unconfined` (a
  boolean) and `alt` (text); an image's data must be base64; output types, stream names,
  execution counts, cell ids, cell tags and nbgrader ids are checked against their grammar;
  MIME types outside the list (JavaScript, widgets, SVG, iframes...) are dropped with a note.

`sanitize_notebook` is applied where the grader stores the autograded notebook and, again, by
`SanitizeForPage` whenever nbconvert renders one for a page (the course's nbgrader_config.py
installs it in every HTMLExporter: the Formgrader's and the feedback's).
"""
from __future__ import annotations

import re
import uuid

from nbconvert.preprocessors import Preprocessor

from autograder.outputs.mathml import ATTRIBUTES as MATHML_ATTRIBUTES, ELEMENTS as MATHML_ELEMENTS, SAFE_VALUE

HTML_TAGS = {"a", "abbr", "b", "blockquote", "br", "caption", "cite", "code", "col", "colgroup", "dd", "del",
             "details", "dfn", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5",
             "h6", "hr", "i", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small",
             "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr",
             "u", "ul", "var"}
TAGS = HTML_TAGS | MATHML_ELEMENTS
ATTRIBUTES = {
    "*": {"class", "title", "lang", "dir"},
    "a": {"href"},
    "img": {"src", "alt", "width", "height", "style"},
    "figure": {"style"}, "div": {"style"}, "span": {"style"}, "p": {"style"},
    "th": {"scope", "colspan", "rowspan", "style"}, "td": {"colspan", "rowspan", "style"},
    "ol": {"start"}, "details": {"open"},
    **{tag: set(MATHML_ATTRIBUTES) for tag in MATHML_ELEMENTS},
}
# layout only: none of these can load anything or run anything
STYLE_PROPERTIES = {"max-width", "width", "height", "margin", "text-align", "vertical-align"}
URL_SCHEMES = {"http", "https", "mailto", "data"}
_RASTER_DATA_URL = re.compile(r"data:image/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]+", re.I)
_NUMBER = re.compile(r"\d{1,5}(?:\.\d{1,3})?(?:px|%)?")
_CLASS = re.compile(r"[A-Za-z0-9_ -]{0,200}")

# what a page may be shown of an output, by MIME type (anything else is dropped, with a note)
SHOWN_MIMES = ("text/plain", "text/html", "text/markdown", "text/latex", "image/png", "image/jpeg", "image/gif")
# kept as data, never rendered by a page: the prediction receipts (course_lib.exercises.predictions)
DATA_MIMES = ("application/vnd.roofline.predictions+json",)
IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
# nbgrader's own grammar for grade ids (nbgrader.preprocessors.CheckCellMetadata), cell ids nbformat's
_GRADE_ID = re.compile(r"[A-Za-z0-9_\-]{1,200}")
_CELL_ID = re.compile(r"[A-Za-z0-9_\-]{1,64}")
_TAG = re.compile(r"[A-Za-z0-9_\-.:]{1,100}")
_NOT_LANGUAGE_TEXT = re.compile(r"[^A-Za-z0-9_+.\-() ]")

DROPPED_NOTE = "[{mime} output not shown by the grader: only text, HTML, markdown, LaTeX and raster images are]"
WRAPPER_CLASS = "grader-cleaned"


def _attribute(tag: str, attr: str, value: str) -> str | None:
    """nh3's attribute filter: values are already entity-decoded here."""
    v = value.strip()
    if attr == "href":
        if v.lower().startswith("data:"):
            return None
        return value
    if attr == "src":       # a raster image's own data only: no request leaves the page
        return v if _RASTER_DATA_URL.fullmatch(v) else None
    if attr in ("width", "height") and tag not in MATHML_ELEMENTS:
        return v if _NUMBER.fullmatch(v) else None
    if attr in ("colspan", "rowspan", "start"):
        return v if v.isdigit() and len(v) < 5 else None
    if attr == "class":
        return v if _CLASS.fullmatch(v) else None
    if tag in MATHML_ELEMENTS and attr in MATHML_ATTRIBUTES:
        return v if SAFE_VALUE.fullmatch(v) else None
    return value


_CLEANER = None
_SOURCELESS_IMAGE = re.compile(r"<img\b(?![^>]*\ssrc=)[^>]*>")
IMAGE_NOTE = '<span class="grader-note">[image not shown by the grader: not the image\'s own data]</span>'


def clean_html(text: str) -> str:
    """`text` parsed as an HTML fragment and rebuilt from the allow-lists above."""
    global _CLEANER
    if _CLEANER is None:
        import nh3

        _CLEANER = nh3.Cleaner(tags=TAGS, attributes=ATTRIBUTES, attribute_filter=_attribute,
                               url_schemes=URL_SCHEMES, strip_comments=True,
                               link_rel="noopener noreferrer nofollow",
                               clean_content_tags={"script", "style", "iframe", "object", "embed", "template",
                                                   "textarea", "noscript", "svg"},
                               filter_style_properties=STYLE_PROPERTIES)
    # an image whose source was not its own data (a URL, a script) has nothing left to show
    return _SOURCELESS_IMAGE.sub(IMAGE_NOTE, _CLEANER.clean(text))


# Markdown that cannot become anything but text formatting: no HTML, no entity, no link or image
# (inline or by reference), no attachment. Everything else is rendered and cleaned here.
_PLAIN_MARKDOWN = re.compile(r"[^<>&\]\\]*", re.S)


def _render_markdown(source: str, attachments: dict | None) -> str:
    from nbconvert.filters.markdown_mistune import MarkdownWithMath

    from autograder.outputs.mathml import MathMLRenderer

    renderer = MathMLRenderer(escape=False, attachments=attachments or {}, exclude_anchor_links=True)
    return MarkdownWithMath(renderer=renderer).render(source)


def markdown_as_html(source: str, attachments: dict | None = None) -> str:
    """A markdown cell as cleaned HTML on one line inside a <div> (an HTML block that markdown
    renderers pass through as it is): formulas as MathML."""
    html = clean_html(_render_markdown(source, attachments))
    # one line: a blank line would end the HTML block and hand the rest to markdown again
    html = html.replace("\r", "").replace("\n", "&#10;")
    return f'<div class="{WRAPPER_CLASS}">{html}</div>'


def sanitize_markdown_cell(cell, always: bool = False) -> None:
    """A markdown cell, or a raw one, made safe to render (in place)."""
    source = cell.get("source", "")
    source = "".join(source) if isinstance(source, list) else str(source)
    attachments = cell.pop("attachments", None) if cell.get("cell_type") == "markdown" else None
    if cell.get("cell_type") == "raw":
        cell["source"] = clean_html(source)
        meta = cell.get("metadata") or {}
        if "raw_mimetype" in meta and meta["raw_mimetype"] not in ("text/html", "text/markdown", "text/plain"):
            meta.pop("raw_mimetype")
        return
    if always or attachments or not _PLAIN_MARKDOWN.fullmatch(source):
        cell["source"] = markdown_as_html(source, attachments if isinstance(attachments, dict) else None)
    else:
        cell["source"] = source


def _text(value) -> str | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    return value if isinstance(value, str) else None


def _image_metadata(meta) -> dict:
    out = {}
    if not isinstance(meta, dict):
        return out
    for key in ("width", "height"):
        v = meta.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 100_000:
            out[key] = int(v)
    if isinstance(meta.get("unconfined"), bool):
        out["unconfined"] = meta["unconfined"]
    if isinstance(meta.get("alt"), str):
        out["alt"] = meta["alt"][:2000]
    return out


def sanitize_output(out) -> dict:
    """One output rebuilt from what a page may show of it (a new dict)."""
    from nbformat.notebooknode import NotebookNode

    kind = out.get("output_type") if isinstance(out, dict) else None
    if kind == "stream":
        text = _text(out.get("text"))
        return NotebookNode(output_type="stream", name="stderr" if out.get("name") == "stderr" else "stdout",
                            text=text if text is not None else "")
    if kind == "error":
        tb = out.get("traceback")
        return NotebookNode(output_type="error", ename=_text(out.get("ename")) or "Error",
                            evalue=_text(out.get("evalue")) or "",
                            traceback=[t for t in tb if isinstance(t, str)] if isinstance(tb, list) else [])
    if kind not in ("execute_result", "display_data"):
        return NotebookNode(output_type="stream", name="stdout",
                            text="[an output of an unknown kind, not shown by the grader]\n")
    data = out.get("data") if isinstance(out.get("data"), dict) else {}
    kept, dropped = {}, []
    for mime, value in data.items():
        if mime in DATA_MIMES and isinstance(value, dict):
            kept[mime] = value
            continue
        text = _text(value)
        if mime not in SHOWN_MIMES or text is None:
            dropped.append(str(mime)[:80])
        elif mime in IMAGE_MIMES:
            if _BASE64.fullmatch(text):
                kept[mime] = text
            else:
                dropped.append(mime)
        elif mime == "text/html":
            kept[mime] = clean_html(text)
        elif mime == "text/markdown":
            kept["text/html"] = kept.get("text/html") or markdown_as_html(text)
        elif mime == "text/latex":
            from autograder.outputs.mathml import latex_output_to_html

            kept["text/html"] = kept.get("text/html") or clean_html(latex_output_to_html(text))
        else:
            kept[mime] = text
    if dropped and "text/plain" not in kept:
        kept["text/plain"] = DROPPED_NOTE.format(mime=", ".join(dropped))
    meta = out.get("metadata") if isinstance(out.get("metadata"), dict) else {}
    metadata = {m: _image_metadata(meta.get(m)) for m in IMAGE_MIMES if m in kept and isinstance(meta.get(m), dict)}
    metadata.update(_image_metadata(meta))
    result = NotebookNode(output_type=kind, data=NotebookNode(kept), metadata=NotebookNode(metadata))
    if kind == "execute_result":
        n = out.get("execution_count")
        result["execution_count"] = n if isinstance(n, int) and not isinstance(n, bool) else None
    return result


def sanitize_cell_outputs(cell) -> None:
    """A code cell's outputs and execution count made safe to show (in place)."""
    outputs = cell.get("outputs")
    cell["outputs"] = [sanitize_output(o) for o in outputs] if isinstance(outputs, list) else []
    n = cell.get("execution_count")
    cell["execution_count"] = n if isinstance(n, int) and not isinstance(n, bool) else None


def _sanitize_cell_metadata(cell) -> None:
    meta = cell.get("metadata")
    if not isinstance(meta, dict):
        cell["metadata"] = meta = {}
    nbg = meta.get("nbgrader")
    if nbg is not None and not (isinstance(nbg, dict) and _GRADE_ID.fullmatch(str(nbg.get("grade_id", "")))
                                and isinstance(nbg.get("points", 0), (int, float))):
        meta.pop("nbgrader")       # a cell nbgrader cannot know: shown as an ordinary cell
    tags = meta.get("tags")
    if tags is not None:
        meta["tags"] = [t for t in tags if isinstance(t, str) and _TAG.fullmatch(t)] if isinstance(tags, list) else []
    for key in [k for k in meta if not (k in ("nbgrader", "tags", "raw_mimetype")
                                        or k in ("deletable", "editable") and isinstance(meta[k], bool))]:
        meta.pop(key)
    cid = cell.get("id")
    if cid is not None and not (isinstance(cid, str) and _CELL_ID.fullmatch(cid)):
        cell["id"] = uuid.uuid4().hex[:8]


def _language_text(value) -> str:
    return _NOT_LANGUAGE_TEXT.sub("", value if isinstance(value, str) else "")[:64]


def _sanitize_notebook_metadata(nb) -> None:
    meta = nb.get("metadata")
    if not isinstance(meta, dict):
        nb["metadata"] = meta = {}
    for key in ("kernelspec", "language_info"):
        section = meta.get(key)
        if section is None:
            continue
        if not isinstance(section, dict):
            meta.pop(key)
            continue
        for k in list(section):
            v = section[k]
            if k == "codemirror_mode" and isinstance(v, dict):
                section[k] = {_language_text(kk): vv if isinstance(vv, int) else _language_text(vv)
                              for kk, vv in v.items() if isinstance(vv, (int, str))}
            else:       # a required name stays, with only the characters a name needs
                section[k] = _language_text(v)
    for key in [k for k in meta if k not in ("kernelspec", "language_info", "nbgrader", "autograder")]:
        meta.pop(key)       # title, authors, widgets, ...: nothing a page needs


def sanitize_notebook(nb, always_render_markdown: bool = False) -> None:
    """Every cell, output and metadata of `nb` made safe to show in a page (in place).
    `always_render_markdown`: every markdown cell as cleaned HTML (formulas as MathML), also the
    plain ones (a page that runs no MathJax)."""
    _sanitize_notebook_metadata(nb)
    for cell in nb.get("cells", []):
        _sanitize_cell_metadata(cell)
        kind = cell.get("cell_type")
        if kind == "code":
            sanitize_cell_outputs(cell)
        elif kind in ("markdown", "raw"):
            sanitize_markdown_cell(cell, always=always_render_markdown)
            cell.pop("outputs", None)


class SanitizeForPage(Preprocessor):
    """nbconvert preprocessor: the notebook made safe to show (autograder.outputs.page_safety), every
    markdown cell rendered here with its formulas as MathML. Installed for every HTMLExporter by
    the course's nbgrader_config.py (autograder.outputs.feedback.configure_nbgrader_feedback)."""

    def preprocess(self, nb, resources):
        sanitize_notebook(nb, always_render_markdown=True)
        return nb, resources

