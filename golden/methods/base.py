"""The seed methods' shared interface: one run's configuration and what every method returns.

``MethodConfig`` is one run (every field validated on construction; ``lr`` / ``eps`` / ``queries`` of
``None`` take the method's default), ``StepStats`` what one step cost, ``FloatMLPMethod`` the
evaluation and checkpoints of a method training the float MLP in place, ``accuracy`` and
``batch_stream`` the evaluation and mini-batch helpers. The methods (``elasticzo``, ``poormans``,
``stepping_forward``) build on this module; ``pezo.golden.methods.registry`` (``make_method``,
``train_method``, ``MeZOMethod``) sits above them.

Interface: a method object has ``step(step, next_batch) -> StepStats`` (``next_batch()`` yields (x, y);
a method may take several batches per step), ``logits(x)`` (float, for evaluation), ``state()`` /
``load_state(s)`` (checkpoints), ``trainable_params`` and ``describe()``. ``family=None`` is the
method's own generator (Gaussian for mezo/elasticzo/sign-m-spsa, sparse uniform integers for
elasticzo-int8, XORShift32 Rademacher for poormans); any ``pezo.golden.zo.families`` family (e.g.
``pezo-otf``) replaces it, mapped to the method's integer format as each module documents.

Schedules given in the papers' epochs (p_zero 0.33/0.5/0.9 and b_BP 5/4/3 at epochs 0/20/50 of 100)
are scaled to the run: ``MethodConfig.phase`` switches at 20 % and 50 % of ``steps``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from pezo.golden.config import check_int
from pezo.golden.methods.nets import forward
from pezo.golden.methods.tasks import all_tasks
from pezo.golden.zo.families import FAMILIES, FAMILY_OPTIONS, make_sampler

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
    (``BP_LR_DEFAULT``; the paper tunes one eta per configuration, which for a shared eta starves the tail). r_max,
    p_zero (a fraction, or None = the schedule), b_zo, b_bp (None = the schedule), loss_sign: ElasticZO-INT8.
    mu_weight, mu_node, perturbation, block: Poor Man's.
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
        if not (
            isinstance(self.hidden, tuple) and all(isinstance(h, int) and not isinstance(h, bool) for h in self.hidden)
        ):
            raise ValueError(f"hidden must be a tuple of layer widths, got {self.hidden!r}")
        for i, h in enumerate(self.hidden):
            check_int(f"hidden[{i}]", h, 1, 4096)
        if self.lr_schedule not in ("constant", "cosine"):
            raise ValueError(f"lr_schedule must be one of constant, cosine, got {self.lr_schedule!r}")
        if self.family is not None and self.family not in FAMILIES:
            raise ValueError(
                f"family must be one of {', '.join(FAMILIES)} (or None: the method's own), got {self.family!r}"
            )
        for name, _ in self.family_options:
            allowed = FAMILY_OPTIONS.get(self.family or "", ())
            if name not in allowed:
                raise ValueError(
                    f"family option {name!r} does not apply to family {self.family!r} "
                    f"(it takes: {', '.join(allowed) or 'none'})"
                )
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
                raise ValueError(
                    f"block must be a layer index 0..L-1 or one of {', '.join(BLOCKS)}, got {self.block!r}"
                )
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

    def replace(self, **changes) -> MethodConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["family_options"] = dict(self.family_options)
        out["hidden"] = list(self.hidden)
        return out

    def sampler(self, dim: int, salt: int = 0):
        """The plugged-in ``pezo.golden.zo.families`` sampler of dimension ``dim`` (None: the method's own)."""
        if self.family is None:
            return None
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
        return forward(self.params, x)[0]

    def state(self):
        return {k: v.copy() for k, v in self.params.items()}

    def load_state(self, state):
        for k, v in state.items():
            self.params[k][...] = v


def accuracy(method, x, y, batch: int = 512) -> float:
    correct = 0
    for s in range(0, len(y), batch):
        correct += int((method.logits(x[s : s + batch]).argmax(axis=1) == y[s : s + batch]).sum())
    return correct / len(y)


def batch_stream(n: int, batch: int, rng: np.random.Generator):
    """Endless index batches: an epoch-wise shuffle of range(n), cut into ``batch`` pieces."""
    size = min(batch, n)
    while True:
        order = rng.permutation(n)
        for s in range(0, n - size + 1, size):
            yield order[s : s + size]
