"""Convolution layers of the engine's layer program (``golden.engine.network``): ``Conv2D`` as an im2col matmul on
the R x C array, with the requantisation, ReLU and an optional 2 x 2 pool on the way to the activation buffer.

**Activation layout** -- every activation (the batch too) is a flat int8 vector per example; a convolution reads it
as [channels, height, width] in that order (row-major: index (c * H + y) * W + x), and writes its output the same
way, so a dense layer after it reads the channel-major flattening (ONNX's ``Flatten`` of NCHW): Flatten is no
operation at all.

**Weights and their order** -- a Conv2D of ``out_channels`` kernels over ``in_channels`` x k x k patches is a
weight matrix of ``out_channels`` rows, row o holding ``w[o, ci, ky, kx]`` at lane j = (ci * k + ky) * k + kx
(ONNX's [out, in, kh, kw] flattened), padded with zero-input lanes up to ``row_length(cols)``, the next multiple
of the array's C lanes (``patch`` = in_channels * k * k lanes carry data; the pad lanes' activations are 0, so their
weights never change a result -- they are stored, perturbed and updated like any other, they just multiply 0).
The global weight order (``NetConfig``) is the layers in sequence, each its rows in order: the perturbation
stream, the +/-epsilon passes and the ZO update's replay walk conv kernels exactly as dense rows.

**Arithmetic** (bit-exact; ``conv_forward``):

* patches (im2col): output pixel (oy, ox) (OH x OW of them, row-major) reads input pixel
  (oy * stride - padding + ky, ox * stride - padding + kx) of channel ci at lane j; outside the image: 0 (zero
  padding); OH = (H + 2 padding - k) // stride + 1 (likewise OW).
* ``acc[b, o, p] = bias[o] + sum_j patch[b, p, j] * w'[o, j]``: int8 x int8 products summed exactly in int32 (the
  order does not matter: exact), the optional int32 bias one per output channel.
* ``q = sat(round_shift(acc, shift), lo, 127)`` (round half up), lo = 0 with ReLU, else -127 (as a dense layer).
* pool (on q, per channel, non-overlapping 2 x 2 windows, OH and OW even): ``max`` -- the window's maximum;
  ``avg`` -- ``round_shift(sum of the 4, 2)`` (a shift by 2, round half up: ties toward +infinity; the result stays
  in q's range). ``none`` -- q itself.

A conv layer is never the last layer (the logits are a dense layer's accumulators) and never in the backprop tail
(``golden.engine.backprop``: the tail is dense-only).

**Cycles** (the RTL's address generator, not built yet): for each output channel o the row's ``row_length / C``
perturbed words are read once into a row buffer, then for each output pixel the activation buffer is read in patch
order (one C-lane slice of the patch per cycle, the pad lanes and the zero padding as zeros) for R examples, so a
conv layer takes OH * OW * out_channels * row_length / C cycles per batch tile: its MACs / (R * C) with the pad lanes
counted (``NetConfig.layer_cycles``), plus a row-buffer fill per output channel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from pezo.golden.config import check_int
from pezo.golden.engine.int8 import SHIFT_RANGE, WEIGHT_MAX, WEIGHT_MIN, exact_matmul, round_shift, saturate

POOLS = ("none", "max", "avg")
MAX_KERNEL = 7
"""Largest kernel side the address generator supports (a patch row of up to 7 x 7 x channels lanes)."""
STRIDES = (1, 2)
MAX_CHANNELS = 256
MAX_SIDE = 64
"""Largest image side (height, width) of a conv layer's input."""
POOL_SIDE = 2


