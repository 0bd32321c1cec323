"""Well-formed but wrong answers for notebook 1, "Hello, roofline".

The grading round trip (tests/test_grading_roundtrip.py) puts each source below into the
answer cell of the same grade_id in the student release: every form test must pass and every
hidden correctness test must fail. Each answer is a classic mistake, not noise.
"""

WRONG = {
    # 1 byte per element instead of 2: off by a factor of 2
    "hello_q1_answer": "q1_intensity = (2 * 1_000_000) / (2 * 1_000_000 + 1)\n",
    # 1 MAC = 1 FLOP against a peak that counts 2 FLOPs per MAC
    "hello_q2_answer": "q2_ridge = 312e12 / 2 / 2.039e12\n",
    # one size too early: 128 is still below the ridge
    "hello_q3_prediction": (
        'q3_prediction = 128\n'
        'q3_reasoning = "At 128 rows the intensity is close to 128 FLOP/byte, surely enough."\n'
    ),
    # weights-only intensity is just above the ridge, so "compute-bound"
    "hello_q4_prediction": (
        'q4_prediction = "compute-bound"\n'
        'q4_reasoning = "F divided by the weight bytes is above the ridge point of the A100."\n'
    ),
    # forgets the activations: weights-only bytes, and the compute time as the latency
    "hello_q5_answer": (
        "q5_intensity = F / (2 * params)\n"
        "q5_latency_us = F / 312e12 * 1e6\n"
    ),
    # batching "always" makes a model compute-bound
    "hello_q6_prediction": (
        'q6_prediction = "compute-bound"\n'
        'q6_reasoning = "A big batch amortises the weights, so the intensity grows without limit."\n'
    ),
    # an older chip "must" be even more memory-bound
    "hello_q7_prediction": (
        'q7_prediction = "memory-bound"\n'
        'q7_reasoning = "The V100 has less than half the bandwidth of the A100, so it is memory-bound."\n'
    ),
    # the layer with the largest FLOPs, ignoring its bytes
    "hello_q8_prediction": (
        'q8_prediction = "conv1"\n'
        'q8_reasoning = "It does the most FLOPs of the four layers, so it must be compute-bound."\n'
    ),
}
