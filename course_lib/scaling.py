"""Scaling out over several GPUs: pipeline parallelism beside ``serve``'s tensor parallelism.

Tensor parallelism (``serve(..., tp=N)``) splits every layer over N GPUs: each reads 1/N of the
weights per step and the layer's two AllReduces join them. Pipeline parallelism gives each of
``pp`` GPUs a contiguous 1/pp of the layers: one token still passes every layer, one stage
after another, so a batch's decode step takes one GPU's whole step (every weight read once,
now spread over pp GPUs) plus pp-1 point-to-point sends of its activations. Pipelining buys
throughput only with pp batches in flight, one per stage.

Each send pays one message latency, the same as an AllReduce's (``course_lib.topology``'s
``message_latency``: the bound's, or a named implementation's for an estimate), plus its bytes
over a pair's link. As in ``serve``, the bound (``allreduce=None``) lets the sends overlap the
stages' work (the larger of the two); an estimate adds them.

>>> from course_lib import Hardware, Models
>>> round(pipeline_decode_step(Models.Llama3_70B, Hardware.H100, 8) * 1e3, 1)     # ms, batch 1
41.7
"""
from __future__ import annotations

from .serving import serve
from .topology import message_latency, ring_link


def send_seconds(hardware, nbytes, allreduce=None) -> float:
    """One point-to-point send of `nbytes` to the next stage: one message's latency (as an
    AllReduce's over a pair: the bound's, or the named implementation's) plus bytes over one
    GPU's link share for a pair (``ring_link(hardware, 2)``)."""
    return message_latency(hardware, 2, allreduce) + nbytes / ring_link(hardware, 2)[1]


def pipeline_decode_step(model, hardware, pp: int, batch_size=1, prompt_tokens=2048, output_tokens=128,
                         allreduce=None) -> float:
    """Seconds of one decode step of `batch_size` sequences through `pp` pipeline stages: the
    stages' roofline steps one after another (together one GPU's step, ``serve(tp=1)``, whether or
    not the weights fit on one) and pp-1 sends of the batch's activations (fp16): the larger of
    the two for the bound (`allreduce` None), their sum for an estimate with a named
    implementation's latency."""
    one = serve(model, hardware, prompt_tokens=prompt_tokens, output_tokens=output_tokens,
                batch_size=batch_size)
    sends = (pp - 1) * send_seconds(hardware, batch_size * model.config.d_model * 2, allreduce) if pp > 1 else 0.0
    work = one.decode.latency_si
    return max(work, sends) if allreduce is None else work + sends
