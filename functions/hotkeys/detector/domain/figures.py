"""How a key's figures read wherever a person reads them: its rate, and the rate as a percent of the partition
limit, in the JSON and tables (to a tenth) and in sentences (whole), always rounded down, so that a figure
reaches a threshold exactly when the rate does: 799.97 WCU/s is 799.9 (79.9%) in a table and 799 (79%) in a
sentence, never the hot-looking 800 (80%) of a threshold it has not reached (docs/decisions.md §79)."""

from __future__ import annotations

import math

# (a rate or a ratio computed in floating point may land a hair under the figure it is: 80.0 as 79.99999999)
_EPSILON = 1e-9


def shown(rate: float) -> float:
    """A rate as the JSON and the tables show it: to a tenth, rounded down."""
    return math.floor(rate * 10 + _EPSILON) / 10


def percent_of_limit(rate: float, limit: int) -> float:
    """``rate`` in percent of the partition ``limit``, to a tenth, rounded down."""
    return math.floor(rate * 1000 / limit + _EPSILON) / 10


def whole(figure: float) -> str:
    """A rate or a percent in a sentence: whole, rounded down, with thousands separators."""
    return f"{math.floor(figure + _EPSILON):,}"
