"""The ECP5 variant of the products (``hw.engine.dsp``, MULT18X18D with its registers) and of the weight memory
(``hw.engine.ebr``, DP16KD with its output register) against the generic one.

Yosys ships MULT18X18D as a blackbox only (``share/lattice/cells_bb_ecp5.v``: no simulation model), so
``mult18x18d_model`` is a behavioural model of the configurations ``dsp_product`` uses (input registers A/B
or none, output register, ``CLK0``/``CE0``/``RST0``, synchronous reset, ``SIGNEDA``/``SIGNEDB``; anything else
stops the simulation); likewise ``dp16kd_model`` for the DP16KD configuration ``ebr_memory`` uses, where a read
of the word written in the same cycle gives x (undefined on the block). The pair (``PEArray`` generic and ECP5,
shared inputs) runs thousands of random cycles on Icarus and Verilator with resets and must agree every cycle; the
small network engine elaborated for ECP5 (both primitives) trains against golden on Icarus."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.hdl import Elaboratable, Fragment, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from pezo.golden.engine.loss import LossConfig
from pezo.golden.engine.network import Layer, NetConfig
from pezo.hw.engine import net_engine
from pezo.hw.engine.dsp import DSP_BITS, Ecp5Target, dsp_product, is_ecp5
from pezo.hw.engine.ebr import EBR_WORDS, blocks_of, ebr_geometry, ebr_memory
from pezo.hw.engine.pe_array import ArrayShape, PEArray
from pezo.sim import runner
from pezo.sim.runner import available_simulators, run_cocotb

BITS = DSP_BITS


def _bus(prefix: str, width: int) -> str:
    return "{" + ", ".join(f"{prefix}{i}" for i in reversed(range(width))) + "}"


def mult18x18d_model() -> str:
    """Verilog of a behavioural MULT18X18D (the subset ``dsp_product`` configures)."""
    inputs = [f"{p}{i}" for p in "ABC" for i in range(BITS)] + ["SIGNEDA", "SIGNEDB", "SOURCEA", "SOURCEB"]
    inputs += [f"{p}{i}" for p in ("CLK", "CE", "RST") for i in range(4)]
    outputs = [f"P{i}" for i in range(2 * BITS)]
    params = {f"REG_{r}_CLK": "NONE" for r in ("INPUTA", "INPUTB", "INPUTC", "PIPELINE", "OUTPUT")}
    params |= {f"REG_{r}_CE": "CE0" for r in ("INPUTA", "INPUTB", "INPUTC", "PIPELINE", "OUTPUT")}
    params |= {f"REG_{r}_RST": "RST0" for r in ("INPUTA", "INPUTB", "INPUTC", "PIPELINE", "OUTPUT")}
    params |= {"RESETMODE": "SYNC", "GSR": "ENABLED", "SOURCEB_MODE": "B_SHIFT", "MULT_BYPASS": "DISABLED"}
    supported = " && ".join(
        [f'REG_{r}_CLK == "NONE"' for r in ("INPUTC", "PIPELINE")]
        + [f'(REG_{r}_CLK == "NONE" || REG_{r}_CLK == "CLK0")' for r in ("INPUTA", "INPUTB", "OUTPUT")]
        + [f'REG_{r}_CE == "CE0" && REG_{r}_RST == "RST0"' for r in ("INPUTA", "INPUTB", "OUTPUT")]
        + ['RESETMODE == "SYNC"', 'MULT_BYPASS == "DISABLED"']
    )
    return "\n".join(
        [
            f"module MULT18X18D({', '.join(inputs + outputs)});",
            *[f'  parameter {name} = "{value}";' for name, value in params.items()],
            f"  input {', '.join(inputs)};",
            f"  output {', '.join(outputs)};",
            f"  wire [{BITS - 1}:0] a = {_bus('A', BITS)}, b = {_bus('B', BITS)};",
            f"  reg [{BITS - 1}:0] a_q = 0, b_q = 0;",
            f"  reg [{2 * BITS - 1}:0] p_q = 0;",
            "  initial if (!(" + supported + ')) begin $display("MULT18X18D model: unsupported parameters"); '
            "$finish; end",
            f'  wire [{BITS - 1}:0] a_m = REG_INPUTA_CLK == "NONE" ? a : a_q;',
            f'  wire [{BITS - 1}:0] b_m = REG_INPUTB_CLK == "NONE" ? b : b_q;',
            f"  wire signed [{2 * BITS + 1}:0] full = $signed({{SIGNEDA & a_m[{BITS - 1}], a_m}}) * "
            f"$signed({{SIGNEDB & b_m[{BITS - 1}], b_m}});",
            f"  wire [{2 * BITS - 1}:0] product = full[{2 * BITS - 1}:0];",
            "  always @(posedge CLK0)",
            "    if (RST0) begin a_q <= 0; b_q <= 0; p_q <= 0; end",
            "    else if (CE0) begin a_q <= a; b_q <= b; p_q <= product; end",
            f'  assign {_bus("P", 2 * BITS)} = REG_OUTPUT_CLK == "NONE" ? product : p_q;',
            "endmodule",
            "",
        ]
    )


def dp16kd_model() -> str:
    """Verilog of a behavioural DP16KD: the same mode on both ports (x18, x9, x4, x2 or x1: the word address in
    ``AD[13:low]``, the data on the low pins), port A writes (in x18 both byte enables), port B reads into its latch
    and, with ``REGMODE_B`` OUTREG, its output register; ``RSTB`` (sync) clears both. A read of the word port A
    writes in that cycle gives x. Any other configuration stops the simulation."""
    data = [f"DI{p}{i}" for p in "AB" for i in range(18)]
    address = [f"AD{p}{i}" for p in "AB" for i in range(14)]
    controls = [f"{c}{p}" for p in "AB" for c in ("CLK", "CE", "OCE", "WE", "RST")]
    controls += [f"CS{p}{i}" for p in "AB" for i in range(3)]
    outputs = [f"DOB{i}" for i in range(18)]
    params = {"REGMODE_A": '"NOREG"', "REGMODE_B": '"NOREG"', "RESETMODE": '"SYNC"', "ASYNC_RESET_RELEASE": '"SYNC"'}
    params |= {"DATA_WIDTH_A": "18", "DATA_WIDTH_B": "18", "CSDECODE_A": '"0b000"', "CSDECODE_B": '"0b000"'}
    params |= {"WRITEMODE_A": '"NORMAL"', "WRITEMODE_B": '"NORMAL"', "GSR": '"AUTO"'}
    supported = (
        "DATA_WIDTH_A == DATA_WIDTH_B && (DATA_WIDTH_B == 18 || DATA_WIDTH_B == 9 || DATA_WIDTH_B == 4 || "
        'DATA_WIDTH_B == 2 || DATA_WIDTH_B == 1) && REGMODE_A == "NOREG" && RESETMODE == "SYNC" && '
        '(REGMODE_B == "NOREG" || REGMODE_B == "OUTREG")'
    )
    return "\n".join(
        [
            f"module DP16KD({', '.join(data + address + controls + outputs)});",
            *[f"  parameter {name} = {value};" for name, value in params.items()],
            "  localparam W = DATA_WIDTH_B;",
            "  localparam LOW = W == 18 ? 4 : W == 9 ? 3 : W == 4 ? 2 : W == 2 ? 1 : 0;",
            f"  input {', '.join(data + address + controls)};",
            f"  output {', '.join(outputs)};",
            "  initial if (!(" + supported + ')) begin $display("DP16KD model: unsupported parameters"); $finish; end',
            "  reg [17:0] mem [0:16383];",
            "  integer i;",
            "  initial for (i = 0; i < 16384; i = i + 1) mem[i] = 0;  // INITVAL_* 0: the block's configured contents",
            "  reg [17:0] latch = 0, out = 0;",
            f"  wire [13:0] wa = {_bus('ADA', 14)} >> LOW;",
            f"  wire [13:0] ra = {_bus('ADB', 14)} >> LOW;",
            f"  wire [17:0] din = {_bus('DIA', 18)} & ((18'd1 << W) - 1);",
            "  wire writing = CEA && WEA;",
            "  always @(posedge CLKA) if (writing) begin",
            "    if (W == 18 && !(ADA0 && ADA1)) begin",
            '      $display("DP16KD model: a write without both byte enables"); $finish;',
            "    end",
            "    if (W != 18 && ({ADA3, ADA2, ADA1, ADA0} & ((4'd1 << LOW) - 1)) != 0) begin",
            '      $display("DP16KD model: an address pin below the mode\'s word address is set"); $finish;',
            "    end",
            "    mem[wa] <= din;",
            "  end",
            "  always @(posedge CLKB) begin",
            "    if (RSTB) begin latch <= 0; out <= 0; end",
            "    else begin",
            "      if (CEB) latch <= (writing && wa == ra) ? 18'bx : mem[ra];",
            "      if (OCEB) out <= latch;",
            "    end",
            "  end",
            f'  assign {_bus("DOB", 18)} = REGMODE_B == "OUTREG" ? out : latch;',
            "endmodule",
            "",
        ]
    )


class _Elaborated(Elaboratable):
    """``inner`` elaborated with ``platform`` whatever the enclosing design's platform."""

    def __init__(self, inner, platform):
        self.inner, self.platform = inner, platform

    def elaborate(self, platform):
        return Fragment.get(self.inner, self.platform)


