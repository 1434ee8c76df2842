"""The URNG array: n maximal-length LFSRs with PeZO's shift rotation, cycle by cycle.

Contract (``hw.rng.urng.URNGArray`` matches it bit for bit)
-----------------------------------------------------------
* All n LFSRs use the same polynomial (``pezo.golden.rng.lfsr``), so they run along one m-sequence at n
  phases (``rng_phases``): a jittered grid. With spacing ``S = floor((2^b-1)/n)``, slot j = 1..n-1 is
  ``j*S + U[0, S//2]``; RNG 0 sits at offset 0 (the master seed itself) and slots 1..n-1 are dealt
  to RNGs 1..n-1 by a Fisher-Yates shuffle; all draws come from SplitMix64(seed). Any two RNGs stay
  at least S/2 steps apart. Grid phases in index order would make a rotation almost a time shift
  (a lane of a 32 x 14 array then repeats its own value 511 cycles later in 31 of 32 cycles); exact
  multiples of S, even shuffled, leave 1/n of such repeats. ``tests/golden/test_urng.py`` checks both.
* Positions: at cycle t, position p holds RNG ``(p + t) mod n``; ``pointer = t mod n`` names the RNG in
  position 0. After each enabled cycle every RNG steps once (``lfsr_leap`` = k LFSR steps: a
  leap-forward LFSR; k = 1 is PeZO's array) and the RNG in position 0 moves to the end
  (position p loads the next state of position p + 1; position n-1 loads that of position 0).
  With ``rotate=False`` (the comparison baseline) position p always holds RNG p and the pointer stays 0.
* Lanes: lane p of a cycle is the value of position p, ``state - 2^(b-1)`` (``lanes``), or the raw
  offset-binary state (``raw_lanes``, what the hardware port carries).
* Rewind (the seed trick): ``step(save=1)`` copies the current visible LFSR states (all positions)
  into a shadow, but only when ``pointer == 0``; a save at any other cycle is ignored. Perturbation
  starts are aligned to the rotation (a controller runs at most n-1 extra enabled cycles, discarding
  their lanes, to get there), so the saved pointer is always 0 and the hardware stores n*b state bits
  and no pointer. ``step(restore=1)`` makes the shadow the next state with pointer 0, taking priority
  over ``en``. Save and restore in one cycle swap: the shadow takes the current state (if pointer is
  0) and the array the old shadow. The shadow starts equal to the reset state. The leap changes none
  of this: the shadow holds states, and the pointer counts clocks, whatever k.
* Leap-forward (k > 1): RNG i at cycle t sits at m-sequence index ``phase_i + k*t``. With k = 1 the RNG
  a lane sees next cycle is its neighbour's, shifted by one bit (lanes n - 1 apart correlate at about
  +0.48); with k = b its next value is b fresh bits. Phases (reset states) do not depend on k.
* Bit order (``lfsr_bit_order``): every lane shows its position's state through
  ``pezo.golden.rng.lfsr.permute_state`` (``"natural"``: the state itself). States, the shadow, the
  pointer and the stepping are unchanged; only what ``raw_lanes`` / ``lanes`` / ``run`` return is permuted.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from pezo.golden.config import PerturbConfig
from pezo.golden.rng.lfsr import (
    MAX_TABLE_BITS,
    lane_table,
    lfsr_jump,
    lfsr_leap_array,
    msequence_table,
    offset_to_signed,
    permute_state,
    shift_correlation,
)


@dataclass(frozen=True)
class URNGSnapshot:
    """The whole array state: LFSR states in position order, and the pointer."""

    states: tuple[int, ...]
    pointer: int


def splitmix64(state: int) -> tuple[int, int]:
    """One SplitMix64 step: returns (new_state, output), both 64-bit (fixed forever, unlike numpy streams)."""
    state = (state + 0x9E3779B97F4A7C15) & _MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return state, z ^ (z >> 31)


_MASK64 = (1 << 64) - 1


def rng_phases(config: PerturbConfig) -> tuple[int, ...]:
    """Phase (LFSR steps after the master seed) of RNG 0..n-1 at reset; see the module docstring."""
    n = config.n_rngs
    spacing = config.lfsr_period // n
    state = config.seed
    slots = []
    for j in range(1, n):
        state, draw = splitmix64(state)
        slots.append(j * spacing + draw % (spacing // 2 + 1))
    for i in range(len(slots) - 1, 0, -1):  # Fisher-Yates; modulo bias < 2^-50
        state, draw = splitmix64(state)
        j = draw % (i + 1)
        slots[i], slots[j] = slots[j], slots[i]
    return (0,) + tuple(slots)


def initial_states(config: PerturbConfig) -> tuple[int, ...]:
    """Reset states of RNG 0..n-1 (= positions 0..n-1 at cycle 0)."""
    return tuple(lfsr_jump(config.seed, config.rng_bits, phase) for phase in rng_phases(config))


class URNGArray:
    """Cycle-accurate golden model of the rotating LFSR array (see the module docstring)."""

    def __init__(self, config: PerturbConfig, rotate: bool = True):
        if not isinstance(config, PerturbConfig):
            raise ValueError(f"config must be a PerturbConfig, got {type(config).__name__}")
        self.config = config
        self.rotate = rotate
        if rotate:
            full = math.lcm(config.n_rngs, config.lfsr_period)
            count = distinct_combinations(config)
            if count < full:
                warnings.warn(
                    f"seed {config.seed}: the phases collapse the rotating {config.n_rngs} x "
                    f"{config.rng_bits} array to {count} distinct combinations, not "
                    f"lcm(n, 2^b-1) = {full}; choose another seed",
                    RuntimeWarning,
                    stacklevel=2,
                )
        self.reset_snapshot = URNGSnapshot(initial_states(config), 0)
        self.load(self.reset_snapshot)
        self._shadow = self.reset_snapshot

    # -- state ------------------------------------------------------------------------------
    @property
    def pointer(self) -> int:
        return self._pointer

    def snapshot(self) -> URNGSnapshot:
        return URNGSnapshot(tuple(int(s) for s in self._states), self._pointer)

    def load(self, snapshot: URNGSnapshot) -> None:
        self._states = np.array(snapshot.states, dtype=np.uint64)
        self._pointer = snapshot.pointer

    # -- outputs of the current cycle -------------------------------------------------------
    def _view(self, states: np.ndarray) -> np.ndarray:
        return permute_state(states, self.config.rng_bits, self.config.lfsr_bit_order)

    def raw_lanes(self) -> np.ndarray:
        """Offset-binary lane values (the LFSR states, in ``lfsr_bit_order``) in position order, uint64."""
        return self._view(self._states)

    def lanes(self) -> np.ndarray:
        """Signed lane values ``state - 2^(b-1)`` (state in ``lfsr_bit_order``) in position order, int64."""
        return offset_to_signed(self._view(self._states), self.config.rng_bits)

    # -- one clock edge ---------------------------------------------------------------------
    def _advance(self) -> None:
        nxt = lfsr_leap_array(self._states, self.config.rng_bits, self.config.lfsr_leap)
        if self.rotate:
            self._states = np.concatenate((nxt[1:], nxt[:1]))  # np.roll(nxt, -1), 6x faster on n <= 64
            self._pointer = (self._pointer + 1) % self.config.n_rngs
        else:
            self._states = nxt

    def step(self, en: bool = True, save: bool = False, restore: bool = False) -> None:
        """Apply one rising clock edge with the given inputs."""
        if (save or restore) and not self.config.rewind:
            raise ValueError("save/restore need a config with rewind=True")
        saved = self.snapshot() if save and self._pointer == 0 else None
        if restore:
            self.load(self._shadow)
        elif en:
            self._advance()
        if saved is not None:
            self._shadow = saved

    def align(self) -> int:
        """Advance (en=1) until ``pointer == 0``, the only cycle a save is honoured; return the steps."""
        steps = (-self._pointer) % self.config.n_rngs
        for _ in range(steps):
            self._advance()
        return steps

    def run(self, cycles: int, raw: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Outputs of ``cycles`` consecutive enabled cycles, advancing the array after each (``cycles`` edges of
        ``step(en=True)``, what they show before each edge).

        Returns ``(lanes[cycles, n], pointers[cycles])``; lanes signed unless ``raw``. Up to ``MAX_TABLE_BITS`` the
        whole block is one lookup in the m-sequence (``_run_table``), bit for bit the stepped ``_run_cycles``."""
        run = self._run_table if self.config.rng_bits <= MAX_TABLE_BITS else self._run_cycles
        out, pointers = run(cycles)
        return (out if raw else offset_to_signed(out, self.config.rng_bits)), pointers

    def _run_cycles(self, cycles: int) -> tuple[np.ndarray, np.ndarray]:
        """``run``'s raw lanes and pointers by stepping the array cycle by cycle (the reference)."""
        n = self.config.n_rngs
        out = np.empty((cycles, n), dtype=np.uint64)
        pointers = np.empty(cycles, dtype=np.int64)
        for t in range(cycles):
            out[t] = self._states
            pointers[t] = self._pointer
            self._advance()
        return self._view(out), pointers

    def _run_table(self, cycles: int) -> tuple[np.ndarray, np.ndarray]:
        """``run``'s raw lanes and pointers by lookup: position p at cycle t holds the RNG of position
        (p + t) mod n at cycle 0 (rotating; p without rotation), ``k * t`` m-sequence steps on."""
        cfg = self.config
        n, bits = cfg.n_rngs, cfg.rng_bits
        states, index = msequence_table(bits)
        period = len(states)
        t = np.arange(cycles + 1, dtype=np.int64)
        start = index[self._states.astype(np.int64)]
        rng = (np.arange(n)[None, :] + t[:, None]) % n if self.rotate else np.arange(n)[None, :]
        at = (start[rng] + (cfg.lfsr_leap * t % period)[:, None]) % period
        pointers = (self._pointer + t[:-1]) % n if self.rotate else np.zeros(cycles, dtype=np.int64)
        self._states = states[at[-1]]
        self._pointer = (self._pointer + cycles) % n if self.rotate else 0
        return lane_table(bits, cfg.lfsr_bit_order)[at[:-1]], pointers


