"""Read Vivado ``report_utilization`` text reports, so post-synthesis / post-place numbers can replace Yosys's.

Contract:

* ``parse_utilization(text)`` -> dict with integer ``LUT`` (the "CLB LUTs" / "Slice LUTs" total: logic +
  memory LUTs), ``LUT_logic`` ("LUT as Logic"), ``LUTRAM`` ("LUT as Memory": distributed RAM + shift
  registers), ``SRL`` ("LUT as Shift Register", 0 if the report does not split it), ``FF`` ("CLB Registers" /
  "Slice Registers"), ``CARRY`` (CARRY8 on UltraScale+, CARRY4 on 7-series: 7-series reports list CARRY4
  only in the Primitives table), ``RAMB36`` ("RAMB36/FIFO*"), ``RAMB18``, ``BRAM`` (= RAMB36 + RAMB18
  primitives), ``DSP`` ("DSPs"); float ``BRAM_tiles`` ("Block RAM Tile", 36 Kb tiles, may be x.5); strings
  ``device``, ``tool_version`` (e.g. "2024.1"), ``design``, ``design_state`` ("" when absent); and
  ``available``: {"LUT", "FF", "DSP": int, "BRAM_tiles": float} from the "Available" column (None when
  the row is missing). Tables are read by their header names, so both the UltraScale+ layout (CLB Logic,
  BLOCKRAM, ARITHMETIC) and the 7-series one (Slice Logic, Memory, DSP), with or without the
  "Prohibited" column, are understood. A missing row other than the LUT total counts as 0.
* ``find_utilization_report(run_dir)`` -> the report to read: a direct ``.rpt`` path, or in a directory
  post-place before post-synth: Amaranth's ``<name>_utilization_place.rpt`` / ``_synth.rpt``, or a Vivado
  project's ``*.runs/impl_1/*_utilization_placed.rpt`` / ``*.runs/synth_1/*_utilization_synth.rpt``
  (``*_utilization_hierarchical_*`` reports are never picked; among equals the newest file wins).
* ``read_vivado_run(run_dir)`` -> ``parse_utilization`` of that report plus ``stage`` ("post-place" or
  "post-synth"; a routed design counts as post-place), ``tool`` ("Vivado <version> report_utilization
  (<stage>)") and ``report`` (the path).

Errors are ``VivadoReportError`` (a ``ValueError``) with a one-line message.
Note: a report made with ``report_utilization -cells <inst>`` covers that instance only.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["VivadoReportError", "parse_utilization", "find_utilization_report", "read_vivado_run"]


class VivadoReportError(ValueError):
    """A Vivado report is missing or is not a ``report_utilization`` text report."""


_HEADER_RE = re.compile(r"^\|\s*(Tool Version|Design|Device|Design State|Command)\s*:\s*(.*?)\s*$")
_VERSION_RE = re.compile(r"\bv\.?\s*(\d{4}\.\d+(?:\.\d+)*)")
_BORDER_RE = re.compile(r"^\+[-+]+\+$")

# Site-type rows, by normalised name (stripped, trailing '*' removed, lower case).
_LUT_ROWS = ("clb luts", "slice luts")
_FF_ROWS = ("clb registers", "slice registers")
_CARRY_ROWS = ("carry8", "carry4")


def _number(cell: str) -> float | None:
    cell = cell.strip().replace(",", "")
    if not cell:
        return None
    try:
        return float(cell)
    except ValueError:
        return None


def _split_row(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip()[1:-1].split("|")]


def _tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every ``+---+`` bordered table as (header cells, data rows of cells)."""
    lines = [line.rstrip() for line in text.splitlines()]
    tables = []
    i = 0
    while i + 2 < len(lines):
        head = lines[i + 1].strip()
        if (
            _BORDER_RE.match(lines[i].strip())
            and head.startswith("|")
            and head.endswith("|")
            and _BORDER_RE.match(lines[i + 2].strip())
        ):
            header = [cell.lower() for cell in _split_row(head)]
            rows = []
            i += 3
            while i < len(lines):
                line = lines[i].strip()
                if not (line.startswith("|") and line.endswith("|")):
                    break
                rows.append(_split_row(line))
                i += 1
            tables.append((header, rows))
        else:
            i += 1
    return tables


def _normalise(name: str) -> str:
    return re.sub(r"\s+", " ", name.strip().rstrip("*").strip()).lower()


