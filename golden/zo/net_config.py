"""What one golden INT8 ZO run of a whole network is: ``NetTrainConfig`` (checked on construction; flat
JSON keys as the CLI's options) and the tuned presets ``TUNED`` and ``TUNED_WD`` (``pezo.golden.zo.int8_net`` runs it).

**Tuning** (``TUNED``; ``benchmarks/results/engine_net``): eps_shift = 13 (p in {-1, 0, 1}, about half 0),
sign g with g_lr = 2^16, i.e. w <- w -+ p: the smallest unbiased step -- for g_lr < 2^16, round-half-up
of g * p / 2^16 moves only one sign of p (+0.5 -> 1, -0.5 -> 0), and the weights drift one way until a
layer dies. The ``scaled`` mode cannot train these nets: |L+ - L-| is a few thousand logit LSBs
(digits-mlp, batch 128: median ~3 000), so even g_shift = 0 gives |g| ~ 0.05 and round(g * p) = 0; it
would need a left shift (a g_shift < 0) of about 5 bits. rt-mlp (512 training examples, 24 704 weights)
overfits at margin 4 096 (validation 0.71, test 0.61 for seed 1); margin 16 384 with batch 256 narrows
it, but ZO stays 6.5-7.3 points below the float probe whose L2 is chosen on validation (0.726 / 0.746 /
0.762, seeds 1-3; benchmarks/results/engine_net/accuracy.md). The update's integer weight decay
(``wd_shift``, ``TUNED_WD``) bounds the sign-SPSA random walk of every weight and narrows that gap. Large batches
(128) pay: the per-step work on the weights (the perturbation, the update) is shared by more examples, and the sign
of L+ - L- gets more reliable.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

from pezo.golden.config import StreamConfig, check_int
from pezo.golden.engine.backprop import DEFAULT_BP_BITS, check_bp_bits, check_tail, split_name, split_point
from pezo.golden.engine.loss import G_SHIFT_RANGE, MAX_MARGIN, LossConfig
from pezo.golden.engine.net_file import load_net
from pezo.golden.engine.network import NetConfig
from pezo.golden.engine.zo_engine import (
    G_MAX,
    WD_EVERY_RANGE,
    WD_SHIFT_RANGE,
    ArrayConfig,
    EngineFlatConfig,
    check_engine_strategy,
    check_nested,
)
from pezo.golden.zo.int8_head import STEPS_RANGE

LOSSES = ("on-chip", "host")
LAST_INITS = ("zero", "calibrated", "probe")
HIDDEN_INITS = ("normal", "pca")
G_MODES = ("sign", "scaled")


def check_number(name: str, value, lo: float, hi: float, lo_open: bool = True) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > lo if lo_open else value >= lo) and value <= hi
    if not ok:
        bracket = "(" if lo_open else "["
        raise ValueError(f"{name} must be a finite number in {bracket}{lo:g}, {hi:g}], got {value!r}")


def check_choice(name: str, value, choices) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(str, choices))}, got {value!r}")


SEED_RANGE = (1, 16383)
STREAM_SEED_RANGE = (0, 16383)
"""``NetTrainConfig.stream_seed``: 0 follows ``seed``."""
TRAIN_STREAM = StreamConfig(eps_shift=13)
"""The trainer's default stream: epsilon = 1/2 weight LSB (module docstring)."""
TRAIN_ARRAY = ArrayConfig(batch=128)
"""The trainer's default array: 8 x 8, batch 128."""


