"""Vivado block design with the ZCU102's Zynq UltraScale+ PS, for Amaranth's ``script_after_read`` hook.

``ps_block_design_tcl()`` returns Tcl that Amaranth 0.5's ``XilinxPlatform`` runs in ``top.tcl`` right
after ``create_project -force -name top -part xczu9eg-ffvb1156-2-e``, ``add_files top.v`` and
``read_xdc top.xdc``, and before ``synth_design -top top``
(``platform.build(top, script_after_read=ps_block_design_tcl())``). The Tcl builds the block design
``pezo_ps`` and adds its HDL wrapper ``pezo_ps_wrapper`` to the project. ``top.v`` instantiates that
wrapper as a black box, with exactly the ports listed in ``PS_WRAPPER_PORTS``.

What the block design contains, and why
---------------------------------------
* ``zynq_ultra_ps_e_0``, the Zynq UltraScale+ PS, created from the unversioned VLNV
  ``xilinx.com:ip:zynq_ultra_ps_e``. Vivado then uses the one version in its catalog, as corundum and
  AMD's own scripts do. **No board preset is applied**, and no board files are assumed installed. The
  ``PSU__`` properties we set:

  - ``PSU__USE__M_AXI_GP0 1`` and ``PSU__MAXIGP0__DATA_WIDTH 128``. GP0 is M_AXI_HPM0_FPD (GP0/GP1 are
    HPM0/HPM1 FPD and GP2 is HPM0 LPD; see LiteX ``zynqmp/core.py``). 128 bits is the PS default (PG201)
    and what AMD's ZCU102 boot images program, so the bitstream works on a stock image without touching
    FPD_SLCR.AFI_FS; the interconnect converts 128 -> 32 bits (its width converter) and AXI4 -> Lite.
  - ``PSU__USE__M_AXI_GP1 0`` and ``PSU__USE__M_AXI_GP2 0``: HPM1 FPD and HPM0 LPD are off, so no
    unclocked master is left to fail ``validate_bd_design``.
  - ``PSU__USE__S_AXI_GP0..6 0``, ``PSU__USE__S_AXI_ACP 0``, ``PSU__USE__S_AXI_ACE 0``: no PL-to-PS port.
  - ``PSU__FPGA_PL0_ENABLE 0`` (and PL1..PL3 0): no ``pl_clk`` output. Our logic and HPM0 run from the
    board's 125 MHz oscillator, which the top feeds in as ``aclk``.
  - ``PSU__USE__FABRIC__RST 1`` and ``PSU__NUM_FABRIC_RESETS 1``: ``pl_resetn0`` exists.
  - ``PSU__USE__IRQ0 0`` and ``PSU__USE__IRQ1 0``: no PL-to-PS interrupt inputs left undriven.

  DDR, MIO and PLL settings keep their IP defaults. They only matter for a boot image (FSBL/psu_init)
  exported from this design, and we export none. The bitstream is meant for a ZCU102 already booted
  from its own BSP image, loaded e.g. by Linux's fpga-manager.
  **Run-time caveat:** the booted image, not this bitstream, sets the HPM0 FPD width, in
  FPD_SLCR.AFI_FS (0xFD615000) bits [9:8] (00 = 32, 01 = 64, 10 = 128 bits). We build for 128, the
  default; on an image that programs another width, set bits [9:8] to 10 first (keep [11:10], HPM1),
  as PYNQ does per overlay (``pynq/pl_server/embedded_device.py``, ``ZU_FPD_SLCR_REG``).
* ``axi_interconnect_0``, an ``axi_interconnect`` with NUM_SI = NUM_MI = 1, converts AXI4 (burst, 16-bit ID)
  into AXI4-Lite. When its slave is AXI4-Lite, validation inserts the protocol converter (auto_pc).
  It was chosen over ``smartconnect``, which is a hierarchical "scoped" IP with a nested block design;
  AMD AR 67849 lists such IPs among those that break in non-project/disk-less synthesis. It was chosen
  over a bare ``axi_protocol_converter`` because corundum (``fpga/mqnic/ZCU102/fpga/ip/zynq_ps.tcl``)
  ships exactly this batch pattern on this board: PS HPM0 FPD at 32 bits -> ``axi_interconnect`` ->
  external AXI4-Lite port with a narrower ADDR_WIDTH (24 there) -> wrapper ports ``<port>_awaddr`` ...
* ``proc_sys_reset_0``, a ``proc_sys_reset`` clocked by ``aclk`` with ``ext_reset_in`` = ``pl_resetn0``.
  ``pl_resetn0`` comes from the PS (EMIO GPIO) and is asynchronous to ``aclk``. proc_sys_reset
  synchronises its release to ``aclk``, stretches it, and releases the interconnect before the
  peripherals. ``interconnect_aresetn`` resets the interconnect; ``peripheral_aresetn`` is exported as the
  ``aresetn`` port for our logic. ``dcm_locked`` is left at its default, as in corundum. The top
  must feed a clock that is already stable, e.g. gated by its MMCM's LOCKED.
* Ports: ``aclk`` (input clock, FREQ_HZ = ``clock_hz``, ASSOCIATED_BUSIF = the AXI port) drives
  ``maxihpm0_fpd_aclk``, the interconnect and the reset block. ``aresetn`` is an active-low output.
  ``M_AXIL`` is an AXI4-Lite master (PROTOCOL AXI4LITE, DATA_WIDTH 32, ADDR_WIDTH = ``addr_width``,
  FREQ_HZ = ``clock_hz``).
* Address map: ``M_AXIL/Reg`` sits at ``base_address`` (default 0xA000_0000, the start of the 256 MB
  HPM0 FPD window 0xA000_0000-0xAFFF_FFFF) with ``range_bytes`` (default 4K) in ``zynq_ultra_ps_e_0/Data``.

Address width: the PS issues 40-bit addresses. The exported port carries only the low ``addr_width``
bits (default 12), and Vivado connects the low-order bits, as in corundum's 24-bit ports. Since
``base_address`` is aligned to ``range_bytes`` and ``2**addr_width >= range_bytes``, the register
offset is ``M_AXIL_awaddr % range_bytes``. A 1:1 interconnect does no address decode. Any HPM0 access
in the 256 MB window therefore reaches the port, aliased modulo ``2**addr_width``. Software should use
only the assigned segment.

Flow: ``create_bd_design -dir <cwd>/bd``, cells, ports, nets, ``assign_bd_address``,
``validate_bd_design``, ``save_bd_design``, ``set_property synth_checkpoint_mode None`` (global
synthesis: the BD's RTL is synthesised with ``top`` in Amaranth's ``synth_design``; UG994 "Global
Synthesis", UG912 SYNTH_CHECKPOINT_MODE, AR 67849), ``generate_target all``, and
``add_files [make_wrapper -files <bd> -top]`` (``make_wrapper`` returns the wrapper's path, so no
``.srcs``/``.gen`` layout is assumed). Then ``update_compile_order -fileset sources_1``. The BD lives in
``./bd/<name>`` (a "remote" BD, as ``write_bd_tcl`` emits). The Tcl deletes that directory first, so a
re-run in the same build directory starts clean. This also works whether or not the project is on
disk. ``assign_bd_address -offset/-range`` needs Vivado 2019.2 or newer (earlier versions used
``create_bd_addr_seg``).

UNTESTED HERE: this machine has no Vivado. The Tcl was checked for syntax and consistency only: the
tests run it in a plain Tcl interpreter against stand-in Vivado commands. The property and pin names
come from the public scripts below, not from a Vivado run. Run one real build before relying on it.

Sources consulted (public repositories, paths as stored):
* corundum/corundum ``fpga/mqnic/ZCU102/fpga/ip/zynq_ps.tcl``: unversioned VLNVs, PSU__USE__M_AXI_GP0/1/2,
  PSU__MAXIGP0__DATA_WIDTH, axi_interconnect ACLK/S00_ACLK/M00_ACLK/ARESETN/S00_ARESETN/M00_ARESETN,
  S00_AXI/M00_AXI, proc_sys_reset slowest_sync_clk/ext_reset_in/interconnect_aresetn, pl_resetn0,
  maxihpm0_fpd_aclk, M_AXI_HPM0_FPD, external AXI4LITE port with CONFIG.PROTOCOL/DATA_WIDTH/ADDR_WIDTH,
  ASSOCIATED_BUSIF on the clock port, ``assign_bd_address -offset 0xA000_0000 -range 16M
  -target_address_space <ps>/Data [get_bd_addr_segs <port>/Reg]``.
* corundum/corundum ``fpga/mqnic/ZCU102/fpga/rtl/fpga.v``: the wrapper-side names of an exported
  AXI4-Lite interface port ``m_axil_ctrl``: ``m_axil_ctrl_{araddr,arprot,arready,arvalid,awaddr,awprot,
  awready,awvalid,bready,bresp,bvalid,rdata,rready,rresp,rvalid,wdata,wready,wstrb,wvalid}``, with
  ``AXIL_CTRL_ADDR_WIDTH = 24`` matching the port's ADDR_WIDTH 24.
* openquantumhardware/qick ``bkp/projects/hackster_fusesoc/src/design_1_wrapper.vhd`` and
  jimga150/GOL ``GOL_v3/GOL_v3.srcs/sources_1/bd/design_1/hdl/design_1_wrapper.vhd``: generated
  wrappers. The interface port's case is kept and lower-case signal suffixes are appended
  (``S_AXI_0_araddr`` ...). There are exactly these 19 AXI4-Lite signals; addr is 12 bits in qick,
  prot 3, data 32, strb 4, resp 2. avanco-tech/avan-faas ``.../design_1_wrapper.v``:
  ``M_AXI_HPM0_FPD_araddr`` ...
* enjoy-digital/litex ``litex/soc/cores/cpu/zynqmp/core.py``: GP0/GP1 = FPD, GP2 = LPD,
  ``maxihpm0_fpd_aclk``, ``pl_resetn0``, ``PSU__MAXIGP{n}__DATA_WIDTH``, and ``create_ip`` inside the
  same ``create_project -force -name`` flow Amaranth uses. LiteX PR #1203: the ZCU102 default
  configuration enables HPM0 FPD (and HPM0 LPD) at 128 bits.
* analogdevicesinc/hdl (a ZynqMP ``system_bd.tcl``): PSU__FPGA_PL0..3_ENABLE 0, the PSU__USE__S_AXI_*
  names. smirnovich/microphase-z7 ``03_dma/fpga/top_bd_zynq.tcl`` + ``common/compile_all.tcl``:
  ``create_bd_design -dir`` (remote BD), then ``generate_target all`` and ``synth_design`` in one session.
* Xilinx/PYNQ ``pynq/pl_server/embedded_device.py`` (ZU_FPD_SLCR_REG) and UG1087 afi_fs: the AFI_FS
  width fields. AMD UG994 "Global Synthesis", UG912 SYNTH_CHECKPOINT_MODE, AR 67849, PG201.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

DEFAULT_NAME = "pezo_ps"
DEFAULT_AXIL_PORT = "M_AXIL"
DEFAULT_CLOCK_PORT = "aclk"
DEFAULT_RESET_PORT = "aresetn"
DEFAULT_CLOCK_HZ = 125_000_000
DEFAULT_ADDR_WIDTH = 12
DEFAULT_BASE_ADDRESS = 0xA000_0000
DEFAULT_RANGE_BYTES = 4096

PS_ADDR_WIDTH = 40  # M_AXI_HPM0_FPD address width
AXIL_DATA_WIDTH = 32
HPM0_FPD_WINDOW = (0xA000_0000, 0xB000_0000)  # [start, end): the 256 MB low HPM0 FPD window
MIN_RANGE_BYTES = 4096
CLOCK_HZ_RANGE = (1_000_000, 500_000_000)  # sanity bounds only, not a timing guarantee

PS_VLNV = "xilinx.com:ip:zynq_ultra_ps_e"
INTERCONNECT_VLNV = "xilinx.com:ip:axi_interconnect"
RESET_VLNV = "xilinx.com:ip:proc_sys_reset"
AXIMM_VLNV = "xilinx.com:interface:aximm_rtl:1.0"
PS_CELL = "zynq_ultra_ps_e_0"
INTERCONNECT_CELL = "axi_interconnect_0"
RESET_CELL = "proc_sys_reset_0"
BD_SUBDIR = "bd"

# PSU__ properties of the PS, in the order they are set (enable before width). Why: see the docstring.
PS_PROPERTIES = (
    ("PSU__USE__M_AXI_GP0", "1"),  # M_AXI_HPM0_FPD on
    ("PSU__MAXIGP0__DATA_WIDTH", "128"),  # the PS default and ZCU102 boot images' width (see above)
    ("PSU__USE__M_AXI_GP1", "0"),  # M_AXI_HPM1_FPD off
    ("PSU__USE__M_AXI_GP2", "0"),  # M_AXI_HPM0_LPD off
    ("PSU__USE__S_AXI_GP0", "0"),
    ("PSU__USE__S_AXI_GP1", "0"),
    ("PSU__USE__S_AXI_GP2", "0"),
    ("PSU__USE__S_AXI_GP3", "0"),
    ("PSU__USE__S_AXI_GP4", "0"),
    ("PSU__USE__S_AXI_GP5", "0"),
    ("PSU__USE__S_AXI_GP6", "0"),
    ("PSU__USE__S_AXI_ACP", "0"),
    ("PSU__USE__S_AXI_ACE", "0"),
    ("PSU__FPGA_PL0_ENABLE", "0"),  # no pl_clk0: our logic runs from the board oscillator
    ("PSU__FPGA_PL1_ENABLE", "0"),
    ("PSU__FPGA_PL2_ENABLE", "0"),
    ("PSU__FPGA_PL3_ENABLE", "0"),
    ("PSU__USE__FABRIC__RST", "1"),  # pl_resetn0 exists
    ("PSU__NUM_FABRIC_RESETS", "1"),
    ("PSU__USE__IRQ0", "0"),  # no pl_ps_irq inputs left undriven
    ("PSU__USE__IRQ1", "0"),
)

# The AXI4-Lite signals of an exported aximm interface port, as the wrapper names them:
# "<port>_<suffix>"; width None = ADDR_WIDTH. Direction seen from the wrapper, which is the AXI master:
# "o" = wrapper output (Amaranth Instance o_...), "i" = wrapper input.
AXI4LITE_SIGNALS = (
    ("awaddr", "o", None),
    ("awprot", "o", 3),
    ("awvalid", "o", 1),
    ("awready", "i", 1),
    ("wdata", "o", AXIL_DATA_WIDTH),
    ("wstrb", "o", AXIL_DATA_WIDTH // 8),
    ("wvalid", "o", 1),
    ("wready", "i", 1),
    ("bresp", "i", 2),
    ("bvalid", "i", 1),
    ("bready", "o", 1),
    ("araddr", "o", None),
    ("arprot", "o", 3),
    ("arvalid", "o", 1),
    ("arready", "i", 1),
    ("rdata", "i", AXIL_DATA_WIDTH),
    ("rresp", "i", 2),
    ("rvalid", "i", 1),
    ("rready", "o", 1),
)

_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
# Verilog-2005 / SystemVerilog keywords that are plausible port names; such a name breaks top.v.
_RESERVED = frozenset(
    """
    always and assign begin buf case default define disable edge else end endcase endmodule event for
    force forever fork function generate genvar if initial inout input integer join logic module nand
    negedge nor not or output parameter posedge real reg repeat signed specify supply0 supply1 table task
    time tri unsigned wait wand while wire wor xor top
