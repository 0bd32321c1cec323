"""One tensor-parallel AllReduce as alpha-beta by topology: a per-message latency plus bytes
over the share of a chip's scale-up links the AllReduce can use.

**beta, the bandwidth term.** A datasheet's interconnect figure sums every link of the chip.
Whether one AllReduce over a group of N GPUs can use them all depends on the wiring:

* **switch** (NVSwitch in an HGX/DGX server): every link goes to the switch, so any group
  talks at the full per-GPU bandwidth. Where the switch also sums the data itself
  (``interconnect_reduction``: NVLink SHARP on HGX H100/H200/B200, NCCL's default there), each
  GPU sends its buffer once and receives the sum once: ``bytes / BW`` instead of a ring's
  ``2(N-1)/N · bytes / BW`` (``in_switch_reduction``).
* **bridge** (the H100 PCIe's NVLink bridge): a pair is joined by all of its bridge's links;
  beyond ``interconnect_max_gpus`` GPUs the group also crosses the fallback link (PCIe), the
  slowest hop, which sets the pace.
* **mesh** (AMD MI300X: 7 xGMI links, one to each of the other 7 GPUs): a pair shares one
  link; a group of N GPUs sends over N-1 links at once (one ring per link), each at the
  usable rate AMD gives (48 of the 64 GB/s) where the spec has one.
* **torus** (TPU v5e: 4 ICI ports, +x, -x, +y, -y): a TP group is a 2D slice (4 chips 2x2,
  8 chips 2x4) without wraparound, so its corner chips have two neighbours and a ring through
  the slice sends on two ports; a pair of neighbours shares one.

**alpha, the latency term: one per message, one rule for every chip.** Each AllReduce (and each
pipeline send, ``course_lib.scaling``) pays one latency however small its message, a ring's as
much as the switch's: launch, protocol and synchronisation, not a count of hops.

* **The bound** (``allreduce=None``, the default): alpha is the fastest small-message AllReduce
  published for the system (``allreduce_latency``: 3.6 us on HGX H100/H200, SGLang's custom
  AllReduce, less its bytes' time), or, where none is published, the course's one assumption
  for every other chip (``link_latency``: the same 3.6 us, the fastest measured on any chip).
  ``serve`` lets the AllReduces overlap compute and memory in the bound (max of the three
  roofs), so no implementation can be faster: nothing published is.
* **An estimate** (``allreduce="nccl"``, ``"sglang"`` or ``"vllm"``): alpha is that
  implementation's measured small-message time for the group (``allreduce_estimates``: NCCL
  2.20.5 on 8 H200s, 27.5 us; SGLang's custom AllReduce 3.7 / 4.8 / 5.9 us and vLLM's
  9.5 / 9.1 / 10.1 us on 2 / 4 / 8 H100s), a group without its own figure taking the next larger
  group's; ``serve`` adds the AllReduces after compute and memory (no overlap, as decode runs
  them: each layer waits for its sum). Labelled an estimate wherever it is printed.

>>> from course_lib import Hardware
>>> [round(ring_link(Hardware.MI300X, n)[1] / 1e9) for n in (2, 4, 8)]      # GB/s per direction
[48, 144, 336]
>>> round(ring_link(Hardware.TPUv5e, 4)[1] / 1e9), round(ring_link(Hardware.H100, 2)[1] / 1e9)
(100, 450)
>>> in_switch_reduction(Hardware.H100, 8), in_switch_reduction(Hardware.A100, 8)
(True, False)
>>> [round(alpha(Hardware.H100, 8, in_switch=s) * 1e6, 1) for s in (True, False)]   # us: the bound's
[3.6, 3.6]
>>> round(alpha(Hardware.A100, 8) * 1e6, 1), round(alpha(Hardware.H100, 8, allreduce="nccl") * 1e6, 1)
(3.6, 27.5)
"""
from __future__ import annotations

from .errors import CourseError

TOPOLOGIES = ("switch", "bridge", "mesh", "torus")
RING_PORTS = 2           # a ring through a 2D slice without wraparound sends on two ports
#: TPU v5e slice shapes by chip count (Google Cloud TPU docs, 'TPU v5e': v5litepod-N)
TORUS_SLICES = {2: (1, 2), 4: (2, 2), 8: (2, 4), 16: (4, 4), 32: (4, 8), 64: (8, 8),
                128: (8, 16), 256: (16, 16)}


