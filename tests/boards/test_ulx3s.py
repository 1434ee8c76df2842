"""boards.ulx3s: the open-flow board's bitstream, built with PyPI tools only (yowasp Yosys, nextpnr, ecppack)."""

import json
import os

import pytest

from pezo.boards import ulx3s
from pezo.boards.flow import tools
from pezo.cli.main import main


def test_tools_come_from_this_python():
    env = ulx3s.tool_environment()
    assert set(env) == {"YOSYS", "NEXTPNR_ECP5", "ECPPACK", "YOWASP_CACHE_DIR"}
    assert all("yowasp" in env[tool] for tool in ("YOSYS", "NEXTPNR_ECP5", "ECPPACK"))
    assert env["YOWASP_CACHE_DIR"] == str(tools.shared_cache())


@pytest.mark.parametrize(
    "extra,needle",
    [
        (["--saif", "x.saif"], "--saif does not apply to --board ulx3s-85f"),
        (["--no-vivado"], "--no-vivado does not apply to --board ulx3s-85f"),
        (["--rewind"], "--rewind does not apply to --board ulx3s-85f"),
    ],
)
def test_vivado_options_do_not_apply_to_the_open_flow_board(extra, needle, tmp_path, capsys):
    assert main(["build", "--board", "ulx3s-85f", "--out", str(tmp_path / "x"), *extra]) == 2
    assert needle in capsys.readouterr().err and not (tmp_path / "x").exists()


