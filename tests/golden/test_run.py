"""``golden.zo.run``: one run prepared once (data, schedule, start weights, biases), and the training config of a
built design."""

from __future__ import annotations

import numpy as np
import pytest

from pezo.golden.zo.int8_head import batch_schedule
from pezo.golden.zo.net_config import NetTrainConfig, split_config
from pezo.golden.zo.net_init import init_weights
from pezo.golden.zo.run import NetRun, design_train_config, rtl_config
from pezo.golden.zo.user_data import load_run_data


def test_a_run_is_the_data_schedule_and_start_each_path_used_to_make_itself():
    train = NetTrainConfig(net="digits-mlp", steps=7)
    run = NetRun.prepare(train)
    data = load_run_data(train)
    weights, init = init_weights(train, data.x["train"], data)
    rows = batch_schedule(len(data.y["train"]), train.array.batch, 5, train.seed)
    assert run.init == init and run.biases is None and run.act_exponent == data.act_exponent
    assert all(np.array_equal(a, b) for a, b in zip(run.weights, weights))
    assert np.array_equal(run.flat_weights, np.concatenate([w.ravel() for w in weights]))
    xs, ys = run.batches(5)
    assert np.array_equal(run.schedule(5), rows)
    assert np.array_equal(xs, data.x["train"][rows]) and np.array_equal(ys, data.y["train"][rows])
    ex, ey = run.examples(10)
    assert np.array_equal(ex, data.x["train"][:10]) and np.array_equal(ey, data.y["train"][:10])


def test_a_start_that_needs_the_validation_split_is_made_on_every_path():
    """``last_init="probe"`` needs the data's validation split: the run always passes it (the board, UART and
    driver paths did not, and raised)."""
    train = NetTrainConfig(net="digits-mlp", last_init="probe", steps=3)
    with pytest.raises(ValueError, match="needs the data"):
        init_weights(train, load_run_data(train).x["train"])  # what those paths did
    run = NetRun.prepare(train)
    assert run.init["layers"][-1]["start"] == "probe" and run.weights[-1].any()


def test_the_batch_schedule_refuses_a_batch_larger_than_the_data():
    run = NetRun.prepare(NetTrainConfig(net="digits-mlp", steps=3))
    big = NetRun(run.train.replace(batch=4096, rows=8), run.data, run.weights, run.init, run.biases)
    with pytest.raises(ValueError, match="batch must be <= the"):
        big.schedule(2)


@pytest.mark.parametrize("net", ["digits-mlp", "rt-mlp", "digits-cnn"])
def test_the_training_config_of_a_design_is_the_config_that_built_it(net):
    built = NetTrainConfig.from_dict({"net": net, "strategy": "pregen", "batch": 64, "eps_shift": 12, "stream_seed": 5})
    design = built.net_config
    again = design_train_config(design, seed=3)
    assert again.net_config == design and again.seed == 3 and again.stream.seed == 5
    assert again.net == net and again.array == built.array and again.stream == built.stream


def test_the_training_config_of_a_design_refuses_another_network_and_a_tail_it_lacks():
    design = NetTrainConfig(net="digits-mlp").net_config
    with pytest.raises(ValueError, match="the design's engine is not this network"):
        design_train_config(design, net="rt-mlp")
    with pytest.raises(ValueError, match="needs a design with the backprop tail"):
        design_train_config(design, split="cls1")
    with pytest.raises(ValueError, match="--bp-bits is a setting of the backprop tail"):
        design_train_config(design, bp_bits=2)
    tailed = design.replace(backprop=True)
    train = design_train_config(tailed, split="cls1")
    assert train.split_c == 1 and train.bp_bits == split_config("digits-mlp", "cls1").bp_bits


def test_the_rtl_config_carries_the_tail_of_a_split_and_refuses_host_g_with_one():
    full = NetTrainConfig(net="digits-mlp")
    assert rtl_config(full) == full.net_config and not rtl_config(full).backprop
    assert rtl_config(split_config("digits-mlp", "cls2")).backprop
    with pytest.raises(ValueError, match="--split cls2 needs --loss on-chip"):
        rtl_config(split_config("digits-mlp", "cls2", loss="host"))