def parse_utilization(text: str) -> dict:
    """Parse the text of a (flat) Vivado ``report_utilization`` report; see the module docstring."""
    header: dict[str, str] = {}
    for line in text.splitlines():
        match = _HEADER_RE.match(line.strip())
        if match and match.group(1) not in header:
            header[match.group(1)] = match.group(2)

    sites: dict[str, tuple[float | None, float | None]] = {}  # name -> (used, available), first wins
    primitives: dict[str, float] = {}
    for columns, rows in _tables(text):
        if not columns or "used" not in columns:
            continue
        used_at = columns.index("used")
        avail_at = columns.index("available") if "available" in columns else None
        if columns[0] == "site type":
            for row in rows:
                if len(row) != len(columns):
                    continue
                name = _normalise(row[0])
                if name and name not in sites:
                    sites[name] = (_number(row[used_at]), _number(row[avail_at]) if avail_at is not None else None)
        elif columns[0] == "ref name" and len(columns) >= 2 and "functional category" in columns:
            for row in rows:
                if len(row) == len(columns):
                    used = _number(row[used_at])
                    if used is not None:
                        primitives.setdefault(row[0].strip().upper(), used)

    def row(names: tuple[str, ...]) -> tuple[float | None, float | None] | None:
        for name in names:
            if name in sites:
                return sites[name]
        return None

    def used(*names: str) -> int:
        found = row(names)
        return int(round(found[0])) if found and found[0] is not None else 0

    lut_row = row(_LUT_ROWS)
    if lut_row is None or lut_row[0] is None:
        raise VivadoReportError("not a Vivado report_utilization report: no 'CLB LUTs' or 'Slice LUTs' row")

    carry_row = row(_CARRY_ROWS)
    if carry_row is not None and carry_row[0] is not None:
        carry = int(round(carry_row[0]))
    else:  # 7-series reports list CARRY4 only among the primitives
        carry = int(round(primitives.get("CARRY8", primitives.get("CARRY4", 0))))

    ramb36, ramb18 = used("ramb36/fifo"), used("ramb18")
    tiles_row = row(("block ram tile",))

    def available(names: tuple[str, ...], kind: type) -> int | float | None:
        found = row(names)
        if found is None or found[1] is None:
            return None
        return float(found[1]) if kind is float else int(round(found[1]))

    tool_line = header.get("Tool Version", "")
    version = _VERSION_RE.search(tool_line)
    return {
        "LUT": int(round(lut_row[0])),
        "LUT_logic": used("lut as logic"),
        "LUTRAM": used("lut as memory"),
        "SRL": used("lut as shift register"),
        "FF": used(*_FF_ROWS),
        "CARRY": carry,
        "RAMB36": ramb36,
        "RAMB18": ramb18,
        "BRAM": ramb36 + ramb18,
        "BRAM_tiles": float(tiles_row[0]) if tiles_row and tiles_row[0] is not None else 0.0,
        "DSP": used("dsps"),
        "device": header.get("Device", ""),
        "tool_version": version.group(1) if version else tool_line,
        "design": header.get("Design", ""),
        "design_state": header.get("Design State", ""),
        "available": {
            "LUT": available(_LUT_ROWS, int),
            "FF": available(_FF_ROWS, int),
            "BRAM_tiles": available(("block ram tile",), float),
            "DSP": available(("dsps",), int),
        },
    }


def _usable(paths) -> list[Path]:
    return [p for p in paths if p.is_file() and "_utilization_hierarchical_" not in p.name]


def _newest(paths: list[Path]) -> Path:
    return max(paths, key=lambda p: (p.stat().st_mtime, p.name))


# Glob patterns relative to the given directory, best first. A Vivado project dir holds <proj>.runs/;
# people also pass the directory above it, the .runs dir itself, or the impl_1 / synth_1 dir.
_PLACE_PATTERNS = (
    "*_utilization_place.rpt",  # Amaranth's Vivado batch template
    "*_utilization_placed.rpt",  # inside impl_1/
    "impl_1/*_utilization_placed.rpt",  # inside <proj>.runs/
    "*.runs/impl_1/*_utilization_placed.rpt",  # project dir
    "*/*.runs/impl_1/*_utilization_placed.rpt",  # the directory above the project
    "*.runs/impl_*/*_utilization_placed.rpt",
    "*/*.runs/impl_*/*_utilization_placed.rpt",
)
_SYNTH_PATTERNS = (
    "*_utilization_synth.rpt",  # Amaranth's template, or inside synth_1/
    "synth_1/*_utilization_synth.rpt",
    "*.runs/synth_1/*_utilization_synth.rpt",  # not the IP out-of-context <ip>_synth_1 runs
    "*/*.runs/synth_1/*_utilization_synth.rpt",
)


def _find(run_dir: Path) -> tuple[Path, str]:
    if not run_dir.exists():
        raise VivadoReportError(f"Vivado run directory or report {run_dir} does not exist")
    if run_dir.is_file():
        return run_dir, ""
    for stage, patterns in (("post-place", _PLACE_PATTERNS), ("post-synth", _SYNTH_PATTERNS)):
        for pattern in patterns:
            found = _usable(run_dir.glob(pattern))
            if found:
                return _newest(found), stage
    raise VivadoReportError(
        f"no Vivado utilization report in {run_dir} (expected <name>_utilization_place.rpt or "
        f"<name>_utilization_synth.rpt, or <project>.runs/impl_1/*_utilization_placed.rpt or "
        f"<project>.runs/synth_1/*_utilization_synth.rpt)"
    )


def find_utilization_report(run_dir: str | Path) -> Path:
    """The utilization report for a Vivado run directory (or the .rpt path itself); post-place preferred."""
    return _find(Path(run_dir))[0]


def _stage(path: Path, design_state: str, found_as: str) -> str:
    state = design_state.lower()
    if "synth" in state:
        return "post-synth"
    if "plac" in state or "rout" in state:
        return "post-place"
    if found_as:
        return found_as
    name = path.name.lower()
    return "post-place" if ("place" in name or "route" in name) else "post-synth"


def read_vivado_run(run_dir: str | Path) -> dict:
    """Parse the best utilization report of a Vivado run; adds ``stage``, ``tool`` and ``report``."""
    path, found_as = _find(Path(run_dir))
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise VivadoReportError(f"cannot read Vivado report {path}: {exc.strerror or exc}") from None
    try:
        result = parse_utilization(text)
    except VivadoReportError as exc:
        raise VivadoReportError(f"{path}: {exc}") from None
    stage = _stage(path, result["design_state"], found_as)
    result["stage"] = stage
    result["tool"] = f"Vivado {result['tool_version']} report_utilization ({stage})"
    result["report"] = str(path)
    return result
