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
* **requantisation** (l > C) -- per tile and input k the E buffer's R values, ``requantize_registered`` by
  max(bitwidth(E) - 7, 0) (round half up, saturate to +-127; shift 0 is NITI's "fits 7 bits, unchanged"),
  into lane k % C of the int8 error buffer: e_{l-1} for the next layer's passes.

The logits' error e_L (``golden.engine.loss.hinge_error``) is never stored: the loss unit keeps, per example
of the last pass, its label, its strongest rival (the running maximum's index, first on ties) and whether its
hinge term is positive (``state`` memory, one word per tile); e_L[b, o] = active * ((o == rival) - (o == label))
is formed as the array reads it. The activations used are the last pass's (the -epsilon pass, or the plain
pass at C = 0), kept per tile and layer in the activation buffer; the batch bank is released after the tail.

The tail's states in the engine's FSM and their strobes are ``hw.engine.bp_control``'s; the buffers and the
datapath (operands, results, the rounding pipeline) are here.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data
from amaranth.lib.memory import Memory

from pezo.golden.engine.int8 import ACC_BITS, WEIGHT_MAX, WEIGHT_MIN
from pezo.golden.engine.network import BP_DRAINS, NET_FORWARD_LATENCY, NetConfig
from pezo.golden.engine.zo_engine import ACTIVATION_READ_DELAY
from pezo.hw.engine.pe_array import (
    REQUANT_STAGES,
    delayed,
    index_bits,
    int8_lanes,
    requantize_registered,
    saturate,
    scaled,
    select,
    weight_write,
)

KIND_FORWARD, KIND_GRAD_MAX, KIND_GRAD_UPDATE, KIND_ERROR = 0, 1, 2, 3
BP_BITS_WIDTH = 3
ROUND_STAGES = 6
"""Registers from a gradient word leaving the array to its write-back, one carry chain or one barrel shifter
each: the sums (the old word is read), |G| and the sign, the quotient and the remainder, the remainder's upper
and lower parts (the quotient saturated to 127), their compare, the rounded signed step (then the saturating
subtract, written)."""
assert BP_DRAINS["gradient"] >= NET_FORWARD_LATENCY + ROUND_STAGES + 1
assert BP_DRAINS["requantise"] == 1 + 1 + REQUANT_STAGES + 1  # read, read register, requantise, write


def or_all(values):
    """The bitwise OR of unsigned values."""
    out = values[0]
    for v in values[1:]:
        out = out | v
    return out


def bit_width(m, value, name: str):
    """floor(log2(value)) + 1 of an unsigned value (0 for 0): a priority encoder into a register (valid one
    cycle after ``value``)."""
    out = Signal(range(len(value) + 1), name=name)
    chain = Const(0, out.shape())
    for i in range(len(value)):
        chain = Mux(value[i], i + 1, chain)
    m.d.sync += out.eq(chain)
    return out


def or_of_magnitudes(m, values, enable, accumulator, name: str):
    """``accumulator |= |v|`` over ``values`` in the cycle after ``enable`` (the magnitudes registered first:
    one carry chain per cycle, then the OR tree)."""
    mags = [Signal(unsigned(len(v) + 1), name=f"{name}_mag_{i}") for i, v in enumerate(values)]
    valid = Signal(name=f"{name}_valid")
    m.d.sync += [valid.eq(enable), *[mag.eq(magnitude(v)) for mag, v in zip(mags, values)]]
    with m.If(valid):
        m.d.sync += accumulator.eq(accumulator | or_all(mags))


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
        offsets = [offset // C for offset in cfg.layer_offsets()]  # a conv layer's rows padded
        self.outputs = select(l, [x.outputs for x in layers])
        self.strips = select(l, [x.inputs // C for x in layers])
        self.blocks = select(l, [-(-x.outputs // C) for x in layers])
        self.inputs = select(l, [x.inputs for x in layers])
        self.offset = select(l, offsets)
        self.below_relu = select(l, [False] + [x.relu for x in layers[:-1]])
        self.last = l == len(layers) - 1
        self.first = l == 0


def hidden_words(cfg: NetConfig) -> int:
    """Words of one hidden buffer slot (the widest hidden layer's outputs, C per word; at least 1)."""
    return max(1, -(-cfg.hidden_width // cfg.array.cols))


def hidden_slot(cfg: NetConfig, tile, layer):
    """First word of the activation buffer's slot for ``layer``'s output of ``tile`` (with the tail every
    tile and hidden layer has its own slot: the tail reads them after the pass)."""
    return scaled(scaled(tile, len(cfg.layers) - 1) + layer, hidden_words(cfg))


def hidden_depth(cfg: NetConfig) -> int:
    return cfg.array.tiles * (len(cfg.layers) - 1) * hidden_words(cfg)


def round_pipeline(m, sums, shift, old, valid, addr, name="psr"):
    """``ROUND_STAGES`` registers from the R gradient sums (valid with ``valid``) to the new weight word:
    w - psr(G, bits) with the shift given (``golden.engine.int8.pseudo_stochastic_round``), saturated.
    ``shift`` is constant over a pass (its masks are registers, valid a cycle after it); ``old``: the weight
    word, valid one cycle after ``valid``. Returns (valid, addr, word) of the write."""
    lanes, wide = len(sums), ACC_BITS + 1
    valid_at, addr_at = [valid], [addr]
    for stage in range(1, ROUND_STAGES + 1):
        v, a = Signal(name=f"{name}_valid_{stage}"), Signal.like(addr, name=f"{name}_addr_{stage}")
        m.d.sync += [v.eq(valid_at[-1]), a.eq(addr_at[-1])]
        valid_at.append(v)
        addr_at.append(a)
    olds = [old]  # the old word from stage 2 on
    for stage in range(2, ROUND_STAGES + 1):
        o = Signal.like(old, name=f"{name}_old_{stage}")
        m.d.sync += o.eq(olds[-1])
        olds.append(o)
    # the shift's masks: r = m & (2^shift - 1), h = shift >> 1, the lower part r & (2^h - 1)
    half = Signal.like(shift, name=f"{name}_half")
    mask, half_mask = Signal(unsigned(wide), name=f"{name}_mask"), Signal(unsigned(wide), name=f"{name}_half_mask")
    m.d.sync += [
        half.eq(shift >> 1),
        mask.eq(((Const(1, wide + 1) << shift) - 1)[:wide]),
        half_mask.eq(((Const(1, wide + 1) << (shift >> 1)) - 1)[:wide]),
    ]
    word = Signal(int8_lanes(lanes), name=f"{name}_word")
    for c in range(lanes):
        g1 = Signal(signed(ACC_BITS), name=f"{name}_g_{c}")  # stage 1: the sum
        mag2, neg2 = Signal(unsigned(wide), name=f"{name}_m_{c}"), Signal(name=f"{name}_neg_{c}")  # 2: |G|, sign
        q3, rem3 = Signal(unsigned(wide), name=f"{name}_q_{c}"), Signal(unsigned(wide), name=f"{name}_rem_{c}")
        q4 = Signal(unsigned(7), name=f"{name}_q_sat_{c}")  # 4: the quotient saturated, the remainder's parts
        upper4 = Signal(unsigned(wide), name=f"{name}_upper_{c}")
        lower4 = Signal(unsigned(wide + 1), name=f"{name}_lower_{c}")
        q5, up5 = Signal.like(q4, name=f"{name}_q_5_{c}"), Signal(name=f"{name}_up_{c}")  # 5: the compare
        step6 = Signal(signed(8), name=f"{name}_step_{c}")  # 6: the signed rounded step
        negs = [neg2]
        for stage in range(3, 6):
            n = Signal(name=f"{name}_neg_{stage}_{c}")
            m.d.sync += n.eq(negs[-1])
            negs.append(n)
        rounded = Mux(q5 + up5 > WEIGHT_MAX, WEIGHT_MAX, q5 + up5)
        m.d.sync += [
            g1.eq(sums[c]),
            mag2.eq(magnitude(g1)),
            neg2.eq(g1 < 0),
            q3.eq(mag2 >> shift),
            rem3.eq(mag2 & mask),
            q4.eq(Mux(q3 > WEIGHT_MAX, WEIGHT_MAX, q3)),
            upper4.eq(rem3 >> half),
            lower4.eq((rem3 & half_mask) << shift[0]),
            q5.eq(q4),
            up5.eq(upper4 > lower4),
            step6.eq(Mux(negs[-1], -rounded, rounded)),
        ]
        m.d.comb += word[c].eq(saturate(olds[-1][c] - step6, WEIGHT_MIN, WEIGHT_MAX))
    return valid_at[-1], addr_at[-1], word


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


def lane_of(word, lane, lanes: int):
    """int8 lane ``lane`` (a signal) of a packed ``lanes`` x int8 value."""
    value = Value.cast(word)
    return value.word_select(lane, 8).as_signed() if lanes > 1 else value[:8].as_signed()


def pack_rows(rows):
    """A list of R lists of C int8 signals as one packed R x C value (row-major)."""
    return Cat(*[Cat(*row) for row in rows])


# -- the tail's datapath inside the engine (called from ``hw.engine.net_engine``'s stages) ------------


def tail_operands(engine, m, cfg, pe, mem, bp, x_word, h_word):
    """The array's operands in a tail pass (``hw.engine.bp_tail``), read like the forward's activation words:
    addresses registered ``ACTIVATION_READ_DELAY`` times after the issue, the memories' data registered as read
    (S4: a block RAM's clock-to-out is followed by no logic in its cycle), then the lane selects into the array's
    input register. Gradient: weights e[tR + c, o], activations the transposed input block (``x_word``/``h_word``:
    the forward's registered activation words); error: weights column k % C of the cached block, activations
    e[tR + r, bC + c]. Returns (weights, acts, tail) at S4: the tail pass's weights and activations and "a tail
    pass"."""
    R, C, L = cfg.array.rows, cfg.array.cols, len(cfg.layers)
    tm = engine.tail_memories
    e_addr = Signal.like(tm.e_read.addr, name="tail_e_addr")
    m.d.comb += [
        e_addr.eq(scaled(bp.bt, tm.words) + Mux(bp.error, bp.boc, bp.bo_word)),
        tm.e_read.addr.eq(delayed(m, e_addr, ACTIVATION_READ_DELAY, "tail_e_addr")),
        tm.b_read.addr.eq(delayed(m, bp.boc, ACTIVATION_READ_DELAY, "tail_b_addr")),
        tm.st_read.addr.eq(delayed(m, bp.bt, ACTIVATION_READ_DELAY, "tail_st_addr")),
    ]
    at = ACTIVATION_READ_DELAY + 2  # the stage of the registered reads
    kind = delayed(m, Mux(bp.issue, bp.kind, KIND_FORWARD), at, "kind")
    sel = delayed(m, Mux(bp.error, bp.br, bp.bo_lane), at, "lane_select")
    o = delayed(m, bp.bo, at, "bp_o")
    oc = delayed(m, bp.boc, at, "bp_block")
    gen = delayed(m, bp.layers.last, at, "generated")
    first = delayed(m, bp.layers.first, at, "tail_layer0")
    errors = Signal.like(tm.e_read.data, name=f"tail_errors_{at}")
    state = Signal(tm.st_read.data.shape(), name=f"tail_state_{at}")
    blocks = Signal(tm.b_read.data.shape(), name=f"tail_blocks_{at}")
    m.d.sync += [errors.eq(tm.e_read.data), state.eq(tm.st_read.data), blocks.eq(tm.b_read.data)]
    row = lambda r: errors.as_value()[r * C * 8 : (r + 1) * C * 8]  # noqa: E731
    generated_column = error_column(m, cfg, state, o)
    column = [Mux(gen, generated_column[c], lane_of(row(c), sel, C)) for c in range(C)]
    cached = [lane_of(blocks[c], sel, C) for c in range(C)]
    generated_block = error_block(m, cfg, state, oc)
    transposed = [[Signal(signed(8), name=f"input_t_{r}_{c}") for c in range(C)] for r in range(R)]
    error_rows = [[Signal(signed(8), name=f"error_in_{r}_{c}") for c in range(C)] for r in range(R)]
    for r in range(R):
        for c in range(C):
            h = x_word[c][r] if L == 1 else Mux(first, x_word[c][r], h_word[c * C + r])
            m.d.comb += [
                transposed[r][c].eq(h),
                error_rows[r][c].eq(Mux(gen, generated_block[r][c], errors[r * C + c])),
            ]
    acts = Signal.like(pe.acts, name=f"tail_acts_{at}")
    m.d.comb += acts.eq(Mux(kind == KIND_ERROR, pack_rows(error_rows), pack_rows(transposed)))
    weights = [Mux(kind == KIND_ERROR, cached[c], column[c]) for c in range(C)]
    return weights, acts, kind != KIND_FORWARD


def tail_results(engine, m, cfg, pe, mem, ctl, out_tag):
    """What the tail's passes do with the array's sums (``hw.engine.bp_tail``): the first gradient pass
    ORs |G| into ``g_or``; the error pass masks E with layer l-1's ReLU (its activations read as the
    sums arrive), writes it to the E buffer and ORs |E| into ``e_or``; the second gradient pass rounds
    G into the weight words (the old word read as the sums arrive); the requantisation turns the E buffer
    into the int8 error buffer. Drives the weight memory's ports while busy."""
    R, C, L = cfg.array.rows, cfg.array.cols, len(cfg.layers)
    bp, tm = ctl.bp, engine.tail_memories
    kind, sums = out_tag.kind, pe.sums
    # first gradient pass: the bit width of max |G| is the bit width of the OR of every |G|
    or_of_magnitudes(m, [sums[r] for r in range(R)], pe.out_valid & (kind == KIND_GRAD_MAX), bp.g_or, "grad_or")
    # second gradient pass: the old weight word is read as the word's G leaves the array
    grad_out = pe.out_valid & (kind == KIND_GRAD_UPDATE)
    m.d.comb += mem.w_read.addr.eq(
        Mux(engine.busy, Mux(grad_out, out_tag.word, Mux(bp.loading, bp.laddr, ctl.word)), engine.w_addr)
    )
    bp_valid, bp_addr, bp_word = round_pipeline(
        m, [sums[r] for r in range(R)], bp.g_shift, mem.w_read.data, grad_out, out_tag.word
    )
    zo_valid, zo_addr, zo_word = engine.zo_write
    weight_write(
        m, mem.w_write, engine, zo_valid | bp_valid, Mux(zo_valid, zo_addr, bp_addr), Mux(zo_valid, zo_word, bp_word)
    )
    # the block cache: strip j's words, written the cycle after their read
    load1, lane1, word1 = Signal(), Signal.like(bp.bo_lane), Signal.like(bp.bo_word)
    m.d.sync += [load1.eq(bp.loading), lane1.eq(bp.bo_lane), word1.eq(bp.bo_word)]
    m.d.comb += [
        tm.b_write.addr.eq(word1),
        tm.b_write.data.eq(mem.w_read.data.as_value().replicate(C)),
        tm.b_write.en.eq(Mux(load1, 1 << lane1, 0)),
    ]
    # error pass: E masked by layer l-1's ReLU (its activations read as the sums arrive)
    # the error pass's results: the sums and the activation word of layer l - 1 (read as the sums leave the
    # array) in registers; then the ReLU mask and the E buffer write; then |E| ORed into e_or
    e1, sums1, tile1, k1, lane1e = (
        Signal(name="error_valid_1"),
        Signal.like(sums, name="error_sums_1"),
        Signal.like(out_tag.tile),
        Signal.like(out_tag.o),
        Signal.like(out_tag.o_lane),
    )
    m.d.sync += [
        e1.eq(pe.out_valid & (kind == KIND_ERROR)),
        sums1.eq(sums),
        tile1.eq(out_tag.tile),
        k1.eq(out_tag.o),
        lane1e.eq(out_tag.o_lane),
    ]  # fmt: skip
    # stage 2: the activation word registered as read (a block RAM's output meets no logic in its cycle);
    # stage 3: the ReLU mask, the E buffer write; then |E| (registered) into e_or
    e2, sums2 = Signal(name="error_valid_2"), Signal.like(sums, name="error_sums_2")
    tile2, k2, lane2e = Signal.like(tile1), Signal.like(k1), Signal.like(lane1e)
    m.d.sync += [e2.eq(e1), sums2.eq(sums1), tile2.eq(tile1), k2.eq(k1), lane2e.eq(lane1e)]
    e3, sums3 = Signal(name="error_valid_3"), Signal.like(sums, name="error_sums_3")
    tile3, k3 = Signal.like(tile1), Signal.like(k1)
    m.d.sync += [e3.eq(e2), sums3.eq(sums2), tile3.eq(tile2), k3.eq(k2)]
    if L > 1:
        with m.If(bp.error_phase):
            m.d.comb += mem.h_read.addr.eq(hidden_slot(cfg, out_tag.tile, (bp.l - 1)[: len(bp.l)]) + out_tag.o_word)
        h2 = Signal.like(mem.h_read.data, name="error_acts_2")
        m.d.sync += h2.eq(mem.h_read.data)
        h = h2.as_value()
        dead = [Signal(name=f"error_relu_dead_{r}") for r in range(R)]  # layer l - 1's ReLU output is 0
        m.d.sync += [
            dead[r].eq(bp.layers.below_relu & (lane_of(h[r * C * 8 : (r + 1) * C * 8], lane2e, C) <= 0))
            for r in range(R)
        ]
        masked = [Mux(dead[r], 0, sums3[r]) for r in range(R)]
    else:
        masked = [sums3[r] for r in range(R)]
    masked_sums = Signal(data.ArrayLayout(signed(ACC_BITS), R))
    m.d.comb += [masked_sums[r].eq(masked[r]) for r in range(R)]
    m.d.comb += [
        tm.s_write.addr.eq(tile3 * max(1, cfg.hidden_width) + k3),
        tm.s_write.data.eq(masked_sums),
        tm.s_write.en.eq(e3),
    ]
    or_of_magnitudes(m, [masked_sums[r] for r in range(R)], e3, bp.e_or, "error_or")
    # requantisation: E (tile, k) -> lane k % C of error word (tile, k // C), every row; the read registered,
    # then the rounding shift and the saturation one register each (REQUANT_STAGE_DELAY cycles read -> write)
    m.d.comb += tm.s_read.addr.eq(bp.bt * max(1, cfg.hidden_width) + bp.bk)
    stage = [(bp.requantising, bp.bt, bp.bk_word, bp.bk_lane)]
    for i in range(1 + 1 + REQUANT_STAGES):
        prev = stage[-1]
        regs = (Signal(name=f"rq_valid_{i}"), Signal.like(bp.bt), Signal.like(bp.bk_word), Signal.like(bp.bk_lane))
        m.d.sync += [r.eq(p) for r, p in zip(regs, prev)]
        stage.append(regs)
    read_q = Signal.like(tm.s_read.data, name="error_sums_q")
    m.d.sync += read_q.eq(tm.s_read.data)
    q_values = Signal(data.ArrayLayout(signed(8), R))
    m.d.comb += [
        q_values[r].eq(requantize_registered(m, read_q[r], bp.e_shift, f"error_requant_{r}")) for r in range(R)
    ]
    valid, tile, word, lane = stage[-1]
    lane_mask = Cat(*[(Const(1, C) << lane)[:C] for _ in range(R)])
    m.d.comb += [
        tm.e_write.addr.eq(scaled(tile, tm.words) + word),
        tm.e_write.data.eq(Cat(*[q_values[r].replicate(C) for r in range(R)])),
        tm.e_write.en.eq(Mux(valid, lane_mask, 0)),
    ]
