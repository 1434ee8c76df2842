"""Registers between a source and a port with one stall signal: the cycle model of every stream unit's
pipeline (``hw.rng.pool.PoolReader``'s read stages, ``hw.rng.perturb.PerturbationStream``'s scale and
sign stages).

``depth`` stages each hold a payload or nothing (a bubble). The port shows the last stage; it is valid
when that stage holds a payload. On a clock edge, by priority:

* ``flush``: every stage empties (a NEXT or REWIND: values of the old position must not reach the port);
* the pipeline *advances* on an edge where ``ready`` (the consumer's ``en``: it wants data) is high:
  every stage loads the one before it and stage 0 loads ``entry`` (the source's payload, or None when
  the source is not valid), so the port's payload is consumed when it was valid, and the source is
  consumed exactly on advancing edges where it is valid;
* otherwise nothing moves, valid or not: every register keeps its value.

So a consumer holding ``ready`` high gets one payload per cycle after ``depth`` cycles of latency, and
``ready`` low for a cycle costs nothing but that cycle (no bubble is inserted). Nothing moves unless the
consumer asks, so where the source stands depends only on the sequence of ``ready`` and flushes, never on
how many idle cycles passed (what makes the otf NEXT alignment independent of bus timing).
"""

from __future__ import annotations


class StallPipeline:
    def __init__(self, depth: int):
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        self.depth = depth
        self.stages: list = [None] * depth

    @property
    def valid(self) -> bool:
        return self.stages[-1] is not None

    def output(self):
        """The payload on the port (None while not valid)."""
        return self.stages[-1]

    def advances(self, ready: bool) -> bool:
        """Whether an edge with this ``ready`` (and no flush) moves the pipeline."""
        return bool(ready)

    def step(self, entry, ready: bool, flush: bool = False) -> bool:
        """One clock edge; returns True when ``entry`` was taken (the source is consumed if it was valid)."""
        if flush:
            self.stages = [None] * self.depth
            return False
        if not self.advances(ready):
            return False
        self.stages = [entry, *self.stages[:-1]]
        return True
