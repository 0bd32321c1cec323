"""course_lib.measure: the empirical roofline of the machine running the tests (lesson 5).

Two kinds of tests:
* the pieces, on made-up inputs (plateau finding, cache levels, byte counts, the kernels'
  arithmetic, the result object, the optional GPU path without a GPU): exact and fast;
* real measurements on this machine (quick mode, a few seconds each): physically plausible
  figures, ordered memory levels, and the classifications notebook 05 grades, stable over three
  runs and under the grader's conditions (one thread, no /sys, a 4 GB address-space limit).
Speed is reported by benchmarks/measure_bench.py, not asserted here.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from course_lib import Hardware, solve
from course_lib.formatting import fmt_binary_bytes
from course_lib.measure import LEVELS, MeasuredHardware, cache_level_of, numpy_axpy, this_machine
from course_lib.measure import kernels as K
from course_lib.measure import system
from course_lib.measure import cpu
from course_lib.measure.cpu import DRAM_POINTS, make_plan, sweep_sizes, want_quick
from course_lib.measure.plateaus import find_levels, zones
from course_lib.measure.result import example
from course_lib.measure.system import Cache, CacheInfo, GiB, KiB, MiB
from course_lib.measure.timing import Timing, time_stable
from course_lib.models import axpy, dot, matmul

CACHES = CacheInfo((Cache("L1", 32 * KiB, 1), Cache("L2", MiB, 1), Cache("L3", 32 * MiB, 8)), "test")
SIZES = 2.0 ** np.arange(13, 29, 0.5)                     # 8 KiB .. 256 MiB per thread


def staircase(sizes, l1=200e9, l2=100e9, l3=50e9, dram=20e9):
    """Bandwidth of a clean four-level machine with CACHES' sizes (ramps at the cache sizes)."""
    return np.select([sizes <= 32 * KiB, sizes <= MiB, sizes <= 32 * MiB], [l1, l2, l3], dram)


# ---- plateaus --------------------------------------------------------------------------------
def test_a_clean_staircase_gives_four_ordered_levels():
    levels, notes = find_levels(SIZES, staircase(SIZES), CACHES, threads=1)
    got = {lv.name: lv for lv in levels}
    assert [lv.name for lv in levels] == list(LEVELS)
    assert all(lv.resolved for lv in levels), [lv.describe() for lv in levels]
    assert [round(got[n].bandwidth / 1e9) for n in LEVELS] == [200, 100, 50, 20]
    # the points used keep clear of the ramps: L2 from 2x L1 to 3/4 of L2, DRAM from 4x L3
    assert got["L2"].low >= 64 * KiB and got["L2"].high <= 0.75 * MiB
    assert got["DRAM"].low >= 128 * MiB


def test_one_outlier_does_not_hide_a_plateau_but_a_slope_is_not_one():
    bw = staircase(SIZES)
    bw[np.argmin(abs(SIZES - 4 * MiB))] *= 3          # one lucky repeat inside L3's zone
    levels, _ = find_levels(SIZES, bw, CACHES, threads=1)
    assert {lv.name: lv for lv in levels}["L3"].resolved
    sloped = staircase(SIZES)
    zone = (SIZES >= 2 * MiB) & (SIZES <= 24 * MiB)
    sloped[zone] = np.geomspace(100e9, 25e9, zone.sum())   # no plateau: falls 4x across the zone
    levels, _ = find_levels(SIZES, sloped, CACHES, threads=1)
    l3 = {lv.name: lv for lv in levels}["L3"]
    assert not l3.resolved and "no plateau" in l3.note


def test_an_l3_smaller_than_the_os_reports_is_read_before_its_step():
    """A 16-vCPU VM whose OS reports 300 MiB of L3 (the lent device's layout) but whose streams
    slow down past ~100 MiB in all: the L3 zone (2x L2 .. 3/4 of the L3 share, per thread)
    holds two speeds. The level is the fast run before the step, not the median of both (which
    flipped between them from run to run), and it says where the step is. One slow point at
    the zone's end, or one slow point inside it, is not a step."""
    caches = CacheInfo((Cache("L1", 48 * KiB, 1), Cache("L2", 2 * MiB, 1), Cache("L3", 300 * MiB, 16)), "test")
    lo, hi = zones(caches, 16)["L3"]
    sizes = lo * 2.0 ** (np.arange(-9, 18) / 3)                 # 3 per octave, as in full mode
    bw = np.select([sizes <= 48 * KiB, sizes <= 2 * MiB, sizes * 16 <= 100 * MiB], [1100e9, 700e9, 330e9], 240e9)
    bw[sizes * 16 > 1.2 * GiB] = 140e9
    levels, notes = find_levels(sizes, bw, caches, 16)
    l3 = {lv.name: lv for lv in levels}["L3"]
    assert l3.resolved and round(l3.bandwidth / 1e9) == 330, l3.describe()
    assert l3.high * 16 <= 100 * MiB < hi * 16 and "falls" in l3.note and "than the OS" in l3.note
    assert any(n.startswith("L3: read from") for n in notes)
    zone = (sizes >= lo) & (sizes <= hi)
    for where in (np.flatnonzero(zone)[-1], np.flatnonzero(zone)[2]):
        flat = np.where(zone, 330e9, bw)
        flat[where] = 240e9                                    # one disturbed size
        l3 = {lv.name: lv for lv in find_levels(sizes, flat, caches, 16)[0]}["L3"]
        assert l3.resolved and l3.points == zone.sum() and "falls" not in l3.note


