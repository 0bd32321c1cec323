"""Figures in a notebook with their text alternative.

JupyterLab shows a figure's PNG as an ``<img>`` without ``alt`` (its image renderer reads none),
so a screen reader meets an unnamed image. Once ``enable()`` ran (``import course_lib`` runs it
inside IPython), every matplotlib figure a cell shows also carries an HTML form, which JupyterLab
and nbconvert prefer to the PNG: the same PNG in an ``<img>`` whose ``alt`` is
``course_lib.alt_text.figure_text`` of the figure, followed by its data as tables in a
``<details>`` element. The PNG stays in the output for every other viewer.
"""
from __future__ import annotations

import html
import sys

from .alt_text import Table, figure_text


def table_html(table: Table) -> str:
    """A table with a caption and column headers (th scope=col)."""
    head = "".join(f'<th scope="col">{html.escape(h)}</th>' for h in table.header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                   for row in table.rows)
    return (f"<table><caption>{html.escape(table.caption)}</caption><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>")


def figure_html(fig) -> str | None:
    """The figure as an <img> with its text alternative and its data tables (None for a figure
    without axes, which IPython then does not show in HTML)."""
    from IPython.core.pylabtools import print_figure

    if not fig.get_axes():
        return None
    text = figure_text(fig)            # before print_figure: the describers read the axes as drawn
    png = print_figure(fig, "png", bbox_inches="tight", base64=True)
    if not png:
        return None
    tables = "".join(table_html(t) for t in text.tables if t.rows)
    details = (f"<details><summary>The chart's data as {'a table' if len(text.tables) == 1 else 'tables'}"
               f"</summary>{tables}</details>") if tables else ""
    return (f'<figure class="course-figure" style="margin:0">'
            f'<img src="data:image/png;base64,{png}" alt="{html.escape(text.alt, quote=True)}" '
            f'style="max-width:100%">{details}</figure>')


def figure_bundle(fig) -> dict:
    """{'text/html': figure_html(fig)}, or {} for a figure without axes."""
    page = figure_html(fig)
    return {"text/html": page} if page else {}


def enable() -> bool:
    """Show matplotlib figures with their text alternative in this IPython session; True when
    one is running (nothing happens, and IPython is not imported, outside one).

    The HTML comes from IPython's mime-bundle formatter, not its text/html one: matplotlib's
    inline backend drops every per-type formatter of figures when it loads (the first figure
    of a kernel), and the mime-bundle formatter is not among them. IPython still adds the PNG."""
    if "IPython" not in sys.modules:
        return False
    from IPython import get_ipython

    ip = get_ipython()
    if ip is None:
        return False
    ip.display_formatter.mimebundle_formatter.for_type_by_name(
        "matplotlib.figure", "Figure", figure_bundle)
    return True
