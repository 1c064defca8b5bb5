"""Which fix works for a hot key: its family, its antipattern and how its writes spread over items.

One function for both writers of alerts (the stream consumer's first alarm on its shard's figures,
the judge on a window's figures merged over every shard): the figures decide which words an alert
carries, never whether it fires.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from hotkeys.detector.alerts.rules import HotKey
from hotkeys.detector.domain import diagnosis, items
from hotkeys.detector.domain.items import ItemStats
from hotkeys.detector.domain.summary import Entry


@dataclasses.dataclass(frozen=True)
class Context:
    """What a window's figures say beyond the hot key's own entry."""

    entries: Mapping[str, Entry]  # every key of the table (or index) in the window
    wcu: int  # the window's write units (so far)
    pruned: bool  # the figures come from a summary that pruned (more than twice its capacity of keys)
    items: Mapping[str, ItemStats]  # item figures of the heaviest table keys
    has_sort_key: bool = False
    has_local_indexes: bool = False


def diagnosed(hot: HotKey, context: Context, limit: int) -> HotKey:
    """``hot`` with the antipattern its name and window point to, the family verdict if it is one shard
    of a write-sharded family, and, for a table key with a sort key, hot item or hot collection."""
    share = hot.wcu / context.wcu if context.wcu else 0.0
    # A pruned summary has seen more than twice its capacity of keys: never "few keys".
    distinct = len(context.entries) + (diagnosis.FEW_KEYS if context.pruned else 0)
    found = _family_of(hot, context, limit) or diagnosis.classify(hot.key, share, distinct, hot.index)
    spread = (
        items.verdict(context.items.get(hot.key), context.has_sort_key, context.has_local_indexes)
        if hot.index is None
        else None
    )
    return dataclasses.replace(
        hot,
        pattern=found.pattern if found else None,
        remedy=found.remedy if found else None,
        items=spread[0] if spread else None,
        items_advice=spread[1] if spread else None,
    )


def _family_of(hot: HotKey, context: Context, limit: int) -> diagnosis.Diagnosis | None:
    """A hot key that is one shard of a write-sharded family: the family's verdict (uneven, near what its
    shards absorb) is the advice, not "shard it"."""
    weights = ((key, entry.wcu) for key, entry in context.entries.items())
    for family in diagnosis.shard_families(weights):
        if hot.key.startswith(family.stem) and hot.key[len(family.stem) :].isdigit():
            seconds = max(1, hot.event_time - hot.window_start + 1)
            return diagnosis.Diagnosis(diagnosis.SHARD_FAMILY, family.verdict(seconds, limit))
    return None
