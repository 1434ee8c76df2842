"""Yosys resources of the engine top (``boards.flow.report.board_report``, ``pezo report --unit board``)."""

from __future__ import annotations

import pytest

from pezo.boards.flow.report import G_PRODUCTS, board_report
from pezo.golden.engine.nets import net_config


@pytest.mark.synth
@pytest.mark.slow
def test_engine_top_resources_have_the_engines_dsps_and_block_rams():
    cfg = net_config("digits-mlp", strategy="otf")
    r = board_report(cfg)
    assert (r["unit"], r["strategy"], r["net"]) == ("board", "engine-otf", "digits-mlp")
    assert all(isinstance(r[k], int) for k in ("LUT", "FF", "BRAM", "DSP"))
    # one DSP48E2 per MAC and two per lane for g * p (its two partial products): the AXI side adds none
    assert r["DSP"] == cfg.array.macs + G_PRODUCTS * cfg.array.cols, r["cells"]
    assert r["BRAM"] >= 1 and r["LUT"] > 0 and r["FF"] > 0
    if "axi_overhead" in r:
        assert r["axi_overhead"]["DSP"] == 0 and r["axi_overhead"]["LUT"] > 0, r["axi_overhead"]
