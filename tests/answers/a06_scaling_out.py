"""Classic mistakes for notebook 6, "Scaling out" (see a01_hello_roofline.py for the format)."""

MISTAKES = {
    "scale_q1_answer": [
        ("gib-vs-gb", 'q1_weights_gb = Models.Llama3_70B.parameters * 2 / 2**30\n'
                      ''),
        ("bytes-per-element", 'q1_weights_gb = Models.Llama3_70B.parameters / 1e9\n'
                              ''),
    ],
    "scale_q2_prediction": [
        ("no-comm-latency", 'q2_speedup = 2.0\n'
                            'q2_reasoning = "Decode is memory-bound and each GPU reads half the weights."\n'),
        ("other-implementation", 'q2_speedup = 1.54\n'
                                 'q2_reasoning = "Each AllReduce costs NCCL\'s ~28 us, so about 4.4 ms stays."\n'),
    ],
    "scale_q3_prediction": [
        ("other-phase", 'q3_decode = "bandwidth"\n'
                        'q3_prefill = "latency"\n'
                        'q3_reasoning = "Decode streams tokens over the link; prefill is one burst."\n'),
    ],
    "scale_q4_prediction": [
        ("no-comm-latency", 'q4_ratio = 0.571\n'
                            'q4_reasoning = "The switch moves N/(2(N-1)) = 0.57 of the bytes a ring does."\n'),
    ],
    "scale_q5_prediction": [
        ("no-comm-latency", 'q5_ratio = 0.125\n'
                            'q5_reasoning = "Tensor parallelism reads an eighth of the weights per GPU at once."\n'),
    ],
    "scale_q6_answer": [
        ("kv-split-past-heads", 'q6_kv_gb = 32 * 2176 * 327680 / 16 / 1e9\n'),
        ("gib-vs-gb", 'q6_kv_gb = 32 * 2176 * 327680 / 8 / 2**30\n'),
    ],
}

WRONG = {gid: cases[0][1] for gid, cases in MISTAKES.items()}
