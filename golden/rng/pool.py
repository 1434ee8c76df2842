"""The pre-generated random-number pool (PeZO's pre-generation strategy), value for value.

Contents (``pool_values``): N = ``pool_size`` draws u ~ U(-1, 1) from SplitMix64(seed) (53-bit
doubles), scaled by ``s = E||z_d|| / (sqrt(d) * rms(u))`` so that a perturbation of d = ``perturb_dim``
values has the expected norm of a d-dimensional standard Gaussian (exactly in mean square over start
positions), then quantised: ``q = rint(s * u * 2^(pool_bits - 2))`` (round half to even), saturated
to +-(2^(pool_bits-1) - 1). Real value = q / 2^(pool_bits - 2).

Addressing (leftover shift): element j of perturbation t is ``pool[(start_t + j) mod N]`` and
``start_(t+1) = (start_t + d) mod N``; the stream reads ``lanes`` consecutive elements per cycle.

Cycle model (``PoolReader``, twin of ``hw.rng.pool.PoolReader``): a read pointer ``a`` (the next window
to issue) and the current perturbation's ``start``, then ``POOL_STAGES`` pipeline registers
(``golden.rng.pipeline.StallPipeline``: bank row addresses, the BRAM read, the BRAM output register, the
barrel rotation) to the ``lanes`` port with its ``valid``; ``en`` is the consumer's ready. Each clock edge,
by priority: ``next_perturbation``: start <- a <- (start + d) mod N and the pipeline empties;
``restore``: a <- start (rewind) and the pipeline empties; otherwise, when the pipeline advances (port not
valid, or ``en``), the window at a enters it and a <- (a + lanes) mod N. So after reset or a command the
first window is on the port ``POOL_STAGES`` edges later, and with ``en`` held high one window follows
per cycle. Every addition is a single adder (mod N by two parallel adders and a select), and nothing but a
register sits behind a BRAM output.
"""

from __future__ import annotations

import math

import numpy as np

from pezo.golden.config import PerturbConfig
from pezo.golden.rng.pipeline import StallPipeline
from pezo.golden.rng.urng import splitmix64

POOL_STAGES = 4
"""Registers from the read pointer to the port: row addresses, BRAM read, BRAM output register, rotation."""


def gaussian_expected_norm(d: int) -> float:
    """E||z|| for z ~ N(0, I_d): sqrt(2) * Gamma((d+1)/2) / Gamma(d/2).

    lgamma difference up to d = 100 (PeZO's overflow-free form); above it, where the difference of two
    large lgammas loses digits, the asymptotic series sqrt(d) (1 - 1/4d + 1/32d^2 + 5/128d^3 - 21/2048d^4)
    (relative error < 1e-11 at d = 100, and shrinking).
    """
    if d <= 100:
        return math.exp(0.5 * math.log(2.0) + math.lgamma((d + 1) / 2) - math.lgamma(d / 2))
    return math.sqrt(d) * (1 - 1 / (4 * d) + 1 / (32 * d * d) + 5 / (128 * d**3) - 21 / (2048 * d**4))


def uniform_draws(seed: int, count: int) -> np.ndarray:
    """``count`` doubles in (-1, 1) from SplitMix64(seed): ((x >> 11) + 0.5) * 2^-52 - 1."""
    out = np.empty(count)
    state = seed
    for i in range(count):
        state, x = splitmix64(state)
        out[i] = ((x >> 11) + 0.5) * 2.0**-52 - 1.0
    return out


def pool_frac_bits(config: PerturbConfig) -> int:
    return config.pool_bits - 2


def pool_values(config: PerturbConfig) -> np.ndarray:
    """The N quantised pool values (int64), see the module docstring."""
    u = uniform_draws(config.seed, config.pool_size)
    rms = math.sqrt(float(np.mean(u * u)))
    scale = gaussian_expected_norm(config.perturb_dim) / (math.sqrt(config.perturb_dim) * rms)
    limit = (1 << (config.pool_bits - 1)) - 1
    q = np.rint(u * scale * (1 << pool_frac_bits(config)))
    return np.clip(q, -limit, limit).astype(np.int64)


def perturbation(values: np.ndarray, start: int, d: int) -> np.ndarray:
    """Element j of a perturbation starting at ``start``: values[(start + j) mod N], j < d."""
    return values[(start + np.arange(d)) % len(values)]


def bank_depth(config: PerturbConfig) -> int:
    """Entries per bank: the N + lanes - 1 positions a window can touch, over ``banks`` banks."""
    return -(-(config.pool_size + config.lanes - 1) // config.banks)


def bank_contents(config: PerturbConfig, values: np.ndarray | None = None) -> list[np.ndarray]:
    """What each BRAM bank stores: bank b entry e = pool[(e * banks + b) mod N], for the N + lanes - 1
    physical positions a window can touch (the first lanes - 1 values repeat after the end)."""
    values = pool_values(config) if values is None else values
    entries = np.arange(bank_depth(config)) * config.banks
    return [values[(entries + b) % config.pool_size] for b in range(config.banks)]


class PoolReader:
    """Cycle model of the banked, pipelined pool reader (see the module docstring)."""

    def __init__(self, config: PerturbConfig, values: np.ndarray | None = None):
        self.config = config
        self.values = pool_values(config) if values is None else values
        self.start = 0
        self.address = 0
        self.pipeline = StallPipeline(POOL_STAGES)

    def window(self, address: int) -> np.ndarray:
        return perturbation(self.values, address, self.config.lanes)

    @property
    def valid(self) -> bool:
        return self.pipeline.valid

    def lanes(self) -> np.ndarray | None:
        """Values on the ``lanes`` port this cycle (signed; None while not valid)."""
        return self.pipeline.output()

    def step(self, en: bool = True, restore: bool = False, next_perturbation: bool = False) -> None:
        cfg = self.config
        if next_perturbation:
            self.start = self.address = (self.start + cfg.perturb_dim) % cfg.pool_size
        elif restore:
            self.address = self.start
        if next_perturbation or restore:
            self.pipeline.step(None, en, flush=True)
        elif self.pipeline.step(self.window(self.address), en):
            self.address = (self.address + cfg.lanes) % cfg.pool_size
