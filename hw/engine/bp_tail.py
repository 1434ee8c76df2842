"""The network engine's backprop tail (twin of ``golden.engine.backprop``): ElasticZO-INT8's integer backward
for layers C+1..L on the same R x C array, generated when ``NetConfig.backprop`` (R must equal C).

After the step's ZO update (or, at C = 0, after the one plain pass) the controller walks the tail layers
from the last down to C+1 (1-based; ``l`` below is 0-based, l = L-1 .. C), four passes each:

* **gradient, first pass** (``KIND_GRAD_MAX``) -- per weight word (o, j) of layer l, one issue per tile t:
  the array's weights port gets e_l[tR + c, o] (lane c = example c of the tile), its activations port the
  *transposed* input block a[tR + c, jC + r] (row r = input jC + r; a wiring transpose of the block the
  forward pass left in the activation buffer, or of the batch for l = 0). Row r's sum over the T tiles is
  G_l[o, jC + r]: one weight word of gradients. Only their bit width is kept: the OR of every |G|
  (bitwidth(max|G|) = bitwidth(OR|G|)), so no gradient buffer exists.
* **error pass** (``KIND_ERROR``, l > C) -- per strip of C inputs (j): the O_l weight words (o, j) are read
  into the block cache (ceil(O_l / C) blocks of C x C int8: the transposed read), then per tile t, input
  k = jC + r' and output block b: weights port W[bC + c, k] (column r' of block b), activations port
  e_l[tR + r, bC + c]; the sum over the blocks is E[tR + r, k] = (e_l W_l)[., k]. It is zeroed where layer
  l-1's ReLU was off (a <= 0 in the activation buffer), written to the int32 E buffer, and ORed into the
  error's bit width. It reads W_l before the update below writes it.
* **gradient, second pass** (``KIND_GRAD_UPDATE``) -- the same issues; each word's G leaves the array into
  the rounding pipeline: NITI's pseudo-stochastic rounding to ``bp_bits`` (shift = max(bitwidth - bp_bits,
  0); ``golden.engine.int8.pseudo_stochastic_round``: shift 0 passes G unchanged), then
  ``sat(w - step, -127, 127)`` into the weight memory (the old word read as the result arrives).
* **requantisation** (l > C) -- per tile and input k the E buffer's R values, ``requantize`` by
  max(bitwidth(E) - 7, 0) (round half up, saturate to +-127; shift 0 is NITI's "fits 7 bits, unchanged"),
  into lane k % C of the int8 error buffer: e_{l-1} for the next layer's passes.

The logits' error e_L (``golden.engine.loss.hinge_error``) is never stored: the loss unit keeps, per example
of the last pass, its label, its strongest rival (the running maximum's index, first on ties) and whether its
hinge term is positive (``state`` memory, one word per tile); e_L[b, o] = active * ((o == rival) - (o == label))
is formed as the array reads it. The activations used are the last pass's (the -epsilon pass, or the plain
pass at C = 0), kept per tile and layer in the activation buffer; the batch bank is released after the tail.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data
from amaranth.lib.memory import Memory

from pezo.golden.engine.int8 import ACC_BITS, WEIGHT_MAX, WEIGHT_MIN
from pezo.golden.engine.network import BP_DRAINS, NetConfig
from pezo.hw.engine.pe_array import index_bits, int8_lanes, requantize, saturate

KIND_FORWARD, KIND_GRAD_MAX, KIND_GRAD_UPDATE, KIND_ERROR = 0, 1, 2, 3
BP_BITS_WIDTH = 3
ROUND_STAGES = 4
"""Registers from a gradient word leaving the array to its write-back: the sums (the old word is read), |G|
and the sign, the quotient and remainder, the rounded step (then the saturating subtract, written)."""
assert BP_DRAINS["gradient"] >= ROUND_STAGES + 1


def select(index, values):
    """``values[index]`` as a mux chain (the last value past the end)."""
    out = values[-1]
    for i in reversed(range(len(values) - 1)):
        out = Mux(index == i, values[i], out)
    return out


def bit_width(m, value, name: str):
    """floor(log2(value)) + 1 of an unsigned value (0 for 0) as a combinational priority encoder."""
    out = Signal(range(len(value) + 1), name=name)
    chain = Const(0, out.shape())
    for i in range(len(value)):
        chain = Mux(value[i], i + 1, chain)
    m.d.comb += out.eq(chain)
    return out


def magnitude(value):
    """|value| of a signed value (one bit wider, unsigned)."""
    return Mux(value < 0, -value, value).as_unsigned()


def state_layout(outputs: int) -> data.StructLayout:
    """One example's hinge state of the last pass: label, strongest rival, hinge term positive."""
    bits = index_bits(outputs)
    return data.StructLayout({"label": unsigned(bits), "rival": unsigned(bits), "active": 1})


