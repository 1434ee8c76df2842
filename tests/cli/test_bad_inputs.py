"""Issue 21: bad inputs from a new-user audit, each one clean ``pezo: error:`` line, exit 2, nothing written.

``BAD_INPUTS`` is the table (command -> expected message part); add a row for every new bad input found.
The data-loss repros (another command's directory, a touched file, an existing --csv / --plot / --saif,
``--out ''`` / ``--out .``) and the interrupt of a sweep's workers have their own tests below.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pezo.cli.main import main
from pezo.cli.output import MARKER, OutputDirError, staged_output

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "explore"
BAD_INPUTS = [
    # options that do not apply to the chosen mode
    (["sweep", "--tasks", "digits"], "--tasks applies to pezo sweep --methods only"),
    (["sweep", "--method", "elasticzo"], "--method is an option of pezo train"),
    (["sweep", "--methods", "mezo", "--experiment", "table3"], "--experiment applies to the PeZO experiments sweep"),
    (["sweep", "--split", "cls1"], "--split applies to pezo sweep --methods only"),
    (
        ["train", "--method", "poormans", "--r-max", "5"],
        "--r-max applies to --method elasticzo-int8 only, not poormans",
    ),
    (["train", "--method", "mezo", "--split", "cls1"], "--split applies to --method elasticzo / elasticzo-int8 only"),
    (["train", "--method", "elasticzo-int8", "--mu-weight", "3"], "--mu-weight applies to --method poormans only"),
    (["train", "--method", "poormans", "--z-scale", "pow2"], "--z-scale applies to --method sign-m-spsa only"),
    (["train", "--method", "elasticzo-int8", "--g-clip", "3"], "--g-clip applies to --method elasticzo only"),
    # validated before any run starts
    (
        ["sweep", "--methods", "mezo", "--tasks", "rotten_tomatoes", "--shots", "99999", "--seeds", "1"],
        "--shots must be in 1..2692 for task rotten_tomatoes",
    ),
    # the option names the user typed, and defaults said to be defaults
    (["report", "--n-rngs", "0"], "--n-rngs must be in 1..1024, got 0"),
    (["report", "--strategy", "pregen", "--pool-bits", "99"], "--pool-bits must be in"),
    (
        ["build", "--strategy", "pregen", "--lanes", "7", "--out", "/tmp/pezo-never-written"],
        "(--banks was not given: 8 is its default",
    ),
    (["train", "--task", "digits", "--n-rngs", "0"], "'--n-rngs'"),
    # a huge bad value is cut
    (["report", "--n-rngs", "x" * 100_000], "...(100002 characters)"),
    # paths checked before any work
    (["power", "--saif", "/proc/x.saif"], "--saif /proc/x.saif: cannot write in /proc"),
    (["power", "--saif", "activity.csv"], "--saif activity.csv: name the file *.saif"),
    (["build", "--saif", "/nonexistent.saif"], "no such file"),
    (["report", "--csv", "/nonexistent/dir/x.csv"], "the directory /nonexistent/dir does not exist"),
    (["build", "--out", "", "--no-vivado"], "is the current directory or one of its parents"),
    (["build", "--out", ".", "--no-vivado"], "is the current directory or one of its parents"),
    (["verilog", "--out", ".."], "is the current directory or one of its parents"),
    (["report", "--out", "/"], "is the current directory or one of its parents"),
    # one meaning per option name: --seed is the LFSR / pool seed in build and report, never the data split
    (["train-int8", "--seed", "3"], "--seed is ambiguous here: give --split-seed"),
    (["sim", "engine", "--net", "digits-mlp", "--seed", "3"], "or --stream-seed (the LFSR / pool master seed)"),
    (["sim", "board", "--seed", "3"], "--seed is ambiguous here: give --split-seed"),
    (["train-int8", "--net", "digits-mlp", "--split-seed", "0"], "--split-seed must be in 1..16383, got 0"),
    (["sim", "board", "--split-seed", "0"], "--split-seed must be in 1..16383, got 0"),
    (["train-int8", "--stream-seed", "0"], "--stream-seed must be in 1..16383, got 0"),
    (["train-int8", "--rows", "0"], "--rows must be in 1..64, got 0"),
    (["train-int8", "--net", "digits-mlp", "--eps-shift", "99"], "--eps-shift must be in 0..24, got 99"),
    (["train-int8", "--net", "rt-mlp", "--g-lr", "0"], "--g-lr must be in 1..8388607, got 0"),
    (["train-int8", "--eval-every", "0"], "--eval-every must be in 1..10000000, got 0"),
    (["sim", "engine", "--steps", "0"], "--steps must be an integer in 1..10000, got 0"),
    # the elastic trainer: a split outside 0..L, bp_bits out of range, BP settings without a backprop tail
    (
        ["train-int8", "--net", "digits-mlp", "--split", "4"],
        "--split must be one of full-zo, cls2, cls1, full-bp or a layer index 0..3, got 4",
    ),
    (
        ["train-int8", "--net", "rt-mlp", "--split", "cls9"],
        "--split must be one of full-zo, cls2, cls1, full-bp or a layer index 0..2, got 'cls9'",
    ),
    (["train-int8", "--net", "rt-head", "--split", "cls1"], "--split 'cls1' needs at least 2 layers; this net has 1"),
    (["train-int8", "--net", "digits-mlp", "--split", "cls2", "--bp-bits", "8"], "--bp-bits must be in 1..7, got 8"),
    (
        ["train-int8", "--net", "digits-mlp", "--bp-bits", "3"],
        "--bp-bits is a setting of the backprop tail: split 'full-zo'",
    ),
    (["train-int8", "--split", "cls2"], "--split applies to --net runs only"),
    (
        ["sim", "engine", "--net", "digits-mlp", "--split", "cls2", "--loss", "host"],
        "--split cls2 needs --loss on-chip: the engine's backprop tail runs inside its TRAIN steps",
    ),
    (
        ["sim", "engine", "--net", "digits-mlp", "--split", "full-bp", "--rows", "4", "--batch", "16"],
        "--split full-bp: the backprop tail needs a square array",
    ),
    (
        ["sim", "board", "--split", "full-bp", "--rows", "4", "--batch", "16"],
        "--split full-bp: the backprop tail needs a square array",
    ),
    # issue 33: the network engine and the AXI engine top run conv layers (pezo sim engine / board, build --board
    # zcu102, report); the ULX3S trainer's data memory does not take a conv layer 0's patches, the tail is dense-only
    (
        ["build", "--design", "engine", "--board", "ulx3s-85f", "--net", "digits-cnn"],
        "--net digits-cnn: layer 0 (conv3x3/1 pad 1 64 -> 8x4x4 relu maxpool) is a convolution; the ulx3s-85f "
        "trainer's data memory would hold its im2col'd patches (1024 bytes per example, not 64)",
    ),
    (
        ["train-int8", "--net", "digits-cnn", "--split", "full-bp"],
        "split 'full-bp' puts layer 0 (conv3x3/1 pad 1 64 -> 8x4x4 relu maxpool) in the backprop tail",
    ),
    (["train-int8", "--net", "digits-cnn", "--split", "1"], "puts layer 1 (conv3x3/1 pad 1 128 -> 16x2x2"),
    # where the runs go (pezo.executor): a scheduler that does not answer within $PEZO_SCHEDULER_TIMEOUT (1 s here)
    (
        [
            "sweep",
            "--methods",
            "mezo",
            "--tasks",
            "digits",
            "--seeds",
            "1",
            "--steps",
            "2",
            "--scheduler",
            "tcp://127.0.0.1:1",
        ],
        "--scheduler tcp://127.0.0.1:1: no Dask scheduler answered within 1 s",
    ),
    (
        ["sweep", "--experiment", "table3", "--shots", "2", "--seeds", "1", "--scheduler", "127.0.0.1:8786"],
        "--scheduler must be a Dask scheduler address tcp://HOST:PORT (port 1..65535), got '127.0.0.1:8786'",
    ),
    (["sweep", "--methods", "mezo", "--jobs", "0"], "--jobs must be an integer in 1..64, got 0"),
    (
        ["sweep", "--methods", "mezo", "--jobs", "2", "--scheduler", "tcp://127.0.0.1:1"],
        "--jobs sets the workers of the local cluster; with --scheduler",
    ),
    # pezo explore (space files under tests/fixtures/explore)
    (
        ["explore", "--objectives", "accuracy,area"],
        "--objectives must be a comma-separated subset of accuracy, lut, ff, bram, dsp, power, cycles, got 'area'",
    ),
    (["explore", "--task", "mnist"], "--task must be one of digits, digits-rot30, digits-rot45"),
    (["explore", "--trials", "0"], "--trials must be an integer in 1..10000, got 0"),
    (["explore", "--trials", "-3"], "--trials must be an integer in 1..10000, got -3"),
    (["explore", "--space", "/dev/null"], "--space /dev/null is empty; give a JSON object of strategy, n_rngs"),
    (["explore", "--space", str(FIXTURES / "empty_object.json")], "empty_object.json is empty"),
    (["explore", "--space", str(FIXTURES / "unknown_key.json")], "key 'n_rng' is not a search-space key"),
    (
        ["explore", "--space", str(FIXTURES / "bad_range.json")],
        'key \'rng_bits\' must be {"low": L, "high": H} with integers L <= H',
    ),
    (
        ["explore", "--space", str(FIXTURES / "rows_without_cycles.json")],
        "key 'rows' (the PE array's rows) applies to the cycles objective only",
    ),
    (["explore", "--space", "/nonexistent/space.json"], "--space /nonexistent/space.json: No such file"),
    (
        ["explore", "--storage", "sqlite:////proc/pezo/study.db"],
        "--storage sqlite:////proc/pezo/study.db: cannot write in /proc",
    ),
    (["explore", "--storage", "postgresql://db/x"], "--storage must be an SQLite URL sqlite:///PATH"),
    (["explore", "--storage", "sqlite:///out/s.db", "--out", "out"], "is inside --out out, which pezo replaces"),
    (["explore", "--steps", "0"], "--steps must be an integer in 1..1000000, got 0"),
    (["explore", "--sampler", "grid"], "--sampler must be one of tpe, nsga2, got 'grid'"),
    (["explore", "--scheduler", "tcp://127.0.0.1:1"], "--scheduler tcp://127.0.0.1:1: no Dask scheduler answered"),
    # diverging training: the step and the likely cause
    (
        ["train-int8", "--net", "digits-mlp", "--loss", "host", "--lr", "1e6", "--steps", "20", "--quiet"],
        "training diverged: g hit the Q8.16 limit in 20 of 20 steps (first at step 1), driving the int8 weights to "
        "their rails; likely cause: --lr 1e+06 is too large",
    ),
    (
        ["train", "--task", "digits", "--lr", "1e30", "--steps", "20", "--quiet"],
        "training diverged at step 1: the loss or the weights are no longer finite; likely cause: --lr 1e+30",
    ),
    (
        ["train", "--task", "digits", "--eps", "1e30", "--steps", "20", "--quiet"],
        "training diverged at step 0: the loss or the weights are no longer finite; likely cause: --eps 1e+30",
    ),
    (
        ["train", "--task", "digits", "--method", "sign-m-spsa", "--lr", "1e30", "--steps", "20", "--quiet"],
        "training diverged (a value overflowed)",
    ),
]


def test_one_seed_has_no_spread():
    """A table over one seed shows the value alone, never "± 0.0"; two seeds show mean ± std."""
    from pezo.golden.sweep import experiments as sweeps
    from pezo.golden.sweep.stats import percent_cell

    assert percent_cell(0.5, 0.0, 1) == "50.0" and percent_cell(0.5, 0.01, 2) == "50.0 ± 1.0"
    assert percent_cell(None, None, 1) == "-"
    row = {
        "experiment": "fig3",
        "label": "n=4",
        "family": "pezo-otf",
        "shots": 16,
        "seeds": [1],
        "test_accuracy_mean": 0.5,
        "test_accuracy_std": 0.0,
        "train_loss_end_mean": 0.7,
        "train_loss_end_std": 0.0,
        "distinct_perturbations": None,
    }
    line = sweeps.figure_markdown([row], "fig3").splitlines()[-1]
    assert "±" not in line and "| 50.0 | 0.7000 |" in line
    assert "±" in sweeps.figure_markdown([{**row, "seeds": [1, 2]}], "fig3")
    assert sweeps._spread([row]) == "one seed (no spread)"


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv,needle", BAD_INPUTS, ids=[" ".join(a)[:60] for a, _ in BAD_INPUTS])
def test_bad_input_one_clean_line(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PEZO_SCHEDULER_TIMEOUT", "1")
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "", (code, out, err)
    assert err.startswith("pezo: error: ") and err.count("\n") == 1 and needle in err, err
    assert len(err) < 600
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "nothing written, no staging directory left"


def test_build_saif_must_be_saif(tmp_path, capsys):
    fake = tmp_path / "any.csv"
    fake.write_text("a,b\n1,2\n")
    code, _, err = run(["build", "--saif", str(fake), "--out", str(tmp_path / "b")], capsys)
    assert code == 2 and "is not a SAIF file" in err and not (tmp_path / "b").exists()


def _pezo_build_dir(path):
    """What pezo build leaves (its manifest) plus a Vivado run the user started in it."""
    with staged_output(path, what={"command": "build"}, strict=True) as staging:
        (staging.path / "top.v").write_text("module top; endmodule\n")
    (path / "top.runs").mkdir()
    (path / "top.bit").write_bytes(b"\x00" * 16)


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "--no-activity", "--no-timing", "--quiet", "--out"],
        ["verilog", "--out"],
        ["sweep", "--methods", "mezo", "--tasks", "digits", "--seeds", "1", "--steps", "2", "--quiet", "--out"],
        ["sweep", "--experiment", "table3", "--shots", "2", "--seeds", "1", "--steps", "2", "--quiet", "--out"],
    ],
)
def test_other_commands_never_replace_a_build_directory(argv, tmp_path, capsys):
    """The repro: cp -r build/zcu102-otf v; touch v/top.bit; pezo report --out v -> v was gone."""
    v = tmp_path / "v"
    _pezo_build_dir(v)
    code, _, err = run([*argv, str(v)], capsys)
    assert code == 2 and err.count("\n") == 1 and "pass --force" in err, err
    assert (v / "top.bit").exists() and (v / "top.runs").is_dir() and (v / "top.v").exists()


def test_a_directory_is_replaced_only_if_unchanged_since_the_same_command_wrote_it(tmp_path):
    out = tmp_path / "out"
    with staged_output(out, what={"command": "report"}) as staging:
        (staging.path / "resources.md").write_text("1")
    assert json.loads((out / MARKER).read_text())["files"]["resources.md"][0] == 1
    with staged_output(out, what={"command": "report"}) as staging:  # unchanged: replaced
        assert staging.replacing
        (staging.path / "resources.md").write_text("2")
    with pytest.raises(OutputDirError, match="written by report, not verilog"):
        with staged_output(out, what={"command": "verilog"}):
            pass
    (out / "notes.txt").write_text("mine")
    with pytest.raises(OutputDirError, match=r"holds files pezo did not write \(notes.txt\)"):
        with staged_output(out, what={"command": "report"}):
            pass
    (out / "notes.txt").unlink()
    (out / "resources.md").write_text("edited by hand")
    os.utime(out / "resources.md", ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    with pytest.raises(OutputDirError, match="changed after pezo wrote it"):
        with staged_output(out, what={"command": "report"}):
            pass
    with staged_output(out, force=True, what={"command": "report"}):
        pass
    assert not (out / "resources.md").exists()


def test_a_marker_of_an_older_pezo_is_replaced_only_if_nothing_is_newer(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "resources.md").write_text("old")
    (out / MARKER).write_text(json.dumps({"command": "report"}))
    with staged_output(out, what={"command": "report"}):
        pass
    out2 = tmp_path / "out2"
    out2.mkdir()
    (out2 / MARKER).write_text(json.dumps({"command": "report"}))
    (out2 / "top.bit").write_text("newer")
    later = os.stat(out2 / MARKER).st_mtime_ns + 10**9
    os.utime(out2 / "top.bit", ns=(later, later))
    with pytest.raises(OutputDirError, match="changed after pezo wrote it"):
        with staged_output(out2, what={"command": "report"}):
            pass


@pytest.mark.parametrize("option,name", [("--csv", "table.csv"), ("--plot", "figure.png")])
def test_report_files_are_not_overwritten_without_force(option, name, tmp_path, capsys):
    path = tmp_path / name
    path.write_text("unrelated")
    code, _, err = run(["report", "--no-activity", "--no-timing", "--quiet", option, str(path)], capsys)
    assert code == 2 and f"{option} {path} exists; choose another file or pass --force" in err
    assert path.read_text() == "unrelated"


def test_power_saif_is_not_overwritten_without_force(tmp_path, capsys):
    path = tmp_path / "activity.saif"
    path.write_text("unrelated")
    code, _, err = run(["power", "--saif", str(path)], capsys)
    assert code == 2 and "exists; choose another file or pass --force" in err and path.read_text() == "unrelated"


def test_sweep_exits_non_zero_when_a_run_failed(monkeypatch, tmp_path, capsys):
    import pezo.golden.sweep.methods as sweep

    def failing(base, methods, tasks, seeds, executor=None, progress=True):
        real = original(base, methods, tasks, seeds, executor=executor, progress=progress)
        real[0] = {**real[0], "error": "refused"}
        real[0].pop("test_accuracy", None)
        return real

    original = sweep.run_methods
    monkeypatch.setattr(sweep, "run_methods", failing)
    code, _, err = run(
        [
            "sweep",
            "--methods",
            "mezo",
            "--tasks",
            "digits",
            "--seeds",
            "1",
            "--steps",
            "2",
            "--jobs",
            "1",
            "--quiet",
            "--out",
            str(tmp_path / "m"),
        ],
        capsys,
    )
    assert code == 1 and "pezo: error: 1 of 1 runs failed (first: refused)" in err


def test_version():
    proc = subprocess.run([sys.executable, "-m", "pezo.cli.main", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("pezo ")


def test_sigint_to_the_sweep_stops_its_workers(tmp_path):
    """SIGINT to the main process only (timeout -s INT, kill -INT, a CI cancel): exit 130 at once, no worker left."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pezo.cli.main",
            "sweep",
            "--methods",
            "mezo,poormans",
            "--tasks",
            "digits",
            "--seeds",
            "1,2,3",
            "--steps",
            "3000",
            "--jobs",
            "2",
            "--quiet",
            "--out",
            str(tmp_path / "s"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    time.sleep(5)
    proc.send_signal(signal.SIGINT)
    start = time.monotonic()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and time.monotonic() - start < 10 and err == "pezo: interrupted\n", err
    for _ in range(30):  # the workers (and multiprocessing's resource tracker) end within a few seconds
        leftover = subprocess.run(["pgrep", "-a", "-s", str(proc.pid)], capture_output=True, text=True).stdout
        if not leftover:
            break
        time.sleep(0.2)
    assert leftover == "" and not (tmp_path / "s").exists(), leftover


@pytest.mark.parametrize(
    "command,needles",
    [
        ("power", ["switching-activity proxy: toggles per cycle", "(default 4096)"]),
        ("verilog", ["Write the Verilog of one design"]),
        ("simulate", ["Run the cocotb testbench", "(default all)", "1..10000000"]),
        ("sweep", ["--methods: 1000)"]),
        ("train", ["digits-rot45"]),
    ],
)
def test_help_texts(command, needles, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for needle in needles:
        assert needle in text, (command, needle)
    if command in ("verilog", "simulate"):
        assert "engine-otf" not in text


def test_make_run_ends_briefly(tmp_path, capsys, monkeypatch):
    """make run's last lines: a few rows, the full tables' path and the next commands (not five wide tables)."""
    import pezo.boards.flow.comparison_rows as comparison
    import pezo.boards.flow.comparison_table as comparison_table

    rows = [
        dict(design=d, unit=u, strategy=s, LUT=1, FF=2, BRAM=0, DSP=0, paper_LUT=p)
        for d, u, s, p in [
            ("otf 32 x 14", "generator", "otf", 32),
            ("otf 32 x 8", "generator", "otf", 32),
            ("gaussian x 1024 (MeZO)", "generator", "gaussian", 133120),
            ("otf 32 x 14 stream", "stream", "otf", None),
            ("ZO engine 8x8 INT8 + otf stream", "engine", "engine-otf", None),
        ]
    ]
    monkeypatch.setattr(comparison, "comparison_rows", lambda designs, **kw: rows)
    monkeypatch.setattr(comparison_table, "write_tables", lambda rows, path: (path / "resources.md").write_text("t"))
    code, out, _ = run(
        ["report", "--brief", "--no-activity", "--no-timing", "--quiet", "--out", str(tmp_path / "my report")], capsys
    )
    lines = out.splitlines()
    assert code == 0 and len(lines) == 7 and max(len(x) for x in lines if "my report" not in x) < 120, out
    assert "otf 32 x 8" not in out and "ZO engine" in out and f"'{tmp_path}/my report/resources.md'" in out
    assert "Fmax of every design" in lines[-2] and f"report --out '{tmp_path}/my report'" in lines[-2]  # --no-timing
    assert lines[-1].startswith("Next: .venv/bin/pezo --help") and "make test" in lines[-1]


def test_build_hint_quotes_paths_and_names_the_pezo_that_runs(tmp_path, capsys, monkeypatch):
    import shutil as sh

    real_which = sh.which
    monkeypatch.setattr(sh, "which", lambda name, *a, **k: None if name in ("pezo", "vivado") else real_which(name))
    out = tmp_path / "my build"
    code, text, _ = run(["build", "--out", str(out), "--no-vivado"], capsys)
    assert code == 0 and f"cd '{out}' && bash build_top.sh" in text
    assert "pezo report --vivado" in text and ".venv/bin/pezo" in text.splitlines()[-1]


def test_resources_figure_shows_bram_dsp_and_no_bar_for_zero(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from pezo.boards.flow.comparison_table import plot_resources

    figures = []
    monkeypatch.setattr(plt, "close", lambda fig=None: figures.append(fig))
    rows = [
        dict(design="otf scale LUT", LUT=0, FF=0, BRAM=1, DSP=0),
        dict(design="engine", LUT=2946, FF=3287, BRAM=9, DSP=72),
    ]
    plot_resources(rows, tmp_path / "r.png")
    fig = figures[0]
    assert [ax.get_title() for ax in fig.axes] == ["LUT (log)", "FF (log)", "BRAM", "DSP"]
    assert "Perturbation engines" not in fig._suptitle.get_text()
    for ax in fig.axes[:2]:
        assert ax.get_xlim()[0] == 1 and all(bar.get_x() >= 1 and bar.get_width() > 0 for bar in ax.patches)
    assert len(fig.axes[3].patches) == 1  # the engine's 72 DSP; zeros are written, not drawn
    assert (tmp_path / "r.png").stat().st_size > 10_000


def test_an_interrupt_mid_design_prints_one_line_not_amaranths_unused_warnings(tmp_path):
    """SIGINT can land while a command builds Amaranth designs (``pezo explore`` under load): those built but
    never elaborated would each warn at exit under "pezo: interrupted" once elaboration has started
    somewhere; the CLI silences them, as Amaranth does for an uncaught exception."""
    script = tmp_path / "interrupt.py"
    script.write_text(
        "import sys\n"
        "from amaranth.hdl import Fragment, Module\n"
        "from pezo.cli import main as cli\n"
        "Fragment.get(Module(), None)  # elaboration has started: unused designs now warn\n"
        "held = []\n"
        "def command(args):\n"
        "    held.append(Module())  # built, never elaborated\n"
        "    raise KeyboardInterrupt\n"
        "parser = cli.build_parser()\n"
        "parser.parse_args = lambda argv: type('Args', (), {'func': staticmethod(command)})()\n"
        "cli.build_parser = lambda: parser\n"
        "code = cli.main([])\n"
        "held.clear()  # collected here, after main returned\n"
        "sys.exit(code)\n"
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130 and proc.stderr == "pezo: interrupted\n", proc.stderr
