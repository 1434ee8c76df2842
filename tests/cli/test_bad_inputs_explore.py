"""A new-user audit of ``pezo explore`` and ``pezo sweep``: a bad --storage file or directory, the study's home
(inside --out), accuracy shown one way (%) and optimised on validation, --space bounds, $PEZO_SCHEDULER_TIMEOUT
and --seeds. Every bad input: one ``pezo: error:`` line naming what the user typed, exit 2, nothing written.
No test here trains for long or synthesizes: the trials are faked where a whole study runs."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import pytest

from pezo.boards.flow import explore
from pezo.cli.main import main
from pezo.golden.config import MAX_RNGS, RNG_BITS_RANGE


def one_clean_line(argv, capsys) -> str:
    """Run pezo; assert exit 2, nothing on stdout, exactly one ``pezo: error:`` line; return it."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    assert err.startswith("pezo: error: ") and err.count("\n") == 1 and len(err) < 600, err
    return err


def fingerprint(path: Path) -> tuple:
    st = path.stat()
    return path.read_bytes(), st.st_mtime_ns, st.st_size


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


# -- 1: a --storage file that is not a study database: refused, never touched ------------------------------------
def _sqlite_file(path: Path, table: str = "studies") -> None:
    con = sqlite3.connect(path)
    con.execute(f"CREATE TABLE {table} (x)")
    con.executemany(f"INSERT INTO {table} VALUES (?)", [("y" * 200,)] * 200)  # a few pages
    con.commit()
    con.close()


def _corrupt(path: Path) -> None:
    """A valid SQLite header, a garbled b-tree page."""
    _sqlite_file(path)
    data = bytearray(path.read_bytes())
    data[4096:8192] = b"\xff" * 4096
    path.write_bytes(bytes(data))


def _text(path: Path) -> None:
    path.write_text("these are my notes, not a database\n" * 20)


def _truncated(path: Path) -> None:
    _sqlite_file(path)
    path.write_bytes(path.read_bytes()[:5000])


def _header_garbled(path: Path) -> None:
    _sqlite_file(path)
    data = bytearray(path.read_bytes())
    data[16:100] = b"\x07" * 84
    path.write_bytes(bytes(data))


def _other_database(path: Path) -> None:
    _sqlite_file(path, table="notes")


