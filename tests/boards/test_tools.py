"""boards.flow.tools: YoWASP tool runs that concurrency cannot crash.

The failure (a fresh ``make run`` died with ``Yosys failed (exit -7)``): yowasp-runtime rewrites its compiled-module
cache file in place while another process has it mapped. ``test_in_place_rewrite_kills_a_running_yosys`` reproduces
it deterministically (the writer holds the file truncated while a Yosys run executes from it) and
``test_pezo_install_never_disturbs_a_running_yosys`` runs the same reader beside pezo's writer, which replaces the
file atomically."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from pezo.boards.flow import synth, tools
from pezo.sim.runner import cache_dir

# a 32 x 32 multiplier through synth + abc: 5-15 s of Yosys, long enough to rewrite the cache under it
SLOW_VERILOG = "module top(input [31:0] a, b, output [63:0] y); assign y = a * b; endmodule\n"
SLOW_SCRIPT = "read_verilog top.v; synth -top top; abc; stat"


def _module_files(cache: Path) -> list[Path]:
    files = [
        p
        for p in cache.rglob("*")
        if p.is_file()
        and ".pezo-ready" not in p.parts
        and p.suffix != ".lock"
        and not any(part.startswith(".staging-") for part in p.parts)
    ]
    assert files, f"no compiled module in {cache}"
    return files


def _start_slow_yosys(cache: Path, work: Path) -> subprocess.Popen:
    """A Yosys run that loads its module from ``cache``; returns once it is running (its log exists)."""
    work.mkdir(parents=True)
    (work / "top.v").write_text(SLOW_VERILOG)
    proc = subprocess.Popen(
        [sys.executable, "-c", tools.YOSYS.code(), "-l", "yosys.log", "-p", SLOW_SCRIPT],
        cwd=work,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**tools.env(), "YOWASP_CACHE_DIR": str(cache)},
    )
    deadline = time.monotonic() + 120
    while not (work / "yosys.log").exists() or "Executing" not in (work / "yosys.log").read_text():
        assert proc.poll() is None, "Yosys ended before it started working"
        assert time.monotonic() < deadline, "Yosys did not start"
        time.sleep(0.05)
    return proc


@pytest.fixture
def yosys_cache(tmp_path):
    """A private copy of pezo's prepared Yosys cache (the shared one is never touched by these tests)."""
    shared = tools.prepare(tools.YOSYS)
    copy = tmp_path / "cache"
    shutil.copytree(shared, copy)
    return copy


@pytest.fixture
def work_dir():
    """Yosys work directories live under pezo's cache (yowasp mounts its own /tmp)."""
    base = cache_dir() / "work"
    base.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="test-tools-", dir=base))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.synth
def test_in_place_rewrite_kills_a_running_yosys(yosys_cache, work_dir):
    """Without pezo's fix: yowasp-runtime's writer (``open("wb")``, then write) under a running Yosys -> SIGBUS."""
    proc = _start_slow_yosys(yosys_cache, work_dir / "reader")
    files = {path: path.read_bytes() for path in _module_files(yosys_cache)}
    for path in files:
        path.open("wb").close()  # what open("wb") does first: truncate the mapped file
    try:
        code = proc.wait(timeout=30)  # the reader faults on its next instruction fetch from the module
    finally:
        for path, data in files.items():
            path.write_bytes(data)
        if proc.poll() is None:
            proc.kill()
    assert code == -signal.SIGBUS, f"expected the reader to die by SIGBUS, got {code}"


@pytest.mark.synth
def test_pezo_install_never_disturbs_a_running_yosys(yosys_cache, work_dir, tmp_path):
    """With the fix: pezo's writer moves a freshly written module in by os.replace under the same running Yosys
    (twice, to be sure it lands mid-run); the reader finishes cleanly and correctly."""
    proc = _start_slow_yosys(yosys_cache, work_dir / "reader")
    for round_ in range(2):
        staging = tmp_path / f"staging{round_}"
        for path in _module_files(yosys_cache):
            target = staging / path.relative_to(yosys_cache)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        tools.install(staging, yosys_cache)
        assert proc.poll() is None, "the reader ended before the writer ran: make SLOW_VERILOG slower"
        time.sleep(0.5)
    assert proc.wait(timeout=300) == 0
    assert re.search(r"^\s+\d+ cells$", (work_dir / "reader" / "yosys.log").read_text(), re.M)  # stat ran


