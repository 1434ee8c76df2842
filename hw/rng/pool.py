"""The pre-generated pool in BRAM, banked, with leftover-shift addressing (twin of ``golden.rng.pool``).

The pool is split over ``banks`` ROMs (``lib.memory.Memory``, ``rom_style = "block"``, synchronous
non-transparent read ports) holding interleaved positions: bank b entry e = pool[(e*banks + b) mod N],
padded so that a window of ``lanes`` consecutive values never wraps inside a bank. Each bank has
``lanes / banks`` read ports; a window starting at address a = row*banks + col reads entry
``row + (b < col) + m`` on port m of bank b, and lane i takes bank ``(col + i) mod banks``, port
``i // banks`` one cycle later (a barrel rotation by ``col``). The ports are addressed by the next
address (a mux in front of the BRAM address), so the window follows ``en`` with no bubble.
"""

from __future__ import annotations

from amaranth.hdl import Array, Module, Signal, signed
from amaranth.lib import data
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from pezo.golden.config import PerturbConfig
from pezo.golden.rng.pool import bank_contents, pool_values
from pezo.hw.component import ConfigComponent, ConfigSignature


class PoolReader(ConfigComponent):
    """Ports: ``en`` (next window), ``restore`` (back to the perturbation's start), ``next_perturbation``
    (start <- (start + d) mod N), ``lanes`` (``lanes`` signed ``pool_bits`` values: the window at the
    current address, read by the BRAMs one edge earlier at the then-next address). Cycle semantics:
    ``golden.rng.pool.PoolReader``."""

    class Signature(ConfigSignature):
        def members_for(self, config):
            return {"en": In(1), "restore": In(1), "next_perturbation": In(1),
                    "lanes": Out(data.ArrayLayout(signed(config.pool_bits), config.lanes))}

    def __init__(self, config: PerturbConfig, values=None):
        self._values = pool_values(config) if values is None else values
        super().__init__(config)

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        N, lanes, banks = cfg.pool_size, cfg.lanes, cfg.banks
        ports_per_bank = lanes // banks
        col_bits = (banks - 1).bit_length()

        address = Signal(range(N))  # the window on the lanes port
        start = Signal(range(N))
        next_address = Signal(range(N))  # what the BRAMs read now, so the window shows with no bubble
        step = lanes % N
        jump = cfg.perturb_dim % N
        def mod_n(value):  # value < 2N
            return value - N * (value >= N)

        m.d.comb += next_address.eq(address)
        with m.If(self.next_perturbation):
            m.d.comb += next_address.eq(mod_n(start + jump))
            m.d.sync += start.eq(next_address)
        with m.Elif(self.restore):
            m.d.comb += next_address.eq(start)
        with m.Elif(self.en):
            m.d.comb += next_address.eq(mod_n(address + step))
        m.d.sync += address.eq(next_address)

        row = next_address >> col_bits
        col = next_address[:col_bits] if col_bits else 0
        col_read = Signal(max(col_bits, 1))  # the rotation that applies to the data now on the ports
        m.d.sync += col_read.eq(col)

        bank_data = []  # bank_data[b][m]
        for b, contents in enumerate(bank_contents(cfg, self._values)):
            mem = Memory(shape=signed(cfg.pool_bits), depth=len(contents), init=[int(v) for v in contents],
                         attrs={"rom_style": "block"})
            m.submodules[f"bank{b}"] = mem
            outs = []
            for port_index in range(ports_per_bank):
                port = mem.read_port(domain="sync", transparent_for=())
                m.d.comb += port.addr.eq(row + (b < col) + port_index)
                outs.append(port.data)
            bank_data.append(outs)

        for i in range(lanes):
            choices = Array(bank_data[b][i // banks] for b in range(banks))
            m.d.comb += self.lanes[i].eq(choices[(col_read + i) % banks] if banks > 1 else choices[0])
        return m