class _Pair(wiring.Component):
    """``PEArray(shape)``'s ports driving both variants; the outputs are the ECP5 variant's, ``ref_*`` the
    generic one's."""

    def __init__(self, shape: ArrayShape):
        self.shape = shape
        members = dict(PEArray(shape).signature.members.items())
        outputs = [name for name, member in members.items() if member.flow == Out]
        super().__init__({**members, **{f"ref_{name}": members[name] for name in outputs}})
        self.outputs = outputs

    def elaborate(self, platform):
        m = Module()
        generic, ecp5 = PEArray(self.shape), PEArray(self.shape)
        m.submodules.generic = _Elaborated(generic, None)
        m.submodules.ecp5 = _Elaborated(ecp5, Ecp5Target())
        for name in PEArray(self.shape).signature.members:
            if name in self.outputs:
                m.d.comb += [
                    getattr(self, name).eq(getattr(ecp5, name)),
                    getattr(self, f"ref_{name}").eq(getattr(generic, name)),
                ]
            else:
                m.d.comb += [
                    getattr(ecp5, name).eq(getattr(self, name)),
                    getattr(generic, name).eq(getattr(self, name)),
                ]
        return m


def _write_ecp5_verilog(component, name, directory) -> tuple[Path, str]:
    """``runner.write_verilog`` for the ECP5 variant: ``component`` elaborated with ``Ecp5Target``, written with the
    MULT18X18D / DP16KD models appended (never cached); returns the path and the design's own text."""
    path = Path(directory) / f"{name}.v"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = verilog.convert(component, name=name, emit_src=False, platform=Ecp5Target())
    path.write_text(text + mult18x18d_model() + dp16kd_model())
    return path, text


