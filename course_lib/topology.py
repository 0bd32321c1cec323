"""How much of a chip's scale-up bandwidth one tensor-parallel AllReduce can use.

A datasheet's interconnect figure sums every link of the chip. Whether one AllReduce over a
group of N GPUs can use them all depends on how the links are wired:

* **switch** (NVSwitch in an HGX/DGX server): every link goes to the switch, so any group
  talks at the full per-GPU bandwidth.
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
    return f"{name} ({what})", total
