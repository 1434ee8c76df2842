"""The documentation: every page in docs/ is reachable from the toctree, the README stays short and links only
to files that exist, no path outside the repository is cited, CI builds the docs; and (slow) the site builds
with warnings as errors, as `make docs` does."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGE_SUFFIXES = (".md", ".rst")
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _pages() -> set[str]:
    """Every source page in docs/ (not the generated api/ pages), as a docname."""
    return {
        p.relative_to(DOCS).with_suffix("").as_posix()
        for p in DOCS.rglob("*")
        if p.suffix in PAGE_SUFFIXES and not p.relative_to(DOCS).parts[0].startswith(("_", "api"))
    }


def _toctree_entries(page: Path) -> set[str]:
    entries, inside = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```{toctree}"):
            inside = True
        elif inside and line.startswith("```"):
            inside = False
        elif inside and line.strip() and not line.startswith(":"):
            entries.add(line.strip())
    return entries


def test_every_page_is_in_the_toctree():
    listed = _toctree_entries(DOCS / "index.md")
    assert listed <= _pages(), f"the toctree names pages that do not exist: {sorted(listed - _pages())}"
    missing = _pages() - listed - {"index"}
    assert not missing, f"pages no toctree reaches (add them to docs/index.md): {sorted(missing)}"


def test_readme_is_short():
    lines = README.read_text().count("\n")
    assert lines <= 200, f"README.md has {lines} lines; move the detail into docs/"


def test_readme_links_only_to_files_that_exist():
    for target in MARKDOWN_LINK.findall(README.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        assert (ROOT / path).exists(), f"README.md links to {target}, which does not exist"


def test_papers_are_cited_by_title_not_by_a_path_outside_the_repository():
    for path in [README, *DOCS.rglob("*.md")]:
        assert "shared/papers" not in path.read_text(), path


def test_ci_runs_the_readme_test_command_then_the_docs():
    commands = [line.split("#", 1)[0].strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "make test" in README.read_text()
    assert "make test" in commands and "make docs" in commands
    assert commands.index("make test") < commands.index("make docs")


def _extension(name: str):
    pytest.importorskip("sphinx", reason="the docs extra is not installed (scripts/setup.sh --docs)")
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(DOCS / "_ext"))


def test_the_register_map_page_has_a_meaning_for_every_register():
    from pezo.golden.regs.engine import engine_registers

    meanings = _extension("board_map_doc").register_meanings()
    assert {r.name for r in engine_registers()} <= set(meanings)
    assert meanings["WD_EVERY"].endswith("0 and 1 = every update")  # a continuation line joined


def test_plain_docstrings_keep_the_words():
    lines = [
        "Lead-in:",
        "* item one",
        "  continued",
        "Then |x| and ``a|b``.",
        "",
        "name -- a field",
        "         wrapped",
        "",
        "Code::",
        "",
        "    |raw|",
    ]
    assert _extension("plain_docstrings").rest_lines(lines) == [
        "Lead-in:",
        "",
        "* item one",
        "  continued",
        "",
        r"Then \|x\| and ``a|b``.",
        "",
        "name -- a field wrapped",
        "",
        "Code::",
        "",
        "    |raw|",
    ]


@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors(tmp_path):
    pytest.importorskip("sphinx", reason="the docs extra is not installed (scripts/setup.sh --docs)")
    pytest.importorskip("myst_parser", reason="the docs extra is not installed (scripts/setup.sh --docs)")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-q",
            "-b",
            "html",
            "-d",
            str(tmp_path / "doctrees"),
            str(DOCS),
            str(tmp_path / "html"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert (tmp_path / "html" / "register-map.html").exists()