@dataclass(frozen=True)
class NetTrainConfig(EngineFlatConfig):
    """One golden INT8 ZO run of a whole network (module docstring). The defaults are the tuned values
    (module docstring, ``TUNED``): sign g, g_lr 2^16, eps_shift 13, batch 128, margin 4096.

    net        -- ``digits-mlp`` | ``rt-mlp`` | ``rt-head`` (``pezo.golden.engine.nets``) or the path of a network
                  file (``pezo.golden.engine.net_file``; its weights, if any, are the start).
    data       -- None (the built-in net's data set) or the path of a user data set (``.npz`` / ``.csv``,
                  ``pezo.golden.zo.user_data``); a network file without a built-in name needs one.
    loss       -- ``on-chip`` (the engine's hinge loss and g) | ``host`` (float cross-entropy g on the host).
    g_mode     -- on-chip g: ``sign`` (g = +-g_lr) | ``scaled`` (g = sat(round_shift(L+ - L-, g_shift))).
    margin     -- hinge margin in logit LSBs, 0..2^23-1.
    g_lr       -- sign mode's |g|, Q8.16, 1..2^23-1 (2^16 = one weight LSB per unit of p).
    g_shift    -- scaled mode's shift, 0..47.
    lr         -- host mode: MeZO's learning rate on the real weights (value = q * 2^weight_exponent), > 0.
    steps, eval_every -- ZO steps (1..10^7) and the validation interval (1..10^7).
    seed       -- data split, initial weights and batch order, 1..16383.
    stream_seed -- the perturbation stream's seed, 1..16383; 0 = ``seed``.
    array      -- the engine's R x C array and batch (``ArrayConfig``; ``NetConfig.array``).
    stream     -- the engine's stream (``StreamConfig``; ``NetConfig.stream``; epsilon = 2^(12 - eps_shift)
                  weight LSBs); its ``seed`` is always ``stream_seed or seed`` (set on construction).
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
    split      -- the partition of the elastic trainer (``golden.engine.backprop``): ``full-zo`` (the
                  default: ZO on every layer), ``cls2`` / ``cls1`` (backprop on the last one / two layers),
                  ``full-bp`` (integer backprop alone), or a layer index C in 0..L (ZO on layers 1..C).
    bp_bits    -- the backprop tail's PSR bits (its learning rate), 1..7; None = ``DEFAULT_BP_BITS``.
                  Refused with ``split="full-zo"`` (there is no tail to use it).
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
    array: ArrayConfig = TRAIN_ARRAY
    stream: StreamConfig = TRAIN_STREAM
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
    split: str | int = "full-zo"
    bp_bits: int | None = None
    data: str | None = None

    def __post_init__(self):
        load_net(self.net)  # a built-in name or a readable network file
        if self.data is not None and not (isinstance(self.data, str) and self.data.lower().endswith((".npz", ".csv"))):
            raise ValueError(f"data must be the path of a .npz or .csv file, got {self.data!r}")
        check_choice("loss", self.loss, LOSSES)
        check_choice("g_mode", self.g_mode, G_MODES)
        check_int("margin", self.margin, 0, MAX_MARGIN)
        check_int("g_lr", self.g_lr, 1, G_MAX)
        check_int("g_shift", self.g_shift, *G_SHIFT_RANGE)
        check_number("lr", self.lr, 0, 1e6)
        check_int("steps", self.steps, *STEPS_RANGE)
        check_int("eval_every", self.eval_every, *STEPS_RANGE)
        check_int("seed", self.seed, *SEED_RANGE)
        check_int("stream_seed", self.stream_seed, *STREAM_SEED_RANGE)
        check_nested(self, array=ArrayConfig, stream=StreamConfig)
        check_engine_strategy(self.stream.strategy)
        check_int("shots", self.shots, 1, 1 << 20)
        check_int("test_size", self.test_size, 1, 100_000)
        check_number("init_std", self.init_std, 0, 127)
        check_number("init_scale", self.init_scale, 0, 16)
        check_choice("last_init", self.last_init, LAST_INITS)
        check_choice("hidden_init", self.hidden_init, HIDDEN_INITS)
        if self.hidden_init == "pca":
            for i, layer in enumerate(self.base_layers[:-1]):
                if layer.kind == "conv":
                    raise ValueError(
                        f"hidden_init='pca' applies to dense layers only; layer {i} of {self.net} is a convolution "
                        f"({layer.describe()}): use hidden_init='normal'"
                    )
                if layer.outputs % 2 or layer.outputs // 2 > layer.inputs:
                    raise ValueError(
                        f"hidden_init='pca' needs every hidden layer's width to be even and at most "
                        f"2 x its inputs; layer {i} of {self.net} is {layer.inputs} -> {layer.outputs}"
                    )
        check_int("wd_shift", self.wd_shift, *WD_SHIFT_RANGE)
        check_int("wd_every", self.wd_every, *WD_EVERY_RANGE)
        checkpoints = -(-self.steps // self.eval_every)
        if not (
            isinstance(self.average_last, int)
            and not isinstance(self.average_last, bool)
            and 0 <= self.average_last <= checkpoints
        ):
            raise ValueError(
                f"average_last must be an integer in 0..{checkpoints} (the checkpoints of "
                f"{self.steps} steps, one every {self.eval_every}), got {self.average_last!r}"
            )
        if self.shifts is not None:
            hidden = len(self.base_layers) - 1
            if not isinstance(self.shifts, (tuple, list)) or len(self.shifts) != hidden:
                raise ValueError(
                    f"shifts must be None or {hidden} shift(s), one per hidden layer of {self.net}, got {self.shifts!r}"
                )
            object.__setattr__(self, "shifts", tuple(self.shifts))
            for i, s in enumerate(self.shifts):
                check_int(f"shifts[{i}]", s, 0, 31)
        c = check_tail(self.layers, split_point(self.split, len(self.layers)), self.split)
        if self.bp_bits is not None:
            if c == len(self.layers):
                raise ValueError(
                    f"bp_bits is a setting of the backprop tail: split {self.split!r} trains every layer by ZO "
                    "(choose a split with a tail: cls2, cls1, full-bp or a layer index below the layer count)"
                )
            check_bp_bits(self.bp_bits)
        if self.stream.seed != (self.stream_seed or self.seed):
            object.__setattr__(self, "stream", self.stream.replace(seed=self.stream_seed or self.seed))
        self.net_config  # noqa: B018 - the engine's own checks (tiling, stream)
        self.loss_config  # noqa: B018 - the loss unit's checks

    @property
    def base_layers(self) -> tuple:
        """The network's own layer program (the built-in's or the file's)."""
        return load_net(self.net).config.layers

    @property
    def net_name(self) -> str:
        """The network's name (a network file's ``name``)."""
        return load_net(self.net).name

    @property
    def layers(self) -> tuple:
        layers = self.base_layers
        if self.shifts is None:
            return layers
        return tuple(dataclasses.replace(l, shift=s) for l, s in zip(layers, self.shifts)) + (layers[-1],)

    @property
    def net_config(self) -> NetConfig:
        return NetConfig(layers=self.layers, name=self.net_name, stream=self.stream, array=self.array)

    @property
    def loss_config(self) -> LossConfig:
        mode = self.g_mode if self.loss == "on-chip" else "host"
        return LossConfig(
            mode=mode,
            margin=self.margin,
            g_lr=self.g_lr,
            g_shift=self.g_shift,
            wd_shift=self.wd_shift,
            wd_every=self.wd_every,
            split=None if self.split_c == len(self.layers) else self.split_c,
            bp_bits=DEFAULT_BP_BITS if self.bp_bits is None else self.bp_bits,
        )

    @property
    def split_c(self) -> int:
        """The partition point C of ``split`` (0..L)."""
        return split_point(self.split, len(self.layers))

    @property
    def eps_lsb(self) -> float:
        """epsilon in weight LSBs: 2^(12 - eps_shift)."""
        return 2.0 ** (12 - self.stream.eps_shift)

    NESTED: ClassVar[tuple] = ("array", "stream")
    JSON_KEYS: ClassVar[tuple] = (
        "net",
        "loss",
        "g_mode",
        "margin",
        "g_lr",
        "g_shift",
        "lr",
        "steps",
        "eval_every",
        "seed",
        "stream_seed",
        "strategy",
        "rows",
        "cols",
        "batch",
        "eps_shift",
        "rng_bits",
        "pool_size",
        "pool_bits",
        "lfsr_leap",
        "lfsr_bit_order",
        "shots",
        "test_size",
        "init_std",
        "init_scale",
        "last_init",
        "hidden_init",
        "shifts",
        "wd_shift",
        "wd_every",
        "average_last",
        "split",
        "bp_bits",
        "data",
    )

    def check_flat(self, changes: dict) -> None:
        """The run's seeds in their own terms before the stream's seed follows them (``nested_changes``)."""
        super().check_flat(changes)
        for name, bounds in (("seed", SEED_RANGE), ("stream_seed", STREAM_SEED_RANGE)):
            if name in changes:
                check_int(name, changes[name], *bounds)

    def nested_changes(self, name: str, changes: dict) -> dict:
        """The stream's seed follows ``stream_seed or seed`` (a change to either moves it)."""
        if name != "stream":
            return {}
        return {"seed": changes.get("stream_seed", self.stream_seed) or changes.get("seed", self.seed)}

    def to_dict(self) -> dict:
        out = super().to_dict()
        out["shifts"] = list(self.shifts) if self.shifts is not None else None
        return out

    @classmethod
    def from_dict(cls, fields: dict) -> NetTrainConfig:
        unknown = set(fields) - set(cls.JSON_KEYS)
        if unknown:
            raise ValueError(f"unknown NetTrainConfig field(s): {', '.join(sorted(unknown))}")
        return super().from_dict(fields)


