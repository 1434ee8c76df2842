"""ECP5 only: a one-read, one-write memory of DP16KD blocks whose read data leaves through the blocks' output
register (``REGMODE_B`` = ``OUTREG``), for the reads whose consumer registered the read data anyway.

Why: Yosys maps an inferred memory to DP16KD without its output register (``share/lattice/brams_16kd.txt`` has
no option for it), so the read data leaves the block 5.8 ns after the clock (nextpnr's ECP5 -6 figure) and a
fabric register beside the consumer is the earliest it can land: with 8.3 ns at 120 MHz, 2.5 ns for the
route. With the output register the block's clock-to-out is the register's, and the route is a whole cycle.

``ebr_memory`` contract: ``depth`` words of ``width`` bits in ``lanes`` equal lanes (``lib.memory``'s write
granularity ``width / lanes``), its ports named as ``lib.memory``'s. The blocks run in one of the DP16KD's
modes (``EBR_MODES``: 18 bits x 1 024 words, 9 x 2 048, 4 x 4 096, 2 x 8 192, 1 x 16 384; ``DATA_WIDTH`` the
same on both ports): the one with the fewest blocks, then the fewest banks (``ebr_geometry``; rt-mlp's 3 088
weight words of 64 bits: 16 blocks 4 bits wide in one bank rather than 16 blocks 18 wide in four, so no bank
select follows the output registers). Each lane has ``ceil(width / lanes / bits)`` blocks of its own per bank of
``words`` words, ``ceil(depth / words)`` banks. Port A writes (``write.en``, one bit per lane, with
``write.addr`` / ``write.data``; in the 18-bit mode both byte enables on), port B reads every cycle:
``read.data`` is the word at ``read.addr`` two cycles earlier (the block's read latch, then its output register;
with banks, the bank of that address, selected after the registers by a twice-registered copy of the high
address bits). The output register resets to 0 with the ``sync`` reset (``RESETMODE`` SYNC). A read of the
word written in the same cycle is undefined (the two ports of a DP16KD); a caller whose inferred memory reads the
old word there must not use that read. Everything else is the inferred memory's read port followed by a
register: ``read.data`` = that register.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Cat, ClockSignal, Const, Instance, Mux, ResetSignal, Signal, Value

EBR_DATA_BITS = 18
"""Data width of the DP16KD's widest true-dual-port mode (x18)."""
EBR_WORDS = 1024
"""Words of one DP16KD at ``EBR_DATA_BITS``."""
EBR_MODES = ((18, 1024, 4), (9, 2048, 3), (4, 4096, 2), (2, 8192, 1), (1, 16384, 0))
"""The DP16KD's modes as (data bits, words, the word address's lowest ``AD`` pin): the address sits in
``AD[13:low]``; in x18 ``AD[1:0]`` are the write's byte enables, below it the unused low pins are tied to 0."""

INPUT_EBR_MIN_WORDS = 32
"""ECP5: from this many words on, an engine's input (activation) buffer is DP16KD blocks (``ebr_memory``, a block per
example's lane) whose output register is the S4 activation register (digits-mlp's 32 words, both banks: 32 blocks;
rt-mlp's 192: 48); a shallower one stays the LUT RAM Yosys maps it to, read into a fabric register. An inferred
memory that deep maps to DP16KD without its output register (5.8 ns clock-to-out, then the route to the array,
limited rt-mlp at 112 MHz); digits-mlp's in LUT RAM (128 DPR16X4 beside the hidden buffer's 128, their 512-bit write
ports in one region) left its trainer tops congested in router1 at four of six seeds at 2d3805b."""


@dataclass(frozen=True)
class EbrGeometry:
    """How ``ebr_memory`` lays a memory out: ``bits`` x ``words`` blocks (``low``: the address's lowest pin),
    ``slices`` blocks per lane and bank, ``banks`` banks."""

    bits: int
    words: int
    low: int
    slices: int
    banks: int


