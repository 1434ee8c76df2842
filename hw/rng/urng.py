"""The rotating LFSR URNG array as an Amaranth component (twin of ``golden.rng.urng``).

Rotation costs wiring only: position p's register loads the *next state of position p+1*, so every
position's input is its neighbour's bits shifted by one plus one feedback bit (one LUT per RNG).
With ``lfsr_leap`` = k > 1 (leap-forward) the next state is k steps on: k of the b bits are feedback
XORs (the rest still wiring), so the array costs about k LUTs per RNG, not one.
With ``lfsr_bit_order`` = ``"spread"`` each lane shows its state's bits in the order
``golden.rng.lfsr.spread_order(b)`` (``read_state``): wiring, no LUTs.
Position 0 always holds the pointed-to RNG, so a consumer (the scale LUT) reads lane 0 and needs
no pointer mux.

Lanes carry the raw LFSR state, i.e. the signed value ``state - 2^(b-1)`` in offset-binary code.
Converting to two's complement is one inverted MSB (``to_twos_complement``); a consumer folds that
inversion into its first LUT level for free, whereas doing it here would cost n LUTs.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal, unsigned
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from pezo.golden.config import PerturbConfig
from pezo.golden.rng.lfsr import bit_order, feedback_bits, leap_feedback
from pezo.golden.rng.urng import initial_states
from pezo.hw.component import ConfigComponent, ConfigSignature


def lane_layout(config: PerturbConfig) -> data.ArrayLayout:
    """n lanes of b-bit offset-binary LFSR states, lane 0 in the least significant bits."""
    return data.ArrayLayout(unsigned(config.rng_bits), config.n_rngs)


def to_twos_complement(lane, bits: int):
    """Signed value ``state - 2^(b-1)`` of an offset-binary lane: the state with its MSB inverted."""
    return Cat(lane[: bits - 1], ~lane[bits - 1]).as_signed()


def lfsr_next(state, bits: int, leap: int = 1):
    """State ``leap`` steps after ``state`` of a Fibonacci LFSR (contract: ``golden.rng.lfsr``).

    leap = 1: a right shift and one feedback XOR. leap = k > 1: the 1-bit update unrolled k times,
    written flat -- bit i is one XOR of the old bits ``golden.rng.lfsr.leap_feedback(b, k)[i]`` (what
    synthesis reduces the unrolled chain to; the nested chain itself would grow exponentially in the
    Amaranth simulator's expression compiler)."""
    if leap == 1:
        feedback = state[0]
        for k in feedback_bits(bits)[1:]:
            feedback = feedback ^ state[k]
        return Cat(state[1:bits], feedback)
    out = []
    for sources in leap_feedback(bits, leap):
        bit = state[sources[0]]
        for j in sources[1:]:
            bit = bit ^ state[j]
        out.append(bit)
    return Cat(*out)


def read_state(state, bits: int, order: str = "natural"):
    """The lane value of ``state`` in ``order`` (contract: ``golden.rng.lfsr.permute_state``): output bit
    ``bit_order(bits, order)[j]`` is state bit j. Pure wiring."""
    sigs = bit_order(bits, order)
    source = {sig: j for j, sig in enumerate(sigs)}
    return Cat(*[state[source[i]] for i in range(bits)])


class URNGArray(ConfigComponent):
    """n b-bit LFSRs with shift rotation.

    Ports: ``en`` (advance one step), ``save`` / ``restore`` (only with ``config.rewind``; ``save`` is
    honoured only when ``pointer == 0``), ``pointer``
    (index of the RNG in position 0, ``ceil(log2 n)`` bits), ``lanes`` (``lane_layout(config)``).
    Reset (the sync domain's) loads the seeded phases. All outputs come straight from registers.
    Cycle semantics are exactly ``golden.rng.urng.URNGArray.step``.
    """

    class Signature(ConfigSignature):
        def members_for(self, config):
            if config.strategy != "otf":
                raise ValueError(f"strategy must be 'otf' for a URNG array, got {config.strategy!r}")
            members = {
                "en": In(1),
                "pointer": Out(unsigned(config.pointer_bits)),
                "lanes": Out(lane_layout(config)),
            }
            if config.rewind:
                members.update(save=In(1), restore=In(1))
            return members

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        n, bits = cfg.n_rngs, cfg.rng_bits
        reset = initial_states(cfg)
        position = [Signal(bits, name=f"position{p}", init=reset[p]) for p in range(n)]
        pointer = Signal(cfg.pointer_bits, init=0)

        next_position = [lfsr_next(position[(p + 1) % n], bits, cfg.lfsr_leap) for p in range(n)]

        def advance():
            m.d.sync += [reg.eq(nxt) for reg, nxt in zip(position, next_position)]
            if n == 1 << cfg.pointer_bits:
                m.d.sync += pointer.eq(pointer + 1)  # wraps by itself
            elif n > 1:
                with m.If(pointer == n - 1):  # a synchronous reset of the counter: no LUTs per bit
                    m.d.sync += pointer.eq(0)
                with m.Else():
                    m.d.sync += pointer.eq(pointer + 1)

        if cfg.rewind:
            # The shadow holds states only: saves are honoured at pointer == 0 (perturbation starts are
            # aligned to the rotation), so the saved pointer is always 0 and costs no flip-flops.
            shadow = [Signal(bits, name=f"shadow{p}", init=reset[p]) for p in range(n)]
            with m.If(self.save & (pointer == 0)):
                m.d.sync += [s.eq(reg) for s, reg in zip(shadow, position)]
            with m.If(self.restore):
                m.d.sync += [reg.eq(s) for reg, s in zip(position, shadow)]
                m.d.sync += pointer.eq(0)
            with m.Elif(self.en):
                advance()
        else:
            with m.If(self.en):
                advance()

        lanes = [read_state(reg, bits, cfg.lfsr_bit_order) for reg in position]
        m.d.comb += [self.lanes.eq(Cat(*lanes)), self.pointer.eq(pointer)]
        return m
