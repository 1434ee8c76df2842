"""The network engine as the Zynq PS sees it: AXI4-Lite control/status registers and memory-mapped
windows on an AXI4 (burst) slave with 64-bit data, generated from a ``NetConfig``
(twin of ``hw.engine_top.EngineTop``; the host side is ``pezo.driver``).

**Registers** (AXI4-Lite, 32-bit, byte offsets; ``golden.host.Register`` kinds r / rw / cmd):

=====  ==============  ====  ===========================================================================
0x00   ID              r     0x50455A4F ("PEZO")
0x04   VERSION         r     ``ENGINE_MAP_VERSION`` (2: the engine map; 1 is the stream host's)
0x08   SHAPE           r     rows | cols << 8 | layers << 16 | strategy << 24 (0 otf, 1 pregen) | tail << 25
0x0C   BATCH           r     batch | outputs << 16
0x10   CONTROL         cmd   bit 0 START (op OP with STEPS, G, G_MODE, MARGIN, G_LR, G_SHIFT, WD_SHIFT, WD_EVERY),
                             bit 1 PUSH (the free bank holds a batch), bit 2 ACK_DONE, bit 3 ACK_STEP
                             (clear the pending interrupt bits), bit 4 CLEAR_ERROR
0x14   STATUS          r     bit 0 BUSY, 1 DONE, 2 LOAD_READY, 3 LOAD_BANK, 4..5 QUEUED, 6 ERROR (sticky:
                             a batch write was refused), 7 LAST_BANK (logit bank of the last forward),
                             8 IRQ_DONE, 9 IRQ_STEP (pending)
0x18   OP              rw    0 FORWARD_ZO, 1 UPDATE, 2 INFER, 3 TRAIN
0x1C   STEPS           rw    TRAIN: steps, 16 bit
0x20   G               rw    host g, signed Q8.16, 24 bit
0x24   G_MODE          rw    0 host, 1 sign, 2 scaled
0x28   MARGIN          rw    hinge margin, 23 bit
0x2C   G_LR            rw    sign mode's |g|, signed Q8.16, 24 bit
0x30   G_SHIFT         rw    scaled mode's shift, 6 bit
0x34   REQUANT_SHIFT   rw    shift of the requantised logits (the logit window's high word), 5 bit
0x38   IRQ_ENABLE      rw    bit 0 DONE, bit 1 STEP: ``irq`` = |(pending & enable)
0x3C   STEPS_DONE      r     steps finished by the current/last TRAIN, 16 bit
0x40   LOSS_PLUS_LO    r     loss L+ of the last forward, bits 0..31 (48 bit unsigned)
0x44   LOSS_PLUS_HI    r     bits 32..47
0x48   LOSS_MINUS_LO   r     L-, bits 0..31
0x4C   LOSS_MINUS_HI   r     bits 32..47
0x50   G_USED          r     g of the last update, signed 24 bit
0x54   CYCLES          r     busy cycles of the current/last operation
0x58   WAIT_CYCLES     r     cycles it waited for a batch
0x5C   WD_SHIFT        rw    the update's weight decay ``w -= round_shift(w, WD_SHIFT)``, 3 bit (0 = off)
0x60   WD_EVERY        rw    the decay acts on every WD_EVERY-th update since reset (the engine's decay
                             counter, ``golden.engine.network``), 8 bit; 0 and 1 = every update
=====  ==============  ====  ===========================================================================

With the backprop tail (``NetConfig.backprop``; SHAPE bit 25 reads 1) three more (``golden.engine.backprop``):

=====  ==============  ====  ===========================================================================
0x64   SPLIT           rw    TRAIN's partition C: layers 1..C by ZO, C+1..L by backprop; L = full ZO, 0 = full
                             backprop (a value above L runs full ZO), 4 bit
0x68   BP_BITS         rw    the tail's update bits b_BP (1..7; its learning rate), 3 bit
0x6C   BP_CYCLES       r     cycles the current/last TRAIN spent in the tail
=====  ==============  ====  ===========================================================================

**Windows** (AXI4, 64-bit data, INCR or FIXED bursts of any size <= 8 bytes; one slot of ``slot`` bytes
each, window ``i`` at ``i * slot``; 8-byte "entries" are one beat):

* ``weights`` (rw, idle only): global weight i (int8, ``golden.engine.network`` order) at byte i.
* ``x`` (w): the batch being loaded into the free bank: byte k of example b at ``b * x_stride + k``, ``x_bytes``
  bytes per example -- what the batch memory holds (``golden.engine.network.batch_words``): the example's
  inputs for a dense layer 0 (``x_bytes`` = inputs), its im2col'd patches for a conv layer 0 (``x_bytes`` =
  ``NetConfig.input_words`` * cols; ``golden.engine.conv.batch_patches``: ``conv0`` in ``to_dict`` and the
  ``PEZO_CONV0_*`` defines of the C header give the geometry a host needs to build them).
* ``labels`` (w): label of example b in the low byte of entry b.
* ``biases`` (w, idle only, nets with a bias): the int32 bias of global output o in the low word of entry o.
* ``logits`` (r): entry ``((bank * 2 + pass) * example_stride + b) * output_stride + o``: the int32 logit in
  the low word, its requantisation by REQUANT_SHIFT (int8, sign-extended) in the high word. A row's
  padding (o >= outputs) reads 0, so one burst reads the rows of a pass; examples >= batch are unmapped.
* ``steps`` (r): the step log, ``STEP_LOG_DEPTH`` records of 4 entries, record ``k % depth`` for the k-th
  step (0-based) of a TRAIN: L+ (u48), L- (u48), g (sign-extended), logit bank.

Weight and x words are the engine's words of ``cols`` int8: a word is written when the byte of its last
lane is written (in the beat that carries it); its other bytes are those written since the previous word
was written (zero when not written). So write whole words, in address order (a burst or memcpy does).

**Responses**: OKAY, or SLVERR for an address in no window or in a window's padding, a read of a
write-only window, a write to a read-only one, weights or biases while BUSY, and a batch (x, labels)
write while no bank is free (LOAD_READY = 0; the write is dropped and STATUS.ERROR set, never into the
bank in use). A burst's response is SLVERR if any beat's is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pezo.golden.engine.network import NetConfig
from pezo.golden.host import HOST_ID, Register

ENGINE_MAP_VERSION = 2
BEAT_BYTES = 8
REGISTER_ADDR_BITS = 12
STEP_LOG_DEPTH = 64
STEP_RECORD_ENTRIES = 4
STRATEGY_CODES = {"otf": 0, "pregen": 1}
OPS = {"forward_zo": 0, "update": 1, "infer": 2, "train": 3}
CONTROL_BITS = {"START": 0, "PUSH": 1, "ACK_DONE": 2, "ACK_STEP": 3, "CLEAR_ERROR": 4}
STATUS_BITS = {
    "BUSY": 0,
    "DONE": 1,
    "LOAD_READY": 2,
    "LOAD_BANK": 3,
    "QUEUED": 4,
    "ERROR": 6,
    "LAST_BANK": 7,
    "IRQ_DONE": 8,
    "IRQ_STEP": 9,
}
IRQ_BITS = {"DONE": 0, "STEP": 1}
WINDOW_NAMES = ("weights", "x", "labels", "biases", "logits", "steps")


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


TAIL_REGISTERS = (
    Register("SPLIT", 0x64, "rw", 4),
    Register("BP_BITS", 0x68, "rw", 3),
    Register("BP_CYCLES", 0x6C, "r"),
)
"""The backprop tail's registers (an engine generated with ``NetConfig.backprop``)."""