""".split()
)


class WrapperPort(NamedTuple):
    """One port of the generated wrapper; unpacks as ``(name, direction, width, role)``.

    ``direction`` is seen from the wrapper and spelled like Amaranth's ``Instance`` prefixes: ``"i"``
    (the wrapper's input, driven by our logic) or ``"o"`` (the wrapper's output). ``role`` is
    ``"clock"``, ``"resetn"`` or the AXI4-Lite signal (``"awaddr"``, ``"wready"``, ...)."""

    name: str
    direction: str
    width: int
    role: str

    @property
    def instance_key(self) -> str:
        """The ``amaranth.hdl.Instance`` keyword for this port: ``i_<name>`` or ``o_<name>``."""
        return f"{self.direction}_{self.name}"


@dataclass(frozen=True)
class WrapperPorts:
    """The wrapper module ``make_wrapper -top`` writes (``<bd>_wrapper``) and its ports, ASCII-sorted as
    Vivado lists them (the order does not matter for named connections). Iterating yields the ports."""

    module: str
    ports: tuple[WrapperPort, ...]

    def __iter__(self):
        return iter(self.ports)

    def __len__(self) -> int:
        return len(self.ports)

    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.ports)

    def __getitem__(self, name: str) -> WrapperPort:
        for port in self.ports:
            if port.name == name:
                return port
        raise KeyError(name)


def _fail(message: str):
    raise ValueError(message)


def _check_int(param: str, value, lo: int, hi: int, extra: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        _fail(f"{param} must be in {lo}..{hi}{extra} (got {value!r})")


def _check_identifier(param: str, value) -> None:
    if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value) or value.lower() in _RESERVED:
        _fail(
            f"{param} must be an identifier [A-Za-z][A-Za-z0-9_]{{0,63}}, not a Verilog keyword "
            f"or 'top' (got {value!r})"
        )


def _range_text(range_bytes: int) -> str:
    """Vivado's range notation: 4K, 64K, 1M, 256M."""
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if range_bytes % size == 0:
            return f"{range_bytes // size}{unit}"
    return str(range_bytes)