def distinct_combinations(config: PerturbConfig) -> int:
    """Distinct per-cycle lane tuples over a full period of the rotating array, exactly.

    The tuple at cycle t depends on (t mod n, t mod 2^b-1), so at most lcm(n, 2^b-1) tuples exist;
    that is n(2^b-1), PeZO's claim, when gcd(n, 2^b-1) = 1. Tuples at t and t+D coincide iff for
    d = D mod n the phase differences phi_k - phi_(k+d) are one constant c (mod 2^b-1) and L*D = c
    (mod 2^b-1), L the leap (coprime to 2^b-1, so D = c/L); each such d removes one residue class. Tiny
    arrays with n | 2^b-1 (n = 3, b = 4) collapse this way; ``count_distinct_combinations`` brute-forces the
    same number.
    """
    n, period = config.n_rngs, config.lfsr_period
    phases = rng_phases(config)
    g = math.gcd(n, period)
    inverse_leap = pow(config.lfsr_leap, -1, period) if period > 1 else 0
    repeats = 0
    for d in range(n):
        diffs = {(phases[k] - phases[(k + d) % n]) % period for k in range(n)}
        if len(diffs) == 1 and (next(iter(diffs)) * inverse_leap - d) % g == 0:
            repeats += 1
    return math.lcm(n, period) // repeats