def engine_registers(backprop: bool = False) -> tuple[Register, ...]:
    """The AXI4-Lite registers (module docstring); the same for every ``NetConfig`` but the tail's three."""
    return (
        Register("ID", 0x00, "r"),
        Register("VERSION", 0x04, "r"),
        Register("SHAPE", 0x08, "r"),
        Register("BATCH", 0x0C, "r"),
        Register("CONTROL", 0x10, "cmd", 5),
        Register("STATUS", 0x14, "r", 10),
        Register("OP", 0x18, "rw", 2),
        Register("STEPS", 0x1C, "rw", 16),
        Register("G", 0x20, "rw", 24, True),
        Register("G_MODE", 0x24, "rw", 2),
        Register("MARGIN", 0x28, "rw", 23),
        Register("G_LR", 0x2C, "rw", 24, True),
        Register("G_SHIFT", 0x30, "rw", 6),
        Register("REQUANT_SHIFT", 0x34, "rw", 5),
        Register("IRQ_ENABLE", 0x38, "rw", 2),
        Register("STEPS_DONE", 0x3C, "r", 16),
        Register("LOSS_PLUS_LO", 0x40, "r"),
        Register("LOSS_PLUS_HI", 0x44, "r", 16),
        Register("LOSS_MINUS_LO", 0x48, "r"),
        Register("LOSS_MINUS_HI", 0x4C, "r", 16),
        Register("G_USED", 0x50, "r", 24, True),
        Register("CYCLES", 0x54, "r"),
        Register("WAIT_CYCLES", 0x58, "r"),
        Register("WD_SHIFT", 0x5C, "rw", 3),
        Register("WD_EVERY", 0x60, "rw", 8),
    ) + (TAIL_REGISTERS if backprop else ())


