"""boards.flow.power: the switching-activity proxy (toggle counting, net classes, SAIF, per-strategy runs)."""

import re

import pytest

from pezo.boards.flow import power
from pezo.boards.flow.power import toggle_counts, write_saif
from pezo.golden.config import PerturbConfig
from pezo.golden.rng.perturb import PerturbationStream, stream_lanes

SMALL = {
    "otf": PerturbConfig(strategy="otf", n_rngs=8, rng_bits=8, perturb_dim=64),
    "pregen": PerturbConfig(strategy="pregen", pool_size=255, lanes=4, banks=2, perturb_dim=64),
    "gaussian": PerturbConfig(strategy="gaussian", lanes=2, perturb_dim=64),
    "otf-block-rom": PerturbConfig(strategy="otf", n_rngs=4, rng_bits=10, perturb_dim=64),
}
FAKE_RESOURCES = {"LUT": 100, "FF": 50, "BRAM": 2, "DSP": 0, "CARRY": 4}

# A hand-written VCD with known counts. Window: measure high from 10 to 40 ps (30 ps); rising clock
# edges inside it at 15, 25, 35. "bus" is also dumped as sub.alias (same id code).
VCD = """$timescale 1ps $end
$scope module pezo_power_tb $end
$scope module dut $end
$var wire 1 ! clk $end
$var wire 4 " bus [3:0] $end
$var reg 1 # q $end
$scope module sub $end
$var wire 4 " alias [3:0] $end
$var wire 1 $ \\odd[1] $end
$upscope $end
$upscope $end
$var reg 1 % measure $end
$upscope $end
$enddefinitions $end
#0
$dumpvars
0!
bxxxx "
x#
0$
0%
$end
#5
1!
b0 "
#10
0!
1%
b1 "
#15
1!
1#
#20
0!
b11 "
#25
1!
0#
b1x "
#30
0!
b10 "
1$
#35
1!
b1010 "
b110 "
#40
0!
0%
b0 "
"""


@pytest.fixture
def handwritten(tmp_path):
    path = tmp_path / "tiny.vcd"
    path.write_text(VCD)
    return path


def test_toggle_counts_known_vcd(handwritten):
    activity = toggle_counts(handwritten)
    assert (activity.start_ps, activity.end_ps, activity.duration_ps, activity.edges) == (10, 40, 30, 3)
    assert set(activity) == {"clk", "bus", "q", "sub.alias", "sub.odd[1]"}
    bus = activity["bus"]
    assert (bus.width, bus.lsb) == (4, 0)
    # bit0: 0->1 at the window's first instant counts, 1->x and x->0 do not; bit2: only the final
    # value of the timestamp 35 counts (b1010 then b0110: bit3 never toggles)
    assert bus.toggles == [1, 1, 1, 0]
    assert bus.t1 == [15, 20, 5, 0]
    assert bus.tx == [5, 0, 0, 0]
    assert bus.t0 == [10, 10, 25, 30]
    assert bus.high_edges == [2, 2, 0, 0]  # sampled just before 15 (0001), 25 (0011), 35 (0010)
    q = activity["q"]
    assert (q.toggles, q.t0, q.t1, q.tx, q.high_edges) == ([1], [15], [10], [5], [1])  # x->1 is no toggle
    odd = activity["sub.odd[1]"]  # an escaped name with brackets: one 1-bit net
    assert (odd.width, odd.scope, odd.reference, odd.toggles, odd.t1) == (1, ("sub",), "odd[1]", [1], [10])
    assert activity["clk"].toggles == [6]  # 10 (1->0 at the window start), 15, 20, 25, 30, 35
    assert activity["sub.alias"].toggles == bus.toggles
    for net in activity.values():
        assert all(a + b + c == 30 for a, b, c in zip(net.t0, net.t1, net.tx))
    assert bus.bit_name(2) == "bus[2]" and q.bit_name(0) == "q"


def test_toggle_counts_without_window(handwritten):
    activity = toggle_counts(handwritten, window=None)
    assert (activity.start_ps, activity.end_ps, activity.edges) == (0, 40, 4)
    assert activity["bus"].toggles == [1, 1, 1, 0]  # x->0 at 5 is no toggle
    assert activity["clk"].toggles == [7]


def _saif_nets(text):
    return re.findall(r"\((\S+) \(T0 (\d+)\) \(T1 (\d+)\) \(TX (\d+)\) \(TC (\d+)\) \(IG 0\)\)", text)


def _check_balanced(text):
    depth = 0
    for char in text:
        depth += (char == "(") - (char == ")")
        assert depth >= 0
    assert depth == 0


