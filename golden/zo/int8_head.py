"""The engine's real task: an INT8 linear head (384 -> classes) on frozen all-MiniLM-L6-v2 sentence
embeddings, trained by the integer ZO step of ``pezo.golden.engine.zo_engine``; and the host's side of that step.

Data: the few-shot split of ``pezo.golden.lm.data`` (k shots per class for training and validation, 1 000 test
examples, all fixed by ``seed``). Embeddings: MiniLM's L2-normalised mean-pooled output (float32,
``pezo.golden.lm.minilm``), cached per example on disk (``cache_dir()/embeddings``). Quantisation (NITI): one
activation exponent s_x = ``exponent_for`` (the training embeddings), x_q = sat(round-half-up(x * 2^-s_x),
-128, 127) for every split.

Weights: int8 in [-127, 127] at the fixed exponent ``weight_exponent`` s_w (NITI keeps parameter
exponents fixed), starting from zero. A logit is worth ``acc * 2^(s_w + s_x)``.

Host (``update_scale``): from the engine's int32 logits of the +epsilon and -epsilon passes, the mean
cross-entropies l+ and l- (float64), the projected gradient g = (l+ - l-) / (2 epsilon_real) with
epsilon_real = epsilon_LSB * 2^s_w, and the value written to the engine's G register:
G = lr * g / (epsilon_LSB * 2^s_w) in Q8.16 (``pezo.golden.engine.zo_engine.g_to_fixed``: round half up, saturated),
so the engine's ``w -= round(G * p)`` is MeZO's ``W -= lr * g * z`` in weight LSBs (p = epsilon_LSB * z).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pezo.golden.config import cache_dir, check_int
from pezo.golden.engine.int8 import exponent_for, matmul, quantize
from pezo.golden.engine.zo_engine import G_MAX, G_MIN, EngineConfig, ZOEngine, g_to_fixed
from pezo.golden.lm.data import few_shot_split, load_task
from pezo.golden.lm.minilm import load_minilm, model_dir
from pezo.golden.lm.probe import fit_linear_probe_val
from pezo.golden.losses import cross_entropy

STEPS_RANGE = (1, 10_000_000)
"""ZO steps and the validation interval (``steps``, ``eval_every``) of the INT8 trainers."""

EMBED_MAX_LENGTH = 64


def _model_fingerprint() -> str:
    weights = model_dir() / "model.safetensors"
    stat = weights.stat()
    return hashlib.sha256(f"{stat.st_size}:{int(stat.st_mtime)}".encode()).hexdigest()[:12]


def embedding_cache_path(task: str, max_length: int = EMBED_MAX_LENGTH) -> Path:
    return cache_dir() / "embeddings" / f"{task}-L{max_length}-{_model_fingerprint()}.npz"


def sentence_embeddings(task: str, indices, max_length: int = EMBED_MAX_LENGTH, progress: bool = False) -> np.ndarray:
    """float32 [len(indices), 384]: MiniLM embeddings of the task's examples ``indices``, computed once
    per example and kept in ``embedding_cache_path`` (written atomically; a damaged file is recomputed)."""
    indices = np.asarray(indices, dtype=np.int64)
    path = embedding_cache_path(task, max_length)
    known: dict[int, np.ndarray] = {}
    if path.exists():
        try:
            with np.load(path) as f:
                known = dict(zip(f["indices"].tolist(), f["vectors"]))
        except (OSError, ValueError, KeyError):
            known = {}
    missing = sorted(set(indices.tolist()) - known.keys())
    if missing:
        data = load_task(task)
        vectors = load_minilm().encode([data.texts[i] for i in missing], progress=progress, max_length=max_length)
        known.update(zip(missing, vectors))
        path.parent.mkdir(parents=True, exist_ok=True)
        order = sorted(known)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
        np.savez(tmp, indices=np.array(order, dtype=np.int64), vectors=np.stack([known[i] for i in order]))
        os.replace(tmp, path)
    return np.stack([known[i] for i in indices.tolist()]).astype(np.float32)


@dataclass(frozen=True)
class Int8TrainConfig:
    """One INT8 ZO run of the engine's head (module docstring). ``lr`` is MeZO's learning rate on the real
    weights; ``weight_exponent`` s_w fixes the weight LSB (2^s_w); the array shape and stream come from
    ``engine`` (its ``batch`` is the ZO batch, ``outputs`` must equal the task's classes)."""

    task: str = "rotten_tomatoes"
    shots: int = 256
    seed: int = 1
    steps: int = 6000
    lr: float = 0.1
    weight_exponent: int = -5
    eval_every: int = 200
    test_size: int = 1000
    engine: EngineConfig = EngineConfig()

    def __post_init__(self):
        check_int("shots", self.shots, 1, 1 << 20)
        check_int("seed", self.seed, 0, (1 << 31) - 1)
        check_int("steps", self.steps, *STEPS_RANGE)
        check_int("weight_exponent", self.weight_exponent, -24, 24)
        check_int("eval_every", self.eval_every, *STEPS_RANGE)
        if not (isinstance(self.lr, (int, float)) and math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a finite number > 0, got {self.lr!r}")
        if not isinstance(self.engine, EngineConfig):
            raise ValueError(f"engine must be an EngineConfig, got {type(self.engine).__name__}")

    @property
    def eps_lsb(self) -> float:
        """epsilon in weight LSBs: 2^(12 - eps_shift)."""
        return 2.0 ** (12 - self.engine.stream.eps_shift)

    def replace(self, **changes) -> Int8TrainConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The fields, ``engine`` as its flat ``EngineConfig.to_dict``."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {**out, "engine": self.engine.to_dict()}

    @classmethod
    def from_dict(cls, fields: dict) -> Int8TrainConfig:
        return cls(**{**fields, "engine": EngineConfig.from_dict(fields["engine"])})


def update_scale(
    logits_plus, logits_minus, labels, config: Int8TrainConfig, act_exponent: int
) -> tuple[int, float, float]:
    """The host's part of a step: (G in Q8.16, l+, l-) from the two passes' int32 logits (docstring)."""
    unit = 2.0 ** (config.weight_exponent + act_exponent)
    loss_plus = cross_entropy(np.asarray(logits_plus, dtype=np.float64) * unit, labels)
    loss_minus = cross_entropy(np.asarray(logits_minus, dtype=np.float64) * unit, labels)
    eps_real = config.eps_lsb * 2.0**config.weight_exponent
    projected = (loss_plus - loss_minus) / (2 * eps_real)
    return g_to_fixed(config.lr * projected / eps_real), loss_plus, loss_minus


@dataclass
class Int8Task:
    """The quantised split: int8 activations per split, labels, and the activation exponent."""

    config: Int8TrainConfig
    act_exponent: int
    x: dict
    y: dict
    float_x: dict
    classes: int

    @classmethod
    def load(cls, config: Int8TrainConfig, splits=("train", "val", "test"), progress: bool = False) -> Int8Task:
        data = load_task(config.task)
        if config.engine.outputs != len(data.classes):
            raise ValueError(
                f"engine outputs must equal the {len(data.classes)} classes of {config.task}, "
                f"got {config.engine.outputs}"
            )
        if config.engine.inputs != 384:
            raise ValueError(f"engine inputs must be 384 (the MiniLM embedding width), got {config.engine.inputs}")
        split = few_shot_split(data, config.shots, config.seed, test_size=config.test_size)
        wanted = ("train",) + tuple(s for s in splits if s != "train")
        index = {name: getattr(split, name) for name in wanted}
        everything = np.concatenate([index[n] for n in wanted])
        vectors = sentence_embeddings(config.task, everything, progress=progress)
        float_x, start = {}, 0
        for name in wanted:
            float_x[name] = vectors[start : start + len(index[name])]
            start += len(index[name])
        s_x = exponent_for(float_x["train"])
        return cls(
            config,
            s_x,
            {n: quantize(v, s_x) for n, v in float_x.items()},
            {n: data.labels[index[n]] for n in wanted},
            float_x,
            len(data.classes),
        )

    def accuracy(self, split: str, weights) -> float:
        return float((matmul(self.x[split], weights).argmax(axis=1) == self.y[split]).mean())


def batch_schedule(train_size: int, batch: int, steps: int, seed: int) -> np.ndarray:
    """[steps, batch] training indices: epoch-wise shuffles (``np.random.default_rng([seed, 0x1A7])``)
    cut into batches; the host loop of the co-simulation replays the same schedule."""
    if batch > train_size:
        raise ValueError(f"engine batch must be <= the {train_size} training examples, got {batch}")
    rng = np.random.default_rng([seed, 0x1A7])
    out, order = [], np.empty(0, dtype=np.int64)
    while len(out) < steps:
        if len(order) < batch:
            order = rng.permutation(train_size)
        out.append(order[:batch])
        order = order[batch:]
    return np.stack(out)


def train_int8(
    config: Int8TrainConfig, progress: bool = False, task: Int8Task | None = None, probe: bool = True
) -> dict:
    """Golden INT8 ZO training of the head; returns the summary (accuracies at the best-validation
    checkpoint, the float linear probe on the same training shots, losses, weights)."""
    task = task or Int8Task.load(config, progress=progress)
    engine = ZOEngine(config.engine)
    schedule = batch_schedule(len(task.y["train"]), config.engine.array.batch, config.steps, config.seed)
    best_val = start_val = task.accuracy("val", engine.weights)
    start_test = task.accuracy("test", engine.weights)
    best_step, best_w = 0, engine.weights.copy()
    losses, saturated_g, history = [], 0, [(0, best_val)]
    first_saturated = None  # the first step (1-based) whose g hit the Q8.16 limit
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=config.steps,
            desc=f"int8 ZO {config.engine.stream.strategy} k={config.shots}",
            unit="step",
            file=sys.stderr,
        )
    t0 = time.perf_counter()
    for step, rows in enumerate(schedule):
        lp, lm = engine.forward_zo(task.x["train"][rows])
        g, loss_plus, loss_minus = update_scale(lp, lm, task.y["train"][rows], config, task.act_exponent)
        saturated_g += g in (G_MIN, G_MAX)
        if g in (G_MIN, G_MAX) and first_saturated is None:
            first_saturated = step + 1
        engine.update(g)
        losses.append(0.5 * (loss_plus + loss_minus))
        if (step + 1) % config.eval_every == 0 or step + 1 == config.steps:
            val = task.accuracy("val", engine.weights)
            history.append((step + 1, val))
            if val > best_val:
                best_val, best_step, best_w = val, step + 1, engine.weights.copy()
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-50:]):.4f}", val=f"{history[-1][1]:.3f}")
    seconds = time.perf_counter() - t0
    if bar is not None:
        bar.close()
    summary = {
        "task": config.task,
        "shots": config.shots,
        "seed": config.seed,
        "split_seed": config.seed,
        "steps": config.steps,
        "strategy": config.engine.stream.strategy,
        "test_accuracy": task.accuracy("test", best_w),
        "final_test_accuracy": task.accuracy("test", engine.weights),
        "start_accuracy": start_test,
        "best_step": best_step,
        "best_val_accuracy": best_val,
        "start_val_accuracy": start_val,
        "val_history": history,
        "train_loss_start": float(np.mean(losses[:50])),
        "train_loss_end": float(np.mean(losses[-50:])),
        "g_saturated_steps": int(saturated_g),
        "g_saturated_first_step": first_saturated,
        "act_exponent": task.act_exponent,
        "weight_exponent": config.weight_exponent,
        "weight_range": [int(best_w.min()), int(best_w.max())],
        "seconds_per_step": seconds / config.steps,
        "train_size": int(len(task.y["train"])),
        "test_size": int(len(task.y["test"])),
        "config": {**config.to_dict(), "engine": config.engine.to_dict()},
        "weights": best_w.tolist(),
    }
    if probe:
        # L2 chosen on the validation split (golden.lm.probe.L2_GRID), as ZO picks its checkpoint there
        w, b, summary["float_probe_l2"] = fit_linear_probe_val(
            task.float_x["train"], task.y["train"], task.float_x["val"], task.y["val"], task.classes
        )
        summary["float_probe_test_accuracy"] = float(
            ((task.float_x["test"] @ w.T + b).argmax(axis=1) == task.y["test"]).mean()
        )
        summary["gap_points"] = 100 * (summary["float_probe_test_accuracy"] - summary["test_accuracy"])
    return summary
