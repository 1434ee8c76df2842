"""import-linter plugin for pezo's layout: lets the import graph see pezo.golden, pezo.hw, pezo.sim and
pezo.boards, which live outside ``pezo/`` (pyproject's package-dir maps pezo.golden -> golden/ etc.).

grimp (import-linter's graph builder) finds a root package's files from its importlib spec and refuses a
sub-package of a regular package as a root (``NotATopLevelModule``); with ``root_package = "pezo"`` alone
it walks ``pezo/`` only and never sees golden/, hw/, sim/ or boards/. Importing this module installs a
package finder that also accepts such a sub-package as a root when importlib resolves it to a package of
its own (a directory with ``__init__.py``): ``root_packages`` in ``[tool.importlinter]`` then lists pezo,
pezo.golden, pezo.hw, pezo.sim and pezo.boards, and the files under golden/ are named pezo.golden.*
exactly as the editable install imports them.

import-linter imports this module while registering ``contract_types`` (before it builds the graph); the
one contract type defined here, ``pezo_packages``, fails when a listed package has no module below it in
the graph (so a finder that stopped working cannot make the other contracts pass on an empty graph).
"""

from __future__ import annotations

import importlib.util

from grimp import exceptions as grimp_exceptions
from grimp.adaptors.packagefinder import ImportLibPackageFinder
from grimp.application.config import settings as grimp_settings
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


class MappedPackageFinder(ImportLibPackageFinder):
    """grimp's finder, plus sub-packages whose directory importlib maps outside their parent's."""

    def determine_package_directories(self, package_name, file_system):
        try:
            return super().determine_package_directories(package_name, file_system)
        except grimp_exceptions.NotATopLevelModule:
            spec = importlib.util.find_spec(package_name)
            if spec is None or not spec.submodule_search_locations:
                raise
            return set(spec.submodule_search_locations)


grimp_settings.configure(PACKAGE_FINDER=MappedPackageFinder())


class MappedPackagesContract(Contract):
    """Every package in ``packages`` is in the graph with at least one module below it."""

    type_name = "pezo_packages"

    packages = fields.ListField(subfield=fields.StringField())

    def check(self, graph, verbose: bool) -> ContractCheck:
        missing = [p for p in self.packages if p not in graph.modules or not graph.find_descendants(p)]
        return ContractCheck(kept=not missing, metadata={"missing": missing})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for package in check.metadata["missing"]:
            output.print_error(f"{package} has no modules in the import graph (is it in root_packages, and "
                               "does scripts/importlinter_pezo.py's package finder still apply?)")
