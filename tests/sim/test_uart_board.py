"""The ULX3S trainer top through its UART (``hw.uart_top``, ``sim.uart_tb``, ``pezo.driver.uart_bus``, ``pezo sim
uart``): the one driver loads a training set into the on-chip data memory over UARTBone (cocotbext-uart on the pins)
and runs 10 TRAIN steps the feeder supplies; every step's losses and g and the final weights equal golden (a conv
net: its patches in the data memory)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pezo.cli.main import main
from pezo.golden.engine.loss import LossConfig
from pezo.golden.engine.nets import net_config
from pezo.sim.runner import run_uart_board

STEPS = 10
LOSS = LossConfig(mode="sign", margin=4096, g_lr=1 << 16)


@pytest.mark.rtl
def test_pezo_sim_uart_trains_from_the_data_memory_like_golden(require_simulator, private_cache, capsys):
    """``pezo sim uart``: 40 real digits in a 64-example data memory, 10 TRAIN steps from example 3 (the order
    wraps mid-batch); the testbench compares every step's L+, L-, g and the final weights with golden."""
    require_simulator("verilator")
    argv = ["sim", "uart", "--batch", "16", "--examples", "40", "--start", "3", "--steps", str(STEPS), "--json"]
    assert main(argv) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["match"] and not r["mismatches"], r["mismatches"]
    assert r["steps"] == STEPS and r["feeder_pushed"] == STEPS and r["link_errors"] == 0
    assert (r["design"], r["simulator"], r["capacity"], r["start"]) == ("ulx3s-trainer", "verilator", 64, 3)
    assert r["loss_first"] != r["loss_last"]  # the losses move
    # the feeder keeps the engine fed: it never waits for a batch
    assert r["wait_cycles"] == 0 and r["cycle_ratio"] <= 1.05, r
    assert r["steps_per_second_25mhz"] == pytest.approx(25e6 / r["engine_cycles_per_step"])
    assert 0 < r["job_steps_per_second_25mhz"] < r["steps_per_second_25mhz"]


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--steps", "0"], "--steps must be an integer in 1..1000, got 0"),
        (["--examples", "8"], "--examples must be an integer in 16..1000, got 8"),
        (["--start", "64"], "--start must be an integer in 0..63, got 64"),
        (["--divisor", "2"], "--divisor must be an integer in 4..4096, got 2"),
        (["--host-fed-steps", "-1"], "--host-fed-steps must be an integer in 0..1000"),
        (["--net", "digits-cnn", "--batch", "64", "--examples", "1000"], "at most 128 examples fit at batch 64"),
    ],
)
def test_pezo_sim_uart_bad_input_is_one_line(argv, message, private_cache, capsys):
    assert main(["sim", "uart", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not (private_cache / "sim-uart").exists()


@pytest.mark.rtl
@pytest.mark.slow
def test_a_conv_net_trains_from_a_data_memory_of_patches(require_simulator, sim_build):
    """Issue 33: digits-cnn on the ULX3S trainer top -- the host im2cols the set once into the data memory, the
    feeder copies 1 024 bytes of patches per example; 2 steps equal golden, the feeder keeps up (measured: 7 761.5
    cycles per step against the bound 7 713, WAIT_CYCLES 0; about 4.5 min with the Verilator build)."""
    require_simulator("verilator")
    cfg = net_config("digits-cnn", batch=8)
    rng = np.random.default_rng(5)
    xs, ys = rng.integers(-128, 128, size=(12, cfg.inputs)), rng.integers(0, cfg.outputs, size=12)
    weights = rng.integers(-40, 41, size=cfg.weights)
    r = run_uart_board(cfg, LOSS, xs, ys, weights, 2, sim_build / "uart-board-cnn" / "verilator", start=3)
    assert r["match"], r["mismatches"]
    assert r["feeder_pushed"] == 2 and r["link_errors"] == 0 and r["wait_cycles"] == 0
    assert r["engine_cycles_per_step"] <= 1.05 * r["cycle_bound"], r
