"""boards.flow.timing: ports of generated Verilog, the register-to-register wrapper, nextpnr-ecp5 Fmax, xcup logic
levels and the Vivado report_timing_summary parser (on a real public report)."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from amaranth.back import verilog
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pezo.boards.flow import timing

FIXTURE = Path(__file__).parents[1] / "fixtures" / "vivado" / "xczu3eg_lpm_timing_summary_place.rpt"


class _Combinational(wiring.Component):
    """y = a OP b, purely combinational, plus a registered copy: the wrapper must time both paths."""

    def __init__(self, width, op):
        self._op = op
        super().__init__({"a": In(width), "b": In(width), "y": Out(width), "q": Out(width)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.y.eq(self._op(self.a, self.b))
        m.d.sync += self.q.eq(self.a)
        return m


def _verilog(width, op, name="unit"):
    return verilog.convert(_Combinational(width, op), name=name)


def test_ports_of_generated_verilog():
    ports = {p.name: p for p in timing.ports(_verilog(12, lambda a, b: a ^ b), "unit")}
    assert {n: (p.direction, p.width) for n, p in ports.items()} == {
        "clk": ("input", 1),
        "rst": ("input", 1),
        "a": ("input", 12),
        "b": ("input", 12),
        "y": ("output", 12),
        "q": ("output", 12),
    }


def test_ports_unknown_module_is_an_error():
    with pytest.raises(timing.TimingError, match="module nope not found"):
        timing.ports(_verilog(4, lambda a, b: a ^ b), "nope")


def test_wrapper_drives_every_input_from_a_register_and_registers_every_output():
    text = timing.register_wrapper(_verilog(12, lambda a, b: a ^ b), "unit")
    wrap = text[text.index(f"module {timing.WRAP_TOP}") :]
    # rst, a, b: 25 stimulus bits from one shift register; y, q: 24 result bits registered, then 4-input XORs
    assert "reg [24:0] stim" in wrap and "stim <= {stim[23:0], din}" in wrap and ".clk(clk)" in wrap
    connected = dict(re.findall(r"\.(\w+)\((\w+)\[", wrap))
    assert connected == {"a": "stim", "b": "stim", "rst": "stim", "y": "result", "q": "result"}
    assert "level0 <= result" in wrap and "level1[5] <= ^level0[23:20]" in wrap and "assign dout = level3[0]" in wrap


@pytest.mark.skipif(
    shutil.which("iverilog") is None, reason="Icarus is not installed (the Yosys flow below still parses the wrapper)"
)
def test_wrapper_is_valid_verilog(tmp_path):
    (tmp_path / "w.v").write_text(timing.register_wrapper(_verilog(8, lambda a, b: a + b), "unit"))
    proc = subprocess.run(
        ["iverilog", "-g2012", "-o", "w.vvp", "-s", timing.WRAP_TOP, "w.v"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr


def test_vivado_timing_summary_of_a_real_report():
    result = timing.parse_timing_summary(FIXTURE.read_text())
    assert result["wns_ns"] == 0.521 and result["period_ns"] == 5.0
    assert result["fmax_mhz"] == pytest.approx(1000 / (5.0 - 0.521), abs=0.01)
    assert result["logic_levels"] == 15 and result["logic_levels_breakdown"] == "CARRY8=5 LUT4=3 LUT5=5 LUT6=2"
    assert result["fmax_source"] == "vivado"


def test_vivado_timing_found_in_an_amaranth_run_dir(tmp_path):
    assert timing.read_vivado_timing(tmp_path) is None
    (tmp_path / "top_timing_synth.rpt").write_text("not the routed one")
    shutil.copy(FIXTURE, tmp_path / "top_timing.rpt")
    assert timing.read_vivado_timing(tmp_path)["fmax_mhz"] == pytest.approx(223.26)


def test_vivado_parser_rejects_other_reports():
    other = FIXTURE.parent / "xc7a35t_top_utilization_place.rpt"
    with pytest.raises(timing.TimingError, match="Design Timing Summary"):
        timing.parse_timing_summary(other.read_text())


@pytest.mark.synth
def test_carry_chain_is_slower_than_xor_after_place_and_route():
    """A 48-bit adder (carry chain) must time slower than a 48-bit XOR: proves the paths through the
    unit's combinational outputs are timed (an untimed output would make both look alike)."""
    adder = timing.fmax(_verilog(48, lambda a, b: a + b), "unit", use_cache=False)
    xor = timing.fmax(_verilog(48, lambda a, b: a ^ b), "unit", use_cache=False)
    assert adder["fmax_source"] == "nextpnr-ecp5" and set(adder["fmax_per_seed"]) == {str(s) for s in timing.SEEDS}
    assert 10 < adder["fmax_mhz"] < xor["fmax_mhz"] < 1000
    assert adder["critical_path"] and any("CCU2" in line for line in adder["critical_path"])