class TailLayers:
    """Per-layer constants of the tail as mux chains of the layer register ``l`` (0-based)."""

    def __init__(self, cfg: NetConfig, l):
        C = cfg.array.cols
        layers = cfg.layers
        offsets = [sum(x.weights for x in layers[:i]) // C for i in range(len(layers))]
        self.outputs = select(l, [x.outputs for x in layers])
        self.strips = select(l, [x.inputs // C for x in layers])
        self.blocks = select(l, [-(-x.outputs // C) for x in layers])
        self.inputs = select(l, [x.inputs for x in layers])
        self.offset = select(l, offsets)
        self.below_relu = select(l, [False] + [x.relu for x in layers[:-1]])
        self.last = l == len(layers) - 1
        self.first = l == 0


def hidden_slot(cfg: NetConfig, tile, layer):
    """First word of the activation buffer's slot for ``layer``'s output of ``tile`` (with the tail every
    tile and hidden layer has its own slot: the tail reads them after the pass)."""
    words = max(1, -(-cfg.hidden_width // cfg.array.cols))
    return (tile * (len(cfg.layers) - 1) + layer) * words


def hidden_depth(cfg: NetConfig) -> int:
    return cfg.array.tiles * (len(cfg.layers) - 1) * max(1, -(-cfg.hidden_width // cfg.array.cols))


def round_pipeline(m, sums, shift, old, valid, addr, name="psr"):
    """``ROUND_STAGES`` registers from the R gradient sums (valid with ``valid``) to the new weight word:
    w - psr(G, bits) with the shift given (``golden.engine.int8.pseudo_stochastic_round``), saturated.
    ``old``: the weight word, valid one cycle after ``valid``. Returns (valid, addr, word) of the write."""
    lanes = len(sums)
    s1 = [Signal(signed(ACC_BITS), name=f"{name}_g_{c}") for c in range(lanes)]
    v1, a1 = Signal(name=f"{name}_valid_1"), Signal.like(addr, name=f"{name}_addr_1")
    m.d.sync += [v1.eq(valid), a1.eq(addr), *[s1[c].eq(sums[c]) for c in range(lanes)]]
    # stage 2: magnitude and sign; the old word
    mag = [Signal(unsigned(ACC_BITS + 1), name=f"{name}_m_{c}") for c in range(lanes)]
    neg = [Signal(name=f"{name}_neg_{c}") for c in range(lanes)]
    old2 = Signal.like(old, name=f"{name}_old_2")
    v2, a2 = Signal(name=f"{name}_valid_2"), Signal.like(addr, name=f"{name}_addr_2")
    m.d.sync += [v2.eq(v1), a2.eq(a1), old2.eq(old)]
    for c in range(lanes):
        m.d.sync += [mag[c].eq(magnitude(s1[c])), neg[c].eq(s1[c] < 0)]
    # stage 3: quotient q = m >> shift, upper and lower part of the remainder
    half = Signal.like(shift, name=f"{name}_half")
    m.d.comb += half.eq(shift >> 1)
    q3 = [Signal(unsigned(ACC_BITS + 1), name=f"{name}_q_{c}") for c in range(lanes)]
    up3 = [Signal(name=f"{name}_up_{c}") for c in range(lanes)]
    neg3 = [Signal(name=f"{name}_neg3_{c}") for c in range(lanes)]
    old3 = Signal.like(old, name=f"{name}_old_3")
    v3, a3 = Signal(name=f"{name}_valid_3"), Signal.like(addr, name=f"{name}_addr_3")
    m.d.sync += [v3.eq(v2), a3.eq(a2), old3.eq(old2)]
    for c in range(lanes):
        rem = (mag[c] & ((Const(1, ACC_BITS + 2) << shift) - 1))[: ACC_BITS + 1]
        upper = rem >> half
        lower = (rem & ((Const(1, ACC_BITS + 2) << half) - 1)) << shift[0]
        m.d.sync += [q3[c].eq(mag[c] >> shift), up3[c].eq(upper > lower), neg3[c].eq(neg[c])]
    # stage 4: the rounded, saturated step
    step4 = [Signal(signed(8), name=f"{name}_step_{c}") for c in range(lanes)]
    old4 = Signal.like(old, name=f"{name}_old_4")
    v4, a4 = Signal(name=f"{name}_valid_4"), Signal.like(addr, name=f"{name}_addr_4")
    m.d.sync += [v4.eq(v3), a4.eq(a3), old4.eq(old3)]
    for c in range(lanes):
        rounded = Mux(q3[c] + up3[c] > WEIGHT_MAX, WEIGHT_MAX, q3[c] + up3[c])
        m.d.sync += step4[c].eq(Mux(neg3[c], -rounded.as_signed(), rounded.as_signed()))
    word = Signal(int8_lanes(lanes), name=f"{name}_word")
    for c in range(lanes):
        m.d.comb += word[c].eq(saturate(old4[c] - step4[c], WEIGHT_MIN, WEIGHT_MAX))
    return v4, a4, word


class TailMemories:
    """The tail's buffers: the int8 error buffer (e_l, the activation buffer's layout), the int32 E buffer
    (per tile and input: R sums), the block cache (C x C int8 per block of C outputs), the hinge state (per
    tile, R examples)."""

    def __init__(self, m, cfg: NetConfig):
        R, C, T = cfg.array.rows, cfg.array.cols, cfg.array.tiles
        words = max(1, -(-cfg.hidden_width // C))
        blocks = max([1] + [-(-x.outputs // C) for x in cfg.layers[1:]])
        m.submodules.error_mem = error_mem = Memory(shape=data.ArrayLayout(signed(8), R * C), depth=T * words, init=[])
        m.submodules.sum_mem = sum_mem = Memory(
            shape=data.ArrayLayout(signed(ACC_BITS), R), depth=T * max(1, cfg.hidden_width), init=[]
        )
        m.submodules.block_mem = block_mem = Memory(shape=data.ArrayLayout(int8_lanes(C), C), depth=blocks, init=[])
        m.submodules.state_mem = state_mem = Memory(
            shape=data.ArrayLayout(state_layout(cfg.outputs), R), depth=T, init=[]
        )
        self.words, self.blocks = words, blocks
        self.e_read, self.e_write = error_mem.read_port(), error_mem.write_port(granularity=1)
        self.s_read, self.s_write = sum_mem.read_port(), sum_mem.write_port()
        self.b_read, self.b_write = block_mem.read_port(), block_mem.write_port(granularity=1)
        self.st_read, self.st_write = state_mem.read_port(), state_mem.write_port()


def _hinge_error(state, o):
    """+1 at the rival, -1 at the label of an active example, else 0 (a signed expression)."""
    return Mux(state.active & (o == state.rival), 1, 0) - Mux(state.active & (o == state.label), 1, 0)


def error_column(m, cfg: NetConfig, state, o, name="error_column"):
    """e_L[tR + c, o] for the R examples of a tile (lane c; int8 signals) from the tile's hinge ``state``."""
    lanes = [Signal(signed(8), name=f"{name}_{c}") for c in range(cfg.array.rows)]
    m.d.comb += [lanes[c].eq(_hinge_error(state[c], o)) for c in range(cfg.array.rows)]
    return lanes


def error_block(m, cfg: NetConfig, state, block, name="error_block"):
    """e_L[tR + r, block * C + c] (row r, lane c; int8 signals) for one tile and block of C outputs."""
    C = cfg.array.cols
    rows = []
    for r in range(cfg.array.rows):
        row = [Signal(signed(8), name=f"{name}_{r}_{c}") for c in range(C)]
        m.d.comb += [row[c].eq(_hinge_error(state[r], block * C + c)) for c in range(C)]
        rows.append(row)
    return rows


def requantised_rows(m, sums, shift, name="error_requant"):
    """The R int32 values requantised to int8 by ``shift`` (round half up, saturated)."""
    return [requantize(m, sums[r], shift, f"{name}_{r}") for r in range(len(sums))]


def lane_of(word, lane, lanes: int):
    """int8 lane ``lane`` (a signal) of a packed ``lanes`` x int8 value."""
    value = Value.cast(word)
    return value.word_select(lane, 8).as_signed() if lanes > 1 else value[:8].as_signed()


def pack_rows(rows):
    """A list of R lists of C int8 signals as one packed R x C value (row-major)."""
    return Cat(*[Cat(*row) for row in rows])