@pytest.mark.parametrize("second_pass", ["fast", "slow"])
def test_a_step_is_timed_again_and_kept_only_if_it_holds(monkeypatch, second_pass):
    """A step inside a cache's zone may be the machine slowing down partway through the sweep (a
    shared host) rather than the cache: recheck_zones times the zone's sizes again, each keeps its
    faster pass, and the step goes only when the second pass runs the whole zone at one speed."""
    from course_lib.measure.result import SweepPoint

    caches = CacheInfo((Cache("L1", 48 * KiB, 1), Cache("L2", 2 * MiB, 1), Cache("L3", 300 * MiB, 16)), "test")
    lo, hi = zones(caches, 16)["L3"]
    sizes = lo * 2.0 ** (np.arange(-9, 18) / 3)
    bw = np.select([sizes <= 48 * KiB, sizes <= 2 * MiB, sizes * 16 <= 100 * MiB], [1100e9, 700e9, 330e9], 240e9)
    bw[sizes * 16 > 1.2 * GiB] = 140e9

    def point(size, b):
        return SweepPoint(size, 16, b, b, 0.01, "loop", 1, 7)

    sweep = [point(int(s), b) for s, b in zip(sizes, bw)]
    levels, _ = find_levels(sizes, bw, caches, 16)
    assert {lv.name: lv for lv in levels}["L3"].step_at
    asked = []

    def sweep_again(plan, progress=None, deadline=None, sizes=None):
        asked.extend(sizes)
        # "fast": the whole zone at the first pass's L3 speed; "slow": the step is the cache's
        return [point(s, 330e9 if second_pass == "fast" or s * 16 <= 100 * MiB else 245e9) for s in sizes]

    monkeypatch.setattr(cpu, "measure_sweep", sweep_again)
    plan = make_plan(False, 16, caches)
    merged, levels, notes, _ = cpu.recheck_zones(plan, caches, sweep, levels, say=lambda line: None)
    z = zones(caches, 16)
    in_zone = {name: [s for s in sizes if z[name][0] <= s <= z[name][1]] for name in ("L1", "L2", "L3")}
    # the L3 zone's sizes, and the L1 and L2 zones' as always: nothing else
    assert sorted(asked) == sorted(int(s) for name in in_zone for s in in_zone[name]) and in_zone["L3"]
    assert len(merged) == len(sweep) and [p.size for p in merged] == [p.size for p in sweep]
    assert all(m.bandwidth >= p.bandwidth for m, p in zip(merged, sweep))
    l3 = {lv.name: lv for lv in levels}["L3"]
    note = next(n for n in notes if n.startswith("L3: the bandwidth stepped down"))
    if second_pass == "fast":
        assert l3.step_at is None and l3.points == sum(lo <= s <= hi for s in sizes) and "no step the second time" in note
    else:
        assert l3.step_at and round(l3.bandwidth / 1e9) == 330 and "the step held" in note and "both passes" in note


def test_the_private_caches_are_timed_twice_and_read_at_the_faster_pass(monkeypatch):
    """A shared VM's cores switch between faster and slower spells every second or so, and one
    pass reads a whole cache zone in one spell: recheck_zones times the L1 and L2 zones again at
    the end (cheap), each size keeps its faster pass, and the other zones are left as they were."""
    from course_lib.measure.result import SweepPoint

    caches = CacheInfo((Cache("L1", 48 * KiB, 1), Cache("L2", 2 * MiB, 1), Cache("L3", 32 * MiB, 2)), "test")
    sizes = np.round(12 * KiB * 2.0 ** (np.arange(0, 40) / 3))               # 12 KiB .. 120 MiB
    bw = np.select([sizes <= 48 * KiB, sizes <= 2 * MiB, sizes * 2 <= 32 * MiB], [300e9, 140e9, 70e9], 30e9)
    slow_l2 = np.where((sizes > 96 * KiB) & (sizes <= 2 * MiB), 0.7, 1.0)    # L2 timed in a slow spell
    sweep = [SweepPoint(int(s), 2, b * f, b * f, 0.01, "loop", 1, 7) for s, b, f in zip(sizes, bw, slow_l2)]
    levels, _ = find_levels(sizes, bw * slow_l2, caches, 2)
    assert not any(lv.step_at for lv in levels)
    steady, asked = dict(zip(sizes.astype(int).tolist(), bw)), []

    def sweep_again(plan, progress=None, deadline=None, sizes=None):       # the whole zone in a fast spell
        asked.extend(sizes)
        assert plan.repeats == 3                                            # a second look, not 7 calls
        return [SweepPoint(s, 2, steady[s], steady[s], 0.01, "loop", 1, 7) for s in sizes]

    monkeypatch.setattr(cpu, "measure_sweep", sweep_again)
    merged, new_levels, notes, timed = cpu.recheck_zones(make_plan(False, 2, caches), caches, sweep, levels,
                                                         say=lambda line: None)
    z = zones(caches, 2)
    assert timed == ["L1", "L2"] and not notes
    assert asked and all(any(z[n][0] <= s <= z[n][1] for n in ("L1", "L2")) for s in asked)
    before, after = ({lv.name: lv for lv in ls} for ls in (levels, new_levels))
    assert round(before["L2"].bandwidth / 1e9) == 98 and round(after["L2"].bandwidth / 1e9) == 140
    assert after["L3"] == before["L3"] and after["DRAM"] == before["DRAM"]
    # a second pass slower than the first changes nothing
    monkeypatch.setattr(cpu, "measure_sweep", lambda plan, sizes=None, **k: [
        SweepPoint(s, 2, 1e9, 1e9, 0.01, "loop", 1, 7) for s in sizes])
    merged, again, _, _ = cpu.recheck_zones(make_plan(False, 2, caches), caches, sweep, levels, say=lambda line: None)
    assert merged == sweep and again == levels
    # where the second look would not end before the deadline, there is none
    import time

    assert cpu.recheck_zones(make_plan(False, 2, caches), caches, sweep, levels, say=lambda line: None,
                             deadline=time.perf_counter() + 0.1) == (sweep, levels, [], [])


def test_the_order_check_keeps_where_a_level_stepped_down():
    """A level flagged by the order check (not distinct, out of order) still says where its
    bandwidth stepped down: recheck_zones looks for it there."""
    from course_lib.measure.plateaus import Level, _check_order

    l1 = Level("L1", 200e9, 1e4, 3e4, 3, 1.1, 48e3, True)
    for bw in (195e9, 300e9):                            # not distinct; out of order
        l2 = Level("L2", bw, 1e5, 3e5, 3, 1.1, 2e6, True, "falls", step_at=4e5)
        checked = _check_order([l1, l2], [])[1]
        assert checked.step_at == 4e5 and checked.note != "falls"


def test_a_sweep_too_small_for_dram_says_so():
    small = SIZES[SIZES <= 64 * MiB]
    levels, _ = find_levels(small, staircase(small), CACHES, threads=1)
    dram = {lv.name: lv for lv in levels}["DRAM"]
    assert not dram.resolved
    assert "4x the last cache" in dram.note and "largest working set" in dram.note


def test_levels_out_of_order_are_not_resolved_and_equal_ones_are_flagged():
    bw = staircase(SIZES, l1=100e9, l2=200e9)                 # "L2 faster than L1": not physical
    levels, _ = find_levels(SIZES, bw, CACHES, threads=1)
    assert "out of order" in {lv.name: lv for lv in levels}["L2"].note
    levels, notes = find_levels(SIZES, staircase(SIZES, l1=100e9, l2=100e9), CACHES, threads=1)
    assert any("not distinct" in n for n in notes)


def test_shared_cache_zones_scale_with_threads():
    z1, z8 = zones(CACHES, 1), zones(CACHES, 8)
    assert z1["L1"] == z8["L1"]                                 # private: whole cache per thread
    assert z8["DRAM"][0] == z1["DRAM"][0] / 8                   # L3 shared by 8: 1/8 each


