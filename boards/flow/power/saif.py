"""SAIF: a SAIF 2.0 backward file of a run's activity, for Vivado's ``read_saif`` + ``report_power`` when
watts are wanted (the activity is a relative proxy run's, not a sign-off stimulus)."""

from __future__ import annotations

import re
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def saif_escape(name: str) -> str:
    """A SAIF identifier: every character other than a letter, digit or ``_`` escaped with ``\\``."""
    return re.sub(r"([^A-Za-z0-9_])", r"\\\1", name)


def write_saif(
    activity: dict,
    path,
    duration_ps: int | None = None,
    instance_path=("top",),
    *,
    design: str = "",
    date: str | None = None,
) -> Path:
    """Write ``activity`` (``toggle_counts``' result) as a SAIF 2.0 backward file (TIMESCALE 1 ps).

    One ``NET`` entry per bit: ``(name\\[i\\] (T0 ..) (T1 ..) (TX ..) (TC toggles) (IG 0))`` (a 1-bit net
    without index; other special characters escaped with ``\\``), inside nested ``INSTANCE`` blocks that
    follow the VCD scopes below ``dut``, all nested under ``instance_path`` (outermost first): for
    Vivado, ``read_saif -strip_path <instance_path joined by />`` maps the unit's nets onto the design.
    The activity is a relative proxy run's, not a sign-off stimulus.
    """
    if not instance_path:
        raise ValueError("instance_path must name at least one instance")
    if duration_ps is None:
        duration_ps = getattr(activity, "duration_ps", None)
        if duration_ps is None:
            raise ValueError("duration_ps is needed for a plain dict of activity")
    try:
        pezo_version = version("pezo")
    except PackageNotFoundError:
        pezo_version = "0"
    tree: dict = {"nets": [], "children": {}}
    for name in sorted(activity):
        act = activity[name]
        node = tree
        for part in act.scope:
            node = node["children"].setdefault(part, {"nets": [], "children": {}})
        node["nets"].append(act)

    lines = [
        "(SAIFILE",
        '(SAIFVERSION "2.0")',
        '(DIRECTION "backward")',
        f'(DESIGN "{design}")',
        f'(DATE "{date or time.strftime("%a %b %d %H:%M:%S %Y")}")',
        '(VENDOR "pezo")',
        '(PROGRAM_NAME "pezo boards.flow.power (switching-activity proxy)")',
        f'(VERSION "{pezo_version}")',
        "(DIVIDER / )",
        "(TIMESCALE 1 ps)",
        f"(DURATION {int(duration_ps)})",
    ]

    def emit(node, depth):
        pad = "  " * depth
        if node["nets"]:
            lines.append(f"{pad}(NET")
            for act in node["nets"]:
                for i in range(act.width):
                    bit = act.reference if act.width == 1 else f"{act.reference}[{act.lsb + i}]"
                    lines.append(
                        f"{pad}  ({saif_escape(bit)} (T0 {act.t0[i]}) (T1 {act.t1[i]}) "
                        f"(TX {act.tx[i]}) (TC {act.toggles[i]}) (IG 0))"
                    )
            lines.append(f"{pad})")
        for child_name in sorted(node["children"]):
            lines.append(f"{pad}(INSTANCE {saif_escape(child_name)}")
            emit(node["children"][child_name], depth + 1)
            lines.append(f"{pad})")

    for depth, part in enumerate(instance_path):
        lines.append(f"{'  ' * depth}(INSTANCE {saif_escape(part)}")
    emit(tree, len(instance_path))
    for depth in reversed(range(len(instance_path))):
        lines.append(f"{'  ' * depth})")
    lines.append(")")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path