def test_write_saif_known_vcd(handwritten, tmp_path):
    activity = toggle_counts(handwritten)
    path = write_saif(
        activity,
        tmp_path / "tiny.saif",
        activity.duration_ps,
        instance_path=("system", "unit"),
        design="tiny",
        date="today",
    )
    text = path.read_text()
    _check_balanced(text)
    for header in (
        '(SAIFVERSION "2.0")',
        '(DIRECTION "backward")',
        '(DESIGN "tiny")',
        '(DATE "today")',
        '(VENDOR "pezo")',
        "(DIVIDER / )",
        "(TIMESCALE 1 ps)",
        "(DURATION 30)",
    ):
        assert header in text
    assert re.search(r"\(INSTANCE system\s+\(INSTANCE unit\s+\(NET", text)
    assert re.search(r"\(INSTANCE sub\s+\(NET\s+\(alias\\\[0\\\]", text)
    nets = {name: tuple(map(int, rest)) for name, *rest in _saif_nets(text)}
    assert nets["bus\\[0\\]"] == (10, 15, 5, 1)
    assert nets["bus\\[3\\]"] == (30, 0, 0, 0)
    assert nets["q"] == (15, 10, 5, 1)
    assert nets["odd\\[1\\]"] == (20, 10, 0, 1)  # the escaped 1-bit name, no bit index
    assert len(_saif_nets(text)) == 1 + 4 + 1 + 4 + 1


