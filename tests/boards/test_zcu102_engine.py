"""The ZCU102 design of the engine top: the block-design Tcl run against stand-in Vivado commands (no Vivado
here), the wrapper it implies equals the one top.v instantiates, the written files (config.json, the C
header and example compile), and the board-side driver entry refusing a device that is no engine."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from pezo.boards.engine_block_design import (
    AXI4_SIGNALS,
    default_windows_base,
    engine_block_design_tcl,
    engine_wrapper_ports,
)
from pezo.boards.ps_block_design import AXI4LITE_SIGNALS
from pezo.boards.zcu102_engine import addresses, write_engine_design
from pezo.golden.engine.nets import net_config
from pezo.golden.regs.engine import BoardMap

CONFIG = net_config("digits-mlp", batch=16)
PINS = {
    "zynq_ultra_ps_e": {"maxihpm0_fpd_aclk", "pl_resetn0", "pl_ps_irq0", "M_AXI_HPM0_FPD", "Data"},
    "axi_interconnect": {
        "ACLK",
        "ARESETN",
        "S00_ACLK",
        "S00_ARESETN",
        "M00_ACLK",
        "M00_ARESETN",
        "M01_ACLK",
        "M01_ARESETN",
        "S00_AXI",
        "M00_AXI",
        "M01_AXI",
    },
    "proc_sys_reset": {"slowest_sync_clk", "ext_reset_in", "interconnect_aresetn", "peripheral_aresetn"},
}


class StandInVivado:
    """Records what the Tcl builds: cells, ports and their properties, nets, address segments."""

    def __init__(self, tcl):
        self.tcl, self.cells, self.ports, self.intf, self.props = tcl, {}, {}, {}, {}
        self.nets, self.intf_nets, self.segments, self.calls = [], [], [], []
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
            tcl.createcommand(name, self._command(name))

    def _command(self, name):
        def run(*args):
            self.calls.append(name)
            return getattr(self, "do_" + name, lambda *a: "")(*args)

        return run

    @staticmethod
    def _opts(args):
        opts, rest, it = {}, [], iter(args)
        for a in it:
            if a == "-force" or a == "-top":
                opts[a] = True
            elif a.startswith("-"):
                opts[a] = next(it)
            else:
                rest.append(a)
        return opts, rest

    def do_create_bd_cell(self, *args):
        opts, (name,) = self._opts(args)
        self.cells[name] = opts["-vlnv"].split(":")[2]
        return "cell:" + name

    def do_set_property(self, *args):
        if args[0] == "-dict":
            items = self.tcl.splitlist(args[1])
            self.props.setdefault(args[2], {}).update(dict(zip(items[::2], items[1::2])))
        else:
            self.props.setdefault(args[2], {})[args[0]] = args[1]

    def do_create_bd_port(self, *args):
        opts, (name,) = self._opts(args)
        self.ports[name] = (opts["-dir"], opts["-type"])
        return "port:" + name

    def do_create_bd_intf_port(self, *args):
        opts, (name,) = self._opts(args)
        self.intf[name] = opts["-mode"]
        return "intf_port:" + name

    def do_get_bd_ports(self, name):
        assert name in self.ports, name
        return "port:" + name

    def do_get_bd_intf_ports(self, name):
        assert name in self.intf, name
        return "intf_port:" + name

    def _pin(self, path):
        cell, pin = path.split("/")
        assert pin in PINS[self.cells[cell]], path
        return "pin:" + path

    do_get_bd_pins = do_get_bd_intf_pins = do_get_bd_addr_spaces = _pin

    def do_get_bd_addr_segs(self, path):
        assert path.split("/")[0] in self.intf and path.endswith("/Reg"), path
        return "seg:" + path

    def do_connect_bd_net(self, *objs):
        self.nets.append(set(objs))

    def do_connect_bd_intf_net(self, *objs):
        self.intf_nets.append(set(objs))

    def do_assign_bd_address(self, *args):
        opts, (seg,) = self._opts(args)
        self.segments.append((seg, int(opts["-offset"], 16), opts["-range"]))

    def do_get_files(self, name):
        return "bd/" + name

    def do_make_wrapper(self, *args):
        return "bd/wrapper.v"

    def wrapper(self) -> dict:
        """The wrapper's ports as Vivado derives them from the external ports."""
        out = {name: (d.lower(), 1) for name, (d, _) in self.ports.items()}
        signals = {"AXI4LITE": [(s, d, 32 if w == 32 else w) for s, d, w in AXI4LITE_SIGNALS], "AXI4": AXI4_SIGNALS}
        for name in self.intf:
            cfg = self.props["intf_port:" + name]
            for suffix, direction, width in signals[cfg["CONFIG.PROTOCOL"]]:
                w = (
                    int(cfg["CONFIG.ADDR_WIDTH"])
                    if width is None
                    else int(cfg["CONFIG.ID_WIDTH"])
                    if width == "id"
                    else width
                )
                out[f"{name}_{suffix}"] = (direction, w)
        return out


