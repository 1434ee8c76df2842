"""boards.flow.vivado: Vivado report_utilization parsing and run-directory lookup, on real public reports.

Expected numbers were read off the fixtures by eye (tests/fixtures/vivado/SOURCES.md names their origin).
"""

import os
import shutil
from pathlib import Path

import pytest

from pezo.boards.flow.vivado import VivadoReportError, find_utilization_report, parse_utilization, read_vivado_run

FIXTURES = Path(__file__).parents[1] / "fixtures" / "vivado"
ZU9EG = FIXTURES / "xczu9eg_fios2048_postroute.rpt"
ZU48DR_PLACED = FIXTURES / "xczu48dr_design_1_wrapper_utilization_placed.rpt"
ZU48DR_SYNTH = FIXTURES / "xczu48dr_design_1_wrapper_utilization_synth.rpt"
Z7020 = FIXTURES / "xc7z020_design_1_wrapper_utilization_placed.rpt"
A35T = FIXTURES / "xc7a35t_top_utilization_place.rpt"

EXPECTED = {
    # UltraScale+, the ZCU102's part; a `report_utilization -cells` report of one instance, post-route.
    ZU9EG: dict(
        LUT=5025,
        LUT_logic=4353,
        LUTRAM=672,
        SRL=0,
        FF=10097,
        CARRY=0,
        RAMB36=0,
        RAMB18=0,
        BRAM=0,
        BRAM_tiles=0.0,
        DSP=28,
        device="xczu9eg-ffvb1156-2-e",
        tool_version="2022.1.2",
        design="impl_top_bd_wrapper",
        design_state="Physopt postRoute",
        available={"LUT": 274080, "FF": 548160, "BRAM_tiles": 912.0, "DSP": 2520},
    ),
    # UltraScale+ RFSoC, whole design, post-place: half a BRAM tile, SRLs, CARRY8, DSPs all non-zero.
    ZU48DR_PLACED: dict(
        LUT=29992,
        LUT_logic=9113,
        LUTRAM=20879,
        SRL=20647,
        FF=25689,
        CARRY=91,
        RAMB36=66,
        RAMB18=1,
        BRAM=67,
        BRAM_tiles=66.5,
        DSP=376,
        device="xczu48dr-ffvg1517-2-e",
        tool_version="2024.1",
        design="design_1_wrapper",
        design_state="Fully Placed",
        available={"LUT": 425280, "FF": 850560, "BRAM_tiles": 1080.0, "DSP": 4272},
    ),
    # Same project, post-synth: "CLB LUTs*" (asterisk), everything in black boxes, no SRL row.
    ZU48DR_SYNTH: dict(
        LUT=0,
        LUT_logic=0,
        LUTRAM=0,
        SRL=0,
        FF=0,
        CARRY=0,
        RAMB36=0,
        RAMB18=0,
        BRAM=0,
        BRAM_tiles=0.0,
        DSP=0,
        device="xczu48dr-ffvg1517-2-e",
        tool_version="2024.1",
        design="design_1_wrapper",
        design_state="Synthesized",
        available={"LUT": 425280, "FF": 850560, "BRAM_tiles": 1080.0, "DSP": 4272},
    ),
    # 7-series (Zynq-7020), Vivado 2022.1: "Slice LUTs", Prohibited column, CARRY4 only among primitives.
    Z7020: dict(
        LUT=5417,
        LUT_logic=5229,
        LUTRAM=188,
        SRL=170,
        FF=6173,
        CARRY=236,
        RAMB36=7,
        RAMB18=6,
        BRAM=13,
        BRAM_tiles=10.0,
        DSP=0,
        device="xc7z020clg400-1",
        tool_version="2022.1",
        design="design_1_wrapper",
        design_state="Fully Placed",
        available={"LUT": 53200, "FF": 106400, "BRAM_tiles": 140.0, "DSP": 220},
    ),
    # 7-series (Artix-7 35T), Vivado 2018.2.1: no Prohibited column; the name Amaranth's template uses.
    A35T: dict(
        LUT=230,
        LUT_logic=230,
        LUTRAM=0,
        SRL=0,
        FF=177,
        CARRY=15,
        RAMB36=0,
        RAMB18=0,
        BRAM=0,
        BRAM_tiles=0.0,
        DSP=0,
        device="7a35tcpg236-1",
        tool_version="2018.2.1",
        design="top",
        design_state="Fully Placed",
        available={"LUT": 20800, "FF": 41600, "BRAM_tiles": 50.0, "DSP": 90},
    ),
}


