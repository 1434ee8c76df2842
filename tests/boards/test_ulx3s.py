"""boards.ulx3s: the open-flow board's bitstream, built with PyPI tools only (yowasp Yosys, nextpnr, ecppack)."""

import json
import shutil

import pytest

from pezo.boards import ulx3s
from pezo.golden.config import PerturbConfig


def test_tools_come_from_this_python():
    env = ulx3s.tool_environment()
    assert set(env) == {"YOSYS", "NEXTPNR_ECP5", "ECPPACK"}
    assert all("yowasp" in path for path in env.values())


@pytest.mark.synth
@pytest.mark.slow
def test_stream_top_builds_to_a_bitstream(sim_build):
    # yowasp tools see their own /tmp, so the build lives under the checkout's build/ (relative paths)
    out = sim_build.parent / "test-ulx3s"
    shutil.rmtree(out, ignore_errors=True)
    result = ulx3s.build_bitstream(PerturbConfig(strategy="pregen"), out)
    bitstream = out / "top.bit"
    assert result["bitstream"] == str(bitstream) and result["bytes"] == bitstream.stat().st_size > 100_000
    assert b"\xbd\xb3" in bitstream.read_bytes()[:4096]  # the ECP5 bitstream preamble
    assert result["fmax_mhz"] > ulx3s.CLOCK_HZ / 1e6  # meets the board's 25 MHz
    assert json.loads((out / "config.json").read_text())["config"]["strategy"] == "pregen"
    assert "top.lpf" in result["files"]
