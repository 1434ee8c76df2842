"""Few-shot ZO fine-tuning of all-MiniLM-L6-v2 on real labelled text (the golden trainer).

Model: MiniLM's mean-pooled sentence embedding, L2-normalised (what the model was trained to emit),
then a linear head ``logits = head_scale * (x W^T + b)``. ``head_scale`` (default 20) is the
cosine-similarity scale all-MiniLM-L6-v2 was trained with, so logits have the ranges the embedding
geometry was tuned for.

Head initialisation (``head_init``):
* ``zeros`` (default): W = 0, b = 0 (start accuracy = the majority class; ZO learns the head).
* ``probe``: the float linear probe (``pezo.golden.lm.probe.fit_linear_probe_val``: L-BFGS logistic
  regression) on the k training shots' embeddings under the starting weights, with its L2 chosen from
  ``pezo.golden.lm.probe.L2_GRID`` by accuracy on the run's own few-shot validation split (ties: the larger
  L2) -- the same selection as the probe baselines; the test split is never seen. Linear probing then ZO
  fine-tuning (LP-MeZO). The chosen L2 is the summary's ``head_init_l2``. Note that the start's validation
  accuracy is then a maximum over the grid, so ZO must beat a validation-selected start to move the
  best-validation checkpoint off step 0.
* ``prototype``: the nearest-class-mean classifier of the k training shots, with no
  gradient step: ``W_c = mean of x over class c``, ``b_c = -||W_c||^2 / 2`` (so the argmax is the
  nearest prototype). It uses only the few-shot training data, as MeZO's prompt-based start uses
  only the pretrained LM head; ZO then fine-tunes from a meaningful start.

Trainable subsets (``trainable``): ``head``; ``lastN`` (N = 1..6: the last N transformer layers +
the head); ``bitfit`` (every bias and LayerNorm tensor + the head); ``all`` (every tensor + the head).
Frozen layers below the first trainable one are run once and their outputs cached per example
(exact: ZO never changes them), so a step costs two forward passes of the trainable part only.
The perturbation stream order is the model's forward order (``pezo.golden.lm.minilm``), then the head.

Protocol: few-shot split of ``pezo.golden.lm.data`` (k shots per class for training and for validation, 1 000
test examples, all fixed by ``seed``); mini-batches of ``batch_size`` from an epoch-wise shuffle of
the training set; validation accuracy every ``eval_every`` steps; the reported ``test_accuracy`` is
that of the best-validation checkpoint (MeZO / LM-BFF practice; ties keep the earlier one), and
``final_test_accuracy`` that of the last weights. ``start_accuracy`` is the test accuracy at step 0.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from pezo.golden.config import check_int
from pezo.golden.lm.data import TASKS, few_shot_split, load_task
from pezo.golden.lm.minilm import MiniLM, TokenBatch, l2_normalize, load_minilm
from pezo.golden.lm.probe import fit_linear_probe_val
from pezo.golden.losses import check_blowup, cross_entropy
from pezo.golden.zo.families import FAMILIES, make_sampler
from pezo.golden.zo.families import FAMILY_OPTIONS as _OPTIONS_BY_FAMILY
from pezo.golden.zo.mezo import MeZO, MeZOConfig, no_decay

HEAD_INITS = ("probe", "prototype", "zeros")
HEAD_WEIGHT, HEAD_BIAS = "head.weight", "head.bias"
FAMILY_OPTIONS = tuple(dict.fromkeys(o for options in _OPTIONS_BY_FAMILY.values() for o in options))
"""Every option some family takes (``pezo.golden.zo.families.FAMILY_OPTIONS``); the sampler checks the family."""


def trainable_choices(layers: int = 6) -> tuple[str, ...]:
    return ("head",) + tuple(f"last{n}" for n in range(1, layers + 1)) + ("bitfit", "all")


@dataclass(frozen=True)
class TrainConfig:
    """One ZO fine-tuning run (see the module docstring); every field is validated on use.

    ``family_options``: sorted (name, value) pairs passed to ``pezo.golden.zo.families.make_sampler``
    (pool_size, pool_bits, n_rngs, rng_bits, scaling).
    """

    family: str = "gaussian"
    task: str = "rotten_tomatoes"
    shots: int = 16
    steps: int = 4000
    seed: int = 1
    trainable: str = "head"
    lr: float = 5e-5
    eps: float = 1e-3
    queries: int = 1
    weight_decay: float = 0.0
    mode: str = "inplace"
    batch_size: int = 16
    head_init: str = "zeros"
    head_scale: float = 20.0
    max_length: int = 64
    eval_every: int = 200
    test_size: int = 1000
    family_options: tuple = ()

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {', '.join(FAMILIES)}, got {self.family!r}")
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {', '.join(TASKS)}, got {self.task!r}")
        check_int("steps", self.steps, 1, 10**7)
        check_int("seed", self.seed, 0, 2**32 - 1)
        check_int("batch_size", self.batch_size, 1, 4096)
        check_int("eval_every", self.eval_every, 1, 10**7)
        check_int("max_length", self.max_length, 8, 512)
        if self.trainable not in trainable_choices():
            raise ValueError(f"trainable must be one of {', '.join(trainable_choices())}, got {self.trainable!r}")
        if self.head_init not in HEAD_INITS:
            raise ValueError(f"head_init must be one of {', '.join(HEAD_INITS)}, got {self.head_init!r}")
        if not (isinstance(self.head_scale, (int, float)) and math.isfinite(self.head_scale) and self.head_scale > 0):
            raise ValueError(f"head_scale must be a finite number > 0, got {self.head_scale!r}")
        for name, _ in self.family_options:
            if name not in FAMILY_OPTIONS:
                raise ValueError(f"family option must be one of {', '.join(FAMILY_OPTIONS)}, got {name!r}")
        self.mezo  # noqa: B018 - validates lr, eps, queries, weight_decay, mode

    @property
    def mezo(self) -> MeZOConfig:
        return MeZOConfig(
            lr=self.lr, eps=self.eps, queries=self.queries, weight_decay=self.weight_decay, mode=self.mode
        )

    def replace(self, **changes) -> TrainConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["family_options"] = dict(self.family_options)
        return out


# -- the frozen prefix ------------------------------------------------------------------------------


class PrefixCache:
    """Per-example inputs of the first trainable layer (unpadded), for a fixed list of texts.

    ``layer`` = index of the first layer run per step (num_layers: the pooled embedding itself;
    0 with ``tokens``: the embedding layer is trainable too and token ids are cached instead)."""

    def __init__(self, model, texts, layer: int, tokens: bool, max_length: int, progress: bool = False):
        self.model, self.layer, self.tokens = model, layer, tokens
        n = len(texts)
        if tokens:
            enc = model.tokenize(texts, max_length=max_length)
            lengths = enc.mask.sum(axis=1).astype(int)
            self.rows = [enc.ids[i, : lengths[i]] for i in range(n)]
            return
        cache = model.hidden_states(texts, layer, progress=progress, max_length=max_length)
        self.rows = [None] * n
        for batch in cache:
            lengths = batch.mask.sum(axis=1).astype(int)
            for j, i in enumerate(batch.indices):
                self.rows[int(i)] = np.ascontiguousarray(batch.hidden[j, : lengths[j]])
        if layer == model.config.num_hidden_layers:  # only the head trains: keep the sentence embedding
            self.rows = list(l2_normalize(np.stack([r.mean(axis=0) for r in self.rows])))

    def embeddings(self, indices, params) -> np.ndarray:
        """L2-normalised sentence embeddings [B, H] of the examples ``indices`` under ``params``."""
        model = self.model
        if self.layer == model.config.num_hidden_layers:
            return np.stack([self.rows[i] for i in indices])
        rows = [self.rows[i] for i in indices]
        width = max(len(r) for r in rows)
        mask = np.zeros((len(rows), width), dtype=np.float32)
        for j, r in enumerate(rows):
            mask[j, : len(r)] = 1
        if self.tokens:
            ids = np.zeros((len(rows), width), dtype=np.int64)
            for j, r in enumerate(rows):
                ids[j, : len(r)] = r
            hidden = model.embed(TokenBatch(ids, mask), params)
        else:
            hidden = np.zeros((len(rows), width, rows[0].shape[1]), dtype=np.float32)
            for j, r in enumerate(rows):
                hidden[j, : len(r)] = r
        return l2_normalize(model.forward_from(self.layer, hidden, mask, params))


# -- the run ----------------------------------------------------------------------------------------


@dataclass
class TrainResult:
    config: TrainConfig
    summary: dict
    records: list = field(default_factory=list)
    start_params: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)


class ZOTask:
    """Model + task split + caches + head: everything a run needs except the optimiser."""

    def __init__(self, config: TrainConfig, progress: bool = False):
        self.config = config
        if config.trainable == "all":  # a private model whose weights ZO owns: one copy, as in inference
            model = self.model = MiniLM()
        else:
            model = self.model = load_minilm()
        data = self.data = load_task(config.task)
        split = self.split = few_shot_split(data, config.shots, config.seed, test_size=config.test_size)
        layers = model.config.num_hidden_layers
        spec = config.trainable
        if spec == "head":
            first, tokens, names = layers, False, []
        elif spec.startswith("last"):
            n = int(spec[4:])
            first, tokens = layers - n, False
            names = [name for i in range(first, layers) for name in model.layer_param_names(i)]
        else:
            first, tokens = 0, True
            names = [name for name in model.params if spec == "all" or no_decay(name)]  # bitfit: biases + LayerNorm
        self.trainable = names + [HEAD_WEIGHT, HEAD_BIAS]
        self.params = {name: model.params[name] for name in model.params}
        for name in names:  # the shared model is read-only: trainable tensors get their own copy
            if config.trainable == "all":
                self.params[name].flags.writeable = True  # the private model's own arrays
            else:
                self.params[name] = model.params[name].copy()
        self.labels = data.labels
        texts = data.texts
        order = np.concatenate([split.train, split.val, split.test])
        self.position = {int(i): j for j, i in enumerate(order)}
        key = (config.task, config.shots, config.seed, config.test_size, first, tokens, config.max_length)
        if _PREFIX_MEMO.get("key") != key:  # runs of one split in one process share the frozen prefix
            _PREFIX_MEMO.clear()
            _PREFIX_MEMO.update(
                key=key,
                cache=PrefixCache(
                    model, [texts[i] for i in order], first, tokens, config.max_length, progress=progress
                ),
            )
        self.cache = _PREFIX_MEMO["cache"]
        classes = len(data.classes)
        hidden = model.config.hidden_size
        self.params[HEAD_WEIGHT] = np.zeros((classes, hidden), dtype=np.float32)
        self.params[HEAD_BIAS] = np.zeros(classes, dtype=np.float32)
        self.head_init_l2 = None
        if config.head_init == "probe":  # L2 chosen on the few-shot validation split, never on test
            weight, bias, self.head_init_l2 = fit_linear_probe_val(
                self.embeddings(split.train, self.params),
                self.labels[split.train],
                self.embeddings(split.val, self.params),
                self.labels[split.val],
                classes,
                scale=config.head_scale,
            )
            self.params[HEAD_WEIGHT][...] = weight
            self.params[HEAD_BIAS][...] = bias
        elif config.head_init == "prototype":
            x = self.embeddings(split.train, self.params)
            y = self.labels[split.train]
            for c in range(classes):
                proto = x[y == c].mean(axis=0)
                self.params[HEAD_WEIGHT][c] = proto
                self.params[HEAD_BIAS][c] = -0.5 * float(proto @ proto)

    def embeddings(self, indices, params) -> np.ndarray:
        return self.cache.embeddings([self.position[int(i)] for i in indices], params)

    def logits(self, indices, params) -> np.ndarray:
        x = self.embeddings(indices, params)
        return np.float32(self.config.head_scale) * (x @ params[HEAD_WEIGHT].T + params[HEAD_BIAS])

    def loss(self, indices, params) -> float:
        return cross_entropy(self.logits(indices, params), self.labels[indices])

    def accuracy(self, indices, params, batch: int = 64) -> float:
        correct = 0
        for start in range(0, len(indices), batch):
            part = indices[start : start + batch]
            correct += int((self.logits(part, params).argmax(axis=1) == self.labels[part]).sum())
        return correct / len(indices)


_PREFIX_MEMO: dict = {}


def sampler_for(config: TrainConfig, dim: int):
    return make_sampler(config.family, dim, seed=config.seed + 1, **dict(config.family_options))


def batches(train: np.ndarray, batch_size: int, rng: np.random.Generator):
    """Endless mini-batches: an epoch-wise shuffle of ``train``, cut into ``batch_size`` pieces."""
    size = min(batch_size, len(train))
    while True:
        order = rng.permutation(train)
        for start in range(0, len(order) - size + 1, size):
            yield order[start : start + size]


def train(
    config: TrainConfig,
    progress: bool = False,
    keep: bool = False,
    stop_on_blowup: bool = False,
    keep_z: str = "auto",
) -> TrainResult:
    """Run ``config``; ``keep`` also returns the replay records and the start/final trainable weights. A loss
    that is not finite raises FloatingPointError; with ``stop_on_blowup`` so does a finite one that blew up
    (``golden.losses.check_blowup``: ``LossBlowUp``). ``keep_z``: ``MeZOConfig.keep_z`` (memory for time, the
    results the same for every value, so it is not part of ``config``)."""
    task = ZOTask(config, progress=progress)
    sampler = sampler_for(config, sum(task.params[n].size for n in task.trainable))
    sampler.check_near_repeat(config.steps * config.queries)  # perturbation index = step * q + query
    optimiser = MeZO(task.params, task.trainable, sampler, dataclasses.replace(config.mezo, keep_z=keep_z))
    split = task.split
    start_params = {n: task.params[n].copy() for n in task.trainable} if keep else {}
    start_accuracy = task.accuracy(split.test, task.params)
    best_val = task.accuracy(split.val, task.params)
    start_val = best_val
    best_step, best = 0, {n: task.params[n].copy() for n in task.trainable}
    rng = np.random.default_rng([config.seed, 0x5EED])
    stream = batches(split.train, config.batch_size, rng)
    records, losses, val_history = [], [], [(0, best_val)]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=config.steps, desc=f"{config.family} {config.task} k={config.shots}", unit="step", file=sys.stderr
        )
    train_seconds = 0.0
    for step in range(config.steps):
        batch = next(stream)
        t0 = time.perf_counter()
        record = optimiser.step(step, lambda params: task.loss(batch, params))  # noqa: B023 - called now
        train_seconds += time.perf_counter() - t0
        if not math.isfinite(record.loss):
            raise FloatingPointError(f"loss is not finite at step {step} (lr={config.lr}, eps={config.eps})")
        if stop_on_blowup and losses:
            check_blowup(step, losses[0], record.loss, config.family)
        losses.append(record.loss)
        if keep:
            records.append(record)
        if (step + 1) % config.eval_every == 0 or step + 1 == config.steps:
            val = task.accuracy(split.val, task.params)
            val_history.append((step + 1, val))
            if val > best_val:
                best_val, best_step = val, step + 1
                best = {n: task.params[n].copy() for n in task.trainable}
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-20:]):.4f}", val=f"{val_history[-1][1]:.3f}")
    if bar is not None:
        bar.close()
    final_test = task.accuracy(split.test, task.params)
    best_params = dict(task.params, **best)
    test_accuracy = final_test if best_step == config.steps else task.accuracy(split.test, best_params)
    summary = {
        "family": config.family,
        "task": config.task,
        "shots": config.shots,
        "steps": config.steps,
        "seed": config.seed,
        "test_accuracy": test_accuracy,
        "start_accuracy": start_accuracy,
        "seconds_per_step": train_seconds / config.steps,
        "final_test_accuracy": final_test,
        "best_step": best_step,
        "best_val_accuracy": best_val,
        "start_val_accuracy": start_val,
        "val_history": val_history,
        "head_init_l2": task.head_init_l2,
        "train_loss_start": float(np.mean(losses[:20])),
        "train_loss_end": float(np.mean(losses[-20:])),
        "trainable": config.trainable,
        "trainable_params": sampler.dim,
        "forward_passes": 2 * config.queries * config.steps,
        "train_size": int(len(split.train)),
        "val_size": int(len(split.val)),
        "test_size": int(len(split.test)),
        "sampler": sampler.describe(),
        "config": config.to_dict(),
    }
    final = {n: task.params[n].copy() for n in task.trainable} if keep else {}
    return TrainResult(config, summary, records, start_params, final)
