"""The network engine's RTL against golden: Amaranth-simulator runs over several network shapes and all
three g modes (every logit of every pass, every loss and g, the final weights, a plain inference), a
wrong golden caught as a mismatch, the perturbed passes never writing the weight memory, cocotb on
Icarus and Verilator with real digits data through ``pezo sim engine --net``, and the CLI's errors."""

import json

import numpy as np
import pytest

from pezo.cli.main import main
from pezo.golden.engine.loss import LossConfig
from pezo.golden.engine.nets import net_config
from pezo.golden.engine.network import Layer, NetConfig
from pezo.golden.zo.net_config import NetTrainConfig
from pezo.hw.engine.net_engine import (
    OP_FORWARD_ZO,
    OP_INFER,
    OP_TRAIN,
    OP_UPDATE,
    NetEngine,
    near_perturbation,
    perturbed_sum,
)
from pezo.hw.engine.pe_array import clamp_int8
from pezo.sim.amaranth_sim import run_host
from pezo.sim.net_host import NetDriver, net_training

SIM_KEYS = {
    "match",
    "steps",
    "cycles_per_step",
    "cycle_bound",
    "cycle_ratio",
    "mac_utilisation",
    "load_hidden",
    "simulator",
    "net",
    "loss",
}
TINY = NetConfig().replace(layers=(Layer(8, 4, shift=6, relu=True), Layer(4, 3)), rows=2, cols=4, batch=4, name="tiny")
# J = 1 layers: the layer gap is tight
BIASED = NetConfig().replace(
    layers=(Layer(4, 4, shift=3, bias=True), Layer(4, 8, shift=5, relu=True), Layer(8, 2, bias=True)),
    rows=1,
    cols=4,
    batch=3,
    name="bias-J1",
)


def random_run(cfg, loss, steps=2, overlap=True, seed=0, biases=None, expect=None, engine=None, monitors=()):
    rng = np.random.default_rng(seed)
    xs = rng.integers(-128, 128, (steps, cfg.array.batch, cfg.inputs))
    ys = rng.integers(0, cfg.outputs, (steps, cfg.array.batch))
    w = rng.integers(-40, 41, cfg.weights)
    engine = engine or NetEngine(cfg)
    return run_host(engine, lambda io: net_training(io, cfg, loss, xs, ys, w, biases, overlap), monitors)


@pytest.mark.parametrize(
    "cfg, loss, overlap",
    [
        (TINY, LossConfig(mode="sign", margin=100), True),
        (TINY, LossConfig(mode="scaled", margin=50, g_shift=4), True),
        (TINY, LossConfig(mode="scaled", margin=4000, g_shift=9), True),  # both of the shift's registers shift
        (TINY, LossConfig(mode="host", margin=50), True),
        (TINY, LossConfig(mode="sign", margin=50), False),
        (TINY.replace(strategy="pregen"), LossConfig(mode="sign", margin=100), True),
        (NetConfig().replace(layers=(Layer(8, 2),), rows=3, cols=8, batch=6), LossConfig(mode="sign", margin=9), True),
        (
            NetConfig().replace(
                layers=(Layer(2, 4, shift=2, relu=True), Layer(4, 2)),
                rows=1,
                cols=1,
                batch=2,
                strategy="pregen",
                pool_size=7,
                eps_shift=12,
            ),
            LossConfig(mode="scaled", g_shift=3),
            True,
        ),
        (TINY.replace(lfsr_leap=5, lfsr_bit_order="spread"), LossConfig(mode="sign", margin=100), True),
        (TINY, LossConfig(mode="sign", margin=100, wd_shift=3), True),
        (TINY, LossConfig(mode="host", margin=50, wd_shift=1), True),
        (TINY.replace(strategy="pregen"), LossConfig(mode="scaled", margin=50, g_shift=4, wd_shift=5), True),
    ],
    ids=[
        "sign",
        "scaled",
        "scaled-shift9",
        "host",
        "no-overlap",
        "pregen",
        "one-layer",
        "one-mac",
        "leap5-spread",
        "sign-wd3",
        "host-wd1",
        "pregen-scaled-wd5",
    ],
)
def test_network_engine_matches_golden_on_the_amaranth_simulator(cfg, loss, overlap):
    result = random_run(cfg, loss, steps=3, overlap=overlap)
    assert result["match"], result["mismatches"]
    assert len(result["records"]) == 3 and any(r["g"] for r in result["records"])
    assert result["final_weight_range"] != [0, 0]
    if loss.on_chip and overlap:
        assert result["load_hidden"] and result["wait_cycles"] == 0