@dataclass(frozen=True)
class Window:
    """One memory-mapped window: ``base`` and ``size`` (mapped bytes; the slot behind it is padding) in
    the AXI4 slave's address space, ``access`` r / w / rw, ``what`` its layout in words."""

    name: str
    base: int
    size: int
    access: str
    what: str


def check_board_config(config: NetConfig) -> NetConfig:
    """The board top's own limits on a ``NetConfig`` (one ValueError naming the field)."""
    if not isinstance(config, NetConfig):
        raise ValueError(f"config must be a NetConfig, got {type(config).__name__}")
    if config.array.cols < BEAT_BYTES or config.array.cols & (config.array.cols - 1):
        raise ValueError(
            f"cols must be a power of two >= {BEAT_BYTES} for the board top (a 64-bit AXI beat "
            f"carries 8 int8 lanes of one engine word), got {config.array.cols}"
        )
    if config.stream.strategy not in STRATEGY_CODES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGY_CODES)}, got {config.stream.strategy!r}")
    return config


@dataclass(frozen=True)
class BoardMap:
    """The register and window map of the engine top for ``config`` (module docstring)."""

    config: NetConfig

    def __post_init__(self):
        check_board_config(self.config)

    # -- shapes ------------------------------------------------------------------------------------
    @property
    def registers(self) -> tuple[Register, ...]:
        return engine_registers(self.config.backprop)

    def register(self, name: str) -> int:
        for r in self.registers:
            if r.name == name:
                return r.offset
        raise ValueError(f"register must be one of {', '.join(r.name for r in self.registers)}, got {name!r}")

    @property
    def x_bytes(self) -> int:
        """Bytes of one example in the x window: the batch memory's ``input_words`` words of ``cols`` lanes (a
        dense layer 0's inputs; a conv layer 0's im2col'd patches)."""
        return self.config.input_words * self.config.array.cols

    @property
    def x_stride(self) -> int:
        """Bytes between two examples of the x window (``x_bytes`` rounded up to a power of two)."""
        return _pow2(self.x_bytes)

    @property
    def conv0(self):
        """Layer 0 if it is a convolution (the host writes its patches), else None."""
        first = self.config.layers[0]
        return first if first.kind == "conv" else None

    @property
    def example_stride(self) -> int:
        return _pow2(self.config.array.batch)

    @property
    def output_stride(self) -> int:
        return _pow2(self.config.outputs)

    @property
    def has_bias(self) -> bool:
        return any(l.bias for l in self.config.layers)

    def _sizes(self) -> dict[str, int]:
        cfg = self.config
        return {
            "weights": cfg.memory_words * cfg.array.cols,
            "x": (cfg.array.batch - 1) * self.x_stride + self.x_bytes,
            "labels": cfg.array.batch * BEAT_BYTES,
            "biases": cfg.total_outputs * BEAT_BYTES if self.has_bias else 0,
            "logits": 4 * self.example_stride * self.output_stride * BEAT_BYTES,
            "steps": STEP_LOG_DEPTH * STEP_RECORD_ENTRIES * BEAT_BYTES,
        }

    @property
    def slot_bits(self) -> int:
        """log2 of the slot each window occupies (at least 4 KiB: an AXI burst never crosses 4 KiB)."""
        return max(12, _pow2(max(self._sizes().values())).bit_length() - 1)

    @property
    def slot(self) -> int:
        return 1 << self.slot_bits

    @property
    def addr_width(self) -> int:
        """Byte-address bits of the AXI4 slave: 8 slots."""
        return self.slot_bits + 3

    @property
    def windows(self) -> tuple[Window, ...]:
        sizes, access = (
            self._sizes(),
            {"weights": "rw", "x": "w", "labels": "w", "biases": "w", "logits": "r", "steps": "r"},
        )
        what = {
            "weights": "int8 weight i at byte i (global order); idle only",
            "x": f"int8 input k of example b at b*{self.x_stride} + k (the free bank)"
            if self.conv0 is None
            else f"int8 patch byte k (0..{self.x_bytes - 1}: layer 0's im2col'd patches, {self.conv0.pixels} "
            f"pixels x {self.conv0.row_length(self.config.array.cols)} lanes) of example b at b*{self.x_stride} + k "
            "(the free bank)",
            "labels": "label of example b in the low byte of entry b (the free bank)",
            "biases": "int32 bias of global output o in the low word of entry o; idle only",
            "logits": f"entry ((bank*2+pass)*{self.example_stride}+b)*{self.output_stride}+o: int32 logit "
            "(low word), requantised int8 (high word)",
            "steps": f"record k % {STEP_LOG_DEPTH} (4 entries): L+, L-, g, logit bank",
        }
        return tuple(Window(n, i * self.slot, sizes[n], access[n], what[n]) for i, n in enumerate(WINDOW_NAMES))

    def window(self, name: str) -> Window:
        for w in self.windows:
            if w.name == name:
                return w
        raise ValueError(f"window must be one of {', '.join(WINDOW_NAMES)}, got {name!r}")

    # -- addresses -----------------------------------------------------------------------------------
    def x_offset(self, example: int) -> int:
        return self.window("x").base + example * self.x_stride

    def label_offset(self, example: int) -> int:
        return self.window("labels").base + example * BEAT_BYTES

    def bias_offset(self, output: int) -> int:
        return self.window("biases").base + output * BEAT_BYTES

    def logit_offset(self, bank: int, pas: int, example: int, output: int = 0) -> int:
        entry = ((bank * 2 + pas) * self.example_stride + example) * self.output_stride + output
        return self.window("logits").base + entry * BEAT_BYTES

    def step_offset(self, step: int) -> int:
        return self.window("steps").base + (step % STEP_LOG_DEPTH) * STEP_RECORD_ENTRIES * BEAT_BYTES

    # -- identification ------------------------------------------------------------------------------
    def shape_word(self) -> int:
        cfg = self.config
        shape = cfg.array.rows | cfg.array.cols << 8 | len(cfg.layers) << 16
        return shape | STRATEGY_CODES[cfg.stream.strategy] << 24 | int(cfg.backprop) << 25

    def batch_word(self) -> int:
        return self.config.array.batch | self.config.outputs << 16

    # -- descriptions --------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "version": ENGINE_MAP_VERSION,
            "id": HOST_ID,
            "net": self.config.name,
            "config": self.config.to_dict(),
            "axil_addr_width": REGISTER_ADDR_BITS,
            "axi_addr_width": self.addr_width,
            "axi_data_bits": 8 * BEAT_BYTES,
            "slot": self.slot,
            "registers": [
                {"name": r.name, "offset": r.offset, "kind": r.kind, "width": r.width, "signed": r.signed}
                for r in self.registers
            ],
            "control_bits": CONTROL_BITS,
            "status_bits": STATUS_BITS,
            "irq_bits": IRQ_BITS,
            "ops": OPS,
            "windows": [
                {"name": w.name, "base": w.base, "size": w.size, "access": w.access, "what": w.what}
                for w in self.windows
            ],
            "x_stride": self.x_stride,
            "x_bytes": self.x_bytes,
            "x_layout": "inputs" if self.conv0 is None else "patches",
            "conv0": None if self.conv0 is None else self._conv0_geometry(),
            "example_stride": self.example_stride,
            "output_stride": self.output_stride,
            "step_log_depth": STEP_LOG_DEPTH,
        }

    def _conv0_geometry(self) -> dict:
        """What a host needs to im2col a conv layer 0's input (``golden.engine.conv``: patch lane (ky, kx, ci),
        pixels row-major, zero padding; each patch padded with zero lanes to ``row_length``)."""
        layer = self.conv0
        return {
            "in_channels": layer.in_channels,
            "height": layer.height,
            "width": layer.width,
            "kernel": layer.kernel,
            "stride": layer.stride,
            "padding": layer.padding,
            "conv_height": layer.conv_height,
            "conv_width": layer.conv_width,
            "patch": layer.patch,
            "row_length": layer.row_length(self.config.array.cols),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def c_header(self) -> str:
        """``pezo_regs.h``-style C header: register offsets (from the AXI4-Lite base), bit masks, window
        offsets and sizes (from the AXI4 base), strides."""
        cfg, lines = self.config, []
        lines += [
            "/* Generated by pezo (golden.board_map) -- the network engine's register/window map. */",
            f"/* net {cfg.name}: {' / '.join(l.describe() for l in cfg.layers)}; "
            f"{cfg.array.rows}x{cfg.array.cols} array, batch {cfg.array.batch}, {cfg.stream.strategy} */",
            "#ifndef PEZO_ENGINE_REGS_H",
            "#define PEZO_ENGINE_REGS_H",
            "",
            f"#define PEZO_ID 0x{HOST_ID:08X}u",
            f"#define PEZO_ENGINE_MAP_VERSION {ENGINE_MAP_VERSION}u",
            "",
            "/* AXI4-Lite registers: byte offsets, 32-bit access */",
        ]
        lines += [
            f"#define PEZO_REG_{r.name:<16} 0x{r.offset:03X}u  /* {r.kind}, {r.width} bit"
            f"{', signed' if r.signed else ''} */"
            for r in self.registers
        ]
        for group, bits in (("CONTROL", CONTROL_BITS), ("STATUS", STATUS_BITS), ("IRQ", IRQ_BITS)):
            lines.append("")
            lines += [f"#define PEZO_{group}_{name:<12} (1u << {bit})" for name, bit in bits.items()]
        lines.append("#define PEZO_STATUS_QUEUED_MASK   (3u << 4)")
        lines.append("")
        lines += [f"#define PEZO_OP_{name.upper():<12} {code}u" for name, code in OPS.items()]
        lines += [
            "",
            f"/* AXI4 windows (64-bit data, bursts): byte offsets from the AXI4 base; {self.addr_width} "
            "address bits */",
        ]
        for w in self.windows:
            lines.append(f"#define PEZO_WIN_{w.name.upper():<8} 0x{w.base:08X}u  /* {w.access}: {w.what} */")
            lines.append(f"#define PEZO_WIN_{w.name.upper()}_SIZE 0x{w.size:08X}u")
        lines += [
            "",
            f"#define PEZO_X_STRIDE {self.x_stride}u",
            f"#define PEZO_EXAMPLE_STRIDE {self.example_stride}u",
            f"#define PEZO_OUTPUT_STRIDE {self.output_stride}u",
            f"#define PEZO_STEP_LOG_DEPTH {STEP_LOG_DEPTH}u",
            f"#define PEZO_BATCH {cfg.array.batch}u",
            f"#define PEZO_INPUTS {cfg.inputs}u",
            f"#define PEZO_X_BYTES {self.x_bytes}u  /* bytes of one example in the x window */",
            f"#define PEZO_OUTPUTS {cfg.outputs}u",
            f"#define PEZO_WEIGHTS {cfg.weights}u",
            f"#define PEZO_COLS {cfg.array.cols}u",
        ]
        if self.conv0 is not None:
            lines += [
                "/* layer 0 is a convolution: the x window takes its im2col'd patches. Output pixel p (row-major) at",
                " * bytes p * ROW_LENGTH .. of an example; lane (ky * KERNEL + kx) * IN_CHANNELS + ci holds input",
                " * (ci, p / CONV_WIDTH * STRIDE - PADDING + ky, p % CONV_WIDTH * STRIDE - PADDING + kx) of the",
                " * channel-major [c, y, x] example, 0 outside the image and in lanes >= PATCH. */",
            ]
            lines += [f"#define PEZO_CONV0_{k.upper()} {v}u" for k, v in self._conv0_geometry().items()]
        lines += [
            "/* logit entry (bank, pass, example, output) */",
            "#define PEZO_LOGIT_OFFSET(bank, pass, b, o) (PEZO_WIN_LOGITS + 8u * ((((bank) * 2u + (pass)) * "
            "PEZO_EXAMPLE_STRIDE + (b)) * PEZO_OUTPUT_STRIDE + (o)))",
            "",
            "#endif /* PEZO_ENGINE_REGS_H */",
            "",
        ]
        return "\n".join(lines)
