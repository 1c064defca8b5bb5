"""The row every top-keys view shows (``top``, ``watch``, the replay and its report), and its one JSON form."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from hotkeys.detector.proposals import is_proposed


@dataclass(frozen=True)
class TopRow:
    """One key in one window: a row of the top-keys table, whichever command shows it (``top``,
    ``watch``, the replay and its report). ``wcu_per_second`` is the key's rate (``domain.rate.rate_of``: the
    one figure alerts quote and the threshold judges), ``at_most_wcu_per_second`` the most it can be
    (the summary's bound added; docs/decisions.md §79)."""

    table: str
    index: str | None  # a global secondary index's partition key (None: the table's)
    key: str
    window_start: str
    window_seconds: int
    writes: int
    wcu: int  # counted: a lower estimate; the true figure is at most ``error_bound`` more
    wcu_per_second: float
    at_most_wcu_per_second: float
    share: float  # of the table's (or the index's) write units in the window
    error_bound: int
    # What its alert says of its items (items.verdict: a single hot item in a table without a sort key, a hot
    # or spread collection in one with); None for an index partition, or items not followed.
    items: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The row; a what-if proposal's says so (``proposed``), as its index name does."""
        return {**asdict(self), **({"proposed": True} if is_proposed(self.index) else {})}

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> TopRow:
        """The row ``to_json`` wrote (a replay's JSON document holds its rows so)."""
        return cls(**{name: document[name] for name in _TOP_ROW_FIELDS if name in document})


_TOP_ROW_FIELDS = tuple(field.name for field in fields(TopRow))
