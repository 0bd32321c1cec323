"""Decoder-only transformers built from their configuration (lessons 2-4).

Parameters, FLOPs and bytes are counted from the shapes, never typed in:

* a linear layer of K inputs and N outputs holds K·N weights (+N biases) and costs
  2·K·N FLOPs per token (2 FLOPs per multiply-accumulate);
* attention over a context of c tokens costs 4·n_heads·head_dim·c FLOPs per query token
  (scores Q·Kᵀ and the weighted sum of V), and reads the K and V of those c tokens;
* the KV cache stores K and V for every layer: 2·n_layers·n_kv_heads·head_dim elements per
  token. With grouped-query attention (n_kv_heads < n_heads) it shrinks by n_heads/n_kv_heads;
* K and V are written once, by the QKV projection, straight into the cache (in the cache's
  format); attention reads them. Q and the attention output are activations;
* with a sliding window of W tokens (Mistral-7B: 4096) a token attends to the last W tokens
  only, and the cache is a rolling buffer of W tokens per sequence;
* the token embedding is a lookup: a step reads one row per token, not the whole table.
  The output projection (LM head) is a full matmul; with tied embeddings it reuses the table.
* attention is fused (FlashAttention-style): the c×c score matrix never goes to memory.
* prefill computes logits for the last prompt token only (what a server needs).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ..precision import bytes_per_element
from .layers import FLOPS_PER_MAC, Layer, LayerTable


@dataclass(frozen=True)
class TransformerConfig:
    """Shape of a decoder-only transformer. `source` cites where the numbers come from."""

    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_ff: int
    vocab: int
    gated_mlp: bool = True          # SwiGLU: gate and up projections, then down
    tied_embeddings: bool = False   # LM head shares the embedding table
    experts: int = 1                # MoE: experts per layer (1 = dense MLP)
    top_k: int = 1                  # MoE: experts each token is routed to
    head_dim: int | None = None     # default d_model // n_heads
    norm: str = "rmsnorm"           # "rmsnorm" (1 weight per channel) or "layernorm" (2)
    bias: bool = False              # biases in linear layers (GPT-3)
    learned_positions: int = 0      # learned position embeddings (GPT-3: 2048)
    sliding_window: int | None = None  # attend to the last W tokens only (Mistral-7B: 4096)
    source: str = ""

    @property
    def hd(self) -> int:
        return self.head_dim or self.d_model // self.n_heads


class Transformer:
    """A decoder-only LLM. ``solve`` treats it as one decode step; ``serve`` runs both phases.

    >>> from course_lib import Models
    >>> m = Models.Llama3_8B
    >>> m.parameters
    8030261248
    >>> m.kv_bytes_per_token("fp16")      # 2 (K,V) · 32 layers · 8 KV heads · 128 · 2 B
    131072
    """

    kind = "transformer"
    sample = "sequence"

    def __init__(self, name: str, config: TransformerConfig, published_parameters: float | None = None):
        self.name = name
        self.config = config
        self.published_parameters = published_parameters

    def variant(self, name: str | None = None, **changes) -> "Transformer":
        """The same model with some config fields changed, e.g. full multi-head attention:

        >>> from course_lib import Models
        >>> mha = Models.Llama3_8B.variant(n_kv_heads=32)
        >>> mha.kv_bytes_per_token("fp16") // Models.Llama3_8B.kv_bytes_per_token("fp16")
        4
        """
        import dataclasses

        bad = set(changes) - {f.name for f in dataclasses.fields(TransformerConfig)}
        if bad:
            raise TypeError(f"unknown config field(s) {sorted(bad)}; valid: "
                            f"{[f.name for f in dataclasses.fields(TransformerConfig)]}")
        label = name or self.name + "(" + ", ".join(f"{k}={v}" for k, v in changes.items()) + ")"
        return Transformer(label, dataclasses.replace(self.config, **changes))

    # ---- sizes -------------------------------------------------------------------------
    def _linear(self, k: int, n: int) -> int:
        return k * n + (n if self.config.bias else 0)

    @functools.cached_property
    def _block_params(self) -> dict[str, int]:
        c = self.config
        hd = c.hd
        norm = (2 if c.norm == "layernorm" else 1) * c.d_model
        qkv = self._linear(c.d_model, (c.n_heads + 2 * c.n_kv_heads) * hd)
        o = self._linear(c.n_heads * hd, c.d_model)
        if c.gated_mlp:
            expert = self._linear(c.d_model, 2 * c.d_ff) + self._linear(c.d_ff, c.d_model)
        else:
            expert = self._linear(c.d_model, c.d_ff) + self._linear(c.d_ff, c.d_model)
        router = c.d_model * c.experts if c.experts > 1 else 0
        return {"norms": 2 * norm, "qkv": qkv, "o": o, "expert": expert, "router": router}

    @functools.cached_property
    def parameters(self) -> int:
        """Parameters stored (an int), embeddings and LM head included."""
        c = self.config
        b = self._block_params
        block = b["norms"] + b["qkv"] + b["o"] + b["router"] + c.experts * b["expert"]
        final_norm = (2 if c.norm == "layernorm" else 1) * c.d_model
        embed = c.vocab * c.d_model + c.learned_positions * c.d_model
        head = 0 if c.tied_embeddings else c.vocab * c.d_model
        return c.n_layers * block + final_norm + embed + head

    @functools.cached_property
    def active_parameters(self) -> int:
        """Parameters one token uses (MoE: only its top-k experts)."""
        c = self.config
        return self.parameters - c.n_layers * (c.experts - c.top_k) * self._block_params["expert"]

    def attended_tokens(self, context):
        """Tokens a query attends to (and the cache holds) at a context of `context` tokens:
        all of them, or the last ``sliding_window`` of them. Works on numpy arrays too."""
        w = self.config.sliding_window
        if w is None:
            return context
        import numpy as np

        out = np.minimum(context, w)
        return out if isinstance(out, np.ndarray) else type(context)(out)

    def kv_elements_per_token(self) -> int:
        c = self.config
        return 2 * c.n_layers * c.n_kv_heads * c.hd

    def kv_bytes_per_token(self, precision: str = "fp16"):
        """Bytes of KV cache one token occupies: 2 · n_layers · n_kv_heads · head_dim · bytes.

        An int when the result is whole (it is for every precision but int4/fp4 oddities).
        """
        v = self.kv_elements_per_token() * bytes_per_element(precision)
        return int(v) if float(v).is_integer() else v

    def weight_bytes(self, precision: str = "fp16") -> float:
        """Bytes to store all the weights at `precision`."""
        return self.parameters * bytes_per_element(precision)

    # ---- layer tables --------------------------------------------------------------------
    def _layers(self, tokens: int, context: float, prefill: bool) -> tuple[Layer, ...]:
        """Layers for one sequence pushing `tokens` tokens through the model.

        Decode: tokens = 1 and each attends over `context` cached tokens (itself included).
        Prefill: tokens = P and token i attends over i tokens (causal).
        """
        c = self.config
        d, hd, h, kvh, L = c.d_model, c.hd, c.n_heads, c.n_kv_heads, c.n_layers
        b = self._block_params
        norm_params = b["norms"] // 2
        kv_width = 2 * kvh * hd
        w = c.sliding_window
        if prefill:
            # Σ_{i=1..P} min(i, W) query-key pairs per head (token i attends to i tokens, causal)
            if w is None or tokens <= w:
                pairs = tokens * (tokens + 1) / 2
            else:
                pairs = w * (w + 1) / 2 + (tokens - w) * w
            kv_reads = tokens * kv_width           # fused attention reads each K,V once
        else:
            attended = self.attended_tokens(context)
            pairs = tokens * attended
            kv_reads = attended * kv_width
        q_out = h * hd
        layers = [
            Layer("embedding", "embedding", params=c.vocab * d + c.learned_positions * d,
                  weight_reads=0, gathered=tokens * d * (2 if c.learned_positions else 1),
                  activations=tokens * d),
        ]
        block = [
            Layer("attn_norm", "norm", flops=4 * d * tokens, params=norm_params,
                  activations=2 * d * tokens, count=L),
            # reads x, writes Q (an activation) and K, V (into the cache, written once)
            Layer("qkv_proj", "matmul",
                  flops=FLOPS_PER_MAC * (b["qkv"] - ((q_out + kv_width) if c.bias else 0)) * tokens,
                  params=b["qkv"], activations=(d + q_out) * tokens, kv=tokens * kv_width, count=L),
            # reads Q and the cached K, V; writes its output
            Layer("attention", "attention", flops=2 * FLOPS_PER_MAC * h * hd * pairs,
                  activations=2 * h * hd * tokens, kv=kv_reads, count=L),
            Layer("o_proj", "matmul", flops=FLOPS_PER_MAC * h * hd * d * tokens, params=b["o"],
                  activations=(h * hd + d) * tokens, count=L),
            Layer("attn_residual", "elementwise", flops=d * tokens, activations=3 * d * tokens, count=L),
            Layer("mlp_norm", "norm", flops=4 * d * tokens, params=norm_params,
                  activations=2 * d * tokens, count=L),
        ]
        up_width = (2 if c.gated_mlp else 1) * c.d_ff
        if c.experts > 1:
            block.append(Layer("router", "matmul", flops=FLOPS_PER_MAC * d * c.experts * tokens,
                               params=b["router"], activations=(d + c.experts) * tokens, count=L))
        k = c.top_k if c.experts > 1 else 1
        block += [
            Layer("mlp_up" if not c.gated_mlp else "mlp_gate_up", "matmul",
                  flops=FLOPS_PER_MAC * d * up_width * tokens * k,
                  params=c.experts * (b["expert"] - self._linear(c.d_ff, d)),
                  weight_reads=b["expert"] - self._linear(c.d_ff, d),
                  activations=(d + up_width) * tokens * k, count=L, experts=c.experts, top_k=k),
            Layer("mlp_act", "elementwise", flops=4 * c.d_ff * tokens * k,
                  activations=(up_width + c.d_ff) * tokens * k, count=L),
            Layer("mlp_down", "matmul", flops=FLOPS_PER_MAC * c.d_ff * d * tokens * k,
                  params=c.experts * self._linear(c.d_ff, d), weight_reads=self._linear(c.d_ff, d),
                  activations=(c.d_ff + d) * tokens * k, count=L, experts=c.experts, top_k=k),
            Layer("mlp_residual", "elementwise", flops=d * tokens, activations=3 * d * tokens, count=L),
        ]
        head_tokens = 1 if prefill else tokens
        layers += block + [
            Layer("final_norm", "norm", flops=4 * d * head_tokens, params=b["norms"] // 2,
                  activations=2 * d * head_tokens),
            Layer("lm_head", "matmul", flops=FLOPS_PER_MAC * d * c.vocab * head_tokens,
                  params=0 if c.tied_embeddings else c.vocab * d, weight_reads=c.vocab * d,
                  activations=(d + c.vocab) * head_tokens),
        ]
        return tuple(layers)

    @functools.lru_cache(maxsize=64)
    def decode_table(self, context: int = 1) -> LayerTable:
        """One decode step of one sequence whose cache holds `context` tokens (the new one included)."""
        return LayerTable(self._layers(1, context, prefill=False), tokens_per_sample=1)

    @functools.lru_cache(maxsize=64)
    def prefill_table(self, prompt_tokens: int) -> LayerTable:
        """Prefill of one sequence of `prompt_tokens` tokens."""
        return LayerTable(self._layers(prompt_tokens, prompt_tokens, prefill=True),
                          tokens_per_sample=prompt_tokens)

    def layer_table(self, context_tokens: int | None = None) -> LayerTable:
        """What ``solve`` uses: one decode step at a short context (1 token unless given)."""
        return self.decode_table(1 if context_tokens is None else int(context_tokens))

    @property
    def flops_per_sample(self) -> float:
        """FLOPs of one decode step for one sequence at context 1."""
        t = self.decode_table(1)
        return float((t.flops * t.count).sum())

    def __repr__(self):
        c = self.config
        moe = f", {c.experts} experts top-{c.top_k}" if c.experts > 1 else ""
        return (f"Transformer({self.name!r}, {self.parameters / 1e9:.2f}B params, "
                f"{c.n_layers} layers, d_model={c.d_model}, heads={c.n_heads}/{c.n_kv_heads} kv{moe})")
