"""ECP5 only: a product whose operand registers are the MULT18X18D's own input registers (Yosys and nextpnr
pack no fabric flip-flop into a DSP block, so an inferred ``a * b`` between fabric registers pays the routing
into the block and out of it in one cycle).

Selection: ``is_ecp5(platform)`` -- the ``platform`` passed to ``elaborate`` has ``family == "ecp5"`` (Amaranth's
Lattice ECP5 platforms; pezo's ECP5 timing flow passes an ``Ecp5Target``) and does not set ``DSP_REGISTERS_ATTR``
False. Everything else (no platform: the ZCU102 Verilog, the Icarus / Verilator / Amaranth simulations; the ULX3S
build, ``boards.ulx3s.ulx3s_platform``) keeps the inferred ``*`` and its fabric registers.

``dsp_product`` contract: one MULT18X18D with ``SIGNEDA`` = ``SIGNEDB`` = 1; a signed operand (up to 18 bits) in
the top bits of its 18 (its low bits constant 0, which nextpnr ties off instead of routing, and no sign bit fanned
out to the high pins; the product is read from the bit the two shifts add up to), an unsigned one (up to 17 bits)
zero-extended; both through the input registers ``REG_INPUTA``/``REG_INPUTB`` on ``CLK0`` = the ``sync`` clock,
``CE0`` = 1, ``RST0`` = the ``sync`` reset (the other three clocks, enables and resets unconnected; ``RESETMODE``
SYNC, the registers reset to 0 like the fabric's); no pipeline register, the output register only with
``output_register``. So the returned
signed product is ``a * b`` of the values on ``a`` and ``b`` one cycle earlier, combinational out of the block:
the caller registers it in fabric (its products register, placed beside its consumer), which gives the cycles
of an input register, then a product register, in fabric.

The output register (``output_register``) only in front of a fabric register, never instead of it: with
``REG_OUTPUT`` alone the products leave the DSP column at the start of the next cycle and route to the adder tree in
the same cycle as the tree's adds (digits-mlp seed 7: 85.3 MHz, ``dut.pe.prod_2_4_dsp.P3`` -> 4.7 ns of routing ->
``row_sum_2``, against 101.1 MHz before); with both, the route from the DSP column to the tree has a cycle of its own
(the network engine's ``ArrayShape.product_stages`` 2). Why both inputs:
nextpnr times a MULT18X18D with one input registered as if neither were.
"""

from __future__ import annotations

from amaranth.hdl import ClockSignal, Const, Instance, ResetSignal, Signal, Value, signed

DSP_BITS = 18
"""Operand width of the MULT18X18D (signed)."""

ECP5_FAMILY = "ecp5"

DSP_REGISTERS_ATTR = "pezo_dsp_registers"
"""A platform attribute: False keeps an ECP5 platform's products inferred (``is_ecp5`` False). The ULX3S build sets
it: Yosys 0.70's abc9 stops on an assertion (``ABC_OPS_REINTEGRATE``, ``rtlil.cc:3091``) on the whole trainer top
with these instances (not on the engine alone), and the board's 25 MHz clock needs no DSP registers."""


def is_ecp5(platform) -> bool:
    """Whether ``elaborate``'s ``platform`` selects the ECP5 DSP variant (``platform.family == "ecp5"``, unless the
    platform's ``DSP_REGISTERS_ATTR`` is False)."""
    return getattr(platform, "family", None) == ECP5_FAMILY and getattr(platform, DSP_REGISTERS_ATTR, True)


def _operand(value, name: str):
    """A signed 18-bit operand ``name`` from ``value``, its assignment and its shift: a signed value in the top bits
    (``value << shift``, the ``shift`` low bits constant 0: nextpnr ties a constant DSP data pin off in the bitstream
    instead of routing it, and no sign bit fans out to the unused high pins), an unsigned one zero-extended
    (shift 0: bit 17 is the sign)."""
    value = Value.cast(value)
    shape = value.shape()
    if shape.width > DSP_BITS - (0 if shape.signed else 1):
        raise ValueError(f"{name}: a {shape} operand does not fit a signed {DSP_BITS}-bit DSP input")
    shift = DSP_BITS - shape.width if shape.signed else 0
    operand = Signal(signed(DSP_BITS), name=name)
    return operand, operand.eq(value << shift if shift else value), shift


def dsp_product(m, a, b, width: int, name: str, output_register: bool = False) -> Signal:
    """``a * b`` (signed, ``width`` <= 36 bits) of the previous cycle's ``a`` and ``b`` from one MULT18X18D
    (instance ``<name>_dsp``) with its input registers (contract in the module docstring); the DSP is added to
    ``m.submodules``. ``output_register``: through the block's output register too (``REG_OUTPUT`` on ``CLK0``), the
    product of the values two cycles earlier."""
    if not 1 <= width <= 2 * DSP_BITS:
        raise ValueError(f"width: {width} is outside 1..{2 * DSP_BITS}")
    a18, a_eq, a_shift = _operand(a, f"{name}_a")
    b18, b_eq, b_shift = _operand(b, f"{name}_b")
    low = a_shift + b_shift  # the product's weight-1 bit
    if low + width > 2 * DSP_BITS:
        raise ValueError(f"width: {width} bits of the product do not fit above bit {low} of the DSP's 36")
    p36 = Signal(2 * DSP_BITS, name=f"{name}_p")
    m.d.comb += [a_eq, b_eq]
    ports = {
        **{f"i_A{i}": a18[i] if i >= a_shift else Const(0, 1) for i in range(DSP_BITS)},
        **{f"i_B{i}": b18[i] if i >= b_shift else Const(0, 1) for i in range(DSP_BITS)},
        **{f"i_C{i}": Const(0, 1) for i in range(DSP_BITS)},
        **{f"o_P{i}": p36[i] for i in range(2 * DSP_BITS)},
        "i_SIGNEDA": Const(1, 1),
        "i_SIGNEDB": Const(1, 1),
        "i_SOURCEA": Const(0, 1),
        "i_SOURCEB": Const(0, 1),
        # CLK1..3, CE1..3, RST1..3 clock no register: left unconnected (nextpnr routes a constant on a DSP's clock,
        # enable or reset pin from its one constant driver, 9 pins a block; an open pin is tied off in the bitstream)
        "i_CLK0": ClockSignal("sync"),
        "i_CE0": Const(1, 1),
        "i_RST0": ResetSignal("sync", allow_reset_less=True),
    }
    registers = {
        "p_REG_INPUTA_CLK": "CLK0",
        "p_REG_INPUTB_CLK": "CLK0",
        "p_REG_OUTPUT_CLK": "CLK0" if output_register else "NONE",
        "p_REG_PIPELINE_CLK": "NONE",
        "p_REG_INPUTC_CLK": "NONE",
        "p_RESETMODE": "SYNC",
    }
    m.submodules[f"{name}_dsp"] = Instance("MULT18X18D", **registers, **ports)
    product = Signal(signed(width), name=name)
    m.d.comb += product.eq(p36[low : low + width].as_signed())
    return product


class Ecp5Target:
    """The ``platform`` to pass to ``amaranth.back.verilog.convert`` (or ``rtlil``) for ECP5 Verilog outside an
    Amaranth build (pezo's ECP5 timing flow): it has ``family == "ecp5"`` and nothing else."""

    family = ECP5_FAMILY
