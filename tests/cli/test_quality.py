"""``pezo quality`` (issue 17): lag correlations, cosine and norm inflation per family, against independent values."""

import json

import pytest

from pezo.cli.main import main
from pezo.golden.methods.checks import lag_correlations, perturbation_quality
from pezo.golden.zo.families import make_sampler

CONTRACT = ("family", "d", "max_lag_correlation", "cosine", "cosine_theory", "inflation", "inflation_theory")


def test_json_contract_and_the_otf_arrays_rotation_correlation(capsys):
    """The 1-bit-per-clock LFSR array read as is (PeZO's): element i and i + n - 1 are one LFSR's shifted copies
    (+0.48 for n = 31); the default spread order takes that to about +0.05."""
    assert main(["quality", "--family", "pezo-otf", "--trials", "40", "--bit-order", "natural", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert set(CONTRACT) <= set(r) and r["family"] == "pezo-otf" and r["d"] == 100 and r["max_lag"] == 62
    assert r["max_lag_correlation_lag"] == 30 and 0.4 < r["max_lag_correlation"] < 0.56
    assert 0.15 < r["lag_correlations"][59] < 0.3  # 2(n - 1) apart
    assert r["cosine"] < r["cosine_theory"] - 0.02 and r["inflation_excess"] > 0.1
    assert main(["quality", "--family", "pezo-otf", "--trials", "40", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["max_lag_correlation"] < 0.1 and abs(r["lag_correlations"][29]) < 0.1


def test_leap_forward_removes_the_rotation_correlation(capsys):
    """k = b LFSR steps per clock: a lane's next value is b fresh bits, so lag n - 1 falls into the noise."""
    assert main(["quality", "--family", "pezo-otf", "--leap", "14", "--trials", "40", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["options"] == {"leap": 14}
    assert abs(r["lag_correlations"][29]) < 2 * r["lag_noise"] and r["max_lag_correlation"] < 2 * r["lag_noise"]
    assert abs(r["cosine"] - r["cosine_theory"]) < 0.02 and r["inflation_excess"] < 0.08


def test_independent_families_stay_inside_the_noise():
    for family in ("gaussian", "rademacher", "xorshift-rademacher"):
        r = perturbation_quality(family, dim=100, queries=50, trials=40, seed=3)
        assert r["max_lag_correlation"] < r["lag_noise"] * 1.5, (family, r["max_lag_correlation"])
        assert abs(r["cosine"] - r["cosine_theory"]) < 0.02 and abs(r["inflation_excess"]) < 0.08


def test_lag_correlation_of_a_known_sequence():
    """Perturbations whose element i + 2 repeats element i (pairs of pairs): lag 2 correlates at about 1/2,
    lag 4 not at all."""
    import numpy as np

    class Pairs:
        dim = 64

        def perturbation(self, index):
            base = make_sampler("rademacher", 32, seed=index + 1).perturbation(0)
            i = np.arange(64)
            return base[i // 4 * 2 + i % 2]  # elements 4k and 4k + 2 equal, 4k + 1 and 4k + 3 equal

    lags = lag_correlations(Pairs(), 400, 4)
    assert 0.4 < lags[1] < 0.6 and abs(lags[0]) < 0.05 and abs(lags[3]) < 0.05


def test_several_families_a_table_plot_and_csv(tmp_path, capsys):
    plot, csv = tmp_path / "q.png", tmp_path / "q.csv"
    argv = [
        "quality",
        "--family",
        "gaussian,pezo-otf",
        "--trials",
        "20",
        "--queries",
        "20",
        "--plot",
        str(plot),
        "--csv",
        str(csv),
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "| pezo-otf |" in out and "| gaussian |" in out
    assert plot.stat().st_size > 10_000 and csv.read_text().count("\n") == 3
    assert main(argv) == 2 and "exists" in capsys.readouterr().err  # never replaced without --force
    assert main([*argv, "--force", "--json"]) == 0
    assert [r["family"] for r in json.loads(capsys.readouterr().out)] == ["gaussian", "pezo-otf"]


def test_naive_int_takes_the_lfsr_options_and_is_in_all(capsys):
    """naive-int shares --n-rngs/--rng-bits/--leap with pezo-otf: one flag reaches both, and ``all`` lists it."""
    argv = ["quality", "--family", "naive-int,pezo-otf", "--rng-bits", "8", "--trials", "10", "--json"]
    assert main(argv) == 0
    results = json.loads(capsys.readouterr().out)
    assert [(r["family"], r["options"]) for r in results] == [
        ("naive-int", {"rng_bits": 8}),
        ("pezo-otf", {"rng_bits": 8}),
    ]
    from pezo.cli.quality import quality_families

    assert "naive-int" in quality_families()


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--family", "foo"], "--family must be one of gaussian"),
        (["--d", "1"], "--d must be in 2..16777216, got 1"),
        (["--max-lag", "100"], "--max-lag must be in 1..99, got 100"),
        (["--family", "gaussian", "--n-rngs", "4"], "--n-rngs applies to --family naive-int or pezo-otf only"),
        (["--family", "naive-int", "--scaling", "exact"], "--scaling applies to --family pezo-otf only"),
        (["--n-rngs", "0"], "--n-rngs must be in 1..1024, got 0"),
        (["--queries", "0"], "--queries must be in 1..65536, got 0"),
        (["--leap", "3"], "--leap must be coprime to 2^14 - 1 = 16383"),
        (["--leap", "15"], "--leap must be in 1..14, got 15"),
        (["--family", "gaussian", "--leap", "2"], "--leap applies to --family naive-int or pezo-otf only"),
        (["--plot", "x.txt"], "--plot x.txt: name the file *.png"),
    ],
)
def test_bad_input_is_one_line(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["quality", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("pezo: error: ") and err.count("\n") == 1 and needle in err, err
    assert list(tmp_path.iterdir()) == []
