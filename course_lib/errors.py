"""Errors that say what was expected. Each is also a ValueError or TypeError, so ordinary
``except ValueError`` code keeps working."""
from __future__ import annotations

import difflib


class CourseError(ValueError):
    """Base class for course_lib's input errors."""


class UnitsError(CourseError, TypeError):
    """A value without units, or with units of the wrong dimension."""


class UnknownNameError(CourseError, KeyError):
    """A zoo name that does not exist. The message suggests the closest names."""

    def __str__(self):  # KeyError would otherwise print the message in quotes
        return str(self.args[0])


class PrecisionError(CourseError):
    """A precision the hardware has no peak for, or that the course does not know."""


def unknown_name(kind: str, name: str, valid) -> UnknownNameError:
    """An UnknownNameError for `name`, suggesting the closest of `valid`."""
    valid = list(valid)
    lowered = {v.lower(): v for v in valid}
    close = difflib.get_close_matches(str(name).lower(), list(lowered), n=3, cutoff=0.5)
    hint = f" Did you mean {' or '.join(lowered[c] for c in close)}?" if close else ""
    return UnknownNameError(
        f"Unknown {kind} {name!r}.{hint} Valid names: {', '.join(sorted(valid))}."
    )