def ebr_geometry(width: int, depth: int, lanes: int = 1) -> EbrGeometry:
    """The mode with the fewest blocks for ``depth`` words of ``width`` bits in ``lanes`` lanes, then the fewest
    banks, then the widest."""

    def layout(mode):
        bits, words, low = mode
        return EbrGeometry(bits, words, low, -(-(width // lanes) // bits), -(-depth // words))

    return min((layout(mode) for mode in EBR_MODES), key=lambda g: (lanes * g.slices * g.banks, g.banks))


def blocks_of(width: int, depth: int, lanes: int = 1) -> int:
    """DP16KD blocks ``ebr_memory`` uses for ``depth`` words of ``width`` bits in ``lanes`` lanes."""
    g = ebr_geometry(width, depth, lanes)
    return lanes * g.slices * g.banks


@dataclass(frozen=True)
class EbrRead:
    """The read port, named as ``lib.memory``'s: ``addr`` in, ``data`` out (two cycles later)."""

    addr: Signal
    data: Signal


@dataclass(frozen=True)
class EbrWrite:
    """The write port, named as ``lib.memory``'s: ``addr``, ``data``, ``en``."""

    addr: Signal
    data: Signal
    en: Signal


def ebr_memory(m, name: str, shape, depth: int, lanes: int = 1) -> tuple[EbrRead, EbrWrite]:
    """``depth`` words of ``shape`` (a shape or layout; the ports' ``data`` are signals of it) in ``lanes`` lanes,
    each written on its bit of ``write.en``, in DP16KD instances ``<name>_b<bank>_<slice>`` added to
    ``m.submodules`` (contract in the module docstring)."""
    if depth < 1:
        raise ValueError(f"depth: {depth} is below 1")
    read_data, write_data = Signal(shape, name=f"{name}_rdata"), Signal(shape, name=f"{name}_wdata")
    width = len(Value.cast(read_data))
    if lanes < 1 or width % lanes:
        raise ValueError(f"lanes: {lanes} does not divide the word's {width} bits into equal lanes")
    address_bits = max(1, (depth - 1).bit_length())
    read_addr = Signal(address_bits, name=f"{name}_raddr")
    write_addr = Signal(address_bits, name=f"{name}_waddr")
    write_en = Signal(lanes, name=f"{name}_we")
    g = ebr_geometry(width, depth, lanes)
    slices, banks, bits = g.slices, g.banks, g.bits
    lane_bits = width // lanes
    low_bits = min(address_bits, g.words.bit_length() - 1)
    bank_data = []
    for bank in range(banks):
        in_bank = write_addr[low_bits:] == bank if banks > 1 else Const(1, 1)
        lane_data = []
        for lane in range(lanes):
            word = Signal(slices * bits, name=f"{name}_b{bank}_l{lane}_dob" if lanes > 1 else f"{name}_b{bank}_dob")
            for s in range(slices):
                lo, hi = lane * lane_bits + s * bits, lane * lane_bits + min(lane_bits, (s + 1) * bits)
                index = lane * slices + s
                din = Signal(bits, name=f"{name}_b{bank}_{index}_dia")
                m.d.comb += din.eq(Value.cast(write_data)[lo:hi])
                m.submodules[f"{name}_b{bank}_{index}"] = _block(
                    g,
                    din,
                    word[s * bits : (s + 1) * bits],
                    read_addr[:low_bits],
                    write_addr[:low_bits],
                    write_en[lane] & in_bank,
                )
            lane_data.append(word[:lane_bits])
        bank_data.append(Cat(*lane_data))
    if banks == 1:
        m.d.comb += read_data.eq(bank_data[0])
    else:  # the bank of the address two cycles ago: its high bits registered with the latch and the register
        high = [Signal(address_bits - low_bits, name=f"{name}_rbank_{i}") for i in (1, 2)]
        m.d.sync += [high[0].eq(read_addr[low_bits:]), high[1].eq(high[0])]
        selected = bank_data[0]
        for bank in range(1, banks):
            selected = Mux(high[1] == bank, bank_data[bank], selected)
        m.d.comb += read_data.eq(selected)
    return EbrRead(read_addr, read_data), EbrWrite(write_addr, write_data, write_en)


def _block(g: EbrGeometry, din, dob, read_addr, write_addr, write_en) -> Instance:
    """One DP16KD in ``g``'s mode: port A writes ``din`` at ``write_addr`` on ``write_en``; port B reads
    ``read_addr`` every cycle into its output register, ``dob`` (both ``g.bits`` wide, on the low data pins)."""

    def address(prefix, addr, byte_enables):
        pins = {
            f"i_{prefix}{i}": Const(byte_enables if i < 2 and g.bits == EBR_DATA_BITS else 0, 1) for i in range(g.low)
        }
        for i in range(g.low, 14):
            k = i - g.low
            pins[f"i_{prefix}{i}"] = addr[k] if k < len(addr) else Const(0, 1)
        return pins

    return Instance(
        "DP16KD",
        p_DATA_WIDTH_A=g.bits,
        p_DATA_WIDTH_B=g.bits,
        p_REGMODE_A="NOREG",
        p_REGMODE_B="OUTREG",
        p_RESETMODE="SYNC",
        p_ASYNC_RESET_RELEASE="SYNC",
        p_CSDECODE_A="0b000",
        p_CSDECODE_B="0b000",
        p_WRITEMODE_A="NORMAL",
        p_WRITEMODE_B="NORMAL",
        p_GSR="AUTO",
        i_CLKA=ClockSignal("sync"),
        i_CEA=Const(1, 1),
        i_OCEA=Const(1, 1),
        i_WEA=write_en,
        i_RSTA=Const(0, 1),
        **{f"i_CSA{i}": Const(0, 1) for i in range(3)},
        **address("ADA", write_addr, 1),
        **{f"i_DIA{i}": din[i] if i < g.bits else Const(0, 1) for i in range(EBR_DATA_BITS)},
        i_CLKB=ClockSignal("sync"),
        i_CEB=Const(1, 1),
        i_OCEB=Const(1, 1),
        i_WEB=Const(0, 1),
        i_RSTB=ResetSignal("sync", allow_reset_less=True),
        **{f"i_CSB{i}": Const(0, 1) for i in range(3)},
        **address("ADB", read_addr, 0),
        **{f"i_DIB{i}": Const(0, 1) for i in range(EBR_DATA_BITS)},
        **{f"o_DOB{i}": dob[i] for i in range(g.bits)},
    )