@pytest.mark.synth
def test_logic_levels_grow_with_xor_width():
    two = timing.logic_levels(_verilog(1, lambda a, b: a ^ b), "unit", use_cache=False)
    assert two["logic_levels"] == 1

    class Reduce(wiring.Component):
        x: In(216)
        y: Out(1)

        def elaborate(self, platform):
            m = Module()
            m.d.comb += self.y.eq(self.x.xor())
            return m

    deep = timing.logic_levels(verilog.convert(Reduce(), name="unit"), "unit", use_cache=False)
    # 216 inputs need at least 3 LUT6 levels (36, 6, 1); ABC's mapping takes a few more, never fewer
    assert 3 <= deep["logic_levels"] <= 8 and len(deep["logic_path"]) == deep["logic_levels"]


def test_timing_path_needs_one_design(capsys):
    from pezo.cli.main import main

    assert main(["report", "--timing-path"]) == 2
    assert "--timing-path prints one design's critical path" in capsys.readouterr().err


@pytest.mark.synth
def test_report_of_one_design_gains_the_timing_keys(capsys):
    import json

    from pezo.cli.main import main

    assert main(["report", "--strategy", "otf", "--n-rngs", "8", "--rng-bits", "8", "--json", "--timing-path"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["fmax_source"] == "nextpnr-ecp5" and 50 < row["fmax_mhz"] < 1000
    assert set(row["fmax_per_seed"]) == {str(s) for s in timing.SEEDS}
    assert sorted(row["fmax_per_seed"].values())[1] == row["fmax_mhz"]  # the median
    assert isinstance(row["logic_levels"], int) and row["logic_levels"] >= 1
    assert row["values_per_cycle"] == 8 and row["throughput_values_per_s"] == pytest.approx(8e6 * row["fmax_mhz"])
    assert row["throughput_per_lut"] == pytest.approx(row["throughput_values_per_s"] / row["LUT"], abs=0.1)
    assert " -> " in row["critical_path_ends"] and any("Source" in line for line in row["critical_path"])


@pytest.mark.synth
def test_comparison_rows_carry_timing_and_the_timing_table():
    from pezo.boards.flow.comparison_rows import Design, comparison_rows
    from pezo.boards.flow.comparison_table import format_table
    from pezo.golden.config import PerturbConfig

    designs = [Design(PerturbConfig(strategy="pregen", pool_size=255, lanes=4, banks=4), "stream")]
    (timed,) = comparison_rows(designs, timing=True)
    assert timed["fmax_mhz"] > 0 and timed["values_per_cycle"] == 4
    (untimed,) = comparison_rows(designs)
    assert all(untimed[k] is None for k in timing.TIMING_KEYS)
    table = format_table([timed])
    assert "Timing - Fmax after place and route on ECP5-85F" in table and f"{timed['fmax_mhz']:.1f}" in table


def test_ecp5_timing_times_the_engines_dsp_variant_and_xcup_the_generic_verilog(monkeypatch):
    """``unit_timing``: nextpnr gets the engine elaborated for ECP5 (MULT18X18D instances with their registers),
    the xcup logic levels the generic Verilog; both under the generic Verilog's cache key."""
    from pezo.golden.engine.network import Layer, NetConfig

    config = NetConfig().replace(layers=(Layer(8, 4, shift=6, relu=True), Layer(4, 3)), rows=2, cols=4, batch=4)
    text, top, key = timing.unit_verilog(config, "engine")
    ecp5_text, ecp5_top, _ = timing.unit_verilog(config, "engine", timing.ECP5)
    assert "MULT18X18D" not in text and ecp5_text.count("MULT18X18D ") == 2 * 4 + 2 * 4 and ecp5_top == top
    seen = {}

    def fake_fmax(verilog_text, top, *, key=None, use_cache=True):
        seen["fmax"] = (verilog_text, key)
        return {
            "fmax_mhz": 100.0,
            "fmax_source": "nextpnr-ecp5",
            "target": "t",
            "fmax_per_seed": {},
            "critical_path": [],
        }

    def fake_levels(verilog_text, top, *, key=None, use_cache=True):
        seen["levels"] = (verilog_text, key)
        return {"logic_levels": 3}

    monkeypatch.setattr(timing, "fmax", fake_fmax)
    monkeypatch.setattr(timing, "logic_levels", fake_levels)
    timing.unit_timing(config, "engine")
    assert seen == {"fmax": (ecp5_text, key), "levels": (text, key)}
