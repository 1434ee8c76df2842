"""The R x C INT8 MAC array and the requantisation unit (twins of ``golden.engine.int8``).

``PEArray``: every cycle one word of C int8 weights is broadcast to R rows; row r multiplies it
lane by lane with its own C int8 activations (R * C int8 x int8 products), sums the C products with
an adder tree and accumulates the sum in an int32 register. A dot product of J words arrives as J
consecutive valid words, the first flagged ``first`` (the accumulator restarts) and the last
``last`` (the R results leave on ``sums`` with ``out_valid`` and the word's ``tag``). Pipeline:
input register (the perturbed weights and the activations: nothing but wiring between the weight memory's
read, the saturating perturbation add and the multipliers) -> products register -> adder-tree register ->
accumulator, so results leave ``PE_LATENCY`` cycles after
their last word entered (``ArrayShape.product_stages`` 2: a second products register, one cycle more); a new dot
product may start in the cycle after a ``last`` word (no bubble). On ECP5 (``hw.engine.dsp.is_ecp5(platform)``) the
input registers are each product's MULT18X18D input registers (``dsp_product``), the (last) products register stays
in fabric beside the adder tree, and with two products registers the first is the MULT18X18D's output register:
the same cycles. With two, the second register holds the sums of pairs of a row's products (the tree's first
level moves into that cycle; the integer sums are the same).

Requantisation, int32 -> int8 ``sat(round_shift(acc, shift), -127, 127)`` (round half up; ``golden.engine.int8``):
``requantize_registered`` with a run-time shift over three registers (the host's logit reads, the tail's errors),
``requantize_constant`` with a constant one in a cycle (the hidden layers).
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Const, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from pezo.golden.config import check_int
from pezo.golden.engine.int8 import ACC_BITS, SHIFT_RANGE, WEIGHT_MAX, WEIGHT_MIN
from pezo.golden.engine.zo_engine import EngineConfig
from pezo.hw.component import ConfigComponent, ConfigSignature
from pezo.hw.engine.dsp import dsp_product, is_ecp5
from pezo.hw.engine.ebr import EbrRead

PE_LATENCY = 4
"""Cycles from a word on the inputs to its accumulator: input register, products, adder tree, accumulate (with one
products register, ``ArrayShape.product_stages`` 1; each more adds a cycle: ``ArrayShape.latency``)."""

REPLICA_ATTR = "pezo_replica"
"""Attribute of registers that hold the same value on purpose (a copy per consumer, placed beside it): the
synthesis scripts mark their flip-flops ``keep`` so that Yosys's ``opt_merge`` does not fold them into one
(``boards.flow.synth.KEEP_REPLICAS``)."""


def index_bits(count: int) -> int:
    """Bits of an index into ``count`` items (at least 1): the engines' address and index ports."""
    return max(1, (count - 1).bit_length())


def int8_lanes(count: int) -> data.ArrayLayout:
    return data.ArrayLayout(signed(8), count)


def tree_sum(values):
    """Balanced adder tree (each level one bit wider)."""
    values = list(values)
    while len(values) > 1:
        pairs = [values[i] + values[i + 1] for i in range(0, len(values) - 1, 2)]
        values = pairs + ([values[-1]] if len(values) % 2 else [])
    return values[0]


def scaled(value, factor: int):
    """``value * factor`` for a constant ``factor`` >= 0 as shifted adds (one term per set bit, a balanced
    tree): exact, and no multiplier (Yosys maps a constant product to a DSP block on ECP5, whose delay an
    address computation then carries)."""
    value = Value.cast(value)
    terms = [value << i for i in range(factor.bit_length()) if factor >> i & 1]
    return tree_sum(terms) if terms else Const(0, 1)


def select(index, values):
    """``values[index]`` as one expression (a mux chain; no process, so 4-state simulators evaluate it
    from time 0); the last value for indices past the end."""
    out = values[-1]
    for i in reversed(range(len(values) - 1)):
        out = Mux(index == i, values[i], out)
    return out


def delayed(m: Module, value, stages: int, name: str):
    """``value`` through ``stages`` registers (named ``name_1`` .. ``name_stages``)."""
    for i in range(stages):
        reg = Signal.like(value, name=f"{name}_{i + 1}")
        m.d.sync += reg.eq(value)
        value = reg
    return value


