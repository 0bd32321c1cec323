"""Hardware: peak FLOP/s per precision, memory bandwidth and capacity (lesson 1 onwards).

>>> from course_lib import Hardware
>>> hw = Hardware.A100
>>> round(hw.ridge_point("fp16").m)          # 312e12 FLOP/s / 2.039e12 B/s
153
>>> Hardware.get("h100").name
'NVIDIA H100 SXM5 80GB'

The zoo's figures live in ``hardware_specs.py``, each with its source. Peaks are *dense*
(no 2:4 sparsity) and count 1 multiply-accumulate as 2 operations: FLOP/s for floating-point
formats, TOPS (tera-operations per second) for integer ones. Memory capacities are binary
(``Hardware.A100.memory_capacity`` is 80 GiB, 85.9 GB); bandwidths decimal. A hand-built
``Hardware(...)`` works everywhere a zoo entry does.
"""
from __future__ import annotations

from . import sensitivity
from .errors import PrecisionError, unknown_name
from .precision import INTEGER_PRECISIONS, PRECISIONS, normalize
from .units import Q_, to_si
from .zoo import ZooMeta, normalize_key


class Hardware(metaclass=ZooMeta):
    """One accelerator (or CPU): the numbers a roofline needs.

    Build your own with Quantities; it works everywhere a zoo entry does:

    >>> from course_lib import Q_
    >>> mine = Hardware(name="my GPU", peak_flops={"fp16": Q_(100, "TFLOP/s")},
    ...                 memory_bandwidth=Q_(1, "TB/s"), memory_capacity=Q_(24, "GB"))
    >>> mine.ridge_point("fp16")
    <Quantity(100.0, 'flop / byte')>
    >>> Hardware.A100.peak_flops("int8")          # integer peaks are in TOPS
    <Quantity(624.0, 'teraoperation / second')>
    >>> Hardware.A100.memory_capacity             # binary: nvidia-smi shows 81,920 MiB
    <Quantity(80.0, 'gibibyte')>
    """

    def __init__(self, name, peak_flops, memory_bandwidth, memory_capacity=None,
                 interconnect_bandwidth=None, link_latency=None, tdp=None, year=None,
                 vendor=None, sources=None):
        if not isinstance(peak_flops, dict) or not peak_flops:
            raise TypeError(
                "peak_flops must be a dict of precision -> peak, such as "
                "{'fp16': Q_(312, 'TFLOP/s')}, got " f"{peak_flops!r}."
            )
        peaks = {normalize(p): to_si(v, "flop_rate", f"peak_flops[{p!r}]")
                 for p, v in peak_flops.items()}
        self._init(
            name=str(name),
            peaks=peaks,
            bandwidth=to_si(memory_bandwidth, "bandwidth", "memory_bandwidth"),
            capacity=None if memory_capacity is None
            else to_si(memory_capacity, "bytes", "memory_capacity"),
            link_bandwidth=None if interconnect_bandwidth is None
            else to_si(interconnect_bandwidth, "bandwidth", "interconnect_bandwidth"),
            link_latency=None if link_latency is None
            else to_si(link_latency, "time", "link_latency"),
            tdp=None if tdp is None else to_si(tdp, "power", "tdp"),
            year=year, vendor=vendor, sources=dict(sources or {}), key=None,
        )

    def _init(self, *, name, peaks, bandwidth, capacity, link_bandwidth, link_latency,
              tdp, year, vendor, sources, key, interconnect=None, capacity_datasheet=None,
              link_max_gpus=None, fallback_link=None, fallback_link_bandwidth=None,
              link_topology=None, link_count=None, link_reduction=False,
              allreduce_latency=None, link_usable_bandwidth=None, allreduce_estimates=None):
        for p, v in peaks.items():
            if not v > 0:
                raise ValueError(f"peak_flops[{p!r}] must be positive, got {v}.")
        if not bandwidth > 0:
            raise ValueError(f"memory_bandwidth must be positive, got {bandwidth} B/s.")
        if capacity is not None and not capacity > 0:
            raise ValueError(f"memory_capacity must be positive, got {capacity} B.")
        self.name = name
        self.key = key
        self.year = year
        self.vendor = vendor
        self.interconnect = interconnect
        self.sources = sources
        self._peaks = dict(peaks)
        # plain SI floats, for the solvers
        self.memory_bandwidth_si = float(bandwidth)
        self.memory_capacity_si = None if capacity is None else float(capacity)
        self.interconnect_bandwidth_si = None if link_bandwidth is None else float(link_bandwidth)
        self.link_latency_si = None if link_latency is None else float(link_latency)
        self.tdp_si = None if tdp is None else float(tdp)
        # the datasheet's "GB" figure read as 10^9 B (zoo entries only; see hardware_specs)
        self.memory_capacity_datasheet_si = capacity_datasheet
        # a scale-up link that joins only this many GPUs, and what the others talk over
        self.interconnect_max_gpus = link_max_gpus
        self.fallback_interconnect = fallback_link
        self.fallback_interconnect_bandwidth_si = fallback_link_bandwidth
        # how much of the link bandwidth one AllReduce can use (course_lib.topology)
        self.interconnect_topology = link_topology or "switch"
        self.interconnect_links = link_count
        # a switch that sums the GPUs' data itself (NVLink SHARP): course_lib.topology
        self.interconnect_reduction = bool(link_reduction)
        # measured small-message AllReduce time, usable per-link bandwidth (course_lib.topology)
        self.allreduce_latency_si = None if allreduce_latency is None else float(allreduce_latency)
        self.interconnect_link_usable_bandwidth_si = link_usable_bandwidth
        # named implementations' measured small-message AllReduce times {name: {GPUs: s}}
        self.allreduce_estimates = {k: dict(v) for k, v in (allreduce_estimates or {}).items()}

    @classmethod
    def _from_spec(cls, key, spec, assumptions=None):
        """A zoo entry; `assumptions` (course_lib.sensitivity) scale it, and its name says so."""
        a = assumptions or sensitivity.Assumptions()
        capacity = spec.get("memory_capacity")
        if a.capacity == "decimal" and spec.get("memory_capacity_datasheet"):
            capacity = spec["memory_capacity_datasheet"]
        tag = a.describe()
        hw = cls.__new__(cls)
        hw._init(
            name=spec["name"] + (f" [{tag}]" if tag else ""),
            peaks={p: v * a.compute_efficiency for p, v in spec["peak_flops"].items()},
            bandwidth=spec["memory_bandwidth"] * a.memory_efficiency,
            capacity=capacity,
            link_bandwidth=spec.get("interconnect_bandwidth"),
            link_latency=spec.get("link_latency"), tdp=spec.get("tdp"),
            year=spec.get("year"), vendor=spec.get("vendor"),
            sources=spec.get("sources", {}), key=key, interconnect=spec.get("interconnect"),
            capacity_datasheet=spec.get("memory_capacity_datasheet"),
            link_max_gpus=spec.get("interconnect_max_gpus"),
            fallback_link=spec.get("fallback_interconnect"),
            fallback_link_bandwidth=spec.get("fallback_interconnect_bandwidth"),
            link_topology=spec.get("interconnect_topology"), link_count=spec.get("interconnect_links"),
            link_reduction=spec.get("interconnect_reduction", False),
            allreduce_latency=spec.get("allreduce_latency"),
            link_usable_bandwidth=spec.get("interconnect_link_usable_bandwidth"),
            allreduce_estimates=spec.get("allreduce_estimates"),
        )
        return hw

    # ---- zoo -------------------------------------------------------------------------
    @staticmethod
    def names() -> list[str]:
        """The zoo's names, e.g. ``['A100', 'A100_40GB', ...]``."""
        return list(_zoo())

    @staticmethod
    def get(name: str) -> "Hardware":
        """A zoo entry by name, case-insensitive: ``Hardware.get("a100")``."""
        if isinstance(name, Hardware):
            return name
        zoo = _zoo()
        key = _lookup().get(normalize_key(name))
        if key is None:
            raise unknown_name("hardware", name, zoo)
        return zoo[key]

    @staticmethod
    def all() -> list["Hardware"]:
        """Every zoo entry, in the zoo's order."""
        return list(_zoo().values())

    @property
    def short_name(self) -> str:
        """What a chart or message calls this chip: its zoo key ("A100"), or for a chip not in
        the zoo (measured, or made with ``Hardware(...)``) its name up to the first parenthesis.

        >>> from course_lib import Q_
        >>> Hardware("My GPU (prototype)", {"fp16": Q_(100, "TFLOP/s")}, Q_(1, "TB/s")).short_name
        'My GPU'
        >>> Hardware.A100.short_name
        'A100'
        """
        return self.key or self.name.split(" (")[0].strip() or self.name

    # ---- figures as Quantities ---------------------------------------------------------
    @property
    def precisions(self) -> tuple[str, ...]:
        """Precisions this chip has a dense peak for, in the course's order."""
        return tuple(p for p in PRECISIONS if p in self._peaks)

    def peak_flops_si(self, precision: str) -> float:
        """Dense peak in FLOP/s as a float; a precision the chip lacks raises PrecisionError."""
        p = normalize(precision)
        try:
            return self._peaks[p]
        except KeyError:
            raise PrecisionError(
                f"{self.name} has no {p} peak (no silent fallback to another precision). "
                f"It has: {', '.join(self.precisions)}."
            ) from None

    def peak_flops(self, precision: str):
        """Dense peak at `precision`: TFLOP/s for floating-point formats, TOPS (``TOP/s``,
        tera-operations per second) for integer ones. Both count 2 per multiply-accumulate."""
        unit = "TOP/s" if normalize(precision) in INTEGER_PRECISIONS else "TFLOP/s"
        return Q_(self.peak_flops_si(precision) / 1e12, unit)

    @property
    def memory_bandwidth(self):
        """Main-memory bandwidth (datasheet), in TB/s."""
        return Q_(self.memory_bandwidth_si / 1e12, "TB/s")

    @property
    def memory_capacity(self):
        """Main-memory capacity in GiB (2³⁰ bytes: memory is binary-sized), or None if unknown.
        ``.to("GB")`` gives decimal gigabytes: an A100 80GB holds 80 GiB = 85.9 GB."""
        c = self.memory_capacity_si
        return None if c is None else Q_(c / 2**30, "GiB")

    @property
    def interconnect_bandwidth(self):
        """Scale-up link bandwidth per direction in GB/s, or None."""
        b = self.interconnect_bandwidth_si
        return None if b is None else Q_(b / 1e9, "GB/s")

    @property
    def link_latency(self):
        """The assumed latency of one message over the scale-up link (alpha where no AllReduce time
        is measured, ``course_lib.topology``) in µs, or None."""
        t = self.link_latency_si
        return None if t is None else Q_(t * 1e6, "us")

    @property
    def tdp(self):
        return None if self.tdp_si is None else Q_(self.tdp_si, "W")

    def ridge_point_si(self, precision: str) -> float:
        return self.peak_flops_si(precision) / self.memory_bandwidth_si

    def ridge_point(self, precision: str):
        """Peak ÷ bandwidth: the intensity above which work is compute-bound (FLOP/byte;
        OP/byte for integer formats)."""
        unit = "OP/byte" if normalize(precision) in INTEGER_PRECISIONS else "FLOP/byte"
        return Q_(self.ridge_point_si(precision), unit)

    def describe(self) -> str:
        """The chip's figures with their sources, one per line."""
        lines = [f"{self.name}" + (f" ({self.year})" if self.year else "")]
        for p in self.precisions:
            unit = "TOPS   " if p in INTEGER_PRECISIONS else "TFLOP/s"
            lines.append(f"  peak {p:5s} {self._peaks[p] / 1e12:10.1f} {unit} (dense)")
        lines.append(f"  memory bandwidth {self.memory_bandwidth_si / 1e12:.3f} TB/s")
        if self.memory_capacity_si:
            lines.append(f"  memory capacity  {_capacity_text(self.memory_capacity_si)}")
        if self.interconnect_bandwidth_si:
            link = f"  interconnect     {self.interconnect_bandwidth_si / 1e9:.0f} GB/s per direction"
            if self.interconnect:
                link += f", {self.interconnect}"
            if self.interconnect_topology != "switch":
                link += f" ({self.interconnect_topology})"
            if self.interconnect_max_gpus and self.fallback_interconnect:
                link += (f"; beyond {self.interconnect_max_gpus} GPUs {self.fallback_interconnect}, "
                         f"{self.fallback_interconnect_bandwidth_si / 1e9:.0f} GB/s per direction")
            lines.append(link)
        for what, src in self.sources.items():
            lines.append(f"  source[{what}]: {src}")
        return "\n".join(lines)

    def __repr__(self):
        peaks = ", ".join(f"{p}={v / 1e12:g}T" for p, v in self._peaks.items())
        return (f"Hardware({self.name!r}, peaks[FLOP/s]: {peaks}, "
                f"bandwidth={self.memory_bandwidth_si / 1e12:g} TB/s"
                + (f", capacity={self.memory_capacity_si / 2**30:.4g} GiB)" if self.memory_capacity_si else ")"))


def _capacity_text(nbytes: float) -> str:
    """'80 GiB = 85.9 GB (81,920 MiB)': the binary size, decimal bytes and what nvidia-smi shows."""
    return f"{nbytes / 2**30:.4g} GiB = {nbytes / 1e9:.1f} GB ({nbytes / 2**20:,.0f} MiB)"


_ZOOS: dict = {}       # one zoo per set of assumptions (the course's, or a perturbation's)
_LOOKUP: dict[str, str] | None = None


def _zoo() -> dict[str, Hardware]:
    """The zoo under the assumptions in force (course_lib.sensitivity.perturb changes them)."""
    global _LOOKUP
    a = sensitivity.current()
    zoo = _ZOOS.get(a)
    if zoo is None:
        from .hardware_specs import SPECS

        zoo = _ZOOS[a] = {k: Hardware._from_spec(k, s, a) for k, s in SPECS.items()}
        if _LOOKUP is None:
            _LOOKUP = {}
            for k, s in SPECS.items():
                for alias in (k, *s.get("aliases", ())):
                    _LOOKUP[normalize_key(alias)] = k
    return zoo


def _lookup() -> dict[str, str]:
    _zoo()
    return _LOOKUP
