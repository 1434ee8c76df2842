"""Sphinx extension: the engine top's register and window map, generated from ``BoardMap`` at build time.

``.. board-map::`` writes one table of the AXI4-Lite registers (offset, width, access, meaning: the meaning
is the register's doc line in ``pezo.golden.regs.engine``, the one place the contract is written), the
bit fields of CONTROL, STATUS and IRQ_ENABLE, the OP codes, and one table of the AXI4 windows per named
network (base, size, access, layout), as LiteX generates its CSR documentation from the SoC.
"""

from __future__ import annotations

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective


def register_meanings() -> dict[str, str]:
    """Register name -> meaning: the doc line of each register of ``pezo.golden.regs.engine`` (the tail's too)."""
    from pezo.golden.regs.engine import engine_registers

    return {r.name: r.doc for r in engine_registers(backprop=True)}


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for row in [header] + rows:
        lines.append("   * - " + row[0])
        lines += [f"     - {cell}" for cell in row[1:]]
    return lines + [""]


def _cell(text: str) -> str:
    return text.replace("|", r"\|").replace("*", r"\*")


def board_map_rst() -> list[str]:
    """The reST of the whole map."""
    from pezo.golden.engine.nets import NET_NAMES, net_config
    from pezo.golden.regs import engine as bm

    meanings = register_meanings()
    access = {"r": "read-only", "rw": "read/write", "cmd": "write-only (command)"}
    registers = bm.engine_registers()
    missing = sorted(r.name for r in registers if not meanings[r.name])
    if missing:
        raise ValueError(f"golden.regs.engine has no doc line for the registers {', '.join(missing)}")
    lines = [
        ".. rubric:: Registers",
        "",
        (
            f"AXI4-Lite, 32-bit, byte offsets from the register base ({bm.REGISTER_ADDR_BITS} address bits); "
            f"``ENGINE_MAP_VERSION`` = {bm.ENGINE_MAP_VERSION}."
        ),
        "",
    ]
    lines += _table(
        ["offset", "name", "width", "access", "meaning"],
        [
            [
                f"``0x{r.offset:02X}``",
                f"``{r.name}``",
                f"{r.width}{' signed' if r.signed else ''}",
                access[r.kind],
                _cell(meanings[r.name]),
            ]
            for r in registers
        ],
    )
    for title, bits in (
        ("CONTROL bits", bm.CONTROL_BITS),
        ("STATUS bits", bm.STATUS_BITS),
        ("IRQ_ENABLE bits", bm.IRQ_BITS),
    ):
        lines += [f".. rubric:: {title}", ""]
        lines += _table(["bit", "name"], [[str(bit), f"``{name}``"] for name, bit in bits.items()])
    lines += [".. rubric:: OP codes", ""]
    lines += _table(["code", "operation"], [[str(code), f"``{op}``"] for op, code in bm.OPS.items()])
    for net in NET_NAMES:
        if net_config(net).has_conv:  # conv nets have no RTL yet (issue 33): no board map
            continue
        board = bm.BoardMap(net_config(net))
        cfg = board.config
        lines += [
            f".. rubric:: Windows: {net}",
            "",
            (
                f"AXI4, {8 * bm.BEAT_BYTES}-bit data, {board.addr_width} address bits; "
                f"{cfg.array.rows}x{cfg.array.cols} array, batch {cfg.array.batch}, {cfg.stream.strategy}; "
                f"one slot of {board.slot} bytes per window."
            ),
            "",
        ]
        lines += _table(
            ["base", "size (bytes)", "access", "name", "layout"],
            [[f"``0x{w.base:05X}``", str(w.size), w.access, f"``{w.name}``", _cell(w.what)] for w in board.windows],
        )
    return lines


class BoardMapDirective(SphinxDirective):
    has_content = False

    def run(self):
        container = nodes.container()
        self.state.nested_parse(StringList(board_map_rst(), source="pezo.golden.regs.engine"), 0, container)
        return container.children


def setup(app):
    app.add_directive("board-map", BoardMapDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
