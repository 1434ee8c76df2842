"""ECP5 only: a one-read, one-write memory of DP16KD blocks whose read data leaves through the blocks' output
register (``REGMODE_B`` = ``OUTREG``), for the reads whose consumer registered the read data anyway.

Why: Yosys maps an inferred memory to DP16KD without its output register (``share/lattice/brams_16kd.txt`` has
no option for it), so the read data leaves the block 5.8 ns after the clock (nextpnr's ECP5 -6 figure) and a
fabric register beside the consumer is the earliest it can land: with 8.3 ns at 120 MHz, 2.5 ns for the
route. With the output register the block's clock-to-out is the register's, and the route is a whole cycle.

``ebr_memory`` contract: ``depth`` words of ``width`` bits in ``lanes`` equal lanes (``lib.memory``'s write
granularity ``width / lanes``), in 18-bit x 1024-word blocks (``DATA_WIDTH`` 18 on both ports, each lane in
``ceil(width / lanes / 18)`` blocks of its own per bank of 1 024 words, ``ceil(depth / 1024)`` banks), its ports
named as ``lib.memory``'s. Port A writes (``write.en``, one bit per lane, with ``write.addr`` / ``write.data``, both
byte enables on), port B reads every cycle:
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
"""Data width of each DP16KD port as used here (x18 mode)."""
EBR_WORDS = 1024
"""Words of one DP16KD at ``EBR_DATA_BITS``."""
_ADDRESS_LOW = 4
"""x18 mode: the word address sits in ``AD[13:4]``; ``AD[1:0]`` are the write's byte enables."""


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


def _geometry(width: int, depth: int, lanes: int = 1) -> tuple[int, int]:
    """(slices of ``EBR_DATA_BITS`` per lane, banks of ``EBR_WORDS``) for ``depth`` words of ``width`` bits in
    ``lanes`` lanes."""
    return -(-(width // lanes) // EBR_DATA_BITS), -(-depth // EBR_WORDS)


def blocks_of(width: int, depth: int, lanes: int = 1) -> int:
    """DP16KD blocks ``ebr_memory`` uses for ``depth`` words of ``width`` bits in ``lanes`` lanes."""
    slices, banks = _geometry(width, depth, lanes)
    return lanes * slices * banks


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
    slices, banks = _geometry(width, depth, lanes)
    lane_bits = width // lanes
    low_bits = min(address_bits, EBR_WORDS.bit_length() - 1)
    bank_data = []
    for bank in range(banks):
        in_bank = write_addr[low_bits:] == bank if banks > 1 else Const(1, 1)
        lane_data = []
        for lane in range(lanes):
            word = Signal(
                slices * EBR_DATA_BITS, name=f"{name}_b{bank}_l{lane}_dob" if lanes > 1 else f"{name}_b{bank}_dob"
            )
            for s in range(slices):
                lo, hi = (
                    lane * lane_bits + s * EBR_DATA_BITS,
                    lane * lane_bits + min(lane_bits, (s + 1) * EBR_DATA_BITS),
                )
                index = lane * slices + s
                din = Signal(EBR_DATA_BITS, name=f"{name}_b{bank}_{index}_dia")
                m.d.comb += din.eq(Value.cast(write_data)[lo:hi])
                m.submodules[f"{name}_b{bank}_{index}"] = _block(
                    din,
                    word[s * EBR_DATA_BITS : (s + 1) * EBR_DATA_BITS],
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


def _block(din, dob, read_addr, write_addr, write_en) -> Instance:
    """One DP16KD: port A writes ``din`` at ``write_addr`` on ``write_en``; port B reads ``read_addr`` every cycle
    into its output register, ``dob``."""

    def address(prefix, addr, byte_enables):
        bits = {f"i_{prefix}{i}": Const(byte_enables if i < 2 else 0, 1) for i in range(_ADDRESS_LOW)}
        for i in range(_ADDRESS_LOW, 14):
            k = i - _ADDRESS_LOW
            bits[f"i_{prefix}{i}"] = addr[k] if k < len(addr) else Const(0, 1)
        return bits

    return Instance(
        "DP16KD",
        p_DATA_WIDTH_A=EBR_DATA_BITS,
        p_DATA_WIDTH_B=EBR_DATA_BITS,
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
        **{f"i_DIA{i}": din[i] for i in range(EBR_DATA_BITS)},
        i_CLKB=ClockSignal("sync"),
        i_CEB=Const(1, 1),
        i_OCEB=Const(1, 1),
        i_WEB=Const(0, 1),
        i_RSTB=ResetSignal("sync", allow_reset_less=True),
        **{f"i_CSB{i}": Const(0, 1) for i in range(3)},
        **address("ADB", read_addr, 0),
        **{f"i_DIB{i}": Const(0, 1) for i in range(EBR_DATA_BITS)},
        **{f"o_DOB{i}": dob[i] for i in range(EBR_DATA_BITS)},
    )
