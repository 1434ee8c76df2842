"""The AXI4-Lite stream host: golden register model, Amaranth-simulator AXI transactions, and cocotb
with cocotbext-axi's AxiLiteMaster on Icarus and Verilator (every read and response vs golden)."""

import pytest

from pezo.golden.config import PerturbConfig
from pezo.golden.regs.stream import (
    CONTROL_NEXT,
    CONTROL_REWIND,
    CONTROL_RUN,
    CONTROL_SIGN,
    HOST_ID,
    RESP_OKAY,
    RESP_SLVERR,
    RESULT_BASE,
    STATUS_DONE,
    Register,
    StreamHost,
    addr_width,
    register_map,
)
from pezo.golden.rng.perturb import PerturbationStream
from pezo.sim.amaranth_sim import simulate
from pezo.sim.runner import SIMULATORS, run_host

SMALL = {
    "otf": PerturbConfig(n_rngs=8, rng_bits=8, perturb_dim=100, eps_shift=9),
    "pregen": PerturbConfig(strategy="pregen", pool_size=255, lanes=4, banks=2, perturb_dim=100),
    "gaussian": PerturbConfig(strategy="gaussian", lanes=4, perturb_dim=100),
}
SUM, STEP, COUNT, CONTROL, STATUS, G = 0x28, 0x20, 0x18, 0x10, 0x14, 0x1C


def _signed(word):
    return word - (1 << 32) if word >> 31 else word


def test_register_map_is_word_aligned_and_unique():
    for config in SMALL.values():
        regs = register_map(config)
        assert len({r.offset for r in regs}) == len(regs) and all(r.offset % 4 == 0 for r in regs)
        assert max(r.offset for r in regs) < 1 << addr_width(config)
    assert addr_width(PerturbConfig(n_rngs=1024, rng_bits=16)) == 13
    with pytest.raises(ValueError, match="register width must be in 1..32"):
        Register("X", 0, "r", 33)
    with pytest.raises(ValueError, match="register kind must be one of r, rw, cmd"):
        Register("X", 0, "wo")


@pytest.mark.parametrize("strategy", SMALL)
def test_golden_host_runs_the_mezo_passes(strategy):
    """SUM of the -eps pass is the exact negation of the +eps pass, the update replay equals +eps, and
    the values are the stream's, in order."""
    config = SMALL[strategy]
    host = StreamHost(config)
    assert host.read(0x00) == (HOST_ID, RESP_OKAY)
    host.write(COUNT, 5)
    sums = []
    for bits in (CONTROL_NEXT | CONTROL_RUN, CONTROL_REWIND | CONTROL_SIGN | CONTROL_RUN, CONTROL_REWIND | CONTROL_RUN):
        assert host.write(CONTROL, bits) == RESP_OKAY
        assert host.read(STATUS)[0] & STATUS_DONE
        sums.append(_signed(host.read(SUM)[0]))
    assert sums[1] == -sums[0] and sums[2] == sums[0] and sums[0] != 0
    stream = PerturbationStream(config)
    stream.step(next=True)
    values = stream.perturbation(5 * host.lanes)
    assert sums[0] == int(values.sum())
    last = [_signed(host.read(RESULT_BASE + 4 * i)[0]) for i in range(host.lanes)]
    assert last == list(values[-host.lanes :])
    assert host.read(STEP)[0] == 1
    assert host.read(CONTROL) == (0, RESP_SLVERR) and host.write(0x00, 1) == RESP_SLVERR
    assert host.write(G, 0xAB << 8, strb=0b0010) == RESP_OKAY and host.read(G)[0] == 0xAB00


async def _axi_write(ctx, bus, addr, data, strb=0xF):
    ctx.set(bus.awaddr, addr)
    ctx.set(bus.wdata, data)
    ctx.set(bus.wstrb, strb)
    ctx.set(bus.awvalid, 1)
    ctx.set(bus.wvalid, 1)
    ctx.set(bus.bready, 1)
    while not ctx.get(bus.awready):
        await ctx.tick()
    await ctx.tick()
    ctx.set(bus.awvalid, 0)
    ctx.set(bus.wvalid, 0)
    while not ctx.get(bus.bvalid):
        await ctx.tick()
    resp = ctx.get(bus.bresp)
    await ctx.tick()
    ctx.set(bus.bready, 0)
    return resp


async def _axi_read(ctx, bus, addr):
    ctx.set(bus.araddr, addr)
    ctx.set(bus.arvalid, 1)
    ctx.set(bus.rready, 1)
    while not ctx.get(bus.arready):
        await ctx.tick()
    await ctx.tick()
    ctx.set(bus.arvalid, 0)
    while not ctx.get(bus.rvalid):
        await ctx.tick()
    value, resp = ctx.get(bus.rdata), ctx.get(bus.rresp)
    await ctx.tick()
    ctx.set(bus.rready, 0)
    return value, resp


