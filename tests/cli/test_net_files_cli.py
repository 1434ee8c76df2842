"""``pezo net`` and ``--net PATH`` / ``--data PATH`` on the command line: files written whole, bad input one line,
exit 2, nothing written."""

import json

import pytest

from pezo.cli.main import main


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", ["digits-mlp", "rt-mlp", "rt-head"])
def test_net_show_writes_every_builtin_as_a_file_that_shows_the_same(name, tmp_path, capsys):
    out = tmp_path / f"{name}.json"
    code, text, _ = run(["net", "show", name, "--out", str(out)], capsys)
    assert code == 0 and f"wrote {out}" in text
    assert json.loads(out.read_text())["format"] == "pezo-net"
    _, again, _ = run(["net", "show", str(out)], capsys)
    assert again.splitlines()[0] == text.splitlines()[0]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["net", "show", "mnist"], "invalid choice: 'mnist'"),
        (["net", "show", "digits-mlp", "--out", "{tmp}/n.txt"], "name the file *.json"),
        (["net", "show", "digits-mlp", "--out", "{tmp}/missing/n.json"], "does not exist"),
        (["net", "show", "{tmp}/bad.json"], "unknown key 'colour'"),
        (["train-int8", "--net", "{tmp}/bad.json"], "unknown key 'colour'"),
        (["train-int8", "--net", "{tmp}/none.json"], "cannot be read"),
        (["train-int8", "--net", "digits-mlp", "--data", "{tmp}/d.txt"], "--data must be the path of a .npz or .csv"),
        (["report", "--strategy", "engine-otf", "--net", "digits-mlp", "--data", "{tmp}/d.npz"], "an ONNX --net only"),
        (["build", "--design", "engine", "--data", "{tmp}/d.npz", "--out", "{tmp}/b"], "an ONNX --net only"),
    ],
)
def test_bad_net_input_is_one_line_and_exit_2(argv, message, tmp_path, capsys):
    (tmp_path / "bad.json").write_text(
        json.dumps(
            {"format": "pezo-net", "version": 1, "name": "n", "layers": [{"inputs": 8, "outputs": 2}], "colour": 1}
        )
    )
    before = sorted(p.name for p in tmp_path.rglob("*"))
    code, _, err = run([a.replace("{tmp}", str(tmp_path)) for a in argv], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and lines[-1].startswith("pezo: error:") and message in lines[-1], err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_net_show_does_not_replace_a_file_without_force(tmp_path, capsys):
    out = tmp_path / "n.json"
    out.write_text("mine")
    code, _, err = run(["net", "show", "digits-mlp", "--out", str(out)], capsys)
    assert code == 2 and "--force" in err and out.read_text() == "mine"
    assert run(["net", "show", "digits-mlp", "--out", str(out), "--force"], capsys)[0] == 0


@pytest.fixture
def model_and_data(tmp_path):
    """A torch-style 16-16-4 ONNX MLP and a .npz of 300 labelled examples (its own float argmax)."""
    pytest.importorskip("onnx")
    import sys
    from pathlib import Path

    import numpy as np

    sys.path.insert(0, str(Path(__file__).parents[1] / "golden"))
    from onnx_models import random_mlp, torch_style_mlp

    weights, biases = random_mlp([16, 16, 4], seed=3)
    model = tmp_path / "m.onnx"
    model.write_bytes(torch_style_mlp(weights, biases, extra=[("Softmax", {"axis": 1})]).SerializeToString())
    x = np.random.default_rng(4).normal(0, 1, (300, 16))
    y = (np.maximum(x @ weights[0].T + biases[0], 0) @ weights[1].T + biases[1]).argmax(axis=1)
    np.savez(tmp_path / "d.npz", x_train=x, y_train=y)
    return model, tmp_path / "d.npz", x, y


def test_net_import_writes_a_file_and_reports_float_and_int8_accuracy(model_and_data, tmp_path, capsys):
    model, data, _, _ = model_and_data
    out = tmp_path / "m.json"
    code, text, _ = run(["net", "import", str(model), "--data", str(data), "--out", str(out), "--json"], capsys)
    report = json.loads(text)["import"]
    assert code == 0 and out.exists() and report["test_float_accuracy"] == 1.0
    assert report["test_int8_accuracy"] >= 0.9


def bad_data(tmp_path, x, y, **change):
    import numpy as np

    path = tmp_path / "bad.npz"
    np.savez(path, **{"x_train": x, "y_train": y, **change})
    return str(path)


@pytest.mark.parametrize(
    "case, message",
    [
        ("nan", "x_train holds NaN or inf (row 5, column 2)"),
        ("width", "the data has 15 features, the model's first layer ('/1/Gemm') takes 16 inputs"),
        ("width-file", "x_train has 15 features, the network takes 16 inputs"),
        ("labels", "y_train has labels 1..7, the network classifies into 4 outputs"),
        ("no-data", "needs --data PATH"),
        ("truncated", "is not a valid ONNX model"),
        ("tile", "does not tile the array"),
    ],
)
def test_bad_model_or_data_is_one_line_exit_2_and_nothing_written(case, message, model_and_data, tmp_path, capsys):
    model, data, x, y = model_and_data
    out = tmp_path / "o.json"
    argv = ["net", "import", str(model), "--data", str(data), "--out", str(out)]
    if case == "nan":
        x = x.copy()
        x[5, 2] = float("nan")
        argv[4] = bad_data(tmp_path, x, y)
    elif case == "width":
        argv[4] = bad_data(tmp_path, x[:, :15], y)
    elif case == "width-file":
        run(["net", "import", str(model), "--data", str(data), "--out", str(out)], capsys)
        argv = ["train-int8", "--net", str(out), "--data", bad_data(tmp_path, x[:, :15], y), "--steps", "2"]
    elif case == "labels":
        argv[4] = bad_data(tmp_path, x, y * 2 + 1)
    elif case == "no-data":
        argv = ["train-int8", "--net", str(model), "--steps", "2"]
    elif case == "truncated":
        model.write_bytes(model.read_bytes()[:200])
    elif case == "tile":
        run(["net", "import", str(model), "--data", str(data), "--out", str(out)], capsys)
        argv = ["train-int8", "--net", str(out), "--data", str(data), "--steps", "2", "--cols", "32"]
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = run(argv, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and lines[-1].startswith("pezo: error:") and message in lines[-1], err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
