"""Analytical training-memory calculators: ElasticZO (Eqs. 2-4, 13-15) and Poor Man's Training (Table 3).

Contract
--------
* Units are **bytes** everywhere (fp32 = 4, int8 = 1, int32 = 4 bytes per element). Nothing is
  measured: the numbers are the papers' formulas evaluated on a list of ``LayerSpec`` entries.
* As the ElasticZO paper assumes, every buffer lives for the whole run (no lifetime-based reuse).
* ``first_bp`` (the paper's partition point C) is the index of the first entry trained by BP:
  entries ``layers[first_bp:]`` are BP, the rest ZO; ``len(layers)`` is Full ZO, ``0`` is Full BP.
* Counting conventions (digest-elasticzo 5.4, they reproduce every number of the paper):
  activations a_l are counted for every entry (conv/FC/BN/ReLU/pool outputs, not the input or a
  flatten); errors e_l are stored for the BP entries only, so for Cls1 the ReLU after the last ZO
  layer is *not* counted; parameter gradients g_l exist for the trainable BP entries; the int32
  activation buffers exist for every trainable entry; an int32 input-error buffer e_{l-1} is counted
  for every trainable BP entry except the first one (so none for Cls2, FC3's input for Cls1, and
  every trainable layer but the first for Full BP).
* FP32 nets count weights + biases, INT8 nets (NITI style) weights only, so the paper's
  "M_int8 = 1/4 M_fp32 + int32 terms" is only approximate; this module evaluates the sums exactly.
* Paper errors that touch memory (digest 7.5, 8): the INT8 overhead pairs are printed swapped
  ("0.052/1.4 % and 0.26/4.1 %" -- really Cls2 = 0.26 % at B = 32 and 0.052 % at B = 256, Cls1 =
  4.1 % / 1.4 %), and the abstract's "0.072-1.7 %" overhead matches no number (the body gives
  0.072-2.4 %); the tests pin the values these formulas give.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pezo.golden.config import check_int

BYTES_FP32 = 4
BYTES_INT8 = 1
BYTES_INT32 = 4
LOSS_BYTES = 4
"""Poor Man's Training: one stored loss value is a 4-byte float."""
SEED_BYTES = 4
"""Poor Man's Training: one stored seed is a 4-byte XORShift32 state."""

MAX_COUNT = (1 << 40) - 1
"""Upper bound of any element count, batch or byte count accepted here."""

SPLITS = ("full-zo", "cls2", "cls1", "full-bp")
"""Named partition points, see ``split_index``."""
POORMANS_MODES = ("wp", "np")
"""Poor Man's Training perturbation modes: weight perturbation, node perturbation."""

POINTNET_POINTS = 1024
"""N: points per ModelNet40 sample in the paper's PointNet."""


@dataclass(frozen=True)
class LayerSpec:
    """One entry of a network as the memory formulas see it (element counts, per sample).

    activations -- output elements per sample (one term of sum a_l).
    params_fp32 -- weights + biases of the fp32 net (0 unless trainable).
    params_int8 -- weights only, the INT8 net has no biases (0 unless trainable).
    trainable   -- the entry is in the set T of layers with learnable parameters.
    inputs      -- input elements per sample of a trainable entry (size of its int32 input-error
                   buffer), ``None`` for a non-trainable entry.
    """

    name: str
    activations: int
    params_fp32: int
    params_int8: int
    trainable: bool
    inputs: int | None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        check_int("activations", self.activations, 0, MAX_COUNT)
        check_int("params_fp32", self.params_fp32, 0, MAX_COUNT)
        check_int("params_int8", self.params_int8, 0, MAX_COUNT)
        if not isinstance(self.trainable, bool):
            raise ValueError(f"trainable must be True or False, got {self.trainable!r}")
        if self.trainable:
            check_int("inputs", self.inputs, 1, MAX_COUNT)
        elif self.inputs is not None or self.params_fp32 or self.params_int8:
            raise ValueError(f"{self.name}: a non-trainable entry must have 0 params and inputs None")


def _fc(name: str, n_in: int, n_out: int, per_sample: int = 1, bias: bool = True) -> LayerSpec:
    """A fully connected layer (shared over ``per_sample`` positions, e.g. PointNet's points)."""
    weights = n_in * n_out
    return LayerSpec(name, n_out * per_sample, weights + (n_out if bias else 0), weights, True, n_in * per_sample)


