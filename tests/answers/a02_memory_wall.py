"""Well-formed but wrong answers for notebook 02_memory_wall (memory_wall.ipynb).

Each value is the source of one autograded answer cell. It passes the visible form test and
fails the hidden correctness test: the grading round trip must give exactly the form points.
"""

WRONG = {
    # the FLOP ratio instead of the bandwidth ratio
    "wall_q1_prediction": (
        'q1_speedup = 989.4 / 312\n'
        'q1_reasoning = "The H100 has about three times the FLOP/s, so it decodes three times faster."\n'
    ),
    # parameters x 2 B: the gathered embedding table counted as streamed (about 7% too much)
    "wall_q2_answer": (
        'q2_bytes_gb = 8_030_261_248 * 2 / 1e9\n'
        'q2_ms = q2_bytes_gb * 1e9 / 2.039e12 * 1e3\n'
    ),
    # 1 MAC counted as 1 FLOP: intensity taken as b/2, so the estimates are off by a factor of 2
    "wall_q3_answer": (
        'q3_crossover_a100 = 312e12 / 2.039e12 / 2\n'
        'q3_crossover_h100 = 989.4e12 / 3.35e12 / 2\n'
    ),
    "wall_q4_prediction": (
        'q4_prediction = "below"\n'
        'q4_reasoning = "Activations add FLOPs for every sequence, so compute catches up sooner."\n'
    ),
    # the "ridge rises every generation" myth
    "wall_q5_prediction": (
        'q5_prediction = "higher"\n'
        'q5_reasoning = "Every new generation has a higher ridge point than the one before."\n'
    ),
    # fraction of the ~1700 GB/s empirical peak instead of the 2039 GB/s datasheet figure
    "wall_q6_answer": (
        'q6_fraction = 104.9 * 13.225e9 / 1.7e12\n'
    ),
    # newer is better for both: ignores the regime
    "wall_q7_prediction": (
        'q7_chatbot = "H100"\n'
        'q7_offline = "A100"\n'
        'q7_reasoning = "The H100 is faster per token; the A100 draws less power for bulk work."\n'
    ),
}
