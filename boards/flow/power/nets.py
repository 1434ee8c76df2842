"""Net classification: Yosys names the driver of every RTL net bit of a unit.

``classify_nets`` / ``netlist``: Yosys (``proc; flatten; memory_collect``) gives each bit its class: ``FF``
(a flip-flop's Q), ``BRAM`` (read data of a block-RAM-style memory), ``LUT`` (any other logic), ``input``
(a top-level input), ``const`` (constant or undriven). Aliases (the same net under several names: ports,
``assign`` copies, Amaranth views) share one Yosys bit, so every physical net bit is counted once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pezo.boards.flow.synth import SynthesisError, run_yosys

BLOCK_STYLES = {"block", "bram", "ultra", "uram", "huge"}
"""``rom_style``/``ram_style`` values that put a memory in block RAM (``logic``, ``distributed``: fabric)."""
BRAM_MIN_BITS = 4096
"""A memory without a style attribute counts as block RAM from this size on (every pezo memory has one)."""
CLASSIFY_SCRIPT = "read_verilog -sv {src}; hierarchy -top {top}; proc; flatten; memory_collect; write_json netlist.json"
"""No optimisation at all: every VCD-visible RTL net keeps its name (even ``opt_clean`` drops flattened
``inst.$N`` aliases), and ``write_json`` maps aliases to one bit id. ``netlist`` finds the read ports'
output registers itself (``memory_dff`` needs ``opt_dff``, which removes the enable muxes' nets)."""


@dataclass
class Netlist:
    """Yosys's flattened view of the RTL: net bits (ints: shared ids for aliases; strings: constants),
    the class of each bit's driver, the memories' read ports and the multiplier outputs."""

    nets: dict[str, list]
    offsets: dict[str, int]
    classes: dict[int, str]
    memories: list[dict]
    dsp_bits: set[int]

    def bit_key(self, name: str, i: int) -> str:
        return name if len(self.nets[name]) == 1 else f"{name}[{self.offsets[name] + i}]"


def _param(value) -> int:
    if isinstance(value, int):
        return value
    text = str(value).strip()
    return int(text, 2) if text and set(text) <= {"0", "1"} else 0


def _param_bits(value, count: int) -> list[bool]:
    """A Yosys bit-vector parameter (MSB first) -> ``count`` booleans, LSB first."""
    if isinstance(value, int):
        return [bool(value >> i & 1) for i in range(count)]
    text = str(value).strip().rjust(count, "0")
    return [text[-1 - i] == "1" for i in range(count)]


def _is_ff(cell_type: str) -> bool:
    return cell_type.startswith("$") and any(k in cell_type for k in ("dff", "dlatch", "$ff", "$sr"))


def _memory_is_block(attributes: dict, bits: int) -> bool:
    style = str(attributes.get("rom_style") or attributes.get("ram_style") or "").strip().strip('"').lower()
    if style:
        return style in BLOCK_STYLES
    return bits >= BRAM_MIN_BITS


def _run_yosys_json(verilog: str, top: str) -> dict:
    try:
        return json.loads(
            run_yosys(
                verilog, CLASSIFY_SCRIPT.format(src="top.v", top=top), "netlist.json", prefix="power-yosys-", design=top
            )
        )
    except SynthesisError as exc:
        raise RuntimeError(f"Yosys failed to read {top}: {exc}") from None


def netlist(verilog: str, top: str) -> Netlist:
    """Run Yosys on the RTL and return the flattened ``Netlist`` (see ``classify_nets``).

    A synchronous read port reaches Yosys as an asynchronous read into a flip-flop (``proc`` makes the
    read enable a feedback mux in front of it): that flip-flop is the block RAM's output register, so
    its Q takes the memory's class and the mux's select is the port's read enable.
    """
    design = _run_yosys_json(verilog, top)
    module = design["modules"][top]
    cells = module.get("cells", {})
    classes: dict[int, str] = {}
    dsp_bits: set[int] = set()
    driver: dict[int, tuple[dict, str, int]] = {}  # bit -> (cell, output port, index in the port)
    for cell in cells.values():
        for port, direction in cell.get("port_directions", {}).items():
            if direction == "output":
                for i, bit in enumerate(cell["connections"].get(port, [])):
                    if isinstance(bit, int):
                        driver[bit] = (cell, port, i)

    memories: list[dict] = []
    read_data: dict[int, tuple[dict, int]] = {}  # async read data bit -> (port record, bit index)
    for cell_name, cell in cells.items():
        if cell["type"] not in ("$mem", "$mem_v2"):
            continue
        params, connections = cell.get("parameters", {}), cell["connections"]
        width, size = _param(params.get("WIDTH")), _param(params.get("SIZE"))
        ports = _param(params.get("RD_PORTS"))
        clocked = _param_bits(params.get("RD_CLK_ENABLE", 0), ports)
        data, enables = connections.get("RD_DATA", []), connections.get("RD_EN", [])
        memory = {
            "name": str(params.get("MEMID", cell_name)).lstrip("\\"),
            "block": _memory_is_block(cell.get("attributes", {}), width * size),
            "width": width,
            "depth": size,
            "read_ports": [],
        }
        for p in range(ports):
            record = {
                "data": data[p * width : (p + 1) * width],
                "clocked": clocked[p],
                "enable": enables[p] if p < len(enables) else "1",
                "enable_inverted": False,
                "registers": [],
            }
            memory["read_ports"].append(record)
            if not clocked[p]:
                for i, bit in enumerate(record["data"]):
                    if isinstance(bit, int):
                        read_data[bit] = (record, i)
        memories.append(memory)
    owner = {id(port): memory for memory in memories for port in memory["read_ports"]}

    for cell in cells.values():  # output registers of asynchronous reads (and their enables)
        if not _is_ff(cell["type"]) or "D" not in cell["connections"]:
            continue
        d_bits, q_bits = cell["connections"]["D"], cell["connections"]["Q"]
        for d, q in zip(d_bits, q_bits):
            if not isinstance(d, int) or not isinstance(q, int):
                continue
            if d in read_data:
                record, _ = read_data[d]
                if "EN" in cell["connections"]:
                    record["enable"] = cell["connections"]["EN"][0]
                    record["enable_inverted"] = not _param_bits(cell.get("parameters", {}).get("EN_POLARITY", 1), 1)[0]
                record["registers"].append(q)
                continue
            source = driver.get(d)
            if source is None or source[0]["type"] != "$mux":
                continue
            mux, _, i = source
            a, b = mux["connections"]["A"][i], mux["connections"]["B"][i]
            for data_bit, other, inverted in ((b, a, False), (a, b, True)):
                if other == q and data_bit in read_data:  # q <= sel ? data : q (or the inverse)
                    record, _ = read_data[data_bit]
                    record["enable"] = mux["connections"]["S"][0]
                    record["enable_inverted"] = inverted
                    record["registers"].append(q)
    for memory in memories:
        for record in memory["read_ports"]:
            if record["registers"]:
                record["clocked"] = True

    for port in module.get("ports", {}).values():
        if port["direction"] == "input":
            for bit in port["bits"]:
                if isinstance(bit, int):
                    classes[bit] = "input"
    registered = {q: owner[id(r)] for m in memories for r in m["read_ports"] for q in r["registers"]}
    for bit, (cell, _, _) in driver.items():
        if classes.get(bit) == "input":
            continue
        kind = cell["type"]
        if bit in registered:
            classes[bit] = "BRAM" if registered[bit]["block"] else "FF"
        elif kind in ("$mem", "$mem_v2", "$memrd", "$memrd_v2"):
            memory = owner.get(id(read_data[bit][0])) if bit in read_data else None
            if memory is None:  # a clocked port (or an unexpected cell): its data is the memory's
                classes[bit] = "BRAM"
            elif not memory["block"]:
                classes[bit] = "LUT"  # a fabric ROM's asynchronous read: LUTs
            elif read_data[bit][0]["registers"]:
                classes[bit] = "internal"  # inside the BRAM, before its output register
            else:
                classes[bit] = "BRAM"
        elif _is_ff(kind):
            classes[bit] = "FF"
        else:
            classes[bit] = "LUT"
            if kind in ("$mul", "$macc", "$macc_v2"):
                dsp_bits.add(bit)
    for memory in memories:
        for record in memory["read_ports"]:
            del record["registers"]
    nets, offsets = {}, {}
    for raw_name, info in module.get("netnames", {}).items():
        if info.get("hide_name"):
            continue
        name = raw_name[1:] if raw_name.startswith("\\") else raw_name
        nets[name] = info["bits"]
        offsets[name] = int(info.get("offset", 0))
    return Netlist(nets=nets, offsets=offsets, classes=classes, memories=memories, dsp_bits=dsp_bits)


def bit_class(net: Netlist, bit) -> str:
    if not isinstance(bit, int):
        return "const"
    return net.classes.get(bit, "const")  # undriven: never toggles in simulation


def classify_nets(verilog: str, top: str) -> dict[str, str]:
    """Class of every named RTL net bit of ``top``: key ``name[i]`` (``name`` for a 1-bit net), names as
    Yosys's ``flatten`` gives them (``urng.position0``: instance path, dot, wire; the same as the VCD
    scope path below ``dut`` plus the variable), value one of ``FF`` (Q of a $dff/$sdff/$dffe/$adff/...),
    ``BRAM`` (read data of a memory with rom_style/ram_style block, or unattributed and at least
    ``BRAM_MIN_BITS``; a synchronous port's data register is part of the BRAM), ``LUT`` (driven by any
    other cell, including a fabric ROM's asynchronous read; its clocked read register is ``FF``),
    ``input`` (a top-level input), ``const`` (constant or undriven) or ``internal`` (a block RAM's read
    data before its output register: a Yosys-only net, never in a VCD)."""
    net = netlist(verilog, top)
    out = {}
    for name, bits in net.nets.items():
        for i, bit in enumerate(bits):
            out[net.bit_key(name, i)] = bit_class(net, bit)
    return out
