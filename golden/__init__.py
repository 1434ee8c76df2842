"""pezo.golden: the NumPy definition of everything pezo computes, bit-exact.

Rooms: ``config`` (the one frozen config), ``rng`` (twins of hw.rng: LFSR, URNG array, pool, scale LUT,
Gaussian baseline, the perturbation stream), ``engine`` (twins of hw.engine: INT8 arithmetic, the ZO step),
``regs`` (the register maps, described once: the stream host's, twin of hw.host, and the engine top's),
``losses``, ``lm`` (MiniLM, datasets, probe), ``zo`` (perturbation families, MeZO, trainers), ``methods`` (the
other seeds' methods), ``sweep`` (the accuracy sweeps). Nothing here imports hw, sim, boards or cli (an
import-linter contract checks it).
"""
