"""Classic mistakes for notebook 5, "Your machine" (see a01_hello_roofline.py for the format).

The hidden tests grade against the machine that runs them (the grader's, or the one running the
tests), so every wrong answer below is wrong on any CPU: the regimes and ridges are far from the
line on every laptop, server or cloud CPU, and the cache levels are settled by the sizes the OS
reports. Where a mistake's answer depends on those sizes, the source computes it as the student
would from the printed sizes (with ``cache_level_of``, which the setup cell no longer imports: it
answers Q4, issue 45).
"""

MISTAKES = {
    "mach_q1_answer": [
        ("no-temporaries", "q1_bytes_per_element = 8 * 3          # x and y read, y written, as for a fused axpy\n"),
        ("bytes-per-element", "q1_bytes_per_element = 4 * (2 + 3)    # 4 bytes per element, as for fp32\n"),
        (None, "q1_bytes_per_element = 8 * (2 + 4)    # a fresh array for the sum as well as the temporary\n"),
    ],
    "mach_q2_answer": [
        ("bytes-per-element", "q2_dot_intensity = (2 * 2**23) / (4 * (2 * 2**23 + 1))      # 4 bytes per element\n"
                              "q2_matmul_intensity = (2 * 1024**3) / (4 * 3 * 1024**2)\n"),
        ("mac-as-1-flop", "q2_dot_intensity = 2**23 / (8 * (2 * 2**23 + 1))            # one FLOP per MAC\n"
                          "q2_matmul_intensity = 1024**3 / (8 * 3 * 1024**2)\n"),
        ("no-reuse", "q2_dot_intensity = (2 * 2**23) / (8 * (2 * 2**23 + 1))\n"
                     "q2_matmul_intensity = (2 * 1024**3) / (8 * 2 * 1024**3)       # two operands read per MAC\n"),
    ],
    "mach_q3_prediction": [
        ("no-reuse", 'q3_dot_regime = "memory-bound"\n'
                     'q3_matmul_regime = "memory-bound"\n'
                     'q3_reasoning = "The three matrices take 24 MiB, more than the caches, so the matmul waits on DRAM."\n'),
        (None, 'q3_dot_regime = "compute-bound"\n'
               'q3_matmul_regime = "compute-bound"\n'
               'q3_reasoning = "numpy hands both to an optimised BLAS, which keeps the floating-point units busy."\n'),
    ],
    "mach_q4_prediction": [
        ("data-in-dram", 'q4_small_level = "DRAM"\n'
                         'q4_large_level = "DRAM"\n'
                         'q4_reasoning = "Both arrays are allocated in main memory, so that is where the kernel reads them."\n'),
        ("unit-prefix", 'from course_lib.measure import cache_level_of\n'
                        'q4_small_level = "L1"\n'
                        'q4_large_level = cache_level_of(2**20)    # "1 GiB" compared with the caches as 1 MiB\n'
                        'q4_reasoning = "16 KiB fits in L1; 1 GiB, next to the cache sizes printed in MiB, fits a cache too."\n'),
    ],
    "mach_q6_prediction": [
        ("inverted-ratio", 'q6_higher_ridge = "this machine"\n'
                           'q6_reasoning = "The A100 has so much more bandwidth that it needs fewer FLOPs per byte than a CPU."\n'),
    ],
}

WRONG = {gid: cases[0][1] for gid, cases in MISTAKES.items()}