class Countdown:
    """A down-counter whose ``== 0`` is a register of its own (``zero``), so a state machine's decisions on it
    start at a flip-flop, not at a compare of the count. ``load(v)`` / ``tick()`` (count - 1, wrapping below 0)
    return the ``sync`` statements; ``zero`` is ``count == 0`` in every cycle (reset: count 0, zero 1)."""

    def __init__(self, limit: int, name: str):
        self.count = Signal(range(limit + 1), name=name)
        self.zero = Signal(name=f"{name}_zero", init=1)

    def load(self, value: int) -> list:
        return [self.count.eq(value), self.zero.eq(value == 0)]

    def tick(self) -> list:
        return [self.count.eq(self.count - 1), self.zero.eq(self.count == 1)]


def saturate(value, lo: int, hi: int):
    """Clamp a signed value to [lo, hi] (comparators and a mux)."""
    return Mux(value < lo, lo, Mux(value > hi, hi, value))


def clamp_int8(total):
    """``sat(total, -127, 127)`` of a signed ``total`` of 9 bits or more, decided by its top bits (above: total >= 128;
    below: total <= -128, i.e. negative and not in [-127, -1]), not by compare chains."""
    total = Value.cast(total)
    top = len(total) - 1
    above = ~total[top] & (total[7:top] != 0)
    below = total[top] & ~((total[7:top] == (1 << top - 7) - 1) & (total[:7] != 0))
    return Mux(above, WEIGHT_MAX, Mux(below, WEIGHT_MIN, total[:8].as_signed()))


def requantize_constant(acc, shift: int, relu: bool = False):
    """The requantisation of a signed ``acc`` by a constant ``shift`` (0..31), then the ReLU if ``relu``: int8
    ``sat(round_shift(acc, shift), lo, 127)``, lo = 0 with the ReLU, else -127. The clamps are compares of ``acc``
    with constants beside the rounding add, not behind it, and the add spans only the ``shift + 8`` low bits the
    result needs: one carry chain, then the muxes."""
    lo = 0 if relu else WEIGHT_MIN
    half = (1 << shift) >> 1
    if shift + 8 <= len(acc):  # the result's bits when it is not clamped
        value = (acc[: shift + 8] + half)[shift : shift + 8].as_signed()
    else:
        value = ((acc.as_signed() + half) >> shift)[:8].as_signed()
    above = acc >= ((WEIGHT_MAX + 1) << shift) - half  # round_shift(acc, shift) > 127
    below = acc < (lo << shift) - half  # round_shift(acc, shift) < lo
    return Mux(above, WEIGHT_MAX, Mux(below, lo, value))


REQUANT_STAGES = 3
"""Registers of ``requantize_registered``: the rounding add, the shift, the saturation."""


def requantize_registered(m: Module, acc, shift, name: str = "requant"):
    """int8 ``sat(round_shift(acc, shift), -127, 127)`` of a signed ``acc`` and an unsigned ``shift`` (0..31, valid
    in the same cycle; ``(acc + (2^shift >> 1)) >> shift`` in ``len(acc) + 1`` bits, round half up) over
    ``REQUANT_STAGES`` registers: the int8 result is valid three cycles later. One carry chain or one barrel shifter per
    cycle: ``acc + (2^shift >> 1)`` (the half decoded from ``shift`` in front of the adder), then ``>> shift``
    (the shift delayed with it), then the saturation's compare."""
    wide = len(acc) + 1
    rounded, shift1 = Signal(signed(wide), name=f"{name}_rounded"), Signal.like(shift, name=f"{name}_shift_1")
    half = Signal(unsigned(32), name=f"{name}_half")
    m.d.comb += half.eq((1 << shift) >> 1)
    m.d.sync += [rounded.eq(acc + half), shift1.eq(shift)]
    shifted = Signal(signed(wide), name=f"{name}_wide")
    m.d.sync += shifted.eq(rounded >> shift1)
    out = Signal(signed(8), name=name)
    m.d.sync += out.eq(clamp_int8(shifted))
    return out


LOGIT_READ_LATENCY = 4 + REQUANT_STAGES
"""Host logit reads (``logit_read``): ``logit`` and ``logit_q`` seven cycles after the address (the address
register, the memory, the row register, the lane select, the rounding add, the shift, the saturation: the
address's arithmetic, the block RAM's clock-to-out, the lane mux and the requantisation's three steps each
have a cycle of their own)."""