class _LateBatchDriver(NetDriver):
    """A host that queues ``late_batch`` only once ``late_at`` cycles have passed (and never skips past that)."""

    late_batch, late_at = None, 0

    def _service(self) -> None:
        if self.late_batch is not None and self.ticks >= self.late_at:
            self.queue_batch(*self.late_batch)
            self.late_batch = None
        super()._service()

    def _idle(self) -> bool:
        return self.late_batch is None and super()._idle()


def test_a_starved_batch_queue_is_counted_in_wait_cycles():
    """TRAIN over two steps whose second batch the host queues 300 cycles after the start: the engine
    waits in BATCH, and ``wait_cycles`` is exactly the busy cycles the starved run takes beyond the fed one
    (0 when fed); the steps' losses and g and the final weights are those of the fed run."""
    from pezo.golden.engine.network import NetEngine as GoldenNet

    cfg, loss = TINY, LossConfig(mode="sign", margin=100)
    rng = np.random.default_rng(4)
    xs = rng.integers(-128, 128, (2, cfg.array.batch, cfg.inputs))
    ys = rng.integers(0, cfg.outputs, (2, cfg.array.batch))
    flat = GoldenNet(cfg, rng.integers(-40, 41, cfg.weights)).flat

    def run(late):
        async def host(io):
            driver = _LateBatchDriver(io, cfg)
            await driver.load_weights(flat)
            driver.queue_batch(xs[0], ys[0])
            if late is None:
                driver.queue_batch(xs[1], ys[1])
            else:
                driver.late_batch, driver.late_at = (xs[1], ys[1]), driver.ticks + late
            while driver.pushes < 1:
                await driver.tick()
            busy = await driver.run(OP_TRAIN, steps=2, loss=loss)
            records = [(s["loss_plus"], s["loss_minus"], s["g"]) for s in driver.steps]
            return busy, io.get("wait_cycles"), records, await driver.read_weights()

        return run_host(NetEngine(cfg), host)

    fed_busy, fed_wait, fed_records, fed_weights = run(None)
    busy, wait, records, weights = run(300)
    assert fed_wait == 0 and wait > 0 and busy - fed_busy == wait, (busy, fed_busy, wait)
    assert records == fed_records and np.array_equal(weights, fed_weights)


def test_the_perturbation_add_and_the_int8_clamps_saturate_like_sat():
    """``clamp_int8(perturbed_sum(w, near_perturbation(p)))`` is ``sat(w + p, -127, 127)`` for every int8 w and p
    around every edge (and the stream's extremes); ``clamp_int8`` of a 26-bit difference (the update's
    ``decayed - step``) is ``sat`` around both clamps and at its extremes."""
    from amaranth.hdl import Module, Signal, signed
    from amaranth.sim import Simulator

    w, p, wide = Signal(signed(8)), Signal(signed(16)), Signal(signed(26))
    forward, update = Signal(signed(8)), Signal(signed(8))
    m = Module()
    m.d.comb += [forward.eq(clamp_int8(perturbed_sum(w, near_perturbation(p)))), update.eq(clamp_int8(wide))]
    ps = [*range(-300, 301), -32768, 32767, -257, 256, -1000, 1000]
    wides = [*range(-300, 301), -(1 << 25), (1 << 25) - 1, -(1 << 24), 1 << 24, -129, 128]
    bad = []

    async def bench(ctx):
        for wv in range(-128, 128):
            ctx.set(w, wv)
            for pv in ps:
                ctx.set(p, pv)
                if ctx.get(forward) != max(-127, min(127, wv + pv)):
                    bad.append(("forward", wv, pv))
        for v in wides:
            ctx.set(wide, v)
            if ctx.get(update) != max(-127, min(127, v)):
                bad.append(("update", v))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert not bad, bad[:5]


