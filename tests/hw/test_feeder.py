"""The ULX3S trainer's feeder (``hw.feeder.DataFeeder``) in the Amaranth simulator against a Python model of its bus
(``golden.regs.uart_link``'s regions): it copies each example's ``BoardMap.x_bytes`` from the data memory -- the inputs
of a dense net, the im2col'd patches the host loaded for a conv layer 0 -- into the x window, the labels, then
PUSH, in ``feed_indices`` order; so the x window holds ``batch_words`` of each batch, as the host driver writes it."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from pezo.golden.engine.nets import net_config
from pezo.golden.engine.network import batch_words
from pezo.golden.regs.engine import CONTROL_BITS, STATUS_BITS, BoardMap
from pezo.golden.regs.uart_link import REGION_SHIFT, feed_indices, region_base
from pezo.hw.feeder import DataFeeder


class BusModel:
    """The regions the feeder reaches: the data memory (``rows`` [n, x_stride] bytes, labels), the engine's STATUS
    (LOAD_READY always 1), its x and labels windows, and CONTROL (a PUSH snapshots the windows)."""

    def __init__(self, bmap: BoardMap, rows: np.ndarray, labels: np.ndarray):
        self.map, self.rows = bmap, rows.view(np.uint8).ravel()
        self.labels = np.zeros(-(-len(labels) // 8) * 8, dtype=np.uint8)  # as the host pads them
        self.labels[: len(labels)] = labels
        batch = bmap.config.array.batch
        self.x = np.zeros(batch * bmap.x_stride, dtype=np.uint8)
        self.y = np.zeros(batch, dtype=np.uint8)
        self.pushed: list[tuple[np.ndarray, np.ndarray]] = []

    def access(self, addr: int, we: int, wdata: int) -> int:
        region, offset = addr >> REGION_SHIFT, addr & ((1 << REGION_SHIFT) - 1)
        if region == region_base("data_x") >> REGION_SHIFT:
            return int.from_bytes(self.rows[offset : offset + 8].tobytes(), "little")
        if region == region_base("data_labels") >> REGION_SHIFT:
            return int.from_bytes(self.labels[offset : offset + 8].tobytes(), "little")
        if region == region_base("registers") >> REGION_SHIFT:
            if we and offset == self.map.register("CONTROL") and wdata >> CONTROL_BITS["PUSH"] & 1:
                self.pushed.append((self.x.copy(), self.y.copy()))
            return 1 << STATUS_BITS["LOAD_READY"]
        assert we and region == region_base("windows") >> REGION_SHIFT, hex(addr)
        x_base, label_base = self.map.window("x").base, self.map.window("labels").base
        if x_base <= offset < x_base + len(self.x):
            self.x[offset - x_base : offset - x_base + 8] = np.frombuffer(wdata.to_bytes(8, "little"), np.uint8)
        else:
            self.y[(offset - label_base) // 8] = wdata & 0xFF
        return 0


@pytest.mark.parametrize("net", ["digits-cnn", "digits-mlp"])
def test_the_feeder_copies_the_loaded_words_of_each_example(net):
    bmap = BoardMap(net_config(net, batch=8))
    cfg, batch = bmap.config, bmap.config.array.batch
    rng = np.random.default_rng(7)
    examples, start, batches = 11, 3, 2  # the order wraps mid-batch
    xs, labels = rng.integers(-128, 128, size=(examples, cfg.inputs)), rng.integers(0, 10, size=examples)
    rows = np.zeros((examples, bmap.x_stride), dtype=np.int8)
    rows[:, : bmap.x_bytes] = batch_words(cfg, xs)  # as OnChipTrainer.load writes the data memory
    model = BusModel(bmap, rows, labels)
    dut = DataFeeder(bmap)

    async def bench(ctx):
        ctx.set(dut.examples, examples)
        ctx.set(dut.start, start)
        ctx.set(dut.batches, batches)
        ctx.set(dut.go, 1)
        await ctx.tick()
        ctx.set(dut.go, 0)
        for _ in range(batches * batch * (2 * bmap.x_bytes // 8 + 8) + 100):
            ctx.set(dut.bus.ack, 0)
            if ctx.get(dut.bus.req):
                rdata = model.access(ctx.get(dut.bus.addr), ctx.get(dut.bus.we), ctx.get(dut.bus.wdata))
                ctx.set(dut.bus.rdata, rdata)
                ctx.set(dut.bus.ack, 1)
            elif len(model.pushed) == batches:
                break
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert len(model.pushed) == batches
    for (x, y), order in zip(model.pushed, feed_indices(start, examples, batch, batches)):
        window = x.view(np.int8).reshape(batch, bmap.x_stride)[:, : bmap.x_bytes]
        assert np.array_equal(window, batch_words(cfg, xs[order]))
        assert np.array_equal(y, labels[order])
    assert bmap.x_bytes == (1024 if net == "digits-cnn" else cfg.inputs)
