"""Sphinx extension: read pezo's plain-text docstrings as reST.

The docstrings are written for humans, not for docutils: ``|x|`` is an absolute value or a norm (reST reads
a substitution), ``field -- text`` entries wrap with a hanging indent (reST reads an unexpected block quote),
and bullet lists start right under their lead-in line. Before autodoc parses a docstring
(``autodoc-process-docstring``) this extension, outside literal blocks, escapes those bars and, outside
simple tables too, joins hanging-indent continuation lines to the line they continue and puts a blank line
around bullet lists. The words are unchanged; any other reST error still fails the build.
"""

from __future__ import annotations

import re

_LITERAL = re.compile(r"(``.*?``)")
_BULLET = re.compile(r"^(\s*)([*-]) \S")
_TABLE_BORDER = re.compile(r"^\s*=+(\s+=+)+\s*$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_table_or_line_block(text: str) -> bool:
    return text.startswith(("+-", "+=", "| ")) or (text.startswith("|") and text.endswith("|") and " | " in text)


def _escape_bars(line: str) -> str:
    if "|" not in line or _is_table_or_line_block(line.strip()):
        return line
    return "".join(p if p.startswith("``") else p.replace("|", r"\|") for p in _LITERAL.split(line))


def _content_indent(line: str) -> int:
    """Where the text of ``line`` starts: after a bullet's marker, else its indentation."""
    bullet = _BULLET.match(line)
    return len(bullet.group(1)) + 2 if bullet else _indent(line)


def rest_lines(lines: list[str]) -> list[str]:
    """The docstring ``lines`` as reST (see the module docstring)."""
    out: list[str] = []
    literal_indent = None  # indentation of the line that opened a literal block (``::``)
    in_table = False
    item_indent = None  # indentation of the bullet list the previous lines belong to
    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if literal_indent is not None and line.strip() and _indent(line) <= literal_indent:
            literal_indent = None
        if literal_indent is not None or in_table:
            out.append(line if literal_indent is not None or _TABLE_BORDER.match(line) else _escape_bars(line))
            if in_table and _TABLE_BORDER.match(line) and not following.strip():
                in_table = False
            continue
        if _TABLE_BORDER.match(line):
            in_table = bool(following.strip())
            out.append(line)
            continue
        if not line.strip():
            item_indent = None
            out.append(line)
            continue
        previous = out[-1] if out else ""
        bullet = _BULLET.match(line)
        if previous.strip() and not previous.rstrip().endswith("::"):
            if bullet and item_indent is None and _indent(line) <= _indent(previous):
                out.append("")  # a list right under its lead-in line
            elif not bullet and item_indent is not None and _indent(line) <= item_indent:
                out.append("")  # prose right after a list
                item_indent = None
            elif not bullet and _indent(line) > _content_indent(previous):
                out[-1] = previous.rstrip() + " " + _escape_bars(line.strip())  # a hanging indent
                continue
        if bullet:
            item_indent = _indent(line)
        out.append(_escape_bars(line))
        if line.rstrip().endswith("::"):
            literal_indent = _indent(line)
    return out


def _process(app, what, name, obj, options, lines):
    lines[:] = rest_lines(lines)


def setup(app):
    app.connect("autodoc-process-docstring", _process)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