def test_representative_stimulus_consumes_exact_counts():
    for config in SMALL.values():
        stimulus = power.representative_stimulus(config, steps=2)
        vectors = -(-config.perturb_dim // stream_lanes(config))
        assert all(set(v) == {"en", "next", "rewind", "sign"} for v in stimulus)
        assert stimulus[: power.IDLE_CYCLES] == [{"en": 0, "next": 0, "rewind": 0, "sign": 0}] * power.IDLE_CYCLES
        model = PerturbationStream(config)
        commands, consumed = [], []
        for v in stimulus:
            if v["next"] or v["rewind"]:
                commands.append(("next" if v["next"] else "rewind", v["sign"]))
                consumed.append(0)
            elif v["en"] and model.valid and consumed:
                consumed[-1] += 1
            model.step(**{k: bool(x) for k, x in v.items()})
        assert commands == [("next", 0), ("rewind", 1), ("rewind", 0)] * 2
        assert consumed == [vectors] * 6
    with pytest.raises(ValueError, match="steps"):
        power.representative_stimulus(SMALL["otf"], steps=0)


def test_simulate_vcd_needs_icarus(monkeypatch, tmp_path):
    monkeypatch.setattr(power.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match=r"apt-get install -y iverilog"):
        power.simulate_vcd("module m; endmodule", "m", [{"en": 0}], tmp_path)


def test_power_proxy_unit_must_be_stream():
    with pytest.raises(ValueError, match="unit must be 'stream'"):
        power.power_proxy(SMALL["pregen"], unit="generator")


@pytest.mark.rtl
def test_simulate_vcd_compile_error(require_simulator, tmp_path):
    require_simulator("icarus")
    with pytest.raises(RuntimeError, match="iverilog failed to compile broken"):
        power.simulate_vcd(
            "module broken(input clk, input rst, input en); wire x = ; endmodule", "broken", [{"en": 1}], tmp_path
        )


TINY = """
module tiny(input clk, input rst, input [3:0] a, output [3:0] y, output [1:0] k, output [1:0] f,
            output [1:0] g);
  reg [3:0] count = 4'd0;
  wire [3:0] sum = count + a;
  always @(posedge clk) count <= rst ? 4'd0 : sum;
  assign y = sum ^ a;
  (* rom_style = "block" *) reg [1:0] rom [0:15];
  (* rom_style = "logic" *) reg [1:0] lrom [0:15];
  integer i;
  initial for (i = 0; i < 16; i = i + 1) begin rom[i] = i; lrom[i] = 3 - i; end
  reg [1:0] k_r;
  always @(posedge clk) if (a[0]) k_r <= rom[count];
  assign k = k_r;
  reg [1:0] f_r;
  always @(posedge clk) f_r <= lrom[a];
  assign f = f_r;
  wire [1:0] g_async = lrom[count];
  assign g = g_async;
endmodule
"""


@pytest.mark.rtl
def test_classify_nets_known_design():
    classes = power.classify_nets(TINY, "tiny")
    expect = {
        "count[0]": "FF",
        "count[3]": "FF",
        "sum[0]": "LUT",
        "sum[3]": "LUT",
        "y[2]": "LUT",
        "a[1]": "input",
        "clk": "input",
        "rst": "input",
        "k_r[0]": "BRAM",
        "k_r[1]": "BRAM",
        "k[1]": "BRAM",
        "f_r[0]": "FF",
        "f[1]": "FF",
        "g_async[0]": "LUT",
        "g[1]": "LUT",
    }
    assert {key: classes.get(key) for key in expect} == expect
    net = power.netlist(TINY, "tiny")
    ports = {m["name"]: m["read_ports"] for m in net.memories}
    assert {m["name"]: m["block"] for m in net.memories} == {"rom": True, "lrom": False}
    (rom_port,) = ports["rom"]
    assert rom_port["clocked"] and rom_port["enable"] == net.nets["a"][0] and not rom_port["enable_inverted"]
    assert sorted((p["clocked"], p["enable"]) for p in ports["lrom"]) == [(False, "1"), (True, "1")]


@pytest.mark.rtl
@pytest.mark.parametrize("name", list(SMALL))
def test_stream_run_per_strategy(name, require_simulator, tmp_path, private_cache):
    require_simulator("icarus")
    from pezo.boards.flow.report import generator_verilog

    config = SMALL[name]
    verilog, top = generator_verilog(config, "stream")
    stimulus = power.representative_stimulus(config)
    activity = toggle_counts(power.simulate_vcd(verilog, top, stimulus, tmp_path / "sim"))
    assert activity.edges == len(stimulus)
    assert activity.duration_ps == len(stimulus) * power.CLOCK_PERIOD_NS * 1000
    model, valid = PerturbationStream(config), 0  # the RTL's valid, seen at the edges, is the golden one
    for v in stimulus:
        valid += model.valid
        model.step(**{k: bool(x) for k, x in v.items()})
    assert activity["valid"].high_edges == [valid]

    net = power.netlist(verilog, top)
    joined = power.match_activity(activity, net)
    assert joined["unmatched"] == [] and joined["alias_mismatches"] == []
    assert joined["classified_fraction"] == 1.0
    toggles, bits = {}, {}
    for bit, (count, _) in joined["bits"].items():
        cls = power.bit_class(net, bit)
        toggles[cls] = toggles.get(cls, 0) + count
        bits[cls] = bits.get(cls, 0) + 1
    assert toggles["LUT"] > 0 and toggles["FF"] > 0
    assert (toggles.get("BRAM", 0) > 0) == (name == "pregen")  # the pool's banks feed the lanes
    if name == "otf-block-rom":  # the scale LUT's output register (its k may repeat: no toggles needed)
        assert bits["BRAM"] == net.memories[0]["width"]
    else:
        assert (bits.get("BRAM", 0) > 0) == (name == "pregen")

    saif = write_saif(activity, tmp_path / "run.saif", activity.duration_ps, design=top)
    text = saif.read_text()
    _check_balanced(text)
    saif_tc = [int(tc) for *_, tc in _saif_nets(text)]
    assert sorted(saif_tc) == sorted(t for a in activity.values() for t in a.toggles)
    assert sum(saif_tc) == sum(a.total_toggles for a in activity.values())

    result = power.power_proxy(config, resources=FAKE_RESOURCES, use_cache=False)
    assert result["note"] == "relative switching-activity proxy, not watts"
    assert result["cycles"] == len(stimulus) and result["unmatched_nets"] == []
    assert result["toggles"] == {c: toggles.get(c, 0) for c in power.CLASSES}
    assert result["terms"]["clock"] == pytest.approx(power.W_CLK * FAKE_RESOURCES["FF"])
    assert result["activity_proxy"] == pytest.approx(sum(result["terms"].values()))
    assert result["values"] == 6 * -(-config.perturb_dim // stream_lanes(config)) * stream_lanes(config)
    per_value = result["activity_proxy"] * len(stimulus) / result["values"]
    assert result["activity_per_value"] == pytest.approx(per_value)
    reads = result["bram"]["mean_read_enable"]
    if name == "pregen":
        assert 0.9 < reads < 1.0  # the pool's ports read on en (every cycle of a pass, not between passes)
    elif name == "otf-block-rom":
        assert 0 < reads < 0.5  # the scale LUT reads once per perturbation start


@pytest.mark.rtl
def test_power_proxy_deterministic_and_cached(require_simulator, private_cache, monkeypatch):
    require_simulator("icarus")
    from pezo.boards.flow import report as boards_report

    calls = []

    def fake_report(config, use_cache=True, unit="generator"):
        calls.append((config, unit))
        return {**FAKE_RESOURCES, "strategy": config.strategy, "cached": True}

    monkeypatch.setattr(boards_report, "report", fake_report)
    config = SMALL["pregen"]
    first = power.power_proxy(config, use_cache=False)
    second = power.power_proxy(config, use_cache=False)
    cached = power.power_proxy(config)
    assert calls == [(config, "stream")] * 2  # the third call answers from the cache

    def numbers(result):
        return {k: v for k, v in result.items() if k not in ("timing", "cached")}

    assert numbers(first) == numbers(second)
    assert cached["cached"] and not second["cached"]
    assert numbers(cached) == numbers(second)
    assert first["synth"] == FAKE_RESOURCES
    assert list(private_cache.glob("power/*.json"))
