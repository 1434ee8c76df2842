"""Maximal-length Fibonacci LFSRs for widths 3..32, and the state -> signed value map.

Form (the contract shared with ``hw.rng.urng``)
-----------------------------------------------
A b-bit state ``s`` holds bits s[b-1] .. s[0]. With the primitive polynomial
``x^b + sum(x^k for k in LFSR_TAPS[b]) + 1`` the next state is::

    fb    = s[0] ^ XOR(s[k] for k in LFSR_TAPS[b])
    s'    = (s >> 1) | (fb << (b - 1))

i.e. the register shifts right and the feedback bit enters at the MSB. Every b has a trinomial
(one middle tap -> a 2-input XOR) or a pentanomial (three middle taps -> a 4-input XOR), so the
feedback is always a single LUT on an FPGA, even with a 2-input restore mux folded in.
The state is never 0; over 2^b - 1 steps it visits every nonzero b-bit value once.

Leap-forward (``PerturbConfig.lfsr_leap`` = k): a register that takes k of these steps per clock. Each
bit of the new state is an XOR of old state bits (the k-th power of the one-step GF(2) map); the period
in clocks stays 2^b - 1 iff gcd(k, 2^b - 1) = 1, and with k = b consecutive states share no bits.

Output bit order (``PerturbConfig.lfsr_bit_order``): a lane may show the state's bits in a fixed scrambled
order (``permute_state``), pure wiring. ``"natural"`` (PeZO, the default) reads the state as is, so a value
one step on is the old value halved plus a new MSB (lag correlation about 1/2 per shift). ``"spread"`` reads
state bit j into output significance ``spread_order(b)[j]``, a permutation chosen so that bits adjacent in
the shift register land far apart in significance: for a shift by m the values correlate at about
``rho_m = sum_j 2^(A[j] + A[j-m]) / sum_j 4^A[j]`` (A = the order; bits are fair and independent), and the
order keeps rho_m small for small m. The pair of the two top significances gives rho >= 3/8 at some shift
whatever the order; ``spread_order`` puts it at the largest shift, m = b - 1.

Signed value: ``value = s - 2^(b-1)``, symmetric in [-(2^(b-1) - 1), 2^(b-1) - 1]. In bits this is the
"offset binary" code: the two's-complement value is ``s`` with its MSB inverted.
"""

from __future__ import annotations

import functools

import numpy as np

from pezo.golden.config import BIT_ORDERS

# Middle exponents of a primitive polynomial per width (smallest trinomial if one exists, else the
# lexicographically smallest pentanomial). Primitivity is re-checked algebraically by the tests.
LFSR_TAPS: dict[int, tuple[int, ...]] = {
    3: (1,),
    4: (1,),
    5: (2,),
    6: (1,),
    7: (1,),
    8: (1, 2, 7),
    9: (4,),
    10: (3,),
    11: (2,),
    12: (1, 2, 8),
    13: (1, 2, 5),
    14: (1, 2, 12),
    15: (1,),
    16: (1, 3, 12),
    17: (3,),
    18: (7,),
    19: (1, 2, 5),
    20: (3,),
    21: (2,),
    22: (1,),
    23: (5,),
    24: (1, 2, 7),
    25: (3,),
    26: (1, 2, 6),
    27: (1, 2, 5),
    28: (3,),
    29: (2,),
    30: (1, 2, 23),
    31: (3,),
    32: (1, 2, 22),
}


@functools.cache
def spread_order(bits: int) -> tuple[int, ...]:
    """The ``"spread"`` order: ``A[j]`` = output significance of state bit j, a permutation of 0..b-1.

    Deterministic greedy (closed procedure, no randomness): significances b-1, b-2, ..., 0 are placed in
    turn, each at the free state position that minimises, over the bits placed so far, first the largest
    and then the sum of squares of the weighted lag sums ``w_m * sum 2^(A[j] + A[j-m])`` (m = 1..b-1,
    ``w_m = (b - m) / b``: a shift by m leaves b - m bits shared, and small m are the lags that reach
    elements n - 1, 2(n - 1), ... apart in a perturbation), ties to the lowest position. The top two
    significances land on bits 0 and b-1 (the unavoidable 3/8 at the largest shift).
    """
    position: dict[int, int] = {}  # significance -> state bit
    free = list(range(bits))
    for sig in range(bits - 1, -1, -1):
        best = None
        for j in free:
            trial = list(position.items()) + [(sig, j)]
            lag = [0] * bits
            for a in range(len(trial)):
                for c in range(a + 1, len(trial)):
                    lag[abs(trial[a][1] - trial[c][1])] += 1 << (trial[a][0] + trial[c][0])
            weighted = [lag[m] * (bits - m) for m in range(1, bits)]  # exact integers (/ b dropped)
            key = (max(weighted), sum(x * x for x in weighted), j)
            if best is None or key < best:
                best = key
        position[sig] = best[2]
        free.remove(best[2])
    order = [0] * bits
    for sig, j in position.items():
        order[j] = sig
    return tuple(order)


