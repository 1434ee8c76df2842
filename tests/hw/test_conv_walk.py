"""Issue 33: the conv address walk (``hw.engine.conv_walk.ConvWalk``) in the Amaranth simulator against the golden
walk (``golden.engine.conv.patch_word_addresses``): every field of every issue cycle, with stalls."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from pezo.golden.engine.conv import WALK_FIELDS, Conv2D, patch_word_addresses
from pezo.hw.engine.conv_walk import ConvWalk, WalkShape

SHAPES = [
    WalkShape(Conv2D(1, 8, 8, 8, kernel=3, padding=1, pool="max", shift=9, relu=True), 8, from_batch=True),
    WalkShape(Conv2D(8, 4, 4, 16, kernel=3, padding=1, pool="max", shift=8, relu=True), 8),  # digits-cnn
    WalkShape(Conv2D(16, 6, 6, 3, kernel=3, stride=2, padding=1), 8),
    WalkShape(Conv2D(8, 5, 5, 2, kernel=5, padding=2), 4),
    WalkShape(Conv2D(6, 6, 6, 3, kernel=3, padding=1, pool="avg"), 2),
    WalkShape(Conv2D(3, 6, 6, 5, kernel=3, stride=2, padding=1, pool="none"), 8, from_batch=True),
]


def simulate(shape: WalkShape, stall_seed: int | None = None) -> dict[str, list[int]]:
    """Every field on every taken word (``valid`` and ``ready``) of one walk; ``ready`` drops at random with a
    ``stall_seed``."""
    dut = ConvWalk(shape)
    total = len(patch_word_addresses(shape.layer, shape.cols, shape.from_batch)["addr"])
    rng = np.random.default_rng(stall_seed) if stall_seed is not None else None
    seen: dict[str, list[int]] = {name: [] for name in WALK_FIELDS}
    finals = []

    async def bench(ctx):
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        for _ in range(3 * total + 10):
            ready = 1 if rng is None else int(rng.random() < 0.7)
            ctx.set(dut.ready, ready)
            if ctx.get(dut.valid) and ready:
                for name in WALK_FIELDS:
                    seen[name].append(ctx.get(getattr(dut, name)))
                finals.append(ctx.get(dut.final))
            elif not ctx.get(dut.valid) and seen["addr"]:
                break
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert finals == [0] * (total - 1) + [1]
    return seen


@pytest.mark.parametrize(
    "shape", SHAPES, ids=lambda s: f"{s.layer.describe()} C{s.cols}{' batch' if s.from_batch else ''}"
)
def test_the_walk_matches_golden_cycle_by_cycle(shape):
    golden = patch_word_addresses(shape.layer, shape.cols, shape.from_batch)
    seen = simulate(shape)
    for name in WALK_FIELDS:
        assert seen[name] == list(golden[name]), name


def test_the_walk_holds_while_not_ready():
    shape = SHAPES[2]
    golden = patch_word_addresses(shape.layer, shape.cols, shape.from_batch)
    seen = simulate(shape, stall_seed=5)
    assert all(seen[name] == list(golden[name]) for name in WALK_FIELDS)


def test_a_walk_the_layout_cannot_address_is_refused():
    with pytest.raises(ValueError, match=r"conv 3x3/1 pad 1 4x4x4 -> 8: the walk reads one activation word of 8"):
        WalkShape(Conv2D(4, 4, 4, 8, padding=1), 8)


def test_the_walk_converts_to_verilog():
    from amaranth.back import verilog

    text = verilog.convert(ConvWalk(SHAPES[1]), name="conv_walk", emit_src=False)
    assert "module conv_walk" in text
