"""Toggle counting: per-net activity of a VCD (``pezo.sim.activity.simulate_vcd``'s) inside its window.

``toggle_counts`` gives, per net and bit, 0<->1 toggles (x/z transitions excluded), the time in each state
(T0/T1/TX, for SAIF) and the value at each rising clock edge, inside the measurement window only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from vcd.reader import TokenKind, tokenize

from pezo.sim.activity import WINDOW_VAR


@dataclass
class NetActivity:
    """Activity of one VCD variable in the window. Lists are per bit, index 0 = the LSB (declared index
    ``lsb``); times are in ps. ``high_edges``: rising clock edges at which the bit was 1 (sampled just
    before the edge, as a flip-flop sees it)."""

    scope: tuple[str, ...]
    reference: str
    width: int
    lsb: int
    toggles: list[int]
    t0: list[int]
    t1: list[int]
    tx: list[int]
    high_edges: list[int] = field(default_factory=list)

    @property
    def name(self) -> str:
        """Hierarchical name relative to the root scope, dot-separated (``urng.position0``)."""
        return ".".join(self.scope + (self.reference,))

    @property
    def total_toggles(self) -> int:
        return sum(self.toggles)

    def bit_name(self, i: int) -> str:
        """``name[lsb + i]`` for a vector, ``name`` for a 1-bit net."""
        return self.name if self.width == 1 else f"{self.name}[{self.lsb + i}]"


class Activity(dict):
    """``toggle_counts``' result: name -> ``NetActivity``, plus the window (``start_ps``, ``end_ps``,
    ``duration_ps``) and ``edges`` (rising clock edges inside it; None without a clock variable)."""

    start_ps: int = 0
    end_ps: int = 0
    edges: int | None = None

    @property
    def duration_ps(self) -> int:
        return self.end_ps - self.start_ps


_TIME_TO_PS = {"s": 10**12, "ms": 10**9, "us": 10**6, "ns": 10**3, "ps": 1}


def _vector(value, size: int) -> tuple[int, int]:
    """A VCD value -> (value bits, x/z mask bits)."""
    if isinstance(value, int):
        return value, 0
    text = value.lower()
    if len(text) < size:
        text = (text[0] if text[0] in "xz" else "0") * (size - len(text)) + text
    bits = int(text.replace("x", "0").replace("z", "0"), 2)
    mask = int("".join("1" if c in "xz" else "0" for c in text), 2)
    return bits, mask


def _bit_matrix(values: list[int], width: int) -> np.ndarray:
    out = np.zeros((len(values), width), dtype=np.int64)
    for low in range(0, width, 60):
        span = min(60, width - low)
        mask = (1 << span) - 1
        chunk = np.fromiter(((v >> low) & mask for v in values), dtype=np.int64, count=len(values))
        out[:, low : low + span] = (chunk[:, None] >> np.arange(span)) & 1
    return out


def toggle_counts(
    vcd_path, *, root: str | None = "dut", window: str | None = WINDOW_VAR, clock: str | None = "clk"
) -> Activity:
    """Per-net activity from a VCD (pyvcd's ``vcd.reader.tokenize``), names relative to scope ``root``.

    Counts only inside the window: from the rise of the variable named ``window`` outside ``root``
    (``simulate_vcd``'s ``pezo_power_tb.measure``) to its fall, or the whole dump without one; the
    state just before the window is the reference for changes at its first instant. Per timestamp only
    the final value of a variable counts (no zero-delay glitches). A toggle is a 0->1 or 1->0 change of a
    bit; changes to or from x/z are not toggles (their time goes to TX). ``clock`` (relative to
    ``root``) gives the rising edges for ``high_edges``. Real and event variables are skipped.
    """
    declared: dict[str, list[tuple[tuple[str, ...], str, int, int]]] = {}
    sizes: dict[str, int] = {}
    changes: dict[str, list[list[int]]] = {}
    window_id = None
    scopes: list[str] = []
    now = 0
    scale_ps = 1
    root_parts = tuple(root.split(".")) if root else ()
    with open(vcd_path, "rb") as stream:
        for token in tokenize(stream):
            kind = token.kind
            if kind is TokenKind.CHANGE_TIME:
                now = token.data
            elif kind is TokenKind.CHANGE_SCALAR or kind is TokenKind.CHANGE_VECTOR:
                ident, value = token.data
                entries = changes.get(ident)
                if entries is None:
                    continue
                if kind is TokenKind.CHANGE_SCALAR:
                    v = value.lower()
                    bits, mask = (1, 0) if v == "1" else (0, 0) if v == "0" else (0, 1)
                else:
                    bits, mask = _vector(value, sizes[ident])
                if entries and entries[-1][0] == now:
                    entries[-1][1:] = [bits, mask]
                else:
                    entries.append([now, bits, mask])
            elif kind is TokenKind.SCOPE:
                scopes.append(token.data.ident.lstrip("\\"))
            elif kind is TokenKind.UPSCOPE:
                scopes.pop()
            elif kind is TokenKind.VAR:
                var = token.data
                if var.type_.value in ("real", "event", "string", "realtime"):
                    continue
                reference = var.reference.lstrip("\\")
                inside = _relative_scope(scopes, root_parts)
                if inside is None or (window and reference == window and not root_parts):
                    if window and reference == window:
                        window_id = var.id_code
                        sizes[var.id_code] = var.size
                        changes.setdefault(var.id_code, [])
                    continue
                if isinstance(var.bit_index, tuple):
                    lsb = min(var.bit_index)
                elif isinstance(var.bit_index, int):
                    lsb = var.bit_index
                else:
                    lsb = 0
                declared.setdefault(var.id_code, []).append((inside, reference, var.size, lsb))
                sizes[var.id_code] = var.size
                changes.setdefault(var.id_code, [])
            elif kind is TokenKind.TIMESCALE:
                ts = token.data
                if ts.unit.value not in _TIME_TO_PS:
                    raise ValueError(f"VCD timescale {ts.magnitude.value} {ts.unit.value} is finer than 1 ps")
                scale_ps = ts.magnitude.value * _TIME_TO_PS[ts.unit.value]
    end_of_dump = now

    start, end = 0, end_of_dump
    if window_id is not None:
        marks = changes[window_id]
        rises = [t for (t, v, x), prev in zip(marks, [[0, 0, 1]] + marks) if v == 1 and not x and prev[1] != 1]
        if not rises:
            raise ValueError(f"window variable {window!r} never rises in {vcd_path}")
        start = rises[0]
        falls = [t for t, v, x in marks if t > start and (v == 0 or x)]
        end = falls[0] if falls else end_of_dump

    activity = Activity()
    activity.start_ps, activity.end_ps = start * scale_ps, end * scale_ps
    edge_times = None
    if clock:
        clock_ids = [i for i, decls in declared.items() if any(".".join(s + (r,)) == clock for s, r, _, _ in decls)]
        if clock_ids:
            entries = changes[clock_ids[0]]
            edge_times = np.array(
                [
                    t
                    for (t, v, x), prev in zip(entries[1:], entries[:-1])
                    if v == 1 and not x and prev[1] == 0 and not prev[2] and start <= t < end
                ],
                dtype=np.int64,
            )
            activity.edges = len(edge_times)

    for ident, decls in declared.items():
        size = sizes[ident]
        entries = changes[ident]
        times = np.fromiter((e[0] for e in entries), dtype=np.int64, count=len(entries))
        first = int(np.searchsorted(times, start, side="left"))
        last = int(np.searchsorted(times, end, side="left"))
        before = entries[first - 1] if first > 0 else [start, 0, (1 << size) - 1]
        states = [before] + entries[first:last]
        stamps = np.array([start] + [e[0] for e in entries[first:last]], dtype=np.int64)
        durations = np.diff(np.append(stamps, end)) * scale_ps
        xs = _bit_matrix([s[2] for s in states], size)
        ones = _bit_matrix([s[1] for s in states], size) & (1 - xs)
        known = 1 - xs
        toggles = ((ones[1:] ^ ones[:-1]) & known[1:] & known[:-1]).sum(axis=0)
        t1 = durations @ ones
        tx = durations @ xs
        t0 = int(end - start) * scale_ps - t1 - tx
        if edge_times is not None and len(edge_times):
            index = np.maximum(np.searchsorted(stamps, edge_times, side="left") - 1, 0)
            high = ones[index].sum(axis=0)
        else:
            high = np.zeros(size, dtype=np.int64)
        for scope, reference, width, lsb in decls:
            net = NetActivity(
                scope=scope,
                reference=reference,
                width=width,
                lsb=lsb,
                toggles=[int(v) for v in toggles],
                t0=[int(v) for v in t0],
                t1=[int(v) for v in t1],
                tx=[int(v) for v in tx],
                high_edges=[int(v) for v in high],
            )
            activity[net.name] = net
    return activity


def _relative_scope(scopes: list[str], root: tuple[str, ...]) -> tuple[str, ...] | None:
    """The scope path below ``root`` (None when not inside it); everything when there is no root."""
    if not root:
        return tuple(scopes)
    for i in range(len(scopes) - len(root) + 1):
        if tuple(scopes[i : i + len(root)]) == root:
            return tuple(scopes[i + len(root) :])
    return None
