"""The ZO engine's RTL against golden: Amaranth-simulator quick loop (several shapes), the requantisation
unit at its edges, the cocotb co-simulation of real ZO training on Icarus and Verilator (both
strategies), the mismatch check, the CLI contract of ``pezo sim engine`` and the engine's synthesis."""

import json
import os

import numpy as np
import pytest
from amaranth.hdl import Module, Signal, signed, unsigned
from amaranth.sim import Simulator

from pezo.cli.main import main
from pezo.golden.engine import int8
from pezo.golden.engine.zo_engine import EngineConfig
from pezo.golden.rng.perturb import stream_latency
from pezo.golden.zo.int8_head import Int8TrainConfig
from pezo.sim.amaranth_sim import run_engine_host
from pezo.sim.engine_host import zo_training

SIM_KEYS = {"match", "steps", "cycles_per_step", "cycle_bound", "simulator"}


def random_run(cfg, steps, seed=0, lr=0.3):
    rng = np.random.default_rng(seed)
    xs = rng.integers(-128, 128, (steps, cfg.array.batch, cfg.inputs))
    ys = rng.integers(0, cfg.outputs, (steps, cfg.array.batch))
    w0 = rng.integers(-127, 128, (cfg.outputs, cfg.inputs))
    train = Int8TrainConfig(engine=cfg, lr=lr, weight_exponent=-3)
    return w0, run_engine_host(cfg, lambda io: zo_training(io, train, xs, ys, -9, w0))


@pytest.mark.parametrize(
    "fields",
    [
        dict(),  # the default 8 x 8, two batch tiles
        dict(strategy="pregen"),
        dict(rows=1, cols=1, inputs=3, outputs=1, batch=1),  # one MAC, one word per output
        dict(rows=3, cols=5, inputs=5, outputs=3, batch=6),  # J = 1: every word is first and last
        dict(strategy="pregen", rows=4, cols=2, inputs=6, outputs=1, batch=4, pool_size=7, eps_shift=12),
        dict(rows=2, cols=4, inputs=16, outputs=2, batch=4, rng_bits=8, seed=77, eps_shift=6),
        dict(
            rows=2, cols=4, inputs=16, outputs=2, batch=4, rng_bits=8, eps_shift=6, lfsr_leap=7, lfsr_bit_order="spread"
        ),
    ],
    ids=lambda f: "-".join(f"{k}{v}" for k, v in f.items()) or "default",
)
def test_engine_matches_golden_on_the_amaranth_simulator(fields):
    cfg = EngineConfig().replace(**fields)
    w0, result = random_run(cfg, steps=3 if cfg.weights < 100 else 2)
    assert result["match"], result["mismatches"]
    assert result["final_weight_range"] != [0, 0]
    commands = 2 * cfg.array.tiles + 1  # NEXT, then a REWIND per later pass; each refills the stream's pipeline
    overhead = commands * (1 + stream_latency(cfg.perturb)) + cfg.array.cols
    assert result["cycles_per_step"] <= cfg.cycle_bound() + overhead


def test_requantisation_unit_matches_golden_at_the_edges():
    """``requantize_registered`` (the run-time shift: host logit reads, the tail's errors), one case a cycle."""
    from pezo.hw.engine.pe_array import REQUANT_STAGES, requantize_registered

    m = Module()
    acc, shift = Signal(signed(32)), Signal(unsigned(5))
    out = requantize_registered(m, acc, shift)
    cases = [
        (a, s)
        for s in (0, 1, 2, 4, 31)
        for a in (
            0,
            1,
            -1,
            2,
            -2,
            3,
            -3,
            6,
            -6,
            127,
            128,
            -127,
            -128,
            -129,
            2032 + 7,
            2032 + 8,
            -2040,
            -2041,
            (1 << 31) - 1,
            -(1 << 31),
        )
    ]
    got = []

    async def bench(ctx):
        for a, s in cases + [(0, 0)] * (REQUANT_STAGES - 1):
            ctx.set(acc, a)
            ctx.set(shift, s)
            await ctx.tick()
            got.append(ctx.get(out))

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert got[REQUANT_STAGES - 1 :] == [int(int8.requantize(a, s)) for a, s in cases]