def bit_order(bits: int, order: str) -> tuple[int, ...]:
    """Output significance of each state bit for a ``BIT_ORDERS`` name (``"natural"``: 0..b-1)."""
    if order == "natural":
        return tuple(range(bits))
    if order == "spread":
        return spread_order(bits)
    raise ValueError(f"lfsr_bit_order must be one of {', '.join(BIT_ORDERS)}, got {order!r}")


def shift_correlation(bits: int, order: str, shift: int) -> float:
    """Correlation of a lane value with the value of the same LFSR ``shift`` steps later (or earlier), bits
    taken as fair and independent: ``sum_j 2^(A[j] + A[j-m]) / sum_j 4^A[j]`` with m = |shift|, A =
    ``bit_order(bits, order)``; 1 at shift 0, 0 from |shift| >= b (no shared bit)."""
    sigs = bit_order(bits, order)
    m = abs(shift)
    if m >= bits:
        return 0.0
    return sum(2.0 ** (sigs[j] + sigs[j - m]) for j in range(m, bits)) / sum(4.0**a for a in sigs)


def permute_state(states, bits: int, order: str):
    """The lane value of LFSR state(s) under ``order``: state bit j moves to ``bit_order(bits, order)[j]``.
    Works on ints and uint64 arrays; a bijection of the nonzero b-bit states (0 stays 0)."""
    sigs = bit_order(bits, order)
    if order == "natural":
        return states.copy() if isinstance(states, np.ndarray) else states
    if isinstance(states, np.ndarray):
        if bits <= MAX_TABLE_BITS:
            return permutation_table(bits, order)[states.astype(np.int64) & ((1 << bits) - 1)]
        return permute_bits(states, sigs)
    return sum(((states >> j) & 1) << sig for j, sig in enumerate(sigs))


def permute_bits(states: np.ndarray, sigs: tuple[int, ...]) -> np.ndarray:
    """Bit j of every state moved to significance ``sigs[j]`` (uint64 array), bit plane by bit plane."""
    states = states.astype(np.uint64)
    out = np.zeros_like(states)
    for j, sig in enumerate(sigs):
        out |= ((states >> np.uint64(j)) & np.uint64(1)) << np.uint64(sig)
    return out


@functools.cache
def permutation_table(bits: int, order: str) -> np.ndarray:
    """``permute_state`` of every b-bit value 0..2^b - 1 (uint64, read-only): the lookup ``permute_state`` uses up
    to ``MAX_TABLE_BITS``."""
    table = permute_bits(np.arange(1 << bits, dtype=np.uint64), bit_order(bits, order))
    table.flags.writeable = False
    return table


def feedback_bits(bits: int) -> tuple[int, ...]:
    """State bit positions XORed into the feedback: 0 and the middle taps."""
    return (0,) + LFSR_TAPS[bits]


def feedback_mask(bits: int) -> int:
    mask = 0
    for k in feedback_bits(bits):
        mask |= 1 << k
    return mask


_NO_STATE = object()


def check_lfsr(bits, state=_NO_STATE) -> None:
    """ValueError naming the parameter: ``bits`` outside the widths ``LFSR_TAPS`` has, or a ``state`` that is not
    an integer in 1..2^bits - 1 (0 is the LFSR's lock-up state; a wider value is not a state of this register)."""
    if isinstance(bits, bool) or not isinstance(bits, int) or bits not in LFSR_TAPS:
        raise ValueError(f"bits must be an LFSR width in {min(LFSR_TAPS)}..{max(LFSR_TAPS)}, got {bits!r}")
    if state is not _NO_STATE and (
        isinstance(state, bool) or not isinstance(state, (int, np.integer)) or not 1 <= state < 1 << bits
    ):
        raise ValueError(f"state must be an integer in 1..{(1 << bits) - 1} for a {bits}-bit LFSR, got {state!r}")


def lfsr_next(state: int, bits: int) -> int:
    """One step of the Fibonacci LFSR (see module docstring); ValueError for a width or state it has not
    (``check_lfsr``)."""
    check_lfsr(bits, state)
    fb = (state & feedback_mask(bits)).bit_count() & 1
    return (state >> 1) | (fb << (bits - 1))