def _ports(name: str, axil_port: str, clock_port: str, reset_port: str, addr_width: int) -> WrapperPorts:
    ports = [WrapperPort(clock_port, "i", 1, "clock"), WrapperPort(reset_port, "o", 1, "resetn")]
    for suffix, direction, width in AXI4LITE_SIGNALS:
        ports.append(WrapperPort(f"{axil_port}_{suffix}", direction, addr_width if width is None else width, suffix))
    return WrapperPorts(f"{name}_wrapper", tuple(sorted(ports, key=lambda p: p.name)))


def _check_names(name, axil_port, clock_port, reset_port) -> None:
    for param, value in (
        ("name", name),
        ("axil_port", axil_port),
        ("clock_port", clock_port),
        ("reset_port", reset_port),
    ):
        _check_identifier(param, value)
    # Wrapper port names must be distinct; compared ignoring case, to be safe with Vivado object names.
    signals = {f"{axil_port}_{suffix}".lower() for suffix, _, _ in AXI4LITE_SIGNALS}
    if clock_port.lower() in signals:
        _fail(f"clock_port must differ from the {axil_port}_* signal names, ignoring case (got {clock_port!r})")
    if reset_port.lower() in signals | {clock_port.lower()}:
        _fail(
            f"reset_port must differ from clock_port and the {axil_port}_* signal names, ignoring case "
            f"(got {reset_port!r})"
        )


