"""Convolution layers on the network engine (``hw.engine.net_engine``; golden: ``golden.engine.conv``): the
hooks the engine's controller, issue stage and hidden-buffer writes call when its ``NetConfig`` has conv layers.
A dense-only net builds none of this (its circuit is unchanged).

* **walk** (S0): per conv layer the address walk of ``hw.engine.conv_walk.walk_fields`` (per output channel, per
  pixel in pool-window order, per patch word), advanced by the engine's forward issues in that layer and held at 0
  while the engine is idle; ``ConvPath`` muxes the fields of the layer being issued. The controller's word counter
  (the weight memory's address and the perturbation stream) advances only on the **stream** words -- the first
  pixel of each output channel (and every word of an update pass) -- so each weight word is read and perturbed once
  per pass, in golden's global order, and the stream is neither consumed nor waited for on the other pixels.
* **reads** (S1): the patch word's address instead of the dense word index (the batch bank's im2col'd example
  words for a conv layer 0, the HWC hidden buffer for a later one); a padding word reads as zero (``zeroed``).
* **row buffer** (S2, ``row_buffer``): the first pixel's perturbed weight words (``w + p``, clamped after it) go on
  to the array and are
  written into a buffer of ``row_words`` words at the same time; every later pixel of the channel takes them from
  the buffer (read one cycle ahead, transparent to the write: a one-word row reads the word written in the same
  cycle). No fill cycles: a conv layer issues OH * OW * out_channels * row_words words per tile.
* **pool** (the hidden-buffer write, ``pool_write``): the requantised results of a pool window's 4 consecutive
  dot products fold in a register per row (max, or the sum for avg, ``round_shift(sum, 2)`` at the end) and the
  window's last result writes the pooled value to its lane of the HWC word; without a pool (and for a dense layer)
  every result writes itself.
"""

from __future__ import annotations

from amaranth.hdl import Const, Mux, Signal, Value, signed
from amaranth.lib import data
from amaranth.lib.memory import Memory

from pezo.golden.engine.network import NetConfig
from pezo.hw.engine.conv_walk import WalkShape, walk_fields
from pezo.hw.engine.pe_array import delayed, select

MUXED_FIELDS = ("stream", "final", "addr", "zero", "channel", "out_word", "out_lane", "pool_first", "pool_last")
"""The walk fields the engine reads for the conv layer being issued."""


def row_words(layer, cols: int) -> int:
    """Words of one weight row (one dot product): a dense layer's inputs / C, a conv layer's row_length / C."""
    return layer.row_length(cols) // cols if layer.kind == "conv" else layer.inputs // cols


class ConvPath:
    """The conv layers' walks on ``m`` (module docstring): ``active`` -- a conv layer's forward word is issued this
    cycle (the controller's RUN state, ``running``, which it drives, in a conv ``layer``, not an update pass);
    ``streaming`` -- the issued word is a weight-memory / stream word; and the ``MUXED_FIELDS`` of the walk of layer
    ``layer`` as attributes. ``issue``: the controller's issue strobe; ``idle``: holds every walk at its start."""

    def __init__(self, m, cfg: NetConfig, layer, issue, updating, idle):
        C, L = cfg.array.cols, len(cfg.layers)
        self.cfg = cfg
        convs = [i for i, lay in enumerate(cfg.layers) if lay.kind == "conv"]
        walks = {}
        for i in convs:
            shape = WalkShape(cfg.layers[i], C, from_batch=i == 0)
            advance = issue & (layer == i) & ~updating
            walks[i] = walk_fields(m, shape, advance=advance, clear=idle, prefix=f"conv{i}_walk")
        self.walks = walks
        self.running = Signal(name="conv_running")  # the controller's RUN state (driven by the controller)
        self.active = Signal(name="conv_active")
        is_conv = select(layer, [Const(int(i in walks), 1) for i in range(L)])
        m.d.comb += self.active.eq(self.running & ~updating & is_conv)
        for name in MUXED_FIELDS:
            values = [walks[i][name] if i in walks else Const(0, 1) for i in range(L)]
            sig = Signal(max(len(v) for v in values), name=f"conv_{name}")
            m.d.comb += sig.eq(select(layer, values))
            setattr(self, name, sig)
        self.streaming = Signal(name="conv_streaming")
        m.d.comb += self.streaming.eq(~self.active | self.stream)

    def zeroed(self, m, acts, stages: int = 2):
        """``acts`` (the activation word at S2) or 0 where the issued word was zero padding ``stages`` cycles
        earlier."""
        zero = delayed(m, self.active & self.zero, stages, "conv_zero")
        return Mux(zero, 0, acts)

    def row_buffer(self, m, j, weights, valid2):
        """The row buffer (module docstring) between the perturbation add and the array: ``j`` the issued word's
        row word (S0), ``weights`` the C perturbed weights (``w + p``, signed, before their clamp) at S2, ``valid2``
        a forward word at S2. Returns the C weights the array takes (their clamp follows)."""
        C = self.cfg.array.cols
        depth = max(row_words(self.cfg.layers[i], C) for i in self.walks)
        lanes = data.ArrayLayout(signed(len(Value.cast(weights[0]))), C)
        buffer = Memory(shape=lanes, depth=depth, init=[])
        m.submodules.conv_row_buffer = buffer
        write = buffer.write_port()
        read = buffer.read_port(transparent_for=(write,))
        j1 = delayed(m, j, 1, "conv_row_word")
        j2 = delayed(m, j1, 1, "conv_row_word_s2")
        through = delayed(m, self.active & self.stream, 2, "conv_write_through")
        reuse = delayed(m, self.active & ~self.stream, 2, "conv_reuse")
        m.d.comb += [read.addr.eq(j1), write.addr.eq(j2), write.en.eq(valid2 & through)]
        for c in range(C):
            m.d.comb += write.data[c].eq(weights[c])
        return [Mux(reuse, read.data[c], weights[c]) for c in range(C)]

    def pool_write(self, m, values, tag, valid):
        """The pooled int8 values per row and the write strobe of the hidden-buffer write (module docstring):
        ``values`` the R requantised results in the write cycle, ``tag`` their tag (``pool_first``,
        ``pool_last``, ``layer``), ``valid`` a hidden result."""
        cfg = self.cfg
        pools = [lay.pool if lay.kind == "conv" else "none" for lay in cfg.layers]
        is_avg = select(tag.layer, [Const(int(p == "avg"), 1) for p in pools])
        out = []
        for r, v in enumerate(values):
            best = Signal(signed(8), name=f"pool_max_{r}")
            pooled = Signal(signed(8), name=f"pool_value_{r}")
            m.d.comb += pooled.eq(Mux(tag.pool_first, v, Mux(v > best, v, best)))
            with m.If(valid):
                m.d.sync += best.eq(pooled)
            if "avg" in pools:
                acc = Signal(signed(10), name=f"pool_sum_{r}")
                total = Signal(signed(10), name=f"pool_total_{r}")
                m.d.comb += total.eq(Mux(tag.pool_first, v, acc + v))
                with m.If(valid):
                    m.d.sync += acc.eq(total)
                value = Signal(signed(8), name=f"pool_out_{r}")  # round_shift(sum, 2) is in the int8 range
                m.d.comb += value.eq(Mux(is_avg, (total + 2) >> 2, pooled))
                out.append(value)
            else:
                out.append(pooled)
        return out, valid & tag.pool_last