def logit_read(m, port, addr, row, shift, logit, logit_q):
    """The host's logit read through the synchronous memory read ``port``: ``addr`` (the memory row), ``row``
    (the example's lane of the row) and ``shift`` are sampled into registers; the row is read into a register (an
    ``hw.engine.ebr`` port's: the blocks' output register),
    its lane selected into a register, then requantised over ``REQUANT_STAGES``
    registers; ``logit`` is delayed to match. ``logit`` and ``logit_q`` are valid ``LOGIT_READ_LATENCY``
    cycles after the address."""
    addr0, row0, shift0 = Signal.like(port.addr, name="logit_addr"), Signal(range(len(port.data))), Signal.like(shift)
    row1, row2 = Signal.like(row0), Signal.like(row0)
    shift1, shift2, shift3 = Signal.like(shift), Signal.like(shift), Signal.like(shift)
    m.d.sync += [addr0.eq(addr), row0.eq(row), shift0.eq(shift)]
    m.d.sync += [row1.eq(row0), row2.eq(row1), shift1.eq(shift0), shift2.eq(shift1), shift3.eq(shift2)]
    m.d.comb += port.addr.eq(addr0)
    chosen = Signal(signed(ACC_BITS))
    if isinstance(port, EbrRead):  # the row register is the blocks' output register
        row_data = port.data
    else:
        row_data = Signal.like(port.data, name="logit_row")
        m.d.sync += row_data.eq(port.data)
    m.d.sync += chosen.eq(row_data[row2])
    m.d.comb += logit_q.eq(requantize_registered(m, chosen, shift3, "logit_requant"))
    m.d.comb += logit.eq(delayed(m, chosen, REQUANT_STAGES, "logit"))


PERTURBATION_NEAR_BITS = 9
"""Bits of ``p`` clamped for the forward's add (``near_perturbation``): [-256, 255]."""


def near_perturbation(p):
    """``p`` clamped to [-256, 255] (``PERTURBATION_NEAR_BITS`` signed): for a weight ``w`` in [-128, 127],
    ``sat(w + p, -127, 127)`` is the same with the clamped ``p`` (w + 255 >= 127, w - 256 <= -129)."""
    half = 1 << PERTURBATION_NEAR_BITS - 1
    return saturate(p, -half, half - 1)[:PERTURBATION_NEAR_BITS]


PERTURBED_SUM_BITS = PERTURBATION_NEAR_BITS + 1
"""Bits of ``w + near_perturbation(p)`` (signed): [-384, 382]."""


def perturbed_sum(w, p_near):
    """``w + p_near`` of an int8 ``w`` and a ``near_perturbation``: one ``PERTURBED_SUM_BITS``-bit carry chain."""
    return (w.as_signed() + p_near.as_signed())[:PERTURBED_SUM_BITS].as_signed()


def weight_write(m, port, engine, valid, addr, word):
    """The weight memory's write port: the update's ``word`` to ``addr`` while ``valid``, else the host's
    ``engine.w_*`` write while ``engine`` is idle (``w_we``)."""
    host_write = engine.w_we & ~engine.busy
    m.d.comb += [
        port.addr.eq(Mux(valid, addr, engine.w_addr)),
        port.data.eq(Mux(valid, word, engine.w_wdata)),
        port.en.eq(valid | host_write),
    ]


@dataclass(frozen=True)
class ArrayShape:
    """What the PE array is generated from: ``rows`` R, ``cols`` C, the width of the ``tag`` that rides
    along with each dot product, and whether a ``bias`` input starts the accumulators."""

    rows: int
    cols: int
    tag_bits: int
    bias: bool = False
    product_stages: int = 1
    """Registers behind each product (1 or 2; 2 on ECP5: the MULT18X18D's output register, then the fabric's)."""

    @property
    def latency(self) -> int:
        """Cycles from a word on the inputs to its accumulator."""
        return PE_LATENCY + self.product_stages - 1

    def __post_init__(self):
        check_int("rows", self.rows, 1, 64)
        check_int("cols", self.cols, 1, 64)
        check_int("tag_bits", self.tag_bits, 1, 64)
        check_int("product_stages", self.product_stages, 1, 2)