def count_distinct_combinations(config: PerturbConfig, rotate: bool = True) -> int:
    """Brute force: distinct per-cycle lane tuples over one full period of the (rotating) array."""
    cycles = config.n_rngs * config.lfsr_period if rotate else config.lfsr_period
    lanes, _ = URNGArray(config, rotate=rotate).run(cycles, raw=True)
    return len(np.unique(lanes, axis=0))


# -- near repeats of the perturbation sequence ---------------------------------------------------------------

NEAR_REPEAT_CORRELATION = 0.1
"""A perturbation that is another one shifted by delta LFSR steps correlates with it element by element at
``shift_correlation(b, bit_order, delta)``; shifts at or above this count as a near repeat (natural order:
|delta| <= 3, 2^-3 = 0.125)."""
NEAR_REPEAT_MIN_PERIOD = 100
"""The family sampler warns on construction when the near-repeat period is below this many perturbations
(a run of any useful length then draws shifted copies); runs that know their length (``pezo quality``,
``pezo train``) warn when the period is below the perturbations they draw."""


class NearRepeatWarning(UserWarning):
    """Perturbation t + D of an otf sequence is perturbation t shifted by a few LFSR steps, D small."""


def perturbation_advance(config: PerturbConfig) -> int:
    """LFSR steps (mod 2^b - 1) from one perturbation's start to the next in the otf stream: perturbations
    start at aligned cycles, ``n * ceil(d / n^2)`` clocks apart (``pezo.golden.zo.families``), k steps each."""
    n, d = config.n_rngs, config.perturb_dim
    return config.lfsr_leap * n * -(-d // (n * n)) % config.lfsr_period


def near_repeat(config: PerturbConfig, correlation: float = NEAR_REPEAT_CORRELATION) -> dict:
    """The near-repeat period of the otf perturbation sequence of ``config`` (d = ``perturb_dim``).

    Perturbation t + D starts ``D * A`` LFSR steps after perturbation t (A = ``perturbation_advance``), so
    when ``D * A = delta (mod 2^b - 1)`` every element of t + D is the same element of t, delta steps on:
    a shifted copy, correlated at ``rho = shift_correlation(b, lfsr_bit_order, delta)``. Powers of two are
    the trap: 2^b = 1 (mod 2^b - 1), so A = 2^a gives D = 2^(b-a), delta = 1 (k = 8 at 32 x 14, d <= 1024:
    A = 256, D = 64; k = 1 at 32 x 14: A = 32, D = 512). Returns the smallest D >= 1 over the shifts with
    rho >= ``correlation`` (delta = 0, the exact period, always counts): ``period`` D, ``shift`` delta,
    ``correlation`` rho, ``advance`` A, ``exact_period`` (2^b - 1) / gcd(A, 2^b - 1).
    """
    period, bits = config.lfsr_period, config.rng_bits
    advance = perturbation_advance(config)
    g = math.gcd(advance, period)  # gcd(0, P) = P: every perturbation is the same (D = 1)
    best = None
    for delta in range(-(bits - 1), bits):
        rho = shift_correlation(bits, config.lfsr_bit_order, delta)
        if rho < correlation or delta % g:
            continue
        d_min = (delta // g) * pow(advance // g, -1, period // g) % (period // g) if period // g > 1 else 0
        d_min = d_min or period // g
        if best is None or (d_min, abs(delta)) < (best[0], abs(best[1])):
            best = (d_min, delta, rho)
    return {
        "period": best[0],
        "shift": best[1],
        "correlation": best[2],
        "advance": advance,
        "exact_period": period // g,
    }


def near_repeat_message(config: PerturbConfig, info: dict, names: dict | None = None) -> str:
    """One line naming the period and the fields that set it (``names`` renames fields, e.g. the family
    sampler's options ``leap`` and ``bit_order``)."""
    names = names or {}
    fields = ", ".join(
        f"{names.get(f, f)}={getattr(config, f)}"
        for f in ("n_rngs", "rng_bits", "lfsr_leap", "lfsr_bit_order", "perturb_dim")
    )
    return (
        f"otf near-repeat period {info['period']}: with {fields} perturbation t + {info['period']} is "
        f"perturbation t shifted by {info['shift']} LFSR steps (element correlation "
        f"{info['correlation']:.2f}; advance {info['advance']} steps per perturbation)"
    )


def warn_near_repeat(config: PerturbConfig, perturbations: int, names: dict | None = None, stacklevel: int = 2) -> dict:
    """Warn (``NearRepeatWarning``) when the near-repeat period is below ``perturbations`` (the number of
    perturbations a run draws); return ``near_repeat(config)``."""
    info = near_repeat(config)
    if info["period"] < perturbations:
        warnings.warn(
            near_repeat_message(config, info, names) + f", below the {perturbations} perturbations this run draws",
            NearRepeatWarning,
            stacklevel=stacklevel + 1,
        )
    return info
