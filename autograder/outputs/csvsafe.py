"""CSV that a spreadsheet opens as text: no cell a student supplied starts a formula.

A cell starting with = + - @ (or a tab or carriage return, which some spreadsheets skip before
one) is written with a leading apostrophe (OWASP's advice); numbers, negative ones included,
stay numbers. Every CSV the autograder writes goes through here; `unescape` reads a cell back.
"""
from __future__ import annotations

import csv
import re

_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|nan)")


def cell(value):
    """`value` safe for a spreadsheet cell."""
    if isinstance(value, str) and value.startswith(_TRIGGERS) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def unescape(value: str) -> str:
    """A cell as cell() was given it."""
    if isinstance(value, str) and value.startswith("'") and value[1:].startswith(_TRIGGERS) \
            and not _NUMBER.fullmatch(value[1:]):
        return value[1:]
    return value


class Writer:
    """csv.writer whose cells go through cell()."""

    def __init__(self, f, **kw):
        self._w = csv.writer(f, **kw)

    def writerow(self, row):
        return self._w.writerow([cell(v) for v in row])

    def writerows(self, rows):
        for row in rows:
            self.writerow(row)


class DictWriter(csv.DictWriter):
    """csv.DictWriter whose values go through cell()."""

    def writerow(self, rowdict):
        return super().writerow({k: cell(v) for k, v in rowdict.items()})

    def writerows(self, rowdicts):
        for r in rowdicts:
            self.writerow(r)
