"""Numbers for people, the one place the course formats them: engineering units with sensible
precision (results, explorers, plots, measurements), never ``1.21e+03 s`` or ``2.22e+03 GB``.

Three significant digits for measured-looking quantities (times, bytes, FLOPs) with an SI
prefix chosen so the number sits in [1, 1000); rates of 100 and more are whole numbers with
thousands separators, as the lessons print them; hardware rates (peaks, bandwidths) to four
significant digits as datasheets print them. Bytes are decimal (GB = 10⁹ B, the course's
convention: fmt_bytes) unless binary is meant (cache and memory sizes: fmt_binary_bytes, KiB).

>>> fmt_time(1210.4), fmt_time(0.0167), fmt_time(1.2e-4)
('20.2 min', '16.7 ms', '120 µs')
>>> fmt_bytes(2.22e12), fmt_binary_bytes(49152), fmt_flops(2.09e12), fmt_rate(18889.4, "images/s")
('2.22 TB', '48 KiB', '2.09 TFLOP', '18,889 images/s')
"""
from __future__ import annotations

import math

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))


def fmt_sig(x: float, digits: int = 3) -> str:
    """`x` to `digits` significant digits, without an exponent; 1000 and more as a whole
    number with thousands separators.

    >>> fmt_sig(65.27), fmt_sig(6.7), fmt_sig(0.9994), fmt_sig(1209.6), fmt_sig(0)
    ('65.3', '6.70', '0.999', '1,210', '0')
    """
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    exp = math.floor(math.log10(abs(x)))
    rounded = round(x, digits - 1 - exp)
    if rounded and math.floor(math.log10(abs(rounded))) > exp:   # 9.996 -> 10.0
        exp += 1
    if exp >= digits - 1:
        return f"{round(rounded, digits - 1 - exp):,.0f}"
    return f"{rounded:.{digits - 1 - exp}f}"


def _prefixed(x: float, unit: str) -> str:
    for scale, prefix in _PREFIXES:
        if abs(x) >= scale * 0.9995:        # 999.6 GB prints as 1.00 TB, not 1,000 GB
            return f"{fmt_sig(x / scale)} {prefix}{unit}"
    return f"{fmt_sig(x)} {unit}"


def fmt_time(seconds: float) -> str:
    """A duration: ns, µs, ms, s; minutes and hours past two of each.

    >>> fmt_time(0.0067), fmt_time(1.05), fmt_time(7200 * 3)
    ('6.70 ms', '1.05 s', '6.00 h')
    """
    t = float(seconds)
    if t >= 7200:
        return f"{fmt_sig(t / 3600)} h"
    if t >= 120:
        return f"{fmt_sig(t / 60)} min"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if t >= scale * 0.9995:
            return f"{fmt_sig(t / scale)} {unit}"
    return f"{fmt_sig(t / 1e-9)} ns"


def fmt_bytes(nbytes: float) -> str:
    """A size in decimal units (kB, MB, GB, TB).

    >>> fmt_bytes(16.06e9), fmt_bytes(131072), fmt_bytes(512)
    ('16.1 GB', '131 kB', '512 B')
    """
    return _prefixed(float(nbytes), "B")


KiB, MiB, GiB = 1024, 1024**2, 1024**3


def fmt_binary_bytes(n: float) -> str:
    """A size in binary units, as cache and memory sizes are quoted (KiB, MiB, GiB).

    >>> fmt_binary_bytes(49152), fmt_binary_bytes(1.5 * MiB), fmt_binary_bytes(80 * GiB), fmt_binary_bytes(512)
    ('48 KiB', '1.5 MiB', '80 GiB', '512 B')
    """
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            v = n / size
            return f"{v:.0f} {unit}" if abs(v - round(v)) < 0.05 else f"{v:.1f} {unit}"
    return f"{n:.0f} B"


def fmt_flops(flops: float) -> str:
    """A FLOP count (GFLOP, TFLOP, ...).

    >>> fmt_flops(1.5e10)
    '15.0 GFLOP'
    """
    return _prefixed(float(flops), "FLOP")


def fmt_rate(per_second: float, what: str) -> str:
    """A throughput such as tokens/s: whole numbers from 100 up, else 3 significant digits.

    >>> fmt_rate(133.33, "tokens/s"), fmt_rate(59.92, "tokens/s")
    ('133 tokens/s', '59.9 tokens/s')
    """
    return f"{_whole_from_100(per_second)} {what}"


def _whole_from_100(x: float) -> str:
    x = float(x)
    return f"{x:,.0f}" if abs(x) >= 99.95 else fmt_sig(x)


def fmt_per_second(x: float, unit: str) -> str:
    """A hardware rate with an SI prefix, to four significant digits as datasheets print them:
    a peak or a bandwidth.

    >>> fmt_per_second(312e12, "FLOP/s"), fmt_per_second(70.29e9, "FLOP/s"), fmt_per_second(2.039e12, "B/s")
    ('312 TFLOP/s', '70.29 GFLOP/s', '2.039 TB/s')
    >>> fmt_per_second(1979e12, "OP/s")
    '1979 TOP/s'
    """
    x = float(x)
    for scale, prefix in _PREFIXES[1:]:       # datasheets stop at T: 1979 TOP/s, not 1.979 POP/s
        if abs(x) >= scale * 0.99995:
            return f"{x / scale:.4g} {prefix}{unit}"
    return f"{x:.4g} {unit}"


def fmt_batch(batch: float) -> str:
    """A crossover batch: a whole number of samples (fractions to 3 significant digits), or
    "never" where no batch makes the step compute-bound (``crossover_batch`` returns inf).

    >>> fmt_batch(24.47), fmt_batch(1536.0), fmt_batch(float("inf"))
    ('24.5', '1,536', 'never')
    """
    b = float(batch)
    return "never" if math.isinf(b) and b > 0 else _whole_from_100(b)
