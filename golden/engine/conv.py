"""Convolution layers of the engine's layer program (``golden.engine.network``): ``Conv2D`` as an im2col matmul on
the R x C array, with the requantisation, ReLU and an optional 2 x 2 pool on the way to the activation buffer.

**Activation layout (HWC)** -- every activation is a flat int8 vector per example. A convolution's output, and the
input of every conv layer but the first, is stored pixel-major, channel-innermost: element (y, x, c) of an
H x W x channels map at index (y * W + x) * channels + c. One activation-buffer word (C int8 lanes for R examples)
then holds C consecutive channels of one pixel: a conv layer after the first must have ``in_channels`` a multiple
of C (``NetConfig`` refuses it otherwise, naming the layer). A dense layer after a convolution reads this HWC
flattening (an ONNX model's NCHW ``Flatten`` is a permutation of its columns: ``hwc_order``, applied by the ONNX
import and undone by the export).

**The network input (the batch) and the first layer** -- the batch keeps the user's layout, channel-major
[c, y, x] (ONNX's NCHW flattened, index (c * H + y) * W + x). A conv layer 0 reads it **im2col'd by the host**:
the batch memory holds, per example, the patches of the OH x OW output pixels one after another, each
``row_length / C`` words in the lane order below (``batch_patches``), so the array reads pixel p's patch words at
batch words p * row_words .. p * row_words + row_words - 1. For digits-cnn's conv1 (1 channel, 3 x 3) that is
2 words per pixel (9 of 16 lanes used), 1 024 issue cycles per tile, against 9 words (4 608 cycles, 4.5 x) if the
channels were padded to C (one word per pixel, ``(ky, kx)`` words per patch). The price is the batch memory:
OH * OW * row_words words per example instead of in_channels * H * W / C (digits: 128 words instead of 8).

**Weights and their order** -- a Conv2D of ``out_channels`` kernels over k x k x ``in_channels`` patches is a
weight matrix of ``out_channels`` rows, row o holding ``w[o, ci, ky, kx]`` (ONNX's [out, in, kh, kw]) at lane
j = (ky * k + kx) * in_channels + ci (channel innermost: ``kernel_rows`` / ``kernel_tensor``), padded with
zero-input lanes up to ``row_length(cols)``, the next multiple of the array's C lanes (``patch`` = k^2 *
in_channels lanes carry data; the pad lanes' activations are 0, so their weights never change a result -- they are
stored, perturbed and updated like any other, they just multiply 0; a layer after the first has no pad lanes).
So patch word (ky, kx, channel block cb) of output pixel (oy, ox) is exactly one activation-buffer word: channels
cb * C .. cb * C + C - 1 of input pixel (oy * stride - padding + ky, ox * stride - padding + kx), or a zero word
outside the image (zero padding). For in_channels = 1 the lane orders (ci, ky, kx) and (ky, kx, ci) coincide.
The global weight order (``NetConfig``) is the layers in sequence, each its rows in order, lanes in row order: the
perturbation stream, the +/-epsilon passes and the ZO update's replay walk conv kernels exactly as dense rows.

**Arithmetic** (bit-exact; ``conv_forward``):

* patches (im2col, ``patch_source``): output pixel (oy, ox) (OH x OW of them, row-major) reads at lane j input
  pixel (oy * stride - padding + ky, ox * stride - padding + kx) of channel ci; outside the image: 0 (zero
  padding); OH = (H + 2 padding - k) // stride + 1 (likewise OW).
* ``acc[b, p, o] = bias[o] + sum_j patch[b, p, j] * w'[o, j]``: int8 x int8 products summed exactly in int32 (the
  order does not matter: exact), the optional int32 bias one per output channel.
* ``q = sat(round_shift(acc, shift), lo, 127)`` (round half up), lo = 0 with ReLU, else -127 (as a dense layer).
* pool (on q, per channel, non-overlapping 2 x 2 windows, OH and OW even): ``max`` -- the window's maximum;
  ``avg`` -- ``round_shift(sum of the 4, 2)`` (a shift by 2, round half up: ties toward +infinity; the result stays
  in q's range). ``none`` -- q itself. The output is written HWC: [OH', OW', out_channels].

A conv layer is never the last layer (the logits are a dense layer's accumulators) and never in the backprop tail
(``golden.engine.backprop``: the tail is dense-only).

**The address walk and its cycles** (``patch_word_addresses``; its RTL twin ``hw.engine.conv_walk``): per
batch tile, for each output channel o, for each output pixel -- in pool-window order when the layer pools
(pooled pixel (py, px) row-major, then its window (dy, dx) row-major, so the pool folds 4 consecutive dot products
in a register and writes once) -- the ``row_words`` = row_length / C words of the patch in lane order, one per
cycle for R examples. Weight row o is perturbed once (the stream is sequential): the words of the first pixel
come from the weight memory through the perturbation add and are written through into a row buffer of row_words
words, which every later pixel of the channel reads. So the row buffer needs **no fill cycles**, and a conv
layer takes OH * OW * out_channels * row_words issue cycles per tile (``NetConfig.layer_cycles``): its MACs /
(R * C) with the pad lanes counted. Output element e = pixel' * out_channels + o (pixel' after the pool) goes to lane
e % C of activation word e // C.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
        """(channels, height, width) of the output (after the pool): its shape; it is stored HWC (module docstring)."""
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
        """Lanes of a patch that carry data: kernel^2 * in_channels."""
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


def hwc_order(channels: int, height: int, width: int) -> np.ndarray:
    """The permutation ``perm`` with ``hwc = chw[..., perm]`` for a map stored channel-major (index (c * H + y) * W +
    x) and pixel-major (index (y * W + x) * C + c): so a dense layer's columns over an NCHW ``Flatten``,
    ``w_chw``, become ``w_chw[:, perm]`` over the engine's HWC flattening (and back: ``w_hwc[:, argsort(perm)]``)."""
    return np.arange(channels * height * width).reshape(channels, height, width).transpose(1, 2, 0).ravel()


