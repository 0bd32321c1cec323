"""Scaling out over several GPUs: pipeline parallelism beside ``serve``'s tensor parallelism.

Tensor parallelism (``serve(..., tp=N)``) splits every layer over N GPUs: each reads 1/N of the
weights per step and the layer's two AllReduces join them. Pipeline parallelism gives each of
``pp`` GPUs a contiguous 1/pp of the layers: one token still passes every layer, one stage
after another, so a batch's decode step takes one GPU's whole step (every weight read once,
now spread over pp GPUs) plus pp-1 point-to-point sends of its activations. Pipelining buys
throughput only with pp batches in flight, one per stage.

>>> from course_lib import Hardware, Models
>>> round(pipeline_decode_step(Models.Llama3_70B, Hardware.H100, 8) * 1e3, 1)     # ms, batch 1
41.7
"""
from __future__ import annotations

from .serving import serve
from .topology import ring_link


def send_seconds(hardware, nbytes) -> float:
    """One point-to-point send of `nbytes` to the next stage: one hop's latency plus bytes over one
    GPU's link share for a pair (``ring_link(hardware, 2)``)."""
    return (hardware.link_latency_si or 0.0) + nbytes / ring_link(hardware, 2)[1]


def pipeline_decode_step(model, hardware, pp: int, batch_size=1, prompt_tokens=2048, output_tokens=128) -> float:
    """Seconds of one decode step of `batch_size` sequences through `pp` pipeline stages: the
    stages' roofline steps one after another (together one GPU's step, ``serve(tp=1)``, whether or
    not the weights fit on one) plus pp-1 sends of the batch's activations (fp16)."""
    one = serve(model, hardware, prompt_tokens=prompt_tokens, output_tokens=output_tokens,
                batch_size=batch_size)
    return one.decode.latency_si + (pp - 1) * send_seconds(hardware, batch_size * model.config.d_model * 2)