def test_without_cache_sizes_the_plateaus_come_from_the_data():
    levels, notes = find_levels(SIZES, staircase(SIZES), CacheInfo(), threads=1)
    got = {lv.name: lv for lv in levels if lv.resolved}
    assert set(got) == set(LEVELS), [lv.describe() for lv in levels]
    assert got["L1"].bandwidth > got["L2"].bandwidth > got["L3"].bandwidth > got["DRAM"].bandwidth
    assert "named by order" in notes[0]


def test_find_levels_refuses_bad_input():
    with pytest.raises(ValueError, match="increase"):
        find_levels(SIZES[::-1], staircase(SIZES), CACHES, 1)
    with pytest.raises(ValueError, match="same length"):
        find_levels(SIZES, staircase(SIZES)[:-1], CACHES, 1)


# ---- caches and the graded levels ---------------------------------------------------------------
def test_cache_level_of_uses_the_reported_sizes():
    assert [cache_level_of(s, CACHES) for s in (16 * KiB, 256 * KiB, 8 * MiB, GiB)] == ["L1", "L2", "L3", "DRAM"]


def test_the_graded_sizes_have_one_answer_whatever_the_os_reports():
    glibc_total = CacheInfo((Cache("L1", 48 * KiB, 1), Cache("L2", MiB, 1), Cache("L3", 1152 * MiB, 96)))
    for caches in (CACHES, CacheInfo(), glibc_total):
        assert cache_level_of(16 * KiB, caches) == "L1"
        assert cache_level_of(GiB, caches) == "DRAM"
    assert cache_level_of(4 * MiB, CacheInfo()) == "L2/L3"          # unknown: no guess in between
    with pytest.raises(ValueError, match="positive number of bytes"):
        cache_level_of(-1)


def test_this_machines_caches_are_read_and_named():
    info = system.cache_sizes()
    for c in info.caches:
        assert c.level in ("L1", "L2", "L3") and c.size >= 4 * KiB and c.shared_by >= 1
    assert [c.level for c in info.caches] == sorted(c.level for c in info.caches)


def test_size_and_cpu_list_parsing():
    assert system._parse_size("48K\n") == 48 * KiB and system._parse_size("32M") == 32 * MiB
    assert system._count_cpus("0-1\n") == 2 and system._count_cpus("0,2,4-7") == 6
    assert fmt_binary_bytes(49152) == "48 KiB" and fmt_binary_bytes(1.5 * MiB) == "1.5 MiB"


def test_blas_threads_without_threadpoolctl_follow_the_environment(monkeypatch):
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)      # import fails
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    info = system.blas_info()
    assert info.threads == 3 and "OPENBLAS_NUM_THREADS" in info.source
    with pytest.raises(ValueError, match="positive integer"):
        system.choose_threads(0)


def test_the_thread_rule_is_fixed_and_printed_and_ignores_the_load(monkeypatch):
    from course_lib.measure import cpu
    blas = system.BlasInfo("openblas", "", 8, "test")
    monkeypatch.setattr(system, "blas_info", lambda: blas)
    monkeypatch.setattr(system, "usable_cpus", lambda: 4)
    monkeypatch.setattr(system, "cpu_quota", lambda: None)
    for load in (0.0, 50.0):                                  # idle, then very busy: the same threads
        monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
        threads, _, notes = cpu.decide_threads()
        assert threads == 4                                   # min(BLAS 8, usable CPUs 4)
        assert bool(notes) == (load > 4) and all("load average" in n for n in notes)
    monkeypatch.setattr(system, "cpu_quota", lambda: 1.5)
    assert cpu.decide_threads()[0] == 2                       # a quota of 1.5 CPUs: 2 threads
    assert cpu.decide_threads(3)[0] == 3                      # asked for: never second-guessed
    assert "never changed by how busy the machine is" in system.THREAD_RULE


# ---- bytes and kernels ------------------------------------------------------------------------
def test_the_numpy_expression_moves_five_arrays_and_the_model_three():
    n = 2**23
    assert numpy_axpy(n).bytes("fp64") / n == 40
    assert axpy(n).bytes("fp64") / n == 24
    assert numpy_axpy(n).flops_per_sample == axpy(n).flops_per_sample == 2 * n
    with pytest.raises(ValueError):
        numpy_axpy(0)


def test_the_timed_kernels_compute_what_they_are_charged_for():
    rng = np.random.default_rng(0)
    n = 3 * 1000 + 7                                             # a ragged last block
    x, y = rng.random(n), rng.random(n)
    expected = y + 0.5 * x
    K.axpy_blocked(0.5, x, y, np.empty(1000))
    np.testing.assert_allclose(y, expected)
    spec = K.axpy_blocked_spec(n)
    assert (spec.bytes, spec.flops, spec.precision, spec.threads) == (24 * n, 2 * n, "fp64", "1")
    assert K.dot_spec(1000).make()() == pytest.approx(0.5 * 1.5 * 1000)
    assert (K.matmul_spec(64).bytes, K.matmul_spec(64).flops) == (3 * 64 * 64 * 8, 2 * 64**3)
    assert (K.add_spec(1024).bytes, K.add_spec(1024).flops) == (24 * 1024, 1024)
    assert K.axpy_numpy_spec(n).bytes == 40 * n


class FakeClock:
    """perf_counter that advances by a scripted duration per call of the timed function."""

    def __init__(self, durations):
        self.now, self.durations = 0.0, list(durations)

    def perf_counter(self):
        return self.now

    def call(self):
        self.now += self.durations.pop(0)


def test_timing_statistics_and_pooled_rounds(monkeypatch):
    from course_lib.measure import timing
    t = Timing((1.0, 2.0, 3.0))
    assert (t.median, t.best, t.spread, t.rate(6.0)) == (2.0, 1.0, 1.0, 3.0)
    # warm-up, then a round with one interrupted call (spread > 50%), then a quiet round: stop
    clock = FakeClock([8.0] + [1.0, 4.0, 1.0] + [1.0, 1.5, 1.0] + [1.0] * 3)   # exact in binary
    monkeypatch.setattr(timing, "time", clock)
    t = time_stable(clock.call, repeats=3, warmup=1)
    assert t.seconds == (1.0, 4.0, 1.0, 1.0, 1.5, 1.0) and t.best == 1.0 and t.median == 1.0
    # a quiet first round needs no second one
    clock = FakeClock([8.0] + [1.0, 1.25, 1.125])
    monkeypatch.setattr(timing, "time", clock)
    assert len(time_stable(clock.call, repeats=3, warmup=1).seconds) == 3


