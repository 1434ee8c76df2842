"""The convolution address walk (twin of ``golden.engine.conv.patch_word_addresses``): for one conv layer, one
batch tile, one entry per issue cycle -- the activation-buffer word to read (or a zero word for the padding), the
row-buffer word and whether it comes from the weight stream, the dot product's first / last flags, and where its
result goes (output word and lane, the 2 x 2 pool window's first / last flags).

``ConvWalk`` is the standalone walk (its tests); the net engine builds the same counters per conv layer with
``walk_fields`` (``hw.engine.conv_path``: free-running, advanced by the engine's issue). The layer's geometry is
fixed when the circuit is generated (``WalkShape``); the walk is nested counters (output channel, pooled pixel,
pool window, kernel row, kernel column, channel block -- or, for a layer 0 reading the host's im2col'd batch, the
row word), and the addresses are the counters times constants (no divider but the output lane's e // C and
e % C, shifts when C is a power of two).

Handshake: ``start`` (while idle) begins a walk; while ``valid`` the outputs describe the current word and it
advances in each cycle with ``ready``; ``final`` marks the walk's last word (``valid`` drops after it is taken).
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass

from amaranth.hdl import Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib.wiring import In, Out

from pezo.golden.engine.conv import WALK_FIELDS, Conv2D, patch_word_addresses
from pezo.hw.component import ConfigComponent, ConfigSignature
from pezo.hw.engine.pe_array import index_bits, scaled


@dataclass(frozen=True)
class WalkShape:
    """What a ``ConvWalk`` is generated from: the conv ``layer``, the array's ``cols`` C and whether the layer is
    layer 0 reading the host's im2col'd batch (``from_batch``). A geometry the walk cannot address (a later layer
    with in_channels not a multiple of C) is one ValueError naming the layer."""

    layer: Conv2D
    cols: int
    from_batch: bool = False

    def __post_init__(self):
        if not isinstance(self.layer, Conv2D):
            raise ValueError(f"layer must be a Conv2D, got {type(self.layer).__name__}")
        if not self.from_batch and self.layer.in_channels % self.cols:
            patch_word_addresses(self.layer, self.cols, self.from_batch)  # raises the golden walk's ValueError

    @property
    def row_words(self) -> int:
        return self.layer.row_length(self.cols) // self.cols

    @property
    def blocks(self) -> int:
        """Channel blocks of C per input pixel (1 from the batch: its words are the row's)."""
        return 1 if self.from_batch else self.layer.in_channels // self.cols

    @property
    def pool(self) -> int:
        """The pool window's side: 2 with a pool, else 1."""
        return 2 if self.layer.pool != "none" else 1

    @property
    def input_words(self) -> int:
        """Words of one example the walk addresses: the im2col'd batch's, or the HWC input map's."""
        if self.from_batch:
            return self.layer.pixels * self.row_words
        return self.layer.height * self.layer.width * self.blocks

    @property
    def output_words(self) -> int:
        return -(-self.layer.outputs // self.cols)


def _counter(count: int, name: str) -> Signal:
    return Signal(unsigned(index_bits(count)), name=name)


class ConvWalk(ConfigComponent):
    """Ports: ``start``, ``ready`` in; ``valid``, ``final``, ``channel``, ``pixel``, ``word``, ``addr``, ``zero``,
    ``first``, ``last``, ``stream``, ``out_word``, ``out_lane``, ``pool_first``, ``pool_last`` out (the fields of
    ``patch_word_addresses``, module docstring)."""

    class Signature(ConfigSignature):
        config_type = WalkShape

        def members_for(self, config):
            layer = config.layer
            return {
                "start": In(1),
                "ready": In(1),
                "valid": Out(1),
                "final": Out(1),
                "channel": Out(unsigned(index_bits(layer.out_channels))),
                "pixel": Out(unsigned(index_bits(layer.pixels))),
                "word": Out(unsigned(index_bits(config.row_words))),
                "addr": Out(unsigned(index_bits(config.input_words))),
                "zero": Out(1),
                "first": Out(1),
                "last": Out(1),
                "stream": Out(1),
                "out_word": Out(unsigned(index_bits(config.output_words))),
                "out_lane": Out(unsigned(index_bits(config.cols))),
                "pool_first": Out(1),
                "pool_last": Out(1),
            }

    def elaborate(self, platform):
        m = Module()
        busy = Signal(name="walk_busy")
        walk = walk_fields(m, self.config, advance=busy & self.ready, clear=~busy & self.start)
        final = Signal(name="walk_final")
        m.d.comb += final.eq(busy & walk["final"])
        m.d.comb += [self.valid.eq(busy), self.final.eq(final)]
        with m.If(~busy):
            with m.If(self.start):
                m.d.sync += busy.eq(1)
        with m.Elif(self.ready & final):
            m.d.sync += busy.eq(0)
        m.d.comb += [getattr(self, name).eq(walk[name]) for name in WALK_FIELDS]
        return m


def walk_fields(m: Module, cfg: WalkShape, advance, clear, prefix: str = "walk") -> dict:
    """The walk's nested counters on ``m`` (names ``prefix``_*) and its fields as expressions of them: a dict of
    ``patch_word_addresses``'s fields plus ``final`` (the walk's last word). The counters step to the next word in
    each cycle with ``advance`` and wrap to 0 after the last (so a completed walk is ready for the next), and go to
    0 with ``clear``."""
    layer, d = cfg.layer, cfg.pool
    k, s, p = layer.kernel, layer.stride, layer.padding
    # the nested counters, outermost first, with their counts
    counts = {
        "o": layer.out_channels,
        "wy": layer.conv_height // d,
        "wx": layer.conv_width // d,
        "dy": d,
        "dx": d,
    }
    counts.update({"w": cfg.row_words} if cfg.from_batch else {"ky": k, "kx": k, "cb": cfg.blocks})
    ctr = {name: _counter(n, f"{prefix}_{name}") for name, n in counts.items()}
    at_end = {name: ctr[name] == n - 1 for name, n in counts.items()}
    out = {"final": _all(at_end.values())}
    with m.If(clear):
        m.d.sync += [c.eq(0) for c in ctr.values()]
    with m.Elif(advance):
        names = list(counts)
        for i, name in enumerate(names):  # an odometer: a counter wraps when every inner one is at its end
            inner = [at_end[n] for n in names[i + 1 :]]
            with m.If(_all(inner)):
                m.d.sync += ctr[name].eq(Mux(at_end[name], 0, ctr[name] + 1))
    # the conv output pixel and the row word
    oy = Signal(unsigned(index_bits(layer.conv_height)), name=f"{prefix}_oy")
    ox = Signal(unsigned(index_bits(layer.conv_width)), name=f"{prefix}_ox")
    pixel = Signal(unsigned(index_bits(layer.pixels)), name=f"{prefix}_pixel")
    word = Signal(unsigned(index_bits(cfg.row_words)), name=f"{prefix}_word")
    m.d.comb += [oy.eq(scaled(ctr["wy"], d) + ctr["dy"]), ox.eq(scaled(ctr["wx"], d) + ctr["dx"])]
    m.d.comb += pixel.eq(scaled(oy, layer.conv_width) + ox)
    if cfg.from_batch:
        m.d.comb += word.eq(ctr["w"])
        out.update({"addr": scaled(pixel, cfg.row_words) + ctr["w"], "zero": Const(0, 1)})
    else:
        coord = signed((max(layer.conv_height, layer.conv_width) * s + k).bit_length() + 1)
        iy, ix = Signal(coord, name=f"{prefix}_iy"), Signal(coord, name=f"{prefix}_ix")
        oy_s, ox_s = Signal(coord, name=f"{prefix}_oy_s"), Signal(coord, name=f"{prefix}_ox_s")
        m.d.comb += [oy_s.eq(oy), ox_s.eq(ox)]
        m.d.comb += [iy.eq(scaled(oy_s, s) - p + ctr["ky"]), ix.eq(scaled(ox_s, s) - p + ctr["kx"])]
        outside = Signal(name=f"{prefix}_outside")
        m.d.comb += outside.eq((iy < 0) | (iy >= layer.height) | (ix < 0) | (ix >= layer.width))
        m.d.comb += word.eq(scaled(scaled(ctr["ky"], k) + ctr["kx"], cfg.blocks) + ctr["cb"])
        out.update(
            {"addr": Mux(outside, 0, scaled(scaled(iy, layer.width) + ix, cfg.blocks) + ctr["cb"]), "zero": outside}
        )
    element = Signal(unsigned(index_bits(layer.outputs)), name=f"{prefix}_element")
    m.d.comb += element.eq(scaled(scaled(ctr["wy"], layer.conv_width // d) + ctr["wx"], layer.out_channels) + ctr["o"])
    window_start = (ctr["wy"] == 0) & (ctr["wx"] == 0) & (ctr["dy"] == 0) & (ctr["dx"] == 0)
    out.update(
        {
            "channel": ctr["o"],
            "pixel": pixel,
            "word": word,
            "first": word == 0,
            "last": word == cfg.row_words - 1,
            "stream": window_start,
            "out_word": element // cfg.cols,
            "out_lane": element % cfg.cols,
            "pool_first": (ctr["dy"] == 0) & (ctr["dx"] == 0),
            "pool_last": at_end["dy"] & at_end["dx"],
        }
    )
    return out


def _all(conditions):
    """The AND of ``conditions`` (1 for none)."""
    return functools.reduce(operator.and_, conditions, Const(1, 1))