def kernel_rows(kernels) -> np.ndarray:
    """Kernels [out, in, k, k] (ONNX's order) as weight rows [out, k * k * in] in the lane order (ky, kx, ci)."""
    kernels = np.asarray(kernels)
    return kernels.transpose(0, 2, 3, 1).reshape(kernels.shape[0], -1)


def kernel_tensor(rows, layer: Conv2D) -> np.ndarray:
    """``kernel_rows``'s inverse: a layer's rows [out_channels, >= patch] (pad lanes dropped) as [out, in, k, k]."""
    k = layer.kernel
    rows = np.asarray(rows)[:, : layer.patch]
    return rows.reshape(layer.out_channels, k, k, layer.in_channels).transpose(0, 3, 1, 2)


def patch_source(layer: Conv2D, from_batch: bool = False) -> np.ndarray:
    """[pixels, patch] flat input indices of the im2col patches (module docstring's lane order (ky, kx, ci), pixels
    row-major), -1 where the patch reads zero padding. The input is HWC, or with ``from_batch`` (layer 0 reading the
    network's input) channel-major."""
    k, s, p = layer.kernel, layer.stride, layer.padding
    oy, ox, ky, kx, ci = np.meshgrid(
        np.arange(layer.conv_height),
        np.arange(layer.conv_width),
        np.arange(k),
        np.arange(k),
        np.arange(layer.in_channels),
        indexing="ij",
    )
    y, x = oy * s - p + ky, ox * s - p + kx
    inside = (y >= 0) & (y < layer.height) & (x >= 0) & (x < layer.width)
    if from_batch:
        index = (ci * layer.height + y) * layer.width + x
    else:
        index = (y * layer.width + x) * layer.in_channels + ci
    return np.where(inside, index, -1).reshape(layer.pixels, layer.patch)


def _gather_patches(h, layer: Conv2D, from_batch: bool) -> np.ndarray:
    """[B, pixels, patch] of ``h`` [B, inputs] (or [B, ...], flattened) by ``patch_source`` (-1: an appended 0)."""
    h = np.asarray(h)
    h = h.reshape(h.shape[0], -1)
    padded = np.concatenate([h, np.zeros((h.shape[0], 1), dtype=h.dtype)], axis=1)
    return padded[:, patch_source(layer, from_batch)]