def run_tcl(tmp_path, monkeypatch, addr_width):
    tkinter = pytest.importorskip("tkinter")
    monkeypatch.chdir(tmp_path)
    tcl = tkinter.Tcl()
    fake = StandInVivado(tcl)
    tcl.eval(engine_block_design_tcl(addr_width))
    return fake


@pytest.mark.parametrize("addr_width", [16, 20])
def test_tcl_builds_two_masters_and_the_interrupt(tmp_path, monkeypatch, addr_width):
    fake = run_tcl(tmp_path, monkeypatch, addr_width)
    wrapper = engine_wrapper_ports(addr_width)
    assert fake.wrapper() == {p.name: (p.direction, p.width) for p in wrapper.ports}
    assert fake.props["cell:zynq_ultra_ps_e_0"]["CONFIG.PSU__USE__IRQ0"] == "1"
    assert fake.props["cell:axi_interconnect_0"] == {"CONFIG.NUM_SI": "1", "CONFIG.NUM_MI": "2"}
    axi = fake.props["intf_port:M_AXI"]
    assert (axi["CONFIG.PROTOCOL"], axi["CONFIG.DATA_WIDTH"], axi["CONFIG.ID_WIDTH"]) == ("AXI4", "64", "16")
    assert fake.props["port:aclk"]["CONFIG.ASSOCIATED_BUSIF"] == "M_AXIL:M_AXI"
    assert {"port:irq", "pin:zynq_ultra_ps_e_0/pl_ps_irq0"} in fake.nets
    assert {"pin:axi_interconnect_0/M01_AXI", "intf_port:M_AXI"} in fake.intf_nets
    pins = [p for net in fake.nets for p in net]
    assert len(pins) == len(set(pins)) and "pin:axi_interconnect_0/M01_ACLK" in pins
    (regs, regs_base, regs_range), (win, win_base, win_range) = fake.segments
    assert (regs, regs_base, regs_range) == ("seg:M_AXIL/Reg", 0xA000_0000, "4K")
    assert win == "seg:M_AXI/Reg" and win_base == default_windows_base(addr_width) and win_base % (1 << addr_width) == 0
    assert win_base >= regs_base + 4096
    assert fake.calls.index("validate_bd_design") > max(i for i, c in enumerate(fake.calls) if c.startswith("connect"))


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="addr_width must be in 12..27"):
        engine_block_design_tcl(30)
    with pytest.raises(ValueError, match="windows_base must be a multiple of 0x10000"):
        engine_block_design_tcl(16, windows_base=0xA000_1000)
    with pytest.raises(ValueError, match="overlap"):
        engine_block_design_tcl(16, windows_base=0xA000_0000)


@pytest.mark.parametrize("config", [CONFIG, net_config("digits-cnn", batch=16)], ids=["digits-mlp", "digits-cnn"])
def test_written_design_instantiates_the_wrapper_and_describes_the_map(config, tmp_path):
    """Also a conv net (issue 33): its map sizes the x window by layer 0's patches, the header compiles."""
    files = write_engine_design(config, tmp_path)
    assert {"top.v", "top.xdc", "top.tcl", "build_top.sh", "config.json", "pezo_regs.h", "pezo_example.c"} <= set(files)
    bmap = BoardMap(config)
    wrapper = engine_wrapper_ports(bmap.addr_width)
    top = (tmp_path / "top.v").read_text()
    instance = top[top.index(f"{wrapper.module} ps (") :]
    instance = instance[: instance.index(");")]
    assert set(re.findall(r"\.(\w+)\(", instance)) == set(wrapper.names())
    assert "create_bd_design" in (tmp_path / "top.tcl").read_text()
    described = json.loads((tmp_path / "config.json").read_text())
    assert described["design"] == "engine" and described["map"] == json.loads(bmap.to_json())
    assert {k: described[k] for k in ("regs_base", "windows_base", "windows_size", "regs_size")} == addresses(config)
    header = (tmp_path / "pezo_regs.h").read_text()
    assert f"#define PEZO_WINDOWS_BASE 0x{addresses(config)['windows_base']:08X}u" in header
    assert "#define PEZO_REG_STATUS" in header and f"#define PEZO_X_BYTES {bmap.x_bytes}u" in header
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed: the C header and example were not compiled")
    run = subprocess.run(
        [gcc, "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "pezo_example.c"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr


def test_the_board_entry_refuses_a_device_that_is_no_engine(tmp_path, capsys):
    """``python -m pezo.driver`` on a zero-filled file standing in for /dev/mem (not the board)."""
    from pezo.driver.__main__ import main

    write_engine_design(CONFIG, tmp_path / "design")
    where = addresses(CONFIG)
    fake = tmp_path / "not-the-board-devmem"
    with open(fake, "wb") as f:
        f.truncate(where["windows_base"] + where["windows_size"])
    assert main(["--design", str(tmp_path / "design"), "--mem", str(fake), "--steps", "2"]) == 1
    assert "not the engine top of this configuration: ID 0x0" in capsys.readouterr().err