def _act(name: str, elements: int) -> LayerSpec:
    """A parameter-free entry (ReLU, pool) with ``elements`` outputs per sample."""
    return LayerSpec(name, elements, 0, 0, False, None)


def _conv(name: str, c_in: int, c_out: int, k: int, hw_in: int, hw_out: int) -> LayerSpec:
    """A k x k conv with bias on square maps (hw_in -> hw_out spatial side)."""
    weights = c_out * c_in * k * k
    return LayerSpec(name, c_out * hw_out * hw_out, weights + c_out, weights, True, c_in * hw_in * hw_in)


LENET5: tuple[LayerSpec, ...] = (
    _conv("conv1", 1, 6, 5, 28, 28),
    _act("relu1", 6 * 28 * 28),
    _act("pool1", 6 * 14 * 14),
    _conv("conv2", 6, 16, 5, 14, 14),
    _act("relu2", 16 * 14 * 14),
    _act("pool2", 16 * 7 * 7),
    _fc("fc1", 784, 120),
    _act("relu3", 120),
    _fc("fc2", 120, 84),
    _act("relu4", 84),
    _fc("fc3", 84, 10),
)
"""Reconstructed LeNet-5 (digest 5.1): 107,786 fp32 params, 18,058 activations per sample."""


def _pointnet(points: int = POINTNET_POINTS) -> tuple[LayerSpec, ...]:
    """Reconstructed PointNet (digest 5.2): 5 x [per-point FC no bias, BN(gamma, beta), ReLU], max-pool,
    FC 1024-512-256-40 head with biases. BN counts 2 d params in both nets (no INT8 PointNet in the paper)."""
    widths = (3, 64, 64, 64, 128, 1024)
    entries: list[LayerSpec] = []
    for i, (d_in, d) in enumerate(zip(widths, widths[1:]), start=1):
        entries += [
            _fc(f"feat_fc{i}", d_in, d, points, bias=False),
            LayerSpec(f"feat_bn{i}", d * points, 2 * d, 2 * d, True, d * points),
            _act(f"feat_relu{i}", d * points),
        ]
    entries += [
        _act("maxpool", 1024),
        _fc("fc1", 1024, 512),
        _act("relu1", 512),
        _fc("fc2", 512, 256),
        _act("relu2", 256),
        _fc("fc3", 256, 40),
    ]
    return tuple(entries)


POINTNET: tuple[LayerSpec, ...] = _pointnet()
"""Reconstructed PointNet, N = 1024 points: 816,744 fp32 params."""


def _check_layers(layers: Sequence[LayerSpec]) -> tuple[LayerSpec, ...]:
    layers = tuple(layers)
    if not layers or not all(isinstance(l, LayerSpec) for l in layers):
        raise ValueError("layers must be a non-empty sequence of LayerSpec")
    return layers


def split_index(layers: Sequence[LayerSpec], split: str | int) -> int:
    """Index of the first BP entry (the paper's C).

    'full-zo' -> len(layers); 'full-bp' -> 0; 'cls2' -> the entry of the last trainable layer (BP on the
    last FC only); 'cls1' -> the entry of the second-last trainable layer; an int is returned as is after
    a range check 0..len(layers). LENET5: cls2 = 10, cls1 = 8; POINTNET: cls2 = n-1, cls1 = n-3.
    """
    layers = _check_layers(layers)
    n = len(layers)
    if isinstance(split, int) and not isinstance(split, bool) and 0 <= split <= n:
        return split
    if isinstance(split, str) and split in SPLITS:
        if split == "full-zo":
            return n
        if split == "full-bp":
            return 0
        trained = [i for i, l in enumerate(layers) if l.trainable]
        need = 1 if split == "cls2" else 2
        if len(trained) < need:
            raise ValueError(f"split {split} needs at least {need} trainable layers, got {len(trained)}")
        return trained[-need]
    raise ValueError(f"split must be in 0..{n} or one of {', '.join(SPLITS)}, got {split!r}")


def _check_run(layers: Sequence[LayerSpec], batch: int, first_bp: int) -> tuple[LayerSpec, ...]:
    layers = _check_layers(layers)
    check_int("batch", batch, 1, MAX_COUNT)
    check_int("first_bp", first_bp, 0, len(layers))
    return layers


