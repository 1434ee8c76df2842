"""The on-chip ZO step of the INT8 PE array (twin of ``hw.engine``): configuration, arithmetic, cycles.

Layer: ``logits[b, o] = sum_k x[b, k] * w[o, k]`` with int8 activations x [batch, inputs], int8 weights
w [outputs, inputs] in [-127, 127] and exact int32 accumulators (``golden.engine.int8``). No bias: the head
is a bias-free linear map (L2-normalised sentence embeddings carry a common component that plays
that role).

Weight memory: ``outputs * inputs / cols`` words of ``cols`` int8 weights; word ``o * J + j``
(J = inputs / cols) holds w[o, j*cols : (j+1)*cols]. The perturbation stream (``golden.rng.perturb``,
``cols`` lanes per cycle) is consumed in word order, so stream element ``i`` perturbs the flat
row-major weight ``w.flat[i]`` (d = outputs * inputs, the perturbation order). The engine never pads:
``inputs`` must be a multiple of ``cols`` and ``batch`` a multiple of ``rows`` (one clear error).

One ZO step = two engine operations with the host in between:

* ``forward_zo(x)`` -- NEXT (+epsilon), then per batch tile of ``rows`` examples a pass over the
  weights with ``w' = sat(w + p)`` (p: the stream value, epsilon * z in weight LSBs;
  sat: [-127, 127]), each tile after the first preceded by a REWIND(+); then REWIND(-epsilon) and the
  same passes with the stream's negated values (``w' = sat(w - p)``). Returns both logit sets.
  The perturbed weights exist only on the way from the weight memory into the PE array.
* the host computes the loss difference and writes ``g``: signed Q8.16 (``G_BITS``, ``G_FRAC_BITS``),
  the whole update scale lr * projected gradient / (epsilon-LSB * weight LSB); ``g_to_fixed`` rounds
  half up and **saturates** to [-2^23, 2^23 - 1] (|g| < 128).
* ``update(g)`` -- REWIND(+epsilon) replays the perturbation once more and rewrites every weight in
  place: ``w <- sat(w - round_shift(g * p, 16), -127, 127)`` (round half up, ``golden.engine.int8``).

``infer(x)`` is plain inference (no perturbation, stream untouched).

Cycles (``hw.engine``): per batch tile and pass the array takes one weight word per cycle, i.e.
``outputs * J`` cycles, so a step costs at least ``cycle_bound`` = 2 * B * |W| / (R * C) (the two
forward passes) + |W| / C (the update pass, one word per cycle) + ``ENGINE_FORWARD_LATENCY`` +
``ENGINE_UPDATE_LATENCY`` (pipeline fill/drain of the two operations). The measured count adds one cycle per
stream command (NEXT/REWIND) and, for otf, the URNG array's alignment after NEXT.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from pezo.golden.config import MAX_POOL, FlatConfig, PerturbConfig, StreamConfig, check_int
from pezo.golden.engine.int8 import MAX_INPUTS, WEIGHT_MAX, WEIGHT_MIN, check_int8, matmul, round_shift, saturate
from pezo.golden.rng.perturb import PerturbationStream
from pezo.golden.rng.scale import check_scalable

ENGINE_STRATEGIES = ("otf", "pregen")
MAX_ROWS = 64
MAX_COLS = 64
MAX_OUTPUTS = 64
MAX_BATCH = 4096
G_BITS = 24
G_FRAC_BITS = 16
"""g is signed Q8.16 in 24 bits (|g| < 128): one DSP48E2 (27 x 18) per lane for g * p. A larger |g| would
saturate every weight it touches anyway (|p| >= 1 and |w| <= 127)."""
G_MIN, G_MAX = -(1 << (G_BITS - 1)), (1 << (G_BITS - 1)) - 1
FORWARD_LATENCY = 5
"""Cycles of the array path, from a weight word's issue until its logits are in the logit memory when nothing
stands between the memories and the array: memory read + perturb, input register, multiply, adder tree,
accumulate (+ logit write). Each engine adds its operand registers (``ENGINE_FORWARD_LATENCY``,
``golden.engine.network.NET_FORWARD_LATENCY``)."""
UPDATE_LATENCY = 3
"""Cycles of the shortest update path, from a weight word's read issue until its new value is written back:
memory read + g * p, round, saturating subtract + write. The engines split it (``ENGINE_UPDATE_LATENCY``)."""
WEIGHT_STAGES = 1
"""Registers between the weight memory's read and the perturbation add (the block RAM's clock-to-out is
not followed by the add and the saturation in one cycle); the activation reads are issued this many
cycles late so that both meet at the array."""
OPERAND_STAGES = 2
"""Registers between the operands' reads and the array's input register: the weight word's ``w + p`` (its clamp to
int8 after the register), then the clamped word; the activation words (and the tail's operands) are read
``ACTIVATION_READ_DELAY`` cycles after the issue and registered as read, then selected into the array's input
register. A block RAM's clock-to-out is followed by no logic in its cycle, an add by no clamp."""
ACTIVATION_READ_DELAY = WEIGHT_STAGES + OPERAND_STAGES - 1
"""Cycles from a word's issue to its activation word's read address (registered that many times), so that the
activation word, registered once as read, meets the weight word at the array."""
PRODUCT_STAGES = 2
"""Registers behind each product of the engines' arrays: on ECP5 the MULT18X18D's output register, then a fabric
register beside the row's adder tree (holding sums of pairs), so the route out of the DSP column has a cycle of its
own (``hw.engine.pe_array.ArrayShape.product_stages``)."""
ENGINE_FORWARD_LATENCY = FORWARD_LATENCY + PRODUCT_STAGES - 1 + WEIGHT_STAGES + OPERAND_STAGES
"""The ZO engine's (``hw.engine.zo_engine``) cycles after the last weight word's issue until its logits are in the
logit memory: ``FORWARD_LATENCY`` plus the array's extra products register (``PRODUCT_STAGES``), the
``WEIGHT_STAGES`` in front of the perturbation add and the ``OPERAND_STAGES`` in front of the array."""
ENGINE_UPDATE_LATENCY = UPDATE_LATENCY + 4
"""The ZO engine's cycles after the last weight word's read is issued until its new value is written back: the
memory read, p's second register, the split g * p (two partial products), the low one's rounding, their sum, the
subtract, its clamp into a register, the write (``hw.engine.update``)."""


@dataclass(frozen=True)
class ArrayConfig:
    """The R x C INT8 MAC array and the ZO batch it tiles (every engine config nests one as ``array``).

    rows  -- R, examples processed in parallel (rows of the array; the weight word is broadcast), 1..64.
    cols  -- C, weights per cycle = stream lanes = MACs per row, 1..64.
    batch -- B, examples per ZO step, a multiple of rows, up to 4096.
    """

    rows: int = 8
    cols: int = 8
    batch: int = 16

    def __post_init__(self):
        check_int("rows", self.rows, 1, MAX_ROWS)
        check_int("cols", self.cols, 1, MAX_COLS)
        check_int("batch", self.batch, 1, MAX_BATCH)
        if self.batch % self.rows:
            raise ValueError(
                f"rows={self.rows} does not tile batch={self.batch}: batch must be a multiple of rows "
                "(the array does not pad)"
            )

    @property
    def tiles(self) -> int:
        """Batch tiles of ``rows`` examples per pass."""
        return self.batch // self.rows

    @property
    def macs(self) -> int:
        return self.rows * self.cols

    def replace(self, **changes) -> ArrayConfig:
        return dataclasses.replace(self, **changes)


class EngineFlatConfig(FlatConfig):
    """A ``FlatConfig`` of an engine (a ``stream`` feeding an ``array``): a flat ``strategy`` or ``pool_size`` the
    engine cannot build fails in the engine's terms (otf/pregen; a pool of at least ``cols`` values)."""

    def check_flat(self, changes: dict) -> None:
        if "strategy" in changes:
            check_engine_strategy(changes["strategy"])
        cols = changes.get("cols", changes["array"].cols if "array" in changes else self.array.cols)
        if "pool_size" in changes and isinstance(cols, int) and 1 <= cols <= MAX_COLS:
            check_int("pool_size", changes["pool_size"], cols, MAX_POOL)


ENGINE_STREAM = StreamConfig(eps_shift=10)
"""The engines' default stream: ``StreamConfig``'s defaults with epsilon = 4 weight LSBs."""


@dataclass(frozen=True)
class EngineConfig(EngineFlatConfig):
    """The ZO engine: an R x C INT8 MAC array over one linear layer, fed by a perturbation stream.

    stream    -- the perturbation stream (``StreamConfig``): strategy otf (``cols`` LFSR URNGs + scale LUT;
                 rng_bits 3..16 for the scale LUT) or pregen (BRAM pool of pool_size >= cols values);
                 epsilon = 2^(12 - eps_shift) weight LSBs.
    array     -- the R x C array and the batch (``ArrayConfig``).
    inputs    -- K, layer inputs, a multiple of cols, up to 132 104 (int32 accumulation).
    outputs   -- O, layer outputs (classes), 1..64.

    ``to_dict``/``from_dict``/``replace`` use the flat names (``strategy``, ``rows``, ...; ``FlatConfig``).
    """

    stream: StreamConfig = ENGINE_STREAM
    array: ArrayConfig = ArrayConfig()
    inputs: int = 384
    outputs: int = 2

    NESTED: ClassVar[tuple] = ("stream", "array")
    JSON_KEYS: ClassVar[tuple] = (
        "strategy",
        "rows",
        "cols",
        "inputs",
        "outputs",
        "batch",
        "rng_bits",
        "seed",
        "pool_size",
        "pool_bits",
        "eps_shift",
        "lfsr_leap",
        "lfsr_bit_order",
    )

    def __post_init__(self):
        check_nested(self, stream=StreamConfig, array=ArrayConfig)
        check_engine_strategy(self.stream.strategy)
        check_int("inputs", self.inputs, 1, MAX_INPUTS)
        if self.inputs % self.array.cols:
            raise ValueError(
                f"cols={self.array.cols} does not tile inputs={self.inputs}: inputs must be a multiple "
                "of cols (the array does not pad)"
            )
        check_int("outputs", self.outputs, 1, MAX_OUTPUTS)
        check_engine_stream(self.perturb)

    @property
    def perturb(self) -> PerturbConfig:
        """The perturbation stream feeding the array: ``cols`` lanes, d = outputs * inputs."""
        return engine_stream(self.stream, self.array.cols, self.weights)

    @property
    def weights(self) -> int:
        """|W| = outputs * inputs."""
        return self.outputs * self.inputs

    @property
    def words_per_output(self) -> int:
        """J = inputs / cols: weight words (cycles) per output neuron."""
        return self.inputs // self.array.cols

    @property
    def weight_words(self) -> int:
        return self.outputs * self.words_per_output

    def cycle_bound(self) -> int:
        """2 * B * |W| / (R * C) + |W| / C + ENGINE_FORWARD_LATENCY + ENGINE_UPDATE_LATENCY (module docstring)."""
        bound = 2 * self.array.tiles * self.weight_words + self.weight_words
        return bound + ENGINE_FORWARD_LATENCY + ENGINE_UPDATE_LATENCY

    def useful_mac_cycles(self) -> int:
        """MAC-array cycles a step needs at full utilisation: 2 * B * |W| / (R * C)."""
        return 2 * self.array.tiles * self.weight_words


def check_nested(config, **types) -> None:
    """Each named field of ``config`` is an instance of exactly its type (one ValueError naming the field)."""
    for name, kind in types.items():
        value = getattr(config, name)
        if type(value) is not kind:
            raise ValueError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")


def check_engine_strategy(strategy) -> None:
    """The engines build otf and pregen streams only."""
    if strategy not in ENGINE_STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(ENGINE_STRATEGIES)}, got {strategy!r}")