# ---- the result object, without timing -------------------------------------------------------------
def test_a_measured_machine_is_a_hardware_every_tool_takes():
    hw = example()
    assert isinstance(hw, Hardware) and isinstance(hw, MeasuredHardware)
    assert solve(dot(2**23), hw, precision="fp64").bottleneck == "memory-bound"
    assert solve(matmul(1024, 1024, 1024), hw, precision="fp64").bottleneck == "compute-bound"
    assert hw.ridge_point_si("fp64") == pytest.approx(4.0)
    assert "source[memory_bandwidth]" in hw.describe() and "GFLOP/s" in hw.describe()
    assert hw.bandwidth("L2").m == pytest.approx(100)
    import matplotlib
    matplotlib.use("Agg")
    from course_lib import plot_roofline
    fig, ax = plot_roofline([hw, "A100"], precision="fp32", workloads=[("dot", hw.runs["dot"])])
    assert ax.get_yscale() == "log"
    fig, ax = hw.plot()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sum(label.startswith(("L1", "L2", "L3", "DRAM")) for label in labels) == 4


def test_an_unresolved_level_has_no_bandwidth():
    hw = example()
    from course_lib.measure.plateaus import Level
    hw.levels["L3"] = Level("L3", float("nan"), 0, 0, 0, float("nan"), None, False, "no plateau")
    with pytest.raises(ValueError, match="not resolved.*no plateau"):
        hw.bandwidth_si("L3")
    assert "not resolved" in hw.report()


def test_a_perturbation_scales_the_measured_machine_and_says_so(monkeypatch):
    """perturb's efficiencies reach this_machine() as they reach the zoo (the robustness test of
    lesson 5's graded answers relies on it); outside the block the measurement is untouched."""
    import course_lib.measure as measure
    from course_lib.sensitivity import perturb
    monkeypatch.setattr(measure, "_CACHE", {(True, None): example()})
    monkeypatch.setattr(measure, "_SCALED", {})
    hw = this_machine(quick=True)
    with perturb(compute_efficiency=0.85):
        slow = this_machine(quick=True)
        assert this_machine(quick=True) is slow
    assert slow is not hw and "perturbed: compute_efficiency=0.85" in slow.name
    assert slow.peak_flops_si("fp64") == pytest.approx(0.85 * hw.peak_flops_si("fp64"))
    assert slow.memory_bandwidth_si == hw.memory_bandwidth_si and slow.runs is hw.runs
    with perturb(memory_efficiency=0.85):
        narrow = this_machine(quick=True)
    assert narrow.memory_bandwidth_si == pytest.approx(0.85 * hw.memory_bandwidth_si)
    assert narrow.bandwidth_si("L2") == pytest.approx(0.85 * hw.bandwidth_si("L2"))
    assert narrow.ridge_point_si("fp64") == pytest.approx(hw.ridge_point_si("fp64") / 0.85)
    with perturb(capacity="decimal"):             # nothing to change on a measured machine
        assert this_machine(quick=True) is hw
    assert this_machine(quick=True) is hw and hw.name == "example machine"
    with pytest.raises(ValueError, match="positive factor"):
        hw.scaled(compute=0)


# ---- the optional GPU path, without a GPU ----------------------------------------------------------
def test_without_pytorch_the_gpu_path_says_why(monkeypatch):
    from course_lib.measure import gpu
    monkeypatch.setitem(sys.modules, "torch", None)
    ok, why = gpu.gpu_available()
    assert not ok and "PyTorch is not installed" in why
    with pytest.raises(RuntimeError, match="cannot measure a GPU: PyTorch is not installed"):
        gpu.measure_gpu()


def test_the_cli_refuses_gpu_without_pytorch_or_cuda():
    try:
        import torch
        if torch.cuda.is_available():
            pytest.skip("a CUDA GPU is present: measured by the GPU path itself, not this test")
    except ImportError:
        pass
    p = subprocess.run([sys.executable, "-m", "course_lib.measure", "--gpu"], capture_output=True, text=True)
    assert p.returncode == 2 and "no GPU measurement" in p.stderr


# ---- real measurements on this machine ---------------------------------------------------------------
def test_quick_mode_under_nbgrader_and_by_request(monkeypatch):
    monkeypatch.delenv("COURSE_LIB_MEASURE", raising=False)
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert want_quick() is True
    monkeypatch.setenv("COURSE_LIB_MEASURE", "full")
    assert want_quick() is False
    monkeypatch.delenv("NBGRADER_EXECUTION")
    monkeypatch.delenv("COURSE_LIB_MEASURE")
    assert want_quick() is False and want_quick(True) is True


def test_the_full_plan_reaches_dram_and_stays_small():
    caches = system.cache_sizes()
    for quick in (False, True):
        plan = make_plan(quick, 2, caches)
        sizes = sweep_sizes(plan)
        assert sizes[0] >= 8 * KiB and sizes[-1] * plan.threads <= plan.max_total <= max(plan.memory_budget, 256 * MiB)
        assert all(b > a for a, b in zip(sizes, sizes[1:]))
        if plan.dram_low and plan.dram_reachable:            # 3 sizes in DRAM's zone, on this machine too
            assert sum(s >= plan.dram_low for s in sizes) == DRAM_POINTS == 3


# cache layouts of today's machines: (L1, L2, L3 instance, CPUs sharing the L3)
LAYOUTS = {"cloud Xeon VM 48K/2M/300M": (48 * KiB, 2 * MiB, 300 * MiB, 2),
           "AMD X part 32K/1M/1.1G": (32 * KiB, MiB, 1152 * MiB, 96),
           "laptop 48K/1.25M/12M": (48 * KiB, 1280 * KiB, 12 * MiB, 8)}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("quick", [True, False])
@pytest.mark.parametrize("threads", [1, 2, 8])
def test_the_plan_reaches_dram_on_any_cache_size_within_the_budget(layout, quick, threads):
    l1, l2, l3, shared = LAYOUTS[layout]
    caches = CacheInfo((Cache("L1", l1, 1), Cache("L2", l2, 1), Cache("L3", l3, shared)), "test")
    plan = make_plan(quick, threads, caches, budget=(64 * GiB, "test"))
    sizes = np.array(sweep_sizes(plan), dtype=float)
    dram_low = zones(caches, threads)["DRAM"][0]
    assert plan.dram_reachable and plan.dram_low == dram_low
    # three sizes inside DRAM's zone: the plateau's median shrugs off one disturbed size
    assert (sizes >= dram_low).sum() == DRAM_POINTS == 3
    assert sizes[-1] * threads <= plan.max_total <= 64 * GiB
    # a clean staircase on those sizes resolves DRAM, and the ceiling is DRAM's
    bw = np.select([sizes <= l1, sizes <= l2, sizes <= caches.per_thread("L3", threads)], [200e9, 100e9, 50e9], 20e9)
    from course_lib.measure.cpu import memory_ceiling
    for disturbed in (None, -1, -2, -3):
        got = bw.copy()
        if disturbed is not None:              # one DRAM size slowed by another program: 1.3x
            got[disturbed] /= 1.3
        levels, _ = find_levels(sizes, got, caches, threads)
        levels = {lv.name: lv for lv in levels}
        assert levels["DRAM"].resolved and round(levels["DRAM"].bandwidth / 1e9) == 20
        assert memory_ceiling(levels, sizes, got, plan)[:2] == ("DRAM", levels["DRAM"].bandwidth)
    # the kernels' vectors outgrow the last cache (as cache_level_of reads it), within the budget
    assert cache_level_of(16 * plan.vector_n, caches) == "DRAM" and 24 * plan.vector_n <= 64 * GiB


