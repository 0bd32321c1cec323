"""Timing with the habits of a benchmark: warm-up, repeats, median, spread.

A single timing of a fast call says little: the first call pays for page faults and cold
caches, and any later one may be interrupted by another process. So every figure of the
measurement is the **median** of several timed repeats after one untimed warm-up, and its
**spread** ``(max - min) / median`` over the repeats says how much to trust it.

>>> t = time_repeats(lambda: sum(range(1000)), repeats=5)
>>> len(t.seconds), t.median > 0, t.spread >= 0
(5, True, True)
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    """Seconds of each timed repeat (after warm-up) of one call."""

    seconds: tuple

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def spread(self) -> float:
        """(slowest - fastest) / median: 0.05 means the repeats agree within about 5%."""
        return (max(self.seconds) - min(self.seconds)) / self.median

    def rate(self, amount: float) -> float:
        """`amount` (FLOPs or bytes) per second at the median time."""
        return amount / self.median


def time_repeats(fn, repeats: int = 5, warmup: int = 1) -> Timing:
    """Call `fn` `warmup` times untimed, then `repeats` times timed; return the Timing."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats!r}.")
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return Timing(tuple(out))


def time_stable(fn, repeats: int = 5, warmup: int = 1, max_spread: float = 0.5,
                max_rounds: int = 3, deadline: float | None = None) -> Timing:
    """``time_repeats``, and while the last round's repeats disagree by more than
    `max_spread` (another process got in the way), another round, up to `max_rounds` in all,
    every round's repeats pooled: the median of more samples shrugs off a burst of
    interference. No extra round starts after `deadline` (a ``time.perf_counter()`` value):
    on a machine so busy that every round is noisy, more rounds would only take longer.

    >>> t = time_stable(lambda: sum(range(1000)), repeats=3)
    >>> len(t.seconds) in (3, 6, 9)
    True
    """
    last = time_repeats(fn, repeats=repeats, warmup=warmup)
    samples = list(last.seconds)
    for _ in range(max_rounds - 1):
        if last.spread <= max_spread or (deadline is not None and time.perf_counter() > deadline):
            break
        last = time_repeats(fn, repeats=repeats, warmup=0)
        samples += last.seconds
    return Timing(tuple(samples))


def calls_for(fn, target_s: float, cap: int = 1 << 20) -> int:
    """How many back-to-back calls of `fn` take about `target_s` (one untimed call first)."""
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    return int(min(cap, max(1, round(target_s / one))))


def time_batched(fn, target_s: float, repeats: int = 5, deadline: float | None = None) -> tuple[Timing, int]:
    """Median-of-repeats timing (``time_stable``) of a fast call: each repeat runs `fn`
    enough times in a row to last about `target_s`. Returns (Timing per call, calls per repeat)."""
    n = calls_for(fn, target_s)

    def batch():
        for _ in range(n):
            fn()

    t = time_stable(batch, repeats=repeats, warmup=0, deadline=deadline)
    return Timing(tuple(s / n for s in t.seconds)), n