def _random_job(cfg, steps: int, seed: int):
    """``steps`` random batches (int8 inputs, labels) and random weights in [-40, 40] for ``cfg``."""
    rng = np.random.default_rng(seed)
    xs = rng.integers(-128, 128, (steps, cfg.array.batch, cfg.inputs))
    ys = rng.integers(0, cfg.outputs, (steps, cfg.array.batch))
    return xs, ys, rng.integers(-40, 41, cfg.weights)


def test_is_ecp5_selects_only_family_ecp5():
    assert is_ecp5(Ecp5Target())
    assert not is_ecp5(None)
    assert not is_ecp5(type("Xilinx", (), {"family": "ultrascale_plus"})())


def test_operands_wider_than_the_dsp_are_an_error():
    with pytest.raises(ValueError, match="does not fit"):
        dsp_product(Module(), Signal(unsigned(BITS)), Signal(8), 16, "wide")
    with pytest.raises(ValueError, match="width"):
        dsp_product(Module(), Signal(8), Signal(8), 2 * BITS + 1, "long")


def test_ecp5_array_has_one_dsp_per_product_and_no_fabric_operand_registers():
    shape = ArrayShape(rows=2, cols=3, tag_bits=4)
    generic = verilog.convert(PEArray(shape), name="pe", emit_src=False)
    ecp5 = verilog.convert(PEArray(shape), name="pe", emit_src=False, platform=Ecp5Target())
    assert "MULT18X18D" not in generic and "acts_q" in generic
    assert ecp5.count("MULT18X18D ") == 2 * 3 and "acts_q" not in ecp5 and "weights_q" not in ecp5