@pytest.mark.parametrize(
    "make,needle",
    [
        (_text, "not an SQLite database (file is not a database)"),
        (_header_garbled, "not an SQLite database (file is not a database)"),
        (_truncated, "a corrupt SQLite database (database disk image is malformed)"),
        (_corrupt, "a corrupt SQLite database (quick_check: "),
        (_other_database, "an SQLite database but not an Optuna study storage (tables notes)"),
    ],
)
def test_storage_that_is_not_a_study_database_is_refused_untouched(make, needle, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "x.db"
    make(db)
    before, names = fingerprint(db), listing(tmp_path)
    err = one_clean_line(["explore", "--storage", "sqlite:///x.db", "--trials", "1", "--jobs", "1"], capsys)
    assert err.startswith(f"pezo: error: --storage sqlite:///x.db: {needle}"), err
    assert fingerprint(db) == before, "the file is byte for byte untouched (bytes, mtime)"
    assert listing(tmp_path) == names, "nothing else written (no build/, no journal)"


def test_a_bad_study_file_inside_out_names_out(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "o").mkdir()
    _text(tmp_path / "o" / "explore.db")
    before = fingerprint(tmp_path / "o" / "explore.db")
    err = one_clean_line(["explore", "--out", "o", "--trials", "1", "--jobs", "1"], capsys)
    assert err.startswith(
        "pezo: error: --out o: o/explore.db (the study, kept in --out without --storage): not an SQLite database"
    ), err
    assert fingerprint(tmp_path / "o" / "explore.db") == before and listing(tmp_path) == ["o", "o/explore.db"]


# -- 2: --storage in a directory that does not exist: refused as --csv is, nothing created ----------------------
def test_storage_in_a_missing_directory_is_refused_before_any_trial(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(explore, "evaluate", lambda job: pytest.fail("a trial ran"))
    missing = tmp_path / "missing" / "dir"
    err = one_clean_line(
        ["explore", "--storage", f"sqlite:///{missing / 'x.db'}", "--trials", "1", "--jobs", "1"], capsys
    )
    assert f"--storage sqlite:///{missing / 'x.db'}: the directory {missing} does not exist" in err, err
    assert listing(tmp_path) == [], "no directory created, no --out, no staging"
    err = one_clean_line(["explore", "--storage", "sqlite:///new/x.db", "--trials", "1"], capsys)  # relative
    assert "--storage sqlite:///new/x.db: the directory new does not exist" in err and listing(tmp_path) == []


# -- 3 and 4: a whole (fake-trial) study: accuracy in %, the study inside --out -----------------------------------
def _fake_evaluate(calls: list, stop_at: int | None = None):
    """Trials without training or Yosys: validation accuracy 0.5 + n/100, test accuracy 0.25 + n/100."""

    def evaluate(job):
        params, setting = job
        calls.append(params)
        if stop_at is not None and len(calls) == stop_at:
            raise KeyboardInterrupt
        n = len(calls)
        val, test = 0.5 + n / 100, 0.25 + n / 100
        values = {"accuracy": val, "lut": 100 + n, "ff": 50 + n, "bram": 0}
        return {
            "state": "complete",
            "values": {k: values[k] for k in setting.objectives},
            "reason": None,
            "attrs": {
                "val_accuracy": val,
                "test_accuracy": test,
                "gcd": 1,
                "LUT": 100 + n,
                "FF": 50 + n,
                "BRAM": 0,
                "DSP": 0,
            },
        }

    return evaluate


def _study_trials(db: Path) -> int:
    with sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True) as con:
        return con.execute("SELECT count(*) FROM trials WHERE state IN ('COMPLETE', 'PRUNED')").fetchone()[0]


def test_study_defaults_to_inside_out_and_survives_reruns_and_interrupts(tmp_path, monkeypatch, capsys):
    """Without --storage the study is --out/explore.db, written with the outputs (in the manifest), so the
    same command resumes; after Ctrl-C the finished trials are kept and the reports stay byte for byte."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    calls: list = []
    monkeypatch.setattr(explore, "evaluate", _fake_evaluate(calls))
    out = tmp_path / "runs" / "a"
    out.parent.mkdir()
    argv = ["explore", "--trials", "2", "--steps", "5", "--jobs", "1", "--quiet", "--json", "--out", str(out)]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["storage"] == f"sqlite:///{out / 'explore.db'}" and summary["ran_this_run"] == 2
    assert _study_trials(out / "explore.db") == 2 and listing(cwd) == [], "nothing relative to the working directory"
    assert "explore.db" in json.loads((out / ".pezo-output").read_text())["files"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["a"], "no staging directory left"

    argv[argv.index("--trials") + 1] = "3"
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["resumed_from"] == 2 and again["ran_this_run"] == 1 and _study_trials(out / "explore.db") == 3

    reports = {p.name: fingerprint(p) for p in out.iterdir() if p.name not in ("explore.db", ".pezo-output")}
    monkeypatch.setattr(explore, "evaluate", _fake_evaluate(calls, stop_at=len(calls) + 2))  # Ctrl-C in trial 5
    argv[argv.index("--trials") + 1] = "6"
    assert main(argv) == 130
    capsys.readouterr()
    assert _study_trials(out / "explore.db") == 4, "the trial that finished before Ctrl-C is kept"
    assert {p.name: fingerprint(p) for p in out.iterdir() if p.name in reports} == reports
    assert sorted(p.name for p in out.parent.iterdir()) == ["a"], "no staging / keep directory left"

    monkeypatch.setattr(explore, "evaluate", _fake_evaluate(calls))
    assert main(argv) == 0, "the interrupted --out is still pezo explore's: replaced without --force"
    last = json.loads(capsys.readouterr().out)
    assert last["resumed_from"] == 4 and last["ran_this_run"] == 2 and _study_trials(out / "explore.db") == 6


def test_an_explicit_storage_inside_out_is_still_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    err = one_clean_line(["explore", "--storage", "sqlite:///o/explore.db", "--out", "o"], capsys)
    assert "is inside --out o, which pezo replaces" in err and "omit --storage" in err and listing(tmp_path) == []


def test_accuracy_is_shown_in_percent_everywhere_a_person_reads_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(explore, "evaluate", _fake_evaluate([]))
    assert main(["explore", "--trials", "2", "--steps", "5", "--jobs", "1", "--out", "o"]) == 0
    err = capsys.readouterr().err
    assert "best validation accuracy 52.0%" in err, "the progress bar: %, not 0.520"
    assert "best_accuracy=0.5" not in err
    front = (tmp_path / "o" / "front.md").read_text()
    assert "accuracy = validation accuracy (%" in front and "| test |" in front
    assert "| 52.0 | 102 | 52 | 0 | 27.0 |" in front, front  # validation %, resources, test % beside it
    with open(tmp_path / "o" / "trials.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["accuracy"] for r in rows] == ["0.51", "0.52"], "the key keeps its fraction (as the JSON)"
    assert [r["val_accuracy_pct"] for r in rows] == ["51.0", "52.0"]
    assert [r["test_accuracy_pct"] for r in rows] == ["26.0", "27.0"]
    assert [r["test_accuracy"] for r in rows] == ["0.26", "0.27"]


def test_the_objective_is_validation_accuracy_and_test_is_reported_beside_it(monkeypatch):
    """evaluate optimises the run's best validation accuracy (held-out split), never its test accuracy."""
    from pezo.boards.flow import report
    from pezo.golden.methods import registry

    runs = []
    real = registry.train_method

    def recording(config, *a, **k):
        runs.append(real(config, *a, **k))
        return runs[-1]

    monkeypatch.setattr(registry, "train_method", recording)
    monkeypatch.setattr(report, "report", lambda config, unit="stream": {"LUT": 1, "FF": 2, "BRAM": 0, "DSP": 0})
    result = explore.evaluate(
        ({"strategy": "otf", "n_rngs": 3, "rng_bits": 5, "eps_shift": 10}, explore.Setting(steps=20))
    )
    run = runs[0]
    assert run["val_size"] > 0 and run["best_val_accuracy"] != run["test_accuracy"]
    assert result["values"]["accuracy"] == result["attrs"]["val_accuracy"] == run["best_val_accuracy"]
    assert result["attrs"]["test_accuracy"] == run["test_accuracy"]


# -- 5: --space bounds checked against each field's own range, before any trial --------------------------------
@pytest.mark.parametrize(
    "space,needle",
    [
        (
            {"n_rngs": {"low": 0, "high": 5000}},
            f"key 'n_rngs': low 0 is outside the allowed range (n_rngs must be in 1..{MAX_RNGS}, got 0)",
        ),
        (
            {"n_rngs": {"low": 3, "high": 5000}},
            f"key 'n_rngs': high 5000 is outside the allowed range (n_rngs must be in 1..{MAX_RNGS}, got 5000)",
        ),
        (
            {"rng_bits": [8, 99]},
            (
                f"key 'rng_bits': value 99 is outside the allowed range (rng_bits must be in {RNG_BITS_RANGE[0]}.."
                f"{RNG_BITS_RANGE[1]}, got 99)"
            ),
        ),
        (
            {"eps_shift": {"low": -1, "high": 10}},
            "key 'eps_shift': low -1 is outside the allowed range (eps_shift must be",
        ),
        ({"pool_bits": {"low": 6, "high": 40}}, "key 'pool_bits': high 40 is outside"),
        ({"lanes": [0]}, "key 'lanes': value 0 is outside"),
        ({"banks": [1, 3]}, "key 'banks': value 3 is outside the allowed range (banks must be a power of two"),
        ({"pool_size": [0]}, "key 'pool_size': value 0 is outside"),
    ],
)
def test_space_bounds_are_checked_before_the_first_trial(space, needle, tmp_path, monkeypatch, capsys):
    with pytest.raises(explore.SpaceError, match="outside the allowed range") as info:
        explore.check_space(space)
    assert needle in str(info.value)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(explore, "evaluate", lambda job: pytest.fail("a trial ran"))
    Path("space.json").write_text(json.dumps(space))
    err = one_clean_line(["explore", "--space", "space.json", "--trials", "1", "--jobs", "1"], capsys)
    assert err.startswith("pezo: error: --space space.json key ") and needle in err, err
    assert listing(tmp_path) == ["space.json"]


def test_rows_bounds_use_the_engines_range(capsys):
    from pezo.golden.engine.zo_engine import MAX_ROWS

    with pytest.raises(
        explore.SpaceError,
        match=rf"key 'rows': high {MAX_ROWS + 1} is outside the allowed range "
        rf"\(rows must be in 1..{MAX_ROWS}",
    ):
        explore.check_space({"rows": {"low": 1, "high": MAX_ROWS + 1}})
    assert explore.check_space({"n_rngs": {"low": 1, "high": MAX_RNGS}, "rows": [1, MAX_ROWS]})  # the edges pass
    assert explore.check_space(dict(explore.DEFAULT_SPACE)) == explore.DEFAULT_SPACE


# -- 6: $PEZO_SCHEDULER_TIMEOUT ------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan"])
def test_a_bad_scheduler_timeout_is_refused_naming_the_variable(value, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PEZO_SCHEDULER_TIMEOUT", value)
    err = one_clean_line(["explore", "--scheduler", "tcp://127.0.0.1:1", "--trials", "1"], capsys)
    assert err == (
        f"pezo: error: PEZO_SCHEDULER_TIMEOUT must be a finite number of seconds > 0 (unset: 10), got {value!r}\n"
    ), err
    assert listing(tmp_path) == []


def test_scheduler_timeout_values(monkeypatch):
    from pezo.executor import scheduler_timeout

    for value, seconds in (("2.5", 2.5), ("", 10.0), (" 30 ", 30.0)):
        monkeypatch.setenv("PEZO_SCHEDULER_TIMEOUT", value)
        assert scheduler_timeout() == seconds
    monkeypatch.delenv("PEZO_SCHEDULER_TIMEOUT")
    assert scheduler_timeout() == 10.0
    for bad in ("inf", "-inf", "abc", "0"):
        monkeypatch.setenv("PEZO_SCHEDULER_TIMEOUT", bad)
        with pytest.raises(ValueError, match=f"PEZO_SCHEDULER_TIMEOUT must be a finite number .*, got '{bad}'"):
            scheduler_timeout()


# -- 7: pezo sweep --seeds ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv,needle",
    [
        (["sweep", "--seeds", "a,b"], "--seeds a,b: every seed must be an integer in 0..4294967295, got 'a'"),
        (["sweep", "--seeds", "1,-2"], "--seeds 1,-2: every seed must be in 0..4294967295, got -2"),
        (
            ["sweep", "--methods", "mezo", "--seeds", "a,b"],
            "--seeds a,b: every seed must be an integer in 0..2147483647, got 'a'",
        ),
    ],
)
def test_sweep_seeds_are_named_as_typed(argv, needle, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    err = one_clean_line(argv, capsys)
    assert needle in err, err
    assert "--seed " not in err and "was not given" not in err
    assert listing(tmp_path) == []


# -- $PEZO_PNR_TIMEOUT (the timing flow's cap on one nextpnr run) -------------------------------------------------
@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan"])
def test_a_bad_pnr_timeout_is_refused_naming_the_variable_before_any_synthesis(value, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PEZO_PNR_TIMEOUT", value)
    err = one_clean_line(["report", "--n-rngs", "4"], capsys)
    assert err == (
        f"pezo: error: PEZO_PNR_TIMEOUT must be a finite number of seconds > 0 (unset: 3600), got {value!r}\n"
    ), err
    assert listing(tmp_path) == []
