"""Issue 33's bad conv layers through the CLI: a kernel larger than the address generator's patch rows, a stride or
padding it does not support, a 2x2 pool on an odd size -- from a network file and from an ONNX model, in
``pezo train-int8``, ``pezo sim engine`` and ``pezo build --design engine``: one ``pezo: error:`` line naming the
layer (the file's ``layers[i]`` key, the ONNX node), exit 2, nothing written to ``--out``."""

import json
from pathlib import Path

import numpy as np
import pytest

from pezo.cli.main import main
from pezo.golden.engine.net_file import builtin_net

BAD_LAYER_0 = {
    "kernel": ({"kernel": 9, "padding": 4}, "kernel must be in 1..7 (the address generator's patch rows), got 9"),
    "stride": ({"stride": 3}, "stride must be one of 1, 2, got 3"),
    "padding": ({"padding": 2}, "padding must be an integer in 0..1 (kernel // 2), got 2"),
    "odd-pool": ({"height": 7, "width": 7}, "a 2x2 max pool needs an even output size, got 7x7"),
}
BAD_ONNX = {
    "kernel": (
        {"k": 9, "pads": 0},
        "node '/conv0/Conv' (op Conv): conv 9x9/1 pad 0 1x8x8 -> 4: kernel must be in",
    ),
    "stride": ({"strides": 3}, "node '/conv0/Conv' (op Conv): conv 3x3/3 pad 1 1x8x8 -> 4: stride must be one of 1, 2"),
    "padding": ({"pads": 2}, "node '/conv0/Conv' (op Conv): conv 3x3/1 pad 2 1x8x8 -> 4: padding must be an integer"),
    "odd-pool": ({"image": (1, 6, 6)}, "node '/pool1/MaxPool' (op MaxPool): conv 3x3/1 pad 1 4x3x3 -> 8: a 2x2 max"),
}
COMMANDS = {
    "train-int8": ["train-int8", "--steps", "1", "--out", "out"],
    "sim engine": ["sim", "engine", "--steps", "1"],
    "build": ["build", "--design", "engine", "--out", "out"],
}


def _run(argv, folder, capsys, monkeypatch):
    """Run in ``folder`` (which holds the inputs only): one error line, exit 2, nothing written there."""
    monkeypatch.chdir(folder)
    before = sorted(folder.iterdir())
    code = main(argv)
    _, err = capsys.readouterr()
    assert code == 2 and err.startswith("pezo: error: ") and err.count("\n") == 1, (code, err)
    assert sorted(folder.iterdir()) == before, "nothing written (no --out, no staging directory)"
    return err


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("bad", BAD_LAYER_0)
def test_a_network_file_with_a_bad_conv_layer(bad, command, tmp_path, capsys, monkeypatch):
    described = builtin_net("digits-cnn").to_dict()
    change, needle = BAD_LAYER_0[bad]
    described["layers"][0] = {**described["layers"][0], **change}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(described))
    err = _run([*COMMANDS[command], "--net", str(path)], tmp_path, capsys, monkeypatch)
    assert "key 'layers[0]': conv " in err and needle in err, err


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("bad", BAD_ONNX)
def test_an_onnx_model_with_a_bad_conv_layer(bad, command, tmp_path, capsys, monkeypatch):
    onnx = pytest.importorskip("onnx")
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "golden"))
    from onnx_models import random_cnn, torch_style_cnn

    monkeypatch.setenv("PEZO_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    kwargs, needle = dict(BAD_ONNX[bad][0]), BAD_ONNX[bad][1]
    k, image = kwargs.pop("k", 3), kwargs.pop("image", (1, 8, 8))
    convs, fcs = random_cnn(k=k)
    model = tmp_path / "bad.onnx"
    onnx.save(torch_style_cnn(convs, fcs, image=image, **kwargs), str(model))
    rng = np.random.default_rng(0)
    data = tmp_path / "data.npz"
    np.savez(data, x_train=rng.uniform(-1, 1, (40, 64)), y_train=rng.integers(0, 10, 40))
    err = _run([*COMMANDS[command], "--net", str(model), "--data", str(data)], tmp_path, capsys, monkeypatch)
    assert needle in err and not any((tmp_path / "cache").iterdir()), err