def test_prepare_compiles_once_across_concurrent_callers(tmp_path, monkeypatch):
    """Eight callers on a cold cache (threads: the lock is a file lock, so they contend like processes):
    one compile, every caller returns a ready cache holding the module."""
    calls = []

    def fake_compile(tool, staging):
        calls.append(tool)
        time.sleep(0.3)  # all callers arrive while the first one compiles
        (staging / "pkg" / "tool.wasm").mkdir(parents=True)
        (staging / "pkg" / "tool.wasm" / "digest").write_bytes(b"machine code")

    monkeypatch.setattr(tools, "_compile", fake_compile)
    cache = tmp_path / "yowasp" / "shared"
    results = []
    threads = [threading.Thread(target=lambda: results.append(tools.prepare(tools.YOSYS, cache))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [tools.YOSYS]
    assert results == [cache] * 8
    assert (cache / "pkg" / "tool.wasm" / "digest").read_bytes() == b"machine code"
    assert not list(cache.glob(".staging-*")), "staging left behind"


def test_a_staging_directory_of_a_killed_preparer_is_removed(tmp_path, monkeypatch):
    cache = tmp_path / "shared"
    (cache / ".staging-old" / "pkg").mkdir(parents=True)
    (cache / ".staging-old" / "pkg" / "half-written").write_bytes(b"x" * 10)
    monkeypatch.setattr(tools, "_compile", lambda tool, staging: (staging / "module").write_bytes(b"code"))
    tools.prepare(tools.YOSYS, cache)
    assert not (cache / ".staging-old").exists() and (cache / "module").read_bytes() == b"code"


def test_a_failed_prepare_leaves_the_tool_unprepared(tmp_path, monkeypatch):
    def broken_compile(tool, staging):
        raise RuntimeError("preparing Yosys (compiling its WebAssembly) failed")

    monkeypatch.setattr(tools, "_compile", broken_compile)
    cache = tmp_path / "shared"
    with pytest.raises(RuntimeError, match="preparing Yosys"):
        tools.prepare(tools.YOSYS, cache)
    assert not tools._ready_mark(cache, tools.YOSYS).exists()


def _completed(code):
    return subprocess.CompletedProcess(args=[], returncode=code, stdout="", stderr="")


def test_a_run_killed_by_a_signal_is_retried_once(monkeypatch, capsys):
    codes = [-signal.SIGBUS, 0]
    monkeypatch.setattr(tools, "_launch", lambda tool, args, cwd, timeout=None: _completed(codes.pop(0)))
    assert tools.run(tools.YOSYS, [], Path("."), "otf 32 x 14").returncode == 0
    assert codes == []
    assert "otf 32 x 14: Yosys was killed by SIGBUS; retrying once" in capsys.readouterr().err


def test_a_second_death_is_one_line_naming_design_tool_and_signal(monkeypatch):
    monkeypatch.setattr(tools, "_launch", lambda tool, args, cwd, timeout=None: _completed(-signal.SIGBUS))
    with pytest.raises(synth.SynthesisError) as info:
        tools.run(tools.YOSYS, [], Path("."), "pregen 4095 x 12", synth.SynthesisError)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("pregen 4095 x 12: Yosys was killed by SIGBUS twice")


def test_an_interrupted_tool_is_an_interrupt_not_a_retry(monkeypatch):
    calls = []
    monkeypatch.setattr(
        tools, "_launch", lambda tool, args, cwd, timeout=None: calls.append(1) or _completed(-signal.SIGINT)
    )
    with pytest.raises(KeyboardInterrupt):
        tools.run(tools.YOSYS, [], Path("."), "d")
    assert calls == [1]


def test_an_ordinary_failure_is_not_retried(monkeypatch):
    calls = []
    monkeypatch.setattr(tools, "_launch", lambda tool, args, cwd, timeout=None: calls.append(1) or _completed(1))
    assert tools.run(tools.YOSYS, [], Path("."), "d").returncode == 1
    assert calls == [1]


def test_tool_runs_use_the_prepared_shared_cache(monkeypatch):
    seen = {}

    def fake_run(cmd, cwd, capture_output, text, env):
        seen.update(env)
        return _completed(0)

    monkeypatch.setattr(tools, "prepare", lambda tool, cache=None: cache)
    monkeypatch.setattr(tools.subprocess, "run", fake_run)
    tools.run(tools.NEXTPNR_ECP5, ["--version"], Path("."), "d")
    assert seen["YOWASP_CACHE_DIR"] == str(tools.shared_cache())


def test_scratch_directories_of_ended_processes_are_removed(tmp_path, monkeypatch):
    """An interrupted report's workers die before their ``finally``: their synth-* directories go at the next run."""
    monkeypatch.setenv("PEZO_CACHE_DIR", str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphan = tmp_path / "work" / f"synth-pid{dead.pid}-abc"
    (orphan / "sub").mkdir(parents=True)
    alive = tmp_path / "work" / f"synth-pid{os.getppid()}-def"  # a live process's directory is kept
    alive.mkdir()
    with tools.scratch("synth-") as work:
        assert work.is_dir() and work.name.startswith(f"synth-pid{os.getpid()}-")
        assert not orphan.exists() and alive.exists()
    assert not work.exists()


def test_a_run_past_its_time_limit_is_stopped_with_one_line_naming_the_limit(monkeypatch):
    """router1 has no limit of its own: a congested seed would rip up for hours (``$PEZO_PNR_TIMEOUT``)."""
    seen = {}

    def fake_run(cmd, cwd, capture_output, text, env, timeout):
        seen["timeout"] = timeout
        raise subprocess.TimeoutExpired(cmd, timeout)

    monkeypatch.setattr(tools, "prepare", lambda tool, cache=None: cache)
    monkeypatch.setattr(tools.subprocess, "run", fake_run)
    with pytest.raises(synth.SynthesisError) as info:
        tools.run(tools.NEXTPNR_ECP5, [], Path("."), "rt-mlp", synth.SynthesisError, timeout=12.5, timeout_hint=" ($X)")
    assert seen == {"timeout": 12.5}
    assert str(info.value) == "rt-mlp: nextpnr-ecp5 ran past 12.5 s ($X) and was stopped; nothing was written"


@pytest.mark.parametrize("text", ["0", "-3", "nan", "inf", "an hour"])
def test_the_pnr_time_limit_must_be_a_positive_number_of_seconds(monkeypatch, text):
    monkeypatch.setenv("PEZO_PNR_TIMEOUT", text)
    with pytest.raises(ValueError, match=r"^PEZO_PNR_TIMEOUT must be a finite number of seconds > 0 \(unset: 3600\)"):
        tools.pnr_timeout()


def test_the_pnr_time_limit_defaults_to_an_hour_and_reads_the_variable(monkeypatch):
    monkeypatch.delenv("PEZO_PNR_TIMEOUT", raising=False)
    assert tools.pnr_timeout() == tools.DEFAULT_PNR_TIMEOUT == 3600
    monkeypatch.setenv("PEZO_PNR_TIMEOUT", " 90 ")
    assert tools.pnr_timeout() == 90