@pytest.mark.parametrize("wd_shift", [1, 4, 7])
def test_weight_decay_over_the_full_weight_range_matches_golden(wd_shift):
    """Weights over all of [-127, 127] (both saturation edges, the round-half-up ties of the decay):
    the RTL's update equals golden's, and the decay really acted (golden without it ends elsewhere)."""
    from pezo.golden.engine.network import NetEngine as GoldenNet

    cfg, loss = TINY, LossConfig(mode="sign", margin=100, g_lr=1 << 16, wd_shift=wd_shift)
    rng = np.random.default_rng(wd_shift)
    batch = cfg.array.batch
    xs, ys = rng.integers(-128, 128, (3, batch, cfg.inputs)), rng.integers(0, cfg.outputs, (3, batch))
    w = rng.integers(-127, 128, cfg.weights)
    w[:4] = [127, -127, 64, -64]
    result = run_host(NetEngine(cfg), lambda io: net_training(io, cfg, loss, xs, ys, w))
    assert result["match"], result["mismatches"]
    plain = GoldenNet(cfg, w)
    decayed = GoldenNet(cfg, w)
    for x, y in zip(xs, ys):
        plain.train_step(x, y, LossConfig(mode="sign", margin=100, g_lr=1 << 16))
        decayed.train_step(x, y, loss)
    assert not np.array_equal(plain.flat, decayed.flat)


@pytest.mark.parametrize(
    "mode, overlap, every",
    [("sign", True, 2), ("sign", False, 3), ("host", True, 2)],
    ids=["train-S-every2", "train-1-every3", "host-update-every2"],
)
def test_the_decay_counter_runs_the_every_nth_schedule_on_chip(mode, overlap, every):
    """WD_EVERY: one TRAIN(S) command (or S TRAIN(1) commands, or host FORWARD + UPDATE pairs) decays on
    updates every, 2 every, ... only: the RTL equals golden's counter, which equals a host that sets
    WD_SHIFT for those steps alone; and the counter really skipped the others."""
    from pezo.golden.engine.network import NetEngine as GoldenNet

    steps = 6
    cfg, loss = TINY, LossConfig(mode=mode, margin=100, g_lr=1 << 16, wd_shift=2, wd_every=every)
    rng = np.random.default_rng(every)
    batch = cfg.array.batch
    xs, ys = rng.integers(-128, 128, (steps, batch, cfg.inputs)), rng.integers(0, cfg.outputs, (steps, batch))
    w = rng.integers(-127, 128, cfg.weights)
    result = run_host(NetEngine(cfg), lambda io: net_training(io, cfg, loss, xs, ys, w, overlap=overlap))
    assert result["match"], result["mismatches"]
    toggled, always = GoldenNet(cfg, w), GoldenNet(cfg, w)
    on = LossConfig(mode=mode, margin=100, g_lr=1 << 16, wd_shift=2)
    off = LossConfig(mode=mode, margin=100, g_lr=1 << 16)
    for step, (x, y, record) in enumerate(zip(xs, ys, result["records"])):
        g = record["g"] if mode == "host" else None
        toggled.train_step(x, y, on if (step + 1) % every == 0 else off, g=g)
        always.train_step(x, y, on, g=g)
    assert result["final_weight_digest"] == toggled.digest() != always.digest()


def test_biases_and_one_word_layers_match_golden():
    rng = np.random.default_rng(5)
    biases = [rng.integers(-5000, 5000, 4), None, rng.integers(-900, 900, 2)]
    result = random_run(BIASED, LossConfig(mode="sign", margin=10), steps=3, biases=biases)
    assert result["match"], result["mismatches"]


