"""``pezo train --method`` and ``pezo sweep --methods``: JSON contract, outputs, one-line errors."""

from __future__ import annotations

import json

import pytest

from pezo.cli.main import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_train_method_json_has_the_golden_trainer_keys_plus_method(capsys):
    code, out, _ = run(
        capsys,
        "train",
        "--method",
        "poormans",
        "--task",
        "digits-rot45",
        "--steps",
        "3",
        "--queries",
        "2",
        "--json",
        "--quiet",
    )
    assert code == 0
    result = json.loads(out)
    for key in (
        "method",
        "family",
        "task",
        "shots",
        "steps",
        "seed",
        "test_accuracy",
        "start_accuracy",
        "seconds_per_step",
        "final_test_accuracy",
        "forward_passes",
        "trainable_params",
        "memory_bytes",
    ):
        assert key in result
    assert result["method"] == "poormans" and result["steps"] == 3


def test_train_method_text_summary_mentions_the_sign_agreement(capsys):
    code, out, _ = run(capsys, "train", "--method", "elasticzo-int8", "--split", "cls2", "--steps", "20", "--quiet")
    assert code == 0
    assert "integer CE sign agreed with the float sign" in out and "Eq. 15" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (("--method", "elasticzo", "--split", "7"), "split must be in 0..3"),
        (
            ("--method", "elasticzo", "--task", "rotten_tomatoes", "--split", "cls1"),
            "split must be in 0..1 for a 1-layer",
        ),
        (("--method", "sign-m-spsa", "--queries", "0"), "m (queries) must be in 1..1024"),
        (("--method", "sign-m-spsa", "--weight-bits", "8", "--task", "digits-rot30"), "rounds to 0 weight LSBs"),
        (("--method", "poormans", "--mu-weight", "0"), "--mu-weight must be in 1..127"),
        (("--method", "poormans", "--trainable", "head"), "--trainable applies to the golden MeZO trainer"),
        (
            (
                "--method",
                "adam",
            ),
            "method must be one of",
        ),
        (("--method", "mezo", "--task", "digits", "--hidden", "a,b"), "hidden must be comma-separated integers"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, argv, message):
    code, out, err = run(capsys, "train", "--steps", "2", "--quiet", *argv)
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1


def test_sweep_methods_writes_table_json_csv_png(capsys, tmp_path):
    out = tmp_path / "cmp"
    code, stdout, _ = run(
        capsys,
        "sweep",
        "--methods",
        "mezo,elasticzo,sign-m-spsa",
        "--tasks",
        "digits",
        "--seeds",
        "1",
        "--steps",
        "6",
        "--eval-every",
        "3",
        "--jobs",
        "1",
        "--out",
        str(out),
        "--quiet",
    )
    assert code == 0
    assert {p.name for p in out.iterdir()} >= {"methods.md", "methods.json", "methods.csv", "methods.png"}
    rows = json.loads((out / "methods.json").read_text())["rows"]
    assert [r["label"] for r in rows] == [
        "mezo",
        "elasticzo Full ZO",
        "elasticzo ZO-Feat-Cls2",
        "elasticzo ZO-Feat-Cls1",
        "elasticzo Full BP",
        "sign-m-spsa",
    ]
    assert all(r["memory_bytes"] > 0 and r["forward_passes"] > 0 for r in rows)
    assert "| digits | elasticzo Full BP |" in stdout
    code, _, err = run(capsys, "sweep", "--methods", "mezo,bogus", "--out", str(tmp_path / "x"))
    assert code == 2 and "methods must be a comma-separated subset" in err
    assert not (tmp_path / "x").exists()
