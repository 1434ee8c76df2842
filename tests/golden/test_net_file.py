"""Network files (golden.engine.net_file): every built-in round-trips, a file trains as its built-in, bad files
are refused with one line naming the key."""

import json

import numpy as np
import pytest

from pezo.golden.engine.net_file import builtin_net, load_net, read_net_file, write_net_file
from pezo.golden.engine.nets import NET_NAMES
from pezo.golden.zo.int8_net import train_int8_net
from pezo.golden.zo.net_config import NetTrainConfig


@pytest.mark.parametrize("name", NET_NAMES)
def test_every_builtin_round_trips_through_its_file(name, tmp_path):
    net = builtin_net(name)
    back = read_net_file(write_net_file(net, tmp_path / f"{name}.json"))
    assert back.config == net.config and back.input_exponent == net.input_exponent and back.weights is None


def test_weights_and_biases_round_trip_inline_and_from_a_sidecar(tmp_path):
    net = builtin_net("digits-mlp")
    data = net.to_dict()
    data["layers"][2]["bias"] = True
    rng = np.random.default_rng(0)
    w = [rng.integers(-127, 128, (l["outputs"], l["inputs"])) for l in data["layers"]]
    data["weights"] = [a.tolist() for a in w]
    data["biases"] = [None, None, list(range(10))]
    (tmp_path / "a.json").write_text(json.dumps(data))
    a = read_net_file(tmp_path / "a.json")
    assert all((x == y).all() for x, y in zip(a.weights, w)) and a.biases[2].tolist() == list(range(10))
    np.savez(tmp_path / "w.npz", **{f"w{i}": x for i, x in enumerate(w)}, b2=np.arange(10))
    del data["weights"], data["biases"]
    data["weights_file"] = "w.npz"
    (tmp_path / "b.json").write_text(json.dumps(data))
    b = read_net_file(tmp_path / "b.json")
    assert all((x == y).all() for x, y in zip(b.weights, w)) and b.biases[2].tolist() == list(range(10))


def test_toml_is_read_too(tmp_path):
    (tmp_path / "n.toml").write_text(
        'format = "pezo-net"\nversion = 1\nname = "tiny"\nbatch = 8\n'
        "[[layers]]\ninputs = 16\noutputs = 8\nshift = 6\nrelu = true\n[[layers]]\ninputs = 8\noutputs = 3\n"
    )
    net = load_net(str(tmp_path / "n.toml"))
    assert [l.describe() for l in net.config.layers] == ["16 -> 8 relu", "8 -> 3"] and net.settings == {"batch": 8}


def test_a_builtin_as_a_file_trains_bit_for_bit_as_the_builtin(tmp_path):
    path = write_net_file(builtin_net("digits-mlp"), tmp_path / "d.json")
    runs = [
        train_int8_net(NetTrainConfig(net=net, steps=6, eval_every=3, array=NetTrainConfig().array.replace(batch=16)))
        for net in ("digits-mlp", str(path))
    ]
    assert runs[0]["final_weights_digest"] == runs[1]["final_weights_digest"]
    assert runs[0]["test_accuracy"] == runs[1]["test_accuracy"]


GOOD = {"format": "pezo-net", "version": 1, "name": "n", "layers": [{"inputs": 16, "outputs": 4}]}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"colour": 1}, "unknown key 'colour'"),
        ({"version": 2}, "key 'version' must be 1"),
        ({"format": "onnx"}, "key 'format' must be 'pezo-net'"),
        ({"layers": [{"inputs": 16, "outputs": 4, "act": "relu"}]}, "unknown key 'layers[0].act'"),
        ({"layers": [{"inputs": 12, "outputs": 4}]}, "does not tile the array"),
        ({"layers": [{"inputs": 16, "outputs": 4}, {"inputs": 8, "outputs": 2}]}, "takes 8 inputs but layer 0"),
        ({"weights": [[[1] * 16] * 3]}, "key 'weights[0]' must have shape [4, 16]"),
        ({"weights": [[[200] * 16] * 4]}, "key 'weights[0]' must hold integers in -127..127"),
        ({"weights": [[[0] * 16] * 4], "biases": [[1, 2, 3, 4]]}, "key 'biases[0]' must be null"),
        ({"input_exponent": 1.5}, "key 'input_exponent' must be an integer"),
        ({"name": ""}, "key 'name' must be a non-empty name"),
    ],
)
def test_bad_files_are_refused_naming_the_key(change, message, tmp_path):
    path = tmp_path / "n.json"
    path.write_text(json.dumps({**GOOD, **change}))
    with pytest.raises(ValueError) as info:
        read_net_file(path)
    assert message in str(info.value) and str(path) in str(info.value) and "\n" not in str(info.value)


def test_a_truncated_file_is_refused(tmp_path):
    path = tmp_path / "n.json"
    path.write_text(json.dumps(GOOD)[:30])
    with pytest.raises(ValueError, match="is not valid JSON"):
        read_net_file(path)
