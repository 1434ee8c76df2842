"""boards.ulx3s: the open-flow board's bitstream, built with PyPI tools only (yowasp Yosys, nextpnr, ecppack)."""

import json

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
