"""Outputs that are never overwritten silently and never left half-written: one policy for every command.

Every command that writes a directory does it through ``staged_output``. An existing non-empty ``--out``
is replaced only if it holds exactly what the same command wrote there last time: its manifest (the
marker file: the command and every file with its size and modification time) matches, and nothing was
added or changed since. Another command's output or a file pezo wrote and the user edited since needs
``force``. What pezo's manifest does not list (a directory pezo did not write, a ``.git``, a Vivado run the
user started in a build directory) is never deleted, ``force`` or not: such a directory is refused with
one line naming what is in the way. ``pezo build`` is ``strict``: it never replaces a directory without
``force``. The command writes into a staging directory next to the target, which is renamed into place
on success (``commit_output``, after checking again that the target holds nothing pezo did not write) and
removed on any failure or interrupt, so the previous output stays intact. ``check_new_file`` is the same
policy for one output file (``--csv``, ``--plot``, ``--saif``): an existing file is replaced only with ``force``.
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

from pezo.executor import raise_if_interrupted

MARKER = ".pezo-output"


class OutputDirError(ValueError):
    """The output (directory or file) is refused: not empty, not pezo's, not writable: a user error."""


@dataclass(frozen=True)
class Staging:
    """Where a command writes (``path``, the staging directory) and what it replaces on success."""

    path: Path
    target: Path
    replacing: bool
    """``target`` holds a previous output that the commit replaces."""


@contextmanager
def staged_output(
    target: Path, force: bool = False, what: dict | None = None, *, strict: bool = False, option: str = "--out"
) -> Iterator[Staging]:
    """Check ``target`` (``prepare_output``: OutputDirError if refused), yield a ``Staging`` to write into;
    when the block ends normally, write the manifest (``what``, whose ``command`` names the writer, plus the
    files) and move it to ``target``; on any exception (KeyboardInterrupt included) remove the staging
    directory and leave ``target`` as it was."""
    what = what or {}
    staging, replacing = prepare_output(target, force, strict=strict, command=what.get("command"), option=option)
    try:
        yield Staging(staging, Path(target), replacing)
        _check_still_pezos(target, option)
        commit_output(staging, target, what)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def quoted(path) -> str:
    """A path as the user can paste it back into a shell ('' for the empty path)."""
    import shlex

    return shlex.quote(str(path)) if str(path) else "''"


def _check_not_cwd(path: Path, option: str, given: str) -> None:
    """``''``, ``.``, ``..``, ``/`` or any directory holding the working directory cannot be replaced."""
    resolved = path.resolve()
    cwd = Path.cwd().resolve()
    if given in ("", ".") or resolved == cwd or resolved in cwd.parents:
        raise OutputDirError(
            f"{option} {quoted(given)} is the current directory or one of its parents, which "
            f"pezo cannot replace; name a new directory (e.g. {option} build/out)"
        )


def _files(root: Path) -> dict[str, list[int]]:
    """Every entry under ``root`` except the marker: relative path -> [size, mtime_ns] (directories: [-1, 0])."""
    entries = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if rel == MARKER:
                continue
            st = full.lstat()
            entries[rel] = [-1, 0] if full.is_dir() and not full.is_symlink() else [st.st_size, st.st_mtime_ns]
    return entries


def _listing(entries) -> str:
    """At most three entries, then ``...``."""
    entries = list(entries)
    return ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")


def _inspect(path: Path, command: str | None) -> tuple[str | None, str | None]:
    """Why the non-empty directory ``path`` cannot be replaced at all (it holds what pezo's manifest does not
    list: never deleted, ``force`` or not) and why not without ``force`` (another command wrote it, or a file
    pezo wrote changed since); None for each that does not apply."""
    marker = path / MARKER
    if not marker.is_file():
        names = sorted(p.name for p in path.iterdir())
        return (f"was not written by pezo (it holds {_listing(names)})" if names else None), None
    now = _files(path)
    try:
        manifest = json.loads(marker.read_text())
        writer, listed = manifest.get("command"), manifest.get("files")
        if listed is not None and not isinstance(listed, dict):
            raise ValueError(listed)
    except (OSError, ValueError, AttributeError):
        if now:
            return f"has an unreadable pezo marker (it holds {_listing(sorted(now))})", None
        return None, "has an unreadable pezo marker"
    why = (
        f"was written by {writer or 'another pezo command'}, not {command}"
        if (command is not None and writer != command)
        else None
    )
    if listed is None:  # a marker of an older pezo: no file list, so what is newer than the marker may not be pezo's
        limit = marker.stat().st_mtime_ns
        newer = sorted(rel for rel, (size, mtime) in now.items() if size >= 0 and mtime > limit)
        return (
            f"has files changed after pezo wrote it ({_listing(newer)}) that its marker (an older pezo's) does not list"
            if newer
            else None
        ), why
    extra = {rel for rel in now if rel not in listed}
    top = sorted(rel for rel in extra if rel.rpartition("/")[0] not in extra)  # a new directory stands for its files
    foreign = f"holds files pezo did not write ({_listing(top)})" if top else None
    changed = sorted(rel for rel, entry in now.items() if rel in listed and entry != listed[rel])
    if why is None and changed:
        why = f"has files changed after pezo wrote it ({_listing(changed)})"
    return foreign, why


