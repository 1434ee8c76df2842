"""pezo.cli.output.staged_output (the one staging path of every command's --out) and the CLI's layout."""

import argparse
import ast
import os
import signal
from pathlib import Path

import pytest

import pezo.cli
from pezo.cli.output import MARKER, OutputDirError, staged_output


def test_commit_marks_and_moves_into_place(tmp_path):
    out = tmp_path / "out"
    with staged_output(out, what={"command": "test"}) as staging:
        assert not staging.replacing and staging.target == out and staging.path.parent == tmp_path
        (staging.path / "a.txt").write_text("1")
        assert not out.exists()
    assert (out / "a.txt").read_text() == "1" and '"command": "test"' in (out / MARKER).read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    with staged_output(out) as staging:  # pezo's own output is replaced
        assert staging.replacing
        (staging.path / "b.txt").write_text("2")
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "b.txt"]


def test_failure_removes_staging_and_keeps_previous_output(tmp_path):
    out = tmp_path / "out"
    with staged_output(out) as staging:
        (staging.path / "a.txt").write_text("old")
    for exc in (RuntimeError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(exc)):
            with staged_output(out) as staging:
                (staging.path / "a.txt").write_text("new")
                raise exc
        assert (out / "a.txt").read_text() == "old"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_refusals(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    (user / "notes.txt").write_text("keep")
    with pytest.raises(OutputDirError, match="was not written by pezo"):
        with staged_output(user):
            pass
    mine = tmp_path / "mine"
    with staged_output(mine):
        pass
    with pytest.raises(OutputDirError, match="is not empty"):  # strict (pezo build): even pezo's own output
        with staged_output(mine, strict=True):
            pass
    with pytest.raises(
        OutputDirError,
        match=r"was not written by pezo \(it holds notes.txt\); choose another "
        "directory or remove them$",
    ):
        with staged_output(user, force=True):  # --force never deletes what pezo did not write
            pass
    assert (user / "notes.txt").read_text() == "keep"
    (tmp_path / "file").write_text("")
    with pytest.raises(OutputDirError, match="is not a directory"):
        with staged_output(tmp_path / "file"):
            pass


def test_command_families_import_only_args_output_and_methods():
    """No import cycle: main imports the families; the families import args / output (training: methods;
    hardware: report, which it registers between build and power; both: the generator options and board, the
    engine top's build/report; board, report and netfile (pezo net): net, for --net NAME|PATH; sim (pezo sim
    engine/board/uart/generator): net, engine (the engines' options), hardware (the generator bench's options) and
    board, whose data-memory check it shares; the commands that run on the executor: cluster)."""
    allowed = {
        "main": None,
        "training": {"args", "output", "methods", "cluster"},
        "hardware": {"args", "output", "generator", "report", "board"},
        "report": {"args", "output", "generator", "board", "cluster", "timing", "net"},
        "methods": {"args", "output", "cluster"},
        "explore": {"args", "output", "cluster"},
        "cluster": {"args"},
        "generator": {"args"},
        "engine": {"args", "net"},
        "board": {"args", "output", "net", "timing"},
        "sim": {"args", "net", "board", "engine", "hardware"},
        "netfile": {"args", "output", "net"},
    }
    for path in Path(pezo.cli.__file__).parent.glob("*.py"):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pezo.cli"):
                names = [node.module.split(".")[2]] if node.module != "pezo.cli" else [a.name for a in node.names]
                imported.update(names)
        if allowed.get(path.stem, ...) is None:
            continue
        assert "main" not in imported, path.name
        assert imported <= allowed.get(path.stem, {"args", "output"}), (path.name, imported)


class _CtrlCInFinaliser:
    """Ctrl-C arriving while Python runs a finaliser (as SQLAlchemy's weakref callbacks inside Optuna do):
    the ``KeyboardInterrupt`` is printed as "Exception ignored" and swallowed."""

    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10_000):  # the handler runs here, inside the finaliser
            pass


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_swallowed_ctrl_c_is_not_committed(tmp_path):
    """The interrupt flag outlives the swallowed KeyboardInterrupt: the staged output is not committed."""
    from pezo.executor import catch_interrupts, interrupted

    target = tmp_path / "out"
    with catch_interrupts(), pytest.raises(KeyboardInterrupt), staged_output(target) as staging:
        (staging.path / "a.txt").write_text("half")
        _CtrlCInFinaliser()
        assert interrupted()  # the finaliser returned normally: only the flag knows
    assert list(tmp_path.iterdir()) == []


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_swallowed_ctrl_c_exits_130(monkeypatch, capsys):
    """pezo's main exits 130 with its one line when the command returned normally after a swallowed Ctrl-C,
    and puts the previous SIGINT handler back."""
    from pezo.cli import main as cli_main

    def command(args):
        _CtrlCInFinaliser()
        return 0

    previous = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(cli_main.Parser, "parse_args", lambda self, argv=None: argparse.Namespace(func=command))
    assert cli_main.main(["verilog"]) == 130
    assert capsys.readouterr().err.endswith("pezo: interrupted\n")
    assert signal.getsignal(signal.SIGINT) is previous
