"""Classic mistakes for notebook 2, "The memory wall" (see a01_hello_roofline.py for the format)."""

MISTAKES = {
    "wall_q1_prediction": [
        ("peak-ratio", 'q1_speedup = 989.4 / 312\n'
                       'q1_reasoning = "The H100 has about three times the FLOP/s, so it decodes three times faster."\n'),
        ("inverted-ratio", 'q1_speedup = 2.039 / 3.35\n'
                           'q1_reasoning = "Decode is memory-bound, so the speedup is the bandwidth ratio."\n'),
    ],
    "wall_q2_answer": [
        ("embedding-streamed", 'q2_bytes_gb = 8_030_261_248 * 2 / 1e9\n'
                               'q2_ms = q2_bytes_gb * 1e9 / 2.039e12 * 1e3\n'),
        ("gib-vs-gb", 'streamed = (8_030_261_248 - 128_256 * 4_096) * 2\n'
                      'q2_bytes_gb = streamed / 2**30\n'
                      'q2_ms = streamed / 2.039e12 * 1e3\n'),
        ("bytes-per-element", 'streamed = 8_030_261_248 - 128_256 * 4_096   # 1 byte per weight\n'
                              'q2_bytes_gb = streamed / 1e9\n'
                              'q2_ms = streamed * 2 / 2.039e12 * 1e3\n'),
        ("unit-prefix", 'streamed = (8_030_261_248 - 128_256 * 4_096) * 2\n'
                        'q2_bytes_gb = streamed / 1e9\n'
                        'q2_ms = streamed / 2.039e12          # seconds, not milliseconds\n'),
    ],
    "wall_q3_answer": [
        ("mac-as-1-flop", 'q3_crossover_a100 = 312e12 / 2.039e12 / 2   # the peak read as MAC/s\n'
                          'q3_crossover_h100 = 989.4e12 / 3.35e12 / 2\n'),
    ],
    "wall_q4_prediction": [
        ("flops-not-bytes", 'q4_prediction = "below"\n'
                            'q4_reasoning = "Activations add FLOPs for every sequence, so compute catches up sooner."\n'),
    ],
    "wall_q5_prediction": [
        ("ridge-always-rises", 'q5_prediction = "higher"\n'
                               'q5_reasoning = "Every new generation has a higher ridge point than the one before."\n'),
    ],
    "wall_q6_answer": [
        ("sustained-bandwidth", 'q6_fraction = 104.9 * 13.279e9 / 1.7e12   # the README\'s empirical peak\n'),
        ("gib-vs-gb", 'q6_fraction = 104.9 * 13.279 * 2**30 / 2.039e12   # the GB read as GiB\n'),
    ],
    "wall_q7_prediction": [
        ("peak-ratio", 'q7_chatbot = "H100"\n'
                       'q7_offline = "H100"\n'
                       'q7_reasoning = "The H100 has more FLOP/s per watt, so it wins both workloads."\n'),
        ("bandwidth-ratio", 'q7_chatbot = "A100"\n'
                            'q7_offline = "A100"\n'
                            'q7_reasoning = "The A100 has more bandwidth per watt, and decode is about bandwidth."\n'),
    ],
}

WRONG = {gid: cases[0][1] for gid, cases in MISTAKES.items()}
