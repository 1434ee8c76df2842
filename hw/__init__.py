"""pezo hardware: Amaranth 0.5 components, one module per golden twin."""

from .grng import GaussianArray
from .perturb import PerturbationStream
from .pool import PoolReader
from .scale import ScaleLUT
from .urng import URNGArray, lane_layout

__all__ = ["GaussianArray", "PerturbationStream", "PoolReader", "ScaleLUT", "URNGArray", "lane_layout"]
