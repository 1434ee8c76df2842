"""The Gaussian RNG baseline (MeZO on an FPGA): a central-limit generator, cycle by cycle.

Each generator owns a 127-bit Fibonacci LFSR with the primitive trinomial x^127 + x + 1
(``a[k+127] = a[k] ^ a[k+1]``), held as bits s[126..0] with the oldest sequence bit in s[0], and
leaps ``LEAP = 96`` steps per clock: the new state is ``s[126..96]`` shifted down plus 96 new bits
``s[j] ^ s[j+1]`` (j = 0..95) on top. Every sequence bit is used exactly once.

Output of a cycle (combinational from the state): the 12 bytes ``u_i = s[8i+7 .. 8i]`` (i = 0..11,
uniform on 0..255), ``z = sum(u_i) - 1530`` as a signed 12-bit integer, meaning ``z / 256``:
mean 0, variance 65535/65536, range +-5.98, excess kurtosis -0.1 (the Irwin-Hall(12) tails).

Generator g starts from a 127-bit state drawn from SplitMix64(seed) (two draws, g-th pair, never 0).
Rewind (MeZO's seed trick): ``save`` copies every state into a shadow, ``restore`` loads it back
(priority over ``en``; both in one cycle swap, like the URNG array).
"""

from __future__ import annotations

import numpy as np

from pezo.golden.config import PerturbConfig
from pezo.golden.rng.urng import splitmix64

GRNG_LFSR_BITS = 127
LEAP = 96
UNIFORMS = 12
GRNG_BITS = 12
"""Width of a generator's signed output."""
GRNG_FRAC_BITS = 8
"""Output z means z / 2^8."""
OFFSET = UNIFORMS * 255 // 2  # 1530: the sum's mean 1530 (= 12 * 127.5)
_MASK_LEAP = (1 << LEAP) - 1
_MASK_STATE = (1 << GRNG_LFSR_BITS) - 1


def grng_seeds(config: PerturbConfig, count: int | None = None) -> list[int]:
    """Start states of generators 0..count-1 (default ``config.lanes``)."""
    state, seeds = config.seed, []
    for _ in range(config.lanes if count is None else count):
        value = 0
        while value == 0:
            state, hi = splitmix64(state)
            state, lo = splitmix64(state)
            value = ((hi << 64) | lo) & _MASK_STATE
        seeds.append(value)
    return seeds


def leap(state: int) -> int:
    """The state 96 LFSR steps later."""
    new = (state ^ (state >> 1)) & _MASK_LEAP
    return (state >> LEAP) | (new << (GRNG_LFSR_BITS - LEAP))


def lfsr_step(state: int) -> int:
    """One plain LFSR step (the definition ``leap`` must equal 96 times; used by the tests)."""
    return (state >> 1) | (((state ^ (state >> 1)) & 1) << (GRNG_LFSR_BITS - 1))


def output(state: int) -> int:
    """Signed CLT sample of a state: sum of its 12 low bytes minus 1530."""
    low = (state & _MASK_LEAP).to_bytes(UNIFORMS, "little")
    return sum(low) - OFFSET


def sum_pmf() -> np.ndarray:
    """Exact distribution of z + 1530 (sum of 12 independent uniform bytes): 3061 probabilities."""
    pmf = np.array([1.0])
    for _ in range(UNIFORMS):
        pmf = np.convolve(pmf, np.full(256, 1 / 256))
    return pmf


