"""What `collect` reports, and the limits every source of submissions reads within."""
from __future__ import annotations

from dataclasses import dataclass, field

RECORD = ".predictions.jsonl"     # the prediction record beside the notebook (course_lib.exercises.predictions)


KEEP = ("timestamp.txt", "submission_secret.txt", RECORD)   # kept as they are: nbgrader's own files, the record


MAX_FILE = 64 * 2**20


MAX_TOTAL = 4 * 2**30


MAX_ENTRIES = 20_000     # files in one LMS zip


MAX_NAME = 512           # characters of a path in a zip or a folder


IGNORED = {".DS_Store", "Thumbs.db", "desktop.ini"}


@dataclass
class CollectReport:
    assignment: str
    collected: dict = field(default_factory=dict)      # student -> [notebook, ...]
    problems: list = field(default_factory=list)       # (student, file, message)
    notes: list = field(default_factory=list)          # (student, file, message): collected, but said
    timestamps: dict = field(default_factory=dict)     # student -> timestamp recorded

    def problem(self, student: str, file: str, message: str) -> None:
        self.problems.append((student, file, message))

    def note(self, student: str, file: str, message: str) -> None:
        self.notes.append((student, file, message))

    def format(self) -> str:
        lines = [f"collected {len(self.collected)} submission(s) of {self.assignment}"]
        lines += [f"  note: {s or '-'}: {f + ': ' if f else ''}{m}" for s, f, m in self.notes]
        if self.problems:
            lines.append(f"{len(self.problems)} problem(s), skipped:")
            lines += [f"  {s or '-'}: {f}: {m}" for s, f, m in self.problems]
        return "\n".join(lines)
