"""MeZO's keep_z (the current perturbation's z kept between its uses): bit for bit the streaming path."""

import hashlib

import numpy as np
import pytest

from pezo.golden.zo import mezo
from pezo.golden.zo.families import make_sampler
from pezo.golden.zo.mezo import KEEP_Z_AUTO_BYTES, MeZO, MeZOConfig

SHAPES = {"w": (9, 6), "bias": (9,), "LayerNorm.weight": (6,), "v": (13,)}
OPTIONS = {"pezo-otf": {"n_rngs": 7, "rng_bits": 10}, "pezo-pregen": {"pool_size": 31}}


def run(keep_z: str, family: str, queries: int, weight_decay: float, threads: int = 1, steps: int = 25, mode="inplace"):
    """(theta digest after every step, the records, the optimiser) of a small MeZO run (``mode``)."""
    rng = np.random.default_rng(queries)
    params = {n: rng.standard_normal(s).astype(np.float32) for n, s in SHAPES.items()}
    target = {n: rng.standard_normal(s) for n, s in SHAPES.items()}

    def loss(p):
        return float(sum(np.sum((p[n].astype(np.float64) - target[n]) ** 2) for n in SHAPES))

    sampler = make_sampler(family, sum(int(np.prod(s)) for s in SHAPES.values()), seed=5, **OPTIONS.get(family, {}))
    config = MeZOConfig(lr=2e-3, eps=1e-2, queries=queries, weight_decay=weight_decay, keep_z=keep_z, mode=mode)
    opt = MeZO(params, list(SHAPES), sampler, config, threads=threads)
    digests, records = [], []
    for t in range(steps):
        records.append(opt.step(t, loss))
        digests.append(hashlib.sha256(b"".join(params[n].tobytes() for n in SHAPES)).hexdigest()[:16])
    return digests, records, opt


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
@pytest.mark.parametrize("queries", [1, 3])
@pytest.mark.parametrize("family", ["gaussian", "pezo-otf", "pezo-pregen"])
def test_kept_z_gives_the_streaming_paths_theta_after_every_step(family, queries, weight_decay):
    streamed, streamed_records, plain = run("never", family, queries, weight_decay)
    kept, kept_records, fast = run("always", family, queries, weight_decay)
    assert not plain.keeps_z and fast.keeps_z
    assert kept == streamed
    assert kept_records == streamed_records


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("queries", [1, 2])
def test_kept_z_does_not_depend_on_the_piece_size_or_the_threads(queries, monkeypatch):
    streamed = run("never", "gaussian", queries, 0.1)[0]
    monkeypatch.setattr(mezo, "CHUNK", 5)  # tensors of 54, 9, 6 and 13 values: several pieces, a short last one
    assert run("always", "gaussian", queries, 0.1, threads=3)[0] == streamed


def test_replay_with_kept_z_rebuilds_the_weights():
    _, records, opt = run("always", "gaussian", 2, 0.1)
    start = run("never", "gaussian", 2, 0.1, steps=0)[2].params
    MeZO(start, list(SHAPES), opt.sampler, opt.config).replay(records)
    for name in SHAPES:
        assert np.array_equal(start[name], opt.params[name]), name


def test_auto_keeps_z_under_the_budget_in_both_modes():
    sampler = make_sampler("gaussian", 10, seed=1)
    small = {"w": np.zeros(10, dtype=np.float32)}
    assert MeZO(small, ["w"], sampler, MeZOConfig()).keeps_z
    assert not MeZO(small, ["w"], sampler, MeZOConfig(keep_z="never")).keeps_z
    assert MeZO(small, ["w"], sampler, MeZOConfig(mode="stream")).keeps_z
    assert not MeZO(small, ["w"], sampler, MeZOConfig(mode="stream", keep_z="never")).keeps_z
    over = KEEP_Z_AUTO_BYTES // 4 + 1  # one value over the budget (np.empty: no pages touched)
    big = {"w": np.empty(over, dtype=np.float32)}
    sampler = make_sampler("gaussian", over, seed=1)
    assert not MeZO(big, ["w"], sampler, MeZOConfig()).keeps_z
    assert MeZO(big, ["w"], sampler, MeZOConfig(keep_z="always")).keeps_z


@pytest.mark.parametrize("value", ["yes", True, None, 1])
def test_bad_keep_z_names_the_parameter_and_the_allowed_values(value):
    with pytest.raises(ValueError, match=r"keep_z must be one of auto, always, never, got"):
        MeZOConfig(keep_z=value)


@pytest.mark.parametrize("queries, draws", [(1, 1), (3, 5)])
def test_kept_z_is_drawn_once_per_query(queries, draws):
    """Per tensor and step: q draws in the perturbations and q - 1 in the update (4q - 1 without keep_z)."""
    _, _, opt = run("always", "gaussian", queries, 0.1, steps=1)
    calls = []
    stream = opt.sampler.stream
    opt.sampler.stream = lambda *args: calls.append(args) or stream(*args)
    opt.step(1, lambda p: 0.0)
    assert len(calls) == draws * len(SHAPES)


def test_auto_keeps_the_tensors_that_fit_the_budget_in_stream_order_bit_for_bit(monkeypatch):
    monkeypatch.setattr(mezo, "KEEP_Z_AUTO_BYTES", 4 * (9 + 6))  # w (54 values) does not fit, bias + LayerNorm do
    streamed = run("never", "gaussian", 2, 0.1)[0]
    digests, _, opt = run("auto", "gaussian", 2, 0.1)
    assert opt.kept_tensors == (False, True, True, False) and opt.kept_z_bytes == 4 * 15
    assert digests == streamed


STREAM_DIGESTS = {
    ("gaussian", 1): "7408c7baa411bcbb",
    ("gaussian", 3): "2bbd11f3acb1aac6",
    ("uniform", 1): "57cb5e6c43923a18",
    ("rademacher", 2): "4f8c6dee7b54cde3",
    ("pezo-otf", 1): "663654a0cbf627b4",
    ("pezo-pregen", 3): "64d550bdd0d54a51",
}
"""Stream mode's theta after 25 steps (weight decay 0.1), computed by the code before stream mode kept z (a fresh
generator per tensor, view and update): keeping z must not change a bit."""


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("family, queries", list(STREAM_DIGESTS))
def test_stream_mode_with_kept_z_gives_the_same_theta_as_before(family, queries):
    streamed, streamed_records, plain = run("never", family, queries, 0.1, mode="stream")
    kept, kept_records, fast = run("always", family, queries, 0.1, mode="stream")
    assert not plain.keeps_z and fast.keeps_z
    assert kept == streamed and kept_records == streamed_records
    assert kept[-1] == STREAM_DIGESTS[family, queries]


@pytest.mark.parametrize("queries", [1, 3])
def test_stream_mode_draws_each_tensor_once_per_query(queries):
    """Per tensor and step in stream mode with kept z: one draw per query (the last query's z also serves the
    update, the others' are drawn again there): q + (q - 1) stream reads and no segment, 3q generators before."""
    _, _, opt = run("always", "gaussian", queries, 0.1, steps=1, mode="stream")
    calls = []
    stream, segment = opt.sampler.stream, opt.sampler.segment
    opt.sampler.stream = lambda *args: calls.append(args) or stream(*args)
    opt.sampler.segment = lambda *args: calls.append(args) or segment(*args)
    opt.step(1, lambda p: float(sum(np.sum(p[n]) for n in SHAPES)))
    assert len(calls) == (2 * queries - 1) * len(SHAPES)