class GaussianArray:
    """``config.lanes`` CLT generators with a shared save/restore (see the module docstring)."""

    def __init__(self, config: PerturbConfig):
        if not isinstance(config, PerturbConfig):
            raise ValueError(f"config must be a PerturbConfig, got {type(config).__name__}")
        self.config = config
        self.states = grng_seeds(config)
        self.shadow = list(self.states)

    def lanes(self) -> np.ndarray:
        """Signed outputs (z, 12-bit) of every generator this cycle."""
        return np.array([output(s) for s in self.states], dtype=np.int64)

    def step(self, en: bool = True, save: bool = False, restore: bool = False) -> None:
        saved = list(self.states) if save else None
        if restore:
            self.states = list(self.shadow)
        elif en:
            self.states = [leap(s) for s in self.states]
        if saved is not None:
            self.shadow = saved

    def run(self, cycles: int) -> np.ndarray:
        """Outputs of ``cycles`` enabled cycles, shape (cycles, lanes)."""
        out = np.empty((cycles, self.config.lanes), dtype=np.int64)
        for t in range(cycles):
            out[t] = self.lanes()
            self.step()
        return out


def sample_statistics(samples: np.ndarray) -> dict:
    """Mean, variance, kurtosis and two KS tests of generator outputs (integers z; real z / 256).

    * ``ks_normal``: D against N(0, 1) (ties at each lattice point handled by taking the ECDF on both
      sides). The generator itself differs from N(0, 1) by ``model_distance`` = sup|F_gen - Phi|, so the
      pass threshold is ``model_distance + 1.63 / sqrt(N)`` (the alpha = 1 % critical value, shifted).
    * ``ks_exact``: D against the generator's exact discrete law (``sum_pmf``), threshold 1.63 / sqrt(N):
      this one tests the hardware's randomness, not the CLT approximation.
    Moment thresholds are 4.5 standard errors: mean +-4.5 sqrt(1/N), variance 1 +- 4.5 sqrt(2/N),
    kurtosis 2.9 (Irwin-Hall(12)) +- 4.5 sqrt(24/N).
    """
    from scipy.stats import norm

    z = np.asarray(samples, dtype=np.int64).ravel()
    n = z.size
    x = z / float(1 << GRNG_FRAC_BITS)
    mean, var = float(x.mean()), float(x.var())
    kurt = float(np.mean((x - mean) ** 4) / var**2)

    lattice = np.arange(-OFFSET, OFFSET + 1)
    counts = np.bincount(z + OFFSET, minlength=lattice.size)
    ecdf_hi = np.cumsum(counts) / n  # F_n(v)
    ecdf_lo = ecdf_hi - counts / n  # F_n(v-)
    gen_hi = np.cumsum(sum_pmf())
    gen_lo = gen_hi - sum_pmf()
    phi = norm.cdf(lattice / float(1 << GRNG_FRAC_BITS))
    ks_normal = float(max(np.abs(ecdf_hi - phi).max(), np.abs(ecdf_lo - phi).max()))
    model_distance = float(max(np.abs(gen_hi - phi).max(), np.abs(gen_lo - phi).max()))
    ks_exact = float(max(np.abs(ecdf_hi - gen_hi).max(), np.abs(ecdf_lo - gen_lo).max()))
    critical = 1.63 / np.sqrt(n)
    stats = {
        "samples": int(n),
        "mean": mean,
        "variance": var,
        "kurtosis": kurt,
        "min": float(x.min()),
        "max": float(x.max()),
        "ks_normal_D": ks_normal,
        "ks_normal_threshold": model_distance + critical,
        "model_distance": model_distance,
        "ks_exact_D": ks_exact,
        "ks_exact_threshold": critical,
        "mean_threshold": 4.5 / np.sqrt(n),
        "variance_threshold": 4.5 * np.sqrt(2 / n),
        "kurtosis_expected": 3 - 1.2 / UNIFORMS,
        "kurtosis_threshold": 4.5 * np.sqrt(24 / n),
    }
    stats["passed"] = bool(
        abs(mean) <= stats["mean_threshold"]
        and abs(var - 1) <= stats["variance_threshold"]
        and abs(kurt - stats["kurtosis_expected"]) <= stats["kurtosis_threshold"]
        and ks_normal <= stats["ks_normal_threshold"]
        and ks_exact <= critical
    )
    return stats
