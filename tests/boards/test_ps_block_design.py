"""The ZynqMP PS block-design Tcl: text shape, command order, wrapper ports, argument errors, and a run of
the Tcl in a real Tcl interpreter against stand-in Vivado commands (no Vivado here)."""

import re

import pytest

from pezo.boards.ps_block_design import (
    PS_PROPERTIES,
    PS_WRAPPER_NAME,
    PS_WRAPPER_PORTS,
    WrapperPort,
    ps_block_design_tcl,
    ps_wrapper_ports,
)

# The 19 signals of an exported AXI4-Lite interface port, as Vivado's wrapper names them
# ("<port>_<suffix>"; corundum fpga/mqnic/ZCU102/fpga/rtl/fpga.v, qick design_1_wrapper.vhd).
# Direction seen from the wrapper (the AXI master), as Amaranth Instance prefixes; width None = ADDR_WIDTH.
AXIL = {
    "awaddr": ("o", None),
    "awprot": ("o", 3),
    "awvalid": ("o", 1),
    "awready": ("i", 1),
    "wdata": ("o", 32),
    "wstrb": ("o", 4),
    "wvalid": ("o", 1),
    "wready": ("i", 1),
    "bresp": ("i", 2),
    "bvalid": ("i", 1),
    "bready": ("o", 1),
    "araddr": ("o", None),
    "arprot": ("o", 3),
    "arvalid": ("o", 1),
    "arready": ("i", 1),
    "rdata": ("i", 32),
    "rresp": ("i", 2),
    "rvalid": ("i", 1),
    "rready": ("o", 1),
}

ORDER = [
    "create_bd_design",
    "create_bd_cell",
    "create_bd_port",
    "create_bd_intf_port",
    "connect_bd_net",
    "connect_bd_intf_net",
    "assign_bd_address",
    "validate_bd_design",
    "save_bd_design",
    "set_property synth_checkpoint_mode None",
    "generate_target all",
    "add_files -norecurse [make_wrapper -files",
    "update_compile_order",
]


def expected_ports(axil="M_AXIL", clock="aclk", reset="aresetn", addr_width=12):
    ports = {clock: ("i", 1), reset: ("o", 1)}
    for suffix, (direction, width) in AXIL.items():
        ports[f"{axil}_{suffix}"] = (direction, addr_width if width is None else width)
    return ports


# ---- the wrapper description -----------------------------------------------------------------------


def test_default_wrapper_module_and_ports():
    assert PS_WRAPPER_PORTS.module == PS_WRAPPER_NAME == "pezo_ps_wrapper"
    got = {p.name: (p.direction, p.width) for p in PS_WRAPPER_PORTS.ports}
    assert got == expected_ports()
    assert len(PS_WRAPPER_PORTS.ports) == 21
    assert list(PS_WRAPPER_PORTS.names()) == sorted(PS_WRAPPER_PORTS.names())  # Vivado's ASCII order
    assert PS_WRAPPER_PORTS["M_AXIL_awaddr"] == WrapperPort("M_AXIL_awaddr", "o", 12, "awaddr")
    assert PS_WRAPPER_PORTS["aclk"].instance_key == "i_aclk"
    assert PS_WRAPPER_PORTS["M_AXIL_rdata"].instance_key == "i_M_AXIL_rdata"
    assert PS_WRAPPER_PORTS["aresetn"].instance_key == "o_aresetn"


def test_ports_unpack_as_name_direction_width_role():
    """The form boards/zcu102.py consumes: ``for name, direction, width, role in ps_wrapper_ports()``."""
    rows = list(ps_wrapper_ports())
    assert len(rows) == len(PS_WRAPPER_PORTS) == 21
    roles = {}
    for name, direction, width, role in rows:
        assert direction in ("i", "o") and width >= 1
        roles[role] = name
    assert roles.pop("clock") == "aclk" and roles.pop("resetn") == "aresetn"
    assert roles == {suffix: f"M_AXIL_{suffix}" for suffix in AXIL}


