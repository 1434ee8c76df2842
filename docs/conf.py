"""Sphinx configuration of pezo's documentation (``make docs``: warnings are errors)."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "pezo"
author = "the pezo developers"
copyright = "the pezo developers"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinxarg.ext",
    "board_map_doc",
    "plain_docstrings",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

# The hardware contracts live in the module docstrings: one generated page per module.
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "none"
napoleon_google_docstring = False
napoleon_numpy_docstring = False

html_theme = "furo"
html_title = "pezo"