def test_an_unresolved_dram_is_never_reported_as_dram():
    """300 MiB of L3 and a 1 GiB budget: the sweep cannot reach 4x the L3. Its largest sizes sit
    in L3 (fast); the memory ceiling is L3's and every printout says so."""
    caches = CacheInfo((Cache("L1", 48 * KiB, 1), Cache("L2", 2 * MiB, 1), Cache("L3", 300 * MiB, 2)), "test")
    plan = make_plan(True, 1, caches, budget=(GiB, "test budget"))
    assert not plan.dram_reachable and "1 GiB" in plan.note and "test budget" in plan.note
    sizes = np.array(sweep_sizes(plan), dtype=float)
    assert sizes[-1] < plan.dram_low
    bw = np.select([sizes <= 48 * KiB, sizes <= 2 * MiB, sizes <= 300 * MiB], [200e9, 100e9, 40e9], 20e9)
    levels, _ = find_levels(sizes, bw, caches, 1)
    levels = {lv.name: lv for lv in levels}
    from course_lib.measure.cpu import memory_ceiling
    level, bandwidth, source = memory_ceiling(levels, sizes, bw, plan)
    assert (level, round(bandwidth / 1e9)) == ("L3", 40) and "DRAM was not reached" in source
    hw = example()
    hw.levels["DRAM"] = levels["DRAM"]
    hw.setup["memory_level"] = level
    hw.memory_bandwidth_si = bandwidth
    assert hw.memory_label == "L3 (DRAM not reached)"
    text = hw.report(kernels=False) + hw.describe()
    assert "memory ceiling of the roofline: 40 GB/s, L3 (DRAM not reached)" in text
    assert "DRAM not reached" in hw.describe() and "40 GB/s (measured: L3" in hw.describe()
    with pytest.raises(ValueError, match="DRAM was not resolved"):
        hw.bandwidth_si("DRAM")
    import matplotlib
    matplotlib.use("Agg")
    fig, ax = hw.plot(title="mine")
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "L3 (DRAM not reached): 40 GB/s" in legend and not any(t.startswith("DRAM") for t in legend)
    assert any(t.get_text().startswith("L3 ridge") for t in ax.texts)
    assert ax.get_title() == "mine"                       # the title asked for, not the legend's
    # a DRAM zone reached without a plateau and as fast as L3 is not called DRAM either
    big = make_plan(True, 1, caches, budget=(8 * GiB, "test"))
    sizes = np.array(sweep_sizes(big), dtype=float)
    noisy = np.select([sizes <= 48 * KiB, sizes <= 2 * MiB, sizes <= 300 * MiB], [200e9, 100e9, 40e9], 40e9)
    noisy[-1] *= 1.6                                           # one lucky point: no plateau in DRAM's zone
    levels, _ = find_levels(sizes, noisy, caches, 1)
    levels = {lv.name: lv for lv in levels}
    assert levels["DRAM"].points and not levels["DRAM"].resolved
    level, _, source = memory_ceiling(levels, sizes, noisy, big)
    assert level == "L3" and "ran as fast as L3" in source


def test_a_timed_window_streams_data_last_touched_a_whole_working_set_ago(monkeypatch):
    """Sizes too big to re-read in one short call are timed a window at a time. Each timed
    window must be one the sweep last touched a whole round ago (out of cache): timing the
    window the calibration call has just streamed would time a cache and call it DRAM."""
    import dataclasses
    sizes_seen, calls = [], []               # calls: (first byte, end byte of x, timed, point)
    real_add, real_stable = np.add, cpu.time_stable

    def add(a, b, out=None):
        calls.append((b.ctypes.data, b.ctypes.data + b.nbytes, bool(sizes_seen) and sizes_seen[-1] == "timing",
                      len([s for s in sizes_seen if s == "timing"])))
        return real_add(a, b, out=out)

    def stable(fn, **kw):
        sizes_seen.append("timing")
        try:
            return real_stable(fn, **kw)
        finally:
            sizes_seen.append("done")

    monkeypatch.setattr(cpu, "time_stable", stable)
    monkeypatch.setattr(cpu.np, "add", add)
    plan = dataclasses.replace(make_plan(True, 1, CACHES, budget=(GiB, "test")), min_size=8 * MiB,
                               max_total=16 * MiB, per_octave=1, dram_low=None, sweep_target_s=2e-5)
    sizes = sweep_sizes(plan)
    points = cpu.measure_sweep(plan)
    monkeypatch.undo()
    assert [p.method for p in points] == ["window", "window"] and [p.size for p in points] == sizes
    checked = 0
    for i, (lo, hi, timed, k) in enumerate(calls):
        if not timed:
            continue
        last = max((j for j in range(i) if calls[j][0] < hi and lo < calls[j][1]), default=None)
        if last is None:
            continue
        since = sum(c[1] - c[0] for c in calls[last + 1:i])      # bytes of x streamed in between
        x_bytes = sizes[k - 1] // 2
        assert since >= x_bytes - 2 * (hi - lo), (k, i, last, since, x_bytes)
        checked += 1
    assert checked >= 2 * 3                                     # every timed call of both sizes


@pytest.fixture(scope="module")
def machine():
    # one thread, as the grader measures: on a shared test machine other processes keep the CPUs
    # busy, and threads that wait for each other there measure the load, not the machine (the
    # thread rule itself is tested above, without timing)
    return this_machine(quick=True, refresh=True, threads=1)


def test_measured_figures_are_physically_plausible(machine):
    assert 1e9 <= machine.memory_bandwidth_si <= 1e12                       # 1 GB/s .. 1 TB/s
    for p in ("fp64", "fp32"):
        assert 1e9 <= machine.peak_flops_si(p) <= 100e12                    # 1 GFLOP/s .. 100 TFLOP/s
    assert machine.peak_flops_si("fp32") > 0.5 * machine.peak_flops_si("fp64")
    if machine.memory_capacity_si:
        assert 1e9 <= machine.memory_capacity_si <= 100e12
    for what in ("peak_flops", "memory_bandwidth"):
        assert machine.sources[what].startswith("measured") and "thread" in machine.sources[what]