def test_wrapper_ports_follow_arguments():
    w = ps_wrapper_ports(name="soc", axil_port="s_ctrl", clock_port="clk", reset_port="rstn", addr_width=16)
    assert w.module == "soc_wrapper"
    assert {p.name: (p.direction, p.width) for p in w.ports} == expected_ports("s_ctrl", "clk", "rstn", 16)


# ---- the Tcl text ----------------------------------------------------------------------------------


def _code(tcl):
    """The Tcl without comment lines."""
    return "\n".join(line for line in tcl.splitlines() if not line.lstrip().startswith("#"))


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        dict(
            name="soc",
            axil_port="s_ctrl",
            clock_port="clk",
            reset_port="rstn",
            addr_width=20,
            range_bytes=65536,
            base_address=0xA001_0000,
            clock_hz=100_000_000,
        ),
    ],
)
def test_braces_and_brackets_balance(kwargs):
    tcl = ps_block_design_tcl(**kwargs)
    for open_, close in ("{}", "[]", "()"):
        depth = 0
        for ch in tcl:
            depth += (ch == open_) - (ch == close)
            assert depth >= 0, (open_, tcl)
        assert depth == 0, open_
    assert tcl.count('"') % 2 == 0
    lines = tcl.splitlines()
    for i, line in enumerate(lines):  # a continuation never runs into a blank line or the end
        if line.endswith("\\"):
            assert i + 1 < len(lines) and lines[i + 1].strip(), line
    assert tcl.endswith("\n")


def test_commands_in_order():
    code = _code(ps_block_design_tcl())
    positions = [code.find(cmd) for cmd in ORDER]
    assert all(p >= 0 for p in positions), dict(zip(ORDER, positions))
    assert positions == sorted(positions), dict(zip(ORDER, positions))
    assert code.index("save_bd_design") < code.index("synth_checkpoint_mode")


def test_key_lines_for_defaults():
    tcl = ps_block_design_tcl()
    assert "create_bd_design -dir $pezo_bd_root pezo_ps" in tcl
    assert "create_bd_cell -type ip -vlnv xilinx.com:ip:zynq_ultra_ps_e zynq_ultra_ps_e_0" in tcl
    assert not re.search(r"xilinx\.com:ip:\w+:\d", tcl)  # no pinned IP versions
    assert "CONFIG.PSU__USE__M_AXI_GP0 {1}" in tcl and "CONFIG.PSU__MAXIGP0__DATA_WIDTH {128}" in tcl
    assert "CONFIG.PSU__USE__M_AXI_GP1 {0}" in tcl and "CONFIG.PSU__USE__M_AXI_GP2 {0}" in tcl
    assert "CONFIG.PSU__FPGA_PL0_ENABLE {0}" in tcl and "CONFIG.PSU__USE__FABRIC__RST {1}" in tcl
    assert "apply_bd_automation" not in tcl and "board_part" not in tcl  # no board preset
    assert (
        "assign_bd_address -offset 0xA0000000 -range 4K -target_address_space "
        "[get_bd_addr_spaces zynq_ultra_ps_e_0/Data] [get_bd_addr_segs M_AXIL/Reg] -force"
    ) in tcl
    assert "CONFIG.PROTOCOL {AXI4LITE}" in tcl and "CONFIG.ADDR_WIDTH {12}" in tcl
    assert tcl.count("CONFIG.FREQ_HZ {125000000}") == 2
    assert "add_files -norecurse [make_wrapper -files $pezo_bd_file -top]" in tcl


def test_port_names_in_tcl_match_wrapper():
    """Every port the Tcl creates, expanded as Vivado names the wrapper's ports, is in PS_WRAPPER_PORTS,
    and the reverse."""
    code = _code(ps_block_design_tcl())
    scalar = {name: d for d, name in re.findall(r"create_bd_port -dir ([IO]) -type \w+ (\w+)", code)}
    intf = re.findall(r"create_bd_intf_port -mode Master -vlnv \S+ (\w+)", code)
    assert scalar == {"aclk": "I", "aresetn": "O"} and intf == ["M_AXIL"]
    names = set(scalar) | {f"{intf[0]}_{suffix}" for suffix in AXIL}
    assert names == set(PS_WRAPPER_PORTS.names())
    for name, d in scalar.items():
        assert PS_WRAPPER_PORTS[name].direction == d.lower()
    # every later reference to a port uses one of the created names
    refs = set(re.findall(r"get_bd_(?:intf_)?ports (\w+)\]", code))
    refs |= set(re.findall(r"get_bd_addr_segs (\w+)/", code))
    assert refs == set(scalar) | set(intf)
    assert "CONFIG.ASSOCIATED_BUSIF {M_AXIL}" in code


