"""The other seed methods behind one optimiser interface, any perturbation family plugged in.

=================  ===================================================================================
method             what a step does (module)
=================  ===================================================================================
mezo               MeZO (``golden.mezo``): +-eps z, g = (l+ - l-)/(2 eps), theta -= lr g z, q queries
elasticzo          ElasticZO (``golden.elasticzo``): layers 1..C by MeZO-style ZO with g clipped to
                   +-g_clip and the merged restore+update, layers C+1..L by backprop + SGD on the
                   activations of the -eps pass (no third pass)
elasticzo-int8     ElasticZO-INT8 (``golden.elasticzo``): NITI int8 weights, sparse uniform integer z
                   with the p_zero schedule, g = sign(l+ - l-) (float CE, or the integer CE sign of
                   Eq. 12 with ``loss_sign="integer"``), PSR(g z, b_ZO) updates, NITI integer BP tail
poormans           Poor Man's (``golden.poormans``): real-quantised int8 net, layer-wise forward
                   differences with mu = 1 LSB Rademacher (XORShift32), weight or node perturbation
                   per layer (d_w < d_a), Eq. 11 update with NQ/(NQ+d-1) and 1/s^2, block selection
sign-m-spsa        Stepping Forward (``golden.stepping_forward``): 16w8a fixed point, m perturbations
                   per step (each on its own batch), sign(l+ - l-) z_q accumulated, multiply-shift update
=================  ===================================================================================

Interface: ``make_method(config, task)`` returns an object with ``step(step, next_batch) ->
StepStats`` (``next_batch()`` yields (x, y); a method may take several batches per step),
``logits(x)`` (float, for evaluation), ``state()`` / ``load_state(s)`` (checkpoints),
``trainable_params`` and ``describe()``. ``family=None`` is the method's own generator (Gaussian for
mezo/elasticzo/sign-m-spsa, sparse uniform integers for elasticzo-int8, XORShift32 Rademacher for
poormans); any ``golden.families`` family (e.g. ``pezo-otf``) replaces it, mapped to the method's
integer format as each module documents.

``train_method`` runs a config: mini-batches from an epoch-wise shuffle, validation every
``eval_every`` steps, the reported ``test_accuracy`` is the best-validation checkpoint's (as the
golden trainer). Its summary has the golden trainer's keys plus ``method``, ``split``, ``memory_bytes``
(the paper calculators, ``golden.zo_memory``) and ``forward_equivalents`` (MACs / full-forward MACs).
Schedules given in the papers' epochs (p_zero 0.33/0.5/0.9 and b_BP 5/4/3 at epochs 0/20/50 of 100)
are scaled to the run: they switch at 20 % and 50 % of ``steps``.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass

import numpy as np

from pezo.golden.config import check_int

METHODS = ("mezo", "elasticzo", "elasticzo-int8", "poormans", "sign-m-spsa")
SPLITS = ("full-zo", "cls2", "cls1", "full-bp")
LOSS_SIGNS = ("float", "integer")
PERTURBATIONS = ("adaptive", "weight", "node")
BLOCKS = ("all", "adaptive")
Z_SCALES = ("pow2", "one-q", "literal")
LR_DEFAULTS = {"mezo": 1e-3, "elasticzo": 2e-3, "elasticzo-int8": 1.0, "poormans": 0.05, "sign-m-spsa": 5e-3}
EPS_DEFAULTS = {"mezo": 1e-2, "elasticzo": 1e-2, "elasticzo-int8": 1.0, "poormans": 1.0, "sign-m-spsa": 1e-3}
BP_LR_DEFAULT = 0.05
"""ElasticZO's learning rate for the backprop tail (``bp_lr``; the ZO part's ``lr`` is bounded by ZO stability)."""
QUERY_DEFAULTS = {"mezo": 1, "elasticzo": 1, "elasticzo-int8": 1, "poormans": 16, "sign-m-spsa": 3}


def _finite_positive(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


@dataclass(frozen=True)
class MethodConfig:
    """One run (module docstring). ``lr`` / ``eps`` / ``queries`` of ``None`` take the method's default
    (``LR_DEFAULTS``...). ``queries`` is q for mezo, Q per layer for poormans and m for sign-m-spsa.

    split: ElasticZO's C -- an int in 0..L or full-zo (C = L), cls2 (L-1), cls1 (L-2), full-bp (0).
    g_clip: ElasticZO's |g| bound (not given in the paper; ours). bp_lr: ElasticZO's BP-tail learning rate
    (``BP_LR_DEFAULT``; the paper tunes one eta per configuration, which for a shared eta starves the tail). r_max, p_zero (a fraction, or None = the schedule), b_zo, b_bp (None =
    the schedule), loss_sign: ElasticZO-INT8. mu_weight, mu_node, perturbation, block: Poor Man's.
    weight_bits, act_bits, z_scale: Stepping Forward (z_scale ``pow2``: Delta_z = 2^-5, the corrected
    scale; ``one-q``: 1/36; ``literal``: the paper's 3.5/127, whose Delta_z * 1_q = 0.992 shrinks weights).
    """

    method: str = "mezo"
    task: str = "digits"
    seed: int = 1
    steps: int = 1000
    batch_size: int = 32
    lr: float | None = None
    eps: float | None = None
    queries: int | None = None
    split: str | int = "full-zo"
    family: str | None = None
    family_options: tuple = ()
    hidden: tuple = (32, 32)
    shots: int = 16
    eval_every: int = 100
    lr_schedule: str = "constant"
    bp_lr: float | None = None
    g_clip: float = 10.0
    r_max: int = 15
    p_zero: float | None = None
    b_zo: int = 1
    b_bp: int | None = None
    loss_sign: str = "float"
    mu_weight: int = 1
    mu_node: int = 1
    perturbation: str = "adaptive"
    block: str | int = "all"
    weight_bits: int = 16
    act_bits: int = 8
    z_scale: str = "pow2"

    def __post_init__(self):
        from pezo.golden.zo.families import FAMILIES, FAMILY_OPTIONS
        from pezo.golden.methods.tasks import all_tasks

        if self.method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.task not in all_tasks():
            raise ValueError(f"task must be one of {', '.join(all_tasks())}, got {self.task!r}")
        check_int("seed", self.seed, 0, 2**31 - 1)
        check_int("steps", self.steps, 1, 10**7)
        check_int("batch_size", self.batch_size, 1, 4096)
        check_int("shots", self.shots, 1, 1 << 20)
        check_int("eval_every", self.eval_every, 1, 10**7)
        if self.lr is not None:
            _finite_positive("lr", self.lr)
        if self.eps is not None:
            _finite_positive("eps", self.eps)
        _finite_positive("g_clip", self.g_clip)
        if self.bp_lr is not None:
            _finite_positive("bp_lr", self.bp_lr)
        if self.queries is not None:
            check_int("queries" if self.method != "sign-m-spsa" else "m (queries)", self.queries, 1, 1024)
        if not (isinstance(self.hidden, tuple) and all(isinstance(h, int) and not isinstance(h, bool) for h in self.hidden)):
            raise ValueError(f"hidden must be a tuple of layer widths, got {self.hidden!r}")
        for i, h in enumerate(self.hidden):
            check_int(f"hidden[{i}]", h, 1, 4096)
        if self.lr_schedule not in ("constant", "cosine"):
            raise ValueError(f"lr_schedule must be one of constant, cosine, got {self.lr_schedule!r}")
        if self.family is not None and self.family not in FAMILIES:
            raise ValueError(f"family must be one of {', '.join(FAMILIES)} (or None: the method's own), "
                             f"got {self.family!r}")
        for name, _ in self.family_options:
            allowed = FAMILY_OPTIONS.get(self.family or "", ())
            if name not in allowed:
                raise ValueError(f"family option {name!r} does not apply to family {self.family!r} "
                                 f"(it takes: {', '.join(allowed) or 'none'})")
        if isinstance(self.split, str):
            if self.split not in SPLITS:
                raise ValueError(f"split must be an integer 0..L or one of {', '.join(SPLITS)}, got {self.split!r}")
        else:
            check_int("split", self.split, 0, len(self.hidden) + 1)
        check_int("r_max", self.r_max, 1, 63)
        if self.p_zero is not None and not (isinstance(self.p_zero, (int, float)) and 0 <= self.p_zero < 1):
            raise ValueError(f"p_zero must be a fraction in [0, 1) or None (the schedule), got {self.p_zero!r}")
        check_int("b_zo", self.b_zo, 1, 7)
        if self.b_bp is not None:
            check_int("b_bp", self.b_bp, 1, 7)
        if self.loss_sign not in LOSS_SIGNS:
            raise ValueError(f"loss_sign must be one of {', '.join(LOSS_SIGNS)}, got {self.loss_sign!r}")
        check_int("mu_weight", self.mu_weight, 1, 127)
        check_int("mu_node", self.mu_node, 1, 127)
        if self.perturbation not in PERTURBATIONS:
            raise ValueError(f"perturbation must be one of {', '.join(PERTURBATIONS)}, got {self.perturbation!r}")
        if isinstance(self.block, str):
            if self.block not in BLOCKS:
                raise ValueError(f"block must be a layer index 0..L-1 or one of {', '.join(BLOCKS)}, got {self.block!r}")
        else:
            check_int("block", self.block, 0, len(self.hidden))
        check_int("weight_bits", self.weight_bits, 4, 16)
        check_int("act_bits", self.act_bits, 2, 16)
        if self.z_scale not in Z_SCALES:
            raise ValueError(f"z_scale must be one of {', '.join(Z_SCALES)}, got {self.z_scale!r}")

    # -- resolved hyperparameters ------------------------------------------------------------------
    @property
    def learning_rate(self) -> float:
        return LR_DEFAULTS[self.method] if self.lr is None else float(self.lr)

    @property
    def epsilon(self) -> float:
        return EPS_DEFAULTS[self.method] if self.eps is None else float(self.eps)

    @property
    def n_queries(self) -> int:
        return QUERY_DEFAULTS[self.method] if self.queries is None else self.queries

    def split_point(self, layers: int) -> int:
        """ElasticZO's C for a net of ``layers`` layers (one error if outside 0..L)."""
        if isinstance(self.split, int):
            c = self.split
        else:
            c = {"full-zo": layers, "cls2": layers - 1, "cls1": layers - 2, "full-bp": 0}[self.split]
        if not 0 <= c <= layers:
            raise ValueError(f"split must be in 0..{layers} for a {layers}-layer net, got {self.split!r} (C = {c})")
        return c

    def lr_at(self, step: int, base: float | None = None) -> float:
        """The learning rate ``base`` (default ``learning_rate``) under the schedule at ``step``."""
        base = self.learning_rate if base is None else base
        if self.lr_schedule == "cosine":
            return base * 0.5 * (1 + math.cos(math.pi * step / self.steps))
        return base

    @property
    def bp_learning_rate(self) -> float:
        return BP_LR_DEFAULT if self.bp_lr is None else float(self.bp_lr)

    def phase(self, step: int) -> int:
        """0, 1, 2: before 20 %, before 50 %, after 50 % of the steps (the papers' epochs 20 and 50 of 100)."""
        return 0 if step < 0.2 * self.steps else 1 if step < 0.5 * self.steps else 2

    def replace(self, **changes) -> "MethodConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["family_options"] = dict(self.family_options)
        out["hidden"] = list(self.hidden)
        return out

    def sampler(self, dim: int, salt: int = 0):
        """The plugged-in ``golden.families`` sampler of dimension ``dim`` (None: the method's own)."""
        if self.family is None:
            return None
        from pezo.golden.zo.families import make_sampler

        return make_sampler(self.family, dim, seed=self.seed * 7919 + salt + 1, **dict(self.family_options))


@dataclass
class StepStats:
    """What one step cost: its mean loss, forward passes (full or suffix) and their MACs."""

    loss: float
    forward_passes: int
    forward_macs: int


class FloatMLPMethod:
    """Evaluation and checkpoints of a method training the float MLP ``self.params`` in place."""

    params: dict

    def logits(self, x):
        from pezo.golden.methods.nets import forward

        return forward(self.params, x)[0]

    def state(self):
        return {k: v.copy() for k, v in self.params.items()}

    def load_state(self, state):
        for k, v in state.items():
            self.params[k][...] = v


class MeZOMethod(FloatMLPMethod):
    """MeZO on the float MLP (``golden.mezo.MeZO``, stream mode: the FPGA's read-only perturbation)."""

    def __init__(self, config: MethodConfig, task):
        from pezo.golden.zo.families import make_sampler
        from pezo.golden.zo.mezo import MeZO, MeZOConfig
        from pezo.golden.methods.nets import layers_of, weight_name

        self.config, self.task = config, task
        self.params = task.start
        names = [weight_name(i) for i in range(layers_of(self.params))]
        dim = sum(self.params[n].size for n in names)
        sampler = config.sampler(dim) or make_sampler("gaussian", dim, seed=config.seed + 1)
        self.sampler = sampler
        self.mezo_config = MeZOConfig(lr=config.learning_rate, eps=config.epsilon, queries=config.n_queries,
                                      mode="stream")
        self.optimiser = MeZO(self.params, names, sampler, self.mezo_config)
        self.trainable_params = dim

    def step(self, step, next_batch):
        from dataclasses import replace as dc_replace

        from pezo.golden.methods.nets import forward, forward_macs
        from pezo.golden.zo.trainer import cross_entropy

        x, y = next_batch()
        self.optimiser.config = dc_replace(self.mezo_config, lr=self.config.lr_at(step))
        record = self.optimiser.step(step, lambda p: cross_entropy(forward(p, x)[0], y))
        q = self.config.n_queries
        return StepStats(record.loss, 2 * q, 2 * q * forward_macs(self.task.sizes, len(y)))

    def describe(self):
        return {"sampler": self.sampler.describe(), "eps": self.config.epsilon, "queries": self.config.n_queries}


def make_method(config: MethodConfig, task):
    if config.method == "mezo":
        return MeZOMethod(config, task)
    if config.method == "elasticzo":
        from pezo.golden.methods.elasticzo import ElasticZO

        return ElasticZO(config, task)
    if config.method == "elasticzo-int8":
        from pezo.golden.methods.elasticzo import ElasticZOInt8

        return ElasticZOInt8(config, task)
    if config.method == "poormans":
        from pezo.golden.methods.poormans import PoorMans

        return PoorMans(config, task)
    from pezo.golden.methods.stepping_forward import SignMSPSA

    return SignMSPSA(config, task)


def accuracy(method, x, y, batch: int = 512) -> float:
    correct = 0
    for s in range(0, len(y), batch):
        correct += int((method.logits(x[s:s + batch]).argmax(axis=1) == y[s:s + batch]).sum())
    return correct / len(y)


def batch_stream(n: int, batch: int, rng: np.random.Generator):
    """Endless index batches: an epoch-wise shuffle of range(n), cut into ``batch`` pieces."""
    size = min(batch, n)
    while True:
        order = rng.permutation(n)
        for s in range(0, n - size + 1, size):
            yield order[s:s + size]


def train_method(config: MethodConfig, progress: bool = False, task=None) -> dict:
    """Run ``config``; the summary (module docstring). ``task`` overrides ``golden.zo_tasks.load``."""
    from pezo.golden.methods.nets import forward_macs
    from pezo.golden.methods.memory import method_memory
    from pezo.golden.methods.tasks import load

    task = task or load(config.task, config.seed, hidden=config.hidden, shots=config.shots, progress=progress)
    method = make_method(config, task)
    start_accuracy = accuracy(method, task.x_test, task.y_test)
    best_val = start_val = accuracy(method, task.x_val, task.y_val)
    best_step, best = 0, method.state()
    rng = np.random.default_rng([config.seed, 0xBA7C])
    indices = batch_stream(len(task.y_train), config.batch_size, rng)

    def next_batch():
        idx = next(indices)
        return task.x_train[idx], task.y_train[idx]

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=config.steps, desc=f"{config.method} {config.task}", unit="step", file=sys.stderr)
    losses, val_history, passes, macs, seconds = [], [(0, best_val)], 0, 0, 0.0
    for step in range(config.steps):
        t0 = time.perf_counter()
        stats = method.step(step, next_batch)
        seconds += time.perf_counter() - t0
        if not math.isfinite(stats.loss):
            raise FloatingPointError(f"loss is not finite at step {step} (lr={config.learning_rate})")
        losses.append(stats.loss)
        passes += stats.forward_passes
        macs += stats.forward_macs
        if (step + 1) % config.eval_every == 0 or step + 1 == config.steps:
            val = accuracy(method, task.x_val, task.y_val)
            val_history.append((step + 1, val))
            if val > best_val:
                best_val, best_step, best = val, step + 1, method.state()
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-20:]):.4f}", val=f"{val_history[-1][1]:.3f}")
    if bar is not None:
        bar.close()
    final_test = accuracy(method, task.x_test, task.y_test)
    if best_step != config.steps:
        method.load_state(best)
    test_accuracy = accuracy(method, task.x_test, task.y_test)
    full = forward_macs(task.sizes, config.batch_size)
    summary = {
        "method": config.method, "family": config.family or "native", "task": config.task,
        "shots": config.shots if config.task not in ("digits", "digits-rot30", "digits-rot45") else len(task.y_train),
        "steps": config.steps, "seed": config.seed, "test_accuracy": test_accuracy,
        "start_accuracy": start_accuracy, "seconds_per_step": seconds / config.steps,
        "final_test_accuracy": final_test, "best_step": best_step, "best_val_accuracy": best_val,
        "start_val_accuracy": start_val, "val_history": val_history,
        "train_loss_start": float(np.mean(losses[:20])), "train_loss_end": float(np.mean(losses[-20:])),
        "trainable": "all layers" if config.method != "poormans" else f"block {config.block}",
        "trainable_params": int(method.trainable_params), "forward_passes": int(passes),
        "forward_equivalents": macs / full if full else 0.0,
        "train_size": int(len(task.y_train)), "val_size": int(len(task.y_val)), "test_size": int(len(task.y_test)),
        "split": config.split if config.method.startswith("elasticzo") else None,
        "sizes": list(task.sizes), "memory_bytes": method_memory(config, task.sizes),
        "method_details": method.describe(), "task_info": task.info, "config": config.to_dict(),
    }
    summary["sampler"] = summary["method_details"].get("sampler", {"family": summary["family"]})
    return summary
