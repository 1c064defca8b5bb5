"""GSI back-pressure end to end: the real wiring reads the index from DescribeTable (moto), counts
its partitions, alerts on the hot index key by name, and `top --index` shows it."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from hotkeys.cli.top import top_rows, window_figures, windows_in_range
from hotkeys.detector.adapters.stats_store import DynamoStatsStore
from hotkeys.detector.alerts.incidents import Message
from hotkeys.detector.alerts.rules import incident_key
from hotkeys.detector.config import Settings
from hotkeys.emulator.events import ItemChange, sequence_number, stream_record
from tests.integration.test_alerts import T0, consume, delivered
from tests.support import create_source_table


def create_orders_table() -> None:
    """``orders`` keyed by pk, with ``by-status``: a KEYS_ONLY index on a three-valued attribute."""
    create_source_table("orders", None, status_index=True)


def new_orders(rate: int, start: int, duration: int, status: str = "PENDING", first: int = 0) -> list[dict[str, Any]]:
    """``rate`` new orders per second, each its own partition key, all with the same status."""
    records = []
    for position in range(rate * duration):
        number = first + position
        records.append(
            stream_record(
                ItemChange(
                    event_name="INSERT",
                    keys={"pk": f"order#{number}"},
                    new_image={"pk": f"order#{number}", "status": status, "total": 1250},
                ),
                table="orders",
                sequence=sequence_number(0, number),
                event_time=T0 + start + position // rate,
            )
        )
    return records


@pytest.fixture
def orders(aws: None) -> None:
    create_orders_table()


def test_a_hot_index_key_fires_a_back_pressure_alert_naming_the_index(
    stats_table_name: str, topic: dict[str, str], orders: None
) -> None:
    # Given 900 new orders a second for 20 s, each order its own key, all of them PENDING; then quiet windows
    records = new_orders(900, 10, 20) + new_orders(1, 130, 60, status="SHIPPED", first=18_000)
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], share_min_wcu=10**9)
    # When the function consumes them with its real wiring (the index read from DescribeTable)
    consume(settings, [records])
    alerts = delivered(topic["queue"])
    # Then the index key fires once (at the crossing: 800 WCU/s, one partition would still do), is updated
    # once its peak (900 WCU/s) calls for 2 suffixes, and resolves once; no table key was hot
    assert [(a["index"], a["key"], a["status"]) for a in alerts] == [
        ("by-status", "PENDING", "firing"),
        ("by-status", "PENDING", "escalated"),
        ("by-status", "PENDING", "resolved"),
    ]
    assert [(a["peak_wcu_per_second"], a["suggested_shards"]) for a in alerts] == [(800.0, 1), (900.0, 2), (900.0, 2)]
    firing = next(a for a in alerts if a["status"] == "firing")
    assert firing["table"] == "orders" and firing["wcu_per_second"] >= 800
    assert firing["attributes"]["index"]["Value"] == "by-status"
    assert firing["subject"].startswith("[hot key] orders index by-status: PENDING at")
    # and the key is named for what it is: one status value taking the index's writes
    assert firing["pattern"] == "low cardinality"
    # and the incident is named apart from the table's keys' (same partition: one read for both)
    incident = (
        boto3.resource("dynamodb")
        .Table(stats_table_name)
        .get_item(Key={"pk": "INC#orders", "sk": incident_key("partition_limit", "PENDING", "by-status")})["Item"]
    )
    assert incident["index_name"] == "by-status" and incident["key"] == "PENDING"
    assert incident["sk"].startswith("index#by-status#partition_limit#")


def test_the_messages_explain_back_pressure_and_the_index_fix(
    stats_table_name: str, topic: dict[str, str], orders: None
) -> None:
    # Given the same PENDING burst, delivered as e-mail and chat forms
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], share_min_wcu=10**9)
    consume(settings, [new_orders(900, 10, 20)])
    (firing,) = [a for a in delivered(topic["queue"]) if a["status"] == "firing"]
    # Then the structured message names what throttles and what to change (the forms are built from it)
    from hotkeys.detector.alerts.messages import Alert, chatbot_payload, email_text

    names = ("table", "index", "key", "wcu", "wcu_per_second", "share", "reason", "pattern")
    fields = {name: firing[name] for name in names}
    alert = Alert(
        **fields,
        window_start=T0,
        window_seconds=60,
        partition_wcu_limit=1000,
        status=Message.FIRING,
        peak_wcu_per_second=firing["wcu_per_second"],
        alert_wcu_per_second=800.0,
        remedy="(the remedy)",
    )
    text = email_text(alert)
    assert "Index by-status of table orders" in text and "GSI back-pressure" in text
    assert "'PENDING#<n>'" in text and "more distinct values" in text
    assert "Pattern: low cardinality — (the remedy)." in text
    assert "hotkeys top --stats-table <StatsTableName> --table orders --index by-status" in text
    assert "by-status" in chatbot_payload(alert)["content"]["keywords"]


def test_top_shows_the_index_partitions_apart_from_the_tables(stats_table_name: str, orders: None) -> None:
    # Given the burst, counted without alerting
    consume(Settings(stats_table_name=stats_table_name), [new_orders(900, 10, 20)])
    store = DynamoStatsStore(boto3.resource("dynamodb").Table(stats_table_name))
    windows = windows_in_range(store, since=0, last=None, until=T0 + 10**6, table="orders")
    # When the table's and the index's figures are read
    table_rows = top_rows(window_figures(store, windows), 3)
    index_rows = top_rows(window_figures(store, windows, "by-status"), 3)
    # Then the table's keys are cool (one write each) and the index's one key took every write
    assert table_rows[0].index is None and table_rows[0].wcu == 1
    assert [(row.index, row.key, row.wcu) for row in index_rows] == [("by-status", "PENDING", 18_000)]
    assert index_rows[0].share == 1.0


def test_counting_indexes_can_be_turned_off(stats_table_name: str, topic: dict[str, str], orders: None) -> None:
    # Given COUNT_INDEXES=false
    settings = Settings(
        stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], share_min_wcu=10**9, count_indexes=False
    )
    # When the burst is consumed
    consume(settings, [new_orders(900, 10, 20)])
    store = DynamoStatsStore(boto3.resource("dynamodb").Table(stats_table_name))
    windows = windows_in_range(store, since=0, last=None, until=T0 + 10**6, table="orders")
    # Then no index is counted and nothing fires
    assert window_figures(store, windows, "by-status") == []
    assert delivered(topic["queue"]) == []


def test_an_invocation_reports_the_index_write_units_it_counted(stats_table_name: str, orders: None) -> None:
    # Given one batch of the burst through the real wiring
    from hotkeys.detector.adapters.aws import AwsClients
    from hotkeys.detector.consumer.pipeline import parse_event, process_batch
    from hotkeys.detector.handlers.app import _record_metrics
    from hotkeys.detector.handlers.wiring import build_ports
    from hotkeys.detector.observability import metrics

    settings = Settings(stats_table_name=stats_table_name)
    outcome = process_batch(
        parse_event({"Records": new_orders(100, 10, 3)}), settings, build_ports(settings, AwsClients())
    )
    # Then the outcome holds the index's write units by table and index (the metric's name), not by key
    assert outcome.index_wcu == {("orders", "by-status"): 300}
    _record_metrics(outcome)
    assert metrics.metric_set["IndexWriteUnits/orders/by-status"]["Value"] == [300.0]
    metrics.clear_metrics()