def test_requantisation_by_a_constant_shift_matches_golden_at_the_clamps():
    from pezo.hw.engine.pe_array import requantize_constant

    m, acc = Module(), Signal(signed(32))
    shifts = (0, 1, 9, 10, 24, 25, 31)
    outs = {}
    for s in shifts:
        for relu in (False, True):
            outs[s, relu] = Signal(signed(8), name=f"q_{s}_{int(relu)}")
            m.d.comb += outs[s, relu].eq(requantize_constant(acc, s, relu))
    # each clamp's bound and its neighbours (the rounding's half included), and the extremes
    values = {0, 1, -1, (1 << 31) - 1, -(1 << 31)}
    for s in shifts:
        for edge in (128, 127, 0, -127, -128):
            for k in (-2, -1, 0, 1, 2):
                values.add(min(max((edge << s) - ((1 << s) >> 1) + k, -(1 << 31)), (1 << 31) - 1))
    values = sorted(values)
    got = []

    async def bench(ctx):
        for a in values:
            ctx.set(acc, a)
            got.append({key: ctx.get(out) for key, out in outs.items()})

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    for a, row in zip(values, got):
        for (s, relu), q in row.items():
            want = int(int8.requantize(a, s))
            assert q == (max(want, 0) if relu else want), (a, s, relu)


