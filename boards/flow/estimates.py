"""Hand estimates and budgets of the designs ``report`` synthesises: what Yosys's counts are checked against.

Budgets (from the PeZO hardware target, Table 6: 32 URNGs = 32 LUT + 449 / 512 FF on ZCU102):
bare on-the-fly array  FF <= n*b + ceil(log2 n) + 2,  LUT <= n + ceil(log2 n);
rewind overhead        <= n*b LUT + n*b FF over the bare array.
"""

from __future__ import annotations

import math

from pezo.golden.config import PerturbConfig
from pezo.golden.rng.lfsr import leap_feedback
from pezo.golden.rng.pool import bank_depth

# RAMB18E2 aspect ratios (depth, width); a RAMB36E2 counts as two
RAMB18_SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))


def grng_lut_estimate() -> int:
    """LUTs of one CLT generator by hand: 96 XORs + one LUT per adder output bit (6 x 8 + 3 x 9 + 10
    + 11 for the tree, 12 for subtracting 1530)."""
    return 96 + 6 * 8 + 3 * 9 + 10 + 11 + 12


def pool_bram18_minimum(config: PerturbConfig) -> int:
    """Fewest RAMB18 (a RAMB36 = 2) that hold the banked pool: per bank, depth ceil((N+lanes-1)/banks)
    x pool_bits in the best RAMB18 aspect ratio, one RAMB18 per two read ports."""
    depth = bank_depth(config)
    per_bank = min(-(-depth // d) * -(-config.pool_bits // w) for d, w in RAMB18_SHAPES)
    ports = config.lanes // config.banks
    return config.banks * per_bank * -(-ports // 2)


def lfsr_luts(bits: int, leap: int = 1) -> int:
    """LUT6s of one LFSR's next state: per state bit an XOR of ``leap_feedback`` inputs, 0 for a wire, else
    a tree of ceil((f - 1) / 5) LUT6 (1 for PeZO's array: one feedback LUT; 22 for b = k = 14)."""
    return sum(-(-(len(row) - 1) // 5) for row in leap_feedback(bits, leap))


def budget(config: PerturbConfig) -> dict:
    """Resource budget of the bare array (n LUTs at leap 1, the physical limit; n * ``lfsr_luts`` with a
    leap-forward LFSR), and of the rewind overhead."""
    n, b = config.n_rngs, config.rng_bits
    log_n = math.ceil(math.log2(n)) if n > 1 else 0
    return {
        "bare": {"LUT": n * lfsr_luts(b, config.lfsr_leap) + log_n, "FF": n * b + log_n + 2},
        "rewind_overhead": {"LUT": n * b, "FF": n * b},
    }


def engine_bram36_estimate(config) -> float:
    """Fewest BRAM36 tiles by hand: weight memory (words of C int8) and activation memory (R x C int8 per
    word), each ceil(width / 72) tiles of a 512 x 72 port while depth <= 512 (else 1K x 36 ...), plus the
    pregen pool (``pool_bram18_minimum`` / 2); the logit memory (2 * tiles * outputs words) is LUT-RAM."""

    def tiles(depth: int, width: int) -> int:
        return min(-(-depth // d) * -(-width // w) for d, w in ((512, 72), (1024, 36), (2048, 18), (4096, 9)))

    total = tiles(config.weight_words, 8 * config.array.cols) + tiles(
        config.array.tiles * config.words_per_output, 8 * config.array.cols * config.array.rows
    )
    if config.stream.strategy == "pregen":
        total += pool_bram18_minimum(config.perturb) / 2
    return float(total)
