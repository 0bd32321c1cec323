"""``python -m course_lib.measure``: measure this machine's roofline and print the report.

    python -m course_lib.measure                  # the CPU, full measurement (a few seconds)
    python -m course_lib.measure --quick          # fewer sizes and repeats (also where
                                                  # $COURSE_LIB_MEASURE=quick, as in the notebooks)
    python -m course_lib.measure --gpu            # a CUDA GPU through PyTorch, if there is one
    python -m course_lib.measure --plot out       # also write out_roofline.png and out_sweep.png
"""
from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m course_lib.measure",
                                 description="Measure the empirical roofline of this machine.")
    ap.add_argument("--quick", action="store_const", const=True, default=None,
                    help="fewer sizes and repeats (without it: quick where $COURSE_LIB_MEASURE=quick or "
                         "under nbgrader, as in the notebooks)")
    ap.add_argument("--threads", type=int, default=None, help="threads for BLAS and the sweep (CPU)")
    ap.add_argument("--gpu", action="store_true", help="measure CUDA device --device with PyTorch")
    ap.add_argument("--device", type=int, default=0, help="CUDA device index (with --gpu)")
    ap.add_argument("--sweep", action="store_true", help="also print the sweep point by point")
    ap.add_argument("--plot", metavar="PREFIX", help="write PREFIX_roofline.png and PREFIX_sweep.png")
    ap.add_argument("--progress", action="store_true", help="print each step as it is measured")
    args = ap.parse_args(argv)
    say = print if args.progress else None
    from .cpu import want_quick

    if args.gpu:
        from .gpu import gpu_available, measure_gpu

        ok, why = gpu_available(args.device)
        if not ok:
            print(f"no GPU measurement: {why}.", file=sys.stderr)
            return 2
        hw = measure_gpu(device=args.device, quick=want_quick(args.quick), progress=say)
        precision = "fp16"
    else:
        from .cpu import measure_cpu

        hw = measure_cpu(quick=args.quick, threads=args.threads, progress=say)
        precision = "fp64"
    print(hw.report())
    if args.sweep:
        print()
        print(hw.sweep_table())
    print()
    print(hw.describe())
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        fig, _ = hw.plot(precision=precision)
        fig.savefig(f"{args.plot}_roofline.png", dpi=110, bbox_inches="tight")
        fig, _ = hw.plot_sweep()
        fig.savefig(f"{args.plot}_sweep.png", dpi=110, bbox_inches="tight")
        print(f"\nwrote {args.plot}_roofline.png and {args.plot}_sweep.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