@dataclass(frozen=True)
class Conv2D:
    """One convolution layer (module docstring): ``in_channels`` x ``height`` x ``width`` -> ``out_channels``
    maps of ``kernel`` x ``kernel`` kernels at ``stride`` (1 or 2) with ``padding`` zeros (0..kernel // 2) on
    every side, then ``shift``, ``relu`` and ``pool`` (``none`` | ``max`` | ``avg``, 2 x 2); ``bias`` one int32 per
    output channel; ``weight_exponent`` as ``Layer``'s. ``kind`` is always ``"conv"`` (the serialised form)."""

    in_channels: int
    height: int
    width: int
    out_channels: int
    kernel: int = 3
    stride: int = 1
    padding: int = 0
    pool: str = "none"
    shift: int = 0
    relu: bool = False
    bias: bool = False
    weight_exponent: int = -7
    kind: str = "conv"

    def __post_init__(self):
        if self.kind != "conv":
            raise ValueError(f"kind must be 'conv' for a Conv2D, got {self.kind!r}")
        check_int("in_channels", self.in_channels, 1, MAX_CHANNELS)
        check_int("out_channels", self.out_channels, 1, MAX_CHANNELS)
        check_int("height", self.height, 1, MAX_SIDE)
        check_int("width", self.width, 1, MAX_SIDE)
        side = min(self.height, self.width)
        if isinstance(self.kernel, bool) or not isinstance(self.kernel, int) or not 1 <= self.kernel <= MAX_KERNEL:
            raise ValueError(
                f"conv {self.shape_text()}: kernel must be in 1..{MAX_KERNEL} (the address generator's patch rows), "
                f"got {self.kernel!r}"
            )
        if self.stride not in STRIDES or isinstance(self.stride, bool):
            raise ValueError(f"conv {self.shape_text()}: stride must be one of 1, 2, got {self.stride!r}")
        if (
            isinstance(self.padding, bool)
            or not isinstance(self.padding, int)
            or not 0 <= self.padding <= self.kernel // 2
        ):
            raise ValueError(
                f"conv {self.shape_text()}: padding must be an integer in 0..{self.kernel // 2} (kernel // 2), "
                f"got {self.padding!r}"
            )
        if self.kernel > side + 2 * self.padding:
            raise ValueError(
                f"conv {self.shape_text()}: a {self.kernel}x{self.kernel} kernel is larger than the padded "
                f"{self.height}x{self.width} input"
            )
        check_int("shift", self.shift, *SHIFT_RANGE)
        if not isinstance(self.relu, bool) or not isinstance(self.bias, bool):
            raise ValueError("relu and bias must be True or False")
        check_int("weight_exponent", self.weight_exponent, -64, 64)
        if self.pool not in POOLS:
            raise ValueError(f"conv {self.shape_text()}: pool must be one of {', '.join(POOLS)}, got {self.pool!r}")
        if self.pool != "none" and (self.conv_height % POOL_SIDE or self.conv_width % POOL_SIDE):
            raise ValueError(
                f"conv {self.shape_text()}: a 2x2 {self.pool} pool needs an even output size, got "
                f"{self.conv_height}x{self.conv_width}"
            )

    def shape_text(self) -> str:
        return (
            f"{self.kernel}x{self.kernel}/{self.stride} pad {self.padding} "
            f"{self.in_channels}x{self.height}x{self.width} -> {self.out_channels}"
        )

    # -- shapes -------------------------------------------------------------------------------
    @property
    def conv_height(self) -> int:
        return (self.height + 2 * self.padding - self.kernel) // self.stride + 1

    @property
    def conv_width(self) -> int:
        return (self.width + 2 * self.padding - self.kernel) // self.stride + 1

    @property
    def pixels(self) -> int:
        """Output pixels before the pool (OH * OW): the patches of one example."""
        return self.conv_height * self.conv_width

    @property
    def out_shape(self) -> tuple[int, int, int]:
        """[channels, height, width] of the output (after the pool)."""
        div = POOL_SIDE if self.pool != "none" else 1
        return self.out_channels, self.conv_height // div, self.conv_width // div

    @property
    def inputs(self) -> int:
        return self.in_channels * self.height * self.width

    @property
    def outputs(self) -> int:
        c, h, w = self.out_shape
        return c * h * w

    @property
    def patch(self) -> int:
        """Lanes of a patch that carry data: in_channels * kernel^2."""
        return self.in_channels * self.kernel * self.kernel

    @property
    def bias_size(self) -> int:
        return self.out_channels

    @property
    def acc_length(self) -> int:
        """Products one accumulator sums (the int32 overflow check): ``patch``."""
        return self.patch

    def row_length(self, cols: int) -> int:
        """A weight row's lanes: ``patch`` rounded up to a multiple of ``cols``."""
        return -(-self.patch // cols) * cols

    def weight_shape(self, cols: int) -> tuple[int, int]:
        return self.out_channels, self.row_length(cols)

    def macs_per_example(self, cols: int) -> int:
        """Array MACs of one example, pad lanes counted: pixels * out_channels * row_length."""
        return self.pixels * self.out_channels * self.row_length(cols)

    def describe(self) -> str:
        c, h, w = self.out_shape
        extra = (" + bias" if self.bias else "") + (" relu" if self.relu else "")
        extra += f" {self.pool}pool" if self.pool != "none" else ""
        return f"conv{self.kernel}x{self.kernel}/{self.stride} pad {self.padding} {self.inputs} -> {c}x{h}x{w}{extra}"


def patch_index(layer) -> np.ndarray:
    """[pixels, patch] indices into the zero-padded input [C, H + 2p, W + 2p] flattened: the im2col order of
    ``golden.engine.conv`` (lane j = (ci * k + ky) * k + kx, pixels row-major)."""
    k, s, p = layer.kernel, layer.stride, layer.padding
    hp, wp = layer.height + 2 * p, layer.width + 2 * p
    ci, ky, kx = np.meshgrid(np.arange(layer.in_channels), np.arange(k), np.arange(k), indexing="ij")
    oy, ox = np.meshgrid(np.arange(layer.conv_height), np.arange(layer.conv_width), indexing="ij")
    rows = (oy.reshape(-1, 1) * s + ky.reshape(1, -1)) * wp + ox.reshape(-1, 1) * s + kx.reshape(1, -1)
    return ci.reshape(1, -1) * hp * wp + rows


def float_conv(h, layer: Conv2D, w, bias=None) -> np.ndarray:
    """The float twin of ``conv_forward`` (no requantisation): patches x ``w``.T [out_channels, patch] + ``bias``
    (per output channel, optional), ReLU, the pool (``max``; ``avg`` the mean), flattened [B, outputs]."""
    h = np.asarray(h, dtype=np.float64)
    b, p = h.shape[0], layer.padding
    x = np.pad(h.reshape(b, layer.in_channels, layer.height, layer.width), ((0, 0), (0, 0), (p, p), (p, p)))
    z = (x.reshape(b, -1)[:, patch_index(layer)] @ np.asarray(w, dtype=np.float64).T).transpose(0, 2, 1)
    z = z.reshape(b, layer.out_channels, layer.conv_height, layer.conv_width)
    if bias is not None:
        z = z + np.asarray(bias, dtype=np.float64).reshape(1, -1, 1, 1)
    z = np.maximum(z, 0.0) if layer.relu else z
    if layer.pool != "none":
        win = z.reshape(b, layer.out_channels, layer.conv_height // 2, 2, layer.conv_width // 2, 2)
        z = win.max(axis=(3, 5)) if layer.pool == "max" else win.mean(axis=(3, 5))
    return z.reshape(b, -1)


def im2col(h, layer: Conv2D, cols: int) -> np.ndarray:
    """The patches [B, pixels, row_length(cols)] of ``h`` [B, inputs] (int64): module docstring's order, the pad
    lanes 0. This is the order the address generator reads the activation buffer in (no copy on chip)."""
    h = np.asarray(h, dtype=np.int64)
    b, p, k, s = h.shape[0], layer.padding, layer.kernel, layer.stride
    x = h.reshape(b, layer.in_channels, layer.height, layer.width)
    if p:
        x = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    win = sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::s, ::s][:, :, : layer.conv_height, : layer.conv_width]
    patches = win.transpose(0, 2, 3, 1, 4, 5).reshape(b, layer.pixels, layer.patch)
    pad = layer.row_length(cols) - layer.patch
    return np.pad(patches, ((0, 0), (0, 0), (0, pad))) if pad else patches


def conv_acc(h, layer: Conv2D, w, bias, cols: int) -> np.ndarray:
    """The int32 accumulators [B, out_channels, pixels] of ``layer`` on ``h`` with weights ``w``
    [out_channels, row_length] and ``bias`` [out_channels] (exact)."""
    patches = im2col(h, layer, cols)
    b = patches.shape[0]
    acc = exact_matmul(patches.reshape(b * layer.pixels, -1), w).reshape(b, layer.pixels, layer.out_channels)
    return acc.transpose(0, 2, 1) + np.reshape(np.asarray(bias, dtype=np.int64), (1, -1, 1))


def pool2x2(q, kind: str) -> np.ndarray:
    """``max`` or ``avg`` (round_shift(sum, 2)) of the non-overlapping 2 x 2 windows of ``q`` [B, C, H, W] (H, W
    even); ``none``: ``q``."""
    if kind == "none":
        return q
    b, c, hh, ww = q.shape
    win = q.reshape(b, c, hh // 2, 2, ww // 2, 2)
    return win.max(axis=(3, 5)) if kind == "max" else round_shift(win.sum(axis=(3, 5)), 2)


def conv_output(acc, layer: Conv2D) -> np.ndarray:
    """The layer's int8 output [B, outputs] from its accumulators: requantise, ReLU, pool, flatten."""
    lo = 0 if layer.relu else WEIGHT_MIN
    q = saturate(round_shift(acc, layer.shift), lo, WEIGHT_MAX)
    q = q.reshape(acc.shape[0], layer.out_channels, layer.conv_height, layer.conv_width)
    return pool2x2(q, layer.pool).reshape(acc.shape[0], layer.outputs)


def conv_forward(h, layer: Conv2D, w, bias, cols: int) -> np.ndarray:
    """``conv_output(conv_acc(...))``: the layer's int8 output [B, outputs] (module docstring)."""
    return conv_output(conv_acc(h, layer, w, bias, cols), layer)