def test_the_peaks_are_the_fastest_of_repeats_taken_in_three_bursts(machine):
    """Bursts before the sweep, after it and after the kernels: one busy spell cannot slow them all."""
    import re
    for p in ("fp64", "fp32"):
        timing = machine.runs[f"peak_{p}"].timing
        # the first burst whole, and at least one repeat of each later one (past the soft time
        # budget a burst stops after one)
        assert len(timing.seconds) >= cpu.peak_bursts(machine.setup["plan"].repeats)[0] + 2
        assert machine.peak_flops_si(p) >= machine.runs[f"peak_{p}"].flops_si / timing.best * 0.999
    src = machine.sources["peak_flops"]
    bursts = re.search(r"the fastest of (\d+) timed calls after a warm-up, (?:(\d+) of them )?taken in (\d+) bursts", src)
    assert bursts and int(bursts[3]) >= 3, src
    spread_out = re.search(r"and the other (\d+) spread out, one every ([\d.]+) s between the kernels", src)
    assert bool(bursts[2]) == bool(spread_out), src
    if spread_out:                       # the two parts add up to the calls timed
        assert int(bursts[2]) + int(spread_out[1]) == int(bursts[1]), src
    assert int(bursts[1]) == len(machine.runs["peak_fp64"].timing.seconds)


class _Clock:
    """A perf_counter the test moves by hand."""

    now = 1000.0

    def perf_counter(self):
        return self.now


def test_peak_samples_between_the_kernels_keep_their_interval_and_deadline(monkeypatch):
    """PeakRepeats.between: one call per precision once plan.peak_every_s has passed, none sooner,
    none past the deadline, none when the plan has no interval."""
    import dataclasses

    clock = _Clock()
    monkeypatch.setattr(cpu, "time", clock)
    plan = dataclasses.replace(make_plan(True, 1, CACHES), peak_min_n=64, peak_max_n=64, peak_every_s=0.3)
    reps = cpu.PeakRepeats(plan)
    reps.between()
    assert reps.spread_out == 0                      # just made: too soon
    clock.now += 0.31
    reps.between()
    assert reps.spread_out == 1 and {p: len(v) for p, v in reps.samples.items()} == {"fp64": 1, "fp32": 1}
    clock.now += 0.2
    reps.between()
    assert reps.spread_out == 1                      # 0.2 s since the last: too soon
    clock.now += 0.2
    reps.between(deadline=clock.now - 0.01)
    assert reps.spread_out == 1                      # due, but past the deadline
    reps.between(deadline=clock.now + 1)
    assert reps.spread_out == 2
    reps.burst(2)                                    # a burst counts as the last sample
    clock.now += 0.29
    reps.between()
    assert reps.spread_out == 2 and len(reps.samples["fp64"]) == 4
    off = cpu.PeakRepeats(dataclasses.replace(plan, peak_every_s=None))
    clock.now += 10
    off.between()
    assert off.spread_out == 0 and not off.samples["fp64"]


def test_the_kernels_call_between_after_each_kernel_and_the_plans_space_peaks():
    """measure_kernels hands the time after each kernel, outside its timing, to `between` (where
    the measurement takes its spread-out peak samples); both modes' plans ask for them."""
    import dataclasses

    assert make_plan(True, 1, CACHES).peak_every_s and make_plan(False, 1, CACHES).peak_every_s
    plan = dataclasses.replace(make_plan(True, 1, CACHES), vector_n=2**12, matmul_sizes=(8,),
                               kernel_target_s=1e-4, repeats=1)
    seen = []
    runs = cpu.measure_kernels(plan, CACHES, between=lambda: seen.append(len(seen)))
    assert len(seen) == len(runs) == len(cpu.kernel_specs(plan))


def test_a_measurement_that_sees_a_step_times_the_zone_again(monkeypatch):
    """measure_cpu hands a level that stepped down to recheck_zones, and its report says so."""
    import dataclasses

    real = cpu.find_levels
    calls = []

    def first_with_a_step(*a, **k):
        levels, notes = real(*a, **k)
        calls.append(1)
        if len(calls) == 1:              # the sweep's own pass: L2 "steps down" at its second size
            levels = [dataclasses.replace(lv, step_at=lv.low * 1.5) if lv.name == "L2" and lv.points else lv
                      for lv in levels]
        return levels, notes

    monkeypatch.setattr(cpu, "find_levels", first_with_a_step)
    # the recheck runs only within the plan's time budget: on a loaded test machine a quick
    # measurement can use all 5 s of it, so the budget here is out of reach. What is rechecked
    # is L1 and L2: the sweep stops past L2's zone (not at DRAM), and the peaks and kernels are
    # small (about 1 s in all instead of 5-10 s)
    planned = cpu.make_plan

    def small(quick, threads, caches, *a, **k):
        plan = planned(quick, threads, caches, *a, **k)
        past_l2 = zones(caches, threads).get("L2", (0, 2 * MiB))[1] * 4 * threads
        return dataclasses.replace(plan, budget_s=1e6, max_total=int(min(plan.max_total, past_l2)),
                                   vector_n=2**16, matmul_sizes=(64,), peak_min_n=64, peak_max_n=128,
                                   warmup_s=0.01, peak_every_s=None)

    monkeypatch.setattr(cpu, "make_plan", small)
    hw = cpu.measure_cpu(quick=True, threads=1)          # not this_machine(): nothing cached
    if not hw.levels["L2"].points:
        pytest.skip("this machine's sweep has no size in the L2 zone (no L2 reported)")
    assert len(calls) == 2
    assert any(n.startswith("L2: the bandwidth stepped down") and "timed again" in n for n in hw.notes), hw.notes
    # L1 for a second look, L2 for its step (and L3 where the sweep saw one there, as a loaded
    # machine's can): the report's sweep line names them
    if hw.levels["L1"].points:
        report = hw.report(kernels=False)
        assert re.search(r"the sizes of (L1 and L2|L1, L2 and L3) timed again at the end, each keeping its "
                         r"faster pass", report), report


def test_memory_levels_are_ordered(machine):
    resolved = machine.resolved_levels
    assert len(resolved) >= 2, machine.report(kernels=False)
    bws = [lv.bandwidth for lv in resolved]
    assert all(a >= b / 1.1 for a, b in zip(bws, bws[1:])), machine.report(kernels=False)
    # and in the raw sweep, independently of the naming: small working sets stream faster
    med = [p.median_bandwidth for p in machine.sweep]
    assert np.median(med[:3]) > 1.5 * np.median(med[-3:]), machine.sweep_table()


