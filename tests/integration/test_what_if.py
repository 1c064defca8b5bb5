"""A what-if proposal over a whole incident, as its subscribers live it: a proposed index whose partition
passes the limit is told once a day on the what-if topic with the figure `hotkeys top` shows, and never
reaches the alert topic, never opens, escalates, reminds or resolves an incident. The deployment is
emulated whole (each shard's consumer in its own container, the judge on its schedule)."""

from __future__ import annotations

import random
import zlib
from typing import Any

import boto3
import pytest
from boto3.dynamodb.conditions import Key

from hotkeys.cli.top import ALL_INDEXES, top_rows, window_figures, windows_in_range
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.alerts.what_if import findings
from hotkeys.detector.config import Settings
from hotkeys.detector.handlers.wiring import build_ports
from hotkeys.emulator.events import ItemChange, sequence_number, stream_record
from tests.conftest import subscribed_topic
from tests.integration.test_alerts import T0, consume, delivered

SHARDS = 3
PROPOSAL = "by-status (proposed)"


def orders(seconds: int, records_per_second: int, pending: float, shards: int = SHARDS) -> list[list[dict[str, Any]]]:
    """Updates of 2,000 tickets, 4 write units each, ``pending`` of them PENDING (the rest spread over
    three other statuses), each ticket's records on the shard its key hashes to."""
    rng = random.Random(7)
    lanes: list[list[dict[str, Any]]] = [[] for _ in range(shards)]
    for number in range(seconds * records_per_second):
        key = f"ticket#{rng.randint(1, 2000)}"
        status = "PENDING" if rng.random() < pending else rng.choice(["PAID", "SHIPPED", "CANCELLED"])
        image = {"pk": key, "status": status, "note": "n" * 3500, "v": number}
        shard = zlib.crc32(key.encode()) % shards
        lanes[shard].append(
            stream_record(
                ItemChange(
                    event_name="MODIFY", keys={"pk": key}, new_image=image, old_image={**image, "v": number - 1}
                ),
                table="tickets",
                sequence=sequence_number(shard, len(lanes[shard])),
                event_time=T0 + number // records_per_second,
            )
        )
    return lanes


@pytest.fixture
def what_if_topic(topic: dict[str, str]) -> dict[str, str]:
    return subscribed_topic("what-if", "what-if-copies")


# On one shard the consumer's own first alarm sees the partition cross; on three only the judge does.
@pytest.mark.parametrize("shards", [1, SHARDS])
def test_a_hot_proposal_is_told_once_on_its_own_topic_and_never_as_an_incident(
    stats_table_name: str, topic: dict[str, str], what_if_topic: dict[str, str], shards: int
) -> None:
    # Given a proposed index on `status` while 70% of 300 four-unit updates a second are PENDING (about
    # 840 WCU/s on its partition, over the alert rate and for a while over the limit), for three windows
    settings = Settings(
        stats_table_name=stats_table_name,
        alert_topic_arn=topic["arn"],
        what_if_topic_arn=what_if_topic["arn"],
        what_if_indexes="by-status=status",
    )
    consume(settings, orders(seconds=180, records_per_second=300, pending=0.7, shards=shards))
    # Then the what-if topic received one notice, under its own subject
    (notice,) = delivered(what_if_topic["queue"])
    assert notice["subject"].startswith("[what-if] tickets index by-status (proposed): PENDING would peak at ")
    assert notice["kind"] == "what-if" and notice["attributes"]["kind"]["Value"] == "what-if"
    # and its figure is the one `hotkeys top` shows for the proposal's PENDING partition in the first window
    # (a notice waits for its window to settle; the later windows, as hot, are the same day's: not told again)
    store = build_ports(settings, AwsClients()).stats
    windows = windows_in_range(store, since=0, last=None, until=T0 + 10**5, table="tickets")  # type: ignore[arg-type]
    figures = window_figures(store, windows, ALL_INDEXES)  # type: ignore[arg-type]
    rows = [row for row in top_rows(figures, 10) if row.index == PROPOSAL and row.key == "PENDING"]
    assert len(rows) == 3
    assert all(row.to_json()["proposed"] for row in rows)  # `top --json` marks them
    assert all("proposed" not in row.to_json() for row in top_rows(figures, 10) if row.index is None)
    first = min(rows, key=lambda row: row.window_start)
    assert notice["wcu_per_second"] == first.wcu_per_second
    assert notice["window_start"] == first.window_start
    # and the replay's what-if section (every window) names the same partition at its hottest window's peak
    (finding,) = findings(figures, settings)
    assert (finding.key, finding.wcu_per_second) == ("PENDING", max(row.wcu_per_second for row in rows))
    # and the alert topic received nothing about it, and no incident names it
    assert all(PROPOSAL not in str(alert.get("index")) for alert in delivered(topic["queue"]))
    stored = boto3.resource("dynamodb").Table(stats_table_name)
    incidents = stored.query(KeyConditionExpression=Key("pk").eq("INC#tickets"))["Items"]
    assert [item for item in incidents if "proposed" in str(item.get("index_name"))] == []


def test_a_proposal_counts_nothing_unless_asked(stats_table_name: str, topic: dict[str, str]) -> None:
    # Given the same traffic without a proposal
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"])
    consume(settings, orders(seconds=60, records_per_second=300, pending=0.7))
    # Then no index figures are stored for it (the table has no GSI), and nothing is sent
    store = build_ports(settings, AwsClients()).stats
    windows = windows_in_range(store, since=0, last=None, until=T0 + 10**5, table="tickets")  # type: ignore[arg-type]
    assert [f.index for f in window_figures(store, windows, ALL_INDEXES)] == [None]  # type: ignore[arg-type]
    assert delivered(topic["queue"]) == []


def test_top_selects_the_real_partitions_or_the_proposals_and_never_counts_a_hot_proposal_left_out(
    stats_table_name: str, topic: dict[str, str], what_if_topic: dict[str, str]
) -> None:
    from hotkeys.cli.common import at_alert
    from hotkeys.cli.top import PROPOSED_INDEXES, REAL_INDEXES, shown_rows

    # Given a proposal whose PENDING partition would be past the alert threshold, and no hot table key
    settings = Settings(stats_table_name=stats_table_name, what_if_indexes="by-status=status")
    consume(settings, orders(seconds=60, records_per_second=300, pending=0.7))
    store = build_ports(settings, AwsClients()).stats
    windows = windows_in_range(store, since=0, last=None, until=T0 + 10**5, table="tickets")  # type: ignore[arg-type]
    assert {f.index for f in window_figures(store, windows, REAL_INDEXES)} == {None}  # type: ignore[arg-type]
    assert {f.index for f in window_figures(store, windows, PROPOSED_INDEXES)} == {PROPOSAL}  # type: ignore[arg-type]
    figures = window_figures(store, windows, ALL_INDEXES)  # type: ignore[arg-type]
    assert {f.index for f in figures} == {None, PROPOSAL}
    rates = {row.key: row.wcu_per_second for row in top_rows(figures, 1000) if row.index == PROPOSAL}
    assert rates["PENDING"] >= 0.8 * settings.partition_wcu_limit
    # When top shows the table's partitions only
    table, proposed = [f for f in figures if f.index is None], [f for f in figures if f.index is not None]
    rows, left_out = shown_rows(table, proposed, 10, lambda row: at_alert(row, settings))
    # Then the proposal is not named as a hot partition left out: a proposal is never an alert
    assert rows and {row.index for row in rows} == {None}
    assert left_out.outside_index == 0 and left_out.beyond_limit == 0