def _check(name, axil_port, clock_port, reset_port, clock_hz, addr_width, base_address, range_bytes) -> None:
    _check_names(name, axil_port, clock_port, reset_port)
    _check_int("clock_hz", clock_hz, *CLOCK_HZ_RANGE)
    window = HPM0_FPD_WINDOW[1] - HPM0_FPD_WINDOW[0]
    if (
        isinstance(range_bytes, bool)
        or not isinstance(range_bytes, int)
        or not MIN_RANGE_BYTES <= range_bytes <= window
        or range_bytes & (range_bytes - 1)
    ):
        _fail(f"range_bytes must be a power of two in {MIN_RANGE_BYTES}..{window} (got {range_bytes!r})")
    _check_int("addr_width", addr_width, range_bytes.bit_length() - 1, PS_ADDR_WIDTH, f" for range_bytes={range_bytes}")
    lo, hi = HPM0_FPD_WINDOW[0], HPM0_FPD_WINDOW[1] - range_bytes
    if (
        isinstance(base_address, bool)
        or not isinstance(base_address, int)
        or not lo <= base_address <= hi
        or base_address % range_bytes
    ):
        _fail(
            f"base_address must be in {lo:#010x}..{hi:#010x} and a multiple of range_bytes={range_bytes} "
            f"(got {base_address!r})"
        )


