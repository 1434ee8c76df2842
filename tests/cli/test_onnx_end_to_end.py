"""Real models end to end from the command line: a model trained by another tool and exported by that tool's
converter -> pezo train-int8 --net MODEL.onnx --data D.npz --out DIR -> DIR/<name>.onnx in onnxruntime gives the
golden engine's predictions (NetEngine.infer) and the accuracy pezo reported.

* scikit-learn's MLPClassifier on the digits, converted by skl2onnx (Cast, MatMul + Add, Relu, Softmax, ArgMax,
  ZipMap, ArrayFeatureExtractor, Reshape, Cast).
* a PyTorch nn.Sequential MLP: torch is not installed here, so the model is built with onnx.helper in the exact
  form torch.onnx.export writes (Flatten, Gemm transB=1, Relu; tests/golden/onnx_models.py)."""

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

from pezo.cli.main import main  # noqa: E402
from pezo.golden.engine.calibration import quantize_rint  # noqa: E402
from pezo.golden.engine.net_file import read_net_file  # noqa: E402
from pezo.golden.zo.net_eval import engine_logits  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1] / "golden"))
from onnx_models import torch_style_mlp  # noqa: E402


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    from sklearn.datasets import load_digits

    d = load_digits()
    x, y = d.data.astype(np.float32), d.target
    path = tmp_path_factory.mktemp("data") / "digits.npz"
    np.savez(
        path,
        x_train=x[:1000],
        y_train=y[:1000],
        x_val=x[1000:1300],
        y_val=y[1000:1300],
        x_test=x[1300:],
        y_test=y[1300:],
    )
    return path, x, y


def fitted_mlp(x, y):
    from sklearn.neural_network import MLPClassifier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the optimiser has not fully converged in 150 iterations: fine here
        return MLPClassifier((32,), max_iter=150, random_state=0).fit(x[:1000], y[:1000])


def sklearn_model(x, y):
    pytest.importorskip("skl2onnx")
    from skl2onnx import to_onnx

    return to_onnx(fitted_mlp(x, y), x[:1])


def torch_model(x, y):
    """The same trained weights as nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10),
    nn.Softmax(1)) exported by torch.onnx.export would hold them (Linear's weight is [out, in])."""
    mlp = fitted_mlp(x, y)
    weights = [w.T for w in mlp.coefs_]
    return torch_style_mlp(weights, mlp.intercepts_, extra=[("Softmax", {"axis": 1})])


