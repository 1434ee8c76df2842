"""The layout's rules: import-linter's contracts hold (pyproject [tool.importlinter]), every package folder
is a listed package, and the code imports only as pezo.* (no top-level ``golden``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("golden", "hw", "sim", "boards", "pezo")


def _pyproject() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def _clean_env() -> dict:
    """The environment without PYTHONPATH: imports must come from the installed package only."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _lint(root: Path) -> subprocess.CompletedProcess:
    """scripts/importlinter_pezo.py: lint-imports with pyproject's contracts on the package as Python imports it."""
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "importlinter_pezo.py"), str(root)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=_clean_env(),
    )


def test_import_linter_contracts_hold():
    run = _lint(ROOT)
    assert run.returncode == 0, f"lint-imports failed (exit {run.returncode}):\n{run.stdout}\n{run.stderr}"
    assert "0 broken" in run.stdout, run.stdout
    assert "every pezo package is in the import graph KEPT" in run.stdout, run.stdout


def test_import_linter_catches_a_layer_violation(tmp_path):
    """The check is not vacuous: golden importing the CLI (an upward import) breaks the layers contract."""
    for top in FOLDERS:
        shutil.copytree(ROOT / top, tmp_path / top, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    config = tmp_path / "golden" / "config.py"
    config.write_text(config.read_text() + "\nimport pezo.cli.main  # noqa: upward import\n")
    run = _lint(tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "pezo.golden.config -> pezo.cli.main" in run.stdout, run.stdout


def test_every_package_folder_is_a_listed_package():
    setuptools = _pyproject()["tool"]["setuptools"]
    folder_of = {package: Path(folder) for package, folder in setuptools["package-dir"].items()}
    listed = set(setuptools["packages"])

    def dotted(init: Path) -> str:
        rel = init.parent.relative_to(ROOT)
        for package, folder in sorted(folder_of.items(), key=lambda kv: -len(kv[1].parts)):
            if rel == folder or folder in rel.parents:
                return ".".join([package, *rel.relative_to(folder).parts])
        raise AssertionError(f"{rel} is under no package-dir entry of pyproject.toml")

    found = {
        dotted(init) for top in FOLDERS for init in (ROOT / top).rglob("__init__.py") if "__pycache__" not in init.parts
    }
    assert found - listed == set(), f"package folders missing from [tool.setuptools] packages: {sorted(found - listed)}"
    assert listed - found == set(), f"listed packages without a folder (__init__.py): {sorted(listed - found)}"


def test_code_imports_as_pezo_only(tmp_path):
    code = (
        "import importlib.util, sys\n"
        "assert importlib.util.find_spec('golden') is None, 'a top-level golden package is importable'\n"
        "try:\n"
        "    import golden\n"
        "except ModuleNotFoundError:\n"
        "    pass\n"
        "else:\n"
        "    sys.exit('import golden worked outside the checkout')\n"
        "import pezo.golden\n"
        "import pezo.golden.config\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=_clean_env()
    )
    assert run.returncode == 0, run.stdout + run.stderr
