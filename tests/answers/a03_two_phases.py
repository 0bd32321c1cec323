"""Well-formed but wrong answers for notebook 03_two_phases (two_phases.ipynb).

Each value is the source of one autograded answer cell. It passes the visible form test and
fails the hidden correctness test: the grading round trip must give exactly the form points.
"""

WRONG = {
    # the two regimes swapped
    "phases_q1_prediction": (
        'q1_prefill = "memory-bound"\n'
        'q1_decode = "compute-bound"\n'
        'q1_reasoning = "Prefill reads a long prompt from memory, decode does the math for each token."\n'
    ),
    # attention taken as the whole cost: quadratic in the prompt
    "phases_q2_prediction": (
        'q2_prediction = 4.0\n'
        'q2_reasoning = "Attention is quadratic in the prompt, so doubling the prompt quadruples TTFT."\n'
    ),
    # decode treated as if each sequence paid for its own weight reads
    "phases_q3_prediction": (
        'q3_prediction = 64\n'
        'q3_reasoning = "Sixty-four sequences mean sixty-four times the work in every step."\n'
    ),
    # n_heads (32) used instead of n_kv_heads (8): the MHA size, 4x too much
    "phases_q4_answer": (
        'q4_kv_per_token = 2 * 32 * 32 * 128 * 2\n'
        'q4_kv_batch = 32 * 4096 * q4_kv_per_token / 1e9\n'
    ),
    # 80 GB taken as the room for the cache, weights forgotten, and GiB instead of GB
    "phases_q5_answer": (
        'q5_max_batch = 80 * 2**30 // (8192 * 131072 * 2)\n'
    ),
    # "attention variant does not matter for memory"
    "phases_q6_prediction": (
        'q6_prediction = 1.0\n'
        'q6_reasoning = "Both models have the same number of layers and query heads, so the same batch fits."\n'
    ),
    # the intuitive but wrong reading: long prompt means prefill dominates, and vice versa
    "phases_q7_prediction": (
        'q7_chatbot = "prefill"\n'
        'q7_summarizer = "prefill"\n'
        'q7_classifier = "decode"\n'
        'q7_reasoning = "The phase with more tokens to process takes longer end to end."\n'
    ),
    # "decode is always memory-bound" and "bigger context means more FLOPs, so compute-bound"
    "phases_q8_prediction": (
        'q8_short = "memory-bound"\n'
        'q8_long = "compute-bound"\n'
        'q8_reasoning = "Decode is memory-bound, except that long contexts add attention FLOPs."\n'
    ),
}