def ps_wrapper_ports(
    name: str = DEFAULT_NAME,
    axil_port: str = DEFAULT_AXIL_PORT,
    clock_port: str = DEFAULT_CLOCK_PORT,
    reset_port: str = DEFAULT_RESET_PORT,
    addr_width: int = DEFAULT_ADDR_WIDTH,
) -> WrapperPorts:
    """The wrapper that ``ps_block_design_tcl`` (same arguments) makes Vivado write.

    See ``PS_WRAPPER_PORTS`` for the defaults."""
    _check_names(name, axil_port, clock_port, reset_port)
    _check_int("addr_width", addr_width, MIN_RANGE_BYTES.bit_length() - 1, PS_ADDR_WIDTH)
    return _ports(name, axil_port, clock_port, reset_port, addr_width)


PS_WRAPPER_PORTS = ps_wrapper_ports()
"""Wrapper for the defaults: module ``pezo_ps_wrapper`` (``PS_WRAPPER_NAME``); ``aclk`` in (1),
``aresetn`` out (1), ``M_AXIL_{aw,ar}addr`` out (12), ``M_AXIL_{aw,ar}prot`` out (3), ``M_AXIL_wdata``
out / ``M_AXIL_rdata`` in (32), ``M_AXIL_wstrb`` out (4), ``M_AXIL_{b,r}resp`` in (2), valid out /
ready in on AW, W, AR and valid in / ready out on B, R. Vivado names the signals of an external
interface port ``<port>_<lower-case signal>`` (corundum's ``m_axil_ctrl_awaddr``, qick's
``S_AXI_0_awaddr``)."""
PS_WRAPPER_NAME = PS_WRAPPER_PORTS.module


