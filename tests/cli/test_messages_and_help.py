"""Issue: misleading error lines and wrong help from a new-user audit. Every message names the options as the
user types them (``--scaling``, not ``scaling``) and what was typed (``--out ''``, not ``--out .``); help
texts give each engine's defaults and the ranges, generated from the config objects."""

import argparse
import json
import re

import pytest

from pezo.cli.main import build_parser, main


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def one_error(argv, capsys):
    """The one ``pezo: error:`` line of a bad input (exit 2, nothing on stdout)."""
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and err.startswith("pezo: error: ") and err.count("\n") == 1, (code, out, err)
    return err


def help_text(argv, capsys) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return " ".join(capsys.readouterr().out.split())


def option_help(argv, option, capsys) -> str:
    """The help of one option of ``pezo <argv>`` as ``--help`` prints it (whitespace normalised)."""
    text = help_text(argv, capsys).split(" options: ", 1)[1]
    parser = build_parser()
    for name in argv:
        parser = _subcommands(parser)[name]
    action = next(a for a in parser._actions if option in a.option_strings)
    shown = " ".join((action.help % {"default": action.default}).split())
    assert shown in text, (option, shown, text)
    return shown


# -- 1. --out '' is named as typed ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv", [["verilog", "--out", ""], ["build", "--no-vivado", "--out="], ["report", "--out", ""]]
)
def test_an_empty_out_is_named_as_typed(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = one_error(argv, capsys)
    assert "--out '' is empty, not a directory name" in err and "--out ." not in err, err
    assert "is the current directory or one of its parents" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("typed", ["./", "../", "./sub/.."])
def test_out_the_current_directory_is_named_as_typed(typed, capsys, tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    err = one_error(["verilog", "--out", typed], capsys)
    assert f"--out {typed} is the current directory or one of its parents" in err, err


# -- 2. pezo train --task lists every task ----------------------------------------------------------------


def test_train_task_lists_every_task(capsys):
    from pezo.golden.methods.tasks import all_tasks

    err = one_error(["train", "--task", "foo"], capsys)
    assert f"--task must be one of {', '.join(all_tasks())}, got 'foo'" in err
    assert "digits" in all_tasks() and "rotten_tomatoes" in all_tasks()


# -- 3. every option in every error as typed ----------------------------------------------------------------


@pytest.mark.parametrize(
    "argv,needle",
    [
        (
            ["train", "--family", "pezo-otf", "--pool-size", "100"],
            "(pezo-otf takes only --n-rngs, --rng-bits, --scaling, --leap, --bit-order)",
        ),
        (
            ["train", "--family", "naive-int", "--scaling", "lut"],
            "(naive-int takes only --n-rngs, --rng-bits, --leap, --bit-order)",
        ),
        (["train-int8", "--rows", "3"], "--rows=3 does not tile --batch=16: batch must be a multiple of rows"),
        (["report", "--strategy", "pregen", "--lanes", "6", "--banks", "4"], "dividing --lanes=6, got 4"),
        (["sim", "engine", "--net", "digits-mlp", "--cols", "5"], "must be a multiple of --cols=5"),
        (["train-int8", "--strategy", "x"], "--strategy must be one of otf, pregen, got 'x'"),
        (["train", "--method", "x"], "--method must be one of mezo,"),
        (["train", "--keep-z", "yes"], "--keep-z must be one of auto, always, never, got 'yes'"),
        (["train", "--task", "digits", "--keep-z", "always"], "--keep-z applies to the golden MeZO trainer"),
        (["sweep", "--experiment", "x"], "--experiment must be one of table3"),
        (["report", "--unit", "fpga"], "--unit must be one of generator"),
        (["report", "--strategy", "engine-otf", "--eps-shift", "40"], "--eps-shift must be in 0..24, got 40"),
        (["report", "--strategy", "engine-pregen", "--pool-size", "3"], "--pool-size must be in 8..1048576, got 3"),
        (
            ["report", "--strategy", "engine-otf", "--unit", "board", "--eps-shift", "99"],
            "--eps-shift must be in 0..24",
        ),
        (["build", "--board", "zcu104"], "--board must be one of zcu102"),
        (["simulate", "--cycles", "0"], "--cycles must be an integer in 1..10000000"),
        (["simulate", "--unit", "host"], "--unit host is simulated by the test suite"),
        (["train", "--method", "mezo", "--task", "digits", "--hidden", "a,b"], "--hidden must be comma-separated"),
        (["sweep", "--methods", "foo"], "--methods must be a comma-separated subset"),
        (["sweep", "--methods", "mezo", "--tasks", "foo"], "--tasks must be a comma-separated subset"),
    ],
)
def test_options_in_errors_are_written_as_typed(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = one_error(argv, capsys)
    assert needle in err, err
    assert re.match(r"pezo: error: (--|no |training|layer )", err), err


def test_option_error_maps_bare_fields_inside_the_message():
    from pezo.cli.args import option_error

    fields = ("rows", "batch", "cols", "leap", "scaling", "n_rngs")
    message = str(
        option_error(
            ValueError("rows=3 does not tile batch=16: batch must be a multiple of rows (the array does not pad)"),
            fields,
            fields,
        )
    )
    assert message == "--rows=3 does not tile --batch=16: batch must be a multiple of rows (the array does not pad)"
    message = str(option_error(ValueError("leap is not an option (takes only n_rngs, scaling, leap)"), fields, fields))
    assert message == "--leap is not an option (takes only --n-rngs, --scaling, --leap)"
    # prose words that equal a field stay words; a list without options stays a list of values
    message = str(
        option_error(ValueError("scaling must be one of lut, exact, none; rows of the batch"), fields, fields)
    )
    assert message == "--scaling must be one of lut, exact, none; rows of the batch"


# -- 4. an unknown option points at the subcommand's help ----------------------------------------------------


@pytest.mark.parametrize(
    "argv,see",
    [
        (["train", "--bogus"], "(see pezo train --help)"),
        (["sim", "engine", "--bogus"], "(see pezo sim engine --help)"),
        (["sim", "board", "--bogus", "x"], "(see pezo sim board --help)"),
        (["report", "--bogus"], "(see pezo report --help)"),
        (["train-int8", "--steps", "3", "extra"], "(see pezo train-int8 --help)"),
    ],
)
def test_unknown_arguments_point_at_the_subcommands_help(argv, see, capsys):
    err = one_error(argv, capsys)
    assert err.startswith("pezo: error: unrecognized arguments: ") and err.rstrip().endswith(see), err


# -- 5. a cache directory that cannot be one ----------------------------------------------------------------


def test_a_file_as_pezo_cache_dir_is_one_line_naming_the_variable(capsys, tmp_path, monkeypatch):
    afile = tmp_path / "afile"
    afile.write_text("")
    monkeypatch.setenv("PEZO_CACHE_DIR", str(afile))
    err = one_error(["report", "--strategy", "otf", "--n-rngs", "5", "--json", "--no-timing"], capsys)
    assert f"PEZO_CACHE_DIR={afile}: {afile} is not a directory" in err and "Not a directory" not in err, err
    monkeypatch.setenv("PEZO_CACHE_DIR", str(afile / "sub"))
    err = one_error(["report", "--strategy", "otf", "--n-rngs", "5", "--json", "--no-timing"], capsys)
    assert f"PEZO_CACHE_DIR={afile / 'sub'}: {afile} is not a directory, so {afile / 'sub'} cannot be created" in err


def test_a_file_as_xdg_cache_home_is_named(tmp_path, monkeypatch):
    from pezo.golden.config import CacheDirError, cache_dir

    afile = tmp_path / "afile"
    afile.write_text("")
    monkeypatch.delenv("PEZO_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(afile))
    with pytest.raises(
        CacheDirError,
        match=rf"^XDG_CACHE_HOME={re.escape(str(afile))}: .* is not a directory, so "
        r".*/pezo cannot be created .*XDG_CACHE_HOME",
    ):
        cache_dir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "pezo"


# -- 6. help of both engines; the JSON config is the one that ran --------------------------------------------


@pytest.mark.parametrize("command", [["sim", "engine"], ["train-int8"]])
@pytest.mark.parametrize(
    "option,head,field",
    [
        ("--batch", "batch", "batch"),
        ("--eps-shift", "eps_shift", "eps_shift"),
        ("--stream-seed", "seed", "stream_seed"),
        ("--lr", "lr", "lr"),
    ],
)
def test_engine_help_gives_the_head_and_the_net_defaults(command, option, head, field, capsys):
    from pezo.golden.engine.zo_engine import EngineConfig
    from pezo.golden.zo.int8_head import Int8TrainConfig
    from pezo.golden.zo.net_config import NetTrainConfig

    head_value = EngineConfig().to_dict()[head] if head != "lr" else Int8TrainConfig().lr
    net_value = NetTrainConfig().to_dict()[field]
    assert head_value != net_value

    def shown(v):
        return f"{v:g}" if isinstance(v, float) else str(v)

    text = option_help(command, option, capsys)
    assert f"(default {shown(head_value)} for the head engine, {shown(net_value)} with --net)" in text, text


@pytest.mark.parametrize("net", [None, "digits-mlp"])
def test_sim_engine_json_config_is_the_config_that_ran(net, capsys, monkeypatch):
    import pezo.cli.sim as engine
    import pezo.sim.runner as runner

    ran = []

    def fake(train, steps, simulator, **kwargs):
        ran.append(train)
        return {"match": True, "steps": steps, "config": train.to_dict()}

    monkeypatch.setattr(runner, "available_simulators", lambda: ["icarus"])
    monkeypatch.setattr(engine, "net_sim_result" if net else "engine_sim_result", fake)
    code, out, _ = run(["sim", "engine", "--steps", "3", "--json", *(["--net", net] if net else [])], capsys)
    result = json.loads(out)
    assert code == 0 and result["steps"] == 3 and result["config"]["steps"] == 3 and ran[0].steps == 3


# -- 7. pezo --help ---------------------------------------------------------------------------------------


def _subcommands(parser) -> dict:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_top_level_help_names_every_sim_subcommand_and_the_nets(capsys):
    from pezo.golden.engine.nets import NET_NAMES

    sim = _subcommands(_subcommands(build_parser())["sim"])
    text = help_text([], capsys)
    assert set(sim) >= {"engine", "board"}
    for name in sim:
        assert f"'pezo sim {name}'" in text, name
    train_int8 = text[text.index("train-int8 golden") : text.index(" quality ")]
    assert "with --net a whole network" in train_int8 and all(net in train_int8 for net in NET_NAMES)


# -- 8. defaults and ranges in help -------------------------------------------------------------------------


def test_net_options_and_train_int8_steps_show_defaults_and_ranges(capsys):
    from pezo.golden.engine.loss import G_SHIFT_RANGE, MAX_MARGIN
    from pezo.golden.engine.zo_engine import G_MAX
    from pezo.golden.zo.int8_head import STEPS_RANGE, Int8TrainConfig
    from pezo.golden.zo.net_config import NetTrainConfig

    net, head = NetTrainConfig(), Int8TrainConfig()
    assert f"0..{MAX_MARGIN} (default {net.margin})" in option_help(["train-int8"], "--margin", capsys)
    assert f"1..{G_MAX} (default {net.g_lr})" in option_help(["sim", "engine"], "--g-lr", capsys)
    assert f"{G_SHIFT_RANGE[0]}..{G_SHIFT_RANGE[1]} (default {net.g_shift})" in option_help(
        ["train-int8"], "--g-shift", capsys
    )
    lo, hi = STEPS_RANGE
    assert f"ZO steps, {lo}..{hi} (default {head.steps} for the head engine, {net.steps} with --net)" in option_help(
        ["train-int8"], "--steps", capsys
    )
    assert f"{lo}..{hi} (default {head.eval_every} for the head engine, {net.eval_every} with --net)" in option_help(
        ["train-int8"], "--eval-every", capsys
    )


# -- 10. the quality table keeps huge numbers readable --------------------------------------------------------


def test_quality_table_writes_huge_inflation_readably(capsys):
    code, out, _ = run(["quality", "--family", "naive-int", "--trials", "20", "--d", "50", "--json"], capsys)
    r = json.loads(out)
    assert code == 0 and r["inflation"] > 1e10  # the JSON keeps the exact number
    code, out, _ = run(["quality", "--family", "naive-int,gaussian", "--trials", "20", "--d", "50"], capsys)
    row = next(line for line in out.splitlines() if line.startswith("| naive-int"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert re.fullmatch(r"\d\.\d\de\+\d\d", cells[5]) and re.fullmatch(r"\d\.\d\de\+\d\d", cells[6]), row
    assert all(len(c) < 12 for c in cells), row

    from pezo.cli.quality import readable

    assert readable(1302521759140906.5) == "1.30e+15" and readable(1.954) == "1.954" and readable(0.0) == "0.000"
    assert readable(2e-5) == "2.00e-05"


# -- 11. the resources figure ---------------------------------------------------------------------------------


def test_resources_figure_writes_zero_and_not_reported_apart_from_values(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from pezo.boards.flow.comparison_rows import PEZO_TABLE6
    from pezo.boards.flow.comparison_table import plot_resources

    figures = []
    monkeypatch.setattr(plt, "close", lambda fig=None: figures.append(fig))
    rows = [
        dict(design="zero", LUT=0, FF=0, BRAM=1, DSP=0),
        dict(design="one", LUT=1, FF=2, BRAM=0, DSP=0),
        dict(design="engine", LUT=2946, FF=3287, BRAM=9, DSP=72),
    ]
    plot_resources(rows, tmp_path / "r.png")
    lut, _, _, dsp = figures[0].axes
    labels = {round(t.get_position()[1]): t for t in dsp.texts}
    pezo_rows = range(len(PEZO_TABLE6))  # drawn at y = 0 .. below the line; PeZO Table 6 reports no DSP
    assert all(labels[y].get_text().strip() == "n/a" for y in pezo_rows)
    zero = [t for t in lut.texts if t.get_text().strip() == "0"]
    assert zero and all(t.get_color() != "black" for t in zero)  # a zero is not written like a value
    assert all(bar.get_width() > 0 for ax in figures[0].axes for bar in ax.patches)
    assert any(isinstance(line, Line2D) and list(line.get_xdata()) == [1] for line in lut.lines)  # the 1 is drawn
    assert "0 is written" in lut.get_xlabel()


# -- 12. no placeholder debug Verilog in a build ------------------------------------------------------------


@pytest.mark.parametrize("design", ["engine", "stream"])
def test_build_writes_no_placeholder_debug_verilog(design, tmp_path, capsys):
    from pezo.cli.output import MARKER

    out = tmp_path / "b"
    code, text, err = run(["build", "--design", design, "--out", str(out), "--no-vivado"], capsys)
    assert code == 0, err
    names = {p.name for p in out.iterdir()} - {MARKER}
    assert "top.debug.v" not in names and {"top.v", "top.tcl", "top.xdc", "config.json"} <= names
    assert set(json.loads((out / MARKER).read_text())["files"]) == names
    assert text.splitlines()[0] == f"wrote {out}/: {', '.join(sorted(names))}"


# -- 13. progress on stderr with --json -----------------------------------------------------------------------


def test_report_json_prints_its_progress_note_on_stderr(capsys, monkeypatch):
    import pezo.boards.flow.report as report

    monkeypatch.setattr(report, "is_report_cached", lambda config, unit: False)
    monkeypatch.setattr(report, "report", lambda config, use_cache=True, unit="generator": {"LUT": 33, "FF": 453})
    code, out, err = run(["report", "--strategy", "otf", "--json", "--no-timing"], capsys)
    assert code == 0 and json.loads(out)["LUT"] == 33
    assert "synthesizing with Yosys" in err