@pytest.mark.synth
@pytest.mark.slow
def test_pezo_build_writes_the_ulx3s_bitstream(tmp_path, capsys):
    # under /tmp on purpose: the yowasp tools mount a /tmp of their own, and the build must work there too (it
    # recursed without end when pezo's cache was under /tmp as well)
    out = tmp_path / "test-ulx3s"
    assert main(["build", "--board", "ulx3s-85f", "--strategy", "pregen", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    bitstream = out / "top.bit"
    assert f"bitstream: {bitstream} ({bitstream.stat().st_size} bytes)" in printed
    assert bitstream.stat().st_size > 100_000
    assert b"\xbd\xb3" in bitstream.read_bytes()[:4096]  # the ECP5 bitstream preamble
    meta = json.loads((out / "config.json").read_text())
    assert meta["config"]["strategy"] == "pregen" and meta["fmax_mhz"] > ulx3s.CLOCK_HZ / 1e6  # meets 25 MHz
    assert (out / "top.lpf").exists()


@pytest.mark.parametrize(
    "extra,needle",
    [
        (["--baud", "7"], "--baud must be in 382..6250000 and within 2 %"),
        (["--baud", "3000000"], "--baud must be in 382..6250000 and within 2 %"),
        (["--examples", "1000"], "--examples: capacity must be a power of two in 128..32768 examples, got 1000"),
        (["--no-vivado"], "--no-vivado does not apply to --board ulx3s-85f"),
    ],
)
def test_the_trainer_build_checks_its_options_before_building(extra, needle, tmp_path, capsys):
    assert main(["build", "--board", "ulx3s-85f", "--design", "engine", "--out", str(tmp_path / "x"), *extra]) == 2
    err = capsys.readouterr().err
    assert needle in err and "building" not in err and not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    "extra,needle",
    [
        (
            ["--net", "digits-cnn"],
            "--net digits-cnn: layer 0 is a convolution, so the ulx3s-85f trainer's data memory holds its im2col'd "
            "patches (1024 bytes per example, not 64); at batch 128 the engine's batch banks take 128 DP16KD and with "
            "the smallest data memory (128 examples, 65) the trainer needs about 225 of the ECP5-85F's 208: --batch 64 "
            "fits 128 examples",
        ),
        (
            ["--net", "digits-cnn", "--batch", "32", "--examples", "512"],
            "--examples 512: --net digits-cnn's data memory holds its im2col'd patches (1024 bytes per example, not "
            "64), 257 DP16KD for 512 examples, and the trainer would need about 321 of the ECP5-85F's 208: at most 256 "
            "examples fit at batch 32",
        ),
    ],
)
def test_a_conv_net_whose_patches_do_not_fit_the_block_ram_is_refused(extra, needle, tmp_path, capsys):
    """Issue 33: the data memory holds a conv layer 0's patches (``trainer_ebr``); a trainer that would not fit the
    ECP5-85F's 208 DP16KD is one line with the numbers, before any tool runs."""
    assert main(["build", "--board", "ulx3s-85f", "--design", "engine", "--out", str(tmp_path / "x"), *extra]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and not (tmp_path / "x").exists(), err


def test_the_trainer_block_ram_estimate_and_a_conv_nets_default_capacity():
    """``trainer_ebr`` against Yosys ``synth_ecp5`` counts (its memory mapping): the data memory 2 KiB per DP16KD
    (digits-cnn's 1 024-byte patches: 16 examples 8, as counted), the batch banks (digits-cnn batch 16: 16, 128: 128;
    the engine alone counted 30 and 149), the rest bounded by ``ENGINE_OTHER_EBR`` (counted 14 and 21). A conv net's
    default data memory is the largest that fits: digits-cnn at batch 16 or 32, 256 examples; a dense net keeps the
    2 048 default."""
    from pezo.boards.ulx3s_engine import ECP5_EBR, ENGINE_OTHER_EBR, largest_capacity, trainer_ebr
    from pezo.cli.board import uart_trainer_capacity
    from pezo.golden.engine.nets import net_config

    cnn16, cnn128 = net_config("digits-cnn", batch=16), net_config("digits-cnn", batch=128)
    assert trainer_ebr(cnn16, 256) == {
        "data_memory": 129,
        "batch_banks": 16,
        "engine_other": ENGINE_OTHER_EBR,
        "total": 177,
        "available": ECP5_EBR,
    }
    assert trainer_ebr(cnn128, 128)["batch_banks"] == 128 and 149 - 128 <= ENGINE_OTHER_EBR
    assert largest_capacity(cnn16) == largest_capacity(net_config("digits-cnn", batch=32)) == 256
    assert largest_capacity(cnn128) is None
    assert uart_trainer_capacity(cnn16, None) == 256 and uart_trainer_capacity(cnn16, 64) == 64
    assert uart_trainer_capacity(net_config("digits-mlp", batch=128), None) == 2048
    assert trainer_ebr(net_config("digits-mlp", batch=128), 2048)["data_memory"] == 65  # the build's 64 + 1


def test_link_options_do_not_apply_elsewhere(tmp_path, capsys):
    assert main(["build", "--board", "ulx3s-85f", "--baud", "115200", "--out", str(tmp_path / "x")]) == 2
    assert "--baud does not apply to --design stream" in capsys.readouterr().err
    assert main(["build", "--design", "engine", "--examples", "256", "--out", str(tmp_path / "x")]) == 2
    assert "--examples applies to --board ulx3s-85f only" in capsys.readouterr().err


def test_nextpnr_utilisation_is_read_from_its_last_report():
    from pezo.boards.ulx3s_engine import ecp5_utilisation

    log = (
        "Info: Device utilisation:\nInfo: \t          TRELLIS_COMB:   99/  83640     0%\n"
        "Info: Device utilisation:\nInfo: \t          TRELLIS_IO:      11/    365     3%\n"
        "Info: \t              DP16KD:     103/    208    49%\nInfo: \t          MULT18X18D:      82/    156    52%\n"
        "Info: \t          TRELLIS_FF:    8264/  83640     9%\nInfo: \t        TRELLIS_COMB:   15979/  83640    19%\n"
    )
    got = ecp5_utilisation(log)
    assert (got["LUT4"], got["FF"], got["EBR"], got["MULT18"], got["IO"]) == (15979, 8264, 103, 82, 11)
    assert got["EBR_available"] == 208


@pytest.mark.synth
@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("PEZO_TRAINER_BITSTREAM") != "1",
    reason="the ULX3S trainer bitstream (about 20 min of Yosys + nextpnr on 2 cores, more than the rest of the suite's "
    "budget) runs with PEZO_TRAINER_BITSTREAM=1; last measured at 63cb48f: 621 258 bytes, 74.0 MHz against 25 MHz "
    "(docs/hardware.md, 'The whole trainer on the ULX3S')",
)
def test_pezo_build_writes_the_ulx3s_trainer_bitstream(tmp_path, capsys):
    """The whole trainer (batch 16, a 256-example data memory) placed, routed and packed; it meets 25 MHz."""
    out = tmp_path / "trainer"
    argv = ["build", "--board", "ulx3s-85f", "--design", "engine", "--batch", "16", "--examples", "256"]
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    bitstream = out / "top.bit"
    assert f"bitstream: {bitstream} ({bitstream.stat().st_size} bytes)" in printed and "(meets it)" in printed
    assert b"\xbd\xb3" in bitstream.read_bytes()[:4096]
    meta = json.loads((out / "config.json").read_text())
    assert meta["design"] == "engine" and meta["link"] == "uart" and meta["capacity"] == 256
    assert meta["fmax_mhz"] > ulx3s.CLOCK_HZ / 1e6 and meta["resources"]["MULT18"] > 0
    assert f"openFPGALoader -b ulx3s '{bitstream}'" in printed and "--uart /dev/ttyUSB0" in printed


def test_a_failed_flow_names_its_step_and_quotes_its_log(tmp_path):
    """``pezo build`` removes its staging directory when the flow fails: the error carries the log's end."""
    from pezo.boards.ulx3s import flow_failure

    assert flow_failure(tmp_path, 1) == "the ULX3S flow failed in Yosys (build_top.sh exit 1)"
    (tmp_path / "top.rpt").write_text("".join(f"yosys line {i}\n" for i in range(40)))
    said = flow_failure(tmp_path, 1)
    assert said.startswith("the ULX3S flow failed in Yosys (build_top.sh exit 1); top.rpt ends:\n")
    assert "yosys line 39" in said and "yosys line 15" in said and "yosys line 14\n" not in said
    (tmp_path / "top.tim").write_text("Info: routing\nERROR: Failed to route net clk\n")
    assert flow_failure(tmp_path, 1).endswith("top.tim ends:\nInfo: routing\nERROR: Failed to route net clk")
    (tmp_path / "top.config").write_text(".device LFE5U-85F\n")
    assert flow_failure(tmp_path, 2) == "the ULX3S flow failed in ecppack (build_top.sh exit 2)"


def test_the_ulx3s_build_keeps_the_products_inferred(tmp_path):
    """The ULX3S platform pezo builds with elaborates the trainer without MULT18X18D instances (Yosys 0.70's abc9
    asserts on the trainer top with them); Amaranth's plain ECP5 platform, and the timing flow's target, select them."""
    from amaranth_boards.ulx3s import ULX3S_85F_Platform

    from pezo.boards.flow.synth import KEEP_REPLICAS
    from pezo.boards.flow.timing import ECP5
    from pezo.boards.ulx3s_engine import ULX3SEngineTop
    from pezo.golden.engine.nets import net_config
    from pezo.hw.engine.dsp import is_ecp5

    assert not is_ecp5(ulx3s.ulx3s_platform()) and is_ecp5(ULX3S_85F_Platform()) and is_ecp5(ECP5)
    top = ULX3SEngineTop(net_config("digits-mlp", batch=16), 115200, 64)
    plan = ulx3s.ulx3s_platform().build(top, name="top", do_build=False, script_after_read=f"proc; {KEEP_REPLICAS}")
    plan.extract(str(tmp_path))
    rtlil = (tmp_path / "top.il").read_text()
    assert "cell $mul" in rtlil and "MULT18X18D" not in rtlil  # the products inferred (Yosys maps them)
