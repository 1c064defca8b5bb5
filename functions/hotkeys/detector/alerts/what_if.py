"""What-if findings: a proposed index's or partition key's partition that would pass the alert rate.

A proposal's partitions are judged by the partition-limit rule the real ones are (``rules``), on the
same figures, but they are never incidents: nothing fires, escalates, reminds or resolves, and a
finding never goes to the alert topic. A notice (its own subject, ``[what-if]``) says, per proposal
and UTC day, the hottest partition of the first settled window that passed (final figures: those
``top`` shows), with the fix. The judge sends it to the what-if topic, if the deployment has one:
nobody is paged by default.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from hotkeys.detector.alerts import rules
from hotkeys.detector.alerts.messages import SUBJECT_LIMIT, display_key, printable_ascii
from hotkeys.detector.config import Settings
from hotkeys.detector.domain.rate import is_hot, percent_of_limit, rate_of, shown, suggested_shards, whole
from hotkeys.detector.domain.summary import Entry
from hotkeys.detector.domain.windows import iso_utc
from hotkeys.detector.observability import logger
from hotkeys.detector.proposals import KEYED_BY, PROPOSED, is_proposed, where

DAY_SECONDS = 86_400
WHAT_IF = "what-if"


@dataclass(frozen=True)
class WhatIf:
    """The hottest partition of one proposal in the windows judged: its key, rates and share."""

    table: str
    proposal: str  # the proposal's stored index name (``PROPOSED`` ends it)
    key: str  # as alerts show it (``KEY_DISPLAY``)
    window_start: int
    wcu_per_second: float  # its rate (``domain.rate.rate_of``), as ``top`` shows it
    at_most_wcu_per_second: float  # the most that rate can be (``domain.rate.Rate.at_most``)
    share: float  # of the proposal's write units in its window
    partition_wcu_limit: int
    suggested_shards: int
    hot: bool  # its rate (or its upper end: possibly) reaches the alert rate: a notice is due
    also_hot: tuple[str, ...] = ()  # the proposal's other partitions that reached it, hottest first

    @property
    def day(self) -> int:
        return self.window_start - self.window_start % DAY_SECONDS

    @property
    def percent_of_limit(self) -> float:
        return percent_of_limit(self.wcu_per_second, self.partition_wcu_limit)

    @property
    def rekeying(self) -> bool:
        return self.proposal.startswith(KEYED_BY)


def findings(views: Iterable[rules.Figures], settings: Settings) -> list[WhatIf]:
    """Per proposal in ``views``, its hottest partition (highest rate) over every window: ``hot`` when it
    reaches the partition limit's alert rate (the rule real partitions are judged by); with the
    proposal's other partitions that reached it (``also_hot``, hottest first)."""
    best: dict[tuple[str, str], WhatIf] = {}
    hot_peaks: dict[tuple[str, str], dict[str, float]] = {}
    span = settings.alert_min_span_seconds
    for figures in views:
        if not is_proposed(figures.index):
            continue
        for key, entry in figures.entries.items():
            found = _finding(figures, key, entry, settings, span)
            name = (found.table, found.proposal)
            if found.hot:
                peaks = hot_peaks.setdefault(name, {})
                peaks[found.key] = max(peaks.get(found.key, 0.0), found.wcu_per_second)
            known = best.get(name)
            if known is None or (found.hot, found.wcu_per_second) > (known.hot, known.wcu_per_second):
                best[name] = found
    return [
        dataclasses.replace(
            found,
            also_hot=tuple(
                key
                for key, _peak in sorted(hot_peaks.get(name, {}).items(), key=lambda pair: (-pair[1], pair[0]))
                if key != found.key
            ),
        )
        for name, found in sorted(best.items())
    ]


def _finding(figures: rules.Figures, key: str, entry: Entry, settings: Settings, span: int) -> WhatIf:
    rate = rate_of(entry, figures.bound(key), figures.last_event, span)
    return WhatIf(
        table=figures.table,
        proposal=str(figures.index),
        key=display_key(key, settings.key_display, settings.key_hash_salt),
        window_start=figures.window_start,
        wcu_per_second=shown(rate.wcu_per_second),
        at_most_wcu_per_second=shown(rate.at_most),
        share=round(min(1.0, (entry.wcu + figures.bound(key)) / figures.wcu), 4),
        partition_wcu_limit=settings.partition_wcu_limit,
        suggested_shards=suggested_shards(rate.wcu_per_second, settings),
        hot=is_hot(rate.at_most, settings),
    )