def test_digits_mlp_steps_stay_within_ten_percent_of_the_bound():
    cfg = net_config("digits-mlp")
    result = random_run(cfg, LossConfig(mode="sign", margin=1000), steps=2)
    assert result["match"], result["mismatches"]
    assert cfg.cycle_bound() < result["busy_cycles_per_step"] <= 1.10 * cfg.cycle_bound()


def test_a_wrong_golden_is_caught_as_a_mismatch():
    """The host compares with a golden that has another margin: the losses differ and match is False."""
    cfg, loss = TINY, LossConfig(mode="sign", margin=100)
    rng = np.random.default_rng(0)
    xs, ys = rng.integers(-128, 128, (2, 4, 8)), rng.integers(0, 3, (2, 4))
    w = rng.integers(-40, 41, cfg.weights)

    async def host(io):  # the RTL runs margin 100; golden is told 7
        from pezo.sim import net_host

        wrong = LossConfig(mode="sign", margin=7)
        original = net_host.NetEngine.train_step
        net_host.NetEngine.train_step = lambda self, x, y, _loss, g=None: original(self, x, y, wrong, g)
        try:
            return await net_training(io, cfg, loss, xs, ys, w)
        finally:
            net_host.NetEngine.train_step = original

    result = run_host(NetEngine(cfg), host)
    assert not result["match"] and any("loss" in m for m in result["mismatches"])


def test_the_perturbed_passes_never_write_the_weight_memory():
    cfg = TINY.replace(eps_shift=4)  # epsilon = 256 LSB: every perturbed weight saturates
    rng = np.random.default_rng(5)
    w0 = rng.integers(-127, 128, cfg.weights)
    x, y = rng.integers(-128, 128, (4, 8)), rng.integers(0, 3, 4)

    async def host(io):
        driver = NetDriver(io, cfg)
        await driver.load_weights(w0)
        for _ in range(2):
            driver.queue_batch(x, y)
        while driver.batches or driver.load_items:
            await driver.tick()
        await driver.run(OP_FORWARD_ZO)
        after_forward = await driver.read_weights()
        await driver.run(OP_INFER)
        after_infer = await driver.read_weights()
        await driver.run(OP_UPDATE, g=1 << 16)
        return after_forward, after_infer, await driver.read_weights()

    after_forward, after_infer, after_update = run_host(NetEngine(cfg), host)
    assert np.array_equal(after_forward, w0) and np.array_equal(after_infer, w0)
    assert not np.array_equal(after_update, w0)


