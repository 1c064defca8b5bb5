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


def test_a_naive_consumer_would_write_once_per_record(workload: list) -> None:
    from bench.naive import naive_handler
    from bench.stubs import NullTable

    table = NullTable()
    naive_handler({"Records": workload[:500]}, table)
    assert table.calls == 500
