"""The engines' command codes as ``IntEnum`` classes: what the OP, G_MODE and STRATEGY registers (``golden.regs``)
hold and what hw compares against. ``int(member)`` is the register value;
``codes(enum)`` the lower-case name -> value dict."""

from __future__ import annotations

from enum import IntEnum


class Op(IntEnum):
    """An engine operation (the OP register; ``hw.engine.zo_engine`` has the first three)."""

    FORWARD_ZO = 0
    UPDATE = 1
    INFER = 2
    TRAIN = 3


class GMode(IntEnum):
    """Where a TRAIN step's g comes from (the G_MODE register)."""

    HOST = 0
    SIGN = 1
    SCALED = 2


class Strategy(IntEnum):
    """A perturbation strategy (the stream host's STRATEGY register; the engine's SHAPE bit 24 holds OTF / PREGEN)."""

    OTF = 0
    PREGEN = 1
    GAUSSIAN = 2


def codes(enum: type[IntEnum], members=None) -> dict[str, int]:
    """``{name.lower(): int(value)}`` of ``members`` (default: all of ``enum``), in definition order."""
    return {m.name.lower(): int(m) for m in (enum if members is None else members)}