# ---- argument errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        (dict(name="1bd"), "name must be an identifier"),
        (dict(name="pezo ps"), "name must be an identifier"),
        (dict(name="top"), "name must be an identifier"),
        (dict(name="x" * 65), "name must be an identifier"),
        (dict(axil_port="M-AXIL"), "axil_port must be an identifier"),
        (dict(clock_port="input"), "clock_port must be an identifier"),
        (dict(reset_port=""), "reset_port must be an identifier"),
        (dict(reset_port="aclk"), "reset_port must differ from clock_port"),
        (dict(reset_port="ACLK"), "reset_port must differ from clock_port"),
        (dict(clock_port="M_AXIL_awaddr"), "clock_port must differ from the M_AXIL_* signal names"),
        (dict(clock_hz=0), "clock_hz must be in 1000000..500000000"),
        (dict(clock_hz=125e6), "clock_hz must be in 1000000..500000000"),
        (dict(clock_hz=True), "clock_hz must be in 1000000..500000000"),
        (dict(addr_width=11), "addr_width must be in 12..40"),
        (dict(addr_width=41), "addr_width must be in 12..40"),
        (dict(range_bytes=65536, addr_width=12), "addr_width must be in 16..40 for range_bytes=65536"),
        (dict(range_bytes=3000), "range_bytes must be a power of two in 4096..268435456"),
        (dict(range_bytes=2048), "range_bytes must be a power of two in 4096..268435456"),
        (dict(range_bytes=1 << 29, addr_width=29), "range_bytes must be a power of two in 4096..268435456"),
        (dict(base_address=0x8000_0000), "base_address must be in 0xa0000000..0xaffff000"),
        (dict(base_address=0xB000_0000), "base_address must be in 0xa0000000..0xaffff000"),
        (dict(base_address=0xA000_0800), "a multiple of range_bytes=4096"),
        (dict(base_address=0xA000_1000, range_bytes=8192, addr_width=13), "a multiple of range_bytes=8192"),
    ],
)
def test_bad_arguments(kwargs, needle):
    with pytest.raises(ValueError) as info:
        ps_block_design_tcl(**kwargs)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_wrapper_ports_rejects_bad_arguments():
    with pytest.raises(ValueError, match="addr_width must be in 12..40"):
        ps_wrapper_ports(addr_width=8)
    with pytest.raises(ValueError, match="axil_port must be an identifier"):
        ps_wrapper_ports(axil_port="wire")


def test_largest_window_accepted():
    tcl = ps_block_design_tcl(range_bytes=1 << 28, addr_width=28)
    assert "-offset 0xA0000000 -range 256M" in tcl
    tcl = ps_block_design_tcl(base_address=0xAFFF_F000)
    assert "-offset 0xAFFFF000 -range 4K" in tcl


# ---- the Tcl run in a Tcl interpreter against stand-in Vivado commands ------------------------------

IP_PINS = {  # pin names from corundum's zynq_ps.tcl, LiteX's zynqmp core, AMD's proc_sys_reset
    "xilinx.com:ip:zynq_ultra_ps_e": ({"maxihpm0_fpd_aclk", "pl_resetn0"}, {"M_AXI_HPM0_FPD"}, {"Data"}),
    "xilinx.com:ip:axi_interconnect": (
        {"ACLK", "ARESETN", "S00_ACLK", "S00_ARESETN", "M00_ACLK", "M00_ARESETN"},
        {"S00_AXI", "M00_AXI"},
        set(),
    ),
    "xilinx.com:ip:proc_sys_reset": (
        {"slowest_sync_clk", "ext_reset_in", "interconnect_aresetn", "peripheral_aresetn"},
        set(),
        set(),
    ),
}


