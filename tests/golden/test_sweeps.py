"""The Table 3 analogue's aggregation and table (``golden.sweep.experiments``) on synthetic runs: no model needed."""

from pezo.golden.sweep import experiments as sweeps
from pezo.golden.zo.trainer import TrainConfig


def run(family, shots, seed, test, final, best_step=200, loss_start=0.69, ratio=1.0):
    return {
        "experiment": "table3",
        "label": family,
        "family": family,
        "shots": shots,
        "seed": seed,
        "test_accuracy": test,
        "final_test_accuracy": final,
        "best_step": best_step,
        "start_accuracy": 0.42,
        "train_loss_start": loss_start,
        "train_loss_end": 0.5,
        "norm_ratio": ratio,
        "sampler": {"options": {}, "distinct_perturbations": None},
    }


def probe(shots, seed, test, l2):
    return {
        "experiment": "table3",
        "label": sweeps.PROBE,
        "family": sweeps.PROBE,
        "shots": shots,
        "seed": seed,
        "test_accuracy": test,
        "best_val_accuracy": 0.7,
        "l2": l2,
        "classes": 2,
        "val_size": 2 * shots,
        "constant_accuracy": 0.5 + 0.01 * seed,
    }  # the majority class's test share: 51 % / 52 %


RUNS = [probe(16, 1, 0.62, 10.0), probe(16, 2, 0.64, 100.0), probe(256, 1, 0.74, 1.0), probe(256, 2, 0.76, 1.0)]
for k, base in ((16, 0.58), (256, 0.68)):
    for seed in (1, 2):
        RUNS.append(run("gaussian", k, seed, base, base + 0.01))
        # naive-int: best validation at step 0 in one k=16 run (test = start), final near the constant
        # predictor's 51.5 % at k = 16 only
        RUNS.append(
            run(
                "naive-int",
                k,
                seed,
                0.42 if (k, seed) == (16, 1) else 0.5,
                0.565 if k == 16 else 0.6,
                best_step=0 if (k, seed) == (16, 1) else 400,
                loss_start=2e5,
                ratio=4729.0,
            )
        )


def test_aggregate_keeps_final_accuracy_best_step_zero_and_the_probe_row():
    rows = {(r["family"], r["shots"]): r for r in sweeps.aggregate(RUNS)}
    naive = rows["naive-int", 16]
    assert naive["best_step_zero"] == 1 and abs(naive["final_test_accuracy_mean"] - 0.565) < 1e-12
    assert abs(naive["test_accuracy_mean"] - 0.46) < 1e-12 and naive["norm_ratio_mean"] == 4729.0
    assert rows["gaussian", 256]["best_step_zero"] == 0
    p = rows[sweeps.PROBE, 16]
    assert abs(p["test_accuracy_mean"] - 0.63) < 1e-12 and p["l2"] == [10.0, 100.0] and p["classes"] == 2
    assert abs(p["constant_accuracy_mean"] - 0.515) < 1e-12


def test_collapse_is_final_accuracy_within_5_points_of_the_constant_predictor():
    rows = sweeps.aggregate(RUNS)
    assert sweeps.collapsed_at(rows, "naive-int") == [16]  # 56.5 % <= 51.5 + 5; 60 % at k = 256 is not
    assert sweeps.collapsed_at(rows, "gaussian") == []
    assert sweeps.collapsed_at([r for r in rows if r["family"] != sweeps.PROBE], "gaussian") is None  # no class count


def test_table3_names_its_main_column_and_shows_final_beside_it():
    text = sweeps.table3_markdown(sweeps.aggregate(RUNS), TrainConfig())
    assert "**Main column `k=K`: the test accuracy of the best-validation checkpoint**" in text
    assert "validation examples: 32 at k=16, 512 at k=256" in text
    assert "best constant prediction on test (the majority class: 51.5 % at k=16, 51.5 % at k=256)" in text
    lines = text.splitlines()
    assert (
        "| family | ‖z‖/MeZO | k=16 | k=16 final | k=256 | k=256 final | Δ final (k=16/256) | ℓ± start (k=16/256) "
        "| start (k=16/256) | collapses |" in lines
    )
    naive = next(line for line in lines if line.startswith("| naive-int |"))
    assert naive == (
        "| naive-int | 4.73e+03 | 46.0 ± 5.7 (1@0) | 56.5 ± 0.0 | 50.0 ± 0.0 | 60.0 ± 0.0 | "
        "-2.5 / -9.0 | 2e+05 / 2e+05 | 42.0 / 42.0 | k=16 |"
    )  # gaussian's final: 59 / 69
    gauss = next(line for line in lines if line.startswith("| gaussian |"))
    assert gauss.endswith("| - / - | 0.69 / 0.69 | 42.0 / 42.0 | no |") and "(" not in gauss.split("|")[3]
    assert "| float-probe (L2 on val: 1, 10, 100) | - | 63.0 ± 1.4 | - | 75.0 ± 1.4 | - | - | - | - | - |" in lines
    assert "| uniform | - | - | - | - | - |" in text  # a family without runs stays a row of dashes
