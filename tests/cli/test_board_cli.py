"""``pezo sim board``: bad input is one error line naming the option (no simulation starts)."""

from __future__ import annotations

import pytest

from pezo.cli.main import main


@pytest.mark.parametrize("argv,message", [
    (["--cols", "4"], "--cols must be a power of two >= 8"),
    (["--steps", "0"], "--steps must be an integer in 1..1000"),
    (["--batch", "12"], "batch must be a multiple of rows"),
    (["--net", "nope"], "invalid choice: 'nope'"),
])
def test_bad_input_is_one_line(argv, message, capsys):
    assert main(["sim", "board", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err