class FakeVivado:
    """Just enough of Vivado's block-design commands to run the generated Tcl and record what it does."""

    def __init__(self, tcl):
        self.tcl = tcl
        self.calls = []
        self.bd = None
        self.cells = {}  # name -> vlnv
        self.ports = {}  # name -> (dir, type)
        self.intf_ports = {}  # name -> (mode, vlnv)
        self.props = {}  # object -> {prop: value}
        self.nets = []
        self.intf_nets = []
        for name in (
            "current_project",
            "create_bd_design",
            "current_bd_design",
            "create_bd_cell",
            "set_property",
            "create_bd_port",
            "create_bd_intf_port",
            "get_bd_ports",
            "get_bd_intf_ports",
            "get_bd_pins",
            "get_bd_intf_pins",
            "get_bd_addr_spaces",
            "get_bd_addr_segs",
            "connect_bd_net",
            "connect_bd_intf_net",
            "assign_bd_address",
            "validate_bd_design",
            "save_bd_design",
            "get_files",
            "generate_target",
            "make_wrapper",
            "add_files",
            "update_compile_order",
        ):
            tcl.createcommand(name, self._recorder(name))

    def _recorder(self, name):
        def command(*args):
            self.calls.append((name, args))
            handler = getattr(self, "do_" + name, None)
            return handler(*args) if handler else ""

        return command

    @staticmethod
    def _options(args, flags=()):
        opts, rest, it = {}, [], iter(args)
        for a in it:
            if a.startswith("-"):
                opts[a] = True if a in flags else next(it)
            else:
                rest.append(a)
        return opts, rest

    def do_current_project(self):
        return "project:top"

    def do_create_bd_design(self, *args):
        opts, rest = self._options(args)
        assert self.bd is None and len(rest) == 1
        self.bd = (opts.get("-dir"), rest[0])
        return rest[0]

    def do_current_bd_design(self, name):
        assert name == self.bd[1]
        return name

    def do_create_bd_cell(self, *args):
        opts, rest = self._options(args)
        assert opts["-type"] == "ip" and len(rest) == 1 and rest[0] not in self.cells
        assert opts["-vlnv"] in IP_PINS, opts["-vlnv"]
        self.cells[rest[0]] = opts["-vlnv"]
        return "cell:" + rest[0]

    def do_set_property(self, *args):
        if args[0] == "-dict":
            items = self.tcl.splitlist(args[1])
            assert len(items) % 2 == 0, items
            pairs, obj = dict(zip(items[::2], items[1::2])), args[2]
        else:
            assert len(args) == 3, args
            pairs, obj = {args[0]: args[1]}, args[2]
        assert obj, args
        self.props.setdefault(obj, {}).update(pairs)

    def do_create_bd_port(self, *args):
        opts, rest = self._options(args)
        assert len(rest) == 1 and rest[0] not in self.ports and "-from" not in opts
        self.ports[rest[0]] = (opts["-dir"], opts.get("-type"))
        return "port:" + rest[0]

    def do_create_bd_intf_port(self, *args):
        opts, rest = self._options(args)
        assert len(rest) == 1 and rest[0] not in self.intf_ports
        self.intf_ports[rest[0]] = (opts["-mode"], opts["-vlnv"])
        return "intf_port:" + rest[0]

    def do_get_bd_ports(self, name):
        assert name in self.ports, name
        return "port:" + name

    def do_get_bd_intf_ports(self, name):
        assert name in self.intf_ports, name
        return "intf_port:" + name

    def _pin(self, path, kind):
        cell, pin = path.split("/")
        assert pin in IP_PINS[self.cells[cell]][kind], path
        return f"{('pin', 'intf_pin', 'space')[kind]}:{path}"

    def do_get_bd_pins(self, path):
        return self._pin(path, 0)

    def do_get_bd_intf_pins(self, path):
        return self._pin(path, 1)

    def do_get_bd_addr_spaces(self, path):
        return self._pin(path, 2)

    def do_get_bd_addr_segs(self, path):
        port, seg = path.split("/")
        assert port in self.intf_ports and seg == "Reg", path
        return "seg:" + path

    def do_connect_bd_net(self, *objs):
        assert len(objs) >= 2 and all(o.startswith(("pin:", "port:")) for o in objs), objs
        self.nets.append(set(objs))

    def do_connect_bd_intf_net(self, *objs):
        assert len(objs) == 2 and all(o.startswith(("intf_pin:", "intf_port:")) for o in objs), objs
        self.intf_nets.append(set(objs))

    def do_assign_bd_address(self, *args):
        self.address = self._options(args, flags=("-force",))

    def do_get_files(self, name):
        assert name == self.bd[1] + ".bd"
        return f"{self.bd[0]}/{self.bd[1]}/{name}"

    def do_make_wrapper(self, *args):
        opts, rest = self._options(args, flags=("-top",))
        assert opts["-top"] and not rest
        return f"{self.bd[0]}/{self.bd[1]}/hdl/{self.bd[1]}_wrapper.v"

    def wrapper_ports(self):
        """The wrapper's ports as Vivado derives them from the block design's external ports."""
        ports = {}
        for name, (direction, _) in self.ports.items():
            ports[name] = (direction.lower(), 1)
        for name, (mode, _) in self.intf_ports.items():
            cfg = self.props["intf_port:" + name]
            assert mode == "Master" and cfg["CONFIG.PROTOCOL"] == "AXI4LITE"
            assert cfg["CONFIG.DATA_WIDTH"] == "32"
            for suffix, (direction, width) in AXIL.items():
                width = int(cfg["CONFIG.ADDR_WIDTH"]) if width is None else width
                ports[f"{name}_{suffix}"] = (direction, width)
        return ports


