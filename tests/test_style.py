"""The repository passes ruff's lint and format checks (the configuration in pyproject.toml: 120 columns)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> list[str]:
    found = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if found is None:
        pytest.fail("ruff is not installed: it is in the test extra (bash scripts/setup.sh --test)")
    return [found]


@pytest.mark.parametrize(
    "command", [["check", "--no-cache"], ["format", "--check", "--no-cache"]], ids=["lint", "format"]
)
def test_ruff(command):
    result = subprocess.run(_ruff() + command + ["."], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