def ring_link(hardware, tp: int) -> tuple[str, float]:
    """(what the AllReduce of `tp` GPUs runs on, in words; bandwidth per direction in B/s)."""
    if tp == 1:
        return "", float("inf")
    total = hardware.interconnect_bandwidth_si
    if not total and getattr(hardware, "fallback_interconnect_bandwidth_si", None):
        # a PCIe-only card: the ring runs over PCIe (vLLM and SGLang allow tensor parallelism there)
        return (f"{hardware.fallback_interconnect} (no scale-up link: PCIe only)",
                hardware.fallback_interconnect_bandwidth_si)
    if not total:
        raise CourseError(f"{hardware.name} has no scale-up interconnect in the zoo; tensor "
                          "parallelism needs one (tp must be 1 here).")
    name = hardware.interconnect or "scale-up link"
    topology = getattr(hardware, "interconnect_topology", "switch")
    if topology not in TOPOLOGIES:
        raise CourseError(f"{hardware.name}: interconnect topology {topology!r} is not one of {TOPOLOGIES}.")
    limit = hardware.interconnect_max_gpus
    if limit is not None and tp > limit:
        if not hardware.fallback_interconnect_bandwidth_si:
            raise CourseError(f"{hardware.name}'s {name} joins {limit} GPUs and the zoo knows no "
                              f"other link: tp must be at most {limit}.")
        # the ring crosses the slower link: it sets the pace
        return (f"{hardware.fallback_interconnect} (the {name} joins only {limit} GPUs)",
                hardware.fallback_interconnect_bandwidth_si)
    links = hardware.interconnect_links
    if topology == "mesh":
        used = min(tp - 1, links)
        usable = getattr(hardware, "interconnect_link_usable_bandwidth_si", None)
        per_link = usable or total / links
        said = f", {per_link / 1e9:.0f} GB/s usable each" if usable else ""
        return (f"{name}: point-to-point mesh, {used} of {links} links to the other {tp - 1} GPU(s){said}",
                per_link * used)
    if topology == "torus":
        if tp not in TORUS_SLICES:
            raise CourseError(f"{hardware.name}: a tensor-parallel group is a slice of "
                              f"{sorted(TORUS_SLICES)} chips; got {tp}.")
        x, y = TORUS_SLICES[tp]
        ports = 1 if tp == 2 else RING_PORTS
        return (f"{name}: a ring through a {x}x{y} slice (no wraparound), {ports} of {links} ports",
                total * ports / links)
    what = "NVSwitch, all links" if topology == "switch" else "the pair's bridge"
    if in_switch_reduction(hardware, tp):
        what += "; summed in the switch (NVLink SHARP)"
    return f"{name} ({what})", total


def in_switch_reduction(hardware, tp: int) -> bool:
    """Whether an AllReduce over `tp` GPUs is summed in the switch (``interconnect_reduction``),
    so each GPU sends and receives its buffer once instead of running a ring."""
    limit = hardware.interconnect_max_gpus
    return (tp > 1 and getattr(hardware, "interconnect_reduction", False)
            and getattr(hardware, "interconnect_topology", "switch") == "switch"
            and (limit is None or tp <= limit))


#: the implementations whose measured small-message AllReduce time an estimate may name
IMPLEMENTATIONS = {"nccl": "NCCL 2.20.5 (nccl-tests)", "sglang": "SGLang's custom AllReduce",
                   "vllm": "vLLM's custom AllReduce"}


def allreduce_seconds(nbytes, n, link_bandwidth, latency, in_switch=False):
    """One AllReduce of `nbytes` over `n` GPUs: one `latency` (alpha, per message) plus a ring's
    2(n−1)/n · bytes / BW, or bytes / BW summed in the switch (`in_switch`).

    >>> allreduce_seconds(1e9, 8, 1e11, 0.0), allreduce_seconds(1e9, 8, 1e11, 0.0, in_switch=True)
    (0.0175, 0.01)
    >>> round(allreduce_seconds(16384, 8, 4.5e11, 3.6e-6, in_switch=True) * 1e6, 4)
    3.6364
    """
    if n == 1:
        return 0.0 * nbytes
    beta = nbytes / link_bandwidth if in_switch else 2 * (n - 1) / n * nbytes / link_bandwidth
    return beta + latency


def _check_implementation(allreduce):
    if allreduce is not None and allreduce not in IMPLEMENTATIONS:
        raise CourseError(f"allreduce must be None (the bound) or one of {sorted(IMPLEMENTATIONS)}; "
                          f"got {allreduce!r}.")


def message_latency(hardware, tp: int, allreduce=None) -> float:
    """The latency (alpha) of one AllReduce over `tp` GPUs of `hardware`, in seconds: the bound's
    (`allreduce` None: the fastest published for the system, else the assumed figure every other
    chip shares) or a named implementation's measured time (an estimate).

    >>> from course_lib import Hardware
    >>> [round(message_latency(Hardware.H100, n, "sglang") * 1e6, 1) for n in (2, 4, 8)]
    [3.7, 4.8, 5.9]
    >>> round(message_latency(Hardware.H200, 4, "nccl") * 1e6, 1)      # the 8-GPU sweep's figure
    27.5
    """
    _check_implementation(allreduce)
    if tp == 1:
        return 0.0
    if allreduce is None:
        from .hardware_specs import ASSUMED_MESSAGE_LATENCY

        measured = getattr(hardware, "allreduce_latency_si", None)
        if measured is not None:
            return measured
        return hardware.link_latency_si if hardware.link_latency_si is not None else ASSUMED_MESSAGE_LATENCY
    table = getattr(hardware, "allreduce_estimates", {}).get(allreduce)
    groups = sorted(n for n in (table or {}) if n >= tp)
    if not groups:
        raise CourseError(f"no measured {IMPLEMENTATIONS[allreduce]} time over {tp} GPUs of "
                          f"{hardware.name} is cited; use the bound (allreduce=None).")
    return table[groups[0]]