def check_engine_stream(perturb: PerturbConfig) -> None:
    """An engine's stream (``engine_stream``) can be built: its pool holds a word of lanes, an otf stream scales."""
    check_int("pool_size", perturb.pool_size, perturb.lanes, MAX_POOL)
    if perturb.strategy == "otf":
        check_scalable(perturb)


def engine_stream(stream: StreamConfig, cols: int, weights: int) -> PerturbConfig:
    """The rewindable stream an engine of ``cols`` lanes consumes: ``cols`` URNGs (otf) or a pool read ``cols``
    values a cycle from the largest power-of-two bank count <= 8 dividing ``cols`` (pregen), d = ``weights``."""
    banks = 1 << min(3, (cols & -cols).bit_length() - 1)
    return PerturbConfig(
        **dataclasses.asdict(stream), n_rngs=cols, rewind=True, lanes=cols, banks=banks, perturb_dim=weights
    )


def g_to_fixed(value: float) -> int:
    """A real update scale -> signed Q8.16: floor(value * 2^16 + 1/2), saturated to [G_MIN, G_MAX]."""
    value = float(value)
    if math.isnan(value):
        raise ValueError("g must be a number, got NaN")
    if math.isinf(value):
        return G_MAX if value > 0 else G_MIN
    scaled = math.floor(value * (1 << G_FRAC_BITS) + 0.5)
    return int(min(max(scaled, G_MIN), G_MAX))