@pytest.mark.parametrize("path", list(EXPECTED), ids=lambda p: p.stem)
def test_parse_fixture_exact_numbers(path):
    parsed = parse_utilization(path.read_text())
    assert parsed == EXPECTED[path]
    for key in ("LUT", "LUT_logic", "LUTRAM", "SRL", "FF", "CARRY", "RAMB36", "RAMB18", "BRAM", "DSP"):
        assert type(parsed[key]) is int, key
    assert type(parsed["BRAM_tiles"]) is float


def test_windows_line_endings():
    text = Z7020.read_text()
    assert parse_utilization(text.replace("\n", "\r\n")) == parse_utilization(text)


def test_lut_total_is_logic_plus_memory():
    for path in EXPECTED:
        parsed = parse_utilization(path.read_text())
        assert parsed["LUT"] == parsed["LUT_logic"] + parsed["LUTRAM"], path.name


def test_columns_are_found_by_header_not_position():
    """Swapping columns and dropping Fixed/Prohibited/Util% must not change what is read."""
    text = "\n".join(
        [
            "| Device       : xczu9eg-ffvb1156-2-e",
            "+-----------+-----------+------------+-------+",
            "| Site Type | Available | Prohibited |  Used |",
            "+-----------+-----------+------------+-------+",
            "| CLB LUTs* |    274080 |          0 |  1234 |",
            "| DSPs      |      2520 |          0 |     7 |",
            "+-----------+-----------+------------+-------+",
            "",
        ]
    )
    parsed = parse_utilization(text)
    assert (parsed["LUT"], parsed["DSP"], parsed["FF"]) == (1234, 7, 0)
    assert parsed["available"] == {"LUT": 274080, "FF": None, "BRAM_tiles": None, "DSP": 2520}


@pytest.mark.parametrize("text", ["", "hello\n", ZU9EG.read_text().replace("CLB LUTs", "CLB LUTZ")])
def test_not_a_report_raises(text):
    with pytest.raises(VivadoReportError, match="CLB LUTs"):
        parse_utilization(text)


def test_hierarchical_report_is_not_a_flat_report():
    text = "\n".join(
        [
            "+----------+--------+------------+------------+---------+------+------+",
            "| Instance | Module | Total LUTs | Logic LUTs | LUTRAMs | SRLs |  FFs |",
            "+----------+--------+------------+------------+---------+------+------+",
            "| top      |  (top) |         10 |         10 |       0 |    0 |   12 |",
            "+----------+--------+------------+------------+---------+------+------+",
            "",
        ]
    )
    with pytest.raises(VivadoReportError):
        parse_utilization(text)


def _copy(src: Path, dst: Path, mtime: float | None = None) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    if mtime is not None:
        os.utime(dst, (mtime, mtime))
    return dst


def test_amaranth_run_dir_prefers_place_over_synth(tmp_path):
    _copy(ZU48DR_SYNTH, tmp_path / "top_utilization_synth.rpt")
    place = _copy(ZU48DR_PLACED, tmp_path / "top_utilization_place.rpt")
    assert find_utilization_report(tmp_path) == place
    result = read_vivado_run(tmp_path)
    assert result["stage"] == "post-place"
    assert result["tool"] == "Vivado 2024.1 report_utilization (post-place)"
    assert result["report"] == str(place)
    assert (result["LUT"], result["BRAM_tiles"], result["DSP"]) == (29992, 66.5, 376)


def test_synth_only_run_dir(tmp_path):
    synth = _copy(ZU48DR_SYNTH, tmp_path / "top_utilization_synth.rpt")
    assert find_utilization_report(tmp_path) == synth
    result = read_vivado_run(str(tmp_path))
    assert result["stage"] == "post-synth"
    assert result["tool"] == "Vivado 2024.1 report_utilization (post-synth)"