def measured_latency(hardware) -> bool:
    """Whether the bound's alpha on `hardware` is measured (True) or the shared assumption."""
    return getattr(hardware, "allreduce_latency_si", None) is not None


def _in_switch(hardware, tp, in_switch):
    if in_switch is None:
        return in_switch_reduction(hardware, tp)
    if in_switch and not in_switch_reduction(hardware, tp):
        raise CourseError(f"{hardware.name}: {tp} GPUs cannot sum in the switch (no NVLink SHARP here).")
    return bool(in_switch)


def alpha(hardware, tp: int, in_switch=None, allreduce=None) -> float:
    """The latency term of one AllReduce over `tp` GPUs of `hardware`, in seconds (one per message,
    a ring's as much as the switch's): :func:`message_latency`. `in_switch` None: what the chip runs
    (summed in the switch where it can); False: a ring."""
    return allreduce_time(hardware, 0.0, tp, in_switch=in_switch, allreduce=allreduce)


def alpha_words(hardware, tp: int, in_switch=None, link_latency=None, allreduce=None) -> str:
    """Where alpha comes from, in words, for a result's notes: the bound's (measured or assumed)
    or an estimate's (a named implementation's measured time).

    >>> from course_lib import Hardware
    >>> alpha_words(Hardware.A100, 8)
    'bound: AllReduce latency 3.6 us per message (assumed: no measurement for this chip; the fastest published for any chip)'
    """
    if tp == 1:
        return ""
    _in_switch(hardware, tp, in_switch)
    _check_implementation(allreduce)
    kind = "bound" if allreduce is None else f"estimate ({IMPLEMENTATIONS[allreduce]})"
    if link_latency is not None:
        return f"{kind}: AllReduce latency {float(link_latency) * 1e6:g} us per message (given)"
    a = message_latency(hardware, tp, allreduce)
    if allreduce is not None:
        return f"{kind}: AllReduce latency {a * 1e6:.1f} us per message (measured, {tp} GPUs or the next group measured)"
    if measured_latency(hardware):
        return f"{kind}: AllReduce latency {a * 1e6:.1f} us per message (the fastest published for this system)"
    return (f"{kind}: AllReduce latency {a * 1e6:.1f} us per message (assumed: no measurement for this chip; "
            "the fastest published for any chip)")


def allreduce_time(hardware, nbytes, tp: int, link_latency=None, in_switch=None, allreduce=None) -> float:
    """Seconds of one AllReduce of `nbytes` (per GPU) over `tp` GPUs of `hardware`, as ``serve``
    models it: one latency (:func:`message_latency`: the bound's, or the named implementation's
    with `allreduce`; `link_latency` where given) plus bytes over the share of the links its
    topology allows (``ring_link``), summed in the switch where the chip can (`in_switch` None)
    or as a ring (`in_switch=False`). With `allreduce` None a bound: nothing published is faster.

    >>> from course_lib import Hardware
    >>> round(allreduce_time(Hardware.A100, 2**30, 8, link_latency=0) * 1e3, 2)   # ms: a ring, 1.75 x 1 GiB / 300 GB/s
    6.26
    >>> round(allreduce_time(Hardware.H100, 16384, 8) * 1e6, 2)     # us: 3.6 us + 16 KiB / 450 GB/s
    3.64
    >>> round(allreduce_time(Hardware.H100, 16384, 8, allreduce="nccl") * 1e6, 2)   # NCCL's estimate
    27.54
    """
    if tp == 1:
        return 0.0
    switch = _in_switch(hardware, tp, in_switch)
    latency = float(link_latency) if link_latency is not None else message_latency(hardware, tp, allreduce)
    return allreduce_seconds(nbytes, tp, ring_link(hardware, tp)[1], latency, switch)


def seed_network_seconds(model, hardware, tp: int, tokens: int, bytes_per_element: float = 2.0) -> float:
    """The seeds' network roof for one pass over `tokens` (B·S tokens) on `tp` GPUs:
    T_network = 4 (N-1) · tokens · D · S_type · L / NetBW, with NetBW the datasheet's per-direction
    link figure and no latency: every hop carries the whole activation, four times a layer.

    >>> from course_lib import Hardware, Models
    >>> round(seed_network_seconds(Models.Llama3_70B, Hardware.H100, 8, 1) * 1e6, 1)   # us, one decode token
    81.6
    """
    c = model.config
    return 4 * (tp - 1) * tokens * c.d_model * bytes_per_element * c.n_layers / hardware.interconnect_bandwidth_si
