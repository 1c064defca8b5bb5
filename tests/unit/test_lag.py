"""Each table's stream lag (consumer.lag): a shard behind reports, at most once a minute; one that keeps up
costs nothing; a report holds a few minutes, read as if the shard had not moved since."""

from __future__ import annotations

import pytest

from hotkeys.detector.consumer.lag import (
    REPORT_BEHIND_SECONDS,
    REPORT_EVERY_SECONDS,
    REPORT_VALID_SECONDS,
    LagReport,
    LagReporter,
    table_lag,
)

T0 = 1_796_083_200


class Store:
    def __init__(self) -> None:
        self.saved: list[LagReport] = []

    def save_lag(self, report: LagReport) -> None:
        self.saved.append(report)

    def lag_reports(self, table: str) -> list[LagReport]:
        return [report for report in self.saved if report.table == table]


def test_a_shard_that_keeps_up_reports_nothing_and_one_behind_reports_once_a_minute() -> None:
    store = Store()
    reporter = LagReporter(store.save_lag)
    # a batch whose newest record is just under the threshold old: nothing written
    reporter.observe("orders", "s-1", T0, T0 + REPORT_BEHIND_SECONDS - 0.5)
    assert store.saved == []
    # behind: reported, then not again within a minute (for that shard), again after
    for second in range(0, 130, 5):
        reporter.observe("orders", "s-1", T0 + second - 3600, T0 + second)
    assert [report.at - T0 for report in store.saved] == [0, REPORT_EVERY_SECONDS, 2 * REPORT_EVERY_SECONDS]
    assert all(report.behind == 3600 for report in store.saved)
    # another shard, or the same shard id of another table, reports on its own
    reporter.observe("orders", "s-2", T0 - 100, T0 + 1)
    reporter.observe("users", "s-1", T0 - 100, T0 + 1)
    assert [(r.table, r.shard_id) for r in store.saved[3:]] == [("orders", "s-2"), ("users", "s-1")]


def test_a_tables_lag_is_its_worst_recent_report_aged_since() -> None:
    reports = [
        LagReport("orders", "s-1", 3600.0, T0),
        LagReport("orders", "s-2", 45.0, T0 + 50),
        LagReport("orders", "s-3", 99_999.0, T0 - REPORT_VALID_SECONDS - 1),  # too old: no longer holds
    ]
    assert table_lag(reports, T0 + 10) == pytest.approx(3610.0)
    assert table_lag(reports[1:], T0 + 60) == pytest.approx(55.0)
    # a shard that caught up stops reporting: its last report lapses
    assert table_lag(reports, T0 + 50 + REPORT_VALID_SECONDS + 1) == 0.0
    assert table_lag([], T0) == 0.0


def test_a_report_that_fails_is_logged_and_tried_again_at_the_next_batch() -> None:
    attempts: list[LagReport] = []

    def refused(report: LagReport) -> None:
        attempts.append(report)
        raise RuntimeError("throttled")

    reporter = LagReporter(refused)
    reporter.observe("orders", "s-1", T0 - 600, T0)  # no exception reaches the batch
    reporter.observe("orders", "s-1", T0 - 590, T0 + 5)  # not marked as reported: tried again
    assert [report.at - T0 for report in attempts] == [0, 5]


def test_a_shard_that_caught_up_says_so_once_and_its_table_waits_no_longer() -> None:
    store = Store()
    reporter = LagReporter(store.save_lag)
    reporter.observe("orders", "s-1", T0 - 3600, T0)
    assert table_lag(store.lag_reports("orders"), T0 + 10) == pytest.approx(3610.0)
    reporter.observe("orders", "s-1", T0 + 19, T0 + 20)  # current again
    reporter.observe("orders", "s-1", T0 + 39, T0 + 40)  # (said once only)
    assert [report.behind for report in store.saved] == [3600, 0.0]
    # the table's lag is the latest report of each shard: keyed by shard, the store keeps one
    latest = {report.shard_id: report for report in store.saved}
    assert table_lag(latest.values(), T0 + 21) == 0.0
