"""pezo.boards.flow.explore and ``pezo explore``: the space and objective checks, pruning instead of crashing, the gcd
traps kept, resume after an interrupt without repeating a finished trial, and the command end to end."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

import pezo.boards.flow.explore as explore
from pezo.boards.flow.explore import (
    DEFAULT_SPACE,
    Setting,
    SpaceError,
    check_objectives,
    check_space,
    evaluate,
    open_study,
    run_study,
    trial_rows,
)
from pezo.cli.main import main
from pezo.executor import SERIAL

TINY_SPACE = {"strategy": ["otf"], "n_rngs": [3], "rng_bits": {"low": 4, "high": 5}, "eps_shift": [10]}
"""Stream units that synthesize in a few seconds (3 LFSRs of 4-5 bits)."""


@pytest.mark.parametrize(
    "space,needle",
    [
        ({}, "is empty"),
        ({"n_rng": [3]}, "key 'n_rng' is not a search-space key"),
        ({"strategy": ["otf", "lfsr"]}, "key 'strategy' must be a non-empty list of otf, pregen, gaussian"),
        ({"rng_bits": {"low": 9, "high": 4}}, 'key \'rng_bits\' must be {"low": L, "high": H} with integers L <= H'),
        ({"pool_size": []}, "key 'pool_size' must be a non-empty list of integers"),
        ({"lanes": ["8"]}, "key 'lanes' must be a non-empty list of integers"),
        ({"banks": 4}, "key 'banks' must be a list of integers"),
        ([1, 2], "must be a JSON object"),
    ],
)
def test_bad_spaces_name_the_key(space, needle):
    with pytest.raises(SpaceError) as info:
        check_space(space)
    assert needle in str(info.value)


def test_space_file_and_objectives(tmp_path):
    path = tmp_path / "s.json"
    path.write_text("{not json")
    with pytest.raises(SpaceError, match="is not JSON"):
        explore.load_space(path)
    path.write_text(json.dumps({"n_rngs": [7, 31]}))
    assert explore.load_space(path) == {**DEFAULT_SPACE, "n_rngs": [7, 31]}
    assert check_objectives("accuracy,lut".split(",")) == ("accuracy", "lut")
    for bad, needle in ((["area"], "got 'area'"), (["lut", "lut"], "must not repeat"), ([""], "at least one")):
        with pytest.raises(ValueError, match=needle):
            check_objectives(bad)


@pytest.mark.parametrize(
    "params,reason",
    [
        ({"strategy": "otf", "n_rngs": 63, "rng_bits": 4, "eps_shift": 10}, "config: n_rngs must be in 1..15, got 63"),
        (
            {"strategy": "pregen", "pool_size": 4095, "pool_bits": 12, "lanes": 4, "banks": 8, "eps_shift": 10},
            "config: banks must be in 1..4",
        ),
        (
            {"strategy": "pregen", "pool_size": 1696, "pool_bits": 12, "lanes": 8, "banks": 8, "eps_shift": 10},
            "training: ",
        ),  # 1696 divides d = 3392: every perturbation the same, the family refuses it
    ],
)
def test_invalid_configurations_are_pruned_not_crashed(params, reason):
    result = evaluate((params, Setting(steps=5)))
    assert result["state"] == "pruned" and result["reason"].startswith(reason), result


def _fake_report(config, unit="stream"):
    """Resources without Yosys: a function of the configuration (the unit tests do not synthesize)."""
    return {
        "LUT": 10 * config.lanes + config.rng_bits,
        "FF": 20 * config.lanes,
        "BRAM": int(config.strategy == "pregen"),
        "DSP": 0,
        "CARRY": 0,
    }


def test_gcd_traps_are_kept_and_marked(monkeypatch):
    import pezo.boards.flow.report as report

    monkeypatch.setattr(report, "report", _fake_report)
    setting = Setting(steps=20)
    trap = evaluate(({"strategy": "otf", "n_rngs": 31, "rng_bits": 10, "eps_shift": 10}, setting))
    fine = evaluate(({"strategy": "otf", "n_rngs": 31, "rng_bits": 11, "eps_shift": 10}, setting))
    pool = evaluate(
        ({"strategy": "pregen", "pool_size": 4240, "pool_bits": 12, "lanes": 8, "banks": 8, "eps_shift": 10}, setting)
    )
    assert trap["state"] == fine["state"] == pool["state"] == "complete"
    assert trap["attrs"]["gcd"] == 31 and trap["attrs"]["distinct_perturbations"] == 33
    assert fine["attrs"]["gcd"] == 1
    assert pool["attrs"]["gcd"] == 848 and pool["attrs"]["distinct_perturbations"] == 5
    assert explore.trap({"gcd": 848, "distinct_perturbations": 5, "params": {"strategy": "pregen"}}).startswith(
        "gcd(N, d) = 848: 5 distinct"
    )
    assert set(trap["values"]) == {"accuracy", "lut", "ff", "bram"}


class _Interrupt(Exception):
    pass


def test_resume_after_an_interrupt_does_not_repeat_finished_trials(tmp_path, monkeypatch):
    """Ctrl-C (here: an exception from the progress callback) after 3 trials; the rerun finishes the study
    with exactly the missing trials, and the first three keep their values."""
    calls = []

    def fake_evaluate(job):
        params, setting = job
        calls.append(params)
        return {
            "state": "complete",
            "values": {"accuracy": params["eps_shift"] / 20, "lut": params["n_rngs"]},
            "attrs": {"gcd": 1},
            "reason": None,
        }

    monkeypatch.setattr(explore, "evaluate", fake_evaluate)
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    setting = Setting(steps=5, objectives=("accuracy", "lut"))
    space = {**DEFAULT_SPACE, "strategy": ["otf"]}
    study = open_study(storage, "s", setting, space)
    seen = []

    def stop_after_three(result):
        seen.append(result)
        if len(seen) == 3:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        run_study(study, setting, space, 6, SERIAL, stop_after_three)
    first = {r["number"]: r["values"] for r in trial_rows(study, setting) if r["state"] == "complete"}
    assert len(first) == 3 and len(calls) == 3
    study = open_study(storage, "s", setting, space)  # a new process would load it like this
    assert run_study(study, setting, space, 6, SERIAL) == 3
    rows = trial_rows(study, setting)
    assert len(calls) == 6 and sum(r["state"] == "complete" for r in rows) == 6
    assert {r["number"]: r["values"] for r in rows if r["number"] in first} == first
    with pytest.raises(explore.StudyMismatch, match="other settings"):
        open_study(storage, "s", Setting(steps=6, objectives=("accuracy", "lut")), space)


def test_explore_command_end_to_end_and_rerun_continues(tmp_path, capsys):
    space = tmp_path / "space.json"
    space.write_text(json.dumps(TINY_SPACE))
    (tmp_path / "db").mkdir()  # --storage's directory must exist (pezo creates none for it, as for --csv)
    storage = f"sqlite:///{tmp_path / 'db' / 'studies.db'}"
    argv = [
        "explore",
        "--trials",
        "2",
        "--steps",
        "30",
        "--space",
        str(space),
        "--storage",
        storage,
        "--jobs",
        "1",
        "--quiet",
        "--json",
        "--out",
        str(tmp_path / "out"),
    ]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert {"pareto", "trials", "study", "storage"} <= set(summary) and summary["storage"] == storage
    assert summary["ran_this_run"] == 2 and len(summary["trials"]) == 2 and summary["pareto"]
    for r in summary["pareto"]:
        assert set(r["values"]) == {"accuracy", "lut", "ff", "bram"} and r["params"]["strategy"] == "otf"
    for name in ("front.md", "front.csv", "front.json", "trials.csv", "front.png"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    assert (tmp_path / "out" / "front.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    argv[argv.index("--trials") + 1] = "3"
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["ran_this_run"] == 1 and again["resumed_from"] == 2 and len(again["trials"]) == 3
    assert [t["values"] for t in again["trials"][:2]] == [t["values"] for t in summary["trials"]]


def test_sigint_stops_explore_and_the_rerun_resumes(tmp_path):
    """SIGINT to pezo explore after its first finished trial: one line, exit 130, --out not written; the same
    command then runs only the trials still missing."""
    space = tmp_path / "space.json"
    space.write_text(json.dumps({**TINY_SPACE, "rng_bits": {"low": 4, "high": 6}}))
    db = tmp_path / "s.db"
    argv = [
        sys.executable,
        "-m",
        "pezo.cli.main",
        "explore",
        "--trials",
        "4",
        "--steps",
        "400",
        "--space",
        str(space),
        "--storage",
        f"sqlite:///{db}",
        "--study",
        "s",
        "--jobs",
        "1",
        "--quiet",
        "--json",
        "--out",
        str(tmp_path / "out"),
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    import sqlite3

    import optuna

    finished = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and finished < 1:
        time.sleep(0.3)
        try:  # read-only: the study's schema is pezo's to create
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                finished = con.execute("SELECT count(*) FROM trials WHERE state IN ('COMPLETE', 'PRUNED')").fetchone()[
                    0
                ]
        except sqlite3.Error:
            continue
    assert proc.poll() is None and finished >= 1, (
        "pezo explore ended before it could be interrupted",
        proc.poll() is None or proc.communicate()[1],
    )
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err == "pezo: interrupted\n", err
    assert not (tmp_path / "out").exists()
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{db}")
    before = explore.finished(study)
    assert 1 <= before < 4 and all(t.state.name != "RUNNING" for t in study.trials)
    rerun = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    summary = json.loads(rerun.stdout)
    assert summary["resumed_from"] == before and summary["ran_this_run"] == 4 - before
    assert summary["counts"]["complete"] + summary["counts"]["pruned"] == 4


def test_cycles_and_power_objectives(monkeypatch):
    """cycles: the engine's cycle bound with C = the stream's lanes (a gaussian trial is pruned: no engine);
    power: the activity proxy per delivered value (faked here: the plumbing, not the simulation)."""
    import pezo.boards.flow.comparison_rows as comparison
    import pezo.boards.flow.report as report
    from pezo.golden.engine.nets import net_config

    monkeypatch.setattr(report, "report", _fake_report)
    monkeypatch.setattr(comparison, "stream_activity", lambda c: {"activity_per_value_synth_scaled": 1.5 * c.lanes})
    setting = Setting(steps=10, objectives=("accuracy", "cycles", "power"))
    pool = {"strategy": "pregen", "pool_size": 4095, "pool_bits": 12, "lanes": 8, "banks": 8, "eps_shift": 10}
    result = evaluate((pool, setting))
    assert result["state"] == "complete" and set(result["values"]) == {"accuracy", "cycles", "power"}
    assert result["values"]["cycles"] == net_config("digits-mlp", strategy="pregen", cols=8).cycle_bound()
    assert result["values"]["power"] == 12.0
    gaussian = evaluate(({"strategy": "gaussian", "lanes": 8, "eps_shift": 10}, setting))
    assert gaussian["state"] == "pruned" and gaussian["reason"].startswith("cycles: the engine has no gaussian stream")
    wide = evaluate(({**pool, "rows": 16}, setting))
    assert wide["values"]["cycles"] == net_config("digits-mlp", strategy="pregen", rows=16, cols=8).cycle_bound()
    assert wide["values"]["cycles"] < result["values"]["cycles"]
    untiled = evaluate(({"strategy": "otf", "n_rngs": 7, "rng_bits": 9, "eps_shift": 10, "rows": 8}, setting))
    assert untiled["state"] == "pruned" and "does not tile the array" in untiled["reason"]


def test_the_array_shape_is_drawn_only_for_the_cycles_objective():
    import optuna

    from pezo.golden.engine.zo_engine import ENGINE_STRATEGIES

    assert explore.ENGINE_STREAMS == ENGINE_STRATEGIES
    study = optuna.create_study(directions=["maximize"], sampler=optuna.samplers.RandomSampler(seed=1))
    drawn = [explore.suggest(study.ask(), DEFAULT_SPACE, array=True) for _ in range(30)]
    assert all(("rows" in p) == (p["strategy"] != "gaussian") for p in drawn)
    assert not any("rows" in explore.suggest(study.ask(), DEFAULT_SPACE) for _ in range(10))
