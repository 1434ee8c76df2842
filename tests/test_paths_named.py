"""Every repository path that pezo's Python sources name in a docstring, comment or message string exists.

A path is a token that starts with a top-level folder (``TOPS``) and ends in a file extension, or names a
directory with a trailing ``/``; paths of generated outputs (``build/...``, an ``--out DIR``) start elsewhere
and are not checked. ``OUTPUTS`` lists the few that look like repository paths but are not, each with its reason.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pezo", "golden", "hw", "sim", "boards", "scripts")
TOPS = ("tests", "golden", "hw", "sim", "boards", "pezo", "benchmarks", "scripts", "docs")
PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(TOPS) + r")/[\w./-]*?(?:\.[A-Za-z][A-Za-z0-9]{0,7}|/))(?![\w/-])")
OUTPUTS = {
    ("scripts/importlinter_pezo.py", "pezo/golden/"): "the scratch mirror's layout (pezo.golden as Python imports it)",
    ("scripts/importlinter_pezo.py", "pezo/hw/"): "the scratch mirror's layout (pezo.hw as Python imports it)",
}
"""(source file, path) -> why that path is not a repository path."""


def named_paths(text: str) -> list[str]:
    """The repository-looking paths in ``text``."""
    return PATH.findall(text)


def _texts(source: str):
    """(line, text) of every comment and string literal (docstrings and messages included) of ``source``."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.COMMENT, tokenize.STRING) or tokenize.tok_name[token.type] == "FSTRING_MIDDLE":
            yield token.start[0], token.string


def _named() -> list[tuple[str, int, str]]:
    found = []
    for folder in SOURCES:
        for file in sorted((ROOT / folder).rglob("*.py")):
            rel = file.relative_to(ROOT).as_posix()
            for line, text in _texts(file.read_text()):
                found += [(rel, line, path) for path in named_paths(text)]
    return found


def test_the_pattern_finds_files_and_directories_only():
    text = (
        "see tests/hw/test_host.py::test_x, golden/rng/ and ``boards/flow/report.py``; "
        "not build/report/x.json, golden.rng.lfsr, tests/ alone or tests/golden/test_{name}.py"
    )
    assert named_paths(text) == ["tests/hw/test_host.py", "golden/rng/", "boards/flow/report.py"]


def test_every_named_repository_path_exists():
    named = _named()
    assert len(named) > 10, "the scan found almost no paths: is the pattern still right?"
    missing = [
        f"{source}:{line}: {path}"
        for source, line, path in named
        if (source, path) not in OUTPUTS and not (ROOT / path).exists()
    ]
    assert not missing, "paths named in the sources that do not exist:\n" + "\n".join(missing)


def test_every_allowed_output_is_still_named():
    """An allow-list entry whose path the source no longer names is stale too."""
    named = {(source, path) for source, _, path in _named()}
    assert set(OUTPUTS) <= named, sorted(set(OUTPUTS) - named)
