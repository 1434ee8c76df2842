"""pezo.golden.regs: the register maps, described once.

``spec`` (``Field``, ``Register`` and the ``RegisterMap`` builder that assigns offsets), ``stream`` (the stream
host's map and its transaction-level twin), ``engine`` (the engine top's registers and windows: ``BoardMap``),
``header`` (their C headers). The codes the registers hold are the ``IntEnum`` classes of ``golden.engine.ops``.
"""
