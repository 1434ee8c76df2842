"""pezo hardware: Amaranth 0.5 components, one module per golden twin."""

from .urng import URNGArray, lane_layout

__all__ = ["URNGArray", "lane_layout"]
