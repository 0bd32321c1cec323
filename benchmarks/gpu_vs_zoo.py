"""A real GPU against its zoo entry: the roofline must never be slower than a measurement.

    python benchmarks/gpu_vs_zoo.py               # the chip is read from the device's name
    python benchmarks/gpu_vs_zoo.py --chip H100 --quick

Runs ``measure_gpu`` (lesson 5's measurement, through PyTorch) on CUDA device 0 and prints, for
the zoo entry of that chip:

* each matmul peak measured against the datasheet's dense peak (measured / datasheet; above 1
  would mean the zoo's ceiling is too low);
* the measured HBM plateau against the datasheet bandwidth;
* the memory PyTorch reports against the zoo's capacity (``nvidia-smi``'s memory.total);
* every timed kernel against ``solve(kernel, chip)``, the zoo's pure roofline at the kernel's
  precision (each run carries the course_lib kernel it was charged as): the measured time
  divided by the roofline time (below 1 would mean the roofline is slower than the hardware; a
  kernel whose arrays sit in L2 may legitimately beat the HBM roofline and is labelled so).

It asserts nothing and needs a GPU and PyTorch; without them it says why and exits 2.
"""
from __future__ import annotations

import argparse
import sys

# device-name fragments to zoo keys, most specific first
NAMES = (("H100 PCIe", "H100_PCIe"), ("H100", "H100"), ("H200", "H200"), ("B200", "B200"),
         ("A100-SXM4-40GB", "A100_40GB"), ("A100", "A100"), ("V100", "V100"), ("L4", "L4"),
         ("T4", "T4"), ("MI300X", "MI300X"))


def chip_for(device_name: str) -> str | None:
    """The zoo key a CUDA device name stands for, or None."""
    for fragment, key in NAMES:
        if fragment in device_name:
            return key
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", help="zoo key (default: from the device's name)")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)

    from course_lib import Hardware, solve
    from course_lib.measure.gpu import gpu_available, measure_gpu

    ok, name = gpu_available()
    if not ok:
        print(f"no GPU measurement: {name}.", file=sys.stderr)
        return 2
    key = args.chip or chip_for(name)
    if key is None:
        print(f"{name!r} is not in the zoo's name table; pass --chip KEY", file=sys.stderr)
        return 2
    chip = Hardware.get(key)
    hw = measure_gpu(quick=args.quick, progress=print)
    print()
    print(hw.report())
    print(f"\n{name} against the zoo's {chip.name} ({key})\n")

    print(f"{'figure':34s} {'measured':>14s} {'zoo':>14s} {'ratio':>7s}")
    worst = []
    for p in hw.precisions:
        if p in chip.precisions:
            m, z = hw.peak_flops_si(p) / 1e12, chip.peak_flops_si(p) / 1e12
            print(f"{'peak ' + p + ' (TFLOP/s)':34s} {m:14.1f} {z:14.1f} {m / z:7.3f}")
            worst.append((m / z, f"peak {p}"))
        else:
            print(f"{'peak ' + p + ' (TFLOP/s)':34s} {hw.peak_flops_si(p) / 1e12:14.1f} {'(not in zoo)':>14s}")
    dram = hw.levels.get("DRAM")
    m, z = hw.memory_bandwidth_si / 1e9, chip.memory_bandwidth_si / 1e9
    label = "HBM plateau (GB/s)" if dram is not None and dram.resolved else "largest sets (GB/s)"
    print(f"{label:34s} {m:14.1f} {z:14.1f} {m / z:7.3f}")
    worst.append((m / z, "memory bandwidth"))
    if chip.memory_capacity_si:
        m, z = hw.memory_capacity_si / 2**20, chip.memory_capacity_si / 2**20
        print(f"{'capacity (MiB)':34s} {m:14.0f} {z:14.0f} {m / z:7.4f}")

    print(f"\n{'kernel':34s} {'measured s':>12s} {'roofline s':>12s} {'meas/roof':>9s}  where")
    below = []
    for run in hw.runs.values():
        if run.model is None or run.precision not in chip.precisions:
            continue
        bound = float(solve(run.model, chip, precision=run.precision).latency_si)
        ratio = run.latency_si / bound
        where = run.level
        if ratio < 1:
            where += " (beats the HBM roofline: in L2)" if run.level == "L2" else " ROOFLINE SLOWER THAN MEASURED"
            if run.level != "L2":
                below.append(run.name)
        print(f"{run.name:34s} {run.latency_si:12.3e} {bound:12.3e} {ratio:9.2f}  {where}")
    print()
    over = [w for r, w in worst if r > 1]
    print("zoo ceilings above every measurement: " + ("yes" if not over else "NO, measured above: " + ", ".join(over)))
    print("roofline never slower than a measured kernel: " + ("yes" if not below else "NO: " + ", ".join(below)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