def perturbed_weights(w, p) -> np.ndarray:
    """sat(w + p, -127, 127): what the array multiplies (p already carries the pass's sign)."""
    return saturate(np.asarray(w, dtype=np.int64) + np.asarray(p, dtype=np.int64), WEIGHT_MIN, WEIGHT_MAX)


WD_SHIFT_RANGE = (0, 7)
"""Weight decay shifts: 0 = off; 1..7 decay by round_shift(w, wd_shift). 7 is the last shift that moves an
int8 weight in [-127, 127] at all (round_shift(w, 8) = 0 for every such w)."""


WD_EVERY_BITS = 8
WD_EVERY_RANGE = (1, (1 << WD_EVERY_BITS) - 1)
"""How often the decay acts (``LossConfig.wd_every``): on every N-th update, N = 1..255 (an 8-bit register and
counter of the network engine)."""


def check_wd_shift(wd_shift) -> int:
    """``wd_shift`` in 0..7 (0 = no weight decay), or a ValueError naming the range."""
    check_int("wd_shift", wd_shift, *WD_SHIFT_RANGE)
    return int(wd_shift)


def weight_decay(w, wd_shift: int) -> np.ndarray:
    """The decay term round_shift(w, wd_shift) (round half up, as every requantisation: an arithmetic right
    shift of w + 2^(wd_shift - 1)); 0 for wd_shift = 0. Ties: w = +2^(s-1) -> 1, w = -2^(s-1) -> 0, so
    |w| < 2^(s-1) (and w = -2^(s-1)) is never decayed: the decay has a dead zone of 2^(s-1) LSB."""
    check_wd_shift(wd_shift)
    w = np.asarray(w, dtype=np.int64)
    return round_shift(w, wd_shift) if wd_shift else np.zeros_like(w)


