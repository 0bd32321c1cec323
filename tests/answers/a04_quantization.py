"""Well-formed but wrong answers for solutions/04_quantization/quantization.ipynb.

Each entry replaces one autograded answer cell; a notebook filled with these must earn exactly
the form points and none of the correctness points.
"""

WRONG = {
    # decode with int4 weights is still memory-bound; "compute-bound" is the wrong regime
    "quant_q1_prediction": (
        'q1_prediction = "compute-bound"\n'
        'q1_reasoning = "Int4 weights make the step so small that the math becomes the limit."\n'
    ),
    # the naive bytes-per-element ratios, ignoring the KV cache and activations that stay fp16
    "quant_q2_answer": (
        "q2_int8_speedup = 2.0\n"
        "q2_int4_speedup = 4.0\n"
    ),
    # weight-only quantization does not speed up a compute-bound prefill
    "quant_q3_prediction": (
        "q3_weight_only_speedup = 2.0\n"
        "q3_w8a8_speedup = 2.0\n"
        'q3_reasoning = "Half the weight bytes, so half the time to first token."\n'
    ),
    # forgot to subtract the weights from the capacity
    "quant_q4_answer": "q4_max_batch = 149\n",
    # int8 weights at batch 192 cross into compute-bound
    "quant_q5_prediction": (
        'q5_prediction = "memory-bound"\n'
        'q5_reasoning = "Decode is always memory-bound, whatever the weight format."\n'
    ),
    # above the crossover batch the weight format buys nothing; 4x is the bytes ratio
    "quant_q6_prediction": (
        "q6_prediction = 4.0\n"
        'q6_reasoning = "Int4 weights are four times smaller than fp16 ones."\n'
    ),
}
