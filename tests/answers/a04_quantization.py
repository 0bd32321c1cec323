"""Classic mistakes for notebook 4, "Quantization: not a free lunch" (see a01_hello_roofline.py for
the format). Q1's "compute-bound" matches no computable mistake: its hidden test gives the
question's own hint (label None)."""

MISTAKES = {
    "quant_q1_prediction": [
        (None, 'q1_prediction = "compute-bound"\n'
               'q1_reasoning = "Int4 weights make the step so small that the math becomes the limit."\n'),
    ],
    "quant_q2_prediction": [
        ("weights-only", "q2_int8_speedup = 2.0   # the bytes-per-element ratios\n"
                         "q2_int4_speedup = 4.0\n"),
        ("weights-only", "other = (KV + A) * 2\n"
                         "q2_int8_speedup = (W * 2 + other) / (W * 1 + other)\n"
                         "q2_int4_speedup = 4.0   # int4's bytes-per-element ratio\n"),
    ],
    "quant_q3_prediction": [
        ("other-phase", "q3_weight_only_speedup = 2.0\n"
                        "q3_w8a8_speedup = 2.0\n"
                        'q3_reasoning = "Half the weight bytes, so half the time to first token."\n'),
        ("w8a8-attention", "q3_weight_only_speedup = 1.0\n"
                           "q3_w8a8_speedup = 2.0\n"
                           'q3_reasoning = "Prefill is compute-bound and int8 math runs at twice the fp16 peak."\n'),
        ("other-phase", "q3_weight_only_speedup = 1.0\n"
                        "q3_w8a8_speedup = 1.93   # decode's W8A8 speedup, not prefill's\n"
                        'q3_reasoning = "W8A8 halves the weight bytes and doubles the peak."\n'),
    ],
    "quant_q4_answer": [
        ("gib-vs-gb", "room = 80e9 - 8_030_261_248 * 2        # the \"80 GB\" read as decimal\n"
                      "q4_max_batch = int(room // (8192 * 65_536))\n"),
        ("weights-not-subtracted", "q4_max_batch = int(81_920 * 2**20 // (8192 * 65_536))\n"),
        ("bytes-per-element", "room = 81_920 * 2**20 - 8_030_261_248 * 2\n"
                              "q4_max_batch = int(room // (8192 * 131_072))   # the KV cache at 2 bytes\n"),
    ],
    "quant_q5_prediction": [
        ("weights-per-sample", 'q5_prediction = "memory-bound"\n'
                               'q5_reasoning = "Decode is always memory-bound, whatever the weight format."\n'),
    ],
    "quant_q6_prediction": [
        ("other-roof", "q6_prediction = 4.0\n"
                         'q6_reasoning = "Int4 weights are four times smaller than fp16 ones."\n'),
        ("other-roof", "q6_prediction = 1.5\n"
                       'q6_reasoning = "The step moves about a third fewer bytes with int4 weights."\n'),
    ],
}

WRONG = {gid: cases[0][1] for gid, cases in MISTAKES.items()}
