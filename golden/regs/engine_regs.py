"""The engine top's AXI4-Lite registers (32-bit, byte offsets), declared once with ``golden.regs.spec.RegisterMap``:
each with its access kind, width, doc line and bit fields; the backprop tail's three (``NetConfig.backprop``, SHAPE
bit 25 reads 1; ``golden.engine.backprop``) only with it. OP, G_MODE and SHAPE's strategy hold the codes of
``golden.engine.ops``; ``CONTROL_BITS``, ``STATUS_BITS``, ``IRQ_BITS`` and ``OPS`` are read from the declaration.
The windows and ``BoardMap`` are ``golden.regs.engine``; ``docs/register-map.md`` renders both.
"""

from __future__ import annotations

from pezo.golden.engine.network import NetConfig
from pezo.golden.engine.ops import GMode, Op, Strategy, codes
from pezo.golden.regs.spec import Field, Register, RegisterMap, find
from pezo.golden.regs.stream import HOST_ID

ENGINE_MAP_VERSION = 2
BEAT_BYTES = 8
REGISTER_ADDR_BITS = 12
STEP_LOG_DEPTH = 64
STEP_RECORD_ENTRIES = 4
STRATEGY_CODES = codes(Strategy, (Strategy.OTF, Strategy.PREGEN))
OPS = codes(Op)
WINDOW_NAMES = ("weights", "x", "labels", "biases", "logits", "steps")
KIND_SHIFT = 26
KIND_FIELD_BITS = 6
"""SHAPE bits 26..31 say which layers are convolutions: bit 26 + i for layer i < 5, bit 31 for any conv layer at
index 5 or later (exact for every net of up to 7 layers; the last layer is always dense)."""


def _codes_doc(enum, upper: bool = False) -> str:
    """ "0 host, 1 sign, ...": the doc line of a register holding ``enum``'s codes."""
    return ", ".join(f"{int(m)} {m.name if upper else m.name.lower()}" for m in enum)


