"""The pre-generated pool in BRAM, banked, with leftover-shift addressing (twin of ``golden.rng.pool``).

The pool is split over ``banks`` ROMs (``lib.memory.Memory``, ``rom_style = "block"``, synchronous
non-transparent read ports) holding interleaved positions: bank b entry e = pool[(e*banks + b) mod N],
padded so that a window of ``lanes`` consecutive values never wraps inside a bank. Each bank has
``lanes / banks`` read ports; a window starting at address a = row*banks + col reads entry
``row + (b < col) + m`` on port m of bank b, and lane i takes bank ``(col + i) mod banks``, port
``i // banks`` (a barrel rotation by ``col``).

Pipeline (``POOL_STAGES`` registers after the read pointer, all moved by ``en`` alone -- the enable of
every register and BRAM read port): 1 the per-port row addresses, 2 the BRAM read, 3 a register
right behind each BRAM output (the BRAM's clock-to-out is most of a cycle on every family: nothing but
routing may follow it), 4 the rotation. The pointer's ``(a + c) mod N`` is two parallel adders and a
select, so every path is at most one adder, one mux level or one BRAM access.
"""

from __future__ import annotations

from amaranth.hdl import Array, Module, Mux, Signal, Value, signed
from amaranth.lib import data
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from pezo.golden.config import PerturbConfig
from pezo.golden.rng.pool import POOL_STAGES, bank_contents, pool_values
from pezo.hw.component import ConfigComponent, ConfigSignature


def add_mod(m: Module, x, c: int, modulus: int, name: str):
    """``(x + c) mod modulus`` for 0 <= x < modulus and a constant 0 <= c < modulus: x + c and
    x + c - modulus side by side, the second taken unless it is negative (one adder deep)."""
    up = Signal(range(2 * modulus), name=f"{name}_up")
    down = Signal(signed(len(up) + 1), name=f"{name}_down")
    m.d.comb += [up.eq(x + c), down.eq(x - (modulus - c))]
    return Mux(down[-1], up, down[: len(up)])


class PoolReader(ConfigComponent):
    """Ports: ``en`` (ready: the pipeline moves; the window on ``lanes`` is consumed if ``valid``), ``restore``
    (back to the perturbation's start), ``next_perturbation`` (start <- (start + d) mod N), ``valid``,
    ``lanes`` (``lanes`` signed ``pool_bits`` values). Cycle semantics: ``golden.rng.pool.PoolReader``."""

    class Signature(ConfigSignature):
        def members_for(self, config):
            return {
                "en": In(1),
                "restore": In(1),
                "next_perturbation": In(1),
                "valid": Out(1),
                "lanes": Out(data.ArrayLayout(signed(config.pool_bits), config.lanes)),
            }

    def __init__(self, config: PerturbConfig, values=None):
        self._values = pool_values(config) if values is None else values
        super().__init__(config)

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        N, lanes, banks = cfg.pool_size, cfg.lanes, cfg.banks
        ports_per_bank = lanes // banks
        col_bits = (banks - 1).bit_length()

        valid = [Signal(name=f"valid{i}") for i in range(POOL_STAGES)]  # valid[i]: stage i + 1 holds a window
        advance = self.en
        flush = self.next_perturbation | self.restore
        address = Signal(range(N))  # the next window to issue
        start = Signal(range(N))
        with m.If(self.next_perturbation):
            jumped = add_mod(m, start, cfg.perturb_dim % N, N, "jump")
            m.d.sync += [start.eq(jumped), address.eq(jumped)]
        with m.Elif(self.restore):
            m.d.sync += address.eq(start)
        with m.Elif(advance):
            m.d.sync += address.eq(add_mod(m, address, lanes % N, N, "step"))
        with m.If(flush):
            m.d.sync += [v.eq(0) for v in valid]
        with m.Elif(advance):
            m.d.sync += [valid[0].eq(1), *(valid[i + 1].eq(valid[i]) for i in range(POOL_STAGES - 1))]

        def stage(value, name):
            value = Value.cast(value)
            reg = Signal(value.shape(), name=name)
            with m.If(advance):
                m.d.sync += reg.eq(value)
            return reg

        col = address[:col_bits] if col_bits else 0
        row = address >> col_bits
        col_at = [col]  # the rotation travels with its window: col_at[i] belongs to stage i
        for i in range(1, POOL_STAGES):
            col_at.append(stage(col_at[-1], f"col{i}") if col_bits else 0)

        bank_data = []  # bank_data[b][port]: stage 3 (the register behind the BRAM output)
        for b, contents in enumerate(bank_contents(cfg, self._values)):
            mem = Memory(
                shape=signed(cfg.pool_bits),
                depth=len(contents),
                init=[int(v) for v in contents],
                attrs={"rom_style": "block"},
            )
            m.submodules[f"bank{b}"] = mem
            outs = []
            for port_index in range(ports_per_bank):
                row_address = stage(
                    row + (b < col) + port_index if col_bits else row + port_index, f"row{b}_{port_index}"
                )
                port = mem.read_port(domain="sync", transparent_for=())
                m.d.comb += [port.addr.eq(row_address), port.en.eq(advance)]
                outs.append(stage(port.data, f"bank{b}_{port_index}_q"))
            bank_data.append(outs)

        for i in range(lanes):
            choices = Array(bank_data[b][i // banks] for b in range(banks))
            rotated = choices[(col_at[3] + i) % banks] if banks > 1 else choices[0]
            m.d.comb += self.lanes[i].eq(stage(rotated, f"lane{i}"))
        m.d.comb += self.valid.eq(valid[-1])
        return m