def memory_fp32(layers: Sequence[LayerSpec], batch: int, first_bp: int) -> dict[str, int]:
    """FP32 training memory in bytes, Eq. 4 (Eq. 3 at first_bp = len(layers), Eq. 2 at first_bp = 0).

    Keys: params (theta), activations (a_l, all entries), gradients (g_l, trainable BP entries),
    errors (e_l, BP entries), total.
    """
    layers = _check_run(layers, batch, first_bp)
    bp = layers[first_bp:]
    parts = {
        "params": BYTES_FP32 * sum(l.params_fp32 for l in layers),
        "activations": BYTES_FP32 * batch * sum(l.activations for l in layers),
        "gradients": BYTES_FP32 * sum(l.params_fp32 for l in bp),
        "errors": BYTES_FP32 * batch * sum(l.activations for l in bp),
    }
    parts["total"] = sum(parts.values())
    return parts


def memory_int8(layers: Sequence[LayerSpec], batch: int, first_bp: int) -> dict[str, int]:
    """INT8 training memory in bytes, Eq. 15 (Eq. 14 at first_bp = len(layers), Eq. 13 at first_bp = 0).

    Keys: params, activations, gradients, errors (the int8 tensors, as in ``memory_fp32``), plus the
    int32 accumulator buffers activations_int32 (trainable entries), gradients_int32 (trainable BP
    entries), errors_int32 (inputs of the trainable BP entries after the first one), and total.
    """
    layers = _check_run(layers, batch, first_bp)
    bp = layers[first_bp:]
    bp_trained = [l for l in bp if l.trainable]
    parts = {
        "params": BYTES_INT8 * sum(l.params_int8 for l in layers),
        "activations": BYTES_INT8 * batch * sum(l.activations for l in layers),
        "gradients": BYTES_INT8 * sum(l.params_int8 for l in bp),
        "errors": BYTES_INT8 * batch * sum(l.activations for l in bp),
        "activations_int32": BYTES_INT32 * batch * sum(l.activations for l in layers if l.trainable),
        "gradients_int32": BYTES_INT32 * sum(l.params_int8 for l in bp),
        "errors_int32": BYTES_INT32 * batch * sum(l.inputs for l in bp_trained[1:]),
    }
    parts["total"] = sum(parts.values())
    return parts


def poormans_memory(
    params_bytes: int,
    peak_inference_bytes: int,
    layers_trained: int,
    queries: int,
    batch: int,
    largest_weight_grad: int,
    mode: str,
) -> dict[str, int]:
    """Peak training memory in bytes of Poor Man's Training, Table 3 "efficient" rows + Sec. 4.3.

    total = params_bytes + peak_inference_bytes + extra (the analytic memory of the paper's Sec. 4.3):
    * 'wp' (weight perturbation): extra = L*Q loss scalars + L seeds.
    * 'np' (node perturbation):   extra = N*L*Q loss scalars + L seeds + d_w, one gradient buffer of
      the largest trained layer's weights (it also holds the old weights via the in-place swap).
    Bytes per scalar: a loss is a 4-byte float (``LOSS_BYTES``), a seed a 4-byte XORShift32 state
    (``SEED_BYTES``, one seed per trained layer); ``largest_weight_grad`` is d_w in bytes of the weight
    dtype (= the element count for the paper's INT8 weights) and is ignored by 'wp'. The clean-forward
    losses (1 or N scalars) are not in Table 3 and are not counted.
    Keys: params, peak_inference, losses, seeds, grad_buffer, extra, total.
    """
    check_int("params_bytes", params_bytes, 0, MAX_COUNT)
    check_int("peak_inference_bytes", peak_inference_bytes, 0, MAX_COUNT)
    check_int("layers_trained", layers_trained, 1, MAX_COUNT)
    check_int("queries", queries, 1, MAX_COUNT)
    check_int("batch", batch, 1, MAX_COUNT)
    check_int("largest_weight_grad", largest_weight_grad, 0, MAX_COUNT)
    if mode not in POORMANS_MODES:
        raise ValueError(f"mode must be one of {', '.join(POORMANS_MODES)}, got {mode!r}")
    node = mode == "np"
    losses = LOSS_BYTES * (batch if node else 1) * layers_trained * queries
    seeds = SEED_BYTES * layers_trained
    grad_buffer = largest_weight_grad if node else 0
    extra = losses + seeds + grad_buffer
    return {
        "params": params_bytes,
        "peak_inference": peak_inference_bytes,
        "losses": losses,
        "seeds": seeds,
        "grad_buffer": grad_buffer,
        "extra": extra,
        "total": params_bytes + peak_inference_bytes + extra,
    }


