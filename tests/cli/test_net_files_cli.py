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
        (["net", "show", "digits-mlp", "--out", "{tmp}/n.txt"], "must end in .json"),
        (["net", "show", "digits-mlp", "--out", "{tmp}/missing/n.json"], "does not exist"),
        (["net", "show", "{tmp}/bad.json"], "unknown key 'colour'"),
        (["train-int8", "--net", "{tmp}/bad.json"], "unknown key 'colour'"),
        (["train-int8", "--net", "{tmp}/none.json"], "cannot be read"),
        (["train-int8", "--net", "digits-mlp", "--data", "{tmp}/d.txt"], "--data must be the path of a .npz or .csv"),
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
