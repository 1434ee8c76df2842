"""The register-map description (``golden.regs``): the builder's rules, and every offset, width, field, code and C
header pinned to what software compiled against before the maps were declared once (issue 54)."""

from pathlib import Path

import pytest

from pezo.golden.config import PerturbConfig
from pezo.golden.engine.loss import G_MODE_CODES
from pezo.golden.engine.nets import net_config
from pezo.golden.engine.ops import GMode, Op, Strategy, codes
from pezo.golden.regs.engine import CONTROL_BITS, IRQ_BITS, OPS, STATUS_BITS, STRATEGY_CODES, BoardMap, engine_registers
from pezo.golden.regs.header import stream_header
from pezo.golden.regs.spec import Field, RegisterMap, find, register_dicts
from pezo.golden.regs.stream import (
    CONTROL_NEXT,
    CONTROL_REWIND,
    CONTROL_RUN,
    CONTROL_SIGN,
    STATUS_BUSY,
    STATUS_DONE,
    STATUS_SIGN,
    STATUS_VALID,
    STRATEGY_IDS,
    register_map,
)
from pezo.golden.rng.perturb import stream_lanes

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "regs"
ENGINE = """
ID 00 r 32 | VERSION 04 r 32 | SHAPE 08 r 32 | BATCH 0C r 32 | CONTROL 10 cmd 5 | STATUS 14 r 10 | OP 18 rw 2
STEPS 1C rw 16 | G 20 rw 24 s | G_MODE 24 rw 2 | MARGIN 28 rw 23 | G_LR 2C rw 24 s | G_SHIFT 30 rw 6
REQUANT_SHIFT 34 rw 5 | IRQ_ENABLE 38 rw 2 | STEPS_DONE 3C r 16 | LOSS_PLUS_LO 40 r 32 | LOSS_PLUS_HI 44 r 16
LOSS_MINUS_LO 48 r 32 | LOSS_MINUS_HI 4C r 16 | G_USED 50 r 24 s | CYCLES 54 r 32 | WAIT_CYCLES 58 r 32
WD_SHIFT 5C rw 3 | WD_EVERY 60 rw 8 | SPLIT 64 rw 4 | BP_BITS 68 rw 3 | BP_CYCLES 6C r 32
"""
STREAM = """
ID 00 r 32 | VERSION 04 r 32 | STRATEGY 08 r 2 | LANES 0C r 11 | CONTROL 10 cmd 9 | STATUS 14 r 4 | COUNT 18 rw 32
G 1C rw 32 s | STEP 20 r 32 | CYCLES 24 r 32 | SUM 28 r 32 s
"""


def _table(text: str) -> list[dict]:
    rows = [row.split() for line in text.strip().splitlines() for row in line.split("|")]
    return [
        {"name": r[0], "offset": int(r[1], 16), "kind": r[2], "width": int(r[3]), "signed": r[4:] == ["s"]}
        for r in rows
    ]


def test_the_engine_registers_keep_their_offsets_and_widths():
    assert register_dicts(engine_registers(backprop=True)) == _table(ENGINE)
    assert engine_registers() == engine_registers(backprop=True)[:-3]
    assert all(r.doc for r in engine_registers(backprop=True))


def test_the_stream_registers_keep_their_offsets_and_widths():
    cfg = PerturbConfig()
    regs = register_map(cfg)
    results = [r for r in regs if r.name.startswith("RESULT_")]
    assert register_dicts(regs[: len(regs) - len(results)]) == _table(STREAM)
    assert [(r.offset, r.kind, r.width, r.signed) for r in results] == [
        (0x40 + 4 * i, "r", 16, True) for i in range(len(results))
    ]
    assert len(results) == stream_lanes(cfg)


def test_bits_and_codes_keep_their_values():
    assert CONTROL_BITS == {"START": 0, "PUSH": 1, "ACK_DONE": 2, "ACK_STEP": 3, "CLEAR_ERROR": 4}
    assert STATUS_BITS == {
        **{"BUSY": 0, "DONE": 1, "LOAD_READY": 2, "LOAD_BANK": 3, "QUEUED": 4},
        **{"ERROR": 6, "LAST_BANK": 7, "IRQ_DONE": 8, "IRQ_STEP": 9},
    }
    assert IRQ_BITS == {"DONE": 0, "STEP": 1}
    assert find(engine_registers(), "STATUS").mask("QUEUED") == 3 << 4
    assert (CONTROL_NEXT, CONTROL_REWIND, CONTROL_RUN, CONTROL_SIGN) == (1, 2, 4, 1 << 8)
    assert (STATUS_BUSY, STATUS_VALID, STATUS_SIGN, STATUS_DONE) == (1, 2, 4, 8)
    assert [int(op) for op in (Op.FORWARD_ZO, Op.UPDATE, Op.INFER, Op.TRAIN)] == [0, 1, 2, 3]
    assert OPS == {"forward_zo": 0, "update": 1, "infer": 2, "train": 3}
    assert G_MODE_CODES == codes(GMode) == {"host": 0, "sign": 1, "scaled": 2}
    assert STRATEGY_IDS == codes(Strategy) == {"otf": 0, "pregen": 1, "gaussian": 2}
    assert STRATEGY_CODES == {"otf": 0, "pregen": 1}
    assert all(type(v) is int for d in (OPS, G_MODE_CODES, STRATEGY_IDS) for v in d.values())  # JSON as before


HEADERS = {
    "stream-otf": lambda: stream_header(PerturbConfig(strategy="otf"), 0xA000_0000),
    "stream-gaussian": lambda: stream_header(PerturbConfig(strategy="gaussian"), 0xA000_0000),
    "engine-digits-mlp-otf": lambda: BoardMap(net_config("digits-mlp")).c_header(),
    "engine-rt-mlp-pregen-backprop": lambda: BoardMap(
        net_config("rt-mlp").replace(strategy="pregen", backprop=True)
    ).c_header(),
    "engine-digits-cnn-otf": lambda: BoardMap(net_config("digits-cnn")).c_header(),
}


@pytest.mark.parametrize("name", sorted(HEADERS))
def test_the_generated_c_headers_equal_the_committed_ones(name):
    """Regenerate a fixture with ``HEADERS[name]()`` only when a header is meant to change (say so in the log)."""
    assert HEADERS[name]() == (FIXTURES / f"{name}.h").read_text()


def test_the_builder_places_registers_in_order_and_refuses_overlaps():
    m = RegisterMap()
    a = m.add("A", "rw", 8, "a", fields=(Field("LOW", 0, 4), Field("TOP", 7)))
    m.skip_to(0x10)
    m.array("R", 2, "r", 16, "lane {i}", signed=True)
    assert [(r.name, r.offset, r.doc) for r in m.registers] == [
        ("A", 0, "a"),
        ("R_0", 0x10, "lane 0"),
        ("R_1", 0x14, "lane 1"),
    ]
    assert a.bits() == {"LOW": 0, "TOP": 7} and a.mask("LOW") == 0xF
    with pytest.raises(ValueError, match="next free word"):
        m.skip_to(0x10)
    with pytest.raises(ValueError, match="declared twice"):
        m.add("A", "r")
    with pytest.raises(ValueError, match="outside 8 bits"):
        m.add("B", "rw", 8, fields=(Field("X", 7, 2),))
    with pytest.raises(ValueError, match="kind must be one of"):
        m.add("C", "wo")
