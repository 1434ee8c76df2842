"""The engine's real task in golden: embedding cache, batch schedule, host update scale, and a short
INT8 ZO run on Rotten Tomatoes that must beat its start (the long runs are `pezo train-int8`)."""

import json
import os

import numpy as np
import pytest

from pezo.cli.main import main
from pezo.golden.engine.zo_engine import G_MAX, EngineConfig
from pezo.golden.zo.int8_head import Int8TrainConfig, batch_schedule, update_scale


@pytest.fixture(scope="module", autouse=True)
def model_and_data_present():
    from pezo.golden.lm.data import TaskDataMissing, load_task
    from pezo.golden.lm.minilm import ModelPackageMissing, load_minilm

    try:
        load_minilm()
        load_task("rotten_tomatoes")
    except (ModelPackageMissing, TaskDataMissing) as exc:
        if os.environ.get("PEZO_REQUIRE_MODEL") or os.environ.get("PEZO_REQUIRE_DATA"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


def test_batch_schedule_is_seeded_epoch_wise_and_checks_the_batch():
    a, b = batch_schedule(40, 16, 7, seed=3), batch_schedule(40, 16, 7, seed=3)
    assert a.shape == (7, 16) and np.array_equal(a, b)
    assert not np.array_equal(a, batch_schedule(40, 16, 7, seed=4))
    assert all(len(set(row)) == 16 for row in a)  # no example twice in a batch
    assert sorted(np.concatenate(a[:2]).tolist()) == sorted(set(np.concatenate(a[:2]).tolist()))
    with pytest.raises(ValueError, match="engine batch must be <= the 8 training examples"):
        batch_schedule(8, 16, 1, seed=1)


def test_update_scale_is_mezo_in_weight_lsbs_and_saturates():
    cfg = Int8TrainConfig(lr=0.5, weight_exponent=-4, engine=EngineConfig().replace(eps_shift=10))  # eps = 4 LSB
    plus, minus = np.array([[64, 0]]), np.array([[0, 64]])
    g, lp, lm = update_scale(plus, minus, np.array([0]), cfg, act_exponent=-2)
    eps_real = 4 * 2.0**-4
    assert lp < lm
    assert g == round(0.5 * (lp - lm) / (2 * eps_real) / eps_real * 65536)
    huge = cfg.replace(lr=1e9)
    assert update_scale(minus, plus, np.array([0]), huge, -2)[0] == G_MAX


def test_embeddings_are_cached_per_example(monkeypatch):
    from pezo.golden.zo import int8_head
    from pezo.golden.zo.int8_head import sentence_embeddings

    first = sentence_embeddings("rotten_tomatoes", [5, 3, 5])
    assert first.shape == (3, 384) and np.array_equal(first[0], first[2])
    assert np.allclose(np.linalg.norm(first, axis=1), 1, atol=1e-5)
    monkeypatch.setattr(int8_head, "load_minilm", lambda: pytest.fail("recomputed a cached embedding"))
    assert np.array_equal(sentence_embeddings("rotten_tomatoes", [3, 5]), first[1:])
    assert int8_head.embedding_cache_path("rotten_tomatoes").exists()


def test_a_short_int8_zo_run_beats_its_start_and_reports_the_float_probe(capsys):
    assert main(["train-int8", "--steps", "600", "--eval-every", "100", "--json", "--quiet"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["test_accuracy"] >= r["start_accuracy"] + 0.1
    assert 0.5 < r["float_probe_test_accuracy"] < 0.8
    assert r["steps"] == 600 and r["g_saturated_steps"] == 0
    assert np.abs(np.array(r["weights"])).max() <= 127