def updated_weights(w, p, g: int, wd_shift: int = 0) -> np.ndarray:
    """sat(w - round_shift(g * p, 16) - round_shift(w, wd_shift), -127, 127), g signed Q8.16 (int64
    array); the decay term only with ``wd_shift`` 1..7 (``weight_decay``; 0 = off, the plain update)."""
    check_int("g", g, G_MIN, G_MAX)
    w = np.asarray(w, dtype=np.int64)
    step = round_shift(int(g) * np.asarray(p, dtype=np.int64), G_FRAC_BITS)
    return saturate(w - step - weight_decay(w, wd_shift), WEIGHT_MIN, WEIGHT_MAX)


def check_batch(config, x) -> np.ndarray:
    """``x`` as int64 if it is one int8 batch [``config.array.batch``, ``config.inputs``], else a ValueError (both
    engines' models)."""
    x = check_int8("x", x)
    want = (config.array.batch, config.inputs)
    if x.shape != want:
        raise ValueError(f"x must have shape {want} (batch, inputs), got {x.shape}")
    return x


class ZOEngine:
    """Operation-level model of ``hw.engine.zo_engine.ZOEngine``: weights, stream and the three operations.

    The stream is the golden ``PerturbationStream``; a REWIND replays the current perturbation, so the
    model draws each perturbation once (after NEXT) and reuses it for every later pass of that step --
    the stream position afterwards equals the hardware's after its update pass (start + d / C vectors).
    """

    def __init__(self, config: EngineConfig, weights=None):
        if not isinstance(config, EngineConfig):
            raise ValueError(f"config must be an EngineConfig, got {type(config).__name__}")
        self.config = config
        self.stream = PerturbationStream(config.perturb)
        shape = (config.outputs, config.inputs)
        self.weights = np.zeros(shape, dtype=np.int64)
        if weights is not None:
            self.load_weights(weights)
        self.perturbation = None  # p of the current step, [outputs, inputs] (+epsilon)
        self.steps = 0

    def load_weights(self, weights) -> None:
        w = check_int8("weights", weights, WEIGHT_MIN, WEIGHT_MAX)
        if w.shape != self.weights.shape:
            raise ValueError(f"weights must have shape {self.weights.shape}, got {w.shape}")
        self.weights = w.copy()

    def next_perturbation(self) -> np.ndarray:
        """NEXT: the step's perturbation p (weight LSBs, +epsilon), shaped like the weights."""
        self.stream.step(next=True, sign=False)
        self.perturbation = self.stream.perturbation(self.config.weights).reshape(self.weights.shape)
        self.steps += 1
        return self.perturbation

    def forward_zo(self, x) -> tuple[np.ndarray, np.ndarray]:
        """The +epsilon and -epsilon logits [batch, outputs] (int64) of a new perturbation."""
        x = check_batch(self.config, x)
        p = self.next_perturbation()
        return (matmul(x, perturbed_weights(self.weights, p)), matmul(x, perturbed_weights(self.weights, -p)))

    def update(self, g: int) -> np.ndarray:
        """Replay the current perturbation and update the weights in place (Q8.16 ``g``)."""
        if self.perturbation is None:
            raise RuntimeError("update before the first forward_zo: there is no perturbation to replay")
        self.weights = updated_weights(self.weights, self.perturbation, g)
        return self.weights

    def infer(self, x) -> np.ndarray:
        """Plain inference: logits [batch, outputs] of the stored weights."""
        return matmul(check_batch(self.config, x), self.weights)