class PEArray(ConfigComponent):
    """Ports: ``valid``, ``first``, ``last``, ``tag``, ``weights`` (C x int8), ``acts`` (R x C x int8) and,
    with ``bias``, ``bias`` (int32, taken with a ``first`` word: the accumulators start from it instead
    of 0) in; ``out_valid``, ``out_tag``, ``sums`` (R x int32) out. Contract in the module docstring."""

    class Signature(ConfigSignature):
        config_type = ArrayShape

        def members_for(self, config):
            tag = unsigned(config.tag_bits)
            members = {
                "valid": In(1),
                "first": In(1),
                "last": In(1),
                "tag": In(tag),
                "weights": In(int8_lanes(config.cols)),
                "acts": In(data.ArrayLayout(int8_lanes(config.cols), config.rows)),
                "out_valid": Out(1),
                "out_tag": Out(tag),
                "sums": Out(data.ArrayLayout(signed(ACC_BITS), config.rows)),
            }
            if config.bias:
                members["bias"] = In(signed(ACC_BITS))
            return members

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        ecp5 = is_ecp5(platform)
        # stage 0: the inputs in registers (on ECP5 the DSP blocks' input registers, made with the products)
        if not ecp5:
            # one copy of the weight word per row, each beside its row's multipliers (``REPLICA_ATTR``: the
            # synthesis scripts keep the copies apart instead of merging them into one register of fan-out R)
            weights = [
                Signal(int8_lanes(cfg.cols), name=f"weights_q_{r}", attrs={REPLICA_ATTR: 1, "keep": "true"})
                for r in range(cfg.rows)
            ]
            acts = Signal.like(self.acts, name="acts_q")
            m.d.sync += [w.eq(self.weights) for w in weights]
            m.d.sync += acts.eq(self.acts)
        v0, f0, l0, t0 = Signal(), Signal(), Signal(), Signal.like(self.tag)
        m.d.sync += [
            v0.eq(self.valid),
            f0.eq(self.first),
            l0.eq(self.last),
            t0.eq(self.tag),
        ]
        start = 0  # what a ``first`` word's accumulator starts from
        if cfg.bias:  # the bias rides along with its word
            start = delayed(m, self.bias, 3 + cfg.product_stages - 1, "bias")
        # stage 1 (.. product_stages): R x C products (int16); with two products stages the fabric's register holds
        # the sums of pairs of products (the tree's first level, in the cycle that also routes out of the DSPs)
        extra = cfg.product_stages - 1
        raw = [[None] * cfg.cols for _ in range(cfg.rows)]
        for r in range(cfg.rows):
            for c in range(cfg.cols):
                if ecp5:  # the stage 0 registers are the MULT18X18D's input registers (a second products register:
                    # its output register), the last products register stays in fabric, beside the adder tree
                    name = f"mult_{r}_{c}"
                    raw[r][c] = dsp_product(m, self.weights[c], self.acts[r][c], 16, name, output_register=extra > 0)
                else:
                    raw[r][c] = delayed(m, weights[r][c] * acts[r][c], extra, f"prod_{r}_{c}_dsp")
        terms = []  # per row: the registered products, or the registered pairs of them
        for r in range(cfg.rows):
            groups = [raw[r][c : c + 1 + extra] for c in range(0, cfg.cols, 1 + extra)]
            row = []
            for k, group in enumerate(groups):
                name = f"prod_{r}_{k}" if extra == 0 else f"prod_pair_{r}_{k}"
                term = Signal(signed(16 + len(group) - 1), name=name)
                m.d.sync += term.eq(tree_sum(group))
                row.append(term)
            terms.append(row)
        v1, f1, l1, t1 = (delayed(m, s, 1 + extra, n) for s, n in ((v0, "v1"), (f0, "f1"), (l0, "l1"), (t0, "t1")))
        # stage 2: one adder tree per row
        width = 16 + max(1, (cfg.cols - 1).bit_length())
        row_sums = [Signal(signed(width), name=f"row_sum_{r}") for r in range(cfg.rows)]
        for r in range(cfg.rows):
            m.d.sync += row_sums[r].eq(tree_sum(terms[r]))
        v2, f2, l2, t2 = Signal(), Signal(), Signal(), Signal.like(self.tag)
        m.d.sync += [v2.eq(v1), f2.eq(f1), l2.eq(l1), t2.eq(t1)]
        # stage 3: accumulate (restart on ``first``)
        for r in range(cfg.rows):
            acc = self.sums[r]
            with m.If(v2):
                m.d.sync += acc.eq(Mux(f2, start, acc) + row_sums[r])
        m.d.sync += [self.out_valid.eq(v2 & l2), self.out_tag.eq(t2)]
        return m


def tag_bits(config: EngineConfig) -> int:
    """Bits of a logit-memory address: (pass * tiles + tile) * outputs + output, 2 passes."""
    return max(1, (2 * config.array.tiles * config.outputs - 1).bit_length())


SHIFT_BITS = SHIFT_RANGE[1].bit_length()