def mlp_specs(sizes: Sequence[int], relu: bool = True, bias: bool = True) -> tuple[LayerSpec, ...]:
    """LayerSpecs of an MLP sizes[0] -> sizes[1] -> ... -> sizes[-1] with a ReLU after every FC but the last
    (FC entries trainable with fp32 params out*in (+out with ``bias``), int8 params out*in, inputs=in; ReLU
    entries not trainable)."""
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence) or len(sizes) < 2:
        raise ValueError(f"sizes must be a sequence of at least 2 layer widths, got {sizes!r}")
    for i, size in enumerate(sizes):
        check_int(f"sizes[{i}]", size, 1, MAX_COUNT)
    if not isinstance(relu, bool):
        raise ValueError(f"relu must be True or False, got {relu!r}")
    entries: list[LayerSpec] = []
    last = len(sizes) - 1
    for i in range(1, len(sizes)):
        entries.append(_fc(f"fc{i}", sizes[i - 1], sizes[i], bias=bias))
        if relu and i < last:
            entries.append(_act(f"relu{i}", sizes[i]))
    return tuple(entries)


def method_memory(config, sizes: Sequence[int]) -> dict:
    """Training memory in bytes of one ``pezo.golden.methods.base.MethodConfig`` run on the bias-free MLP ``sizes``
    (batch = ``config.batch_size``), by the calculator that fits the method:

    * mezo: Eq. 3 (Full ZO, fp32); elasticzo: Eq. 4 at its C; elasticzo-int8: Eq. 15 at its C (C = 0 is
      NITI's Full BP, Eq. 13);
    * poormans: int8 weights + the peak inference arena (int8 input + output of the widest layer, times
      the batch) + Table 3's efficient extra (``poormans_memory``; 'np' if any trained layer uses node
      perturbation, with d_w = the largest such layer's weights);
    * sign-m-spsa: int16 weights + int8 activations (Eq. 3's terms at 2 and 1 bytes) + Algorithm 1's
      gradient accumulator g^a (int16, one per weight).
    ``total`` is the figure the comparison tables use; the other keys are its parts.
    """
    specs = mlp_specs(list(sizes), bias=False)
    layers = len(sizes) - 1
    fc_entries = [i for i, spec in enumerate(specs) if spec.trainable]
    batch = config.batch_size
    method = config.method
    if method in ("mezo", "elasticzo", "elasticzo-int8"):
        c = layers if method == "mezo" else config.split_point(layers)
        first_bp = len(specs) if c == layers else fc_entries[c]
        parts = (memory_int8 if method == "elasticzo-int8" else memory_fp32)(specs, batch, first_bp)
        parts["formula"] = {
            "mezo": "ElasticZO Eq. 3 (Full ZO, fp32)",
            "elasticzo": f"ElasticZO Eq. 4 (C = {c}, fp32)",
            "elasticzo-int8": f"ElasticZO Eq. 15 (C = {c}, int8 + int32 buffers)",
        }[method]
        return parts
    weights = [sizes[i] * sizes[i + 1] for i in range(layers)]
    if method == "poormans":
        node = [
            i
            for i in range(layers)
            if (config.perturbation == "node" or (config.perturbation == "adaptive" and weights[i] >= sizes[i + 1]))
        ]
        trained = layers if config.block in ("all", "adaptive") else 1
        peak = batch * max(sizes[i] + sizes[i + 1] for i in range(layers))
        parts = poormans_memory(
            sum(weights),
            peak,
            trained,
            config.n_queries,
            batch,
            max((weights[i] for i in node), default=0),
            "np" if node else "wp",
        )
        parts["formula"] = "Poor Man's Table 3 (efficient) + Sec. 4.3"
        return parts
    params = 2 * sum(weights)
    activations = batch * sum(spec.activations for spec in specs)
    parts = {"params": params, "activations": activations, "gradient_accumulator": params}
    parts["total"] = sum(parts.values())
    parts["formula"] = "Eq. 3 terms at 16w8a + Algorithm 1's int16 g^a"
    return parts
