"""import-linter's contracts on pezo's layout, through import-linter's supported interfaces only.

pezo's packages live in top-level folders (pyproject's ``package-dir`` maps pezo.golden -> golden/ etc.), and
grimp (import-linter's graph builder) walks a root package's own directory only: it would never see golden/,
hw/, sim/ or boards/ under ``pezo``. ``mirror`` lays the installed package out as Python sees it (pezo/,
pezo/golden/, pezo/hw/, ...), copying the ``.py`` files of every package-dir entry into a scratch directory;
``main`` runs the ``lint-imports`` command on that mirror with pyproject.toml's contracts (the mirror first on
PYTHONPATH, so ``pezo`` resolves to it). No private module of grimp or import-linter is touched.

The one contract type defined here, ``pezo_packages`` (import-linter's documented custom-contract API), fails
when a listed package has no module below it in the graph, so an empty or partial mirror cannot make the other
contracts pass.

Run: ``python scripts/importlinter_pezo.py [CHECKOUT]`` (exit 0 when every contract holds; the suite runs it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from importlinter import Contract, ContractCheck, fields, output

ROOT = Path(__file__).resolve().parents[1]


class MappedPackagesContract(Contract):
    """Every package in ``packages`` is in the graph with at least one module below it."""

    type_name = "pezo_packages"

    packages = fields.ListField(subfield=fields.StringField())

    def check(self, graph, verbose: bool) -> ContractCheck:
        missing = [p for p in self.packages if p not in graph.modules or not graph.find_descendants(p)]
        return ContractCheck(kept=not missing, metadata={"missing": missing})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for package in check.metadata["missing"]:
            output.print_error(
                f"{package} has no modules in the import graph (is its folder in pyproject's "
                "package-dir, and did scripts/importlinter_pezo.py mirror it?)"
            )


def _package_dirs(root: Path) -> dict[str, Path]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    with open(root / "pyproject.toml", "rb") as f:
        package_dir = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    return {package: root / folder for package, folder in package_dir.items()}


def mirror(root: Path, dest: Path) -> None:
    """Copy every ``.py`` file of pyproject's package-dir entries to ``dest`` at its import path
    (``golden/rng/lfsr.py`` -> ``dest/pezo/golden/rng/lfsr.py``)."""
    for package, folder in _package_dirs(root).items():
        target = dest.joinpath(*package.split("."))
        for source in folder.rglob("*.py"):
            rel = source.relative_to(folder)
            if "__pycache__" in rel.parts:
                continue
            out = target / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, out)


def main(root: Path = ROOT) -> int:
    """Run lint-imports on the mirror of the checkout at ``root``; return its exit code."""
    lint = Path(sys.executable).parent / "lint-imports"
    if not lint.exists():
        print(f"{lint} is missing: install the test extras (pip install -e '.[test]', import-linter)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="pezo-lint-") as scratch:
        mirror(root, Path(scratch))
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["PYTHONPATH"] = os.pathsep.join([scratch, str(Path(__file__).parent)])
        run = subprocess.run([str(lint), "--no-cache", "--no-logo", str(root / "pyproject.toml")], cwd=scratch, env=env)
    return run.returncode


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT))