def _windows(q) -> np.ndarray:
    """The non-overlapping 2 x 2 windows of ``q`` [B, H, W, C] (HWC; H, W even): [B, H / 2, 2, W / 2, 2, C]."""
    b, hh, ww, c = q.shape
    return q.reshape(b, hh // 2, 2, ww // 2, 2, c)


def float_conv(h, layer: Conv2D, w, bias=None, from_batch: bool = False) -> np.ndarray:
    """The float twin of ``conv_forward`` (no requantisation): patches x ``w``.T [out_channels, patch] + ``bias``
    (per output channel, optional), ReLU, the pool (``max``; ``avg`` the mean), flattened HWC [B, outputs]."""
    z = _gather_patches(np.asarray(h, dtype=np.float64), layer, from_batch) @ np.asarray(w, dtype=np.float64).T
    if bias is not None:
        z = z + np.asarray(bias, dtype=np.float64).reshape(1, 1, -1)
    z = np.maximum(z, 0.0) if layer.relu else z
    if layer.pool != "none":
        win = _windows(z.reshape(z.shape[0], layer.conv_height, layer.conv_width, layer.out_channels))
        z = win.max(axis=(2, 4)) if layer.pool == "max" else win.mean(axis=(2, 4))
    return z.reshape(z.shape[0], -1)


def im2col(h, layer: Conv2D, cols: int, from_batch: bool = False) -> np.ndarray:
    """The patches [B, pixels, row_length(cols)] of ``h`` [B, inputs] (int64): module docstring's order, the pad
    lanes 0; ``h`` HWC, or channel-major ``from_batch``. This is the order the address generator reads the
    activation buffer in (no copy on chip)."""
    patches = _gather_patches(np.asarray(h, dtype=np.int64), layer, from_batch)
    pad = layer.row_length(cols) - layer.patch
    return np.pad(patches, ((0, 0), (0, 0), (0, pad))) if pad else patches


def batch_patches(x, layer: Conv2D, cols: int) -> np.ndarray:
    """What the host writes to the batch memory for a conv layer 0 (module docstring): the im2col'd batch
    [B, pixels * row_length(cols)] of the channel-major network input ``x`` -- pixel p's patch words at
    p * row_words .. p * row_words + row_words - 1 of each example."""
    patches = im2col(x, layer, cols, from_batch=True)
    return patches.reshape(patches.shape[0], -1)


def conv_acc(h, layer: Conv2D, w, bias, cols: int, from_batch: bool = False) -> np.ndarray:
    """The int32 accumulators [B, pixels, out_channels] (HWC) of ``layer`` on ``h`` with weights ``w``
    [out_channels, row_length] and ``bias`` [out_channels] (exact); ``from_batch``: as ``im2col``."""
    patches = im2col(h, layer, cols, from_batch)
    b = patches.shape[0]
    acc = exact_matmul(patches.reshape(b * layer.pixels, -1), w).reshape(b, layer.pixels, layer.out_channels)
    return acc + np.reshape(np.asarray(bias, dtype=np.int64), (1, 1, -1))


def pool2x2(q, kind: str) -> np.ndarray:
    """``max`` or ``avg`` (round_shift(sum, 2)) of the non-overlapping 2 x 2 windows of ``q`` [B, H, W, C] (H, W
    even; HWC); ``none``: ``q``."""
    if kind == "none":
        return q
    win = _windows(q)
    return win.max(axis=(2, 4)) if kind == "max" else round_shift(win.sum(axis=(2, 4)), 2)


def conv_output(acc, layer: Conv2D) -> np.ndarray:
    """The layer's int8 output [B, outputs] (HWC) from its accumulators: requantise, ReLU, pool, flatten."""
    lo = 0 if layer.relu else WEIGHT_MIN
    q = saturate(round_shift(acc, layer.shift), lo, WEIGHT_MAX)
    q = q.reshape(acc.shape[0], layer.conv_height, layer.conv_width, layer.out_channels)
    return pool2x2(q, layer.pool).reshape(acc.shape[0], layer.outputs)


def conv_forward(h, layer: Conv2D, w, bias, cols: int, from_batch: bool = False) -> np.ndarray:
    """``conv_output(conv_acc(...))``: the layer's int8 output [B, outputs] (module docstring)."""
    return conv_output(conv_acc(h, layer, w, bias, cols, from_batch), layer)


WALK_FIELDS = ("channel", "pixel", "word", "addr", "zero", "first", "last", "stream", "out_word", "out_lane")
WALK_FIELDS += ("pool_first", "pool_last")
"""The per-cycle fields of ``patch_word_addresses``."""


def walk_pixels(layer: Conv2D) -> np.ndarray:
    """The conv output pixels (oy * OW + ox) in the walk's order: row-major, or with a pool its windows row-major,
    each window's 4 pixels (dy, dx) row-major."""
    oh, ow = layer.conv_height, layer.conv_width
    if layer.pool == "none":
        return np.arange(oh * ow)
    py, px, dy, dx = np.meshgrid(np.arange(oh // 2), np.arange(ow // 2), (0, 1), (0, 1), indexing="ij")
    return ((2 * py + dy) * ow + 2 * px + dx).ravel()


def patch_word_addresses(layer: Conv2D, cols: int, from_batch: bool = False) -> dict[str, np.ndarray]:
    """The address walk of one batch tile of ``layer`` (module docstring), one entry per issue cycle
    (OH * OW * out_channels * row_words of them), in order: for each output ``channel`` o, for each output ``pixel``
    (oy * OW + ox) in ``walk_pixels`` order, for each row ``word`` w (the row buffer's address):

    * ``addr`` -- the word the array reads: the activation-buffer word (iy * W + ix) * (in_channels / C) + cb of
      patch word w = (ky * k + kx) * (in_channels / C) + cb at input pixel (iy, ix) = (oy * s - p + ky,
      ox * s - p + kx); with ``from_batch`` (layer 0) the batch-memory word pixel * row_words + w of the host's
      im2col'd example (``batch_patches``). 0 where ``zero``.
    * ``zero`` -- 1: a zero word (zero padding) instead of a read.
    * ``first`` / ``last`` -- the dot product's first / last word (the array's flags).
    * ``stream`` -- 1: the first pixel of the channel, whose weight words come from the weight memory and the
      perturbation (and are written through into the row buffer); 0: the row buffer's word ``word``.
    * ``out_word`` / ``out_lane`` -- where the result goes (meaningful with ``last``): element
      e = pixel' * out_channels + o of the HWC output, pixel' the pooled pixel, at lane e % C of word e // C.
    * ``pool_first`` / ``pool_last`` -- with ``last``: the dot product opens / closes its 2 x 2 pool window (the
      register restarts / the pooled value is written); both 1 without a pool (every result is written).

    Raises ValueError for a layer the walk cannot address: a later layer (not ``from_batch``) whose in_channels is
    not a multiple of ``cols``."""
    if not from_batch and layer.in_channels % cols:
        raise ValueError(
            f"conv {layer.shape_text()}: the walk reads one activation word of {cols} channels per pixel, so "
            f"in_channels must be a multiple of {cols}"
        )
    k, s, p = layer.kernel, layer.stride, layer.padding
    row_words = layer.row_length(cols) // cols
    pixels = walk_pixels(layer)
    o, order, w = np.meshgrid(
        np.arange(layer.out_channels), np.arange(layer.pixels), np.arange(row_words), indexing="ij"
    )
    pixel = pixels[order]
    oy, ox = pixel // layer.conv_width, pixel % layer.conv_width
    if from_batch:
        zero = np.zeros(w.shape, dtype=bool)
        addr = pixel * row_words + w
    else:
        blocks = layer.in_channels // cols
        kk, cb = w // blocks, w % blocks
        iy, ix = oy * s - p + kk // k, ox * s - p + kk % k
        zero = (iy < 0) | (iy >= layer.height) | (ix < 0) | (ix >= layer.width)
        addr = np.where(zero, 0, (iy * layer.width + ix) * blocks + cb)
    div = 2 if layer.pool != "none" else 1
    out_pixel = (oy // div) * (layer.conv_width // div) + ox // div
    element = out_pixel * layer.out_channels + o
    window = order % 4 if layer.pool != "none" else np.zeros_like(order)
    last_in_window = 3 if layer.pool != "none" else 0
    fields = {
        "channel": o,
        "pixel": pixel,
        "word": w,
        "addr": addr,
        "zero": zero,
        "first": w == 0,
        "last": w == row_words - 1,
        "stream": order == 0,
        "out_word": element // cols,
        "out_lane": element % cols,
        "pool_first": window == 0,
        "pool_last": window == last_in_window,
    }
    return {name: np.asarray(fields[name]).ravel().astype(np.int64) for name in WALK_FIELDS}
