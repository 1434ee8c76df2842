"""The ZCU102 target: pins against the public XDC, the build plan's files, the PS wrapper hookup,
SAIF reading, the register header, and `pezo build` (files, refusals, no Vivado)."""

import json
import re
import shutil
import subprocess

import pytest

from pezo.boards.ps_block_design import ps_wrapper_ports
from pezo.boards.zcu102 import (
    CLOCK_PINS,
    LED_PINS,
    PART,
    RESET_PIN,
    ZCU102Platform,
    build_plan,
    registers_header,
    write_design,
)
from pezo.cli.main import main
from pezo.golden.config import PerturbConfig
from pezo.golden.regs.stream import addr_width, register_map

# alexforencich/verilog-ethernet example/ZCU102/fpga/fpga.xdc, verbatim pin/IOSTANDARD pairs
FORENCICH_XDC = {
    "clk_125mhz_p": ("G21", "LVDS_25"),
    "clk_125mhz_n": ("F21", "LVDS_25"),
    "led[0]": ("AG14", "LVCMOS33"),
    "led[1]": ("AF13", "LVCMOS33"),
    "led[2]": ("AE13", "LVCMOS33"),
    "led[3]": ("AJ14", "LVCMOS33"),
    "led[4]": ("AJ15", "LVCMOS33"),
    "led[5]": ("AH13", "LVCMOS33"),
    "led[6]": ("AH14", "LVCMOS33"),
    "led[7]": ("AL12", "LVCMOS33"),
    "reset": ("AM13", "LVCMOS33"),
}


def _xdc_pins(text):
    """{port: (LOC, IOSTANDARD)} from an Amaranth-written XDC."""
    pins = {}
    for port, pin in re.findall(r'set_property LOC (\S+) \[get_ports "([^"]+)"\]', text):
        pins.setdefault(pin, [None, None])[0] = port
    for std, pin in re.findall(r'set_property IOSTANDARD "([^"]+)" \[get_ports "([^"]+)"\]', text):
        pins[pin][1] = std
    return {k: tuple(v) for k, v in pins.items()}


@pytest.fixture(scope="module")
def design(tmp_path_factory):
    out = tmp_path_factory.mktemp("zcu102")
    saif = out.parent / "activity.saif"
    saif.write_text("(SAIFILE)\n")
    files = write_design(PerturbConfig(), out, saif=saif)
    return out, files


def test_platform_pins_match_the_public_xdc():
    assert (ZCU102Platform.device, ZCU102Platform.package, ZCU102Platform.speed) == ("xczu9eg", "ffvb1156", "2-e")
    assert PART == "xczu9eg-ffvb1156-2-e"
    assert CLOCK_PINS == (FORENCICH_XDC["clk_125mhz_p"][0], FORENCICH_XDC["clk_125mhz_n"][0])
    assert LED_PINS == tuple(FORENCICH_XDC[f"led[{i}]"][0] for i in range(8))
    assert RESET_PIN == FORENCICH_XDC["reset"][0]


def test_written_xdc_constrains_every_pin(design):
    out, _ = design
    pins = _xdc_pins((out / "top.xdc").read_text())
    assert pins["clk125_0__p"] == FORENCICH_XDC["clk_125mhz_p"]
    assert pins["clk125_0__n"] == FORENCICH_XDC["clk_125mhz_n"]
    assert pins["rst_0__io"] == FORENCICH_XDC["reset"]
    for i in range(8):
        assert pins[f"led_{i}__io"] == FORENCICH_XDC[f"led[{i}]"]
    assert "create_clock -name clk125_0__p -period 8.0" in (out / "top.xdc").read_text()


def test_build_writes_the_promised_files(design):
    out, files = design
    for name in ("top.v", "top.xdc", "top.tcl", "build_top.sh", "config.json", "pezo_regs.h", "top.saif"):
        assert name in files and (out / name).stat().st_size > 0
    meta = json.loads((out / "config.json").read_text())
    assert meta["part"] == PART and meta["config"] == PerturbConfig().to_dict()
    assert [r["name"] for r in meta["registers"]][:4] == ["ID", "VERSION", "STRATEGY", "LANES"]
    assert "vivado" in (out / "build_top.sh").read_text()


def test_tcl_builds_the_ps_then_reports_with_saif(design):
    out, _ = design
    tcl = (out / "top.tcl").read_text()
    order = [
        "create_project -force -name top -part xczu9eg-ffvb1156-2-e",
        "read_xdc top.xdc",
        "create_bd_design",
        "make_wrapper",
        "synth_design -top top",
        "report_utilization",
        "read_saif -strip_path pezo_power_tb/dut top.saif",
        "report_power",
        "write_bitstream",
    ]
    positions = [tcl.index(step) for step in order]
    assert positions == sorted(positions)
    assert "report_timing_summary" in tcl


def test_top_instantiates_the_ps_wrapper_port_for_port(design):
    out, _ = design
    verilog = (out / "top.v").read_text()
    wrapper = ps_wrapper_ports(addr_width=addr_width(PerturbConfig()))
    instance = re.search(rf"{wrapper.module} ps \((.*?)\);", verilog, re.S).group(1)
    connected = set(re.findall(r"\.(\w+)\(", instance))
    assert connected == {p.name for p in wrapper.ports}
    assert "BUFG clk_bufg" in verilog and "IBUFDS" in verilog
    assert "module pezo_ps_wrapper" not in verilog  # a black box, made by the Tcl