@pytest.mark.parametrize("strategy", SMALL)
def test_amaranth_sim_host_matches_golden(strategy):
    """Quick loop: AXI transactions on Amaranth's simulator against golden, three MeZO passes x 2 steps."""
    from pezo.hw.host import StreamHost as HWHost

    config = SMALL[strategy]
    dut = HWHost(config)
    model = StreamHost(config)
    checked = []

    async def testbench(ctx):
        bus = dut.s_axil

        async def read(addr):
            got = await _axi_read(ctx, bus, addr)
            assert got == model.read(addr), f"read {addr:#x}: {got} != golden {model.read(addr)}"
            checked.append(addr)

        async def write(addr, data):
            assert await _axi_write(ctx, bus, addr, data) == model.write(addr, data)

        for addr in (0x00, 0x04, 0x08, 0x0C, 0x10, 0xFFC):
            await read(addr)
        await write(0x00, 5)
        await write(COUNT, 7)
        for _ in range(2):
            for bits in (
                CONTROL_NEXT | CONTROL_RUN,
                CONTROL_REWIND | CONTROL_SIGN | CONTROL_RUN,
                CONTROL_REWIND | CONTROL_RUN,
            ):
                await write(CONTROL, bits)
                for _ in range(200):
                    value, _ = await _axi_read(ctx, bus, STATUS)
                    if value & STATUS_DONE:
                        break
                else:
                    raise AssertionError("RUN did not finish")
                for addr in [SUM, STEP] + [RESULT_BASE + 4 * i for i in range(model.lanes)]:
                    await read(addr)

    simulate(dut, testbench)
    assert len(checked) == 6 + 6 * (2 + model.lanes)


@pytest.mark.rtl
@pytest.mark.parametrize("simulator", SIMULATORS)
@pytest.mark.parametrize("strategy", SMALL)
def test_cocotb_axi_master_matches_golden(strategy, simulator, require_simulator, sim_build):
    require_simulator(simulator)
    result = run_host(SMALL[strategy], simulator, sim_build / f"host-{strategy}" / simulator, steps=6, seed=3)
    assert result["runs"] >= 18 and result["slverr"] >= 4 and result["reads"] > 100


@pytest.mark.rtl
def test_cocotb_host_catches_a_mismatch(require_simulator, sim_build):
    require_simulator("icarus")
    config = SMALL["otf"]
    with pytest.raises(AssertionError, match="cocotb test pezo.sim.host_tb failed"):
        run_host(
            config,
            "icarus",
            sim_build / "host-mismatch" / "icarus",
            steps=1,
            expect_config=config.replace(seed=config.seed + 1),
        )


@pytest.mark.rtl
def test_cocotb_host_default_otf_on_verilator(require_simulator, sim_build):
    """The default-size host (32 lanes of 14-bit URNGs, d = 2^20) on the fast simulator."""
    require_simulator("verilator")
    result = run_host(PerturbConfig(), "verilator", sim_build / "host-default" / "verilator", steps=3, seed=5)
    assert result["runs"] >= 9


def test_the_register_file_answers_through_two_register_stages():
    """``hw.axil``'s contract, cycle by cycle: a write takes effect (a cmd register's one-cycle word, an rw register's
    value and its ``_written`` pulse) in the cycle ``bvalid`` rises, two cycles after the handshake's cycle; a read
    answers two cycles after its handshake, ``arready`` low until ``rvalid`` drops (and while ``arvalid`` is); an
    unmapped address is SLVERR with ``rdata`` 0."""
    from pezo.golden.regs.stream import Register
    from pezo.hw.axil import AXI4LiteRegisters

    regs = (Register("mode", 0x0, "rw", 8), Register("go", 0x4, "cmd", 4), Register("level", 0x8, "r", 6, True))
    dut = AXI4LiteRegisters(regs, 8)
    bus, log = dut.s_axil, []

    async def testbench(ctx):
        ctx.set(dut.level, 0b101010)  # -22 as a signed 6-bit register
        for addr, data in ((0x4, 0x9), (0x0, 0x5A)):
            ctx.set(bus.awaddr, addr)
            ctx.set(bus.wdata, data)
            ctx.set(bus.wstrb, 0xF)
            ctx.set(bus.awvalid, 1)
            ctx.set(bus.wvalid, 1)
            ctx.set(bus.bready, 1)
            assert ctx.get(bus.awready) and ctx.get(bus.wready)  # the handshake's cycle
            cycles = []
            for _ in range(4):
                await ctx.tick()
                ctx.set(bus.awvalid, 0)
                ctx.set(bus.wvalid, 0)
                cycles.append((ctx.get(bus.bvalid), ctx.get(dut.go), ctx.get(dut.mode), ctx.get(dut.mode_written)))
                if cycles[-1][0]:
                    ctx.set(bus.bready, 1)
            log.append(cycles)
            assert ctx.get(bus.bresp) == RESP_OKAY
        for addr, expected in ((0x8, (0xFFFFFFEA, RESP_OKAY)), (0x4, (0, RESP_SLVERR)), (0x40, (0, RESP_SLVERR))):
            ctx.set(bus.araddr, addr)
            ctx.set(bus.arvalid, 1)
            ctx.set(bus.rready, 0)
            assert ctx.get(bus.arready)
            await ctx.tick()
            ctx.set(bus.arvalid, 0)
            assert not ctx.get(bus.rvalid) and not ctx.get(bus.arready)  # the address registered, decoding
            await ctx.tick()
            assert ctx.get(bus.rvalid) and not ctx.get(bus.arready)
            assert (ctx.get(bus.rdata), ctx.get(bus.rresp)) == expected
            await ctx.tick()
            assert ctx.get(bus.rvalid)  # held until rready
            ctx.set(bus.rready, 1)
            await ctx.tick()
            ctx.set(bus.rready, 0)
            assert not ctx.get(bus.rvalid) and not ctx.get(bus.arready)  # arready follows arvalid

    simulate(dut, testbench)
    go_write, mode_write = log
    # cycle 0: the decoded address in registers; cycle 1: bvalid and the write's effect together, for one cycle
    assert [(b, g) for b, g, _, _ in go_write[:3]] == [(0, 0), (1, 0x9), (0, 0)]
    assert [(b, m, w) for b, _, m, w in mode_write[:3]] == [(0, 0, 0), (1, 0x5A, 1), (0, 0x5A, 0)]