def test_hierarchical_reports_are_ignored(tmp_path):
    # Newer than the flat report, and "place": still never chosen.
    _copy(A35T, tmp_path / "top_utilization_hierarchical_place.rpt", mtime=2_000_000_000)
    _copy(A35T, tmp_path / "top_utilization_hierarchical_synth.rpt", mtime=2_000_000_000)
    synth = _copy(A35T, tmp_path / "top_utilization_synth.rpt", mtime=1_000_000_000)
    assert find_utilization_report(tmp_path) == synth
    (tmp_path / "top_utilization_synth.rpt").unlink()
    with pytest.raises(VivadoReportError, match="no Vivado utilization report"):
        find_utilization_report(tmp_path)


def test_newest_of_several_designs_wins(tmp_path):
    _copy(A35T, tmp_path / "old_utilization_place.rpt", mtime=1_000_000_000)
    new = _copy(Z7020, tmp_path / "new_utilization_place.rpt", mtime=1_500_000_000)
    assert find_utilization_report(tmp_path) == new


def test_vivado_project_layout(tmp_path):
    runs = tmp_path / "x.runs"
    _copy(ZU48DR_SYNTH, runs / "synth_1" / "top_utilization_synth.rpt")
    # An IP's out-of-context run must not be taken for the top-level synthesis.
    _copy(Z7020, runs / "design_1_ip_0_synth_1" / "design_1_ip_0_utilization_synth.rpt")
    placed = _copy(ZU9EG, runs / "impl_1" / "top_utilization_placed.rpt")
    for where in (tmp_path, runs, runs / "impl_1"):  # the project dir, its .runs dir, the run dir
        assert find_utilization_report(where) == placed, where
    result = read_vivado_run(tmp_path)
    assert result["stage"] == "post-place"  # "Physopt postRoute"
    assert result["tool"] == "Vivado 2022.1.2 report_utilization (post-place)"
    assert (result["LUT"], result["DSP"], result["device"]) == (5025, 28, "xczu9eg-ffvb1156-2-e")

    placed.unlink()
    synth = runs / "synth_1" / "top_utilization_synth.rpt"
    assert find_utilization_report(tmp_path) == synth
    assert read_vivado_run(tmp_path)["stage"] == "post-synth"


def test_directory_above_the_project(tmp_path):
    placed = _copy(
        ZU48DR_PLACED, tmp_path / "project_1" / "project_1.runs" / "impl_1" / "design_1_wrapper_utilization_placed.rpt"
    )
    assert find_utilization_report(tmp_path) == placed


def test_direct_report_path(tmp_path):
    path = _copy(Z7020, tmp_path / "anything.txt")
    assert find_utilization_report(path) == path
    result = read_vivado_run(path)
    assert result["stage"] == "post-place"  # from "Design State : Fully Placed"
    assert result["tool"] == "Vivado 2022.1 report_utilization (post-place)"
    assert (result["CARRY"], result["BRAM"], result["BRAM_tiles"]) == (236, 13, 10.0)


def test_missing_directory_names_it(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(VivadoReportError, match="does not exist") as info:
        find_utilization_report(missing)
    assert str(missing) in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(VivadoReportError, match="does not exist"):
        read_vivado_run(missing)


def test_empty_directory_names_it(tmp_path):
    with pytest.raises(VivadoReportError) as info:
        find_utilization_report(tmp_path)
    message = str(info.value)
    assert str(tmp_path) in message and "_utilization_place.rpt" in message and "\n" not in message
    with pytest.raises(VivadoReportError, match="no Vivado utilization report"):
        read_vivado_run(tmp_path)


def test_non_report_file_names_it(tmp_path):
    bogus = tmp_path / "top_utilization_place.rpt"
    bogus.write_text("Copyright 1986-2022 Xilinx, Inc.\nthis is a timing summary, not utilization\n")
    with pytest.raises(VivadoReportError) as info:
        read_vivado_run(tmp_path)
    message = str(info.value)
    assert str(bogus) in message and "not a Vivado report_utilization report" in message
    assert "\n" not in message
    with pytest.raises(VivadoReportError, match="not a Vivado"):
        read_vivado_run(bogus)


def test_error_is_a_value_error():
    assert issubclass(VivadoReportError, ValueError)