@pytest.mark.parametrize(
    ("simulator", "bias"),
    [("icarus", False), ("icarus", True), pytest.param("verilator", True, marks=pytest.mark.slow)],
)
def test_ecp5_array_matches_generic(simulator, bias, tmp_path, monkeypatch):
    """3000 random cycles (random valid/first/last, operands over the full int8 range, 1 % resets); Verilator's
    build takes ~40 s (slow)."""
    if simulator not in available_simulators():
        pytest.skip(f"{simulator} is not available")
    pair = _Pair(ArrayShape(rows=3, cols=4, tag_bits=5, bias=bias))
    source = tmp_path / "pair.v"
    source.write_text(verilog.convert(pair, name="pair", emit_src=False) + mult18x18d_model())
    inputs = {name: len(Value.cast(getattr(pair, name))) for name, m in pair.signature.members.items() if m.flow != Out}
    env = {
        "PEZO_CYCLES": "3000",
        "PEZO_INPUTS": json.dumps(inputs),
    }
    monkeypatch.syspath_prepend(str(Path(__file__).parent))  # the runner passes sys.path on: dsp_pair_tb
    run_cocotb(
        verilog_path=source,
        toplevel="pair",
        test_module="dsp_pair_tb",
        simulator=simulator,
        build_dir=tmp_path / simulator,
        extra_env=env,
    )


@pytest.mark.parametrize(
    "loss",
    [LossConfig(mode="sign", margin=100), LossConfig(mode="scaled", margin=50, g_shift=4), LossConfig(mode="host")],
    ids=["sign", "scaled", "host"],
)
def test_ecp5_network_engine_matches_golden_on_icarus(loss, tmp_path, monkeypatch):
    """Two ZO steps (forward passes, g, the update's g * p in DSPs) of a small network engine elaborated for ECP5
    (the PE array's and the update's products in MULT18X18D registers, the weight and logit memories in DP16KD
    blocks with their output register) against golden, every logit and weight (read back through ``w_rdata``); g
    formed on chip (written in FORWARD_DRAIN) and from the host (written in IDLE). The input buffer is DP16KD
    blocks with a write enable per example's lane, as rt-mlp's (``INPUT_EBR_MIN_WORDS`` lowered to this net's 8)."""
    if "icarus" not in available_simulators():
        pytest.skip("icarus is not available")

    def ecp5_verilog(component, name, directory, config=None):
        path, text = _write_ecp5_verilog(component, name, directory)
        assert text.count("MULT18X18D ") == 2 * 4 + 2 * 4  # R x C products, two partial products per lane
        # 32-bit weight words, 64-bit logit rows (2 x 32) and input rows (2 examples' lanes of 32 bits, each its own
        # blocks): 18-bit slices, one bank each
        inputs = 2 * cfg.array.tiles * cfg.input_words
        assert (
            text.count("DP16KD ")
            == (
                blocks_of(32, cfg.memory_words)
                + blocks_of(64, 4 * cfg.array.tiles * 3)
                + blocks_of(64, inputs, lanes=2)
            )
            == 2 + 4 + 4
        )
        return path

    monkeypatch.setattr(runner, "write_verilog", ecp5_verilog)
    monkeypatch.setattr(net_engine, "INPUT_EBR_MIN_WORDS", 1)  # the input buffer in DP16KD too (8 words here)
    cfg = NetConfig().replace(layers=(Layer(8, 4, shift=6, relu=True), Layer(4, 3)), rows=2, cols=4, batch=4)
    steps = 2
    xs, ys, weights = _random_job(cfg, steps, seed=3)
    result = runner.run_net_engine(cfg, loss, xs, ys, weights, "icarus", tmp_path / "icarus")
    assert result["match"], result.get("mismatches")
    assert result["steps"] == steps