def lfsr_next_array(states: np.ndarray, bits: int) -> np.ndarray:
    """``lfsr_next`` applied elementwise to a uint64 array."""
    fb = np.bitwise_count(states & np.uint64(feedback_mask(bits))) & np.uint8(1)
    return (states >> np.uint64(1)) | (fb.astype(np.uint64) << np.uint64(bits - 1))


def lfsr_leap_array(states: np.ndarray, bits: int, leap: int = 1) -> np.ndarray:
    """``leap`` LFSR steps at once, elementwise (the leap-forward LFSR's next state: ``lfsr_next`` k times)."""
    for _ in range(leap):
        states = lfsr_next_array(states, bits)
    return states


def leap_feedback(bits: int, leap: int) -> tuple[tuple[int, ...], ...]:
    """Bit i of the state ``leap`` steps on is the XOR of old bits ``leap_feedback(bits, leap)[i]`` (the
    k-th power of the one-step GF(2) map, row by row): the flat form of the 1-bit update unrolled k times.
    For leap = 1 bit i < b-1 is old bit i+1 and bit b-1 the feedback ``feedback_bits(bits)``."""
    images = [lfsr_jump(1 << j, bits, leap) for j in range(bits)]  # image of old bit j
    return tuple(tuple(j for j in range(bits) if images[j] >> i & 1) for i in range(bits))


def _apply(matrix: list[int], state: int) -> int:
    """Apply a GF(2) linear map given as the images of the basis vectors."""
    out = 0
    i = 0
    while state:
        if state & 1:
            out ^= matrix[i]
        state >>= 1
        i += 1
    return out


def lfsr_jump(state: int, bits: int, steps: int) -> int:
    """The state ``steps`` LFSR steps after ``state``, in O(b^2 log steps) (GF(2) matrix power)."""
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    step = [lfsr_next(1 << i, bits) for i in range(bits)]  # the one-step map, column by column
    while steps:
        if steps & 1:
            state = _apply(step, state)
        step = [_apply(step, column) for column in step]  # square the map
        steps >>= 1
    return state


MAX_TABLE_BITS = 16
"""Widest LFSR whose whole m-sequence ``msequence_table`` holds (2^16 - 1 states: the widest otf stream, whose
scale LUT has 2^b entries anyway); wider registers are stepped."""


@functools.cache
def msequence_table(bits: int) -> tuple[np.ndarray, np.ndarray]:
    """The m-sequence of the ``bits``-bit LFSR from state 1, for jumping by lookup: ``(states, index)`` with
    ``states[i]`` the state i steps after 1 (uint64, length 2^b - 1) and ``index[s]`` the i of state s (int64,
    length 2^b; ``index[0] = -1``: 0 is not on the sequence). The state ``m`` steps after ``s`` is
    ``states[(index[s] + m) % (2^b - 1)]``. Read-only arrays; ``bits`` up to ``MAX_TABLE_BITS``."""
    if not 3 <= bits <= MAX_TABLE_BITS:
        raise ValueError(f"bits must be in 3..{MAX_TABLE_BITS} for an m-sequence table, got {bits}")
    period = (1 << bits) - 1
    mask, top = feedback_mask(bits), bits - 1
    seq = [0] * period
    state = 1
    for i in range(period):
        seq[i] = state
        state = (state >> 1) | (((state & mask).bit_count() & 1) << top)
    states = np.array(seq, dtype=np.uint64)
    index = np.full(1 << bits, -1, dtype=np.int64)
    index[states.astype(np.int64)] = np.arange(period, dtype=np.int64)
    states.flags.writeable = False
    index.flags.writeable = False
    return states, index


@functools.cache
def lane_table(bits: int, order: str) -> np.ndarray:
    """``permute_state`` of every ``msequence_table`` state: what a lane shows at each m-sequence index (uint64,
    read-only)."""
    lanes = permutation_table(bits, order)[msequence_table(bits)[0].astype(np.int64)]
    lanes.flags.writeable = False
    return lanes


def lfsr_period(bits: int, seed: int = 1) -> int:
    """Count steps until the LFSR returns to ``seed`` (by stepping: an independent check of the taps)."""
    check_lfsr(bits, seed)
    mask = feedback_mask(bits)
    top = bits - 1
    state = seed
    for count in range(1, (1 << bits) + 1):
        state = (state >> 1) | (((state & mask).bit_count() & 1) << top)
        if state == seed:
            return count
    raise AssertionError(f"{bits}-bit LFSR never returned to its seed")


def offset_to_signed(states, bits: int):
    """Map LFSR states (offset binary) to signed values ``s - 2^(b-1)``; works on ints and arrays."""
    if isinstance(states, np.ndarray):
        return states.astype(np.int64) - (1 << (bits - 1))
    return states - (1 << (bits - 1))
