"""Speed of course_lib next to mlsysim 0.3.0 (the package the seed tutorials use), in one run.

mlsysim is not a dependency of the course. Install it in a separate interpreter and pass that
interpreter's path:

    python3 -m venv /tmp/mls && /tmp/mls/bin/pip install mlsysim==0.3.0
    .venv/bin/python benchmarks/compare_mlsysim.py --mlsysim-python /tmp/mls/bin/python

Prints fresh-process import time and the median time of one ResNet-50/A100/batch-8 solve for
each package, and the ratios. Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import subprocess
import sys

IMPORT = "import time; t=time.perf_counter(); import {mod}; print(time.perf_counter()-t)"
SOLVE = {
    "course_lib": ("from course_lib import solve, Models, Hardware\n"
                   "f = lambda: solve(Models.ResNet50, Hardware.A100, batch_size=8, precision='fp16')"),
    "mlsysim": ("import mlsysim\nm, hw = mlsysim.Models.Vision.ResNet50, mlsysim.Hardware.Cloud.A100\n"
                "f = lambda: mlsysim.Engine.solve(model=m, hardware=hw, batch_size=8, precision='fp16')"),
}
TIMED = ("\nimport statistics, time\nf()\nruns = []\nfor _ in range(5):\n    t = time.perf_counter()\n"
         "    for _ in range({n}): f()\n    runs.append((time.perf_counter() - t) / {n})\n"
         "print(statistics.median(runs))")


def _run(python, code):
    return float(subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout)


def measure(python, mod, n):
    imports = sorted(_run(python, IMPORT.format(mod=mod)) for _ in range(3))
    return imports[1], _run(python, SOLVE[mod] + TIMED.format(n=n))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mlsysim-python", required=True, help="interpreter with mlsysim 0.3.0 installed")
    a = ap.parse_args()
    ours = measure(sys.executable, "course_lib", 2000)
    theirs = measure(a.mlsysim_python, "mlsysim", 100)
    print(f"{'':12s} {'import (fresh process)':>24s} {'one solve (median)':>20s}")
    print(f"{'course_lib':12s} {ours[0]:>22.3f} s {ours[1] * 1e6:>17.1f} µs")
    print(f"{'mlsysim':12s} {theirs[0]:>22.3f} s {theirs[1] * 1e6:>17.1f} µs")
    print(f"{'ratio':12s} {theirs[0] / ours[0]:>23.1f}x {theirs[1] / ours[1]:>18.1f}x")


if __name__ == "__main__":
    main()
