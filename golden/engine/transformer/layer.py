"""The integer transformer encoder layer (BERT post-LN, issue 55) in the engine's number format, bit-exact.

Contract (every op's integer rule is in ``pezo.golden.engine.transformer.ops``; this module wires them):

* **Input**: x int8 [B, T, d] at exponent ``e.x`` (the host's layer-5 token states), mask [B, T] (1 = a real
  token, 0 = padding), T <= ``tokens`` (longer texts are truncated on the host, see ``pezo.golden.zo.int_encoder``).
* **Dense** (the six projections Q, K, V, attention output, FFN in, FFN out): the engine's
  ``acc = b + sum x w`` (int8 x int8 -> exact int32, bias int32 at e_x + e_w), then where the result is int8
  ``sat(round_shift(acc, s), -127, 127)`` with s = e_out - e_x - e_w (``pezo.golden.engine.int8.requantize``).
* **Attention**, per head h of d_head = d / heads lanes (head h = lanes h d_head .. (h + 1) d_head - 1 of Q, K,
  V): scores acc = Q_h K_h^T (int32 at e_q + e_k); the 1/sqrt(d_head) scale = 2^-p * c with
  p = floor(log2(d_head) / 2) a shift here and c = 2^p / sqrt(d_head) in (2^-1/2, 1] folded into W_q and b_q by
  the quantiser; s = sat(round_shift(acc, e.score + p - e_q - e_k), +-32 767) (int16 at ``e.score``); the integer
  softmax over the real keys (P int8 at -7); context = sat(round_shift(P V_h, 7), -127, 127) (int8 at e_v).
* **Attention output + residual + LayerNorm 1**: acc_o (int32 at e_c + e_wo, e_c = e_v) + x, aligned to the
  smaller exponent (``ops.residual_add``), then ``ops.int_layer_norm`` -> int8 at ``e.attn``.
* **FFN**: h = dense(attn, W1) int8 at ``e.hidden``; g = the GELU table (int8 at ``e.gelu``);
  acc_2 = b2 + g W2^T (int32 at e.gelu + e.w2) + attn, aligned; LayerNorm 2 -> int8 at ``e.out``.
* **Pooling and head**: ``ops.mean_pool`` over the real tokens with shift e.out - e.pool (int8 at ``e.pool``),
  then the classifier head ``logits = b + pooled W^T`` (int32 at e.pool + e_w); ``pool`` does both steps' first.
* **Stream order** of the trainable tensors (``PARAM_ORDER``): wq, bq, wk, bk, wv, bv, wo, bo, gamma1, beta1,
  w1, b1, w2, b2, gamma2, beta2 (MiniLM's per-layer order), each row-major.
* Padded query rows are computed like real ones (their keys masked the same) and are ignored by pooling.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np

from pezo.golden.engine.int8 import MAX_INPUTS, int_array, matmul, requantize, round_shift, saturate
from pezo.golden.engine.transformer import ops

PARAM_ORDER = (
    "wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "gamma1", "beta1", "w1", "b1", "w2", "b2", "gamma2", "beta2",
)  # fmt: skip
CONTEXT_SHIFT = -ops.PROB_EXPONENT


@dataclass(frozen=True)
class EncoderExponents:
    """Power-of-two exponents of every tensor (value = q 2^e); the shifts follow from them."""

    x: int = -5
    wq: int = -7
    wk: int = -7
    wv: int = -7
    wo: int = -7
    w1: int = -7
    w2: int = -7
    q: int = -5
    k: int = -5
    v: int = -5
    score: int = -5
    attn: int = -5
    gamma1: int = -7
    hidden: int = -5
    gelu: int = -5
    out: int = -5
    gamma2: int = -7
    pool: int = -5


def score_shift_p(d_head: int) -> int:
    """p = floor(log2(d_head) / 2): 1/sqrt(d_head) = 2^-p * c, c = 2^p / sqrt(d_head) in (2^-1/2, 1]."""
    return int(math.floor(math.log2(d_head) / 2))


@dataclass(frozen=True)
class EncoderConfig:
    """Shape of one encoder layer on an R x C array (rows = tokens per tile, cols = inputs per word) and its
    exponents. Validation raises one ValueError naming the first problem."""

    d: int
    heads: int
    ffn: int
    tokens: int
    rows: int = 8
    cols: int = 8
    e: EncoderExponents = field(default_factory=EncoderExponents)

    def __post_init__(self):
        for name in ("d", "heads", "ffn", "tokens", "rows", "cols"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if self.d % self.heads:
            raise ValueError(f"heads ({self.heads}) must divide d ({self.d}): d_head would not be an integer")
        for name, width in (("d", self.d), ("ffn", self.ffn), ("d_head", self.d_head)):
            if width % self.cols:
                raise ValueError(
                    f"{name} = {width} does not tile the {self.rows} x {self.cols} array: it must be a multiple of "
                    f"cols = {self.cols} (the engine does not pad)"
                )
        if self.tokens % self.rows or self.tokens % self.cols:
            raise ValueError(
                f"tokens = {self.tokens} does not tile the {self.rows} x {self.cols} array: it must be a multiple of "
                f"rows = {self.rows} (token tiles) and of cols = {self.cols} (P V sums over the keys)"
            )
        if max(self.d, self.ffn) > MAX_INPUTS:
            raise ValueError(f"d and ffn must be at most {MAX_INPUTS} (int32 accumulation)")
        for name, s in self.shifts().items():
            if not 0 <= s <= 31:
                raise ValueError(f"the {name} shift from these exponents is {s}; it must be in 0..31")

    @property
    def d_head(self) -> int:
        return self.d // self.heads

    def shifts(self) -> dict[str, int]:
        """Every right shift of the layer (each must be in 0..31)."""
        e = self.e
        return {
            "q": e.q - e.x - e.wq,
            "k": e.k - e.x - e.wk,
            "v": e.v - e.x - e.wv,
            "score": e.score + score_shift_p(self.d_head) - e.q - e.k,
            "context": CONTEXT_SHIFT,
            "hidden": e.hidden - e.attn - e.w1,
            "layer_norm1": ops.LN_RECIP_BITS - e.gamma1 + e.attn,
            "layer_norm2": ops.LN_RECIP_BITS - e.gamma2 + e.out,
            "pool": e.out - e.pool,
        }

    def shapes(self) -> dict[str, tuple[int, ...]]:
        d, f = self.d, self.ffn
        shapes = {"wq": (d, d), "wk": (d, d), "wv": (d, d), "wo": (d, d), "w1": (f, d), "w2": (d, f)}
        shapes.update({"bq": (d,), "bk": (d,), "bv": (d,), "bo": (d,), "b1": (f,), "b2": (d,)})
        shapes.update({"gamma1": (d,), "beta1": (d,), "gamma2": (d,), "beta2": (d,)})
        return {name: shapes[name] for name in PARAM_ORDER}

    def macs(self, tokens: int | None = None) -> dict[str, int]:
        """MACs of one text of ``tokens`` (default: the configured) tokens: dense and attention."""
        t = self.tokens if tokens is None else tokens
        return {"dense": t * (4 * self.d * self.d + 2 * self.d * self.ffn), "attention": 2 * t * t * self.d}


TINY = EncoderConfig(d=32, heads=2, ffn=64, tokens=8)
ECP5 = EncoderConfig(d=128, heads=4, ffn=256, tokens=32)
MINILM = EncoderConfig(d=384, heads=12, ffn=1536, tokens=64)


@dataclass(frozen=True, eq=False)
class EncoderWeights:
    """The layer's integers: int8 weights / gamma in [-127, 127], int32 biases / beta (``PARAM_ORDER``)."""

    wq: np.ndarray
    bq: np.ndarray
    wk: np.ndarray
    bk: np.ndarray
    wv: np.ndarray
    bv: np.ndarray
    wo: np.ndarray
    bo: np.ndarray
    gamma1: np.ndarray
    beta1: np.ndarray
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray
    gamma2: np.ndarray
    beta2: np.ndarray

    def check(self, config: EncoderConfig) -> None:
        """One ValueError for a tensor of the wrong shape or range."""
        for name, shape in config.shapes().items():
            a = int_array(name, getattr(self, name))
            if a.shape != shape:
                raise ValueError(f"{name} must have shape {shape} for this config, got {a.shape}")
            lo, hi = (-127, 127) if name[0] in "wg" else (ops.INT32_MIN, ops.INT32_MAX)
            if a.size and (a.min() < lo or a.max() > hi):
                raise ValueError(f"{name} entries must be in {lo}..{hi}, got {int(a.min())}..{int(a.max())}")

    def flat(self) -> np.ndarray:
        """Every tensor in ``PARAM_ORDER``, row-major, concatenated (the stream order)."""
        return np.concatenate([np.asarray(getattr(self, f.name), dtype=np.int64).ravel() for f in fields(self)])


