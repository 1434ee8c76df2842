"""The Amaranth URNG array against golden on Amaranth's simulator (quick loop), and its interface."""

import math

import pytest
from amaranth.lib import wiring
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pezo.golden.config import PerturbConfig
from pezo.hw.rng.urng import URNGArray, to_twos_complement
from pezo.sim.amaranth_sim import check_against_golden


@pytest.mark.parametrize(
    "config",
    [
        PerturbConfig(n_rngs=32, rng_bits=14),
        PerturbConfig(n_rngs=31, rng_bits=8, rewind=True),
        PerturbConfig(n_rngs=1, rng_bits=3, rewind=True),
        PerturbConfig(n_rngs=5, rng_bits=32, seed=0xDEADBEEF, rewind=True),
        PerturbConfig(n_rngs=32, rng_bits=14, lfsr_leap=14),
        PerturbConfig(n_rngs=31, rng_bits=8, lfsr_leap=8, rewind=True),
        PerturbConfig(n_rngs=3, rng_bits=32, lfsr_leap=7, seed=0x12345, rewind=True),
    ],
    ids=str,
)
def test_matches_golden_on_amaranth_sim(config):
    check_against_golden("urng", config, cycles=1500)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_property_random_configs_match_golden(data):
    bits = data.draw(st.integers(3, 32), label="rng_bits")
    n = data.draw(st.integers(1, min(40, (1 << bits) - 1)), label="n_rngs")
    seed = data.draw(st.integers(1, (1 << bits) - 1), label="seed")
    rewind = data.draw(st.booleans(), label="rewind")
    period = (1 << bits) - 1
    leap = data.draw(st.sampled_from([k for k in range(1, bits + 1) if math.gcd(k, period) == 1]), label="lfsr_leap")
    stim = data.draw(st.integers(0, 2**32), label="stimulus seed")
    check_against_golden(
        "urng",
        PerturbConfig(n_rngs=n, rng_bits=bits, seed=seed, rewind=rewind, lfsr_leap=leap),
        cycles=200,
        stim_seed=stim,
    )


def test_signature_members_follow_config():
    bare = URNGArray(PerturbConfig(n_rngs=31, rng_bits=8))
    assert set(bare.signature.members) == {"en", "pointer", "lanes"}
    assert bare.signature.members["pointer"].shape.width == 5
    assert bare.signature.members["lanes"].shape.size == 31 * 8
    rewind = URNGArray(PerturbConfig(n_rngs=31, rng_bits=8, rewind=True))
    assert set(rewind.signature.members) == {"en", "pointer", "lanes", "save", "restore"}
    assert rewind.signature.members["save"].flow == wiring.In
    assert rewind.signature == URNGArray.Signature(PerturbConfig(n_rngs=31, rng_bits=8, rewind=True))
    assert rewind.signature != bare.signature


@pytest.mark.parametrize("bad", [None, {"n_rngs": 4}, PerturbConfig(strategy="pregen")])
def test_signature_validates_its_config(bad):
    with pytest.raises(ValueError, match="config|strategy"):
        URNGArray(bad)


def test_twos_complement_view_of_a_lane():
    from amaranth.hdl import Module, Signal
    from amaranth.sim import Simulator

    lane = Signal(8)
    out = Signal(8)
    m = Module()
    m.d.comb += out.eq(to_twos_complement(lane, 8))
    results = {}

    async def bench(ctx):
        for state in (1, 127, 128, 129, 255):
            ctx.set(lane, state)
            raw = ctx.get(out)
            results[state] = raw - 256 if raw & 0x80 else raw

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert results == {s: s - 128 for s in results}