@pytest.mark.parametrize("strategy", ["otf", "pregen"])
def test_ecp5_head_engine_matches_golden_on_icarus(strategy, tmp_path, monkeypatch):
    """Two ZO steps of a small head engine (``hw.engine.zo_engine.ZOEngine``) elaborated for ECP5 -- the PE array's
    and the update's products in MULT18X18D registers, the weight, logit and activation memories in DP16KD blocks
    read through their output register -- against golden, every logit and final weight (the ECP5 variant the timing
    flow places and routes)."""
    if "icarus" not in available_simulators():
        pytest.skip("icarus is not available")
    from pezo.golden.engine.zo_engine import EngineConfig
    from pezo.golden.zo.int8_head import Int8TrainConfig
    from pezo.hw.engine import zo_engine

    cfg = EngineConfig().replace(strategy=strategy, rows=2, cols=4, inputs=16, outputs=3, batch=4, eps_shift=6)

    def ecp5_verilog(component, name, directory, config=None):
        path, text = _write_ecp5_verilog(component, name, directory)
        assert text.count("MULT18X18D ") == 2 * 4 + 2 * 4  # R x C products, two partial products per lane
        assert "weight_mem_b0" in text and "logit_mem_b0" in text and "act_mem_b0" in text
        return path

    monkeypatch.setattr(runner, "write_verilog", ecp5_verilog)
    monkeypatch.setattr(zo_engine, "INPUT_EBR_MIN_WORDS", 1)  # the activation memory in DP16KD too (8 words here)
    rng = np.random.default_rng(11)
    steps = 2
    xs = rng.integers(-128, 128, (steps, cfg.array.batch, cfg.inputs))
    ys = rng.integers(0, cfg.outputs, (steps, cfg.array.batch))
    weights = rng.integers(-127, 128, (cfg.outputs, cfg.inputs))
    train = Int8TrainConfig(engine=cfg, lr=0.3, weight_exponent=-3)
    result = runner.run_engine(train, xs, ys, -9, "icarus", tmp_path / "icarus", weights=weights)
    assert result["match"], result.get("mismatches")
    assert result["steps"] == steps


class _MemoryPair(wiring.Component):
    """``ebr_memory`` (``data``) and an inferred memory whose read port feeds a register (``ref_data``), the same
    write and read ports; a write to the word read in that cycle is dropped (undefined on the block)."""

    def __init__(self, width: int, depth: int, lanes: int = 1):
        self.width, self.depth, self.lanes = width, depth, lanes
        bits = (depth - 1).bit_length()
        super().__init__(
            {
                "write_addr": In(bits),
                "write_data": In(width),
                "write_en": In(lanes),
                "read_addr": In(bits),
                "data": Out(width),
                "ref_data": Out(width),
            }
        )

    def elaborate(self, platform):
        m = Module()
        write_en = Mux(self.write_addr != self.read_addr, self.write_en, 0)
        lane_bits = self.width // self.lanes
        read, write = ebr_memory(m, "ebr", self.width, self.depth, lanes=self.lanes)
        m.submodules.ref = ref = Memory(shape=data.ArrayLayout(lane_bits, self.lanes), depth=self.depth, init=[])
        ref_read, ref_write = ref.read_port(), ref.write_port(granularity=1)
        for port in (write, ref_write):
            m.d.comb += [port.addr.eq(self.write_addr), port.data.eq(self.write_data), port.en.eq(write_en)]
        m.d.comb += [read.addr.eq(self.read_addr), ref_read.addr.eq(self.read_addr), self.data.eq(read.data)]
        m.d.sync += self.ref_data.eq(ref_read.data.as_value())
        return m