def run_fake(tmp_path, monkeypatch, **kwargs):
    tkinter = pytest.importorskip("tkinter")
    monkeypatch.chdir(tmp_path)
    tcl = tkinter.Tcl()
    fake = FakeVivado(tcl)
    tcl.eval(ps_block_design_tcl(**kwargs))
    return fake


CASES = [
    {},
    dict(
        name="soc",
        axil_port="s_ctrl",
        clock_port="clk",
        reset_port="rstn",
        addr_width=20,
        range_bytes=65536,
        base_address=0xA001_0000,
        clock_hz=100_000_000,
    ),
]


@pytest.mark.parametrize("kwargs", CASES)
def test_tcl_runs_and_builds_the_intended_design(tmp_path, monkeypatch, kwargs):
    name = kwargs.get("name", "pezo_ps")
    axil, clock, reset = (
        kwargs.get("axil_port", "M_AXIL"),
        kwargs.get("clock_port", "aclk"),
        kwargs.get("reset_port", "aresetn"),
    )
    stale = tmp_path / "bd" / name / "stale.txt"  # a previous run's block design is removed first
    stale.parent.mkdir(parents=True)
    stale.write_text("old")
    fake = run_fake(tmp_path, monkeypatch, **kwargs)
    assert not stale.exists()
    assert fake.bd == (str(tmp_path / "bd"), name)

    # the wrapper Vivado would write is exactly the one we describe
    wrapper = ps_wrapper_ports(
        name=name, axil_port=axil, clock_port=clock, reset_port=reset, addr_width=kwargs.get("addr_width", 12)
    )
    assert fake.wrapper_ports() == {p.name: (p.direction, p.width) for p in wrapper.ports}
    added = [args for cmd, args in fake.calls if cmd == "add_files"]
    assert added == [("-norecurse", f"{tmp_path / 'bd'}/{name}/hdl/{wrapper.module}.v")]

    # cells and the PS configuration
    assert fake.cells == {
        "zynq_ultra_ps_e_0": "xilinx.com:ip:zynq_ultra_ps_e",
        "axi_interconnect_0": "xilinx.com:ip:axi_interconnect",
        "proc_sys_reset_0": "xilinx.com:ip:proc_sys_reset",
    }
    ps = fake.props["cell:zynq_ultra_ps_e_0"]
    assert ps == {f"CONFIG.{k}": v for k, v in PS_PROPERTIES}
    assert ps["CONFIG.PSU__USE__M_AXI_GP0"] == "1" and ps["CONFIG.PSU__MAXIGP0__DATA_WIDTH"] == "128"
    assert ps["CONFIG.PSU__USE__M_AXI_GP1"] == ps["CONFIG.PSU__USE__M_AXI_GP2"] == "0"
    assert fake.props["cell:axi_interconnect_0"] == {"CONFIG.NUM_SI": "1", "CONFIG.NUM_MI": "1"}

    # ports: clock frequency and association, reset polarity, AXI4-Lite settings
    hz = str(kwargs.get("clock_hz", 125_000_000))
    assert fake.ports == {clock: ("I", "clk"), reset: ("O", "rst")}
    assert fake.props["port:" + clock] == {"CONFIG.FREQ_HZ": hz, "CONFIG.ASSOCIATED_BUSIF": axil}
    assert fake.props["port:" + reset] == {"CONFIG.POLARITY": "ACTIVE_LOW"}
    assert fake.props["intf_port:" + axil]["CONFIG.FREQ_HZ"] == hz

    # nets: one clock everywhere, pl_resetn0 through proc_sys_reset, AXI through the interconnect
    ic, rst, psc = "pin:axi_interconnect_0/", "pin:proc_sys_reset_0/", "pin:zynq_ultra_ps_e_0/"
    assert {
        "port:" + clock,
        psc + "maxihpm0_fpd_aclk",
        ic + "ACLK",
        ic + "S00_ACLK",
        ic + "M00_ACLK",
        rst + "slowest_sync_clk",
    } in fake.nets
    assert {psc + "pl_resetn0", rst + "ext_reset_in"} in fake.nets
    assert {rst + "interconnect_aresetn", ic + "ARESETN", ic + "S00_ARESETN", ic + "M00_ARESETN"} in fake.nets
    assert {rst + "peripheral_aresetn", "port:" + reset} in fake.nets
    assert len(fake.nets) == 4
    pins = [p for net in fake.nets for p in net]
    assert len(pins) == len(set(pins))  # no pin driven twice
    assert fake.intf_nets == [
        {"intf_pin:zynq_ultra_ps_e_0/M_AXI_HPM0_FPD", "intf_pin:axi_interconnect_0/S00_AXI"},
        {"intf_pin:axi_interconnect_0/M00_AXI", "intf_port:" + axil},
    ]

    # address map
    opts, rest = fake.address
    base, size = kwargs.get("base_address", 0xA000_0000), kwargs.get("range_bytes", 4096)
    assert int(opts["-offset"], 16) == base
    assert opts["-range"] == {4096: "4K", 65536: "64K"}[size]
    assert opts["-target_address_space"] == "space:zynq_ultra_ps_e_0/Data" and opts["-force"] is True
    assert rest == [f"seg:{axil}/Reg"]

    # order: build, validate, save, global synthesis mode, generate, wrapper, add, compile order
    seq = [cmd for cmd, _ in fake.calls]
    bd_file = f"{tmp_path / 'bd'}/{name}/{name}.bd"
    mode = seq.index(
        "set_property",
        [i for i, (c, a) in enumerate(fake.calls) if c == "set_property" and a[0] == "synth_checkpoint_mode"][0],
    )
    assert fake.calls[mode][1] == ("synth_checkpoint_mode", "None", bd_file)
    steps = [
        seq.index("create_bd_design"),
        seq.index("assign_bd_address"),
        seq.index("validate_bd_design"),
        seq.index("save_bd_design"),
        mode,
        seq.index("generate_target"),
        seq.index("make_wrapper"),
        seq.index("add_files"),
        seq.index("update_compile_order"),
    ]
    assert steps == sorted(steps)
    assert max(i for i, c in enumerate(seq) if c.startswith(("create_bd_", "connect_bd_"))) < steps[2]
    assert fake.calls[steps[5]][1] == ("all", bd_file)
    assert fake.calls[steps[8]][1] == ("-fileset", "sources_1")
