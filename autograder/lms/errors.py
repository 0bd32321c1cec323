"""The one error `export --lms` stops with: what went wrong and what to do, for the instructor."""


class LmsError(Exception):
    """Nothing more is posted; the message says why and what to check."""
