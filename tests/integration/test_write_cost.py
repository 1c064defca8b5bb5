"""The detector's own write cost, counted (not timed): the targets of docs/benchmarks.md hold in CI."""

from __future__ import annotations

import pytest

from bench.run import stats_write_cost, zipf_records


@pytest.fixture(scope="module")
def workload() -> list:
    return zipf_records(rate=1000, duration=15)


@pytest.mark.parametrize(("batch_size", "limit"), [(100, 20.0), (1000, 5.0)])
def test_stats_writes_per_thousand_records_stay_under_target(
    aws: None, workload: list, batch_size: int, limit: float
) -> None:
    figures = stats_write_cost(workload, batch_size, tumbling=True)
    assert figures["requests_per_1000"] <= limit
    # And the detector's write units are a tiny fraction of the source table's
    assert figures["wcu_per_1000"] < 0.01 * figures["source_wcu_per_1000"]


def requests(records: list) -> float:
    """Stats-table write requests the detector makes for these records of one shard (batches of 1,000)."""
    return stats_write_cost(records, 1000, tumbling=True)["requests_per_1000"] * len(records) / 1000


def test_the_stats_writes_follow_windows_not_records() -> None:
    # Given one shard's 15 seconds at 250 and at 500 records a second
    quiet, busy = zipf_records(rate=250, duration=15), zipf_records(rate=500, duration=15)
    # Then twice the records cost the detector no more stats writes (one per record would be 3,750 more)
    assert len(busy) == 2 * len(quiet)
    assert requests(busy) == requests(quiet) > 0
