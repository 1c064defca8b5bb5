"""How far behind each table's stream is read: reports from the shards that are behind, and a table's lag.

A batch whose newest record is ``REPORT_BEHIND_SECONDS`` old or more when the consumer processes it (the
age Lambda's ``IteratorAge`` measures, per batch) is reported to the stats table, at most every
``REPORT_EVERY_SECONDS`` per shard and container, and once more when it has caught up (its container
says so: a report of no lag): a shard that keeps up costs nothing. A report holds for
``REPORT_VALID_SECONDS`` (a shard still behind reports again before then; one that caught up stops), and
is read as if the shard had not moved since (its age plus the time since the report: a stuck shard's
lag grows). The judge holds a table's windows by that table's reports alone (docs/decisions.md §77):
one table's shard an hour behind delays nothing on another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from hotkeys.detector.observability import logger

REPORT_BEHIND_SECONDS = 30
REPORT_EVERY_SECONDS = 60
REPORT_VALID_SECONDS = 3 * REPORT_EVERY_SECONDS


@dataclass(frozen=True)
class LagReport:
    table: str
    shard_id: str
    behind: float  # the batch's newest record's age when it was processed
    at: float  # when (the consumer's clock)


def table_lag(reports: Iterable[LagReport], now: float) -> float:
    """The table's lag now: the oldest moment any of its shards may still be delivering records of, as an
    age (0: every shard keeps up, or none reported within ``REPORT_VALID_SECONDS``)."""
    return max(
        (
            report.behind + now - report.at
            for report in reports
            if report.behind > 0 and now - report.at <= REPORT_VALID_SECONDS
        ),
        default=0.0,
    )


@dataclass
class LagReporter:
    """A container's reports (``save``: the stats table's; and when it last reported each shard)."""

    save: Callable[[LagReport], None]
    reported: dict[tuple[str, str], float] = field(default_factory=dict)

    def observe(self, table: str, shard_id: str, newest_event: float, now: float) -> None:
        """A batch's newest record's time: reported if the shard is behind. Advisory: a report that fails
        is logged and the batch goes on (the next one reports again)."""
        behind = now - newest_event
        if behind < REPORT_BEHIND_SECONDS:
            if (table, shard_id) in self.reported:  # caught up: said once, so its table waits no longer
                self._save(LagReport(table, shard_id, 0.0, now))
                del self.reported[(table, shard_id)]
            return
        last = self.reported.get((table, shard_id))
        if last is not None and now - last < REPORT_EVERY_SECONDS:
            return
        if self._save(LagReport(table, shard_id, behind, now)):
            self.reported[(table, shard_id)] = now

    def _save(self, report: LagReport) -> bool:
        try:
            self.save(report)
        except Exception as error:
            logger.warning("lag report not written", extra={"table": report.table, "error": str(error)})
            return False
        return True
