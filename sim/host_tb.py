"""cocotb testbench of the AXI4-Lite stream host: an ``AxiLiteMaster`` (cocotbext-axi) plays the Zynq
PS and every register read and every response code is compared with ``golden.regs.stream.StreamHost``.

Per ZO step: NEXT(+eps)+RUN, REWIND(-eps)+RUN, REWIND(+eps)+RUN (MeZO's +, -, update replay), with
random COUNTs, commands sometimes split over two writes, byte-strobed writes of COUNT and G, and
checks of ID/VERSION/STRATEGY/LANES, SUM, STEP, STATUS (VALID masked: timing-dependent), every RESULT
lane, CYCLES within its bounds, and SLVERR for unmapped / read-only / write-only accesses.

Environment: ``PEZO_CONFIG``, ``PEZO_STEPS``, ``PEZO_STIM_SEED``, ``PEZO_RESULT``.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import RisingEdge

from pezo.golden.regs.stream import (
    CONTROL_NEXT,
    CONTROL_REWIND,
    CONTROL_RUN,
    CONTROL_SIGN,
    RESULT_BASE,
    STATUS_DONE,
    STATUS_VALID,
    StreamHost,
    register_map,
)
from pezo.sim.scoreboard import Scoreboard, config_from_env, env_int, start_and_reset

IDENTIFICATION = ("ID", "VERSION", "STRATEGY", "LANES")
UNMAPPED = 0xFFC  # no register of ``golden.regs.stream.register_map`` lives here (checked below)


@cocotb.test()
async def host_matches_golden(dut):
    from cocotbext.axi import AxiLiteBus, AxiLiteMaster

    cfg = config_from_env()
    steps = env_int("PEZO_STEPS", 4)
    rng = random.Random(env_int("PEZO_STIM_SEED", 1))
    await start_and_reset(dut, cycles=4)
    bus = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil_"), dut.clk, dut.rst)
    bus.write_if.log.setLevel("WARNING")
    bus.read_if.log.setLevel("WARNING")
    model = StreamHost(cfg)
    board = Scoreboard(f"host {cfg}")
    counts = {"reads": 0, "writes": 0, "runs": 0, "slverr": 0}
    registers = register_map(cfg)
    offset_of = {r.name: r.offset for r in registers}
    STATUS, SUM, COUNT, G, CONTROL, STEP, CYCLES = (
        offset_of[name] for name in ("STATUS", "SUM", "COUNT", "G", "CONTROL", "STEP", "CYCLES")
    )
    if UNMAPPED in offset_of.values():
        raise AssertionError(f"{UNMAPPED:#x} is mapped: pick another unmapped offset")
    readable = [r.offset for r in registers if r.kind != "cmd" and r.offset != CYCLES]  # CYCLES: bounds only

    async def read(offset, mask=0xFFFFFFFF, what=""):
        got = await bus.read(offset, 4)
        value, resp = model.read(offset)
        board.compare(counts["reads"], f"rresp@{offset:#x}{what}", int(got.resp), resp)
        board.compare(
            counts["reads"], f"rdata@{offset:#x}{what}", int.from_bytes(got.data, "little") & mask, value & mask
        )
        counts["reads"] += 1
        counts["slverr"] += resp != 0
        return value

    async def write(offset, value, nbytes=4, byte=0):
        data = (value >> (8 * byte)).to_bytes(8, "little")[:nbytes]
        got = await bus.write(offset + byte, data)
        strb = ((1 << nbytes) - 1) << byte
        resp = model.write(offset, value & (((1 << (8 * nbytes)) - 1) << (8 * byte)), strb)
        board.compare(counts["writes"], f"bresp@{offset:#x}", int(got.resp), resp)
        counts["writes"] += 1
        counts["slverr"] += resp != 0

    async def wait_done():
        for _ in range(100_000):
            got = await bus.read(STATUS, 4)
            if int.from_bytes(got.data, "little") & STATUS_DONE:
                return
        raise AssertionError("RUN never finished (STATUS.DONE stayed 0)")

    async def command(bits):
        if rng.random() < 0.3 and bits & CONTROL_RUN and bits & (CONTROL_NEXT | CONTROL_REWIND):
            await write(CONTROL, bits & ~CONTROL_RUN)  # the command and the run as two writes
            await write(CONTROL, CONTROL_RUN)
        else:
            await write(CONTROL, bits)
        if bits & CONTROL_RUN:
            await wait_done()
            counts["runs"] += 1
            lo, hi = model.cycles_bounds()
            got = int.from_bytes((await bus.read(CYCLES, 4)).data, "little")
            if not lo <= got <= hi:
                raise AssertionError(f"CYCLES {got} outside [{lo}, {hi}]")
            await check_results()

    async def check_results():
        await read(SUM)
        await read(STEP)
        await read(STATUS, ~STATUS_VALID & 0xFFFFFFFF)
        for i in range(model.lanes):
            await read(RESULT_BASE + 4 * i)

    for name in IDENTIFICATION:
        await read(offset_of[name])
    await write(G, rng.getrandbits(32))
    await write(G, rng.getrandbits(32), nbytes=1, byte=rng.randrange(4))
    await read(G)
    await write(offset_of["ID"], 0x1234)  # read-only: SLVERR
    await read(CONTROL)  # write-only: SLVERR
    await read(UNMAPPED)  # unmapped: SLVERR
    await write(UNMAPPED, 1)

    vectors = -(-cfg.perturb_dim // model.lanes)
    for _ in range(steps):
        count = rng.randint(1, min(vectors, 64))
        await write(COUNT, count)
        if rng.random() < 0.3:  # a byte-strobed rewrite of COUNT's low byte
            await write(COUNT, rng.randint(1, 64), nbytes=1, byte=0)
        await command(CONTROL_NEXT | CONTROL_RUN)
        await command(CONTROL_REWIND | CONTROL_SIGN | CONTROL_RUN)
        await command(CONTROL_REWIND | CONTROL_RUN)
        if rng.random() < 0.5:  # a continued run inside the same perturbation
            await command(CONTROL_RUN)
        offset = rng.choice(readable)
        await read(offset, ~STATUS_VALID & 0xFFFFFFFF if offset == STATUS else 0xFFFFFFFF)
    await RisingEdge(dut.clk)
    board.report(counts["reads"] + counts["writes"], {"transactions": counts["reads"] + counts["writes"], **counts})
    dut._log.info("host: %s", counts)
    if counts["runs"] < 3 * steps or counts["slverr"] < 4:
        raise AssertionError(f"coverage too low: {counts}")