def dense(x, w, b, shift: int) -> np.ndarray:
    """sat(round_shift(b + x w^T, shift), -127, 127) over the last axis of x (int8 out)."""
    return requantize(dense_acc(x, w, b), shift)


def dense_acc(x, w, b) -> np.ndarray:
    """b + x w^T: int32 accumulators over the last axis of x."""
    x = np.asarray(x)
    acc = matmul(x.reshape(-1, x.shape[-1]), w) + np.asarray(b, dtype=np.int64)
    return acc.reshape(*x.shape[:-1], acc.shape[-1])


def exact_matmul_batched(a, b) -> np.ndarray:
    """a @ b^T over the last two axes of integer arrays whose partial sums stay below 2^53 (int64; float64 BLAS
    is exact there, as ``pezo.golden.engine.int8.exact_matmul``)."""
    af = np.asarray(a, dtype=np.float64)
    bf = np.asarray(b, dtype=np.float64)
    return (af @ np.swapaxes(bf, -1, -2)).astype(np.int64)


def _heads(y: np.ndarray, heads: int) -> np.ndarray:
    b, t, d = y.shape
    return y.reshape(b, t, heads, d // heads).transpose(0, 2, 1, 3)


def attention(q, k, v, mask, config: EncoderConfig, table: np.ndarray, trace: dict | None = None) -> np.ndarray:
    """Per-head integer attention: int8 Q, K, V [B, T, d] -> context int8 [B, T, d] at e_v."""
    sh = config.shifts()
    qh, kh, vh = (_heads(a, config.heads) for a in (q, k, v))
    acc = exact_matmul_batched(qh, kh)  # |acc| < d_head 2^14
    scores = saturate(round_shift(acc, sh["score"]), -ops.SCORE_MAX, ops.SCORE_MAX)
    p = ops.int_softmax(scores, np.asarray(mask)[:, None, None, :], table)
    ctx = saturate(round_shift(exact_matmul_batched(p, vh.transpose(0, 1, 3, 2)), sh["context"]), -127, 127)
    if trace is not None:
        trace.update(scores=scores, probs=p)
    b, h, t, dh = ctx.shape
    return ctx.transpose(0, 2, 1, 3).reshape(b, t, h * dh)


def tables(config: EncoderConfig) -> tuple[np.ndarray, np.ndarray]:
    """(the softmax's exp table, the GELU table) of ``config``'s exponents."""
    e = config.e
    return ops.exp_table(e.score), ops.gelu_table(e.hidden, e.gelu)


def encoder_layer(x, mask, weights: EncoderWeights, config: EncoderConfig, trace: dict | None = None) -> np.ndarray:
    """The integer layer (module docstring): int8 x [B, T, d] at e.x -> int8 [B, T, d] at e.out.

    ``trace``, when a dict, receives every intermediate (q, k, v, scores, probs, context, attn, hidden, gelu)."""
    x = int_array("x", x)
    if x.ndim != 3 or x.shape[-1] != config.d:
        raise ValueError(f"x must be [B, T, {config.d}], got shape {x.shape}")
    if x.shape[1] > config.tokens:
        raise ValueError(f"x has {x.shape[1]} tokens but the layer is configured for {config.tokens}")
    if x.size and (x.min() < -128 or x.max() > 127):
        raise ValueError("x must be int8")
    mask = np.asarray(mask)
    if mask.shape != x.shape[:2]:
        raise ValueError(f"mask must have shape {x.shape[:2]}, got {mask.shape}")
    weights.check(config)
    e, sh, w = config.e, config.shifts(), weights
    exp_tab, gelu_tab = tables(config)
    q = dense(x, w.wq, w.bq, sh["q"])
    k = dense(x, w.wk, w.bk, sh["k"])
    v = dense(x, w.wv, w.bv, sh["v"])
    ctx = attention(q, k, v, mask, config, exp_tab, trace)
    acc, e_acc = ops.residual_add(dense_acc(ctx, w.wo, w.bo), e.v + e.wo, x, e.x)
    attn = ops.int_layer_norm(acc, w.gamma1, w.beta1, e.gamma1, e.attn)
    hidden = dense(attn, w.w1, w.b1, sh["hidden"])
    g = ops.int_gelu(hidden, gelu_tab)
    acc2, e_acc2 = ops.residual_add(dense_acc(g, w.w2, w.b2), e.gelu + e.w2, attn, e.attn)
    out = ops.int_layer_norm(acc2, w.gamma2, w.beta2, e.gamma2, e.out)
    if trace is not None:
        trace.update(q=q, k=k, v=v, context=ctx, acc1=acc, acc1_exponent=e_acc, attn=attn, hidden=hidden, gelu=g)
        trace.update(acc2=acc2, acc2_exponent=e_acc2)
    return out


def pool(out, mask, config: EncoderConfig) -> np.ndarray:
    """The layer's int8 output mean-pooled over the real tokens: int8 [B, d] at e.pool."""
    return ops.mean_pool(out, mask, config.shifts()["pool"])


def classify(pooled, w, b) -> np.ndarray:
    """The classifier head: int32 logits b + pooled w^T (pooled int8 [B, d], w int8 [classes, d])."""
    return matmul(pooled, w) + int_array("b", b)


def encoder_layer_float(x, mask, params: dict, heads: int, eps: float = 1e-12, trace: dict | None = None) -> np.ndarray:
    """float64 BERT post-LN layer with the same parameter names (``PARAM_ORDER``; float values): the reference
    the integer layer approximates (MiniLM's ``run_layer`` in float64, the 1/sqrt(d_head) scale explicit).
    ``trace``, when a dict, receives x, q, k, v, scores (scaled), context, attn, hidden (pre-GELU), gelu."""
    p = {name: np.asarray(v, dtype=np.float64) for name, v in params.items()}
    x = np.asarray(x, dtype=np.float64)

    def lin(a, name):
        return a @ p["w" + name].T + p["b" + name]

    q, k, v = (lin(x, n) for n in "qkv")
    qh, kh, vh = (_heads(a, heads) for a in (q, k, v))
    scores = qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(x.shape[-1] // heads)
    probs = ops.softmax_float(scores, np.asarray(mask)[:, None, None, :])
    b, h, t, dh = qh.shape
    ctx = (probs @ vh).transpose(0, 2, 1, 3).reshape(b, t, h * dh)
    attn = ops.layer_norm_float(lin(ctx, "o") + x, p["gamma1"], p["beta1"], eps)
    hidden = lin(attn, "1")
    g = ops.gelu_float(hidden)
    out = ops.layer_norm_float(lin(g, "2") + attn, p["gamma2"], p["beta2"], eps)
    if trace is not None:
        trace.update(x=x, q=q, k=k, v=v, scores=scores, context=ctx, attn=attn, hidden=hidden, gelu=g, out=out)
    return out
