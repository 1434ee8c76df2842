"""Aggregation over seeds shared by the sweeps: mean and sample standard deviation, and the table cell."""

from __future__ import annotations

import statistics


def mean_std(values) -> tuple[float | None, float | None]:
    """Mean and sample std of the values that are not None (std 0.0 for one value); (None, None) for none."""
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def percent_cell(mean, std, seeds: int = 2) -> str:
    """``mean ± std`` in percent; one seed has no spread, so its cell is the value alone (never ``± 0.0``);
    "-" without a mean."""
    if mean is None:
        return "-"
    return f"{100 * mean:.1f}" if seeds < 2 else f"{100 * mean:.1f} ± {100 * std:.1f}"
