"""The simulation netlist: Amaranth's Verilog without the wires nothing reads.

Amaranth names every field of a ``data.View`` (``lanes[0]`` ... ``lanes[31]``) and every flattened submodule
port (``lanes$17``) with a wire of its own, assigned from the bits it aliases. Nothing inside the design reads
them. Verilator optimises them away; Icarus evaluates them, and a wide alias built from single bits is a tree of
concatenations that re-copies the whole vector whenever one bit changes: on the 32-lane perturbation stream,
these wires were three quarters of ``vvp``'s time.

``drop_unread_wires`` removes, per module and until nothing more goes, each ``assign`` to a wire that is not a
port and that no other statement of the module reads (together with the wire's declaration). What remains
computes the same port values cycle for cycle: a removed wire drove nothing.
"""

from __future__ import annotations

import re

_IDENTIFIER = re.compile(r"\\\S+|[A-Za-z_][A-Za-z0-9_$]*")  # escaped identifiers end at whitespace
_ASSIGN = re.compile(r"^\s*assign (\\\S+|[A-Za-z_][A-Za-z0-9_$]*)\s*=.*;\s*$")  # a whole wire, one line
_ATTRIBUTE = re.compile(r"^\s*\(\*.*\*\)\s*$")  # Yosys writes a statement's attributes on lines before it
_DECLARATION = re.compile(r"^\s*(wire|reg|input|output|inout)\b[^;]*;\s*$")


def drop_unread_wires(verilog: str) -> str:
    """``verilog`` (Yosys ``write_verilog`` text, one statement per line) without the unread wires (module
    docstring). Conservative: any identifier anywhere outside an assignment's left side counts as a read."""
    out, module = [], []
    for line in verilog.split("\n"):
        module.append(line)
        if line.startswith("endmodule"):
            out += _prune_module(module)
            module = []
    return "\n".join(out + module)


def _prune_module(lines: list[str]) -> list[str]:
    while True:
        kinds, reads = {}, set()
        for line in lines:
            declaration = _DECLARATION.match(line)
            if declaration:
                kinds.setdefault(_declared(line), set()).add(declaration.group(1))
                continue
            assign = _ASSIGN.match(line)
            reads.update(_IDENTIFIER.findall(line[line.index("=") + 1 :] if assign else line))
        unread = {
            name
            for name in (m.group(1) for m in map(_ASSIGN.match, lines) if m)
            if kinds.get(name) == {"wire"} and name not in reads
        }
        if not unread:
            return lines
        kept = []
        for line in lines:
            if _declares_or_assigns(line, unread):
                while kept and _ATTRIBUTE.match(kept[-1]):  # the removed statement's own attributes
                    kept.pop()
            else:
                kept.append(line)
        lines = kept


def _declares_or_assigns(line: str, names: set[str]) -> bool:
    assign = _ASSIGN.match(line)
    if assign:
        return assign.group(1) in names
    declaration = _DECLARATION.match(line)
    return bool(declaration) and declaration.group(1) == "wire" and _declared(line) in names


def _declared(line: str) -> str:
    """The name a declaration line declares (the last identifier before an initialiser)."""
    return _IDENTIFIER.findall(line.split(" = ")[0])[-1]