def _engine_map() -> tuple[Register, ...]:
    """Every engine register, the tail's three last (offsets from the builder: 0x00, 0x04, ...)."""
    m = RegisterMap()
    m.add("ID", "r", doc=f'0x{HOST_ID:08X} ("PEZO")')
    m.add("VERSION", "r", doc="``ENGINE_MAP_VERSION`` (2: the engine map; 1 is the stream host's)")
    strategies = ", ".join(f"{code} {name}" for name, code in STRATEGY_CODES.items())
    m.add(
        "SHAPE",
        "r",
        doc=f"rows | cols << 8 | layers << 16 | strategy << 24 ({strategies}) | tail << 25 | conv kinds << 26 (bit 26 "
        "+ min(i, 5): layer i is a convolution; ``kind_bits``)",
    )
    m.add("BATCH", "r", doc="batch | outputs << 16")
    control = (
        Field("START", 0, doc="op OP with STEPS, G, G_MODE, MARGIN, G_LR, G_SHIFT, WD_SHIFT, WD_EVERY"),
        Field("PUSH", 1, doc="the free bank holds a batch"),
        Field("ACK_DONE", 2, doc="clear the pending DONE interrupt bit"),
        Field("ACK_STEP", 3, doc="clear the pending STEP interrupt bit"),
        Field("CLEAR_ERROR", 4, doc="clear STATUS.ERROR"),
    )
    m.add(
        "CONTROL",
        "cmd",
        5,
        "bit 0 START (op OP with STEPS, G, G_MODE, MARGIN, G_LR, G_SHIFT, WD_SHIFT, WD_EVERY), bit 1 PUSH (the free "
        "bank holds a batch), bit 2 ACK_DONE, bit 3 ACK_STEP (clear the pending interrupt bits), bit 4 CLEAR_ERROR",
        fields=control,
    )
    status = (
        Field("BUSY", 0),
        Field("DONE", 1),
        Field("LOAD_READY", 2, doc="a bank is free for a batch"),
        Field("LOAD_BANK", 3, doc="the free bank"),
        Field("QUEUED", 4, 2, doc="batches queued"),
        Field("ERROR", 6, doc="sticky: a batch write was refused"),
        Field("LAST_BANK", 7, doc="logit bank of the last forward"),
        Field("IRQ_DONE", 8, doc="pending"),
        Field("IRQ_STEP", 9, doc="pending"),
    )
    m.add(
        "STATUS",
        "r",
        10,
        "bit 0 BUSY, 1 DONE, 2 LOAD_READY, 3 LOAD_BANK, 4..5 QUEUED, 6 ERROR (sticky: a batch write was refused), "
        "7 LAST_BANK (logit bank of the last forward), 8 IRQ_DONE, 9 IRQ_STEP (pending)",
        fields=status,
    )
    m.add("OP", "rw", 2, _codes_doc(Op, upper=True))
    m.add("STEPS", "rw", 16, "TRAIN: steps, 16 bit")
    m.add("G", "rw", 24, "host g, signed Q8.16, 24 bit", signed=True)
    m.add("G_MODE", "rw", 2, _codes_doc(GMode))
    m.add("MARGIN", "rw", 23, "hinge margin, 23 bit")
    m.add("G_LR", "rw", 24, "sign mode's |g|, signed Q8.16, 24 bit", signed=True)
    m.add("G_SHIFT", "rw", 6, "scaled mode's shift, 6 bit")
    m.add("REQUANT_SHIFT", "rw", 5, "shift of the requantised logits (the logit window's high word), 5 bit")
    irq = (Field("DONE", 0, doc="the engine's done rose"), Field("STEP", 1, doc="a TRAIN step finished"))
    m.add("IRQ_ENABLE", "rw", 2, "bit 0 DONE, bit 1 STEP: ``irq`` = |(pending & enable)", fields=irq)
    m.add("STEPS_DONE", "r", 16, "steps finished by the current/last TRAIN, 16 bit")
    m.add("LOSS_PLUS_LO", "r", doc="loss L+ of the last forward, bits 0..31 (48 bit unsigned)")
    m.add("LOSS_PLUS_HI", "r", 16, "bits 32..47")
    m.add("LOSS_MINUS_LO", "r", doc="L-, bits 0..31")
    m.add("LOSS_MINUS_HI", "r", 16, "bits 32..47")
    m.add("G_USED", "r", 24, "g of the last update, signed 24 bit", signed=True)
    m.add("CYCLES", "r", doc="busy cycles of the current/last operation")
    m.add("WAIT_CYCLES", "r", doc="cycles it waited for a batch")
    m.add("WD_SHIFT", "rw", 3, "the update's weight decay ``w -= round_shift(w, WD_SHIFT)``, 3 bit (0 = off)")
    m.add(
        "WD_EVERY",
        "rw",
        8,
        "the decay acts on every WD_EVERY-th update since reset (the engine's decay counter, "
        "``golden.engine.network``), 8 bit; 0 and 1 = every update",
    )
    m.add(
        "SPLIT",
        "rw",
        4,
        "TRAIN's partition C: layers 1..C by ZO, C+1..L by backprop; L = full ZO, 0 = full backprop (a value above L "
        "runs full ZO), 4 bit. The engine checks neither the range nor a conv layer in the tail: ``pezo.driver`` "
        "refuses both before writing (``NetConfig.split_c``)",
    )
    m.add("BP_BITS", "rw", 3, "the tail's update bits b_BP (1..7; its learning rate), 3 bit")
    m.add("BP_CYCLES", "r", doc="cycles the current/last TRAIN spent in the tail")
    return m.registers


_ALL = _engine_map()
TAIL_REGISTERS = _ALL[-3:]
"""The backprop tail's registers (an engine generated with ``NetConfig.backprop``)."""
CONTROL_BITS = find(_ALL, "CONTROL").bits()
STATUS_BITS = find(_ALL, "STATUS").bits()
IRQ_BITS = find(_ALL, "IRQ_ENABLE").bits()


def engine_registers(backprop: bool = False) -> tuple[Register, ...]:
    """The AXI4-Lite registers; the same for every ``NetConfig`` but the tail's three."""
    return _ALL if backprop else _ALL[:-3]


def kind_bits(config: NetConfig) -> int:
    """SHAPE's layer-kind field (bits 26..31 shifted down): bit min(i, 5) set for each conv layer i; 0 for a
    dense net (so a dense net's SHAPE is what it was before the field)."""
    bits = 0
    for i, layer in enumerate(config.layers):
        if layer.kind == "conv":
            bits |= 1 << min(i, KIND_FIELD_BITS - 1)
    return bits


def describe_kinds(shape: int) -> str:
    """The layer kinds a SHAPE word claims, in words ("no conv layer", "conv layers 0, 1", "... 5 or later")."""
    field = shape >> KIND_SHIFT & ((1 << KIND_FIELD_BITS) - 1)
    if not field:
        return "no conv layer"
    names = [str(i) for i in range(KIND_FIELD_BITS - 1) if field >> i & 1]
    if field >> (KIND_FIELD_BITS - 1) & 1:
        names.append(f"{KIND_FIELD_BITS - 1} or later")
    return ("conv layer " if len(names) == 1 else "conv layers ") + ", ".join(names)
