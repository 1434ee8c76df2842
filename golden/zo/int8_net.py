"""Golden INT8 ZO training of a whole network on the PE array (``pezo.golden.engine.network``), and its
float reference.

**Nets and data** (``pezo.golden.engine.nets``):

* ``digits-mlp`` (64-32-32-10) -- scikit-learn's bundled 8 x 8 digits (1 797 images, offline). Split as
  ``golden.methods``' ``digits`` task: a permutation from ``np.random.default_rng([seed, 0xD1])`` gives
  1 000 train, 300 validation and 497 test images. Inputs: the methods' float pixels ``x / 8 - 1`` in
  [-1, 1] quantised at the activation exponent s_x = -7, i.e. ``q = sat(16 * pixel - 128, -128, 127)``
  (pixel 16 -> 128 saturates to 127: one LSB; every other pixel value 0..15 is exact).
* ``rt-mlp`` (384-64-2), ``rt-head`` (384-2) -- Rotten Tomatoes as ``pezo train-int8``: the int8
  all-MiniLM-L6-v2 embeddings of ``pezo.golden.zo.int8_head.Int8Task`` (k shots per class for training
  and for validation, 1 000 test examples, fixed by ``seed``; s_x = NITI's exponent of the training set).

**Init** (seeded, ``np.random.default_rng([seed, 0x1417])``): ``rt-head`` starts from zero as
``int8_head`` does. Every hidden layer draws w0 ~ N(0, 1) and is scaled layer after layer on the
training inputs by the engine's own integer forward: layer l gets w = sat(round(a_l * w0), -127, 127)
with a_l chosen so that its requantised pre-activation ``round_shift(acc, shift_l)`` has standard
deviation ``init_std`` LSB (default 32: a quarter of the int8 range, so the ReLU outputs use the range
without saturating much); ``init_scale`` multiplies every a_l (1 = the calibrated start). The last layer
starts from zero (``last_init="zero"``, the default) or, calibrated, at a logit standard deviation of
``init_std * 2^7`` (the logits are not shifted; 2^7 puts them on the scale of the margin). The chosen
a_l, the weights' spread and the hidden activations' statistics are in the result (``init``). At the
digits-mlp preset shifts (10, 9) the second layer would need a weight std of ~97 LSB: 22 % of its
weights saturate at +-127 and its pre-activation std reaches ~26 LSB, not 32 (measured; 10/9 trained as
well as 10/8, where nothing saturates, and is what the three-seed evidence used).

Why the last layer starts at zero: from a random classifier every ZO step that shrinks the logits
lowers the hinge loss (a random classifier pays about 1.5 logit standard deviations beyond the
margin per example), and with fixed requantisation shifts the cheapest way to shrink them is to drive
one hidden layer's pre-activations below zero. Measured on digits-mlp (calibrated last layer, sign g):
the second hidden layer is 100 % dead after 300 steps, all logits 0, L+ = L- and g = 0 forever. From a
zero last layer the start is already at the margin and the loss falls only by classifying. The same
reasoning sets epsilon: with eps_shift <= 12 (|p| up to 2..8 LSB) the perturbed passes alone add logit
noise that the hinge penalises, and the net again learns to switch its hidden units off.

**Tuning** (``TUNED``; ``benchmarks/results/engine_net``): eps_shift = 13 (p in {-1, 0, 1}, about half 0),
sign g with g_lr = 2^16, i.e. w <- w -+ p: the smallest unbiased step -- for g_lr < 2^16, round-half-up
of g * p / 2^16 moves only one sign of p (+0.5 -> 1, -0.5 -> 0), and the weights drift one way until a
layer dies. The ``scaled`` mode cannot train these nets: |L+ - L-| is a few thousand logit LSBs
(digits-mlp, batch 128: median ~3 000), so even g_shift = 0 gives |g| ~ 0.05 and round(g * p) = 0; it
would need a left shift (a g_shift < 0) of about 5 bits. rt-mlp (512 training examples, 24 704 weights)
overfits at margin 4 096 (validation 0.71, test 0.61 for seed 1); margin 16 384 with batch 256 narrows
it, but ZO stays 6.5-7.3 points below the float probe whose L2 is chosen on validation (0.726 / 0.746 /
0.762, seeds 1-3; benchmarks/results/engine_net/accuracy.md). The update's integer weight decay
(``wd_shift``, ``TUNED_WD``) bounds the sign-SPSA random walk of every weight and narrows that gap. Large batches (128) pay: the stream, not the
array arithmetic, dominates the golden step time, and the sign of L+ - L- gets more reliable.

**A step** is the engine's exactly: ``on-chip`` -- ``NetEngine.train_step`` (both passes, the
Crammer-Singer hinge losses of ``golden.engine.loss`` with ``margin``, g = +-g_lr (``g_mode="sign"``) or
sat(round_shift(L+ - L-, g_shift)) (``"scaled"``), the update); ``host`` -- ``NetEngine.forward_zo``, the
host's g from the float cross-entropies (``host_g``: ``int8_head.update_scale`` generalised to a
network), ``NetEngine.update(g)``. Batches: ``int8_head.batch_schedule``. A step is two forward passes.

**Evaluation**: ``NetEngine.infer`` (the engine's exact arithmetic; argmax of the int32 logits, ties to
the lowest class), the split cut into engine batches (the last one padded with zero inputs whose
outputs are dropped). ``test_accuracy`` is at the best-validation checkpoint, or of the host's average of
the last ``average_last`` checkpoints when that is set (``checkpoint_average_val`` records the validation
accuracy of several such averages, for screening on validation).

**Float reference** (``train_float_mezo``): MeZO (``pezo.golden.zo.mezo``, stream mode, Gaussian z) on a
float32 MLP of the same shape (no biases, ReLU), same data (the dequantised int8 inputs divided by their
training RMS, so one learning rate suits both tasks), same batch schedule and forward-pass budget,
He-normal start, cross-entropy loss.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
import time
from dataclasses import dataclass

import numpy as np

from pezo.golden.config import DEFAULT_BIT_ORDER, check_int
from pezo.golden.engine.int8 import WEIGHT_MAX, WEIGHT_MIN, quantize, round_shift, saturate
from pezo.golden.engine.loss import G_SHIFT_RANGE, MAX_MARGIN, LossConfig
from pezo.golden.engine.nets import NET_NAMES, NETS, net_config
from pezo.golden.engine.network import Layer, NetConfig, NetEngine, weights_digest
from pezo.golden.engine.zo_engine import (ENGINE_STRATEGIES, G_MAX, G_MIN, MAX_BATCH, MAX_COLS, MAX_ROWS,
                                          WD_EVERY_RANGE, WD_SHIFT_RANGE, g_to_fixed)
from pezo.golden.lm.probe import fit_linear_probe_val
from pezo.golden.losses import cross_entropy
from pezo.golden.zo.families import make_sampler
from pezo.golden.zo.int8_head import STEPS_RANGE, Int8Task, Int8TrainConfig, batch_schedule
from pezo.golden.zo.mezo import MeZO, MeZOConfig

LOSSES = ("on-chip", "host")
LAST_INITS = ("zero", "calibrated", "probe")
HIDDEN_INITS = ("normal", "pca")
G_MODES = ("sign", "scaled")
NET_TASKS = {"digits-mlp": "digits", "rt-mlp": "rotten_tomatoes", "rt-head": "rotten_tomatoes"}
DIGITS_SPLIT = (1000, 300, 497)  # train, val, test (as golden.methods.tasks)
DIGITS_EXPONENT = -7
"""s_x of the digits inputs: q = sat((pixel / 8 - 1) * 2^7) = sat(16 * pixel - 128)."""
LOGIT_INIT_SHIFT = 7
CURVE_LOSS_WINDOW = 50


def _check_number(name: str, value, lo: float, hi: float, lo_open: bool = True) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > lo if lo_open else value >= lo) and value <= hi
    if not ok:
        bracket = "(" if lo_open else "["
        raise ValueError(f"{name} must be a finite number in {bracket}{lo:g}, {hi:g}], got {value!r}")


def _check_choice(name: str, value, choices) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(str, choices))}, got {value!r}")


@dataclass(frozen=True)
class NetTrainConfig:
    """One golden INT8 ZO run of a whole network (module docstring). The defaults are the tuned values
    (module docstring, ``TUNED``): sign g, g_lr 2^16, eps_shift 13, batch 128, margin 4096.

    net        -- ``digits-mlp`` | ``rt-mlp`` | ``rt-head`` (``pezo.golden.engine.nets``).
    loss       -- ``on-chip`` (the engine's hinge loss and g) | ``host`` (float cross-entropy g on the host).
    g_mode     -- on-chip g: ``sign`` (g = +-g_lr) | ``scaled`` (g = sat(round_shift(L+ - L-, g_shift))).
    margin     -- hinge margin in logit LSBs, 0..2^23-1.
    g_lr       -- sign mode's |g|, Q8.16, 1..2^23-1 (2^16 = one weight LSB per unit of p).
    g_shift    -- scaled mode's shift, 0..47.
    lr         -- host mode: MeZO's learning rate on the real weights (value = q * 2^weight_exponent), > 0.
    steps, eval_every -- ZO steps (1..10^7) and the validation interval (1..10^7).
    seed       -- data split, initial weights and batch order, 1..16383.
    stream_seed -- the perturbation stream's seed (``NetConfig.seed``), 1..16383; 0 = ``seed``.
    strategy, rows, cols, batch, eps_shift, rng_bits, pool_size, pool_bits, lfsr_leap, lfsr_bit_order -- the
                 engine (``NetConfig``; epsilon = 2^(12 - eps_shift) weight LSBs).
    shots      -- rt nets: k examples per class for training and for validation, 1..2^20.
    test_size  -- rt nets: test examples, 1..100 000.
    init_std   -- the calibrated start's requantised pre-activation std in LSBs, (0, 127].
    init_scale -- multiplies the calibrated weights, (0, 16].
    last_init  -- the last layer's start: ``zero`` (logits 0: the hinge starts at its margin) or
                  ``calibrated`` (logit std ``init_std * 2^7``).
    hidden_init -- the hidden layers' directions before the calibration: ``normal`` (w0 ~ N(0, 1)) or
                  ``pca`` (label-free: the top N/2 principal directions of the layer's int8 training
                  inputs and their negatives, ``pca_directions``), both scaled by the same calibration.
    shifts     -- None (the preset's circuit) or one requantisation shift per hidden layer, 0..31: a
                  different circuit, for the shift study only.
    wd_shift   -- the update's integer weight decay ``w -= round_shift(w, wd_shift)`` (``LossConfig.wd_shift``,
                  a run-time register of the engine), 0..7; 0 = off (the default: the plain update).
    wd_every   -- the decay acts on every ``wd_every``-th step only (steps wd_every, 2 wd_every, ...),
                  1..255: the engine's WD_EVERY register and decay counter (``LossConfig.wd_every``), so
                  one TRAIN(S) command runs the schedule; 1 = every step.
    average_last -- the reported model: 0 = the best-validation checkpoint (the default); N >= 1 = the
                  mean of the weights at the last N validation checkpoints (``eval_every`` steps apart,
                  the last one after the final step), rounded half up to int8 -- host work only: the host
                  reads the weights back at each checkpoint (as it does to keep the best one) and loads
                  the average for inference, so no register or circuit changes. 1 = the final weights.
                  0..the number of checkpoints, ceil(steps / eval_every). Why: with sign-SPSA every
                  weight random-walks by +-1 LSB per step (``TUNED_WD``); averaging checkpoints of the
                  plateau cuts that noise and keeps the drift the gradient sign gives them all.
    """

    net: str = "digits-mlp"
    loss: str = "on-chip"
    g_mode: str = "sign"
    margin: int = 4096
    g_lr: int = 1 << 16
    g_shift: int = 8
    lr: float = 1e-3
    steps: int = 4000
    eval_every: int = 250
    seed: int = 1
    stream_seed: int = 0
    strategy: str = "otf"
    rows: int = 8
    cols: int = 8
    batch: int = 128
    eps_shift: int = 13
    rng_bits: int = 14
    pool_size: int = 4095
    pool_bits: int = 12
    lfsr_leap: int = 1
    lfsr_bit_order: str = DEFAULT_BIT_ORDER
    shots: int = 256
    test_size: int = 1000
    init_std: float = 32.0
    init_scale: float = 1.0
    last_init: str = "zero"
    hidden_init: str = "normal"
    shifts: tuple | None = None
    wd_shift: int = 0
    wd_every: int = 1
    average_last: int = 0

    def __post_init__(self):
        _check_choice("net", self.net, NET_NAMES)
        _check_choice("loss", self.loss, LOSSES)
        _check_choice("g_mode", self.g_mode, G_MODES)
        check_int("margin", self.margin, 0, MAX_MARGIN)
        check_int("g_lr", self.g_lr, 1, G_MAX)
        check_int("g_shift", self.g_shift, *G_SHIFT_RANGE)
        _check_number("lr", self.lr, 0, 1e6)
        check_int("steps", self.steps, *STEPS_RANGE)
        check_int("eval_every", self.eval_every, *STEPS_RANGE)
        check_int("seed", self.seed, 1, 16383)
        check_int("stream_seed", self.stream_seed, 0, 16383)
        _check_choice("strategy", self.strategy, ENGINE_STRATEGIES)
        check_int("rows", self.rows, 1, MAX_ROWS)
        check_int("cols", self.cols, 1, MAX_COLS)
        check_int("batch", self.batch, 1, MAX_BATCH)
        check_int("shots", self.shots, 1, 1 << 20)
        check_int("test_size", self.test_size, 1, 100_000)
        _check_number("init_std", self.init_std, 0, 127)
        _check_number("init_scale", self.init_scale, 0, 16)
        _check_choice("last_init", self.last_init, LAST_INITS)
        _check_choice("hidden_init", self.hidden_init, HIDDEN_INITS)
        if self.hidden_init == "pca":
            for i, layer in enumerate(NETS[self.net][:-1]):
                if layer.outputs % 2 or layer.outputs // 2 > layer.inputs:
                    raise ValueError(f"hidden_init='pca' needs every hidden layer's width to be even and at most "
                                     f"2 x its inputs; layer {i} of {self.net} is {layer.inputs} -> {layer.outputs}")
        check_int("wd_shift", self.wd_shift, *WD_SHIFT_RANGE)
        check_int("wd_every", self.wd_every, *WD_EVERY_RANGE)
        checkpoints = -(-self.steps // self.eval_every)
        if not (isinstance(self.average_last, int) and not isinstance(self.average_last, bool)
                and 0 <= self.average_last <= checkpoints):
            raise ValueError(f"average_last must be an integer in 0..{checkpoints} (the checkpoints of "
                             f"{self.steps} steps, one every {self.eval_every}), got {self.average_last!r}")
        if self.shifts is not None:
            hidden = len(NETS[self.net]) - 1
            if not isinstance(self.shifts, (tuple, list)) or len(self.shifts) != hidden:
                raise ValueError(f"shifts must be None or {hidden} shift(s), one per hidden layer of {self.net}, "
                                 f"got {self.shifts!r}")
            object.__setattr__(self, "shifts", tuple(self.shifts))
            for i, s in enumerate(self.shifts):
                check_int(f"shifts[{i}]", s, 0, 31)
        self.net_config  # the engine's own checks (tiling, batch, stream)
        self.loss_config

    @property
    def layers(self) -> tuple:
        layers = NETS[self.net]
        if self.shifts is None:
            return layers
        return tuple(dataclasses.replace(l, shift=s) for l, s in zip(layers, self.shifts)) + (layers[-1],)

    @property
    def net_config(self) -> NetConfig:
        array = dict(strategy=self.strategy, rows=self.rows, cols=self.cols, batch=self.batch,
                     eps_shift=self.eps_shift, rng_bits=self.rng_bits, seed=self.stream_seed or self.seed,
                     pool_size=self.pool_size, pool_bits=self.pool_bits, lfsr_leap=self.lfsr_leap,
                     lfsr_bit_order=self.lfsr_bit_order)
        if self.shifts is None:
            return net_config(self.net, **array)
        return NetConfig(layers=self.layers, name=self.net, **array)

    @property
    def loss_config(self) -> LossConfig:
        mode = self.g_mode if self.loss == "on-chip" else "host"
        return LossConfig(mode=mode, margin=self.margin, g_lr=self.g_lr, g_shift=self.g_shift, wd_shift=self.wd_shift,
                          wd_every=self.wd_every)

    @property
    def eps_lsb(self) -> float:
        """epsilon in weight LSBs: 2^(12 - eps_shift)."""
        return 2.0 ** (12 - self.eps_shift)

    def replace(self, **changes) -> "NetTrainConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["shifts"] = list(self.shifts) if self.shifts is not None else None
        return out

    @classmethod
    def from_dict(cls, fields: dict) -> "NetTrainConfig":
        fields = dict(fields)
        unknown = set(fields) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"unknown NetTrainConfig field(s): {', '.join(sorted(unknown))}")
        if fields.get("shifts") is not None:
            fields["shifts"] = tuple(fields["shifts"])
        return cls(**fields)


TUNED = {
    "digits-mlp": NetTrainConfig(net="digits-mlp", steps=8000),
    "rt-mlp": NetTrainConfig(net="rt-mlp", steps=4000, lr=0.02, margin=16384, batch=256),
    "rt-head": NetTrainConfig(net="rt-head", steps=4000, lr=0.02),
}
"""The hyperparameters the accuracy evidence uses (``benchmarks/bench_int8_net.py``), per net: the
defaults (sign g, g_lr 2^16, eps_shift 13, batch 128, margin 4096) and the step count; rt-mlp trains
with margin 16 384 and batch 256 (pregen screening, seed 3: 0.631 at the defaults, 0.682 with margin
16 384, 0.699 with both; seed 1: 0.654 with margin 16 384 against the fixed-L2 probe's 0.633, which is
0.726 with its L2 chosen on validation). ``lr`` is the
host mode's (measured, seed 1: digits-mlp 1e-3 -> 0.734 after 2 000 steps, 3e-3 0.549, 1e-2 0.187;
rt-mlp 0.02 -> 0.632 after 1 000 steps, 0.1 0.576; rt-head's 0.02 is untested)."""

TUNED_WD = {
    "rt-mlp": TUNED["rt-mlp"].replace(wd_shift=6, wd_every=2, average_last=8),
}
"""``TUNED`` plus the update's integer weight decay, per net where it was screened
(``experiments/screen_rt_mlp.py``, pregen stream, chosen on validation only;
``benchmarks/results/engine_net/screen``). rt-mlp: ``w -= round_shift(w, 6)`` on every second step
(the engine's WD_EVERY register), and the reported model is the host's mean of the last 8 of
the 16 validation checkpoints (``average_last``: the second half of the run, where the training loss
has stopped falling). Validation, seed 1 / seed 2, of that average: 76.4 / 69.9 against 74.7 / 68.8
for the mean over the same checkpoints of their own validation accuracy (the expected score of one
plateau checkpoint; best checkpoint 76.6 / 70.9, but that is the maximum of 16 noisy scores); the last
4 average 75.4 / 68.4, all 16 75.8 / 71.1 (mixed; it includes the first, untrained checkpoints), the
last 16 of 32 with eval_every 125 76.2 / 70.3 (no better). Levers screened with this decay and not
taken (second-half validation mean / mean of the last half of the checkpoints, seed 1; seed 2 where
run): batch 512 (the whole training set, a noise-free loss) 74.1 / 75.0 -- so batch noise is not what
limits it; 8 000 steps 75.3 / 76.6 and 68.7 / 69.1 (no gain over 4 000: the loss is flat after
~3 000); margin 32 768 73.2 / 74.6 and 68.0 / 68.2, 65 536 72.9 / 74.0. eps_shift 14 makes every
p zero (rng_bits 14) and scaled g rounds to 0 (|L+ - L-| ~ 4 000 < 2^15 at g_shift 0), so neither
exists as a lever. Earlier screening (decay, best validation, seed 1 / seed 2): no decay 73.8 / 70.7,
wd_shift 4 / 5 / 6 / 7 every step 66.2 / 70.7 / 75.0 (69.5) / 73.6, 6 every 2nd step 76.6 / 70.9 (the
highest two-seed mean), 6 every 4th 75.6; 6 with margin 8192 76.2 / 68.9, with init_scale 0.5 75.2; the
probe as the starting head (no decay) 74.0. Round-half-up decay has a dead zone: shift s never moves
|w| < 2^(s-1), so s = 6 acts only on |w| >= 32 (one LSB, two from 96) and holds the weights near +-32
against the +-1 random walk of sign-SPSA (without it the mean |w - w0| after 4 000 steps is ~33 LSB,
the size of the calibrated first layer's weights). The label-free PCA start of the hidden layer
(``hidden_init="pca"``: its fixed features carry a probe of 71.5 / 72.7 / 74.1 % test against 62.9 /
63.7 / 62.1 % for the normal start, seeds 1-3; ``experiments/probe_hidden_features.py``) does not help ZO: the validation average of the last 8
checkpoints is 74.2 / 68.9 without decay, 71.7 / 66.8 with this decay (it erodes the directions), 75.4 /
69.5 with wd_shift 7, 72.5 / 69.9 with margin 8192, all below the 76.4 / 69.9 of ``TUNED_WD``."""


# -- data ------------------------------------------------------------------------------------------
@dataclass
class NetData:
    """int8 inputs, labels and float inputs per split; the activation exponent s_x; the classes."""

    x: dict
    y: dict
    float_x: dict
    act_exponent: int
    classes: int
    info: dict
    probe_accuracy: float | None = None
    backprop: dict | None = None


@functools.lru_cache(maxsize=1)
def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    data = load_digits()
    return data.images.reshape(len(data.images), 64).astype(np.float64), data.target.astype(np.int64)


def digits_split(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """train, val, test indices (``golden.methods.tasks.digits_split``'s permutation)."""
    images, _ = _digits()
    order = np.random.default_rng([seed, 0xD1]).permutation(len(images))
    a, b, _ = DIGITS_SPLIT
    return order[:a], order[a:a + b], order[a + b:]


def quantize_digits(pixels) -> np.ndarray:
    """Pixels 0..16 -> int8 at s_x = -7: sat(16 * pixel - 128, -128, 127) (round half up; exact)."""
    return quantize(np.asarray(pixels, dtype=np.float64) / 8.0 - 1.0, DIGITS_EXPONENT)


@functools.lru_cache(maxsize=8)
def _load_data(net: str, seed: int, shots: int, test_size: int) -> NetData:
    if NET_TASKS[net] == "digits":
        images, labels = _digits()
        splits = dict(zip(("train", "val", "test"), digits_split(seed)))
        x = {n: quantize_digits(images[i]) for n, i in splits.items()}
        return NetData(x, {n: labels[i] for n, i in splits.items()},
                       {n: np.ldexp(v.astype(np.float64), DIGITS_EXPONENT) for n, v in x.items()},
                       DIGITS_EXPONENT, 10, {"data": "sklearn digits", "split": list(DIGITS_SPLIT)})
    head = Int8TrainConfig(shots=shots, seed=seed, test_size=test_size)
    task = Int8Task.load(head)
    return NetData(task.x, task.y, task.float_x, task.act_exponent, task.classes,
                   {"data": head.task, "shots": shots, "features": "int8 MiniLM embeddings (int8_head.Int8Task)"})


def load_data(config: NetTrainConfig) -> NetData:
    """The net's data for ``config.seed`` (cached per (net task, seed, shots, test_size))."""
    key_net = "digits-mlp" if NET_TASKS[config.net] == "digits" else "rt-mlp"
    shots, test = (0, 0) if key_net == "digits-mlp" else (config.shots, config.test_size)
    return _load_data(key_net, config.seed, shots, test)


# -- init ------------------------------------------------------------------------------------------
def probe_head(h_train, y_train, h_val, y_val, classes: int) -> tuple[np.ndarray, dict]:
    """``last_init="probe"``: the float linear probe (``golden.lm.probe``, L2 chosen on the validation
    split) on the fixed int8 hidden features of the calibrated start (divided by their training RMS),
    quantised to the last layer's int8 weights: w = round(W * 127 / max|W|) (round half up). The net has
    no bias, so the probe's intercept b is dropped (for two balanced classes b is small; the start
    accuracy the trainer reports is the quantised, bias-free head's, by the engine's inference)."""
    h_train = np.asarray(h_train, dtype=np.float64)
    rms = max(float(np.sqrt(np.mean(np.square(h_train)))), 1e-12)
    h_val = np.asarray(h_val, dtype=np.float64) / rms
    w, b, l2 = fit_linear_probe_val(h_train / rms, y_train, h_val, y_val, classes)
    val = float(((h_val @ w.T + b).argmax(axis=1) == np.asarray(y_val)).mean())
    w_q = saturate(np.floor(np.asarray(w, dtype=np.float64) * (WEIGHT_MAX / max(float(np.abs(w).max()), 1e-12)) + 0.5),
                   WEIGHT_MIN, WEIGHT_MAX)
    return w_q, {"layer": "last", "start": "probe", "probe_l2": l2, "probe_val_accuracy": round(val, 4),
                 "probe_bias_dropped": [round(float(v), 4) for v in b]}


def pca_directions(h, outputs: int) -> np.ndarray:
    """``hidden_init="pca"``: [V; -V] (float, ``outputs`` x inputs), V the top ``outputs / 2`` principal
    directions (unit rows, by decreasing variance) of the rows of ``h`` (the layer's int8 training inputs),
    centred -- no labels. The pair keeps every projection through the ReLU, relu(v.x) - relu(-v.x) = v.x,
    so the hidden layer starts as a lossless linear map of the inputs' top subspace (the net has no bias;
    the inputs' mean stays in the projection). Each direction's sign is fixed so that its largest |entry|
    is positive (SVD signs are arbitrary)."""
    h = np.asarray(h, dtype=np.float64)
    half = outputs // 2
    if outputs % 2 or half > min(h.shape):
        raise ValueError(f"pca init needs an even width of at most 2 x min(examples, inputs) = {2 * min(h.shape)}, "
                         f"got {outputs}")
    _, _, vt = np.linalg.svd(h - h.mean(axis=0), full_matrices=False)
    v = vt[:half]
    v = v * np.where(v[np.arange(half), np.abs(v).argmax(axis=1)] < 0, -1.0, 1.0)[:, None]
    return np.concatenate([v, -v])


def init_weights(config: NetTrainConfig, x_train: np.ndarray, data: "NetData | None" = None
                 ) -> tuple[list[np.ndarray], dict]:
    """The seeded, calibrated int8 start (module docstring) and its statistics (``last_init="probe"``
    needs ``data``: the validation split chooses the probe's L2)."""
    net = config.net_config
    if config.net == "rt-head":
        return [np.zeros((l.outputs, l.inputs), dtype=np.int64) for l in net.layers], {"start": "zero"}
    if config.last_init == "probe" and data is None:
        raise ValueError("last_init='probe' needs the data (the validation split chooses the probe's L2)")
    rng = np.random.default_rng([config.seed, 0x1417])
    h = np.asarray(x_train, dtype=np.int64)
    h_val = np.asarray(data.x["val"], dtype=np.int64) if data is not None else None
    weights, stats = [], []
    last = len(net.layers) - 1
    for i, layer in enumerate(net.layers):
        w0 = rng.standard_normal((layer.outputs, layer.inputs))  # drawn for every layer: one seeded stream
        if i < last and config.hidden_init == "pca":
            w0 = pca_directions(h, layer.outputs)
        if i == last and config.last_init == "zero":
            weights.append(np.zeros_like(w0, dtype=np.int64))
            stats.append({"layer": i, "start": "zero"})
            break
        if i == last and config.last_init == "probe":
            w, entry = probe_head(h, data.y["train"], h_val, data.y["val"], layer.outputs)
            weights.append(w.astype(np.int64))
            stats.append(entry)
            break
        pre = h.astype(np.float64) @ w0.T
        target = config.init_std * 2.0 ** (layer.shift if i < last else LOGIT_INIT_SHIFT)
        scale = config.init_scale * target / max(float(pre.std()), 1e-12)
        w = saturate(np.floor(w0 * scale + 0.5), WEIGHT_MIN, WEIGHT_MAX)
        acc = h @ w.T
        entry = {"layer": i, "directions": config.hidden_init if i < last else "normal", "scale": round(scale, 4),
                 "weight_std": round(float(w.std()), 3),
                 "weight_saturated": round(float(np.mean(np.abs(w) == WEIGHT_MAX)), 5)}
        if i < last:
            pre_q = round_shift(acc, layer.shift)
            h = saturate(pre_q, 0 if layer.relu else WEIGHT_MIN, WEIGHT_MAX)
            if h_val is not None:
                h_val = saturate(round_shift(h_val @ w.T, layer.shift), 0 if layer.relu else WEIGHT_MIN, WEIGHT_MAX)
            entry.update(pre_std=round(float(pre_q.std()), 2), act_mean=round(float(h.mean()), 2),
                         act_saturated=round(float(np.mean(h == WEIGHT_MAX)), 5),
                         act_zero=round(float(np.mean(h == 0)), 4))
        else:
            entry["logit_std"] = round(float(acc.std()), 1)
        weights.append(w)
        stats.append(entry)
    return weights, {"start": f"calibrated {config.hidden_init}", "layers": stats}


# -- evaluation and the host's g -------------------------------------------------------------------
def engine_logits(engine: NetEngine, x) -> np.ndarray:
    """``NetEngine.infer`` over any number of examples: engine batches, the last padded with zeros."""
    x = np.asarray(x, dtype=np.int64)
    b = engine.config.batch
    out = []
    for s in range(0, len(x), b):
        chunk = x[s:s + b]
        n = len(chunk)
        if n < b:
            chunk = np.concatenate([chunk, np.zeros((b - n, x.shape[1]), dtype=np.int64)])
        out.append(engine.infer(chunk)[:n])
    return np.concatenate(out)


def engine_accuracy(engine: NetEngine, x, y) -> float:
    return float((engine_logits(engine, x).argmax(axis=1) == np.asarray(y)).mean())


def logit_exponent(net: NetConfig, act_exponent: int) -> int:
    """The power of two one logit LSB is worth: s_x + sum of the layers' weight exponents + sum of the
    hidden layers' shifts (a hidden activation LSB is worth 2^(s_in + s_w + shift))."""
    return act_exponent + sum(l.weight_exponent for l in net.layers) + sum(l.shift for l in net.layers[:-1])


def host_g(logits_plus, logits_minus, labels, config: NetTrainConfig, act_exponent: int) -> tuple[int, float, float]:
    """The host's g (Q8.16) and the float cross-entropies l+, l-: ``int8_head.update_scale`` for a
    network. Logits are worth 2^``logit_exponent``; the perturbed weights share one exponent s_w (the
    presets' -7, the first layer's), so epsilon_real = eps_lsb * 2^s_w and g = lr * (l+ - l-) /
    (2 epsilon_real) / epsilon_real makes ``w -= round(g p)`` MeZO's ``W -= lr g z`` in weight LSBs."""
    net = config.net_config
    unit = 2.0 ** logit_exponent(net, act_exponent)
    loss_plus = cross_entropy(np.asarray(logits_plus, dtype=np.float64) * unit, labels)
    loss_minus = cross_entropy(np.asarray(logits_minus, dtype=np.float64) * unit, labels)
    eps_real = config.eps_lsb * 2.0 ** net.layers[0].weight_exponent
    projected = (loss_plus - loss_minus) / (2 * eps_real)
    return g_to_fixed(config.lr * projected / eps_real), loss_plus, loss_minus


def _bar(progress: bool, total: int, desc: str):
    if not progress:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="step", file=sys.stderr)


# -- training --------------------------------------------------------------------------------------
def train_int8_net(config: NetTrainConfig, progress: bool = False, data: NetData | None = None,
                   probe: bool = True) -> dict:
    """Golden INT8 ZO training of ``config.net`` with the engine's exact step (module docstring).

    Returns a summary with (at least) ``test_accuracy`` (best-validation checkpoint, or the average of the
    last ``average_last`` checkpoints: ``model``, ``model_val_accuracy``), ``start_accuracy``,
    ``forward_passes`` (2 per step), ``seconds_per_step`` (training steps only), ``net``, ``loss``,
    ``steps`` and ``curve`` (a list of {step, forward_passes, val_accuracy, train_loss}: ``train_loss`` is
    the mean over the last ``CURVE_LOSS_WINDOW`` steps of the trained loss -- the hinge per example in
    logit LSBs on-chip, the float cross-entropy on the host -- averaged over both passes)."""
    if not isinstance(config, NetTrainConfig):
        raise ValueError(f"config must be a NetTrainConfig, got {type(config).__name__}")
    data = data or load_data(config)
    net, loss_cfg = config.net_config, config.loss_config
    train_size = len(data.y["train"])
    if net.batch > train_size:
        raise ValueError(f"batch must be <= the {train_size} training examples, got {net.batch}")
    weights, init = init_weights(config, data.x["train"], data)
    engine = NetEngine(net, weights=weights)
    schedule = batch_schedule(train_size, net.batch, config.steps, config.seed)
    start_val = best_val = engine_accuracy(engine, data.x["val"], data.y["val"])
    start_test = engine_accuracy(engine, data.x["test"], data.y["test"])
    best_step, best_w = 0, engine.flat.copy()
    curve = [{"step": 0, "forward_passes": 0, "val_accuracy": start_val, "train_loss": None}]
    losses, zero_g, saturated_g = [], 0, 0
    checkpoints = []  # the weights at every validation checkpoint (host read-back)
    first_saturated = None  # the first step (1-based) whose g hit the Q8.16 limit
    bar = _bar(progress, config.steps, f"int8 ZO {config.net} {config.loss} {config.strategy}")
    seconds = 0.0
    for step, rows in enumerate(schedule):
        x, y = data.x["train"][rows], data.y["train"][rows]
        t0 = time.perf_counter()
        if config.loss == "on-chip":
            record = engine.train_step(x, y, loss_cfg)
            g = record.g
            seconds += time.perf_counter() - t0
            losses.append((record.loss_plus + record.loss_minus) / (2 * net.batch))
        else:
            plus, minus = engine.forward_zo(x)
            g, l_plus, l_minus = host_g(plus, minus, y, config, data.act_exponent)
            engine.update(g, loss_cfg.wd_shift, loss_cfg.wd_every)
            seconds += time.perf_counter() - t0
            losses.append(0.5 * (l_plus + l_minus))
        zero_g += g == 0
        saturated_g += g in (G_MIN, G_MAX)
        if g in (G_MIN, G_MAX) and first_saturated is None:
            first_saturated = step + 1
        if (step + 1) % config.eval_every == 0 or step + 1 == config.steps:
            val = engine_accuracy(engine, data.x["val"], data.y["val"])
            curve.append({"step": step + 1, "forward_passes": 2 * (step + 1), "val_accuracy": val,
                          "train_loss": float(np.mean(losses[-CURVE_LOSS_WINDOW:]))})
            checkpoints.append(engine.flat.copy())
            if val > best_val:
                best_val, best_step, best_w = val, step + 1, engine.flat.copy()
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-50:]):.4g}", val=f"{curve[-1]['val_accuracy']:.3f}")
    if bar is not None:
        bar.close()
    final_test = engine_accuracy(engine, data.x["test"], data.y["test"])
    final_w = engine.flat.copy()
    averages = {}  # validation accuracy of the mean of the last n checkpoints (diagnostic: validation only)
    for n in sorted({1, 2, 4, 8, 16, len(checkpoints) // 2, config.average_last} - {0}):
        if n <= len(checkpoints):
            engine.load_weights(average_weights(checkpoints[-n:]))
            averages[n] = engine_accuracy(engine, data.x["val"], data.y["val"])
    model_w = average_weights(checkpoints[-config.average_last:]) if config.average_last else best_w
    engine.load_weights(model_w)
    summary = {
        "net": config.net, "loss": config.loss, "g_mode": config.g_mode if config.loss == "on-chip" else "host",
        "strategy": config.strategy, "seed": config.seed, "split_seed": config.seed, "steps": config.steps,
        "test_accuracy": engine_accuracy(engine, data.x["test"], data.y["test"]),
        "start_accuracy": start_test, "final_test_accuracy": final_test,
        "best_step": best_step, "best_val_accuracy": best_val, "start_val_accuracy": start_val,
        "model": f"mean of the last {config.average_last} checkpoints" if config.average_last else "best-validation checkpoint",
        "model_val_accuracy": averages[config.average_last] if config.average_last else best_val,
        "checkpoint_average_val": {str(n): v for n, v in averages.items()},
        "forward_passes": 2 * config.steps, "seconds_per_step": seconds / config.steps, "curve": curve,
        "train_loss_start": float(np.mean(losses[:CURVE_LOSS_WINDOW])),
        "train_loss_end": float(np.mean(losses[-CURVE_LOSS_WINDOW:])),
        "zero_g_steps": int(zero_g), "g_saturated_steps": int(saturated_g),
        "g_saturated_first_step": first_saturated,
        "act_exponent": data.act_exponent, "logit_exponent": logit_exponent(net, data.act_exponent),
        "shifts": [l.shift for l in net.layers[:-1]], "weights": net.weights,
        "weight_range": [int(model_w.min()), int(model_w.max())],
        "final_weights_digest": weights_digest(final_w),
        "weight_change_lsb": float(np.abs(final_w - np.concatenate([w.ravel() for w in weights])).mean()),
        "init": init, "train_size": train_size, "val_size": len(data.y["val"]), "test_size": len(data.y["test"]),
        "data": data.info, "config": config.to_dict(),
    }
    if probe and NET_TASKS[config.net] != "digits":
        summary.update(float_probe(data))
        summary["gap_points"] = 100 * (summary["float_probe_test_accuracy"] - summary["test_accuracy"])
    return summary


def average_weights(checkpoints) -> np.ndarray:
    """The host's checkpoint average (``NetTrainConfig.average_last``): the mean of int8 weight vectors,
    rounded half up (floor(mean + 1/2)); always within [-127, 127]."""
    stack = np.asarray(checkpoints, dtype=np.int64)
    if stack.ndim != 2 or len(stack) == 0:
        raise ValueError(f"checkpoints must be a non-empty list of equal-length weight vectors, got shape {stack.shape}")
    return np.floor_divide(2 * stack.sum(axis=0) + len(stack), 2 * len(stack))


def float_probe(data: NetData) -> dict:
    """The float linear probe (``golden.lm.probe``, as ``train_int8``) on the same training shots
    (fitted once per data object)."""
    if data.probe_accuracy is None:
        # L2 chosen on the validation split (golden.lm.probe.L2_GRID), never on test
        w, b, _ = fit_linear_probe_val(data.float_x["train"], data.y["train"], data.float_x["val"],
                                       data.y["val"], data.classes)
        data.probe_accuracy = float(((data.float_x["test"] @ w.T + b).argmax(axis=1) == data.y["test"]).mean())
    return {"float_probe_test_accuracy": data.probe_accuracy}


BACKPROP_L2_GRID = (1e-3, 1e-2, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)
BACKPROP_INITS = (0, 1, 2)


def float_mlp_backprop(data: NetData, hidden: tuple) -> dict:
    """The first-order reference for a net's shape: scikit-learn's ``MLPClassifier`` (float64, ReLU hidden
    layers of widths ``hidden`` with biases, Adam, full-batch loss with L2 ``alpha``, up to 1 000 epochs of
    minibatches of 200) on the float inputs divided by their training RMS (as ``train_float_mezo``). ``alpha``
    from ``BACKPROP_L2_GRID`` and the init from ``BACKPROP_INITS`` are chosen together on the validation
    split (ties: the larger alpha, then the first init); the test split is never seen in the choice. Cached
    per data object. What it answers: how close exact gradients get this MLP shape to the linear probe
    on the same shots, i.e. how much of a ZO gap is the shape's and how much the optimiser's."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    key = tuple(int(h) for h in hidden)
    if data.backprop is None:
        data.backprop = {}
    if key not in data.backprop:
        rms = max(float(np.sqrt(np.mean(np.square(data.float_x["train"])))), 1e-12)
        x = {n: np.asarray(v, dtype=np.float64) / rms for n, v in data.float_x.items()}
        best = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            for alpha in sorted(BACKPROP_L2_GRID, reverse=True):
                for init in BACKPROP_INITS:
                    model = MLPClassifier(key, alpha=alpha, max_iter=1000, random_state=init)
                    model.fit(x["train"], data.y["train"])
                    val = float(model.score(x["val"], data.y["val"]))
                    if best is None or val > best[0]:
                        best = (val, alpha, init, model)
        val, alpha, init, model = best
        data.backprop[key] = {"float_mlp_backprop_test_accuracy": float(model.score(x["test"], data.y["test"])),
                              "float_mlp_backprop_val_accuracy": val,
                              "float_mlp_backprop_train_accuracy": float(model.score(x["train"], data.y["train"])),
                              "float_mlp_backprop_l2": alpha, "float_mlp_backprop_init": init,
                              "float_mlp_backprop_hidden": list(key)}
    return dict(data.backprop[key])


# -- the float reference ---------------------------------------------------------------------------
@dataclass(frozen=True)
class FloatMeZOConfig:
    """Float MeZO on the net's shape: ``lr`` and ``eps`` (> 0), the rest as ``NetTrainConfig``."""

    net: str = "digits-mlp"
    lr: float = 1e-3
    eps: float = 1e-3
    steps: int = 4000
    batch: int = 128
    eval_every: int = 250
    seed: int = 1
    shots: int = 256
    test_size: int = 1000

    def __post_init__(self):
        _check_choice("net", self.net, NET_NAMES)
        _check_number("lr", self.lr, 0, 1e6)
        _check_number("eps", self.eps, 0, 1e6)
        check_int("steps", self.steps, *STEPS_RANGE)
        check_int("batch", self.batch, 1, MAX_BATCH)
        check_int("eval_every", self.eval_every, *STEPS_RANGE)
        check_int("seed", self.seed, 1, 16383)
        check_int("shots", self.shots, 1, 1 << 20)
        check_int("test_size", self.test_size, 1, 100_000)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


FLOAT_TUNED = {
    "digits-mlp": FloatMeZOConfig(net="digits-mlp", lr=3e-3, eps=1e-3),
    "rt-mlp": FloatMeZOConfig(net="rt-mlp", lr=1e-3, eps=1e-3),
    "rt-head": FloatMeZOConfig(net="rt-head", lr=1e-3, eps=1e-3),
}
"""Float MeZO's learning rate and epsilon per net (steps and batch follow ``TUNED``). Measured (batch 128,
seed 1, best-validation test accuracy): digits-mlp lr 3e-3 0.877 (1e-2 and 3e-2 diverge to chance),
rt-mlp lr 1e-3 0.674 (3e-3 0.635, 1e-2 0.578)."""


def float_forward(params: dict, layers: tuple, x: np.ndarray) -> np.ndarray:
    """Logits of the float MLP: ``h = relu(h @ w_l.T)`` for the hidden layers (as the layer program,
    without shifts), ``h @ w_L.T`` last."""
    h = x
    for i, layer in enumerate(layers):
        h = h @ params[f"w{i}"].T
        if layer.relu:
            h = np.maximum(h, 0)
    return h


def train_float_mezo(config: FloatMeZOConfig, progress: bool = False, data: NetData | None = None) -> dict:
    """Golden float MeZO (``pezo.golden.zo.mezo.MeZO``, stream mode, Gaussian z) on the net's shape:
    same data (dequantised int8 inputs), batches (``batch_schedule``) and two forward passes per step.
    Returns the keys of ``train_int8_net`` (``loss`` = "float-mezo"); inputs scaled to unit RMS."""
    data = data or load_data(NetTrainConfig(net=config.net, seed=config.seed, shots=config.shots,
                                            test_size=config.test_size))
    layers: tuple[Layer, ...] = NETS[config.net]
    rng = np.random.default_rng([config.seed, 0xF10A])
    params = {f"w{i}": (rng.standard_normal((l.outputs, l.inputs)) * math.sqrt(2.0 / l.inputs)).astype(np.float32)
              for i, l in enumerate(layers)}
    names = list(params)
    dim = sum(p.size for p in params.values())
    mezo = MeZO(params, names, make_sampler("gaussian", dim, seed=config.seed + 1),
                MeZOConfig(lr=config.lr, eps=config.eps, mode="stream"))
    rms = float(np.sqrt(np.mean(np.square(data.float_x["train"]))))
    fx = {n: (v / rms).astype(np.float32) for n, v in data.float_x.items()}

    def accuracy(p, split):
        return float((float_forward(p, layers, fx[split]).argmax(axis=1) == data.y[split]).mean())

    schedule = batch_schedule(len(data.y["train"]), config.batch, config.steps, config.seed)
    start_test, start_val = accuracy(params, "test"), accuracy(params, "val")
    best_val, best_step, best = start_val, 0, {k: v.copy() for k, v in params.items()}
    curve = [{"step": 0, "forward_passes": 0, "val_accuracy": start_val, "train_loss": None}]
    losses, seconds = [], 0.0
    bar = _bar(progress, config.steps, f"float MeZO {config.net}")
    for step, rows in enumerate(schedule):
        x, y = fx["train"][rows], data.y["train"][rows]
        t0 = time.perf_counter()
        record = mezo.step(step, lambda p: cross_entropy(float_forward(p, layers, x), y))
        seconds += time.perf_counter() - t0
        if not math.isfinite(record.loss):
            raise FloatingPointError(f"float MeZO diverged at step {step} (lr={config.lr})")
        losses.append(record.loss)
        if (step + 1) % config.eval_every == 0 or step + 1 == config.steps:
            val = accuracy(params, "val")
            curve.append({"step": step + 1, "forward_passes": 2 * (step + 1), "val_accuracy": val,
                          "train_loss": float(np.mean(losses[-CURVE_LOSS_WINDOW:]))})
            if val > best_val:
                best_val, best_step, best = val, step + 1, {k: v.copy() for k, v in params.items()}
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-50:]):.4f}", val=f"{curve[-1]['val_accuracy']:.3f}")
    if bar is not None:
        bar.close()
    final_test = accuracy(params, "test")
    return {
        "net": config.net, "loss": "float-mezo", "seed": config.seed, "steps": config.steps,
        "test_accuracy": accuracy(best, "test"), "start_accuracy": start_test, "final_test_accuracy": final_test,
        "best_step": best_step, "best_val_accuracy": best_val, "start_val_accuracy": start_val,
        "forward_passes": 2 * config.steps, "seconds_per_step": seconds / config.steps, "curve": curve,
        "train_loss_start": float(np.mean(losses[:CURVE_LOSS_WINDOW])),
        "train_loss_end": float(np.mean(losses[-CURVE_LOSS_WINDOW:])), "config": config.to_dict(),
    }
