"""Seeded per-cycle stimulus shared by the cocotb testbenches and the Amaranth-simulator tests."""

from __future__ import annotations

import random


class URNGStimulus:
    """(en, save, restore) per cycle.

    ``en`` is high 90 % of cycles. With rewind: random saves and restores (0.5 % each, most saves
    land at pointer != 0 and must be ignored), and scripted ones in the middle of the run: at 10 % and
    67 % a save is held (with ``en``) until the pointer reaches 0, at 50 % and 90 % a restore, and at
    67 % the restore coincides with the honoured save (the swap case).
    """

    def __init__(self, rewind: bool, cycles: int, seed: int):
        self.rng = random.Random(seed)
        self.rewind = rewind
        self.save_at = {cycles // 10, (2 * cycles) // 3} if rewind else set()
        self.restore_at = {cycles // 2, (9 * cycles) // 10} if rewind else set()
        self.pending_save = False
        self.swap_next_save = False
        self.honoured_saves = 0
        self.restores = 0

    def next(self, cycle: int, pointer: int) -> tuple[int, int, int]:
        """Inputs for this cycle, given the pointer the DUT shows in it."""
        en = int(self.rng.random() < 0.9)
        if not self.rewind:
            return en, 0, 0
        save = int(self.rng.random() < 0.005)
        restore = int(self.rng.random() < 0.005)
        if cycle in self.save_at:
            self.pending_save = True
            self.swap_next_save = cycle != min(self.save_at)
        if self.pending_save:
            save, en = 1, 1
            if pointer == 0:
                self.pending_save = False
                restore = int(self.swap_next_save)
        if cycle in self.restore_at:
            restore = 1
        self.honoured_saves += int(save and pointer == 0)
        self.restores += restore
        return en, save, restore
