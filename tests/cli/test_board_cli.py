"""``pezo sim board``: bad input is one error line naming the option (no simulation starts)."""

from __future__ import annotations

import json

import pytest

from pezo.cli.main import main


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--cols", "4"], "--cols must be a power of two >= 8"),
        (["--steps", "0"], "--steps must be an integer in 1..1000"),
        (["--batch", "12"], "batch must be a multiple of rows"),
        (["--net", "nope"], "invalid choice: 'nope'"),
    ],
)
def test_bad_input_is_one_line(argv, message, capsys):
    assert main(["sim", "board", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_build_engine_writes_the_design_and_refuses_an_existing_run(tmp_path, capsys):
    out = tmp_path / "engine"
    assert main(["build", "--design", "engine", "--net", "digits-mlp", "--batch", "16", "--out", str(out)]) == 0
    assert {"top.v", "top.tcl", "config.json", "pezo_regs.h", "pezo_example.c"} <= {p.name for p in out.iterdir()}
    assert "python3 -m pezo.driver --design" in capsys.readouterr().out
    (out / "top.bit").write_text("a Vivado run")
    assert main(["build", "--design", "engine", "--batch", "16", "--out", str(out)]) == 2
    assert "is not empty" in capsys.readouterr().err and (out / "top.bit").read_text() == "a Vivado run"


def test_build_engine_takes_a_conv_net(tmp_path, capsys):
    """Issue 33: the ZCU102 engine top of digits-cnn; its config.json tells the host to write layer 0's patches."""
    out = tmp_path / "cnn"
    assert main(["build", "--design", "engine", "--net", "digits-cnn", "--batch", "16", "--out", str(out)]) == 0
    described = json.loads((out / "config.json").read_text())
    assert described["map"]["x_layout"] == "patches" and described["map"]["x_bytes"] == 1024
    assert "engine top of digits-cnn" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--design", "engine", "--n-rngs", "7"], "--n-rngs does not apply to --design engine"),
        (["--net", "rt-mlp"], "--net does not apply to --design stream"),
        (["--design", "engine", "--strategy", "gaussian"], "--strategy must be otf or pregen with --design engine"),
        (["--design", "engine", "--cols", "4"], "--cols must be a power of two >= 8"),
        (["--design", "engine", "--board", "ulx3s-85f", "--examples", "3"], "--examples: capacity must be a power"),
        (["--design", "board"], "invalid choice: 'board'"),
    ],
)
def test_build_engine_bad_input(argv, message, tmp_path, capsys):
    assert main(["build", *argv, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "x").exists()


def test_report_board_bad_input_is_one_line(capsys):
    assert main(["report", "--strategy", "engine-pregen", "--unit", "board", "--rng-bits", "8"]) == 2
    err = capsys.readouterr().err
    assert "--rng-bits applies to --strategy engine-otf only" in err and err.count("\n") == 1, err
