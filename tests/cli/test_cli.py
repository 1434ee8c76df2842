"""The pezo CLI: help, contracts (JSON keys), bad input (one line, exit 2, nothing written), outputs."""

import json
import subprocess
import sys

import pytest

from pezo.cli.main import main
from pezo.cli.output import MARKER


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_subcommands():
    proc = subprocess.run([sys.executable, "-m", "pezo.cli.main", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    for sub in ("build", "report", "verilog", "simulate"):
        assert sub in proc.stdout


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["report", "--n-rngs", "0"], "--n-rngs must be in 1..1024"),
        (["report", "--rng-bits", "2"], "--rng-bits must be in 3..32"),
        (["report", "--rng-bits", "40"], "--rng-bits must be in 3..32"),
        (["report", "--seed", "0"], "--seed must be in 1..16383"),
        (["report", "--strategy", "uniform"], "--strategy must be one of otf, pregen, gaussian"),
        (["report", "--n-rngs", "2.5"], "--n-rngs must be an integer in 1..1024, got '2.5'"),
        (["report", "--rng-bits", "eight"], "--rng-bits must be an integer in 3..32"),
        (["report", "--n-rngs", "256", "--rng-bits", "8"], "--n-rngs must be in 1..255"),
        (["simulate", "--cycles", "0"], "cycles must be an integer in 1..10000000"),
        (["build", "--seed", "-3", "--out", "/tmp/pezo-never-written"], "--seed must be in 1..16383"),
        (["report", "--eps-shift", "25", "--unit", "stream"], "--eps-shift must be in 0..24, got 25"),
        (["report", "--unit", "fpga"], "unit must be one of generator, stream, scale, host, got 'fpga'"),
        (["report", "--strategy", "pregen", "--unit", "scale"], "unit 'scale' (the otf scale LUT) needs strategy otf"),
        (["report", "--unit", "stream", "--rng-bits", "20"], "--rng-bits must be in 3..16 for the scale LUT"),
        (["report", "--strategy", "pregen", "--pool-size", "0"], "--pool-size must be in 8..1048576"),
        (["report", "--strategy", "pregen", "--lanes", "6", "--banks", "4"], "--banks must be a power of two dividing"),
        (["report", "--strategy", "gaussian", "--lanes", "0"], "--lanes must be in 1..1024"),
        (["report", "--lfsr-leap", "15"], "--lfsr-leap must be in 1..14, got 15"),
        (["report", "--rng-bits", "12", "--lfsr-leap", "12"], "--lfsr-leap must be coprime to 2^12 - 1 = 4095"),
        (["report", "--strategy", "pregen", "--lfsr-leap", "2"], "--lfsr-leap applies to --strategy otf only"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, needle, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("pezo: error: ") and needle in err, err


def test_bad_input_writes_nothing(tmp_path, capsys):
    out = tmp_path / "v"
    code, _, err = run(["verilog", "--n-rngs", "0", "--out", str(out)], capsys)
    assert code == 2 and "--n-rngs" in err and not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_bad_input_no_traceback_via_console_script():
    proc = subprocess.run(
        [sys.executable, "-m", "pezo.cli.main", "report", "--rng-bits", "99"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert proc.stderr == "pezo: error: --rng-bits must be in 3..32, got 99\n"


def test_verilog_writes_and_protects_directories(tmp_path, capsys):
    out = tmp_path / "gen"
    code, text, _ = run(["verilog", "--n-rngs", "4", "--rng-bits", "5", "--rewind", "--out", str(out)], capsys)
    assert code == 0 and "wrote" in text
    verilog = (out / "pezo_urng_array.v").read_text()
    assert "module pezo_urng_array" in verilog and "restore" in verilog
    assert json.loads((out / "pezo_urng_array.json").read_text())["n_rngs"] == 4
    assert (out / MARKER).exists()
    # pezo's own output is replaced (and says so)
    code, text, _ = run(["verilog", "--n-rngs", "5", "--rng-bits", "5", "--out", str(out)], capsys)
    assert code == 0 and "replaced" in text
    assert json.loads((out / "pezo_urng_array.json").read_text())["n_rngs"] == 5
    # a user's directory is not
    user = tmp_path / "mine"
    user.mkdir()
    (user / "notes.txt").write_text("keep")
    code, _, err = run(["verilog", "--out", str(user)], capsys)
    assert code == 2 and "not written by pezo" in err
    assert [p.name for p in user.iterdir()] == ["notes.txt"]
    code, _, err = run(["verilog", "--out", str(user), "--force"], capsys)  # --force never deletes the user's files
    assert code == 2 and "(it holds notes.txt)" in err and (user / "notes.txt").read_text() == "keep"


@pytest.mark.synth
def test_report_json_contract_and_cache(capsys):
    argv = ["report", "--strategy", "otf", "--n-rngs", "32", "--rng-bits", "14", "--json", "--no-timing"]
    code, out, _ = run(argv, capsys)
    assert code == 0
    first = json.loads(out)
    for key in ("LUT", "FF", "BRAM", "DSP"):
        assert isinstance(first[key], int) and first[key] >= 0
    assert first["n_rngs"] == 32 and first["rng_bits"] == 14 and first["strategy"] == "otf"
    code, out, _ = run(argv, capsys)
    second = json.loads(out)
    assert second["cached"] is True
    assert {k: second[k] for k in ("LUT", "FF", "BRAM", "DSP")} == {k: first[k] for k in ("LUT", "FF", "BRAM", "DSP")}


@pytest.mark.synth
def test_report_rewind_shows_overhead(capsys):
    code, out, _ = run(["report", "--n-rngs", "32", "--rng-bits", "8", "--rewind", "--json", "--no-timing"], capsys)
    r = json.loads(out)
    assert code == 0 and r["rewind"] is True
    assert r["overhead"]["FF"] == r["FF"] - r["bare"]["FF"]
    code, text, _ = run(["report", "--n-rngs", "32", "--rng-bits", "8", "--rewind", "--no-timing"], capsys)
    assert "rewind overhead" in text and "within budget: yes" in text


@pytest.mark.synth
def test_report_table_main_job(tmp_path, capsys, simulators):
    """`pezo report` without generator options: every strategy, Table-6 shape, JSON list, CSV, PNG, --out."""
    out = tmp_path / "report"
    csv_path, png = tmp_path / "t.csv", tmp_path / "t.png"
    code, text, err = run(
        ["report", "--out", str(out), "--csv", str(csv_path), "--plot", str(png), "--quiet", "--no-timing"], capsys
    )
    assert code == 0, err
    assert "| otf 32 x 14 |" in text and "PeZO Table 6" in text and "% of ZCU102" in text
    assert "Three strategies at default sizes" in text and "133120 LUT / 69632 FF" in text
    payload = json.loads((out / "resources.json").read_text())
    rows = {r["design"]: r for r in payload["rows"]}
    assert len(rows) == 21
    trainers = [r for r in rows.values() if r["unit"] == "board"]  # what make run writes, under "ZCU102 logic"
    assert {r["strategy"] for r in trainers} == {"engine-otf", "engine-pregen"} and "the on-device trainer" in text
    assert all(r["net"] == "digits-mlp" and r["batch"] == 128 and r["DSP"] >= 72 for r in trainers)
    engines = [r for r in rows.values() if r["unit"] == "engine"]
    assert {r["strategy"] for r in engines} == {"engine-otf", "engine-pregen"}
    assert all(r["DSP"] == r["analytical_DSP"] == 64 + 2 * 8 for r in engines)  # a DSP per MAC, two per lane
    assert "ZO engine 8x8 INT8 + otf stream" in text
    assert all(r["within_budget"] for r in rows.values() if r["within_budget"] != "")
    assert rows["pregen 4095x12b/8 banks"]["BRAM"] == 8
    mezo = rows["gaussian x 1024 (MeZO)"]
    assert mezo["extrapolated"] and mezo["LUT"] == 32 * rows["gaussian x 32"]["LUT"]
    assert mezo["paper_LUT"] == 133120 and abs(mezo["LUT_pct"] - 100 * mezo["LUT"] / 274080) < 1e-9
    assert rows["gaussian x 32"]["LUT"] == 32 * rows["gaussian x 1"]["LUT"]  # linear: independent generators
    assert rows["otf 32 x 14"]["analytical_FF"] == 32 * 14 + 5 and rows["otf 32 x 14"]["paper_FF"] == 512
    for strategy in ("otf", "pregen", "gaussian"):
        assert any(r["unit"] == "host" and r["strategy"] == strategy for r in rows.values())
    streams = [r for r in rows.values() if r["unit"] == "stream"]
    if "icarus" in simulators:
        assert all(r["activity"] > 0 and r["activity_per_value"] > 0 for r in streams)
    else:
        assert "without the switching-activity proxy" in err
    assert csv_path.read_text().count("\n") == 22 == (out / "resources.csv").read_text().count("\n")
    assert png.read_bytes()[:4] == b"\x89PNG" and (out / "resources.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "resources.md").read_text().startswith("Resources - ")
    # --json: a list of objects with the foundation keys plus strategy
    code, text, _ = run(["report", "--json", "--no-activity", "--no-timing"], capsys)
    listing = json.loads(text)
    assert isinstance(listing, list) and len(listing) == 21
    for row in listing:
        assert {"LUT", "FF", "BRAM", "DSP", "strategy", "unit", "design"} <= row.keys()
        assert all(isinstance(row[k], int) for k in ("LUT", "FF", "BRAM", "DSP"))


@pytest.mark.synth
def test_report_table_with_a_vivado_run(tmp_path, capsys):
    """A Vivado run directory of pezo build adds a [vivado] row with its post-place figures."""
    from pathlib import Path

    run_dir = tmp_path / "run"
    code, _, err = run(["build", "--out", str(run_dir), "--no-vivado"], capsys)
    assert code == 0, err
    fixture = Path(__file__).parents[1] / "fixtures" / "vivado" / "xczu48dr_design_1_wrapper_utilization_placed.rpt"
    (run_dir / "top_utilization_place.rpt").write_text(fixture.read_text())
    code, text, err = run(["report", "--vivado", str(run_dir), "--json", "--no-activity", "--no-timing"], capsys)
    assert code == 0, err
    row = json.loads(text)[-1]
    assert row["source"] == "vivado" and row["LUT"] == 29992 and row["BRAM"] == 67 and row["strategy"] == "otf"
    assert row["fmax_mhz"] is None  # no timing summary yet
    timing = Path(__file__).parents[1] / "fixtures" / "vivado" / "xczu3eg_lpm_timing_summary_place.rpt"
    (run_dir / "top_timing.rpt").write_text(timing.read_text())
    code, text, err = run(["report", "--vivado", str(run_dir), "--json", "--no-activity", "--no-timing"], capsys)
    row = json.loads(text)[-1]
    assert code == 0 and row["fmax_source"] == "vivado" and row["fmax_mhz"] == 223.26 and row["logic_levels"] == 15
    assert row["throughput_values_per_s"] == pytest.approx(32 * 223.26e6)
    empty = tmp_path / "empty"
    empty.mkdir()
    code, text, err = run(["report", "--vivado", str(empty), "--no-activity", "--no-timing"], capsys)
    assert code == 2 and text == "" and "no Vivado utilization report" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["report", "--strategy", "otf", "--csv", "x.csv"], "belong to the comparison table"),
        (["report", "--plot", "x.svg"], "the plot is a PNG"),
        (["report", "--csv", "/nonexistent/dir/x.csv"], "the directory /nonexistent/dir does not exist"),
        (["report", "--strategy", "gaussian", "--rng-bits", "8"], "--rng-bits applies to --strategy otf only"),
    ],
)
def test_report_table_bad_input(argv, needle, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and needle in err and err.count("\n") == 1, err


@pytest.mark.rtl
def test_simulate_reports_speed(simulators, require_simulator, capsys):
    simulator = "icarus" if "icarus" in simulators else "verilator"
    require_simulator(simulator)
    code, out, _ = run(
        [
            "simulate",
            "--n-rngs",
            "4",
            "--rng-bits",
            "5",
            "--rewind",
            "--cycles",
            "300",
            "--simulator",
            simulator,
            "--json",
        ],
        capsys,
    )
    assert code == 0
    result = json.loads(out)["simulators"][simulator]
    assert result["cycles"] == 300 and result["mismatches"] == 0 and result["cycles_per_s"] > 0


@pytest.mark.synth
def test_report_gaussian_json_contract(capsys):
    code, out, _ = run(["report", "--strategy", "gaussian", "--lanes", "2", "--json", "--no-timing"], capsys)
    assert code == 0
    r = json.loads(out)
    for key in ("LUT", "FF", "BRAM", "DSP"):
        assert isinstance(r[key], int)
    assert r["strategy"] == "gaussian" and r["unit"] == "generator" and r["FF"] == 2 * 127
    assert r["extrapolated_1024"]["FF"] == 1024 * 127 and r["within_budget"]
    code, text, _ = run(["report", "--strategy", "gaussian", "--lanes", "2"], capsys)
    assert "1024 generators (MeZO, extrapolated linearly)" in text


@pytest.mark.synth
def test_report_stream_and_scale_units(capsys):
    code, out, _ = run(
        [
            "report",
            "--strategy",
            "pregen",
            "--pool-size",
            "255",
            "--lanes",
            "4",
            "--banks",
            "2",
            "--unit",
            "stream",
            "--json",
        ],
        capsys,
    )
    r = json.loads(out)
    assert code == 0 and r["unit"] == "stream" and r["BRAM"] >= 1 and r["LUTRAM"] == 0
    code, text, _ = run(["report", "--n-rngs", "8", "--rng-bits", "8", "--perturb-dim", "7", "--unit", "scale"], capsys)
    assert code == 0 and "ROM style logic" in text


@pytest.mark.rtl
def test_simulate_gaussian_prints_statistics(simulators, require_simulator, capsys):
    simulator = "icarus" if "icarus" in simulators else "verilator"
    require_simulator(simulator)
    code, out, _ = run(
        ["simulate", "--strategy", "gaussian", "--lanes", "2", "--cycles", "400", "--simulator", simulator], capsys
    )
    assert code == 0 and "0 mismatches" in out and "samples: mean" in out
