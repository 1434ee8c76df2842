"""``sim.runner.write_verilog``: a conversion (Amaranth's Verilog without its unread wires) is reused only for the
same component class, config and sources; every run holds its design's lock until its result is read."""

import json
import subprocess
import sys
import threading
from pathlib import Path

from amaranth.back import verilog

from pezo.golden.config import PerturbConfig
from pezo.hw.rng.urng import URNGArray
from pezo.sim import runner
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


_PROBE = """
import sys
from filelock import FileLock, Timeout
try:
    FileLock(sys.argv[1]).acquire(timeout=0)
except Timeout:
    sys.exit(3)
"""


def _lock_taken_elsewhere(lock) -> bool:
    """Whether another process finds ``lock`` held (it tries once, without waiting)."""
    return subprocess.run([sys.executable, "-c", _PROBE, str(lock)]).returncode == 3


def test_a_run_holds_its_designs_lock_from_the_verilog_to_the_result(tmp_path, monkeypatch):
    """Two processes sharing a cache must not build one directory at once or read each other's result: the
    run holds the design's lock while the simulator runs and until its result is read, then lets it go."""
    config = PerturbConfig(n_rngs=3, rng_bits=5)
    build_dir = tmp_path / "urng" / "icarus"
    lock = build_dir.parent / runner.LOCK_NAME
    held = []

    def fake_simulator(**kwargs):
        held.append(_lock_taken_elsewhere(lock))
        Path(kwargs["extra_env"]["PEZO_RESULT"]).write_text(json.dumps({"cycles": 1}))
        return {"build_s": 0.0, "test_s": 0.0}

    real_read = Path.read_text

    def reading(path, *args, **kwargs):  # the result is read while the lock is still held
        if path.name == "result.json":
            held.append(_lock_taken_elsewhere(lock))
        return real_read(path, *args, **kwargs)

    monkeypatch.setattr(runner, "run_cocotb", fake_simulator)
    monkeypatch.setattr(Path, "read_text", reading)
    result = runner.run_bench("urng", config, "icarus", build_dir, cycles=8)
    assert result["cycles"] == 1 and held == [True, True]
    assert not _lock_taken_elsewhere(lock)  # released
    assert (build_dir.parent / "pezo_urng.v").exists()


def test_the_design_lock_is_reentrant_and_makes_a_second_thread_wait(tmp_path):
    build_dir = tmp_path / "design" / "verilator"
    order = []

    def second_run():
        with runner.design_lock(build_dir):
            order.append("b")

    with runner.design_lock(build_dir), runner.design_lock(build_dir):  # a run_* calling run_cocotb
        thread = threading.Thread(target=second_run)
        thread.start()
        thread.join(0.5)
        order.append("a")
    thread.join(10)
    assert order == ["a", "b"]
