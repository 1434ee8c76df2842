"""A new-user audit of options: --force and what pezo did not write, a training loss that blows up while every value
stays finite, and options that would change nothing in the chosen mode. Every bad input: one ``pezo: error:``
line naming the option as typed, exit 2, nothing written (and nothing deleted)."""

import functools
import json
import shutil

import pytest

from pezo.cli.main import main
from pezo.cli.output import MARKER, OutputDirError, record_output, staged_output


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(argv, capsys) -> str:
    """The one error line of a refused command (exit 2, nothing on stdout)."""
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and err.startswith("pezo: error: ") and err.count("\n") == 1, (code, out, err)
    return err.strip()


def listing(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def _repository(path):
    """A user's project: a git repository and a script."""
    (path / ".git" / "objects").mkdir(parents=True)
    (path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (path / "main.py").write_text("print('mine')\n")


# -- 1: --force replaces only what pezo's manifest lists ----------------------------------------------------------

FORCE_COMMANDS = [
    ["verilog", "--force", "--out"],
    ["report", "--no-activity", "--no-timing", "--quiet", "--jobs", "1", "--force", "--out"],
    ["build", "--no-vivado", "--force", "--out"],
    ["build", "--design", "engine", "--no-vivado", "--force", "--out"],
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
        "--quiet",
        "--jobs",
        "1",
        "--force",
        "--out",
    ],
    ["explore", "--trials", "1", "--jobs", "1", "--force", "--out"],
]


@pytest.mark.parametrize("argv", FORCE_COMMANDS, ids=[" ".join(a[:3]) for a in FORCE_COMMANDS])
def test_force_never_deletes_a_git_repository(argv, tmp_path, capsys, monkeypatch):
    """The repro: pezo verilog --out DIR --force on a git checkout deleted .git and main.py."""
    from pezo.boards.flow import explore

    monkeypatch.setattr(explore, "evaluate", lambda job: pytest.fail("a trial ran"))
    monkeypatch.chdir(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    _repository(project)
    before = listing(tmp_path)
    err = one_line([*argv, "project"], capsys)
    assert err == (
        "pezo: error: --out project is not empty and was not written by pezo (it holds .git, main.py); "
        "choose another directory or remove them"
    ), err
    assert listing(tmp_path) == before, "nothing deleted, no staging directory left"
    assert (project / "main.py").read_text() == "print('mine')\n"


def test_force_replaces_pezos_files_but_never_files_added_to_its_output(tmp_path, capsys):
    out = tmp_path / "v"
    assert run(["verilog", "--out", str(out)], capsys)[0] == 0
    written = json.loads((out / MARKER).read_text())["files"]
    _repository(out)  # a git repository and a script in pezo's own output, and a directory of notes
    (out / "notes").mkdir()
    (out / "notes" / "todo.txt").write_text("keep")
    for extra in ([], ["--force"]):
        err = one_line(["verilog", "--out", str(out), *extra], capsys)
        assert err == (
            f"pezo: error: --out {out} is not empty and holds files pezo did not write (.git, main.py, "
            "notes); choose another directory or remove them"
        ), err
    assert (out / ".git" / "HEAD").exists() and (out / "notes" / "todo.txt").read_text() == "keep"
    assert set(written) <= {p.relative_to(out).as_posix() for p in out.rglob("*")}, "pezo's files untouched too"
    for name in (".git", "notes"):  # once they are gone, --force replaces an edited pezo file: it is pezo's
        shutil.rmtree(out / name)
    (out / "main.py").unlink()
    edited = next(out / rel for rel in written if rel.endswith(".v"))
    edited.write_text("// edited by hand\n" + edited.read_text())
    assert "changed after pezo wrote it" in one_line(["verilog", "--out", str(out)], capsys)
    code, text, _ = run(["verilog", "--out", str(out), "--force"], capsys)
    assert code == 0 and "replaced" in text and not edited.read_text().startswith("// edited")


def test_another_commands_output_with_user_files_says_both(tmp_path):
    out = tmp_path / "b"
    with staged_output(out, what={"command": "build"}, strict=True) as staging:
        (staging.path / "top.v").write_text("module top; endmodule\n")
    (out / "top.runs").mkdir()
    (out / "top.runs" / "impl.log").write_text("a Vivado run the user started")
    with pytest.raises(OutputDirError) as refused:
        with staged_output(out, what={"command": "report"}):
            pass
    assert str(refused.value) == (
        f"--out {out} is not empty, was written by build, not report, and holds files "
        "pezo did not write (top.runs); choose another directory or remove them and pass "
        "--force to replace it"
    )
    for strict in (False, True):
        with pytest.raises(
            OutputDirError,
            match=r"holds files pezo did not write \(top.runs\); choose another "
            r"directory or remove them$",
        ):
            with staged_output(out, force=True, what={"command": "report"}, strict=strict):
                pass
    assert (out / "top.runs" / "impl.log").exists() and (out / "top.v").exists()


def test_files_added_while_pezo_ran_are_kept(tmp_path):
    """The check is made again when the output is committed: a file added during a long run is not deleted."""
    out = tmp_path / "out"
    with staged_output(out, what={"command": "report"}) as staging:
        (staging.path / "resources.md").write_text("old")
    with pytest.raises(
        OutputDirError,
        match=r"holds files pezo did not write \(notes.txt\), added while pezo ran; "
        "nothing was replaced",
    ):
        with staged_output(out, force=True, what={"command": "report"}) as staging:
            (staging.path / "resources.md").write_text("new")
            (out / "notes.txt").write_text("mine")
    assert (out / "notes.txt").read_text() == "mine" and (out / "resources.md").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"], "no staging directory left"


def test_what_pezo_ran_in_its_output_joins_the_manifest(tmp_path):
    """pezo build runs Vivado in its committed output: record_output lists the run, so --force may replace it."""
    out = tmp_path / "b"
    with staged_output(out, what={"command": "build", "board": "zcu102"}, strict=True) as staging:
        (staging.path / "top.v").write_text("module top; endmodule\n")
    (out / "top.runs").mkdir()
    (out / "top.bit").write_bytes(b"\x00" * 16)
    record_output(out)
    manifest = json.loads((out / MARKER).read_text())
    assert manifest["board"] == "zcu102" and {"top.v", "top.runs", "top.bit"} <= set(manifest["files"])
    with staged_output(out, force=True, what={"command": "build"}, strict=True):
        pass
    assert sorted(p.name for p in out.iterdir()) == [MARKER]


def test_a_vivado_run_pezo_started_joins_the_manifest_even_when_it_fails(tmp_path):
    """board.run_vivado (pezo build and build --design engine): build_top.sh's files are pezo's, failure or not."""
    from pezo.cli.board import run_vivado

    out = tmp_path / "b"
    with staged_output(out, what={"command": "build"}, strict=True) as staging:
        (staging.path / "build_top.sh").write_text("mkdir top.runs; echo 1 > top.runs/log; exit 3\n")
    with pytest.raises(RuntimeError, match="Vivado failed \\(exit 3\\)"):
        run_vivado("vivado", out)
    assert "top.runs/log" in json.loads((out / MARKER).read_text())["files"]


# -- 2: a loss that blows up is a divergence, not a result -------------------------------------------------------


@pytest.fixture
def small_text_runs(monkeypatch):
    """pezo train on the text task with 50 test examples instead of 1000 (seconds, not half a minute)."""
    from pezo.cli import training
    from pezo.golden.zo.trainer import TrainConfig

    monkeypatch.setattr(training, "TrainConfig", functools.partial(TrainConfig, test_size=50))


@pytest.mark.parametrize("lr, shown", [("1e6", "1e+06"), ("1e30", "1e+30")])
def test_a_blown_up_loss_is_a_divergence(lr, shown, small_text_runs, capsys):
    """The repro: pezo train --family pezo-otf --lr 1e6 --steps 50: loss 0.69 -> 1.0e8, exit 0."""
    err = one_line(["train", "--family", "pezo-otf", "--shots", "4", "--lr", lr, "--steps", "50", "--quiet"], capsys)
    assert err.startswith("pezo: error: training diverged at step 1: the loss grew from 0.693 to "), err
    assert err.endswith(f", over 1000x max(its start, 1); likely cause: --lr {shown} too large; lower it"), err


def test_a_blown_up_loss_of_a_seed_method_is_a_divergence(capsys):
    err = one_line(["train", "--task", "digits", "--lr", "10", "--steps", "20", "--quiet"], capsys)
    assert err.startswith("pezo: error: training diverged at step ") and "the loss grew from 2.39 to " in err, err
    assert err.endswith("likely cause: --lr 10 too large; lower it"), err


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "--family", "pezo-otf", "--shots", "4"],
        ["train", "--family", "gaussian", "--shots", "4", "--eps", "1"],
        ["train", "--family", "naive-int", "--shots", "4"],  # its loss grows 10^4 x by design (PeZO Table 3's row)
        ["train", "--task", "digits"],
        ["train", "--task", "digits", "--method", "elasticzo-int8"],
    ],
    ids=lambda argv: " ".join(argv[1:]),
)
def test_normal_runs_do_not_trip_it(argv, small_text_runs, capsys):
    code, out, err = run([*argv, "--steps", "50", "--quiet", "--json"], capsys)
    assert code == 0 and err == "", err
    assert json.loads(out)["train_loss_end"] > 0


