"""A whole INT8 network trained by ZO on the PE array (twin of ``hw.engine.net_engine``).

**Layer program** -- an ordered list of dense layers ``Layer(inputs K_l, outputs N_l, shift s_l, relu,
bias)``, executed on the R x C array one layer at a time, one batch tile of R examples after another:

* ``acc[b, o] = bias[o] + sum_k h[b, k] * w'[o, k]``: int8 x int8 products summed exactly in int32
  (``golden.engine.int8``; the config checks ``K_l * 127 * 128 + max|bias| < 2^31``), the bias an
  optional int32 per output (0 without one) that the accumulator starts from. Biases are constants the
  host loads; ZO trains the weights.
* a hidden layer writes ``h = sat(round_shift(acc, s_l), lo, 127)`` (round half up), lo = 0 with ReLU
  and -127 without, to the on-chip activation buffer (ping-pong between two buffers); the next layer
  reads it as its input. The network's input is the batch: int8 in [-128, 127].
* the last layer's int32 accumulators are the logits (no shift, no ReLU): the loss reads them.
* a **convolution** (``golden.engine.conv.Conv2D``: k x k kernels, stride 1 or 2, zero padding, optional 2 x 2
  max / avg pool) is the same matmul over im2col patches read in place: its weight matrix is [out_channels,
  k^2 * in_channels in the lane order (ky, kx, ci), padded to a multiple of C] (``NetConfig.weight_shape``), its
  output the requantised, ReLU'd, pooled maps stored pixel-major, channel-innermost (HWC: one activation word = C
  channels of one pixel), and a dense layer after it reads that flattening (Flatten is free). A conv layer 0 reads
  the batch im2col'd by the host (``golden.engine.conv.batch_patches``); a later conv layer needs ``in_channels``
  a multiple of C (refused otherwise, naming the layer). A conv layer is never the last one nor in the backprop
  tail; the RTL runs it (``hw.engine.conv_path``; ``pezo sim engine``, the board top). What the host writes to
  the batch memory for an input is ``batch_words`` (the one function of the simulators' hosts and the driver).

**Weights** -- every layer's int8 weights ([-127, 127]) live in one weight memory in a fixed global
order: layer 0's rows (output-major, ``w_0[o, k]`` row-major), then layer 1's, ... Memory word ``i``
holds global weights ``i*C .. i*C + C-1`` (every dense ``K_l`` is a multiple of C and a conv row is padded to
one, so a word never straddles two rows), and element ``i`` of the perturbation stream perturbs global weight
``i`` (MeZO's fixed parameter order). The +/-epsilon passes multiply ``w' = sat(w +- p, -127, 127)``: the perturbed
weights exist only between the weight memory and the array. The update replays the stream once over
every layer: ``w <- sat(w - round_shift(g * p, 16) - d, -127, 127)`` (``golden.engine.zo_engine``), with
the optional integer weight decay d = round_shift(w, wd_shift) (``LossConfig.wd_shift`` 1..7, a run-time
register: one shift and one subtract per lane in the update's saturating subtract; 0 = off, d = 0), on
every ``LossConfig.wd_every``-th update only: the engine's decay counter c (8 bit, 0 after reset, kept
across operations) decides at each update (OP_UPDATE, or a TRAIN step's update phase): the decay acts iff
c >= wd_every - 1, and then c <- 0, else c <- c + 1. So from reset, updates wd_every, 2 wd_every, ... (1-based)
decay; the counter runs whether or not wd_shift is 0, and a smaller wd_every than c + 1 decays at once.

**A step** -- NEXT(+), per batch tile (a REWIND(+) before each later tile) the whole network; REWIND(-)
and the same for -epsilon; the losses L+ and L- and g (``golden.engine.loss``); REWIND(+) and the
update. ``train_step`` is the engine's on-chip step; ``forward_zo`` + ``update(g)`` the host-g mode.

**Cycles** (``hw.engine.net_engine``): the array takes one weight word per cycle for R examples, so a
step needs at least ``cycle_bound`` = 2 * (B / R) * sum_l cycles_l (two forward passes) + |W| / C (update)
+ ``NET_FORWARD_LATENCY`` + ``NET_UPDATE_LATENCY``, where a dense layer's cycles_l per tile are its |W_l| / C
words and a conv layer's are OH * OW * out_channels * row_words (its words once per output pixel; the row buffer is
written through on the first pixel, no fill cycles: ``golden.engine.conv``). Measured steps add a cycle per stream
command and the stream's refill after it, ``LAYER_GAP`` cycles between layers (the last outputs of a layer reach the
activation buffer before the next layer reads them), the loss/g tail and any wait for the batch.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from pezo.golden.config import PerturbConfig, StreamConfig, check_int
from pezo.golden.engine.backprop import MAX_LAYERS, TailRecord, check_tail, split_point, tail_backward
from pezo.golden.engine.conv import Conv2D, batch_patches, conv_acc, conv_output
from pezo.golden.engine.int8 import (
    ACC_BITS,
    ACT_MIN,
    SHIFT_RANGE,
    WEIGHT_MAX,
    WEIGHT_MIN,
    check_int8,
    exact_matmul,
    round_shift,
    saturate,
)
from pezo.golden.engine.loss import LossConfig, hinge_error, hinge_loss, onchip_g
from pezo.golden.engine.zo_engine import (
    ACTIVATION_READ_DELAY,
    ENGINE_FORWARD_LATENCY,
    ENGINE_STREAM,
    ENGINE_UPDATE_LATENCY,
    WD_EVERY_RANGE,
    ArrayConfig,
    EngineFlatConfig,
    check_batch,
    check_engine_strategy,
    check_engine_stream,
    check_nested,
    check_wd_shift,
    engine_stream,
    perturbed_weights,
    updated_weights,
)
from pezo.golden.rng.perturb import PerturbationStream

MAX_WIDTH = 4096
"""Widest layer input or output."""
MAX_WEIGHT_WORDS = 1 << 20
NET_FORWARD_LATENCY = ENGINE_FORWARD_LATENCY
"""Cycles after the last weight word's issue until its logits are in the logit memory in the network engine: the
ZO engine's forward pipeline (``ENGINE_FORWARD_LATENCY``: the array path's ``FORWARD_LATENCY`` plus the array's
extra products register, the ``WEIGHT_STAGES`` and the ``OPERAND_STAGES``)."""
NET_UPDATE_LATENCY = ENGINE_UPDATE_LATENCY
"""Cycles after the last weight word's read is issued until its new value is written back in the network
engine: the ZO engine's update pipeline (``ENGINE_UPDATE_LATENCY``), its decay d and w - d computed beside the
step."""
LAYER_GAP = NET_FORWARD_LATENCY + 1 - ACTIVATION_READ_DELAY
"""Idle issue cycles between two layers of a tile: the last word's outputs leave the array
``NET_FORWARD_LATENCY`` cycles after its issue and take one more (the requantisation register) to the
buffer; the next layer reads the buffer ``ACTIVATION_READ_DELAY`` cycles after its issue."""
ACC_MAX = (1 << (ACC_BITS - 1)) - 1
BP_DRAINS = {"gradient": NET_FORWARD_LATENCY + 7, "error": NET_FORWARD_LATENCY + 6, "requantise": 6}
"""Cycles after a backprop pass's last issue until its last result is stored (``hw.engine.bp_tail``): the
array's latency plus the gradient's six-register rounding pipeline and write-back; the error's sums and
activation registers, the ReLU mask and E buffer write, |E| register, OR and its bit width (registered); or
the requantisation's read, read register, three registers and write (error buffer)."""


