"""pezo golden model: the NumPy definition of every hardware block's arithmetic.

Nothing here imports the rest of pezo; ``hw`` builds circuits that must match these
functions bit for bit, and ``sim`` proves that they do.
"""

from .config import PerturbConfig, STRATEGIES
from .lfsr import LFSR_TAPS, lfsr_next, lfsr_jump, lfsr_period, offset_to_signed
from .urng import URNGArray, URNGSnapshot

__all__ = [
    "PerturbConfig", "STRATEGIES", "LFSR_TAPS", "lfsr_next", "lfsr_jump", "lfsr_period",
    "offset_to_signed", "URNGArray", "URNGSnapshot",
]
