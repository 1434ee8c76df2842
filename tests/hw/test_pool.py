"""The pre-generated pool: golden contents and addressing, the banked BRAM reader against golden."""

import math

import numpy as np
import pytest

from pezo.golden.config import PerturbConfig
from pezo.golden.rng.pool import (
    POOL_STAGES,
    bank_contents,
    gaussian_expected_norm,
    perturbation,
    pool_values,
)
from pezo.golden.rng.pool import (
    PoolReader as GoldenPool,
)
from pezo.sim.amaranth_sim import check_against_golden


def test_expected_gaussian_norm():
    assert gaussian_expected_norm(1) == pytest.approx(math.sqrt(2 / math.pi))
    assert gaussian_expected_norm(2) == pytest.approx(math.sqrt(math.pi / 2))
    rng = np.random.default_rng(0)
    z = rng.standard_normal((20000, 50))
    assert gaussian_expected_norm(50) == pytest.approx(np.linalg.norm(z, axis=1).mean(), rel=2e-3)
    assert gaussian_expected_norm(10**9) == pytest.approx(math.sqrt(10**9), rel=1e-9)


def test_pool_values_have_gaussian_norm_in_mean_square():
    cfg = PerturbConfig(pool_size=4095, pool_bits=12, perturb_dim=770)
    q = pool_values(cfg)
    assert len(q) == 4095 and q.dtype == np.int64
    assert np.abs(q).max() <= 2047
    real = q / 2.0**10
    target = gaussian_expected_norm(770)
    # mean over all start positions of ||window||^2 equals d * mean(pool^2) ~ target^2 (quantisation only)
    assert 770 * np.mean(real**2) == pytest.approx(target**2, rel=2e-3)
    norms = [np.linalg.norm(perturbation(real, s, 770)) for s in range(0, 4095, 97)]
    assert np.mean(norms) == pytest.approx(target, rel=0.01)
    # uniform shape: kurtosis of U(-1,1) is 1.8
    from scipy import stats

    assert stats.kurtosis(real, fisher=False) == pytest.approx(1.8, abs=0.1)
    assert pool_values(cfg).tolist() == q.tolist()  # reproducible


def test_leftover_shift_addressing():
    cfg = PerturbConfig(pool_size=15, lanes=4, banks=2, perturb_dim=6)
    pool = GoldenPool(cfg, values=np.arange(15))
    seen = []
    for _perturbation in range(3):
        for _edge in range(POOL_STAGES):  # the pipeline refills after reset and after every command
            assert not pool.valid
            pool.step(en=True)
        for _ in range(2):  # 2 cycles x 4 lanes cover d = 6 (the last 2 lanes are beyond d)
            assert pool.valid
            seen.append(pool.lanes().tolist())  # the window on the port now; en consumes it
            pool.step(en=True)
        pool.step(next_perturbation=True)
    # starts go 0, 6, 12, 3 (mod 15): the leftover of one perturbation starts the next
    assert pool.start == 3
    assert seen == [[0, 1, 2, 3], [4, 5, 6, 7], [6, 7, 8, 9], [10, 11, 12, 13], [12, 13, 14, 0], [1, 2, 3, 4]]
    assert cfg.pool_distinct_perturbations == 5  # gcd(15, 6) = 3


def test_pool_reader_holds_its_window_while_not_ready():
    cfg = PerturbConfig(pool_size=15, lanes=4, banks=2, perturb_dim=6)
    pool = GoldenPool(cfg, values=np.arange(15))
    for _ in range(5):
        pool.step(en=False)  # nothing moves without en, not even into an empty pipeline
    assert not pool.valid
    for _ in range(POOL_STAGES):
        pool.step(en=True)
    assert pool.lanes().tolist() == [0, 1, 2, 3]
    for _ in range(3):
        pool.step(en=False)  # valid and not ready: nothing moves
        assert pool.lanes().tolist() == [0, 1, 2, 3]
    pool.step(en=True)
    assert pool.lanes().tolist() == [4, 5, 6, 7]  # no bubble after a stall


def test_pool_distinct_perturbations_warns_of_shared_factors():
    assert PerturbConfig(pool_size=4095, perturb_dim=770).pool_distinct_perturbations == 117
    assert PerturbConfig(pool_size=4093, perturb_dim=770).pool_distinct_perturbations == 4093


def test_bank_contents_cover_every_window():
    cfg = PerturbConfig(pool_size=21, lanes=8, banks=4)
    values = np.arange(21)
    banks = bank_contents(cfg, values)
    for a in range(21):
        for i in range(8):
            element = a + i
            assert banks[element % 4][element // 4] == values[element % 21]


@pytest.mark.parametrize(
    "cfg",
    [
        PerturbConfig(pool_size=4095, pool_bits=12, lanes=8, banks=8, perturb_dim=1000),
        PerturbConfig(pool_size=37, pool_bits=6, lanes=8, banks=2, perturb_dim=50),
        PerturbConfig(pool_size=9, pool_bits=8, lanes=4, banks=1, perturb_dim=7),
    ],
    ids=lambda c: f"N{c.pool_size}-L{c.lanes}-B{c.banks}",
)
def test_hw_pool_matches_golden(cfg):
    check_against_golden("pool", cfg, cycles=600)


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"pool_size": 0}, "pool_size must be in 8..1048576"),
        ({"pool_size": 1 << 21}, "pool_size must be in 8..1048576"),
        ({"banks": 3, "lanes": 6}, "banks must be a power of two dividing lanes=6"),
        ({"banks": 4, "lanes": 6}, "banks must be a power of two dividing lanes=6"),
        ({"pool_bits": 3}, "pool_bits must be in 4..18"),
        ({"pool_bits": 19}, "pool_bits must be in 4..18"),
        ({"perturb_dim": 0}, "perturb_dim must be in 1..2147483647"),
    ],
)
def test_bad_pool_config(kwargs, needle):
    with pytest.raises(ValueError, match=needle.replace(".", r"\.").replace("(", r"\(")):
        PerturbConfig(strategy="pregen", **kwargs)
