"""The network engine as the Zynq PS sees it: AXI4-Lite control/status registers and memory-mapped
windows on an AXI4 (burst) slave with 64-bit data, generated from a ``NetConfig``
(twin of ``hw.engine_top.EngineTop``; the host side is ``pezo.driver``).

**Registers** (AXI4-Lite, 32-bit, byte offsets): ``golden.regs.engine_regs`` (re-exported here), declared once with
their access, width, doc line and bit fields; ``golden.regs.header`` writes the C header.

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
from pezo.golden.regs.engine_regs import (
    BEAT_BYTES,
    CONTROL_BITS,
    ENGINE_MAP_VERSION,
    IRQ_BITS,
    KIND_FIELD_BITS,
    KIND_SHIFT,
    OPS,
    REGISTER_ADDR_BITS,
    STATUS_BITS,
    STEP_LOG_DEPTH,
    STEP_RECORD_ENTRIES,
    STRATEGY_CODES,
    TAIL_REGISTERS,
    WINDOW_NAMES,
    describe_kinds,
    engine_registers,
    kind_bits,
)
from pezo.golden.regs.spec import Register, find, register_dicts
from pezo.golden.regs.stream import HOST_ID

__all__ = [  # the register side, re-exported: one import for the map's users
    "BEAT_BYTES",
    "CONTROL_BITS",
    "ENGINE_MAP_VERSION",
    "IRQ_BITS",
    "KIND_FIELD_BITS",
    "KIND_SHIFT",
    "OPS",
    "REGISTER_ADDR_BITS",
    "STATUS_BITS",
    "STEP_LOG_DEPTH",
    "STEP_RECORD_ENTRIES",
    "STRATEGY_CODES",
    "TAIL_REGISTERS",
    "WINDOW_NAMES",
    "describe_kinds",
    "engine_registers",
    "kind_bits",
    "BoardMap",
    "Window",
    "check_board_config",
]


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


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
        return find(self.registers, name).offset

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
        shape |= STRATEGY_CODES[cfg.stream.strategy] << 24 | int(cfg.backprop) << 25
        return shape | kind_bits(cfg) << KIND_SHIFT

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
            "registers": register_dicts(self.registers),
            "control_bits": CONTROL_BITS,
            "status_bits": STATUS_BITS,
            "irq_bits": IRQ_BITS,
            "ops": OPS,
            "windows": [
                {"name": w.name, "base": w.base, "size": w.size, "access": w.access, "what": w.what}
                for w in self.windows
            ],
            "shape": self.shape_word(),
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
        """``pezo_regs.h``-style C header (``golden.regs.header.engine_header``)."""
        from pezo.golden.regs.header import engine_header

        return engine_header(self)
