"""Classic mistakes for notebook 3, "Two phases, one request" (see a01_hello_roofline.py for the format)."""

MISTAKES = {
    "phases_q1_prediction": [
        ("other-phase", 'q1_prefill = "memory-bound"\n'
                        'q1_decode = "compute-bound"\n'
                        'q1_reasoning = "Prefill reads a long prompt from memory, decode does the math for each token."\n'),
    ],
    "phases_q2_prediction": [
        ("attention-quadratic", 'q2_prediction = 64.0\n'
                                'q2_reasoning = "Attention is quadratic in the prompt, so 8x the prompt is 64x the TTFT."\n'),
        ("attention-ignored", 'q2_prediction = 8.0\n'
                              'q2_reasoning = "Prefill is compute-bound and its FLOPs are linear in the prompt."\n'),
    ],
    "phases_q3_prediction": [
        ("weights-per-sample", 'q3_prediction = 64\n'
                               'q3_reasoning = "Sixty-four sequences mean sixty-four times the work in every step."\n'),
        ("no-kv-cache", 'q3_prediction = 1.0\n'
                        'q3_reasoning = "The weights are read once per step whatever the batch, so TPOT does not move."\n'),
    ],
    "phases_q4_answer": [
        ("query-heads", 'q4_kv_per_token = 2 * 32 * 32 * 128 * 2     # n_heads instead of n_kv_heads\n'
                        'q4_kv_batch = 32 * 4096 * q4_kv_per_token / 1e9\n'),
        ("k-or-v-only", 'q4_kv_per_token = 32 * 8 * 128 * 2\n'
                        'q4_kv_batch = 32 * 4096 * q4_kv_per_token / 1e9\n'),
        ("gib-vs-gb", 'q4_kv_per_token = 2 * 32 * 8 * 128 * 2\n'
                      'q4_kv_batch = 32 * 4096 * q4_kv_per_token / 2**30   # 2^34 B, read as "16 GB"\n'),
    ],
    "phases_q5_answer": [
        ("gib-vs-gb", 'q5_capacity_gb = 80                              # the datasheet\'s "80 GB" taken as decimal\n'
                      'q5_max_batch = int((80e9 - 8_030_261_248 * 2) // (8192 * 131072))\n'),
        ("weights-not-subtracted", 'q5_capacity_gb = 81_559 * 2**20 / 1e9\n'
                                   'q5_max_batch = int(81_559 * 2**20 // (8192 * 131072))\n'),
    ],
    "phases_q6_prediction": [
        ("query-heads", 'q6_prediction = 1.0\n'
                        'q6_reasoning = "Both models have the same layers and query heads, so the same cache fits."\n'),
        ("weights-not-subtracted", 'q6_prediction = 4.0\n'
                                   'q6_reasoning = "MHA stores 4x the KV bytes per token, so a quarter of the tokens fit."\n'),
    ],
    "phases_q7_prediction": [
        ("token-cost", 'q7_chatbot = "decode"\n'
                       'q7_summarizer = "prefill"\n'
                       'q7_classifier = "prefill"\n'
                       'q7_reasoning = "The phase with more tokens to process takes longer end to end."\n'),
    ],
    "phases_q8_prediction": [
        ("weights-per-sample", 'q8_short = "memory-bound"\n'
                               'q8_long = "compute-bound"\n'
                               'q8_reasoning = "Decode is memory-bound, except that long contexts add attention FLOPs."\n'),
        ("no-kv-cache", 'q8_short = "compute-bound"\n'
                        'q8_long = "compute-bound"\n'
                        'q8_reasoning = "Batch 1024 puts the intensity of the weight reads far above the ridge."\n'),
    ],
}

WRONG = {gid: cases[0][1] for gid, cases in MISTAKES.items()}
