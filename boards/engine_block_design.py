"""Vivado block design of the engine top (``pezo.hw.engine_top``): the ZCU102's Zynq UltraScale+ PS with two
masters behind HPM0 FPD -- the AXI4-Lite register port and the AXI4 (burst, 64-bit) window port -- and
the engine's ``irq`` on ``pl_ps_irq0``. Same flow and conventions as ``pezo.boards.ps_block_design``
(read its docstring: no board preset, 128-bit HPM0, global synthesis, remote BD under ./bd, wrapper
added with ``make_wrapper``); what differs:

* PS: ``PSU__USE__IRQ0 1`` (``pl_ps_irq0``, one PL-to-PS interrupt line; GIC SPI 121 on ZynqMP,
  ``interrupts = <0 89 4>`` in a device tree: PL_PS_IRQ0[0] is IRQ 121 = SPI 89). Everything else as
  ``ps_block_design.PS_PROPERTIES``.
* ``axi_interconnect`` with NUM_SI 1, NUM_MI 2: M00 -> ``M_AXIL`` (AXI4-Lite, 32-bit, 4 KiB at
  ``regs_base``), M01 -> ``M_AXI`` (AXI4, 64-bit data, ``id_bits`` IDs, no QOS/REGION, ``2^addr_width``
  bytes at ``windows_base``). The interconnect converts 128 -> 32 and 128 -> 64 bits and AXI4 -> Lite.
* Ports: ``aclk`` (ASSOCIATED_BUSIF both AXI ports), ``aresetn``, ``irq`` (input, type intr, level high).

UNTESTED HERE (no Vivado): checked by running the Tcl against stand-in Vivado commands. The M01 pin
names and the AXI4 port signals follow the ``axi_interconnect`` (PG059) and exported-port conventions
the stream design uses; run one real build before relying on it.
"""

from __future__ import annotations

from pezo.boards.ps_block_design import (
    AXI4LITE_SIGNALS,
    AXIL_DATA_WIDTH,
    AXIMM_VLNV,
    BD_SUBDIR,
    HPM0_FPD_WINDOW,
    INTERCONNECT_CELL,
    INTERCONNECT_VLNV,
    PS_CELL,
    PS_PROPERTIES,
    PS_VLNV,
    RESET_CELL,
    RESET_VLNV,
    WrapperPort,
    WrapperPorts,
    _range_text,
)

NAME = "pezo_engine_ps"
AXIL_PORT, AXI_PORT, CLOCK_PORT, RESET_PORT, IRQ_PORT = "M_AXIL", "M_AXI", "aclk", "aresetn", "irq"
AXI_DATA_WIDTH = 64
REGS_RANGE = 4096
ENGINE_PS_PROPERTIES = tuple((k, "1") if k == "PSU__USE__IRQ0" else (k, v) for k, v in PS_PROPERTIES)

