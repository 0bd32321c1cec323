"""Well-formed but wrong answers for solutions/05_your_machine/your_machine.ipynb.

The grading round trip (tests/test_grading_roundtrip.py) puts each source below into the answer
cell of the same grade_id in the student release: every form test must pass and every hidden
correctness test must fail, on whatever machine runs the grading. Each answer is a classic
mistake, not noise.
"""

WRONG = {
    # forgets the temporary: x and y read, y written, as for a fused axpy
    "mach_q1_answer": "q1_bytes_per_element = 8 * 3\n",
    # 4 bytes per element (fp32) instead of 8 (fp64): both intensities twice too large
    "mach_q2_answer": (
        "q2_dot_intensity = (2 * 2**23) / (4 * (2 * 2**23 + 1))\n"
        "q2_matmul_intensity = (2 * 1024**3) / (4 * 3 * 1024**2)\n"
    ),
    # "the matrices do not fit in the cache, so the matmul waits on memory"
    "mach_q3_prediction": (
        'q3_dot_regime = "memory-bound"\n'
        'q3_matmul_regime = "memory-bound"\n'
        'q3_reasoning = "The three matrices take 24 MiB, more than the caches, so the matmul waits on DRAM."\n'
    ),
    # "a server's last-level cache can hold a gigabyte"
    "mach_q4_prediction": (
        'q4_small_level = "L1"\n'
        'q4_large_level = "L3"\n'
        'q4_reasoning = "Big server CPUs have huge last-level caches, so 1 GiB stays in L3."\n'
    ),
    # more bandwidth taken for a higher ridge: the ridge is peak / bandwidth
    "mach_q6_prediction": (
        'q6_higher_ridge = "this machine"\n'
        'q6_reasoning = "The A100 has so much more bandwidth that it needs fewer FLOPs per byte than a CPU."\n'
    ),
}
