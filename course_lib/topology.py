"""How much of a chip's scale-up bandwidth one tensor-parallel AllReduce can use.

A datasheet's interconnect figure sums every link of the chip. Whether one AllReduce over a
group of N GPUs can use them all depends on how the links are wired:

* **switch** (NVSwitch in an HGX/DGX server): every link goes to the switch, so any group
  talks at the full per-GPU bandwidth. Where the switch also sums the data itself
  (``interconnect_reduction``: NVLink SHARP on HGX H100/H200/B200, NCCL's default there), each
  GPU sends its buffer once and receives the sum once: ``bytes / BW`` instead of a ring's
  ``2(N-1)/N · bytes / BW``, in 2 hops instead of 2(N-1) (``in_switch_reduction``).
* **bridge** (the H100 PCIe's NVLink bridge): a pair is joined by all of its bridge's links;
  beyond ``interconnect_max_gpus`` GPUs the group also crosses the fallback link (PCIe), the
  slowest hop, which sets the pace.
* **mesh** (AMD MI300X: 7 xGMI links, one to each of the other 7 GPUs): a pair shares one
  link; a group of N GPUs can send over N-1 links at once (one ring per link).
* **torus** (TPU v5e: 4 ICI ports, +x, -x, +y, -y): a ring along one dimension sends on two
  of them.

>>> from course_lib import Hardware
>>> [round(ring_link(Hardware.MI300X, n)[1] / 1e9) for n in (2, 4, 8)]      # GB/s per direction
[64, 192, 448]
>>> round(ring_link(Hardware.TPUv5e, 4)[1] / 1e9), round(ring_link(Hardware.H100, 2)[1] / 1e9)
(100, 450)
>>> in_switch_reduction(Hardware.H100, 8), in_switch_reduction(Hardware.A100, 8)
(True, False)
"""
from __future__ import annotations

from .errors import CourseError

TOPOLOGIES = ("switch", "bridge", "mesh", "torus")
RING_PORTS = 2           # a ring along one torus dimension sends on two ports (+ and -)


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
        return (f"{name}: point-to-point mesh, {used} of {links} links to the other {tp - 1} GPU(s)",
                total * used / links)
    if topology == "torus":
        return f"{name}: a ring along one torus dimension, {RING_PORTS} of {links} ports", total * RING_PORTS / links
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


def allreduce_seconds(nbytes, n, link_bandwidth, link_latency, in_switch=False):
    """One AllReduce of `nbytes` over `n` GPUs. A ring: 2(n−1)/n · bytes / BW + 2(n−1) ·
    latency; summed in the switch (`in_switch`): each GPU sends its bytes to the switch and
    receives the sum, bytes / BW + 2 · latency.

    >>> allreduce_seconds(1e9, 8, 1e11, 0.0), allreduce_seconds(1e9, 8, 1e11, 0.0, in_switch=True)
    (0.0175, 0.01)
    """
    if n == 1:
        return 0.0 * nbytes
    if in_switch:
        return nbytes / link_bandwidth + 2 * link_latency
    return 2 * (n - 1) / n * nbytes / link_bandwidth + 2 * (n - 1) * link_latency


def allreduce_time(hardware, nbytes, tp: int, link_latency=None) -> float:
    """Seconds of one AllReduce of `nbytes` (per GPU) over `tp` GPUs of `hardware`, as ``serve``
    models it: on the share of the links its topology allows (``ring_link``), as a ring or
    summed in the switch (``in_switch_reduction``), with the chip's per-hop latency unless
    `link_latency` (seconds) is given. A bound: no AllReduce on that hardware is faster.

    >>> from course_lib import Hardware
    >>> round(allreduce_time(Hardware.A100, 2**30, 8, link_latency=0) * 1e3, 2)   # ms: a ring, 1.75 x 1 GiB / 300 GB/s
    6.26
    """
    if tp == 1:
        return 0.0
    latency = (hardware.link_latency_si or 0.0) if link_latency is None else float(link_latency)
    return allreduce_seconds(nbytes, tp, ring_link(hardware, tp)[1], latency, in_switch_reduction(hardware, tp))