def prepare_output(
    path: Path, force: bool = False, strict: bool = False, command: str | None = None, option: str = "--out"
) -> tuple[Path, bool]:
    """Validate ``path`` and return ``(staging_dir, replacing)``; write into staging, then ``commit_output``.

    A non-empty directory is refused without ``force`` unless it holds exactly what ``command`` wrote there
    last time and not ``strict`` (``pezo build`` is strict: a build directory may hold a user's Vivado run);
    with ``force`` it is replaced only if it holds nothing pezo's manifest does not list (``_inspect``)."""
    given = str(path)
    path = Path(path)
    _check_not_cwd(path, option, given)
    replacing = False
    shown = quoted(given)
    if path.exists() or path.is_symlink():
        if not path.is_dir():
            raise OutputDirError(f"{option} {shown} exists and is not a directory")
        if any(path.iterdir()):
            foreign, why = _inspect(path, command)
            if foreign is not None:  # never deleted, even with --force
                needs_force = not force and (strict or why is not None)
                said = (
                    f"is not empty, {why}, and {foreign}"
                    if why is not None and not force
                    else (f"is not empty and {foreign}")
                )
                raise OutputDirError(
                    f"{option} {shown} {said}; choose another directory or remove them"
                    + (" and pass --force to replace it" if needs_force else "")
                )
            if strict and not force:
                raise OutputDirError(
                    f"{option} {shown} is not empty (it may hold a Vivado run); choose another "
                    "directory or pass --force to replace it"
                )
            if why is not None and not force:
                raise OutputDirError(
                    f"{option} {shown} is not empty and {why}; choose another directory or pass --force to replace it"
                )
            replacing = True
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise OutputDirError(f"{option} {shown}: {quoted(parent)} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputDirError(f"{option} {shown}: {quoted(parent)} is not writable")
    staging = path.parent / f".{path.name}.staging-{os.getpid()}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
    except OSError as exc:
        raise OutputDirError(f"{option} {shown}: {quoted(path.parent)} is not writable ({exc.strerror})") from None
    return staging, replacing


def _check_still_pezos(path: Path, option: str) -> None:
    """Before the commit replaces ``path``: OutputDirError (nothing replaced) if it came to hold files pezo did
    not write while the command ran."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        foreign, _ = _inspect(path, None)
        if foreign is not None:
            raise OutputDirError(
                f"{option} {quoted(path)} {foreign}, added while pezo ran; nothing was replaced: "
                "choose another directory or remove them"
            )


def commit_output(staging: Path, path: Path, what: dict) -> None:
    """Write the manifest into ``staging`` and move it to ``path`` (replacing the previous output);
    ``KeyboardInterrupt`` instead if Ctrl-C arrived (even one a finaliser swallowed)."""
    raise_if_interrupted()
    manifest = {"written": time.strftime("%Y-%m-%dT%H:%M:%S"), **what, "files": _files(staging)}
    (staging / MARKER).write_text(json.dumps(manifest, indent=2) + "\n")
    path = Path(path)
    if path.exists():
        old = path.parent / f".{path.name}.old-{os.getpid()}"
        os.replace(path, old)
        os.replace(staging, path)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, path)


def record_output(path: Path) -> None:
    """Add what a command wrote into its committed output ``path`` afterwards (the Vivado run ``pezo build``
    starts there) to the manifest, so that ``force`` may replace it later; the manifest's other keys stay."""
    marker = Path(path) / MARKER
    try:
        manifest = json.loads(marker.read_text())
        manifest["files"] = {**manifest["files"], **_files(Path(path))}
    except (OSError, ValueError, KeyError, TypeError):
        return  # no manifest of this pezo: nothing to add to
    marker.write_text(json.dumps(manifest, indent=2) + "\n")


def check_new_file(option: str, path: Path | None, force: bool = False, suffix: str | None = None) -> None:
    """One output file: refused (OutputDirError) if it is a directory, its directory does not exist, it has
    the wrong ``suffix``, or it exists and ``force`` is not set."""
    if path is None:
        return
    shown = quoted(path)
    if str(path) == "" or path.is_dir():
        raise OutputDirError(f"{option} {shown}: must be a file name, not a directory")
    if not path.parent.is_dir():
        raise OutputDirError(f"{option} {shown}: the directory {quoted(path.parent)} does not exist")
    if suffix is not None and path.suffix.lower() != suffix:
        raise OutputDirError(f"{option} {shown}: name the file *{suffix}")
    if (path.exists() or path.is_symlink()) and not force:
        raise OutputDirError(f"{option} {shown} exists; choose another file or pass --force to replace it")
    import tempfile

    try:  # a real write (os.access says yes to root, even in /proc)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.check-"):
            pass
    except OSError as exc:
        raise OutputDirError(f"{option} {shown}: cannot write in {quoted(path.parent)} ({exc.strerror})") from None
