"""Classic mistakes for notebook 7, "Training on the roofline" (see a01_hello_roofline.py for the format)."""

MISTAKES = {
    "train_q1_answer": [
        ("forward-only", 'q1_step_tflop = Models.ResNet50.flops_per_sample * 256 / 1e12\n'),
        ("backward-as-forward", 'q1_step_tflop = 2 * Models.ResNet50.flops_per_sample * 256 / 1e12\n'),
    ],
    "train_q2_answer": [
        ("no-optimizer-state", 'q2_params_billion = Hardware.A100.memory_capacity_si / 4 / 1e9\n'),
        ("gib-vs-gb", 'q2_params_billion = 80e9 / 16 / 1e9\n'),
    ],
    "train_q3_prediction": [
        ("bandwidth-ratio", 'q3_ratio = 1.73\n'
                            'q3_reasoning = "Training moves activations both ways: the bandwidth ratio 1555 / 900."\n'),
    ],
    "train_q4_prediction": [
        ("no-gradient-allreduce", 'q4_speedup = 8.0\n'
                                  'q4_reasoning = "Each GPU gets an eighth of the batch, so the step is 8x faster."\n'),
    ],
    "train_q5_answer": [
        ("forward-only", 'q5_hours = 2 * Models.Llama3_8B.parameters * 1e12 / (256 * 989.4e12) / 3600\n'),
        ("mac-as-1-flop", 'q5_hours = 3 * Models.Llama3_8B.parameters * 1e12 / (256 * 989.4e12) / 3600\n'),
    ],
}

WRONG = {gid: cases[0][1] for gid, cases in MISTAKES.items()}
