"""One tensor-parallel AllReduce as alpha-beta by topology: a per-message latency plus bytes
over the share of a chip's scale-up links the AllReduce can use.

**beta, the bandwidth term.** A datasheet's interconnect figure sums every link of the chip.
Whether one AllReduce over a group of N GPUs can use them all depends on the wiring:

* **switch** (NVSwitch in an HGX/DGX server): every link goes to the switch, so any group
  talks at the full per-GPU bandwidth. Where the switch also sums the data itself
  (``interconnect_reduction``: NVLink SHARP on HGX H100/H200/B200, NCCL's default there), each
  GPU sends its buffer once and receives the sum once: ``bytes / BW`` instead of a ring's
  ``2(N-1)/N · bytes / BW``, in 2 hops instead of 2(N-1) (``in_switch_reduction``).
* **bridge** (the H100 PCIe's NVLink bridge): a pair is joined by all of its bridge's links;
  beyond ``interconnect_max_gpus`` GPUs the group also crosses the fallback link (PCIe), the
  slowest hop, which sets the pace.
* **mesh** (AMD MI300X: 7 xGMI links, one to each of the other 7 GPUs): a pair shares one
  link; a group of N GPUs sends over N-1 links at once (one ring per link), each at the
  usable rate AMD gives (48 of the 64 GB/s) where the spec has one.
* **torus** (TPU v5e: 4 ICI ports, +x, -x, +y, -y): a TP group is a 2D slice (4 chips 2x2,
  8 chips 2x4) without wraparound, so its corner chips have two neighbours and a ring through
  the slice sends on two ports; a pair of neighbours shares one.

**alpha, the latency term.** Every AllReduce pays the larger of two latencies:

* a **measured floor** (``allreduce_latency``, :func:`latency_floor`) where a cited nccl-tests
  sweep timed small AllReduces on the system: 27.5 us on HGX H100/H200 (8 H200 SXM, Azure ND
  H200 v5, NCCL 2.20.5: 1 KiB to 512 KiB all take 30-31 us). nccl-tests times whatever
  AllReduce NCCL runs at each size; Azure labels the sweep "NVLS algorithm", but NCCL's tuner
  picks the algorithm and protocol per message size, and at a few KiB it runs a ring or tree
  with the LL protocol rather than NVLS, whose fixed cost is the larger. So the small-message
  time is a floor for an AllReduce on that NVSwitch system whichever algorithm runs it, a ring
  as much as the switch's own reduction, and the model charges it to both. (The source does
  not print its NCCL settings; had the run forced NVLS at every size, a ring could be faster at
  the smallest messages than this floor.) The sweep is of 8 GPUs; smaller groups on the same
  board take the same floor.
* the **hops**: 2(N-1) (a ring) or 2 (summed in the switch) of the per-hop ``link_latency``,
  an order-of-magnitude **assumption** (~1 us, no vendor publishes one) that its source names.
  It is all of alpha where no sweep is cited (A100, H100 PCIe, B200, MI300X, TPU v5e) and
  counts on a system with a floor only where it is larger.

>>> from course_lib import Hardware
>>> [round(ring_link(Hardware.MI300X, n)[1] / 1e9) for n in (2, 4, 8)]      # GB/s per direction
[48, 144, 336]
>>> round(ring_link(Hardware.TPUv5e, 4)[1] / 1e9), round(ring_link(Hardware.H100, 2)[1] / 1e9)
(100, 450)
>>> in_switch_reduction(Hardware.H100, 8), in_switch_reduction(Hardware.A100, 8)
(True, False)
>>> [round(alpha(Hardware.H100, 8, in_switch=s) * 1e6, 1) for s in (True, False)]   # us: the floor
[27.5, 27.5]
>>> round(alpha(Hardware.A100, 8) * 1e6, 1)                     # us: 14 hops x 1 us, assumed
14.0
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


def allreduce_seconds(nbytes, n, link_bandwidth, link_latency, in_switch=False, message_latency=None):
    """One AllReduce of `nbytes` over `n` GPUs. A ring: 2(n−1)/n · bytes / BW + 2(n−1) ·
    latency; summed in the switch (`in_switch`): bytes / BW + 2 · latency. A measured
    `message_latency` (seconds per AllReduce, :func:`latency_floor`) is a floor under the hops'
    latency: alpha = max(message_latency, hops · link_latency).

    >>> allreduce_seconds(1e9, 8, 1e11, 0.0), allreduce_seconds(1e9, 8, 1e11, 0.0, in_switch=True)
    (0.0175, 0.01)
    >>> allreduce_seconds(16384, 8, 4.5e11, 1e-6, in_switch=True, message_latency=27.5e-6) * 1e6
    27.5364...
    >>> allreduce_seconds(16384, 8, 4.5e11, 1e-6, message_latency=27.5e-6) * 1e6      # a ring: 27.5 > 14 x 1
    27.5637...
    """
    if n == 1:
        return 0.0 * nbytes
    beta = nbytes / link_bandwidth if in_switch else 2 * (n - 1) / n * nbytes / link_bandwidth
    hops = (2 if in_switch else 2 * (n - 1)) * link_latency
    return beta + (hops if message_latency is None else max(message_latency, hops))


def latency_floor(hardware, tp: int):
    """The measured seconds any AllReduce over `tp` GPUs of `hardware` costs however small
    (``allreduce_latency``: nccl-tests' small messages on HGX H100/H200), a ring's as much as
    one summed in the switch; None where no sweep is cited and alpha is the assumed hops alone.

    >>> from course_lib import Hardware
    >>> latency_floor(Hardware.H100, 8), latency_floor(Hardware.A100, 8)
    (2.75e-05, None)
    """
    measured = getattr(hardware, "allreduce_latency_si", None)
    limit = hardware.interconnect_max_gpus
    return measured if tp > 1 and measured is not None and (limit is None or tp <= limit) else None


#: the name serving.py imports
message_latency = latency_floor


def _in_switch(hardware, tp, in_switch):
    if in_switch is None:
        return in_switch_reduction(hardware, tp)
    if in_switch and not in_switch_reduction(hardware, tp):
        raise CourseError(f"{hardware.name}: {tp} GPUs cannot sum in the switch (no NVLink SHARP here).")
    return bool(in_switch)


def alpha(hardware, tp: int, in_switch=None) -> float:
    """The latency term of one AllReduce over `tp` GPUs of `hardware`, in seconds: the larger of
    the measured floor (:func:`latency_floor`) and the assumed hops. `in_switch` None: what the
    chip runs (summed in the switch where it can); False: a ring."""
    return allreduce_time(hardware, 0.0, tp, in_switch=in_switch)


def alpha_words(hardware, tp: int, in_switch=None, link_latency=None) -> str:
    """Where alpha comes from, in words, for a result's notes: measured (and from what) or assumed.

    >>> from course_lib import Hardware
    >>> alpha_words(Hardware.A100, 8)
    'AllReduce latency 14.0 us = 14 hops x 1 us (assumed per-hop latency, no measurement cited)'
    """
    if tp == 1:
        return ""
    switch = _in_switch(hardware, tp, in_switch)
    n_hops = 2 if switch else 2 * (tp - 1)
    if link_latency is not None:
        hop = float(link_latency)
        return f"AllReduce latency {n_hops * hop * 1e6:.1f} us = {n_hops} hops x {hop * 1e6:g} us (given)"
    hop = hardware.link_latency_si or 0.0
    hops = f"{n_hops} hops x {hop * 1e6:g} us"
    floor = latency_floor(hardware, tp)
    if floor is None:
        return (f"AllReduce latency {n_hops * hop * 1e6:.1f} us = {hops} "
                "(assumed per-hop latency, no measurement cited)")
    if floor >= n_hops * hop:
        return (f"AllReduce latency {floor * 1e6:.1f} us (measured floor, nccl-tests small messages; "
                f"above the assumed {hops})")
    return (f"AllReduce latency {n_hops * hop * 1e6:.1f} us = {hops} (assumed; above the measured "
            f"{floor * 1e6:.1f} us floor)")


def allreduce_time(hardware, nbytes, tp: int, link_latency=None, in_switch=None) -> float:
    """Seconds of one AllReduce of `nbytes` (per GPU) over `tp` GPUs of `hardware`, as ``serve``
    models it: alpha, the larger of the measured floor and the hops x per-hop latency (or
    `link_latency` per hop alone, where given), plus bytes over the share of the links its
    topology allows (``ring_link``), summed in the switch where the chip can (`in_switch` None)
    or as a ring (`in_switch=False`). A bound: no AllReduce is faster.

    >>> from course_lib import Hardware
    >>> round(allreduce_time(Hardware.A100, 2**30, 8, link_latency=0) * 1e3, 2)   # ms: a ring, 1.75 x 1 GiB / 300 GB/s
    6.26
    >>> round(allreduce_time(Hardware.H100, 16384, 8) * 1e6, 1)     # us: 27.5 us measured + 16 KiB / 450 GB/s
    27.5
    >>> round(allreduce_time(Hardware.H100, 16384, 8, in_switch=False) * 1e6, 1)   # a ring pays the same floor
    27.6
    """
    if tp == 1:
        return 0.0
    switch = _in_switch(hardware, tp, in_switch)
    if link_latency is None:
        hop, measured = (hardware.link_latency_si or 0.0), latency_floor(hardware, tp)
    else:
        hop, measured = float(link_latency), None
    return allreduce_seconds(nbytes, tp, ring_link(hardware, tp)[1], hop, switch, measured)


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