@pytest.fixture(scope="module")
def real_task():
    from pezo.golden.lm.data import TaskDataMissing
    from pezo.golden.lm.minilm import ModelPackageMissing
    from pezo.golden.zo.int8_head import Int8Task

    try:
        return Int8Task.load(Int8TrainConfig(), splits=("train",))
    except (ModelPackageMissing, TaskDataMissing) as exc:
        if os.environ.get("PEZO_REQUIRE_MODEL") or os.environ.get("PEZO_REQUIRE_DATA"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


@pytest.mark.rtl
@pytest.mark.parametrize("simulator", ["icarus", "verilator"])
@pytest.mark.parametrize("strategy", ["otf", "pregen"])
def test_twenty_real_zo_steps_on_the_rtl_equal_golden(strategy, simulator, require_simulator, real_task):
    from pezo.cli.sim import engine_sim_result

    require_simulator(simulator)
    train = Int8TrainConfig(engine=EngineConfig().replace(strategy=strategy))
    result = engine_sim_result(train, 20, simulator, task=real_task)
    assert SIM_KEYS <= result.keys()
    assert result["match"] and result["weights_match"], result["mismatches"]
    assert result["steps"] == 20 and result["simulator"] == simulator
    assert result["final_weights_nonzero"] > 100  # the steps really moved the weights
    assert result["cycle_bound"] == train.engine.cycle_bound() <= result["cycles_per_step"]
    commands = 2 * train.engine.array.tiles + 1
    overhead = commands * (1 + stream_latency(train.engine.perturb)) + train.engine.array.cols
    assert result["cycles_per_step"] <= train.engine.cycle_bound() + overhead
    assert result["loss_last"] < result["loss_first"] + 0.05


@pytest.mark.rtl
def test_a_wrong_golden_config_is_caught_as_a_mismatch(simulators, tmp_path):
    from pezo.sim.runner import run_engine

    if not simulators:
        pytest.fail("no HDL simulator available")
    cfg = EngineConfig().replace(rows=2, cols=4, inputs=8, outputs=2, batch=4)
    rng = np.random.default_rng(1)
    xs, ys = rng.integers(-128, 128, (2, 4, 8)), rng.integers(0, 2, (2, 4))
    train = Int8TrainConfig(engine=cfg, lr=0.3, weight_exponent=-3)
    wrong = train.replace(engine=cfg.replace(seed=2))
    result = run_engine(train, xs, ys, -9, simulators[0], tmp_path / "run", expect_train=wrong)
    assert not result["match"] and result["mismatches"]
    assert run_engine(train, xs, ys, -9, simulators[0], tmp_path / "run")["match"]


@pytest.mark.rtl
def test_pezo_sim_engine_prints_the_contract_keys(capsys, simulators, real_task):
    if not simulators:
        pytest.fail("no HDL simulator available")
    assert main(["sim", "engine", "--steps", "2", "--strategy", "pregen", "--simulator", simulators[0], "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert SIM_KEYS <= result.keys() and result["match"] is True and result["steps"] == 2
    assert 0 < result["mac_utilisation"] <= 1


@pytest.mark.parametrize(
    "argv, message",
    [
        (["sim", "engine", "--steps", "0"], "steps must be an integer in 1..10000"),
        (["sim", "engine", "--steps", "x"], "steps must be an integer in 1..10000"),
        (["sim", "engine", "--cols", "7"], "cols=7 does not tile inputs=384"),
        (["sim", "engine", "--batch", "12"], "--rows=8 does not tile --batch=12"),
        (["sim", "engine", "--rows", "65"], "rows must be in 1..64"),
        (["sim", "engine", "--strategy", "gaussian"], "strategy must be one of otf, pregen"),
        (["sim", "engine", "--eps-shift", "30"], "--eps-shift must be in 0..24"),
        (["sim", "engine", "--pool-size", "7"], "--pool-size applies to --strategy pregen only"),
        (["sim", "engine", "--lfsr-bit-order", "x"], "--lfsr-bit-order must be one of natural, spread, got 'x'"),
        (["sim", "engine", "--lfsr-leap", "3"], "--lfsr-leap must be coprime to 2^14 - 1 = 16383"),
        (["train-int8", "--strategy", "pregen", "--lfsr-leap", "5"], "--lfsr-leap applies to --strategy otf only"),
        (["train-int8", "--lr", "-1"], "lr must be a finite number > 0"),
        (["train-int8", "--steps", "0"], "steps must be an integer in 1..10000000"),
        (["report", "--strategy", "engine-otf", "--n-rngs", "4"], "--n-rngs does not apply to --strategy engine-otf"),
        (["report", "--strategy", "engine-pregen", "--rng-bits", "8"], "--rng-bits applies to --strategy engine-otf"),
        (
            ["report", "--strategy", "engine-pregen", "--lfsr-bit-order", "spread"],
            "--lfsr-bit-order applies to --strategy engine-otf",
        ),
        (["report", "--strategy", "engine-otf", "--lfsr-leap", "15"], "--lfsr-leap must be in 1..14, got 15"),
    ],
)
def test_engine_commands_reject_bad_input_with_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pezo: error:") and message in err and "\n" not in err


@pytest.mark.synth
@pytest.mark.slow
def test_engine_synthesises_to_one_dsp_per_mac_and_the_estimated_brams():
    from pezo.boards.flow.report import engine_report

    r = engine_report(EngineConfig().replace(strategy="pregen"))
    assert r["DSP"] == r["analytical_DSP"] == 64 + 2 * 8  # a DSP per MAC, two per lane for the split g * p
    assert r["BRAM36"] == r["analytical_BRAM36"]
    assert r["RAMB18"] == 8  # the pool, banked over 8 BRAMs as in PeZO
    assert r["within_budget"] and r["strategy"] == "engine-pregen" and r["unit"] == "engine"


def test_the_perturbed_passes_never_write_the_weight_memory():
    """Load weights, run forward_zo (and plain inference): the memory still holds exactly what was loaded;
    only OP_UPDATE writes."""
    from pezo.hw.engine.zo_engine import OP_FORWARD_ZO, OP_INFER, OP_UPDATE
    from pezo.sim.engine_host import HeadEngineHost

    cfg = EngineConfig().replace(rows=2, cols=4, inputs=8, outputs=2, batch=4, eps_shift=4)  # eps = 256 LSB: saturating
    rng = np.random.default_rng(5)
    w0 = rng.integers(-127, 128, (2, 8))
    x = rng.integers(-128, 128, (4, 8))

    async def host(io):
        driver = HeadEngineHost(io, cfg)
        await driver.load_weights(w0)
        await driver.load_batch(x)
        await driver.run(OP_FORWARD_ZO)
        after_forward = await driver.read_weights()
        await driver.run(OP_INFER)
        after_infer = await driver.read_weights()
        await driver.run(OP_UPDATE, 1 << 16)
        return after_forward, after_infer, await driver.read_weights()

    after_forward, after_infer, after_update = run_engine_host(cfg, host)
    assert np.array_equal(after_forward, w0) and np.array_equal(after_infer, w0)
    assert not np.array_equal(after_update, w0)