def test_every_kernel_ran_and_is_placed(machine):
    assert {"dot", "axpy", "axpy_numpy", "add_1024", "add_32768", "matmul_64", "matmul_1024"} <= set(machine.runs)
    for run in machine.runs.values():
        assert run.latency_si > 0 and run.flops_si > 0 and run.bytes_si > 0
        assert run.level in ("L1", "L2", "L3", "DRAM")
    # no kernel beats the compute roof (the ceilings take the fastest repeat of the same matmuls)
    for run in machine.runs.values():
        assert run.achieved_flops <= machine.peak_flops_si(run.precision) * 1.001


def classifications(hw):
    """What notebook 05 grades, on `hw`, plus the regime of every timed fp64 kernel."""
    return {
        "dot": solve(dot(2**23), hw, precision="fp64").bottleneck,
        "matmul_1024": solve(matmul(1024, 1024, 1024), hw, precision="fp64").bottleneck,
        "higher_ridge": "A100" if Hardware.A100.ridge_point_si("fp16") > hw.ridge_point_si("fp32") else "this machine",
        "levels": (hw.level_of(16 * KiB), hw.level_of(GiB)),
        "kernels": {k: hw.regime(k) for k, r in hw.runs.items() if r.precision == "fp64" and not k.startswith("peak")},
    }


EXPECTED = {"dot": "memory-bound", "matmul_1024": "compute-bound", "higher_ridge": "A100",
            "levels": ("L1", "DRAM")}


def test_the_graded_classifications_hold_and_are_stable_over_three_runs(machine):
    runs = [machine] + [this_machine(quick=True, refresh=True, threads=1) for _ in range(2)]
    got = [classifications(hw) for hw in runs]
    for g in got:
        assert {k: g[k] for k in EXPECTED} == EXPECTED
    assert got[0]["kernels"] == got[1]["kernels"] == got[2]["kernels"], [g["kernels"] for g in got]
    ridges = [hw.ridge_point_si("fp64") for hw in runs]
    print(f"fp64 ridge over three runs: {', '.join(f'{r:.3g}' for r in ridges)} FLOP/byte")


def test_the_machine_works_in_solve_plots_and_the_explorer(machine):
    import matplotlib
    matplotlib.use("Agg")
    from course_lib import plot_roofline
    from course_lib.widgets import roofline_explorer
    p = solve(matmul(256, 256, 256), machine, precision="fp64")
    assert p.latency_si > 0 and "This machine" in p.summary()
    plot_roofline(machine, workloads=[("dot", machine.runs["dot"])], precision="fp64")
    machine.plot()
    machine.plot_sweep()
    e = roofline_explorer(matmul(1, 1024, 1024), hardware=(machine, "A100"), precision="fp32")
    e.controls[0].value = 64
    assert "batch 64" in e.numbers.value


GRADER = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))
    from course_lib.measure import system
    system._sysfs_caches = lambda: None          # the sandbox mounts no /sys
    from course_lib import Hardware, solve
    from course_lib.models import dot, matmul
    from course_lib.measure import this_machine
    hw = this_machine()
    assert hw.setup["mode"] == "quick" and hw.threads == 1, hw.setup
    print(solve(dot(2**23), hw, precision="fp64").bottleneck, solve(matmul(1024, 1024, 1024), hw, precision="fp64").bottleneck,
          hw.level_of(16 * 1024), hw.level_of(2**30),
          "A100" if Hardware.A100.ridge_point_si("fp16") > hw.ridge_point_si("fp32") else "this machine")
    print(hw.caches.source, file=sys.stderr)
""")


def test_under_the_graders_conditions_the_answers_are_the_same():
    """One thread, nbgrader's variable, no /sys (glibc's cache sizes), 4 GB of address space."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "NBGRADER_EXECUTION": "autograde"}
    env.pop("COURSE_LIB_MEASURE", None)
    p = subprocess.run([sys.executable, "-c", GRADER], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split() == ["memory-bound", "compute-bound", "L1", "DRAM", "A100"]
    assert "sysfs" not in p.stderr


# ---- the GPU path's logic, on a stand-in for PyTorch --------------------------------------------
def fake_torch():
    """A tiny stand-in for the parts of PyTorch that course_lib.measure.gpu calls, on numpy:
    enough to run the GPU measurement's logic (sizing, sweep, levels, report) on a CPU-only
    machine. Its 'GPU' does no arithmetic, so its figures mean nothing."""
    import contextlib
    import time
    import types

    class Tensor(np.ndarray):
        def element_size(self):
            return self.itemsize

        def add_(self, other, alpha=1.0):
            return self

    def tensor(shape, dtype):
        return np.empty(shape, dtype=dtype).view(Tensor)

    class Event:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self):
            self.t = time.perf_counter()

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return (end.t - self.t) * 1e3 + 1e-3        # ms; never zero

    class Graph:
        def replay(self):
            pass

    props = types.SimpleNamespace(name="Fake GPU", multi_processor_count=4, L2_cache_size=4 * MiB,
                                  major=9, minor=0)
    cuda = types.SimpleNamespace(
        is_available=lambda: True, device_count=lambda: 1, get_device_name=lambda i=0: "Fake GPU",
        set_device=lambda d: None, get_device_properties=lambda d: props,
        mem_get_info=lambda d=None: (256 * MiB, 512 * MiB), synchronize=lambda: None,
        empty_cache=lambda: None, Event=Event, Stream=lambda: types.SimpleNamespace(wait_stream=lambda s: None),
        current_stream=lambda: types.SimpleNamespace(wait_stream=lambda s: None),
        stream=lambda s: contextlib.nullcontext(), CUDAGraph=Graph, graph=lambda g: contextlib.nullcontext())
    t = types.ModuleType("torch")
    t.__version__, t.version = "0.0-fake", types.SimpleNamespace(cuda="0.0")
    t.cuda = cuda
    t.backends = types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False)),
                                       cudnn=types.SimpleNamespace(allow_tf32=False))
    t.float64, t.float32, t.float16, t.bfloat16 = np.float64, np.float32, np.float16, np.float32
    t.device = lambda kind, index=0: (kind, index)
    t.randn = lambda *shape, device=None, dtype=np.float32: tensor(shape, dtype)
    t.empty = t.randn
    t.ones = t.zeros = lambda n, device=None, dtype=np.float32: tensor((n,), dtype)
    t.full = lambda shape, value, device=None, dtype=np.float32: tensor(shape, dtype)
    t.matmul = lambda a, b, out=None: out
    t.dot = lambda x, y: 0.0
    t.add = lambda x, y, out=None: out
    return t