def ps_block_design_tcl(
    name: str = DEFAULT_NAME,
    axil_port: str = DEFAULT_AXIL_PORT,
    clock_port: str = DEFAULT_CLOCK_PORT,
    reset_port: str = DEFAULT_RESET_PORT,
    clock_hz: int = DEFAULT_CLOCK_HZ,
    addr_width: int = DEFAULT_ADDR_WIDTH,
    base_address: int = DEFAULT_BASE_ADDRESS,
    range_bytes: int = DEFAULT_RANGE_BYTES,
) -> str:
    """Tcl for ``script_after_read``: build block design ``name`` and add ``<name>_wrapper`` to the project.

    Bad arguments raise one ``ValueError`` naming the parameter and its range.
    """
    _check(name, axil_port, clock_port, reset_port, clock_hz, addr_width, base_address, range_bytes)
    wrapper = _ports(name, axil_port, clock_port, reset_port, addr_width)
    ps, ic, rst = PS_CELL, INTERCONNECT_CELL, RESET_CELL
    ps_props = " \\\n".join(f"    CONFIG.{key} {{{value}}}" for key, value in PS_PROPERTIES)
    lines = [
        f"# ---- pezo: Zynq UltraScale+ PS block design {name} (boards/ps_block_design.py) ----",
        f"# Wrapper {wrapper.module}: {', '.join(wrapper.names())}",
        "# Board preset: none (no board files assumed). Untested without Vivado; see the module docstring.",
        "set_property target_language Verilog [current_project]",
        f"set pezo_bd_root [file normalize {BD_SUBDIR}]",
        f"file delete -force [file join $pezo_bd_root {name}]",
        f"create_bd_design -dir $pezo_bd_root {name}",
        f"current_bd_design {name}",
        "",
        "# PS: only M_AXI_HPM0_FPD (32-bit) and pl_resetn0; no PL clocks, no other AXI ports, no IRQs",
        f"set pezo_ps [create_bd_cell -type ip -vlnv {PS_VLNV} {ps}]",
        f"set_property -dict [list \\\n{ps_props} \\\n] $pezo_ps",
        "",
        "# AXI4 -> AXI4-Lite: 1:1 axi_interconnect (auto_pc protocol converter inserted at validation)",
        f"set pezo_ic [create_bd_cell -type ip -vlnv {INTERCONNECT_VLNV} {ic}]",
        "set_property -dict [list CONFIG.NUM_SI {1} CONFIG.NUM_MI {1}] $pezo_ic",
        "",
        "# Reset: pl_resetn0 synchronised to the external clock",
        f"set pezo_rst [create_bd_cell -type ip -vlnv {RESET_VLNV} {rst}]",
        "",
        "# External ports",
        f"create_bd_port -dir I -type clk {clock_port}",
        f"set_property -dict [list CONFIG.FREQ_HZ {{{clock_hz}}} CONFIG.ASSOCIATED_BUSIF {{{axil_port}}}] "
        f"[get_bd_ports {clock_port}]",
        f"create_bd_port -dir O -type rst {reset_port}",
        f"set_property CONFIG.POLARITY {{ACTIVE_LOW}} [get_bd_ports {reset_port}]",
        f"create_bd_intf_port -mode Master -vlnv {AXIMM_VLNV} {axil_port}",
        f"set_property -dict [list CONFIG.PROTOCOL {{AXI4LITE}} CONFIG.DATA_WIDTH {{{AXIL_DATA_WIDTH}}} "
        f"CONFIG.ADDR_WIDTH {{{addr_width}}} CONFIG.FREQ_HZ {{{clock_hz}}}] [get_bd_intf_ports {axil_port}]",
        "",
        "# Clock, reset and AXI connections",
        f"connect_bd_net [get_bd_ports {clock_port}] [get_bd_pins {ps}/maxihpm0_fpd_aclk] "
        f"[get_bd_pins {ic}/ACLK] [get_bd_pins {ic}/S00_ACLK] [get_bd_pins {ic}/M00_ACLK] "
        f"[get_bd_pins {rst}/slowest_sync_clk]",
        f"connect_bd_net [get_bd_pins {ps}/pl_resetn0] [get_bd_pins {rst}/ext_reset_in]",
        f"connect_bd_net [get_bd_pins {rst}/interconnect_aresetn] [get_bd_pins {ic}/ARESETN] "
        f"[get_bd_pins {ic}/S00_ARESETN] [get_bd_pins {ic}/M00_ARESETN]",
        f"connect_bd_net [get_bd_pins {rst}/peripheral_aresetn] [get_bd_ports {reset_port}]",
        f"connect_bd_intf_net [get_bd_intf_pins {ps}/M_AXI_HPM0_FPD] [get_bd_intf_pins {ic}/S00_AXI]",
        f"connect_bd_intf_net [get_bd_intf_pins {ic}/M00_AXI] [get_bd_intf_ports {axil_port}]",
        "",
        f"# Address map: {axil_port} at 0x{base_address:08X}, {_range_text(range_bytes)}, in the HPM0 FPD window",
        f"assign_bd_address -offset 0x{base_address:08X} -range {_range_text(range_bytes)} "
        f"-target_address_space [get_bd_addr_spaces {ps}/Data] [get_bd_addr_segs {axil_port}/Reg] -force",
        "",
        "validate_bd_design",
        "save_bd_design",
        "",
        "# Global synthesis: the BD is synthesised with the top in synth_design (UG994), then the wrapper",
        f"set pezo_bd_file [get_files {name}.bd]",
        "set_property synth_checkpoint_mode None $pezo_bd_file",
        "generate_target all $pezo_bd_file",
        "add_files -norecurse [make_wrapper -files $pezo_bd_file -top]",
        "update_compile_order -fileset sources_1",
        f"# ---- end of block design {name} ----",
    ]
    return "\n".join(lines) + "\n"