def test_the_blow_up_rule():
    from pezo.golden.losses import BLOWUP_FACTOR, LossBlowUp, check_blowup

    assert BLOWUP_FACTOR == 1000
    check_blowup(3, 0.05, 999.0)  # max(start, 1): a small start loss may rise to a few nats
    check_blowup(3, 77.0, 8.5e5, "naive-int")
    with pytest.raises(LossBlowUp, match=r"^loss blew up at step 3: the loss grew from 0.05 to 1e\+03") as blown:
        check_blowup(3, 0.05, 1001.0)
    assert isinstance(blown.value, FloatingPointError) and blown.value.step == 3
    with pytest.raises(LossBlowUp):
        check_blowup(1, 2.5, 2501.0, "pezo-otf")


# -- 3: options that would change nothing are refused, saying why / what applies -------------------------------

NO_OPS = [
    (
        ["train-int8", "--net", "digits-mlp", "--lr", "0.5"],
        (
            "--lr applies to --loss host only (MeZO's step on the host's cross-entropy g); with --loss on-chip (the "
            "default) the engine steps by --g-lr (--g-mode sign) or --g-shift (--g-mode scaled)"
        ),
    ),
    (["sim", "engine", "--net", "rt-mlp", "--loss", "on-chip", "--lr", "0.5"], "--lr applies to --loss host only"),
    (
        ["train-int8", "--net", "digits-mlp", "--g-shift", "5"],
        (
            "--g-shift applies to --g-mode scaled only; --g-mode sign (the default) steps by g = +-g_lr: set "
            "--g-lr, or give "
            "--g-mode scaled"
        ),
    ),
    (
        ["train-int8", "--net", "digits-mlp", "--g-mode", "scaled", "--g-lr", "5"],
        (
            "--g-lr applies to --g-mode sign only; --g-mode scaled steps by g = round_shift(L+ - L-, g_shift): set "
            "--g-shift"
        ),
    ),
    (
        ["report", "--strategy", "otf", "--eps-shift", "5"],
        (
            "--eps-shift applies to --unit stream / host only (the stream scales its values by epsilon); the generator "
            "does not use it, so its design would be the same"
        ),
    ),
    (["report", "--unit", "scale", "--eps-shift", "5"], "the otf scale LUT does not use it"),
    (["verilog", "--eps-shift", "5", "--out", "v"], "--eps-shift applies to --unit stream / host only"),
    (
        ["report", "--strategy", "otf", "--brief"],
        (
            "--brief shortens the comparison table (pezo report without generator options); one design's report is "
            "printed in full as text or --json"
        ),
    ),
    (["report", "--strategy", "engine-otf", "--brief"], "--brief shortens the comparison table"),
    (
        ["train-int8", "--net", "rt-head", "--hidden-init", "pca"],
        "--hidden-init applies to networks with hidden layers (--net digits-mlp, digits-cnn, rt-mlp); rt-head "
        "(384 -> 2) has none",
    ),
    (
        ["train-int8", "--net", "digits-mlp", "--shots", "100000"],
        (
            "--shots applies to the Rotten Tomatoes runs (the head engine, --net rt-mlp, rt-head); --net "
            "digits-mlp trains "
            "on the fixed digits split (1000 train, 300 validation, 497 test examples)"
        ),
    ),
    (
        ["train-int8", "--shots", "100000"],
        "--shots must be in 1..2692 for task rotten_tomatoes (smallest class 'negative' has 5384 examples), got 100000",
    ),
    (["train-int8", "--net", "rt-mlp", "--shots", "100000"], "--shots must be in 1..2692 for task rotten_tomatoes"),
    (
        ["train-int8", "--net", "digits-mlp", "--loss", "host", "--margin", "8000000"],
        "--margin applies to --loss on-chip (the engine's hinge loss) or to a --split with a backprop tail",
    ),
    (["train-int8", "--net", "digits-mlp", "--wd-every", "4"], "--wd-every applies with --wd-shift S (1..7)"),
    (["train-int8", "--net", "digits-mlp", "--force"], "--force applies with --out DIR only"),
    (["power", "--force"], "--force applies with --saif FILE only"),
    (["sweep", "--methods", "", "--out", "s"], "--methods must name at least one of mezo"),
    (["sweep", "--methods", "mezo,mezo", "--out", "s"], "--methods names 'mezo' twice"),
    (["sweep", "--methods", "mezo", "--seeds", "1,1", "--out", "s"], "--seeds names 1 twice"),
    (["sweep", "--methods", "mezo", "--shots", "16,256", "--out", "s"], "--shots takes one k with --methods"),
    (["sweep", "--shots", "16,16", "--out", "s"], "--shots names 16 twice"),
]


