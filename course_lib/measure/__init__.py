"""Lesson 5, "Your machine": the empirical roofline of the computer running this code.

``this_machine()`` measures, in a few seconds and with numpy only, the peak FLOP/s of this CPU
(fp64 and fp32, numpy's BLAS), the bandwidth of each level of its memory hierarchy (a sweep of
working-set sizes shows the L1/L2/L3/DRAM plateaus), and times kernels of known intensity. It
returns a ``Hardware`` -- ``solve``, ``plot_roofline`` and the explorers take it like a zoo
chip -- whose figures carry, as their sources, how they were measured.

>>> from course_lib.measure import this_machine
>>> mine = this_machine(quick=True)                    # a few seconds
>>> mine.memory_bandwidth_si > 1e9 and mine.peak_flops_si("fp64") > 1e9
True
>>> from course_lib import solve
>>> from course_lib.models import dot
>>> solve(dot(2**23), mine, precision="fp64").bottleneck
'memory-bound'

The measurement is cached per process: call again with ``refresh=True`` to measure anew.
Inside a ``course_lib.sensitivity.perturb`` block, ``this_machine()`` scales the measured peaks
and bandwidths by the block's compute and memory efficiencies, as the zoo's chips are scaled,
and says so in its name (what-ifs such as "a run 15% slower"; the other changes need nothing
here: ``solve`` scales activation bytes itself, and a measured capacity is an exact byte count,
neither binary nor decimal).
``python -m course_lib.measure`` prints a full report (``--gpu`` measures a CUDA GPU with
PyTorch instead, when one is there).
"""
from __future__ import annotations

from .kernels import numpy_axpy
from .result import KernelRun, MeasuredHardware, SweepPoint
from .system import LEVELS, cache_level_of, cache_sizes

__all__ = ["this_machine", "this_gpu", "MeasuredHardware", "KernelRun", "SweepPoint", "LEVELS",
           "cache_level_of", "cache_sizes", "numpy_axpy", "plot_hierarchical_roofline", "plot_sweep"]

_CACHE: dict = {}
_SCALED: dict = {}      # (key, assumptions) -> the measurement scaled by a perturb block


def this_machine(quick=None, refresh: bool = False, threads=None, progress=None) -> MeasuredHardware:
    """The empirical roofline of this machine's CPU, as a ``MeasuredHardware``.

    quick    -- a shorter measurement (fewer sizes and repeats). Default: quick when nbgrader
                runs the notebook ($NBGRADER_EXECUTION) or $COURSE_LIB_MEASURE=quick, else full.
    refresh  -- measure again instead of returning this process's earlier measurement
    threads  -- threads for BLAS and the bandwidth sweep (default: ``system.THREAD_RULE``, the
                BLAS's own count capped by the usable CPUs and a container's CPU quota; never
                changed by the load, and printed in the report)
    progress -- a callable given one line per step (e.g. ``print``), or None

    >>> mine = this_machine(quick=True)
    >>> this_machine(quick=True) is mine                   # cached
    True
    >>> [lv for lv in mine.levels]
    ['L1', 'L2', 'L3', 'DRAM']
    """
    from .cpu import measure_cpu, want_quick

    key = (want_quick(quick), threads)
    if refresh or key not in _CACHE:
        _CACHE[key] = measure_cpu(quick=key[0], threads=threads, progress=progress)
        _SCALED.clear()
    return _as_assumed(key, _CACHE[key])


def _as_assumed(key, measured: MeasuredHardware) -> MeasuredHardware:
    """The measurement under the efficiencies of course_lib.sensitivity.perturb in force (itself
    outside any block): the same copy for the same block, its name saying what was changed."""
    from .. import sensitivity

    a = sensitivity.current()
    if a.compute_efficiency == 1 and a.memory_efficiency == 1:
        return measured
    if (key, a) not in _SCALED:
        changed = [f"{name}={v:g}" for name, v in (("compute_efficiency", a.compute_efficiency),
                                                    ("memory_efficiency", a.memory_efficiency)) if v != 1]
        _SCALED[(key, a)] = measured.scaled(a.compute_efficiency, a.memory_efficiency,
                                            tag="perturbed: " + ", ".join(changed))
    return _SCALED[(key, a)]


def this_gpu(device: int = 0, quick: bool = False, progress=None) -> MeasuredHardware:
    """The same measurement for a CUDA GPU through PyTorch (raises RuntimeError saying why when
    PyTorch or a CUDA device is missing; nothing else in the course needs either).

    >>> from course_lib.measure.gpu import gpu_available
    >>> isinstance(gpu_available()[0], bool)
    True
    """
    from .gpu import measure_gpu

    return measure_gpu(device=device, quick=quick, progress=progress)


def __getattr__(name):
    # matplotlib loads only when a picture is asked for
    if name in ("plot_hierarchical_roofline", "plot_sweep"):
        from . import plots

        return getattr(plots, name)
    raise AttributeError(f"module 'course_lib.measure' has no attribute {name!r}")