@pytest.mark.parametrize(
    ("width", "depth", "lanes"),
    [(32, 424, 1), (9, 3000, 1), (3 * 24, 192, 3), (64, 3088, 1), (40, EBR_WORDS + 476, 1)],
    ids=["x18", "x9-two-banks", "x18-three-lanes", "x4-rt-mlp-weights", "x9-one-bank"],
)
def test_ebr_memory_matches_an_inferred_memory_and_register(width, depth, lanes, tmp_path, monkeypatch):
    """3000 random cycles of writes (any subset of the lanes), reads (two cycles to the data: the block's latch and
    output register) and resets on Icarus, in the mode ``ebr_geometry`` picks (x18, x9, x4); the two-bank case
    selects its bank after the registers; with lanes, each lane (24 bits: two blocks) is written on its own enable,
    as an inferred memory with that granularity."""
    if "icarus" not in available_simulators():
        pytest.skip("icarus is not available")
    pair = _MemoryPair(width, depth, lanes)
    text = verilog.convert(pair, name="pair", emit_src=False)
    g = ebr_geometry(width, depth, lanes)
    assert text.count("DP16KD ") == blocks_of(width, depth, lanes) == lanes * g.slices * g.banks
    assert (g.bits, g.banks) == {(32, 424): (18, 1), (9, 3000): (9, 2), (72, 192): (18, 1), (64, 3088): (4, 1)}.get(
        (width, depth), (9, 1)
    )
    source = tmp_path / "pair.v"
    source.write_text(text + dp16kd_model())
    monkeypatch.syspath_prepend(str(Path(__file__).parent))  # the runner passes sys.path on: ebr_pair_tb
    run_cocotb(
        verilog_path=source,
        toplevel="pair",
        test_module="ebr_pair_tb",
        simulator="icarus",
        build_dir=tmp_path / "icarus",
        extra_env={"PEZO_CYCLES": "3000", "PEZO_DEPTH": str(depth), "PEZO_WIDTH": str(width), "PEZO_LANES": str(lanes)},
    )


def test_ebr_memory_rejects_an_empty_memory_and_unequal_lanes():
    with pytest.raises(ValueError, match="depth"):
        ebr_memory(Module(), "empty", 8, 0)
    with pytest.raises(ValueError, match="lanes: 3"):
        ebr_memory(Module(), "uneven", 8, 16, lanes=3)


@pytest.mark.rtl
def test_ecp5_engine_top_trains_through_axi_like_golden(tmp_path, monkeypatch):
    """The trainer's engine top (``hw.engine_top``) elaborated for ECP5 -- the engine's products in MULT18X18D, its
    memories and the step log in DP16KD blocks read through their output register -- trains three steps through
    AXI with the driver on Icarus: every step record (read from the step log), logit row and final weight equals
    golden."""
    if "icarus" not in available_simulators():
        pytest.skip("icarus is not available")

    def ecp5_verilog(component, name, directory, config=None):
        path, text = _write_ecp5_verilog(component, name, directory)
        assert "step_log_b0_6" in text and "step_log_b0_7" not in text  # 121-bit records: seven 18-bit slices
        return path

    monkeypatch.setattr(runner, "write_verilog", ecp5_verilog)
    cfg = NetConfig().replace(layers=(Layer(16, 8, shift=6, relu=True), Layer(8, 3)), rows=2, cols=8, batch=4)
    steps = 3
    xs, ys, weights = _random_job(cfg, steps, seed=5)
    loss = LossConfig(mode="sign", margin=4096, g_lr=1 << 16)
    result = runner.run_board(cfg, loss, xs, ys, weights, "icarus", tmp_path / "icarus")
    assert result["match"], result["mismatches"]
    assert result["steps"] == steps and result["logit_steps_checked"] == steps
    assert len(result["records"]) == steps