# The signals of an exported AXI4 master port (wrapper side: "o" = wrapper output); width None = ADDR_WIDTH,
# "id" = ID_WIDTH. QOS and REGION are off (HAS_QOS 0, HAS_REGION 0).
AXI4_SIGNALS = tuple(
    [
        (f"{ch}{s}", "o", w)
        for ch in ("aw",)
        for s, w in (
            ("id", "id"),
            ("addr", None),
            ("len", 8),
            ("size", 3),
            ("burst", 2),
            ("lock", 1),
            ("cache", 4),
            ("prot", 3),
            ("valid", 1),
        )
    ]
    + [
        ("awready", "i", 1),
        ("wdata", "o", AXI_DATA_WIDTH),
        ("wstrb", "o", AXI_DATA_WIDTH // 8),
        ("wlast", "o", 1),
        ("wvalid", "o", 1),
        ("wready", "i", 1),
        ("bid", "i", "id"),
        ("bresp", "i", 2),
        ("bvalid", "i", 1),
        ("bready", "o", 1),
    ]
    + [
        (f"ar{s}", "o", w)
        for s, w in (
            ("id", "id"),
            ("addr", None),
            ("len", 8),
            ("size", 3),
            ("burst", 2),
            ("lock", 1),
            ("cache", 4),
            ("prot", 3),
            ("valid", 1),
        )
    ]
    + [
        ("arready", "i", 1),
        ("rid", "i", "id"),
        ("rdata", "i", AXI_DATA_WIDTH),
        ("rresp", "i", 2),
        ("rlast", "i", 1),
        ("rvalid", "i", 1),
        ("rready", "o", 1),
    ]
)


def _check_widths(addr_width: int, id_bits: int) -> None:
    if isinstance(addr_width, bool) or not isinstance(addr_width, int) or not 12 <= addr_width <= 27:
        raise ValueError(
            f"addr_width must be in 12..27 (the windows and the registers share the 256 MB HPM0 "
            f"FPD window), got {addr_width!r}"
        )
    if isinstance(id_bits, bool) or not isinstance(id_bits, int) or not 1 <= id_bits <= 32:
        raise ValueError(f"id_bits must be in 1..32, got {id_bits!r}")


def _check(addr_width: int, id_bits: int, regs_base: int, windows_base: int, clock_hz: int) -> None:
    _check_widths(addr_width, id_bits)
    for name, base, size in (("regs_base", regs_base, REGS_RANGE), ("windows_base", windows_base, 1 << addr_width)):
        if (
            isinstance(base, bool)
            or not isinstance(base, int)
            or base % size
            or not HPM0_FPD_WINDOW[0] <= base <= HPM0_FPD_WINDOW[1] - size
        ):
            raise ValueError(
                f"{name} must be a multiple of {size:#x} inside the HPM0 FPD window "
                f"{HPM0_FPD_WINDOW[0]:#x}..{HPM0_FPD_WINDOW[1]:#x}, got {base!r}"
            )
    if not (regs_base + REGS_RANGE <= windows_base or windows_base + (1 << addr_width) <= regs_base):
        raise ValueError(f"regs_base {regs_base:#x} and windows_base {windows_base:#x} overlap")
    if isinstance(clock_hz, bool) or not isinstance(clock_hz, int) or not 1_000_000 <= clock_hz <= 500_000_000:
        raise ValueError(f"clock_hz must be in 1000000..500000000, got {clock_hz!r}")


def default_windows_base(addr_width: int, regs_base: int = 0xA000_0000) -> int:
    """The first multiple of the window port's range after the register page."""
    size = 1 << addr_width
    return -(-(regs_base + REGS_RANGE) // size) * size


def engine_wrapper_ports(addr_width: int, id_bits: int = 16) -> WrapperPorts:
    """The wrapper ``engine_block_design_tcl`` makes Vivado write (``pezo_engine_ps_wrapper``)."""
    _check_widths(addr_width, id_bits)
    ports = [
        WrapperPort(CLOCK_PORT, "i", 1, "clock"),
        WrapperPort(RESET_PORT, "o", 1, "resetn"),
        WrapperPort(IRQ_PORT, "i", 1, "irq"),
    ]
    for suffix, direction, width in AXI4LITE_SIGNALS:
        ports.append(WrapperPort(f"{AXIL_PORT}_{suffix}", direction, 12 if width is None else width, f"axil.{suffix}"))
    for suffix, direction, width in AXI4_SIGNALS:
        w = addr_width if width is None else id_bits if width == "id" else width
        ports.append(WrapperPort(f"{AXI_PORT}_{suffix}", direction, w, f"axi.{suffix}"))
    return WrapperPorts(f"{NAME}_wrapper", tuple(sorted(ports, key=lambda p: p.name)))


def engine_block_design_tcl(
    addr_width: int,
    id_bits: int = 16,
    regs_base: int = 0xA000_0000,
    windows_base: int | None = None,
    clock_hz: int = 125_000_000,
) -> str:
    """Tcl for Amaranth's ``script_after_read``: block design ``pezo_engine_ps`` and its wrapper. The
    window port sits at ``windows_base`` (default: the first multiple of its range after the registers).
    Bad arguments raise one ``ValueError`` naming the parameter."""
    _check_widths(addr_width, id_bits)
    if windows_base is None:
        windows_base = default_windows_base(addr_width, regs_base)
    _check(addr_width, id_bits, regs_base, windows_base, clock_hz)
    ps, ic, rst = PS_CELL, INTERCONNECT_CELL, RESET_CELL
    ps_props = " \\\n".join(f"    CONFIG.{key} {{{value}}}" for key, value in ENGINE_PS_PROPERTIES)
    clock_pins = " ".join(f"[get_bd_pins {ic}/{p}]" for p in ("ACLK", "S00_ACLK", "M00_ACLK", "M01_ACLK"))
    reset_pins = " ".join(f"[get_bd_pins {ic}/{p}]" for p in ("ARESETN", "S00_ARESETN", "M00_ARESETN", "M01_ARESETN"))
    lines = [
        f"# ---- pezo: engine top block design {NAME} (boards/engine_block_design.py) ----",
        "# Board preset: none. Untested without Vivado; see the module docstring.",
        "set_property target_language Verilog [current_project]",
        f"set pezo_bd_root [file normalize {BD_SUBDIR}]",
        f"file delete -force [file join $pezo_bd_root {NAME}]",
        f"create_bd_design -dir $pezo_bd_root {NAME}",
        f"current_bd_design {NAME}",
        "",
        "# PS: M_AXI_HPM0_FPD (128-bit), pl_resetn0, pl_ps_irq0",
        f"set pezo_ps [create_bd_cell -type ip -vlnv {PS_VLNV} {ps}]",
        f"set_property -dict [list \\\n{ps_props} \\\n] $pezo_ps",
        "",
        "# HPM0 -> M00 (AXI4-Lite registers) and M01 (AXI4 64-bit windows)",
        f"set pezo_ic [create_bd_cell -type ip -vlnv {INTERCONNECT_VLNV} {ic}]",
        "set_property -dict [list CONFIG.NUM_SI {1} CONFIG.NUM_MI {2}] $pezo_ic",
        f"set pezo_rst [create_bd_cell -type ip -vlnv {RESET_VLNV} {rst}]",
        "",
        "# External ports",
        f"create_bd_port -dir I -type clk {CLOCK_PORT}",
        f"set_property -dict [list CONFIG.FREQ_HZ {{{clock_hz}}} CONFIG.ASSOCIATED_BUSIF {{{AXIL_PORT}:{AXI_PORT}}}] "
        f"[get_bd_ports {CLOCK_PORT}]",
        f"create_bd_port -dir O -type rst {RESET_PORT}",
        f"set_property CONFIG.POLARITY {{ACTIVE_LOW}} [get_bd_ports {RESET_PORT}]",
        f"create_bd_port -dir I -type intr {IRQ_PORT}",
        f"set_property CONFIG.SENSITIVITY {{LEVEL_HIGH}} [get_bd_ports {IRQ_PORT}]",
        f"create_bd_intf_port -mode Master -vlnv {AXIMM_VLNV} {AXIL_PORT}",
        f"set_property -dict [list CONFIG.PROTOCOL {{AXI4LITE}} CONFIG.DATA_WIDTH {{{AXIL_DATA_WIDTH}}} "
        f"CONFIG.ADDR_WIDTH {{12}} CONFIG.FREQ_HZ {{{clock_hz}}}] [get_bd_intf_ports {AXIL_PORT}]",
        f"create_bd_intf_port -mode Master -vlnv {AXIMM_VLNV} {AXI_PORT}",
        f"set_property -dict [list CONFIG.PROTOCOL {{AXI4}} CONFIG.DATA_WIDTH {{{AXI_DATA_WIDTH}}} "
        f"CONFIG.ADDR_WIDTH {{{addr_width}}} CONFIG.ID_WIDTH {{{id_bits}}} CONFIG.HAS_QOS {{0}} "
        f"CONFIG.HAS_REGION {{0}} CONFIG.FREQ_HZ {{{clock_hz}}}] [get_bd_intf_ports {AXI_PORT}]",
        "",
        "# Clock, reset, interrupt and AXI connections",
        f"connect_bd_net [get_bd_ports {CLOCK_PORT}] [get_bd_pins {ps}/maxihpm0_fpd_aclk] {clock_pins} "
        f"[get_bd_pins {rst}/slowest_sync_clk]",
        f"connect_bd_net [get_bd_pins {ps}/pl_resetn0] [get_bd_pins {rst}/ext_reset_in]",
        f"connect_bd_net [get_bd_pins {rst}/interconnect_aresetn] {reset_pins}",
        f"connect_bd_net [get_bd_pins {rst}/peripheral_aresetn] [get_bd_ports {RESET_PORT}]",
        f"connect_bd_net [get_bd_ports {IRQ_PORT}] [get_bd_pins {ps}/pl_ps_irq0]",
        f"connect_bd_intf_net [get_bd_intf_pins {ps}/M_AXI_HPM0_FPD] [get_bd_intf_pins {ic}/S00_AXI]",
        f"connect_bd_intf_net [get_bd_intf_pins {ic}/M00_AXI] [get_bd_intf_ports {AXIL_PORT}]",
        f"connect_bd_intf_net [get_bd_intf_pins {ic}/M01_AXI] [get_bd_intf_ports {AXI_PORT}]",
        "",
        f"# Address map: registers at 0x{regs_base:08X} (4K), windows at 0x{windows_base:08X} "
        f"({_range_text(1 << addr_width)})",
        f"assign_bd_address -offset 0x{regs_base:08X} -range 4K "
        f"-target_address_space [get_bd_addr_spaces {ps}/Data] [get_bd_addr_segs {AXIL_PORT}/Reg] -force",
        f"assign_bd_address -offset 0x{windows_base:08X} -range {_range_text(1 << addr_width)} "
        f"-target_address_space [get_bd_addr_spaces {ps}/Data] [get_bd_addr_segs {AXI_PORT}/Reg] -force",
        "",
        "validate_bd_design",
        "save_bd_design",
        f"set pezo_bd_file [get_files {NAME}.bd]",
        "set_property synth_checkpoint_mode None $pezo_bd_file",
        "generate_target all $pezo_bd_file",
        "add_files -norecurse [make_wrapper -files $pezo_bd_file -top]",
        "update_compile_order -fileset sources_1",
        f"# ---- end of block design {NAME} ----",
    ]
    return "\n".join(lines) + "\n"