TUNED = {
    "digits-mlp": NetTrainConfig(net="digits-mlp", steps=8000),
    "rt-mlp": NetTrainConfig(net="rt-mlp", steps=4000, lr=0.02, margin=16384, array=TRAIN_ARRAY.replace(batch=256)),
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
63.7 / 62.1 % for the normal start, seeds 1-3; ``experiments/probe_hidden_features.py``) does not help ZO: the
validation average of the last 8 checkpoints is 74.2 / 68.9 without decay, 71.7 / 66.8 with this decay (it erodes the
directions), 75.4 /
69.5 with wd_shift 7, 72.5 / 69.9 with margin 8192, all below the 76.4 / 69.9 of ``TUNED_WD``."""

_RT_ZO = {"batch": 256, "margin": 16384}
"""rt-mlp's tuned ZO settings (``TUNED``): the base the rt-mlp splits were screened on."""
SPLIT_DEFAULTS: dict[tuple[str, str], dict] = {
    ("digits-mlp", "cls2"): {"bp_bits": 4, "average_last": 8},
    ("digits-mlp", "cls1"): {"bp_bits": 2, "average_last": 8},
    ("digits-mlp", "full-bp"): {"bp_bits": 1},
    ("rt-mlp", "cls2"): {**_RT_ZO, "bp_bits": 1, "average_last": 8, "wd_shift": 6, "wd_every": 2},
    ("rt-mlp", "full-bp"): {**_RT_ZO, "bp_bits": 1},
    ("digits-cnn", "full-zo"): {"average_last": 8},
    ("digits-cnn", "cls2"): {"bp_bits": 2, "average_last": 8},
    ("digits-cnn", "cls1"): {"bp_bits": 1, "average_last": 8},
}
"""The elastic trainer's defaults per (net, split name), flat ``NetTrainConfig`` fields over the plain defaults,
chosen on the validation split of seeds 1 and 2 (``experiments/screen_elastic.py``,
``benchmarks/results/engine_net/elastic/screen.md``: ``bp_bits`` 1..4 and the reported model, the best-validation
checkpoint or the mean of the last 8 checkpoints, scored fairly -- the best checkpoint by its plateau's mean
validation accuracy; ties to the fewer bits; for rt-mlp's cls2 also the ZO part's decay of ``TUNED_WD``,
``screen-rt-wd.md``: 71.4 % against 69.4 % without); ``pezo train-int8 --net N --split S`` starts from them
(``split_config``). Full ZO keeps the plain defaults (digits-cnn: the mean of the last 8 checkpoints); a net or split
without an entry uses ``DEFAULT_BP_BITS``. digits-cnn (issue 33; ``benchmarks/results/engine_net/cnn/screen-cnn.md``,
seeds 1 and 2, 4 000 steps, validation): full ZO 75.3 % with the average against 67.1 % for the best checkpoint's
plateau; cls2 ``bp_bits`` 2 91.7 % (1: 89.8, 3: 87.8, 4: 89.3); cls1 96.0 % at ``bp_bits`` 3 but 95.5 % at 1 and 2
(4: 95.7), all with the average of the last 8 checkpoints. cls1 takes ``bp_bits`` 1: on seed 3's validation split
(1 000 steps) 3 and 4 bits kill the first dense layer (every ReLU off, logits 0, the loss at the margin, g = 0 on 967
of 1 000 steps: validation 9.3 %), while 1 and 2 bits train (93.7 / 89.3 %); 1 and 2 tie on seeds 1 and 2 (ties go
to the fewer bits)."""

