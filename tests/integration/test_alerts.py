"""Alerts through SNS as subscribers receive them: one firing per incident, spaced reminders, one resolved."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import boto3
import pytest

from hotkeys.cli.esm import Chaos, RandomChaos, ShardConsumer, consume_lineage
from hotkeys.cli.events import sequence_number, stream_record
from hotkeys.cli.top import top_rows, window_figures, windows_in_range
from hotkeys.deployment import EventSourceSettings
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.alerts.rules import incident_key
from hotkeys.detector.config import Settings
from hotkeys.detector.pipeline import parse_event, process_batch
from hotkeys.detector.wiring import build_ports
from tests.support import ORDERS_ALERT

T0 = 1_796_083_200
DOCUMENT_FIELDS = {
    "remedy",
    "items",
    "pattern",
    "index",
    "table",
    "key",
    "window_start",
    "window_seconds",
    "wcu",
    "wcu_per_second",
    "partition_limit_wcu",
    "percent_of_limit",
    "share",
    "reason",
    "status",
    "suggested_shards",
}


def traffic(spec: list[tuple[str, float, int, int]], shard: int = 0, table: str = "tickets") -> list[dict[str, Any]]:
    """(key, wcu per second, start second, duration) → 1-WCU MODIFY records in time order."""
    events = []
    for key, rate, start, duration in spec:
        count = int(rate * duration)
        events.extend((T0 + start + i / rate, key) for i in range(count))
    events.sort()
    records = []
    for position, (when, key) in enumerate(events):
        image = {"pk": key, "v": position}
        records.append(
            stream_record(
                table=table,
                event_name="MODIFY",
                keys={"pk": key},
                sequence=sequence_number(shard, position),
                event_time=int(when),
                new_image=image,
                old_image=image,
            )
        )
    return records


def consume(
    settings: Settings, shards: list[list[dict[str, Any]]], chaos: Chaos | None = None, batch_size: int = 500
) -> None:
    ports = build_ports(settings, AwsClients())
    esm = EventSourceSettings(batch_size=batch_size, tumbling_window_seconds=settings.window_seconds, retry_attempts=20)
    for index, records in enumerate(shards):
        ShardConsumer(
            lambda e: process_batch(parse_event(e), settings, ports).response(),
            f"shardId-{index}",
            esm,
            chaos,
        ).consume(records)


def delivered(queue_url: str) -> list[dict[str, Any]]:
    sqs = boto3.client("sqs")
    found = []
    while messages := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
        for message in messages:
            envelope = json.loads(message["Body"])
            found.append(
                {
                    "subject": envelope["Subject"],
                    "attributes": envelope.get("MessageAttributes", {}),
                    **json.loads(envelope["Message"]),
                }
            )
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return found


def statuses(alerts: list[dict[str, Any]]) -> Counter[tuple[str, str, str]]:
    return Counter((a["key"], a["reason"], a["status"]) for a in alerts)


def test_a_burst_fires_once_and_resolves_once_under_any_delivery_schedule(stats_table_name: str, topic: dict) -> None:
    # Given a key that bursts to 900 WCU/s 25 s into a window, then goes quiet
    records = traffic([("event#42", 900, 25, 20), ("quiet", 5, 0, 150)])
    for seed in (None, 1, 2):
        settings = Settings(stats_table_name=f"{stats_table_name}", alert_topic_arn=topic["arn"], share_min_wcu=10**9)
        boto3.resource("dynamodb").Table(stats_table_name).delete_item(
            Key={"pk": "INC#tickets", "sk": incident_key("partition_limit", "event#42")}
        )
        # When it is consumed cleanly, then with duplicates, lost responses and random batch sizes
        consume(settings, [records], RandomChaos(random.Random(seed)) if seed else None)
        alerts = delivered(topic["queue"])
        # Then exactly one firing and one resolved message arrive, caught in the burst's own window
        assert statuses(alerts) == Counter(
            {("event#42", "partition_limit", "firing"): 1, ("event#42", "partition_limit", "resolved"): 1}
        ), seed
        firing = next(a for a in alerts if a["status"] == "firing")
        assert firing["window_start"] == "2026-12-01T00:00:00Z"
        assert firing["wcu_per_second"] >= 800
        assert firing["suggested_shards"] == 2


def test_the_sharding_advice_keeps_each_suffix_under_the_chosen_threshold(stats_table_name: str, topic: dict) -> None:
    # Given an alert threshold of 50% and a key that bursts to 700 WCU/s
    settings = Settings(
        stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], alert_threshold=0.5, share_min_wcu=10**9
    )
    consume(settings, [traffic([("event#42", 700, 25, 20), ("quiet", 5, 0, 150)])])
    firing = next(a for a in delivered(topic["queue"]) if a["status"] == "firing")
    # Then the advice asks for enough suffixes to keep each under 500 WCU/s (under 80%, one would do)
    assert firing["suggested_shards"] == 2


def test_reminders_are_spaced_and_resolution_is_sent_once(stats_table_name: str, topic: dict) -> None:
    # Given a key hot for 35 minutes (the partition limit is scaled down to 10 WCU/s to keep the test small)
    settings = Settings(
        stats_table_name=stats_table_name,
        alert_topic_arn=topic["arn"],
        partition_wcu_limit=10,
        share_min_wcu=10**9,
        alert_reminder_seconds=900,
    )
    records = traffic([("celebrity", 9, 0, 35 * 60), ("other", 1, 0, 40 * 60)])
    # When the stream is consumed
    consume(settings, [records])
    alerts = [a for a in delivered(topic["queue"]) if a["key"] == "celebrity"]
    # Then: one firing, a reminder every 15 minutes while hot, one resolved after it cooled down
    assert [a["status"] for a in alerts] == ["firing", "reminder", "reminder", "resolved"]
    starts = [a["window_start"] for a in alerts]
    assert starts[0] == "2026-12-01T00:00:00Z"
    assert starts[1] == "2026-12-01T00:15:00Z" and starts[2] == "2026-12-01T00:30:00Z"
    assert starts[3] == "2026-12-01T00:35:00Z"  # the first whole window after the key stopped (00:34:59)


def test_a_key_at_half_the_threshold_raises_nothing(stats_table_name: str, topic: dict) -> None:
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], share_min_wcu=10**9)
    consume(settings, [traffic([("steady", 400, 0, 120), ("other", 10, 0, 120)])])
    assert delivered(topic["queue"]) == []


def test_share_alerts_need_a_busy_enough_table(stats_table_name: str, topic: dict) -> None:
    # Given a small table where one key takes 29% of the writes (2 of 7 WCU/s), ten others 7% each
    others = [(f"k{i}", 0.5, 0, 60) for i in range(10)]
    records = traffic([("popular", 2, 0, 60), *others], table="profiles")
    quiet = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"])
    # When the table's window total (420 WCU) is under SHARE_MIN_WCU (default 6000): nothing
    consume(quiet, [records])
    assert delivered(topic["queue"]) == []
    # And with SHARE_MIN_WCU lowered to 100: a share alert names the key
    busy = Settings(stats_table_name=stats_table_name + "", alert_topic_arn=topic["arn"], share_min_wcu=100)
    later = [(key, rate, start + 120, duration) for key, rate, start, duration in [("popular", 2, 0, 60), *others]]
    consume(busy, [traffic(later, table="profiles")])
    alerts = delivered(topic["queue"])
    assert statuses(alerts) == Counter({("popular", "share", "firing"): 1})
    assert alerts[0]["share"] >= 0.1


def test_shares_are_computed_across_shards(stats_table_name: str, topic: dict) -> None:
    # Given two shards: the key holds 60% of shard 0 but only 12% of the table
    settings = Settings(
        stats_table_name=stats_table_name,
        alert_topic_arn=topic["arn"],
        share_min_wcu=100,
        share_threshold=0.2,
    )
    shard0 = traffic([("k", 3, 0, 60), ("x", 2, 0, 60)], shard=0, table="t")
    shard1 = traffic([("y", 20, 0, 60)], shard=1, table="t")
    # When shard 1 is consumed first, then shard 0
    consume(settings, [shard1, shard0])
    # Then "k" raises nothing (12% < 20% of the table), while "y" (80% of the table) does
    assert {a["key"] for a in delivered(topic["queue"])} == {"y"}


def cut(records: list[dict[str, Any]], at_second: int) -> list[tuple[str, list[dict[str, Any]]]]:
    """A shard that ends ``at_second`` into the run, and its child shard carrying the rest."""
    split = next(
        (i for i, r in enumerate(records) if r["dynamodb"]["ApproximateCreationDateTime"] >= T0 + at_second),
        len(records),
    )
    return [("shardId-parent", records[:split]), ("shardId-child", records[split:])]


def consume_shards(settings: Settings, lineage: list[tuple[str, list[dict[str, Any]]]], chaos: Chaos | None) -> None:
    ports = build_ports(settings, AwsClients())
    esm = EventSourceSettings(batch_size=500, tumbling_window_seconds=settings.window_seconds, retry_attempts=20)
    consume_lineage(lambda e: process_batch(parse_event(e), settings, ports).response(), lineage, esm, chaos)


@pytest.mark.parametrize("seed", [None, 3])
@pytest.mark.parametrize(
    ("rollover_at", "key_returns", "resolved_in"),
    [
        # The parent, seen in window 00:00, wrote no later window: it may be a sibling up to SIBLING_WINDOWS
        # (3) windows behind, so the first window judged finished is 00:04 (docs/decisions.md §50).
        (35, False, "00:04:00"),  # mid-burst: the child sees the key hot on the merged figures
        (46, True, "00:04:00"),  # after the burst; the key writes (quietly) to the child
        (46, False, "00:04:00"),  # after the burst, and the key never writes again
    ],
)
def test_an_incident_survives_a_shard_rollover(
    stats_table_name: str, topic: dict, rollover_at: int, key_returns: bool, resolved_in: str, seed: int | None
) -> None:
    # Given a burst of event#42 from 25 s to 45 s and background traffic for six windows; the stream
    # shard ends at `rollover_at` and a child shard carries on
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], share_min_wcu=10**9)
    later = [("event#42", 1, 70, 1)] if key_returns else []
    records = traffic([("event#42", 900, 25, 20), ("quiet", 2, 0, 400), *later])
    # When the parent and then the child shard are consumed (cleanly, or with faults of delivery)
    consume_shards(settings, cut(records, rollover_at), RandomChaos(random.Random(seed)) if seed else None)
    # Then one firing and one resolved message arrive for the incident, whichever shard carried it,
    # resolved on the first window every shard seen near it has finished
    alerts = delivered(topic["queue"])
    assert statuses(alerts) == Counter(
        {("event#42", "partition_limit", "firing"): 1, ("event#42", "partition_limit", "resolved"): 1}
    )
    resolved = next(a for a in alerts if a["status"] == "resolved")
    assert resolved["window_start"] == f"2026-12-01T{resolved_in}Z"


def test_a_share_counts_the_keys_writes_before_a_rollover(stats_table_name: str, topic: dict) -> None:
    # Given a shard that ends 30 s into the window with "k" at 30% of its writes (900 of 3,000),
    # and its child where "k" takes 500 of 600: "k" holds 1,400 of 3,600 (39%) of the window
    settings = Settings(
        stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], share_min_wcu=100, share_threshold=0.35
    )
    parent = traffic([("k", 30, 0, 30), ("x", 70, 0, 30)], table="t")
    child = traffic([("k", 500 / 30, 30, 30), ("y", 100 / 30, 30, 30)], shard=1, table="t")
    # When the parent, then the child are consumed
    consume_shards(settings, [("shardId-parent", parent), ("shardId-child", child)], None)
    # Then "k" is alerted with its whole window share (the child's part alone is 14% of the table)
    alerts = [a for a in delivered(topic["queue"]) if a["key"] == "k"]
    assert [a["status"] for a in alerts][:1] == ["firing"]
    assert alerts[0]["share"] >= 0.35


def test_message_forms(stats_table_name: str, topic: dict) -> None:
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], share_min_wcu=10**9)
    consume(settings, [traffic([("event#" + "9" * 200, 900, 0, 15), ("quiet", 1, 0, 130)])])
    alerts = delivered(topic["queue"])
    firing = next(a for a in alerts if a["status"] == "firing")
    # JSON form: exactly the documented fields
    assert set(firing) - {"subject", "attributes"} == DOCUMENT_FIELDS
    assert len(firing["subject"]) < 100 and firing["subject"].startswith("[hot key] tickets: event#999")
    assert firing["attributes"]["status"]["Value"] == "firing"
    assert firing["attributes"]["reason"]["Value"] == "partition_limit"
    assert firing["attributes"]["table"]["Value"] == "tickets"
    assert firing["percent_of_limit"] == pytest.approx(100 * firing["wcu_per_second"] / 1000, abs=0.1)


def test_email_and_chatbot_forms_are_well_formed() -> None:
    from hotkeys.detector.alerts.messages import chatbot_payload, email_text, sns_publish_arguments

    alert = ORDERS_ALERT
    arguments = sns_publish_arguments("arn:aws:sns:us-east-1:123456789012:t", alert)
    structure = json.loads(arguments["Message"])
    assert arguments["MessageStructure"] == "json"
    assert arguments["Subject"] == "[hot key] orders: event#123 at 930 WCU/s (93% of partition limit)"
    assert set(structure) >= {"default", "sqs", "lambda", "email", "https"}
    assert json.loads(structure["default"]) == json.loads(structure["sqs"]) == json.loads(structure["lambda"])
    assert json.loads(structure["default"])["suggested_shards"] == 2
    email = email_text(alert)
    assert "930.0 WCU/s" in email and "93%" in email and "suffix" in email and "estimate" in email
    assert_chatbot_schema(json.loads(structure["https"]))
    assert_chatbot_schema(chatbot_payload(alert))


def assert_chatbot_schema(payload: dict[str, Any]) -> None:
    """AWS Chatbot custom notification schema (version 1.0): required fields and their types."""
    assert payload["version"] == "1.0"
    assert payload["source"] == "custom"
    content = payload["content"]
    assert isinstance(content["description"], str) and content["description"]
    assert content.get("textType", "client-markdown") == "client-markdown"
    assert isinstance(content.get("title", ""), str) and len(content.get("title", "")) <= 250
    assert all(isinstance(step, str) for step in content.get("nextSteps", []))
    assert all(isinstance(word, str) for word in content.get("keywords", []))
    metadata = payload.get("metadata", {})
    assert isinstance(metadata.get("threadId", ""), str)
    assert all(isinstance(v, str) for v in metadata.get("additionalContext", {}).values())
    allowed = {"version", "source", "id", "content", "metadata"}
    assert set(payload) <= allowed


def test_a_failed_publish_fails_the_batch_and_the_retry_publishes_once(
    stats_table_name: str, topic: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given SNS refuses the first two publishes
    from hotkeys.detector.adapters.publisher import SnsPublisher

    real_publish = SnsPublisher.publish
    failures = {"left": 2}

    def flaky(self: SnsPublisher, alert: Any) -> str:
        if failures["left"]:
            failures["left"] -= 1
            raise RuntimeError("SNS is unavailable")
        return real_publish(self, alert)

    monkeypatch.setattr(SnsPublisher, "publish", flaky)
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], share_min_wcu=10**9)
    records = traffic([("event#42", 900, 0, 15), ("quiet", 1, 0, 70)])
    # When consumed (the failing invocations are retried by the mapping)
    consume(settings, [records])
    # Then one firing arrives, and the counts equal the records exactly (nothing double-counted)
    assert statuses(delivered(topic["queue"]))[("event#42", "partition_limit", "firing")] == 1
    store = build_ports(settings, AwsClients()).stats
    windows = windows_in_range(store, since=0, last=None, until=T0 + 10**5, table=None)  # type: ignore[arg-type]
    rows = {r.key: r.writes for r in top_rows(window_figures(store, windows), 10)}  # type: ignore[arg-type]
    assert rows["event#42"] == 900 * 15


def test_a_burst_of_a_key_that_wrote_steadily_before_it_fires(stats_table_name: str, topic: dict) -> None:
    # Given a key writing 50 WCU/s from the window's start, then 1,500 WCU/s for 25 s from second 30
    # (over its active span it averages 660 WCU/s: below the 800 WCU/s alert rate)
    records = traffic([("event#42", 50, 0, 60), ("event#42", 1450, 30, 25), ("quiet", 5, 0, 150)])
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], share_min_wcu=10**9)
    # When it is consumed
    consume(settings, [records])
    alerts = delivered(topic["queue"])
    # Then the burst fires (its 10-second buckets reach the alert rate) and later resolves
    assert statuses(alerts) == Counter(
        {("event#42", "partition_limit", "firing"): 1, ("event#42", "partition_limit", "resolved"): 1}
    )
    firing = next(a for a in alerts if a["status"] == "firing")
    assert firing["wcu_per_second"] >= 800


def test_an_incident_open_across_the_deploy_that_renamed_incidents_closes_under_its_own_name(
    stats_table_name: str, topic: dict
) -> None:
    # Given an incident firing for event#42 under the sort key of the version before (the key itself),
    # opened a window before the deploy by this shard
    table = boto3.resource("dynamodb").Table(stats_table_name)
    old_name = "partition_limit#event#42"
    table.put_item(
        Item={
            "pk": "INC#tickets",
            "sk": old_name,
            "status": "firing",
            "published": True,
            "table_name": "tickets",
            "key": "event#42",
            "reason": "partition_limit",
            "shard_id": "shardId-0",
            "fired_window": T0 - 60,
            "last_hot_window": T0 - 60,
            "notified_at": T0 - 30,
            "peak": 900,
            "expires_at": T0 + 86_400,
        }
    )
    # When the new version sees the key still hot for one window, then cool
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], share_min_wcu=10**9)
    consume(settings, [traffic([("event#42", 900, 25, 20), ("quiet", 5, 0, 150)])])
    # Then the incident fires once more under its new name (the cost of the rename, once per open
    # incident), and each of the two incidents resolves once, each marked under its own name
    assert statuses(delivered(topic["queue"])) == Counter(
        {("event#42", "partition_limit", "firing"): 1, ("event#42", "partition_limit", "resolved"): 2}
    )
    for name in (old_name, incident_key("partition_limit", "event#42")):
        item = table.get_item(Key={"pk": "INC#tickets", "sk": name})["Item"]
        assert (item["status"], item["resolve_published"]) == ("resolved", True), name


def test_shards_that_find_an_incident_already_marked_this_window_pay_one_request(
    stats_table_name: str, topic: dict
) -> None:
    """An index partition spread over every shard is found hot by each of them: after the first, each pays
    the failed claim only (DynamoDB returns the incident with the failed condition), not a read and
    three updates: at 100 shards this is what keeps incident requests within the budget."""
    import dataclasses

    from hotkeys.detector.adapters.incident_store import DynamoIncidentStore
    from hotkeys.detector.adapters.publisher import SnsPublisher
    from hotkeys.detector.adapters.stats_store import DynamoStatsStore
    from hotkeys.detector.alerts.desk import AlertDesk
    from hotkeys.detector.alerts.rules import PARTITION_LIMIT, HotKey

    table = boto3.resource("dynamodb").Table(stats_table_name)
    store = DynamoIncidentStore(table)
    calls: Counter[str] = Counter()
    table.meta.client.meta.events.register("before-call.dynamodb.*", lambda model, **_: calls.update([model.name]))
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"])
    desk = AlertDesk(settings, store, SnsPublisher(boto3.client("sns"), topic["arn"]), DynamoStatsStore(table))
    hot = HotKey("tickets", "PENDING", PARTITION_LIMIT, T0, 60, 10, 54_000, 900.0, 0.0, T0 + 30, index="by-status")
    # Given the first shard that finds the partition hot: it claims the incident and publishes
    assert desk._on_hot(hot, "shardId-1", 100_000) == 1
    # When seven more shards find it hot in the same window, at lower rates
    for number in range(2, 9):
        assert desk._on_hot(dataclasses.replace(hot, wcu_per_second=850.0), f"shardId-{number}", 100_000) == 0
    # Then each of them made one request (the claim, answered with the incident), and one firing went out
    assert calls == Counter({"PutItem": 8, "UpdateItem": 1})  # the claims, and the first's published mark
    assert statuses(delivered(topic["queue"])) == Counter({("PENDING", "partition_limit", "firing"): 1})
    # and a shard that finds it hotter than its recorded peak still raises the peak
    desk._on_hot(dataclasses.replace(hot, wcu_per_second=990.0), "shardId-9", 100_000)
    assert float(store.get("tickets", hot.incident_key)["peak"]) == 990.0  # type: ignore[index]
