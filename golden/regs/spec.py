"""The register-map description: ``Field``, ``Register`` and the ``RegisterMap`` builder that places them.

A map is declared, not laid out by hand (as amaranth-soc's ``csr.Builder`` and LiteX's CSR banks): each ``add``
takes a name, an access kind, a width and a doc line (and optionally bit fields) and gets the next free 32-bit
word; ``skip_to`` leaves a gap. Kinds (what ``hw.axil.AXI4LiteRegisters`` builds): ``r`` read-only, ``rw``
read-write (``init`` its reset value), ``cmd`` write-only command bits (one-cycle pulses; reads answer SLVERR).
Everything else -- the RTL register files, the C headers, the docs page, the driver -- reads these objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field

KINDS = ("r", "rw", "cmd")
WORD_BYTES = 4
RESP_OKAY, RESP_SLVERR = 0, 2


@dataclass(frozen=True)
class Field:
    """Bits ``bit`` to ``bit + width - 1`` of a register, named, with a doc line."""

    name: str
    bit: int
    width: int = 1
    doc: str = ""

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.bit


@dataclass(frozen=True)
class Register:
    """One 32-bit-aligned register: ``offset`` in bytes, ``kind`` r / rw / cmd, ``width`` 1..32 bits
    (reads zero-extend, or sign-extend when ``signed``), ``init`` the reset value of an rw register, ``doc`` its
    meaning, ``fields`` its named bits (``doc`` and ``fields`` describe; they take no part in equality)."""

    name: str
    offset: int
    kind: str
    width: int = 32
    signed: bool = False
    init: int = 0
    doc: str = field(default="", compare=False)
    fields: tuple[Field, ...] = field(default=(), compare=False)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"register kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if not 1 <= self.width <= 32:
            raise ValueError(f"register width must be in 1..32, got {self.width}")
        if self.offset % WORD_BYTES or self.offset < 0:
            raise ValueError(f"register offset must be a non-negative multiple of 4, got {self.offset:#x}")
        for f in self.fields:
            if f.bit < 0 or f.width < 1 or f.bit + f.width > self.width:
                raise ValueError(f"field {self.name}.{f.name} (bits {f.bit}+{f.width}) is outside {self.width} bits")

    def bits(self) -> dict[str, int]:
        """Field name -> its lowest bit, in declaration order."""
        return {f.name: f.bit for f in self.fields}

    def mask(self, name: str) -> int:
        """The mask of field ``name`` (``1 << bit`` for a one-bit field)."""
        for f in self.fields:
            if f.name == name:
                return f.mask
        raise ValueError(f"{self.name} has no field {name!r} (fields: {', '.join(self.bits())})")


class RegisterMap:
    """Builder of a tuple of ``Register``: offsets in declaration order, one word each, from 0."""

    def __init__(self):
        self._registers: list[Register] = []
        self._next = 0

    def skip_to(self, offset: int) -> RegisterMap:
        """The next register at ``offset`` (not below the next free word)."""
        if offset < self._next or offset % WORD_BYTES:
            raise ValueError(f"skip_to({offset:#x}): the next free word is {self._next:#x}")
        self._next = offset
        return self

    def add(self, name: str, kind: str, width: int = 32, doc: str = "", **kwargs) -> Register:
        """Place register ``name`` at the next free word (``kwargs``: ``signed``, ``init``, ``fields``)."""
        if any(r.name == name for r in self._registers):
            raise ValueError(f"register {name!r} declared twice")
        reg = Register(name, self._next, kind, width, doc=doc, **kwargs)
        self._registers.append(reg)
        self._next += WORD_BYTES
        return reg

    def array(self, name: str, count: int, kind: str, width: int = 32, doc: str = "", **kwargs) -> None:
        """``count`` registers ``name_0`` .. in consecutive words."""
        for i in range(count):
            self.add(f"{name}_{i}", kind, width, doc.replace("{i}", str(i)), **kwargs)

    @property
    def registers(self) -> tuple[Register, ...]:
        return tuple(self._registers)


def find(registers, name: str) -> Register:
    """The register called ``name`` (ValueError naming the choices)."""
    for r in registers:
        if r.name == name:
            return r
    raise ValueError(f"register must be one of {', '.join(r.name for r in registers)}, got {name!r}")


def register_dicts(registers) -> list[dict]:
    """The registers as the ``config.json`` files list them (name, offset, kind, width, signed)."""
    return [
        {"name": r.name, "offset": r.offset, "kind": r.kind, "width": r.width, "signed": r.signed} for r in registers
    ]


def c_comment(r: Register) -> str:
    """A register's C-header comment: ``kind, width bit[, signed]``."""
    return f"{r.kind}, {r.width} bit{', signed' if r.signed else ''}"
