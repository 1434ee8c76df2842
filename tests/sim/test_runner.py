"""``sim.runner.write_verilog``: a conversion (Amaranth's Verilog without its unread wires) is reused only for the
same component class, config and sources."""

from amaranth.back import verilog

from pezo.golden.config import PerturbConfig
from pezo.hw.rng.urng import URNGArray
from pezo.sim.netlist import drop_unread_wires
from pezo.sim.runner import write_verilog


def test_write_verilog_converts_once_per_component_and_config(tmp_path, monkeypatch):
    config = PerturbConfig(n_rngs=3, rng_bits=5)
    path = write_verilog(URNGArray(config), "pezo_urng", tmp_path, config)
    text = path.read_text()
    assert text == drop_unread_wires(verilog.convert(URNGArray(config), name="pezo_urng", emit_src=False))
    conversions = []
    real_convert = verilog.convert
    monkeypatch.setattr(verilog, "convert", lambda *a, **k: conversions.append(a) or real_convert(*a, **k))
    assert write_verilog(URNGArray(config), "pezo_urng", tmp_path, config).read_text() == text
    assert conversions == []  # the same class, config and sources: the text on disk is reused
    other = config.replace(seed=9)
    changed = write_verilog(URNGArray(other), "pezo_urng", tmp_path, other).read_text()
    expected = drop_unread_wires(real_convert(URNGArray(other), name="pezo_urng", emit_src=False))
    assert len(conversions) == 1 and changed == expected
    assert changed != text