@pytest.mark.parametrize("argv, message", NO_OPS, ids=[" ".join(a) for a, _ in NO_OPS])
def test_an_option_that_changes_nothing_is_refused(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = one_line([*argv, "--steps", "20"] if argv[0] in ("train-int8", "sim") else argv, capsys)
    assert message in err, err
    assert listing(tmp_path) == [], "nothing written"


def test_the_options_still_work_where_they_apply():
    """Each refused option is taken in the mode that reads it (its config is built, nothing runs)."""
    from pezo.cli.generator import _config
    from pezo.cli.main import build_parser
    from pezo.cli.net import net_train_config

    parse = build_parser().parse_args
    assert net_train_config(parse(["train-int8", "--net", "digits-mlp", "--loss", "host", "--lr", "0.5"])).lr == 0.5
    assert (
        net_train_config(parse(["train-int8", "--net", "digits-mlp", "--g-mode", "scaled", "--g-shift", "5"])).g_shift
        == 5
    )
    assert net_train_config(parse(["train-int8", "--net", "digits-mlp", "--g-lr", "5"])).g_lr == 5
    assert net_train_config(parse(["train-int8", "--net", "rt-mlp", "--hidden-init", "pca"])).hidden_init == "pca"
    assert net_train_config(parse(["train-int8", "--net", "rt-head", "--shots", "8"])).shots == 8
    for unit in ("stream", "host"):
        assert _config(parse(["report", "--unit", unit, "--eps-shift", "5"])).eps_shift == 5
    host_tail = parse(["train-int8", "--net", "digits-mlp", "--loss", "host", "--split", "cls2", "--margin", "99"])
    assert net_train_config(host_tail).margin == 99  # the tail's error reads it
    decay = parse(["train-int8", "--net", "digits-mlp", "--wd-shift", "5", "--wd-every", "4"])
    assert net_train_config(decay).wd_every == 4
    # rt-mlp's cls2 decays by default (SPLIT_DEFAULTS: wd_shift 6), so --wd-every is read there without --wd-shift
    assert (
        net_train_config(parse(["train-int8", "--net", "rt-mlp", "--split", "cls2", "--wd-every", "4"])).wd_every == 4
    )


def test_no_cache_reaches_every_step_of_the_table(capsys, monkeypatch):
    """pezo report --out DIR --no-cache read the cache anyway: each design's job now carries use_cache."""
    from pezo.boards.flow import comparison_rows as comparison

    jobs = []
    monkeypatch.setattr(comparison, "_design_rows", lambda job: jobs.append(job) or [])
    for extra, use_cache in ((["--no-cache"], False), ([], True)):
        jobs.clear()
        code, out, _ = run(
            ["report", "--no-activity", "--no-timing", "--quiet", "--json", "--jobs", "1", *extra], capsys
        )
        assert code == 0 and json.loads(out) == []
        assert len(jobs) == len(comparison.comparison_designs()) and {job[3] for job in jobs} == {use_cache}


def test_no_cache_reaches_synthesis_place_and_route_and_activity(monkeypatch):
    from pezo.boards.flow import comparison_rows as comparison
    from pezo.boards.flow.timing import TIMING_KEYS

    seen = []

    class Stop(Exception):
        pass

    def spy(name, result=None):
        def call(*args, use_cache=True, **kwargs):
            seen.append((name, use_cache))
            if result is None:
                raise Stop
            return result

        return call

    for name in ("report", "engine_report", "board_report"):
        monkeypatch.setattr(comparison, name, spy(name))
    monkeypatch.setattr(comparison, "unit_timing", spy("unit_timing", {k: None for k in TIMING_KEYS}))
    monkeypatch.setattr(comparison, "power_proxy", spy("power_proxy", {}))
    designs = {d.unit: d for d in comparison.comparison_designs()}
    for unit in ("generator", "engine", "board"):
        with pytest.raises(Stop):
            comparison._design_rows((designs[unit], True, True, False))
    comparison.add_timing({"LUT": 1}, designs["stream"], True, use_cache=False)
    comparison.stream_activity(designs["stream"].config, use_cache=False)
    assert seen == [
        ("report", False),
        ("engine_report", False),
        ("board_report", False),
        ("unit_timing", False),
        ("power_proxy", False),
    ]