@dataclass(frozen=True)
class Layer:
    """One dense layer: ``inputs`` -> ``outputs``, requantisation ``shift`` (0..31; hidden layers), ``relu``
    (hidden layers), ``bias`` (an int32 per output, loaded by the host), ``weight_exponent`` (the power of
    two one weight LSB is worth: for the host's float view only)."""

    inputs: int
    outputs: int
    shift: int = 0
    relu: bool = False
    bias: bool = False
    weight_exponent: int = -7

    def __post_init__(self):
        check_int("inputs", self.inputs, 1, MAX_WIDTH)
        check_int("outputs", self.outputs, 1, MAX_WIDTH)
        check_int("shift", self.shift, *SHIFT_RANGE)
        if not isinstance(self.relu, bool) or not isinstance(self.bias, bool):
            raise ValueError("relu and bias must be True or False")
        check_int("weight_exponent", self.weight_exponent, -64, 64)

    kind: ClassVar[str] = "dense"

    @property
    def weights(self) -> int:
        return self.inputs * self.outputs

    @property
    def bias_size(self) -> int:
        return self.outputs

    @property
    def acc_length(self) -> int:
        """Products one accumulator sums (the int32 overflow check): ``inputs``."""
        return self.inputs

    def weight_shape(self, cols: int) -> tuple[int, int]:
        """[outputs, inputs] (``cols`` divides inputs: no padding)."""
        return self.outputs, self.inputs

    def describe(self) -> str:
        extra = (" + bias" if self.bias else "") + (" relu" if self.relu else "")
        return f"{self.inputs} -> {self.outputs}{extra}"