def test_no_saif_no_read_saif():
    plan = build_plan(PerturbConfig(strategy="pregen"))
    assert "read_saif" not in plan.files["top.tcl"]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_register_header_compiles_and_matches_the_map(tmp_path):
    config = PerturbConfig(strategy="gaussian")
    header = registers_header(config)
    for r in register_map(config):
        if not r.name.startswith("RESULT_"):
            assert re.search(rf"#define PEZO_{r.name}\s+0x{r.offset:02X}u", header), r.name
    (tmp_path / "pezo_regs.h").write_text(header)
    (tmp_path / "t.c").write_text(
        '#include "pezo_regs.h"\n_Static_assert(PEZO_RESULT(7) == 0x5C, "");\n'
        '_Static_assert(PEZO_STRATEGY_VALUE == 2, "");\nint main(void){return 0;}\n'
    )
    subprocess.run(["gcc", "-fsyntax-only", "-Wall", "-Werror", str(tmp_path / "t.c")], check=True)


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_pezo_build_without_vivado_prints_what_to_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no vivado
    out = tmp_path / "z"
    code, text, err = run(["build", "--strategy", "pregen", "--out", str(out)], capsys)
    assert code == 0, err
    assert f"cd {out} && bash build_top.sh" in text and "Vivado is not on PATH" in text
    assert json.loads((out / "config.json").read_text())["config"]["strategy"] == "pregen"
    # a non-empty directory is refused, even pezo's own, without --force
    code, text, err = run(["build", "--out", str(out)], capsys)
    assert code == 2 and "is not empty" in err and text == ""
    code, text, err = run(["build", "--out", str(out), "--force"], capsys)
    assert code == 0 and "replaced" in text
    assert json.loads((out / "config.json").read_text())["config"]["strategy"] == "otf"


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["build", "--board", "zcu104"], "board must be one of zcu102, ulx3s-85f, got 'zcu104'"),
        (["build", "--strategy", "uniform"], "strategy must be one of otf, pregen, gaussian"),
        (
            ["build", "--strategy", "otf", "--pool-size", "1023"],
            "--pool-size applies to --strategy pregen only, not otf",
        ),
        (["build", "--strategy", "pregen", "--n-rngs", "8"], "--n-rngs applies to --strategy otf only, not pregen"),
        (["build", "--saif", "/nonexistent.saif"], "--saif /nonexistent.saif: no such file"),
        (["build", "--rng-bits", "20"], "--rng-bits must be in 3..16 for the scale LUT"),
        (["build", "--out", "/proc/pezo"], "is not writable"),
        (["build", "--rewind"], "--rewind does not apply to pezo build"),
    ],
)
def test_pezo_build_bad_input(argv, needle, capsys, tmp_path):
    if "--out" not in argv:
        argv = argv + ["--out", str(tmp_path / "o")]
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and needle in err, err
    assert not (tmp_path / "o").exists()


def test_pezo_build_refuses_a_file_as_out(tmp_path, capsys):
    path = tmp_path / "file"
    path.write_text("x")
    code, _, err = run(["build", "--out", str(path)], capsys)
    assert code == 2 and "is not a directory" in err and path.read_text() == "x"


@pytest.mark.rtl
def test_pezo_power_writes_a_saif_that_pezo_build_reads(tmp_path, capsys, require_simulator):
    require_simulator("icarus")
    saif = tmp_path / "act.saif"
    code, text, err = run(
        ["power", "--strategy", "gaussian", "--lanes", "2", "--perturb-dim", "64", "--saif", str(saif), "--json"],
        capsys,
    )
    assert code == 0, err
    result = json.loads(text)
    assert result["activity_proxy"] > 0 and result["note"] == "relative switching-activity proxy, not watts"
    body = saif.read_text()
    assert body.count("(") == body.count(")") and "(INSTANCE pezo_power_tb" in body and "(INSTANCE stream" in body
    out = tmp_path / "z"
    code, text, err = run(
        ["build", "--strategy", "gaussian", "--lanes", "2", "--saif", str(saif), "--out", str(out), "--no-vivado"],
        capsys,
    )
    assert code == 0, err
    assert (out / "top.saif").read_text() == body and "power with top.saif" in text
    assert "read_saif -strip_path pezo_power_tb/dut top.saif" in (out / "top.tcl").read_text()


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["power", "--perturb-dim", "100000"], "perturb_dim must be in 1..65536 for the activity run"),
        (["power", "--steps", "0"], "steps must be an integer in 1..100"),
        (["power", "--saif", "/nonexistent/x.saif"], "the directory /nonexistent does not exist"),
    ],
)
def test_pezo_power_bad_input(argv, needle, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and needle in err and err.count("\n") == 1, err


def test_pezo_build_runs_vivado_when_it_is_on_path(tmp_path, capsys, monkeypatch):
    """A stand-in `vivado` on PATH (it checks its arguments and writes a real post-place report): pezo
    build runs build_top.sh and prints the parsed utilisation."""
    from pathlib import Path

    fixture = Path(__file__).parents[1] / "fixtures" / "vivado" / "xczu9eg_fios2048_postroute.rpt"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "vivado").write_text(
        "#!/bin/sh\n"
        '[ "$1 $2 $3 $4 $5 $6" = "-mode batch -log top.log -source top.tcl" ] || exit 3\n'
        f'cp "{fixture}" top_utilization_place.rpt\necho done > top.log\n'
    )
    (bin_dir / "vivado").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    out = tmp_path / "z"
    code, text, err = run(["build", "--out", str(out)], capsys)
    assert code == 0, err
    assert "report_utilization (post-place): 5025 LUT, 10097 FF, 0 BRAM, 28 DSP" in text
    assert (out / "top.log").read_text() == "done\n"