NET_SPLITS: dict[str, str] = {"digits-cnn": "cls1"}
"""The split ``pezo train-int8 --net N`` trains with when no ``--split`` is given (others: ``full-zo``), chosen on
validation: digits-cnn's cls1 (96.0 %) beats cls2 (91.7 %) and full ZO (75.3 %) (``SPLIT_DEFAULTS``'s screen), so
its default run is the elastic hybrid -- ZO on the two conv layers, integer backprop on the two dense ones."""


def split_config(net: str, split, **fields) -> NetTrainConfig:
    """The ``NetTrainConfig`` of ``pezo train-int8 --net net --split split`` with the flat ``fields`` given:
    ``SPLIT_DEFAULTS`` for the split, then ``fields``; a default ``average_last`` is capped at the run's
    checkpoints (a short run averages what it has)."""
    base = {k: v for k, v in fields.items() if k != "bp_bits"}  # its layers, before the tail's settings
    plain = NetTrainConfig.from_dict({"net": net, **base})
    layers = len(plain.layers)
    defaults = dict(SPLIT_DEFAULTS.get((net, split_name(split_point(split, layers), layers)), {}))
    if "average_last" in defaults and "average_last" not in fields:
        steps, every = fields.get("steps", plain.steps), fields.get("eval_every", plain.eval_every)
        defaults["average_last"] = min(defaults["average_last"], -(-steps // every))
    return NetTrainConfig.from_dict({"net": net, "split": split, **defaults, **fields})