def subject(found: WhatIf) -> str:
    """``[what-if] tickets index by-status (proposed): PENDING would peak at 2,120 WCU/s, 212% of
    limit``, in printable ASCII and within SNS's subject limit (the key is cut first)."""
    head = f"[what-if] {where(found.table, found.proposal)}: "
    tail = f" would peak at {whole(found.wcu_per_second)} WCU/s, {whole(found.percent_of_limit)}% of limit"
    room = SUBJECT_LIMIT - len(head) - len(tail)
    key = printable_ascii(found.key[: SUBJECT_LIMIT + 1])
    key = key if len(key) <= room else key[: max(room - 3, 8)] + "..."
    return printable_ascii(head + key + tail)[:SUBJECT_LIMIT]


def advice(found: WhatIf) -> str:
    """The fix, for a proposal: what to choose instead, before creating it."""
    what = "partition key" if found.rekeying else "index partition key"
    shards = found.suggested_shards
    also = f" (and to {', '.join(map(repr, found.also_hot))}, also over the alert rate)" if found.also_hot else ""
    return (
        f"Before creating it: choose a higher-cardinality {what}, or add a write-sharding suffix to "
        f"{found.key!r}{also}: 1..{shards} keeps each partition under the alert rate."
    )


def text(found: WhatIf) -> str:
    """The notice's body (e-mail text)."""
    name = found.proposal.removesuffix(PROPOSED)
    kind = "the table keyed by" if found.rekeying else "the proposed index"
    return "\n".join(
        (
            subject(found),
            "",
            f"If {kind} {name.removeprefix(KEYED_BY)} existed, its partition {found.key!r} would have received "
            f"{whole(found.wcu_per_second)} WCU/s (at most {whole(found.at_most_wcu_per_second)}; "
            f"{found.share:.0%} of its writes) in the window from {iso_utc(found.window_start)}: a partition "
            f"serves {found.partition_wcu_limit:,} WCU/s.",
            advice(found),
            "A what-if notice is sent at most once per proposal and UTC day; it is no incident and pages nobody.",
        )
    )


def document(found: WhatIf) -> dict[str, Any]:
    """The notice as JSON subscribers read it."""
    return {
        "kind": WHAT_IF,
        "table": found.table,
        "proposal": found.proposal,
        "key": found.key,
        "window_start": iso_utc(found.window_start),
        "wcu_per_second": round(found.wcu_per_second, 1),
        "at_most_wcu_per_second": round(found.at_most_wcu_per_second, 1),
        "share": round(found.share, 4),
        "percent_of_limit": round(found.percent_of_limit, 2),
        "suggested_shards": found.suggested_shards,
        "hot": found.hot,
        "also_hot": list(found.also_hot),
        **({"subject": subject(found), "advice": advice(found)} if found.hot else {}),
    }


def publish_arguments(topic_arn: str, found: WhatIf) -> dict[str, Any]:
    """SNS Publish arguments: JSON for machines, text for e-mail, a ``kind`` attribute for filters."""
    body = json.dumps(document(found))
    return {
        "TopicArn": topic_arn,
        "Subject": subject(found),
        "Message": json.dumps({"default": body, "sqs": body, "lambda": body, "email": text(found)}),
        "MessageStructure": "json",
        "MessageAttributes": {
            "kind": {"DataType": "String", "StringValue": WHAT_IF},
            "table": {"DataType": "String", "StringValue": found.table},
        },
    }


class WhatIfNotices:
    """The judge's part: each finding logged, and a notice per proposal and UTC day claimed in the stats
    table (``claim``: True for the one writer that made the claim) and published (``publish``: the
    what-if topic; None: logged only). A container remembers what it sent, so a proposal hot all day
    costs one claim."""

    def __init__(self, claim: Callable[[WhatIf], bool], publish: Callable[[WhatIf], None] | None) -> None:
        self._claim = claim
        self._publish = publish
        self._sent: dict[tuple[str, str], int] = {}

    def consider(self, found: Iterable[WhatIf]) -> int:
        """The notices published for these findings."""
        published = 0
        for finding in found:
            if not finding.hot or self._sent.get((finding.table, finding.proposal)) == finding.day:
                continue
            logger.info("what-if: a proposal would have a hot partition", extra=document(finding))
            if self._publish is not None and self._claim(finding):
                try:
                    self._publish(finding)
                except Exception as error:  # a planning notice: logged (above), never a failed look
                    logger.warning("what-if notice not published", extra={"error": str(error)})
                else:
                    published += 1
            self._sent[(finding.table, finding.proposal)] = finding.day
        return published