def test_the_gpu_measurement_runs_end_to_end_on_a_stand_in(monkeypatch):
    from course_lib.measure import gpu
    monkeypatch.setitem(sys.modules, "torch", fake_torch())
    assert gpu.gpu_available() == (True, "Fake GPU")
    hw = gpu.measure_gpu(quick=True)
    assert isinstance(hw, Hardware) and hw.kind == "gpu"
    assert hw.precisions == ("fp64", "fp32", "tf32", "fp16", "bf16")
    assert set(hw.levels) == set(LEVELS)
    assert not hw.levels["L1"].resolved and "cannot target" in hw.levels["L1"].note
    assert {"dot", "axpy", "add", "matmul_256", "matmul_8192"} <= set(hw.runs)
    assert [p.method for p in hw.sweep][:1] == ["CUDA graph"]
    text = hw.report()
    assert "Fake GPU" in text and "torch.matmul" in text
    import matplotlib
    matplotlib.use("Agg")
    hw.plot(precision="fp16")
    hw.plot_sweep()
    assert solve(matmul(4096, 4096, 4096), hw, precision="fp16").latency_si > 0
    # every run carries the course_lib kernel it was charged as, counted the same way
    for run in hw.runs.values():
        assert (run.model.flops_per_sample, run.model.bytes(run.precision)) == (run.flops_si, run.bytes_si), run.name


def test_the_cli_gpu_path_on_a_stand_in(monkeypatch, tmp_path, capsys):
    from course_lib.measure.__main__ import main
    monkeypatch.setitem(sys.modules, "torch", fake_torch())
    assert main(["--gpu", "--quick", "--sweep", "--plot", str(tmp_path / "gpu")]) == 0
    out = capsys.readouterr().out
    assert "Fake GPU (measured)" in out and "ridge point fp16" in out
    assert (tmp_path / "gpu_roofline.png").stat().st_size > 0 and (tmp_path / "gpu_sweep.png").exists()


@pytest.mark.parametrize("argv, env, quick", [([], "quick", True), ([], "full", False), (["--quick"], "full", True),
                                              ([], None, False)])
def test_the_cli_measures_in_the_mode_the_notebooks_would(monkeypatch, capsys, argv, env, quick):
    """`python -m course_lib.measure` honours $COURSE_LIB_MEASURE as this_machine() does (it
    measured in full mode with COURSE_LIB_MEASURE=quick); --quick wins over it."""
    from course_lib.measure import cpu
    from course_lib.measure.__main__ import main

    seen = {}

    def fake_measure(quick=None, threads=None, progress=None):
        seen["quick"] = cpu.want_quick(quick)
        return example()
    monkeypatch.setattr(cpu, "measure_cpu", fake_measure)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    if env is None:
        monkeypatch.delenv("COURSE_LIB_MEASURE", raising=False)
    else:
        monkeypatch.setenv("COURSE_LIB_MEASURE", env)
    assert main(argv) == 0
    assert seen["quick"] is quick


def test_the_kernels_labels_on_the_hierarchical_roofline_do_not_overlap():
    import matplotlib
    matplotlib.use("Agg")
    from course_lib.measure.result import KernelRun
    hw = example()
    for n in (1024, 2048, 4096):                      # three adds at one intensity and nearly one speed
        hw.runs[f"add_{n}"] = KernelRun(f"add_{n}", f"add, n={n}", "np.add", "fp64", 1, n, 24 * n,
                                        Timing((n * 1e-9,) * 3), 1, 24 * n, "L1")
    fig, ax = hw.plot()
    renderer = fig.canvas.get_renderer()
    boxes = [a.get_window_extent(renderer) for a in ax.texts if a.get_text().startswith(("add", "dot"))]
    assert len(boxes) == 4
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_gpu_vs_zoo_reports_a_zoo_ceiling_below_a_measurement(monkeypatch, capsys):
    """benchmarks/gpu_vs_zoo.py on the stand-in: its 'GPU' does no arithmetic, so every figure
    is absurdly fast, and the benchmark must say the zoo's ceilings are below the measurement
    and the roofline slower than the kernels (what it checks on a real GPU)."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu_vs_zoo.py"
    spec = importlib.util.spec_from_file_location("gpu_vs_zoo", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert [bench.chip_for(n) for n in ("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H200",
                                        "Tesla T4", "Fake GPU")] == ["H100", "H100_PCIe", "H200", "T4", None]
    monkeypatch.setitem(sys.modules, "torch", fake_torch())
    assert bench.main([]) == 2 and "not in the zoo" in capsys.readouterr().err
    assert bench.main(["--chip", "H100", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "against the zoo's NVIDIA H100 SXM5 80GB (H100)" in out
    assert "zoo ceilings above every measurement: NO, measured above: peak fp32" in out
    assert "roofline never slower than a measured kernel: NO: " in out


def test_sweep_call_bench_times_each_zone_with_each_call_length(capsys):
    """benchmarks/sweep_call_bench.py: every call length is timed on the zone asked for, in every
    round, and the rule's own length is marked; a zone the machine lacks is refused by name."""
    import importlib.util
    from pathlib import Path

    from course_lib.measure.plateaus import zones
    from course_lib.measure.system import cache_sizes

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "sweep_call_bench.py"
    spec = importlib.util.spec_from_file_location("sweep_call_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    zone = min(zones(cache_sizes(), 1).items(), key=lambda kv: kv[1][0])[0]     # the smallest: fast
    bench.main(["--threads", "1", "--quick", "--rounds", "2", "--calls", "1,2", "--zones", zone])
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith(zone + " ")]
    assert [r[1] for r in rows] == ["1", "2"], out
    assert out.count("round ") == 2 and "(the rule's)" in out, out           # quick, 1 thread: 2 ms
    with pytest.raises(SystemExit, match="not a zone on this machine"):
        bench.main(["--zones", "L9"])


def test_measure_bench_alternates_its_arms_and_judges_by_its_controls(capsys):
    """benchmarks/measure_bench.py --ab: the two plans alternate run by run, the changed field
    reaches the measurement of arm B only, both arms print their controls and verdicts; and the
    verdict says when a figure's control moved (its doctests, run here: benchmarks/ is not a
    test path)."""
    import doctest
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "measure_bench.py"
    spec = importlib.util.spec_from_file_location("measure_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert doctest.testmod(bench).failed == 0
    bench.main(["1", "--quick", "--threads", "1", "--ab", "peak_every_s=None"])
    out = capsys.readouterr().out
    runs = [line for line in out.splitlines() if line.startswith("run ")]
    assert [r.split(":")[0] for r in runs] == ["run 1A", "run 1B"], out
    assert "plan peak_every_s=None" in runs[1] and "plan peak_every_s" not in runs[0], runs
    assert out.count("control 'core' before each run") == 2 and out.count("==== arm") == 2, out
    assert out.count("<= 15%:") >= 2 * 2, out                 # the peaks at least, in each arm
    with pytest.raises(SystemExit, match="FIELD one of"):
        bench.parse_fields(["no_such_field=1"])