@pytest.mark.rtl
@pytest.mark.parametrize("simulator", ["icarus", "verilator"])
def test_pezo_sim_engine_net_trains_digits_on_the_rtl_like_golden(simulator, require_simulator, capsys):
    require_simulator(simulator)
    assert main(["sim", "engine", "--net", "digits-mlp", "--steps", "3", "--simulator", simulator, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert SIM_KEYS <= result.keys() and result["match"] is True, result["mismatches"]
    assert (result["net"], result["loss"], result["steps"], result["simulator"]) == (
        "digits-mlp",
        "on-chip",
        3,
        simulator,
    )
    assert result["load_hidden"] is True and result["busy_cycle_ratio"] <= 1.10
    # the co-simulation runs the trainer's configuration (pezo train-int8 --net digits-mlp)
    trained = NetTrainConfig(net="digits-mlp").net_config
    assert (result["batch"], result["cycle_bound"]) == (trained.array.batch, trained.cycle_bound())


@pytest.mark.rtl
@pytest.mark.parametrize("simulator", ["icarus", "verilator"])
def test_the_elastic_trainer_runs_on_the_rtl_like_golden(simulator, require_simulator, capsys):
    """The engine with its backprop tail (one build serves every split: C is a register): the hybrid (cls2, the
    tail on the last layer, after the ZO update) and full backprop (two error passes through ReLUs, layer 1's
    gradient from the batch) equal golden's ElasticZO-INT8 steps bit for bit, with the tail's cycles near its
    bound."""
    require_simulator(simulator)
    for split, c in (("cls2", 2), ("full-bp", 0)):
        argv = ["sim", "engine", "--net", "digits-mlp", "--split", split, "--steps", "3", "--simulator", simulator]
        assert main([*argv, "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert SIM_KEYS <= result.keys() and result["match"] is True, result["mismatches"]
        assert (result["split"], result["split_c"], result["steps"]) == (split, c, 3)
        bound = NetTrainConfig(net="digits-mlp").net_config.replace(backprop=True).bp_cycle_bound(c)
        assert result["bp_cycle_bound"] == bound and bound <= result["bp_cycles"] <= 1.10 * bound
        assert result["cycle_ratio"] <= 1.10


@pytest.mark.rtl
@pytest.mark.parametrize("simulator", ["icarus", "verilator"])
def test_weight_decay_on_the_rtl_like_golden(simulator, require_simulator, capsys, decay_digests):
    """``--wd-shift 5 --wd-every 2``: the engine's WD_SHIFT and WD_EVERY registers on Icarus and Verilator,
    one TRAIN(4) command: every logit, loss, g and the final weights against golden, and the final weights
    are the golden trainer's (``pezo train-int8``, same split, start and batches), which differ from the
    run without decay (digits-mlp's calibrated weights reach +-127, so the decay acts)."""
    require_simulator(simulator)
    assert (
        main(
            [
                "sim",
                "engine",
                "--net",
                "digits-mlp",
                "--steps",
                "4",
                "--wd-shift",
                "5",
                "--wd-every",
                "2",
                "--simulator",
                simulator,
                "--json",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["match"] is True and result["mismatch_count"] == 0, result["mismatches"]
    assert result["config"]["wd_shift"] == 5 and result["config"]["wd_every"] == 2
    with_decay, without_decay = decay_digests
    assert result["final_weights_digest"] == with_decay
    assert result["final_weights_digest"] != without_decay


@pytest.fixture(scope="module")
def decay_digests():
    """The golden trainer's final-weights digests of ``test_weight_decay_on_the_rtl_like_golden``'s run, with
    and without the decay (the same for both simulators: computed once)."""
    from pezo.golden.zo.int8_net import train_int8_net

    cfg = NetTrainConfig(net="digits-mlp", steps=4, eval_every=4, wd_shift=5, wd_every=2)
    return tuple(train_int8_net(c, probe=False)["final_weights_digest"] for c in (cfg, cfg.replace(wd_shift=0)))


@pytest.mark.rtl
def test_host_loss_mode_on_the_rtl(simulators, capsys):
    if not simulators:
        pytest.fail("no HDL simulator available")
    assert (
        main(
            [
                "sim",
                "engine",
                "--net",
                "digits-mlp",
                "--loss",
                "host",
                "--strategy",
                "pregen",
                "--steps",
                "2",
                "--simulator",
                simulators[-1],
                "--json",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["match"] is True and result["loss"] == "host", result["mismatches"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["sim", "engine", "--net", "digits-mlp", "--steps", "0"], "steps must be an integer in 1..10000"),
        (["sim", "engine", "--net", "digits-mlp", "--cols", "6"], "layer 0 (64 -> 32 relu) does not tile the array"),
        (["sim", "engine", "--net", "digits-mlp", "--batch", "12"], "--rows=8 does not tile --batch=12"),
        (
            ["sim", "engine", "--net", "digits-mlp", "--weight-exponent", "-3"],
            "--weight-exponent applies to the head engine only",
        ),
        (["sim", "engine", "--margin", "5"], "--margin applies to --net runs only"),
        (
            ["sim", "engine", "--net", "digits-mlp", "--lfsr-bit-order", "x"],
            "--lfsr-bit-order must be one of natural, spread",
        ),
        (
            ["train-int8", "--net", "digits-mlp", "--strategy", "pregen", "--lfsr-leap", "5"],
            "--lfsr-leap applies to --strategy otf only",
        ),
        (["sim", "engine", "--no-overlap"], "--no-overlap applies to --net runs only"),
        (["sim", "engine", "--net", "rt-mlp", "--loss", "host", "--g-mode", "scaled"], "apply to --loss on-chip only"),
        (["sim", "engine", "--net", "digits-mlp", "--margin", "-1"], "margin must be in 0..8388607"),
        (["sim", "engine", "--net", "mnist"], "invalid choice: 'mnist'"),
        (["train-int8", "--net", "digits-mlp", "--steps", "0"], "steps must be an integer in 1..10000000"),
        (["train-int8", "--net", "rt-mlp", "--wd-shift", "8"], "--wd-shift must be in 0..7, got 8"),
        (["train-int8", "--net", "rt-mlp", "--wd-every", "0"], "--wd-every must be in 1..255, got 0"),
        (["sim", "engine", "--net", "digits-mlp", "--wd-every", "256"], "--wd-every must be in 1..255, got 256"),
        (["sim", "engine", "--wd-shift", "3"], "--wd-shift applies to --net runs only"),
        (["train-int8", "--hidden-init", "pca"], "--hidden-init applies to --net runs only"),
        (["train-int8", "--net", "rt-mlp", "--hidden-init", "xavier"], "invalid choice: 'xavier'"),
    ],
)
def test_network_commands_reject_bad_input_with_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("pezo: error:") and message in err, err


# -- the backprop tail (hw.engine.bp_tail): a square array, every split of a three-layer net ---------------
SQUARE = NetConfig().replace(
    layers=(Layer(8, 8, shift=6, relu=True), Layer(8, 4, shift=5, relu=True), Layer(4, 3)),
    rows=4,
    cols=4,
    batch=8,
    name="square",
    backprop=True,
)


def _golden_final(cfg, loss, steps=3, seed=0):
    from pezo.golden.engine.network import NetEngine as GoldenNet

    rng = np.random.default_rng(seed)
    xs = rng.integers(-128, 128, (steps, cfg.array.batch, cfg.inputs))
    ys = rng.integers(0, cfg.outputs, (steps, cfg.array.batch))
    model = GoldenNet(cfg, rng.integers(-40, 41, cfg.weights))
    records = [model.train_step(x, y, loss) for x, y in zip(xs, ys)]
    return model.flat, records


@pytest.mark.parametrize(
    "cfg, loss",
    [
        (SQUARE, LossConfig(mode="sign", margin=100, split=2, bp_bits=3)),
        (SQUARE, LossConfig(mode="sign", margin=100, split=1, bp_bits=1)),
        (SQUARE, LossConfig(mode="scaled", margin=60, g_shift=4, split=0, bp_bits=7)),
        (SQUARE, LossConfig(mode="sign", margin=100, split=3)),
        (SQUARE.replace(strategy="pregen"), LossConfig(mode="sign", margin=100, split=1, bp_bits=4, wd_shift=3)),
        (SQUARE.replace(batch=4), LossConfig(mode="sign", margin=100, split=0, bp_bits=2)),
        (
            NetConfig().replace(
                layers=(Layer(4, 4, shift=3, bias=True), Layer(4, 8, shift=5, relu=True), Layer(8, 2, bias=True)),
                rows=4,
                cols=4,
                batch=8,
                backprop=True,
            ),
            LossConfig(mode="sign", margin=100, split=0, bp_bits=5),
        ),
        (NetConfig().replace(layers=(Layer(8, 3),), rows=4, cols=4, batch=8, backprop=True), LossConfig(split=0)),
    ],
    ids=[
        "cls2",
        "cls1-bits1",
        "full-bp-scaled-bits7",
        "full-zo-on-tail-design",
        "pregen-wd",
        "one-tile",
        "bias",
        "one-layer",
    ],
)
def test_the_backprop_tail_matches_golden_at_every_split(cfg, loss):
    """Every logit, loss, g and the final weights equal golden's ElasticZO-INT8 step (ZO on layers 1..C, the
    integer tail on the rest); and the tail really trained (golden's final weights differ from full ZO's)."""
    result = random_run(cfg, loss, steps=3)
    assert result["match"], result["mismatches"]
    assert result["bp_cycles_per_step"] == (
        0 if loss.split in (None, len(cfg.layers)) else result["bp_cycles_per_step"]
    )
    if loss.split is not None and loss.split < len(cfg.layers):
        assert result["bp_cycles_per_step"] > 0
        full_zo = LossConfig(mode=loss.mode, margin=loss.margin, g_shift=loss.g_shift, wd_shift=loss.wd_shift)
        tail, records = _golden_final(cfg, loss)
        assert not np.array_equal(tail, _golden_final(cfg, full_zo)[0])
        assert any(np.any(u) for r in records for u in r.tail.updates if u is not None)


@pytest.mark.parametrize(
    "cfg, loss, overlap",
    [
        (TINY, LossConfig(mode="sign", margin=100), True),
        (TINY, LossConfig(mode="sign", margin=100), False),
        (TINY, LossConfig(mode="host", margin=50), True),
        (SQUARE, LossConfig(mode="sign", margin=100, split=1, bp_bits=3), True),
        (SQUARE, LossConfig(mode="sign", margin=100, split=0, bp_bits=3), True),
    ],
    ids=["train-S", "train-1", "forward-update", "tail", "full-bp"],
)
def test_the_controller_state_flags_equal_the_fsm_state_in_every_cycle(cfg, loss, overlap):
    """The controller's flip-flops of IDLE, BATCH, RUN and FORWARD_DRAIN (which enable those states' loads) equal
    the FSM's decode of its state in every cycle of TRAIN(S), TRAIN(1) with the engine idle in between,
    FORWARD_ZO + UPDATE, the backprop tail, full BP, and INFER (each run ends with one)."""
    engine, wrong, cycles = NetEngine(cfg), [], [0]

    async def monitor(ctx):
        while True:
            await ctx.tick()
            cycles[0] += 1
            for flag, decode in engine.state_flag_checks:
                if ctx.get(flag) != ctx.get(decode) and len(wrong) < 5:
                    wrong.append(f"cycle {cycles[0]}: {flag.name} {ctx.get(flag)}, the FSM {ctx.get(decode)}")

    result = random_run(cfg, loss, steps=2, overlap=overlap, engine=engine, monitors=[monitor])
    assert result["match"], result["mismatches"]
    assert len(engine.state_flag_checks) == 4 and cycles[0] > 200 and not wrong, wrong


def test_the_tail_saturates_weights_like_golden():
    """Weights at +-127 and the largest b_BP: the tail's saturating write-back equals golden's."""
    cfg, loss = SQUARE, LossConfig(mode="sign", margin=1 << 20, split=0, bp_bits=7)
    rng = np.random.default_rng(5)
    xs = rng.integers(-128, 128, (2, cfg.array.batch, cfg.inputs))
    ys = rng.integers(0, cfg.outputs, (2, cfg.array.batch))
    w = rng.choice([-127, 127, -126, 126, 0], cfg.weights)
    result = run_host(NetEngine(cfg), lambda io: net_training(io, cfg, loss, xs, ys, w))
    assert result["match"], result["mismatches"]


def test_the_tail_cycles_stay_near_the_bound():
    """The tail's cycles against ``NetConfig.bp_cycle_bound`` (issues + drains) on a two-tile net."""
    for split in (0, 1, 2):
        result = random_run(SQUARE, LossConfig(mode="sign", margin=100, split=split), steps=2)
        bound = SQUARE.bp_cycle_bound(split)
        assert bound <= result["bp_cycles_per_step"] <= 1.10 * bound + 16, (split, result["bp_cycles_per_step"], bound)


def test_a_tail_needs_a_square_array():
    with pytest.raises(ValueError, match="the backprop tail needs a square array"):
        SQUARE.replace(rows=2)
