"""A helper process in a sandbox that the grader talks to in JSON lines: one request a line on
its stdin, one answer a line on its stdout. The clean verifier (autograder.integrity.verify) and
the warm kernels' zygote (autograder.sandbox.zygote) are two."""
from __future__ import annotations

import json
import os
import select
import subprocess
import time


class LineProcess:
    """`cmd` started with pipes; `error` (an exception class) raised, and the process killed,
    when an answer does not come in time, is not JSON, or the process is gone. `what` names it
    in those messages ("the clean re-verification")."""

    def __init__(self, cmd: list[str], *, env: dict, cwd: str, stderr, error: type[Exception], what: str):
        self.error, self.what = error, what
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=cwd)
        self._buf = b""

    def read(self, timeout: float) -> dict:
        """The next answer."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.close()
                raise self.error(f"{self.what} ran past {timeout:.0f} s")
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                code = self.proc.wait()
                self.close()
                raise self.error(f"{self.what} process exited ({code}); see the kernel log")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            self.close()
            raise self.error(f"{self.what} printed something else: {line[:200]!r}") from None

    def send(self, request: dict) -> None:
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except (OSError, ValueError) as e:      # ValueError: the pipe was closed here
            self.close()
            raise self.error(f"{self.what} process is gone: {e}") from None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
