"""Classic mistakes for notebook 1, "Hello, roofline", as a student would type them.

MISTAKES maps each answer cell's grade_id to a list of (label, source): `label` is the
misconception (a key of course_lib.exercises.misconceptions.MISCONCEPTIONS) that the question's hidden
test must name for that answer, or None where the answer matches no listed mistake and the
question's own hint must be given. Every source is well-formed (its form test passes) and
wrong. The student walk-through test (tests/test_walkthrough.py) runs each through the real
hidden tests; the grading round trip (tests/test_grading_roundtrip.py) puts the first of each,
WRONG, into a whole notebook.
"""

MISTAKES = {
    "hello_q1_answer": [
        ("bytes-per-element", "q1_intensity = (2 * 1_000_000) / (2 * 1_000_000 + 1)   # 1 byte per element\n"),
        ("mac-as-1-flop", "q1_intensity = 1_000_000 / (2 * (2 * 1_000_000 + 1))   # one FLOP per MAC\n"),
    ],
    "hello_q2_answer": [
        ("mac-as-1-flop", "q2_ridge = 312e12 / 2 / 2.039e12\n"),
        ("sparse-peak", "q2_ridge = 624e12 / 2.039e12\n"),
        ("unit-prefix", "q2_ridge = 312e12 / 2.039e9\n"),
        ("inverted-ratio", "q2_ridge = 2.039e12 / 312e12\n"),
    ],
    "hello_q3_prediction": [
        ("mac-as-1-flop", 'q3_prediction = 128\n'
                          'q3_reasoning = "Counting one FLOP per multiply-accumulate the ridge is about 77, and 128 rows clear it."\n'),
        ("sparse-peak", 'q3_prediction = 1024\n'
                        'q3_reasoning = "With the 624 TFLOP/s headline the ridge is about 306, and only 1024 rows clear it."\n'),
    ],
    "hello_q4_prediction": [
        ("weights-only", 'q4_prediction = "compute-bound"\n'
                         'q4_reasoning = "F divided by the weight bytes is above the ridge point of the A100."\n'),
    ],
    "hello_q5_answer": [
        ("weights-only", "q5_intensity = F / (2 * params)\n"
                         "q5_latency_us = 2 * params / 2.039e12 * 1e6\n"),
        ("mac-as-1-flop", "q5_intensity = (F / 2) / (2 * params + act_bytes)\n"
                          "q5_latency_us = (2 * params + act_bytes) / 2.039e12 * 1e6\n"),
        ("other-roof", "q5_intensity = F / (2 * params + act_bytes)\n"
                       "q5_latency_us = F / 312e12 * 1e6                  # the compute time\n"),
        ("unit-prefix", "q5_intensity = F / (2 * params + act_bytes)\n"
                        "q5_latency_us = (2 * params + act_bytes) / 2.039e12 * 1e3   # milliseconds\n"),
    ],
    "hello_q6_prediction": [
        ("weights-per-sample", 'q6_limit = F / (2 * params + act_bytes)\n'
                               'q6_reasoning = "Every image reads the weights and its activations, so the intensity stays put."\n'),
        ("mac-as-1-flop", 'q6_limit = (F / 2) / act_bytes\n'
                          'q6_reasoning = "The weights are shared, so only the activations count per image."\n'),
    ],
    "hello_q7_prediction": [
        ("weights-only", 'q7_prediction = "compute-bound"\n'
                         'q7_reasoning = "Batch 1024 amortises the weights a thousand times, far past any ridge point."\n'),
    ],
    "hello_q8_prediction": [
        ("flops-not-bytes", 'q8_prediction = "conv1"\n'
                            'q8_reasoning = "It does the most FLOPs of the four layers, so it must be compute-bound."\n'),
    ],
}

WRONG = {gid: cases[0][1] for gid, cases in MISTAKES.items()}