LAYER_TYPES = (Layer, Conv2D)


def layer_from_dict(fields: dict):
    """A ``Layer`` or, for ``kind="conv"``, a ``Conv2D`` from its keys (``kind`` "dense" or absent: dense)."""
    fields = dict(fields)
    kind = fields.pop("kind", "dense")
    if kind == "conv":
        return Conv2D(**fields)
    if kind != "dense":
        raise ValueError(f"layer kind must be 'dense' or 'conv', got {kind!r}")
    return Layer(**fields)


@dataclass(frozen=True)
class NetConfig(EngineFlatConfig):
    """The engine generated for one network: the layer program, the perturbation ``stream``
    (``StreamConfig``), the R x C ``array`` and the batch (``ArrayConfig``; as
    ``golden.engine.zo_engine.EngineConfig``). ``weight_depth``: words of the weight memory, 0 = exactly the
    network's |W| / C (a larger memory leaves room; a smaller one is an error). ``to_dict``/``from_dict``/
    ``replace`` use the flat names (``strategy``, ``rows``, ...; ``FlatConfig``)."""

    layers: tuple = (Layer(384, 2),)
    name: str = "custom"
    stream: StreamConfig = ENGINE_STREAM
    array: ArrayConfig = ArrayConfig()
    weight_depth: int = 0
    backprop: bool = False

    NESTED: ClassVar[tuple] = ("stream", "array")
    JSON_KEYS: ClassVar[tuple] = (
        "layers",
        "name",
        "strategy",
        "rows",
        "cols",
        "batch",
        "rng_bits",
        "seed",
        "pool_size",
        "pool_bits",
        "eps_shift",
        "weight_depth",
        "lfsr_leap",
        "lfsr_bit_order",
        "backprop",
    )

    def __post_init__(self):
        layers = tuple(layer_from_dict(l) if isinstance(l, dict) else l for l in self.layers)
        object.__setattr__(self, "layers", layers)
        check_nested(self, stream=StreamConfig, array=ArrayConfig)
        check_engine_strategy(self.stream.strategy)
        cols = self.array.cols
        check_int("layers", len(layers), 1, MAX_LAYERS)
        for i, layer in enumerate(layers):
            if not isinstance(layer, LAYER_TYPES):
                raise ValueError(f"layer {i} must be a Layer or a Conv2D, got {type(layer).__name__}")
            if i and layer.inputs != layers[i - 1].outputs:
                raise ValueError(
                    f"layer {i} ({layer.describe()}) takes {layer.inputs} inputs but layer {i - 1} "
                    f"({layers[i - 1].describe()}) has {layers[i - 1].outputs} outputs"
                )
            if layer.kind == "conv" and i and layer.in_channels % cols:
                raise ValueError(
                    f"layer {i} ({layer.describe()}): a conv layer after the first reads one activation word of "
                    f"cols={cols} channels per pixel, so its in_channels ({layer.in_channels}) must be a multiple of "
                    f"{cols} (give layer {i - 1} a multiple of {cols} outputs per pixel, or use another cols)"
                )
            if layer.kind == "dense" and layer.inputs % cols:
                raise ValueError(
                    f"layer {i} ({layer.describe()}) does not tile the array: its inputs must be a "
                    f"multiple of cols={cols} (the engine does not pad)"
                )
            peak = layer.acc_length * WEIGHT_MAX * -ACT_MIN
            if peak > ACC_MAX:
                raise ValueError(
                    f"layer {i} ({layer.describe()}): {layer.acc_length} inputs can overflow the int32 "
                    f"accumulator (at most {ACC_MAX // (WEIGHT_MAX * -ACT_MIN)})"
                )
        if layers[-1].kind != "dense":
            raise ValueError(f"the last layer ({layers[-1].describe()}) gives the logits: it must be a dense layer")
        if layers[-1].relu:
            raise ValueError(f"the last layer ({layers[-1].describe()}) gives the logits: it has no ReLU")
        if layers[-1].outputs < 2:
            raise ValueError(
                f"the last layer ({layers[-1].describe()}) gives the classes' logits: it needs at "
                "least 2 outputs (the on-chip loss classifies)"
            )
        check_int("weight_depth", self.weight_depth, 0, MAX_WEIGHT_WORDS)
        if self.weight_words > MAX_WEIGHT_WORDS:
            raise ValueError(
                f"the network needs {self.weight_words} weight words of {cols}; the engine "
                f"holds at most {MAX_WEIGHT_WORDS}"
            )
        if self.weight_depth and self.weight_depth < self.weight_words:
            raise ValueError(
                f"weight_depth={self.weight_depth} words is too small for the network: it needs "
                f"{self.weight_words} words of {cols} weights ({self.weights} weights)"
            )
        check_engine_stream(self.perturb)
        if not isinstance(self.backprop, bool):
            raise ValueError(f"backprop must be True or False, got {self.backprop!r}")
        if self.backprop and self.array.rows != cols:
            raise ValueError(
                f"the backprop tail needs a square array (its gradient and error passes feed transposed "
                f"R x C blocks): rows={self.array.rows} must equal cols={cols}"
            )

    # -- shapes -------------------------------------------------------------------------------
    @property
    def perturb(self) -> PerturbConfig:
        return engine_stream(self.stream, self.array.cols, self.weights)

    @property
    def inputs(self) -> int:
        return self.layers[0].inputs

    @property
    def outputs(self) -> int:
        return self.layers[-1].outputs

    def weight_shape(self, i: int) -> tuple[int, int]:
        """Layer i's weight matrix [rows, row length]: a dense layer's [outputs, inputs], a conv layer's
        [out_channels, patch padded to C lanes] (``golden.engine.conv``)."""
        return self.layers[i].weight_shape(self.array.cols)

    def layer_weights(self, i: int) -> int:
        rows, length = self.weight_shape(i)
        return rows * length

    @property
    def weights(self) -> int:
        """|W|: every layer's weights (a conv layer's pad lanes counted)."""
        return sum(self.layer_weights(i) for i in range(len(self.layers)))

    def fit_weights(self, weights) -> list[np.ndarray]:
        """Per-layer weights in this config's shapes (int64): a conv layer's rows cut to its ``patch`` lanes (a
        file's kernels [out_channels, patch], or an engine's rows at another C) and padded with zero pad lanes to
        its row length; dense layers as given."""
        out = []
        for i, (layer, w) in enumerate(zip(self.layers, weights)):
            w = np.asarray(w, dtype=np.int64)
            if layer.kind == "conv" and w.ndim == 2 and w.shape[1] >= layer.patch:
                w = np.pad(w[:, : layer.patch], ((0, 0), (0, self.weight_shape(i)[1] - layer.patch)))
            out.append(w)
        return out

    @property
    def has_conv(self) -> bool:
        return any(l.kind == "conv" for l in self.layers)

    @property
    def weight_words(self) -> int:
        return self.weights // self.array.cols

    @property
    def memory_words(self) -> int:
        return self.weight_depth or self.weight_words

    def layer_words(self, i: int) -> int:
        return self.layer_weights(i) // self.array.cols

    def layer_cycles(self, i: int) -> int:
        """Array issue cycles of layer i per batch tile: its words; a conv layer's once per output pixel,
        OH * OW * out_channels * row_words (no row-buffer fill: ``golden.engine.conv``'s write-through)."""
        layer = self.layers[i]
        return self.layer_words(i) * (layer.pixels if layer.kind == "conv" else 1)

    def layer_offsets(self) -> list[int]:
        """First global weight of each layer."""
        return [sum(self.layer_weights(j) for j in range(i)) for i in range(len(self.layers))]

    @property
    def input_words(self) -> int:
        """Batch-memory words of one example: a dense layer 0's inputs / C, a conv layer 0's im2col'd patches
        OH * OW * row_length / C (``golden.engine.conv.batch_patches``)."""
        first = self.layers[0]
        if first.kind == "conv":
            return first.pixels * first.row_length(self.array.cols) // self.array.cols
        return first.inputs // self.array.cols

    @property
    def hidden_width(self) -> int:
        """Widest hidden activation (0 for a single layer)."""
        return max((l.outputs for l in self.layers[:-1]), default=0)

    @property
    def total_outputs(self) -> int:
        return sum(l.outputs for l in self.layers)

    # -- cycles -------------------------------------------------------------------------------
    def useful_mac_cycles(self) -> int:
        """Cycles a step keeps the array busy: 2 * (B / R) * |W| / C (a conv layer's words once per output
        pixel: ``layer_cycles``)."""
        return 2 * self.array.tiles * sum(self.layer_cycles(i) for i in range(len(self.layers)))

    def cycle_bound(self) -> int:
        """2 * (B / R) * sum of ``layer_cycles`` (|W| / C for a dense-only net) + |W| / C + NET_FORWARD_LATENCY +
        NET_UPDATE_LATENCY (module docstring)."""
        return self.useful_mac_cycles() + self.weight_words + NET_FORWARD_LATENCY + NET_UPDATE_LATENCY

    def bp_cycle_bound(self, split: int) -> int:
        """Issue cycles of the backprop tail at partition ``split`` (C, 0..L; ``hw.engine.bp_tail``): per tail
        layer l (0-based, l >= C) two gradient passes of (B / R) * |W_l| / C words (the first finds the
        gradient's bit width, the second rounds and writes it back) and, below the top of the tail (l > C),
        the error pass -- per C-wide strip of inputs its O_l weight words into the block cache, then
        (B / R) * K_l * ceil(O_l / C) issues -- and the requantisation of the error, (B / R) * K_l reads; plus
        the drains of every pass (``BP_DRAINS``)."""
        T, C = self.array.tiles, self.array.cols
        total = 0
        for l in range(split, len(self.layers)):
            layer = self.layers[l]
            total += 2 * (T * self.layer_words(l) + BP_DRAINS["gradient"])
            if l > split:
                strips = layer.inputs // C
                total += strips * layer.outputs + T * layer.inputs * -(-layer.outputs // C) + BP_DRAINS["error"]
                total += T * layer.inputs + BP_DRAINS["requantise"]
        return total

    def split_c(self, split=None) -> int:
        """C of a run-time ``split`` (None = full ZO; a ``SPLIT_NAMES`` name or 0..L) on this net, or one
        ValueError naming the splits it allows (0..L; a conv layer never in the tail: ``check_tail``)."""
        layers = len(self.layers)
        return layers if split is None else check_tail(self.layers, split_point(split, layers), split)

    def step_cycle_bound(self, split: int | None = None) -> int:
        """``cycle_bound`` at partition ``split`` (None: full ZO): the forward passes (one at C = 0), the ZO
        update (none at C = 0) and ``bp_cycle_bound``."""
        layers = len(self.layers)
        c = layers if split is None else split_point(split, layers)
        if c == layers:
            return self.cycle_bound()
        if c == 0:
            return self.array.tiles * self.weight_words + NET_FORWARD_LATENCY + self.bp_cycle_bound(0)
        return self.cycle_bound() + self.bp_cycle_bound(c)

    def layer_utilisation(self) -> list[dict]:
        """Per layer: words per tile, array cycles per tile (a conv layer's words once per output pixel) and the
        share of the array's MACs its cycles use. Every dense word fills all R x C MACs (C inputs of one output for R
        examples), so a dense layer is 100 % busy while it runs; what a narrow layer costs is the fixed
        ``LAYER_GAP`` between layers, not idle lanes. A conv layer's pad lanes (``patch`` of ``row_length``) idle."""
        out = []
        for i, layer in enumerate(self.layers):
            words, cycles = self.layer_words(i), self.layer_cycles(i)
            gap = LAYER_GAP if i < len(self.layers) - 1 else 0
            lanes = layer.patch / self.weight_shape(i)[1] if layer.kind == "conv" else 1.0  # a conv's pad lanes idle
            out.append(
                {
                    "layer": i,
                    "shape": layer.describe(),
                    "words_per_tile": words,
                    "cycles_per_tile": cycles,
                    "mac_utilisation": round(cycles / (cycles + gap) * lanes, 4),
                }
            )
        return out

    # -- serialisation ------------------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


@dataclass
class StepRecord:
    """What one on-chip step produced: both logit sets, both losses and the g the engine formed; with a
    backprop tail (``golden.engine.backprop``) the ``split`` C and the ``tail``'s errors, gradients and
    updates. At full BP (C = 0) the one pass is the "minus" one: ``logits_plus`` is None, ``loss_plus``
    0 and g 0."""

    logits_plus: np.ndarray | None
    logits_minus: np.ndarray
    loss_plus: int
    loss_minus: int
    g: int
    split: int | None = None
    tail: TailRecord | None = None


def forward_pass(config: NetConfig, x, weights: list[np.ndarray], biases: list[np.ndarray]):
    """(logits, inputs) of the layer program on ``x`` [batch, inputs] int8 with the given (already
    perturbed) per-layer weights: the logits are the int32 accumulators (int64 array [batch, outputs]),
    ``inputs[l]`` layer l's int8 input (``inputs[0]`` is ``x``) -- what the activation buffers hold."""
    h = np.asarray(x, dtype=np.int64)
    inputs = []
    last = len(config.layers) - 1
    for i, (layer, w, b) in enumerate(zip(config.layers, weights, biases)):
        inputs.append(h)
        if layer.kind == "conv":  # im2col matmul, requantise, ReLU, pool (golden.engine.conv)
            h = conv_output(conv_acc(h, layer, w, b, config.array.cols, from_batch=i == 0), layer)
            continue
        acc = exact_matmul(h, w) + b
        if i == last:
            return acc, inputs
        h = saturate(round_shift(acc, layer.shift), 0 if layer.relu else WEIGHT_MIN, WEIGHT_MAX)
    raise AssertionError("unreachable")


def batch_words(config: NetConfig, x) -> np.ndarray:
    """What the host writes to the batch memory for the network input ``x`` [batch, inputs] (int64): ``x`` itself,
    or for a conv layer 0 its im2col'd patches (``golden.engine.conv.batch_patches``) -- ``config.input_words``
    words of C int8 lanes per example, so [batch, input_words * C] either way (a dense layer 0's inputs are a
    multiple of C)."""
    first = config.layers[0]
    x = np.asarray(x, dtype=np.int64)
    return batch_patches(x, first, config.array.cols) if first.kind == "conv" else x


def forward_network(config: NetConfig, x, weights: list[np.ndarray], biases: list[np.ndarray]) -> np.ndarray:
    """The logits of ``forward_pass``."""
    return forward_pass(config, x, weights, biases)[0]


def weights_digest(flat) -> str:
    """A short fingerprint of an int8 weight vector (global order): the first 16 hex digits of the SHA-256
    of its bytes."""
    return hashlib.sha256(np.asarray(flat).astype(np.int8).tobytes()).hexdigest()[:16]


class NetEngine:
    """Operation-level model of ``hw.engine.net_engine.NetEngine``: the global weight vector, the
    biases, the stream, and the operations (forward_zo, update, train_step, infer)."""

    def __init__(self, config: NetConfig, weights=None, biases=None):
        if not isinstance(config, NetConfig):
            raise ValueError(f"config must be a NetConfig, got {type(config).__name__}")
        self.config = config
        self.stream = PerturbationStream(config.perturb)
        self.flat = np.zeros(config.weights, dtype=np.int64)
        self.biases = [np.zeros(l.bias_size, dtype=np.int64) for l in config.layers]
        if weights is not None:
            self.load_weights(weights)
        if biases is not None:
            self.load_biases(biases)
        self.perturbation = None  # the current step's p (+epsilon), global order
        self.steps = 0
        self.decay_count = 0  # the engine's decay counter (module docstring)
        self.zo_end = config.weights  # weights the last forward_zo perturbed (layers 1..C)
        self.last_logits = self.last_inputs = None  # the last pass, for the backprop tail

    # -- state --------------------------------------------------------------------------------
    def _split(self, flat) -> list[np.ndarray]:
        out, offsets = [], self.config.layer_offsets()
        for i, start in enumerate(offsets):
            out.append(flat[start : start + self.config.layer_weights(i)].reshape(self.config.weight_shape(i)))
        return out

    @property
    def weights(self) -> list[np.ndarray]:
        """Per-layer views [rows, row length] (``NetConfig.weight_shape``) of the global weight vector."""
        return self._split(self.flat)

    def load_weights(self, weights) -> None:
        """Per-layer int8 arrays [rows, row length] (``NetConfig.weight_shape``; a dense layer's [outputs,
        inputs]) in [-127, 127], or one flat vector in global order."""
        if isinstance(weights, (list, tuple)):
            if len(weights) != len(self.config.layers):
                raise ValueError(f"weights must hold {len(self.config.layers)} layers, got {len(weights)}")
            parts = []
            for i, w in enumerate(weights):
                w = check_int8(f"layer {i} weights", w, WEIGHT_MIN, WEIGHT_MAX)
                if w.shape != self.config.weight_shape(i):
                    raise ValueError(f"layer {i} weights must have shape {self.config.weight_shape(i)}, got {w.shape}")
                parts.append(w.ravel())
            flat = np.concatenate(parts)
        else:
            flat = check_int8("weights", weights, WEIGHT_MIN, WEIGHT_MAX).ravel()
            if flat.size != self.config.weights:
                raise ValueError(f"weights must hold {self.config.weights} values, got {flat.size}")
        self.flat = flat.astype(np.int64).copy()

    def load_biases(self, biases) -> None:
        """Per-layer int32 vectors, one per output (a conv layer: per output channel); None or a layer without
        ``bias``: zeros."""
        if len(biases) != len(self.config.layers):
            raise ValueError(f"biases must hold {len(self.config.layers)} layers, got {len(biases)}")
        out = []
        for i, (layer, b) in enumerate(zip(self.config.layers, biases)):
            if b is None or not layer.bias:
                if b is not None and np.any(np.asarray(b)):
                    raise ValueError(f"layer {i} ({layer.describe()}) has no bias, got a non-zero one")
                out.append(np.zeros(layer.bias_size, dtype=np.int64))
                continue
            b = np.asarray(b)
            if b.dtype.kind not in "iu" or b.shape != (layer.bias_size,):
                raise ValueError(f"layer {i} bias must be {layer.bias_size} integers")
            limit = ACC_MAX - layer.acc_length * WEIGHT_MAX * -ACT_MIN
            if np.abs(b.astype(np.int64)).max(initial=0) > limit:
                raise ValueError(f"layer {i} bias entries must be in -{limit}..{limit} (int32 accumulation)")
            out.append(b.astype(np.int64))
        self.biases = out

    # -- operations ---------------------------------------------------------------------------
    def split_point(self, split: int | None) -> int:
        """C of a run-time ``split`` on this net (``NetConfig.split_c``)."""
        return self.config.split_c(split)

    def zo_weights(self, split: int | None) -> int:
        """How many leading weights (global order) ZO trains at ``split``: those of layers 1..C."""
        c = self.split_point(split)
        return sum(self.config.layer_weights(i) for i in range(c))

    def next_perturbation(self) -> np.ndarray:
        self.stream.step(next=True, sign=False)
        self.perturbation = self.stream.perturbation(self.config.weights)
        self.steps += 1
        return self.perturbation

    def _logits(self, x, flat) -> np.ndarray:
        return forward_network(self.config, x, self._split(flat), self.biases)

    def forward_zo(self, x, split: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The +epsilon and -epsilon logits [batch, outputs] of a new perturbation; with a ``split`` C < L the
        perturbation of layers C+1..L is 0 (the stream still runs over them) and the -epsilon pass is kept
        for ``backprop``."""
        x = check_batch(self.config, x)
        self.zo_end = self.zo_weights(split)
        p = self.next_perturbation()
        if self.zo_end < p.size:  # a masked copy: the stream's own array is never written
            p = self.perturbation = np.where(np.arange(p.size) < self.zo_end, p, 0)
        plus = self._logits(x, perturbed_weights(self.flat, p))
        minus, self.last_inputs = forward_pass(
            self.config, x, self._split(perturbed_weights(self.flat, -p)), self.biases
        )
        self.last_logits = minus
        return plus, minus

    def forward_plain(self, x) -> np.ndarray:
        """Full BP's one pass: the stored weights' logits, the pass kept for ``backprop``."""
        x = check_batch(self.config, x)
        self.last_logits, self.last_inputs = forward_pass(self.config, x, self.weights, self.biases)
        return self.last_logits

    def digest(self) -> str:
        """``weights_digest`` of the current weights."""
        return weights_digest(self.flat)

    def decays_next(self, wd_every: int = 1) -> bool:
        """Whether the next update's decay acts (the decay counter against ``wd_every``; module docstring)."""
        check_int("wd_every", wd_every, *WD_EVERY_RANGE)
        return self.decay_count >= wd_every - 1

    def update(self, g: int, wd_shift: int = 0, wd_every: int = 1) -> list[np.ndarray]:
        """Replay the step's perturbation: ``w <- sat(w - round_shift(g p, 16) - round_shift(w, wd_shift))``
        (the decay term only for ``wd_shift`` 1..7, on the updates the decay counter picks: ``wd_every``),
        over the weights the last ``forward_zo`` perturbed (layers 1..C of its split)."""
        if self.perturbation is None:
            raise RuntimeError("update before the first forward_zo: there is no perturbation to replay")
        check_wd_shift(wd_shift)
        decay = self.decays_next(wd_every)
        self.decay_count = 0 if decay else self.decay_count + 1
        end = self.zo_end
        self.flat[:end] = updated_weights(self.flat[:end], self.perturbation[:end], g, wd_shift if decay else 0)
        return self.weights

    def backprop(self, labels, margin: int, split: int, bp_bits: int) -> TailRecord:
        """The backprop tail of layers C+1..L (``golden.engine.backprop``) on the last pass (``forward_zo``'s
        -epsilon pass or ``forward_plain``'s), from the hinge subgradient of its logits; updates the
        stored weights."""
        if self.last_logits is None:
            raise RuntimeError("backprop before a forward pass: there are no activations to use")
        error = hinge_error(self.last_logits, labels, margin)
        c = self.split_point(split)
        new, record = tail_backward(self.config.layers, self.weights, self.last_inputs, error, c, bp_bits)
        self.flat = np.concatenate([w.ravel() for w in new])
        return record

    def train_step(self, x, labels, loss: LossConfig, g: int | None = None) -> StepRecord:
        """One complete on-chip step: both passes, the hinge losses, g (``loss.mode``; host mode takes
        ``g``) and the update; with ``loss.split`` C < L the ZO part covers layers 1..C and the backprop
        tail the rest (C = 0: one plain pass and the tail; ``golden.engine.backprop``)."""
        c = self.split_point(loss.split)
        layers = len(self.config.layers)
        if c == 0:
            minus = self.forward_plain(x)
            tail = self.backprop(labels, loss.margin, c, loss.bp_bits)
            return StepRecord(None, minus, 0, hinge_loss(minus, labels, loss.margin), 0, c, tail)
        plus, minus = self.forward_zo(x, c)
        l_plus, l_minus = hinge_loss(plus, labels, loss.margin), hinge_loss(minus, labels, loss.margin)
        if loss.mode == "host":
            if g is None:
                raise ValueError("host loss mode: pass the step's g")
        else:
            g = onchip_g(l_plus, l_minus, loss)
        self.update(g, loss.wd_shift, loss.wd_every)
        tail = self.backprop(labels, loss.margin, c, loss.bp_bits) if c < layers else None
        return StepRecord(plus, minus, l_plus, l_minus, int(g), None if c == layers else c, tail)

    def infer(self, x) -> np.ndarray:
        """Plain inference of the stored weights: logits [batch, outputs]."""
        return self._logits(check_batch(self.config, x), self.flat)