@pytest.mark.parametrize("make", [sklearn_model, torch_model], ids=["sklearn-skl2onnx", "torch-form"])
def test_import_train_export_and_onnxruntime_agrees(make, digits, tmp_path, capsys):
    data, x, y = digits
    model = tmp_path / "model.onnx"
    model.write_bytes(make(x, y).SerializeToString())
    out = tmp_path / "out"
    argv = ["train-int8", "--net", str(model), "--data", str(data), "--out", str(out)]
    code = main(argv + ["--steps", "20", "--eval-every", "10", "--batch", "64", "--quiet", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and sorted(p.name for p in out.iterdir()) == [
        ".pezo-output",
        "model.json",
        "model.onnx",
        "summary.json",
    ]
    report = result["onnx_import"]
    assert report["test_float_accuracy"] > 0.85 and report["test_int8_accuracy"] >= report["test_float_accuracy"] - 0.02
    net = read_net_file(out / "model.json")
    session = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    logits, label = session.run(None, {"input": x[1300:]})
    golden = engine_logits(net.engine(net.config.replace(batch=8)), quantize_rint(x[1300:], net.input_exponent))
    assert np.array_equal(label, golden.argmax(axis=1))
    assert float((label == y[1300:]).mean()) == result["test_accuracy"]


def test_build_engine_takes_a_network_file(digits, tmp_path, capsys):
    data, x, y = digits
    model = tmp_path / "model.onnx"
    model.write_bytes(torch_model(x, y).SerializeToString())
    out = tmp_path / "design"
    argv = ["build", "--design", "engine", "--net", str(model), "--data", str(data), "--out", str(out), "--no-vivado"]
    assert main(argv) == 0
    described = json.loads((out / "config.json").read_text())
    layers = described["map"]["config"]["layers"]
    assert [(l["inputs"], l["outputs"], l["bias"]) for l in layers] == [(64, 32, True), (32, 10, True)]
    assert "engine top of model" in capsys.readouterr().out


@pytest.mark.rtl
@pytest.mark.parametrize("make", [sklearn_model, torch_model], ids=["sklearn-skl2onnx", "torch-form"])
def test_an_imported_model_trains_on_the_rtl_like_golden(make, digits, tmp_path, require_simulator, capsys):
    require_simulator("icarus")
    data, x, y = digits
    model = tmp_path / "model.onnx"
    model.write_bytes(make(x, y).SerializeToString())
    argv = ["sim", "engine", "--net", str(model), "--data", str(data), "--steps", "3", "--batch", "16"]
    assert main(argv + ["--simulator", "icarus", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["match"] is True and result["net"] == "model" and result["layers"][0] == "64 -> 32 + bias relu"


def test_the_board_driver_takes_the_model_and_saves_onnx(digits, tmp_path, capsys):
    """``python -m pezo.driver --net MODEL.onnx --data D`` prepares the imported model's job (on a zero-filled
    stand-in for /dev/mem it stops at the identity check), and ``--save`` writes weights onnxruntime runs."""
    from pezo.boards.zcu102_engine import addresses
    from pezo.driver.__main__ import main as driver_main
    from pezo.driver.__main__ import prepare, save_trained
    from pezo.golden.engine.network import NetConfig, NetEngine

    data, x, y = digits
    model = tmp_path / "model.onnx"
    model.write_bytes(torch_model(x, y).SerializeToString())
    design = tmp_path / "d"
    argv = ["build", "--design", "engine", "--net", str(model), "--data", str(data), "--out", str(design)]
    assert main(argv + ["--no-vivado", "--batch", "16"]) == 0
    capsys.readouterr()
    described = json.loads((design / "config.json").read_text())
    config = NetConfig.from_dict(described["map"]["config"])
    job = prepare(config, 1, net=str(model), data=str(data))
    xs, ys = job.batches(3)
    engine = NetEngine(config, job.flat_weights, job.biases)
    for xb, yb in zip(xs, ys):
        engine.train_step(xb, yb, job.loss)
    saved = save_trained(tmp_path / "saved", config, engine.flat, job)
    session = ort.InferenceSession(saved[1], providers=["CPUExecutionProvider"])
    _, label = session.run(None, {"input": x[1300:]})
    want = engine_logits(engine, quantize_rint(x[1300:], job.act_exponent)).argmax(axis=1)
    assert np.array_equal(label, want)
    where = addresses(config)
    fake = tmp_path / "not-the-board-devmem"
    with open(fake, "wb") as f:
        f.truncate(where["windows_base"] + where["windows_size"])
    argv = ["--design", str(design), "--mem", str(fake), "--steps", "2", "--net", str(model), "--data", str(data)]
    assert driver_main(argv) == 1 and "not the engine top" in capsys.readouterr().err


@pytest.mark.rtl
@pytest.mark.slow
def test_an_imported_model_trains_through_axi_on_the_engine_top(digits, tmp_path, require_simulator, capsys):
    """``pezo sim board --net MODEL.onnx --data D``: the host driver runs the job through AXI (biases included)."""
    require_simulator("icarus")
    data, x, y = digits
    model = tmp_path / "model.onnx"
    model.write_bytes(torch_model(x, y).SerializeToString())
    argv = ["sim", "board", "--net", str(model), "--data", str(data), "--steps", "2", "--simulator", "icarus"]
    assert main(argv + ["--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["match"] is True and result["net"] == "model"
