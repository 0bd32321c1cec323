"""Why the grader flags a submission, as data: a Flag (the kind of finding) and its message (what
the instructor reads).

The grader's modules set the Flag where they find something (autograder.integrity.predictions: the
prediction rule; autograde: the kernel's verdict; ledger: the hub's ledger; grade: a failed
regrade); the report, the export and the console decide by the Flag alone. The message is
display text, free to be reworded. Where a reason is kept (the status file
autograded/.autograder/<assignment>/<student>.json, an autograded notebook's metadata, the
report's CSV files) the Flag's value, a stable id, is stored beside the message and read back
into the Flag.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass


class Flag(enum.Enum):
    """The kinds of finding that flag a submission for the instructor."""

    KERNEL_DIFFERS = "kernel-differs"            # the kernel's verdict differs from the clean re-verification
    NO_RECORD = "no-record"                      # no prediction record: graded on the final answers
    NO_RECORD_ZERO = "no-record-zero"            # no prediction record: no correctness points (--no-record zero-predictions)
    RECORD_EDITED = "record-edited"              # the prediction record looks edited or inconsistent
    CHANGED_AFTER_REVEAL = "changed-after-reveal"  # a prediction changed after its truth was revealed
    TRUTH_SHOWN_UNCOMMITTED = "truth-shown-uncommitted"  # the truth on screen, no answer committed before it
    TRUTH_SHOWN_UNRECORDED = "truth-shown-unrecorded"    # the truth on screen without a recorded reveal
    LEDGER_DIFFERS = "ledger-differs"            # the record differs from the hub's ledger
    GRADING_FAILED = "grading-failed"            # the last grading failed (an earlier grade stands)
    POSSIBLE_COPY = "possible-copy"              # an answer right for a classmate's variant, or theirs (copies)
    UNKNOWN = "unknown"                          # kept by an older grader, as text only

    @classmethod
    def parse(cls, value) -> Flag | None:
        """The Flag a stored id names; None for none (""), UNKNOWN for an id this grader does not know."""
        if value in (None, ""):
            return None
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


#: the truth on screen in the submitted notebook without a recorded reveal before it
TRUTH_SHOWN = frozenset({Flag.TRUTH_SHOWN_UNCOMMITTED, Flag.TRUTH_SHOWN_UNRECORDED})


@dataclass(frozen=True)
class Reason:
    """One reason a submission is flagged: its kind and the sentence the instructor reads."""

    flag: Flag
    message: str

    def __str__(self) -> str:
        return self.message

    def to_json(self) -> dict:
        return {"flag": self.flag.value, "message": self.message}

    @classmethod
    def from_json(cls, data) -> Reason:
        """A stored reason; a bare string (a status file of an older grader) is UNKNOWN."""
        if not isinstance(data, dict):
            return cls(Flag.UNKNOWN, str(data))
        return cls(Flag.parse(data.get("flag")) or Flag.UNKNOWN, str(data.get("message") or ""))
