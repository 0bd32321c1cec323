"""Formulas on feedback pages as MathML, typeset by the browser itself (MathML Core) without a
script: the pages work offline and in JupyterLab's HTML viewer, which runs no script.

Math a student typed is hostile input. latex2mathml turns `\\href{javascript:...}{x}` into an
`href` attribute, so its output is parsed and rebuilt from an allow-list of MathML elements and
attributes, every text escaped; a formula it cannot convert, or that needs anything outside the
list, is shown as its escaped TeX.
"""
from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET

from nbconvert.filters.markdown_mistune import IPythonRenderer

MAX_TEX = 4000      # characters of one formula; a longer one is shown as TeX (conversion is recursive)
NS = "{http://www.w3.org/1998/Math/MathML}"
# MathML Core's presentation elements (https://www.w3.org/TR/mathml-core/#mathml-elements-and-attributes)
ELEMENTS = {"math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "mfrac", "msqrt", "mroot",
            "mstyle", "merror", "mpadded", "mphantom", "msub", "msup", "msubsup", "munder", "mover",
            "munderover", "mmultiscripts", "mprescripts", "none", "mtable", "mtr", "mtd", "semantics",
            "annotation", "menclose", "mfenced"}
# presentation attributes only: no href, no style, no event handler, no class or id
ATTRIBUTES = {"display", "displaystyle", "scriptlevel", "mathvariant", "mathsize", "stretchy", "fence",
              "separator", "form", "lspace", "rspace", "minsize", "maxsize", "symmetric", "largeop",
              "movablelimits", "accent", "accentunder", "linethickness", "width", "height", "depth",
              "columnalign", "rowalign", "columnspacing", "rowspacing", "columnlines", "rowlines",
              "frame", "framespacing", "columnspan", "rowspan", "notation", "open", "close",
              "separators", "encoding", "voffset"}
SAFE_VALUE = re.compile(r"[\w .,%#+\-]*")


class UnsafeMath(ValueError):
    """latex2mathml's output holds an element or attribute outside the allow-list."""


def _rebuild(el: ET.Element) -> str:
    tag = el.tag[len(NS):] if el.tag.startswith(NS) else el.tag
    if tag not in ELEMENTS:
        raise UnsafeMath(f"element {tag!r}")
    attrs = []
    for name, value in el.attrib.items():
        if name not in ATTRIBUTES:
            continue                  # href, xlink:href, style...: dropped, the formula stays
        if not SAFE_VALUE.fullmatch(value):
            raise UnsafeMath(f"attribute {name}={value!r}")
        attrs.append(f' {name}="{html.escape(value)}"')
    inner = html.escape(el.text or "", quote=False)
    for child in el:
        inner += _rebuild(child) + html.escape(child.tail or "", quote=False)
    return f"<{tag}{''.join(attrs)}>{inner}</{tag}>"


def tex_to_html(tex: str, display: bool = False) -> str:
    """`tex` (without its $ delimiters) as safe MathML, or, where it cannot be, as escaped TeX in
    <code>."""
    from latex2mathml.converter import convert

    tex = tex.strip()
    try:
        if not tex or len(tex) > MAX_TEX:
            raise UnsafeMath("empty or too long")
        root = ET.fromstring(convert(tex, display="block" if display else "inline"))
        math = _rebuild(root)
        return math.replace("<math", '<math xmlns="http://www.w3.org/1998/Math/MathML"', 1)
    except Exception:     # latex2mathml raises many kinds on TeX it does not know
        delim = "$$" if display else "$"
        return f'<code class="tex">{html.escape(delim + tex + delim)}</code>'


class MathMLRenderer(IPythonRenderer):
    """nbconvert's markdown renderer with $...$, $$...$$, \\(...\\), \\[...\\] and LaTeX
    environments written as MathML (nbconvert leaves them as TeX for MathJax)."""

    def inline_math(self, body: str) -> str:
        return tex_to_html(body)

    def block_math(self, body: str) -> str:
        return tex_to_html(body, display=True)

    def latex_environment(self, name: str, body: str) -> str:
        return tex_to_html(f"\\begin{{{name}}}{body}\\end{{{name}}}", display=True)


_DELIMITED = re.compile(r"^\s*(\$\$|\\\[|\$|\\\()(.*?)(\$\$|\\\]|\$|\\\))\s*$", re.S)


def latex_output_to_html(text: str) -> str:
    """A text/latex output (IPython's Math, Latex, sympy's display) as MathML."""
    m = _DELIMITED.match(text)
    if m and {m.group(1), m.group(3)} in ({"$$"}, {"$"}, {"\\[", "\\]"}, {"\\(", "\\)"}):
        return tex_to_html(m.group(2), display=m.group(1) in ("$$", "\\["))
    return tex_to_html(text, display=True)
