"""Output directories that are never overwritten silently and never left half-written.

Every command that writes a directory does it through ``staged_output``: it refuses an existing non-empty
directory unless pezo wrote it (it holds the marker file) or ``force`` is set (``prepare_output``), hands
out a staging directory next to the target, and on success renames it into place (``commit_output``); on
any failure or interrupt the staging directory is removed and the previous output stays intact.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

MARKER = ".pezo-output"


class OutputDirError(ValueError):
    """The output directory is refused (not empty, not a directory, not writable): a user error."""


@dataclass(frozen=True)
class Staging:
    """Where a command writes (``path``, the staging directory) and what it replaces on success."""

    path: Path
    target: Path
    replacing: bool
    """``target`` holds a previous output that the commit replaces."""


@contextmanager
def staged_output(target: Path, force: bool = False, what: dict | None = None, *,
                  strict: bool = False) -> Iterator[Staging]:
    """Check ``target`` (``prepare_output``: OutputDirError if refused), yield a ``Staging`` to write into;
    when the block ends normally, mark it with ``what`` and move it to ``target``; on any exception
    (KeyboardInterrupt included) remove the staging directory and leave ``target`` as it was."""
    staging, replacing = prepare_output(target, force, strict=strict)
    try:
        yield Staging(staging, Path(target), replacing)
        commit_output(staging, target, what or {})
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def prepare_output(path: Path, force: bool = False, strict: bool = False) -> tuple[Path, bool]:
    """Validate ``path`` and return ``(staging_dir, replacing)``; write into staging, then ``commit_output``.

    A non-empty directory is refused without ``force``, unless pezo wrote it and not ``strict``
    (``pezo build`` is strict: a build directory may hold a user's Vivado run)."""
    path = Path(path)
    replacing = False
    if path.exists():
        if not path.is_dir():
            raise OutputDirError(f"--out {path} exists and is not a directory")
        if any(path.iterdir()):
            if strict and not force:
                raise OutputDirError(f"--out {path} is not empty; choose another directory or pass --force "
                                     "to replace it")
            if not (path / MARKER).exists() and not force:
                raise OutputDirError(f"--out {path} exists, is not empty and was not written by pezo; "
                                     "choose another directory or pass --force to replace it")
            replacing = True
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputDirError(f"--out {path}: {parent} is not writable")
    staging = path.parent / f".{path.name}.staging-{os.getpid()}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
    except OSError as exc:
        raise OutputDirError(f"--out {path}: {path.parent} is not writable ({exc.strerror})") from None
    return staging, replacing


def commit_output(staging: Path, path: Path, what: dict) -> None:
    """Mark ``staging`` as pezo's and move it to ``path`` (replacing the previous output)."""
    (staging / MARKER).write_text(json.dumps({"written": time.strftime("%Y-%m-%dT%H:%M:%S"), **what},
                                             indent=2) + "\n")
    path = Path(path)
    if path.exists():
        old = path.parent / f".{path.name}.old-{os.getpid()}"
        os.replace(path, old)
        os.replace(staging, path)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, path)
