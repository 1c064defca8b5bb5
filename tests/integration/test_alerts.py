"""Alerts through SNS as subscribers receive them: one firing per incident, an update when it gets worse,
spaced reminders, one resolved. The deployment is emulated whole (``hotkeys.emulator.emulation``): every shard's
consumer and the judge on its schedule, side by side in emulated time."""

from __future__ import annotations

import dataclasses
import json
import random
from collections import Counter
from typing import Any

import boto3
import pytest

from hotkeys.cli.top import top_rows, window_figures, windows_in_range
from hotkeys.deployment import EVENT_SOURCE
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.alerts.rules import incident_key
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.pipeline import parse_event, process_batch
from hotkeys.detector.handlers.wiring import build_ports
from hotkeys.emulator.emulation import Containers, Deployment, Emulated, emulate
from hotkeys.emulator.esm import Deliveries
from hotkeys.emulator.events import ItemChange, sequence_number, stream_record
from hotkeys.emulator.lanes import EventSourceMapping, Turns
from hotkeys.emulator.local import create_stats_table
from tests.esm_faults import RandomFaults
from tests.support import ORDERS_ALERT

T0 = 1_796_083_200
DOCUMENT_FIELDS = {
    "at_most_wcu_per_second",
    "possibly_hot",
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
    "partition_wcu_limit",
    "percent_of_limit",
    "share",
    "reason",
    "status",
    "suggested_shards",
    "peak_wcu_per_second",
    "peak_share",
    "started",
    "lasted_seconds",
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
                ItemChange(event_name="MODIFY", keys={"pk": key}, new_image=image, old_image=image),
                table=table,
                sequence=sequence_number(shard, position),
                event_time=int(when),
            )
        )
    return records


def consume(
    settings: Settings,
    shards: list[list[dict[str, Any]]] | list[list[tuple[str, list[dict[str, Any]]]]],
    chaos: Deliveries | None = None,
    batch_size: int = 500,
    turns: Turns | None = None,
) -> Emulated:
    """The deployment over these shards (each a list of records, or a lineage of (shard, records)): each
    shard's consumer in its own container, side by side, and the judge on its schedule."""
    mapping = dataclasses.replace(
        EVENT_SOURCE, batch_size=batch_size, tumbling_window_seconds=settings.window_seconds, retry_attempts=20
    )
    lineages = [
        shard if shard and isinstance(shard[0], tuple) else [(f"shardId-{index}", shard)]
        for index, shard in enumerate(shards)
    ]
    return emulate(
        Deployment(settings, AwsClients()),
        lineages,  # type: ignore[arg-type]
        mapping=EventSourceMapping(mapping, deliveries=[chaos or Deliveries() for _ in lineages]),
        turns=turns,
    )


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
        consume(settings, [records], RandomFaults(random.Random(seed)) if seed else None)
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
    # And with SHARE_MIN_WCU lowered to 100 (another deployment, with its own stats table): a share alert
    # names the key
    create_stats_table(boto3.client("dynamodb"), f"{stats_table_name}-busy")
    busy = Settings(stats_table_name=f"{stats_table_name}-busy", alert_topic_arn=topic["arn"], share_min_wcu=100)
    consume(busy, [records])
    alerts = delivered(topic["queue"])
    assert statuses(alerts) == Counter({("popular", "share", "firing"): 1, ("popular", "share", "resolved"): 1})
    assert next(a for a in alerts if a["status"] == "firing")["share"] >= 0.1


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
    # When both are consumed, side by side
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


@pytest.mark.parametrize("seed", [None, 3])
@pytest.mark.parametrize(
    ("rollover_at", "key_returns"),
    [
        (35, False),  # mid-burst: the merged figures see the key hot over parent and child
        (46, True),  # after the burst; the key writes (quietly) to the child
        (46, False),  # after the burst, and the key never writes again
    ],
)
def test_an_incident_survives_a_shard_rollover(
    stats_table_name: str, topic: dict, rollover_at: int, key_returns: bool, seed: int | None
) -> None:
    # Given a burst of event#42 from 25 s to 45 s and background traffic for six windows; the stream
    # shard ends at `rollover_at` and a child shard carries on
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], share_min_wcu=10**9)
    later = [("event#42", 1, 70, 1)] if key_returns else []
    records = traffic([("event#42", 900, 25, 20), ("quiet", 2, 0, 400), *later])
    # When the parent and then the child shard are consumed (cleanly, or with faults of delivery)
    consume(settings, [cut(records, rollover_at)], RandomFaults(random.Random(seed)) if seed else None)
    # Then one firing and one resolved message arrive for the incident, whichever shard carried it,
    # resolved on the first window after the burst's: the parent's early final head says its shard ended
    alerts = delivered(topic["queue"])
    assert statuses(alerts) == Counter(
        {("event#42", "partition_limit", "firing"): 1, ("event#42", "partition_limit", "resolved"): 1}
    )
    resolved = next(a for a in alerts if a["status"] == "resolved")
    assert resolved["window_start"] == "2026-12-01T00:01:00Z"


def test_a_share_counts_the_keys_writes_before_a_rollover(stats_table_name: str, topic: dict) -> None:
    # Given a shard that ends 30 s into the window with "k" at 30% of its writes (900 of 3,000),
    # and its child where "k" takes 500 of 600: "k" holds 1,400 of 3,600 (39%) of the window
    settings = Settings(
        stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], share_min_wcu=100, share_threshold=0.35
    )
    parent = traffic([("k", 30, 0, 30), ("x", 70, 0, 30)], table="t")
    child = traffic([("k", 500 / 30, 30, 30), ("y", 100 / 30, 30, 30)], shard=1, table="t")
    # When the parent, then the child are consumed
    consume(settings, [[("shardId-parent", parent), ("shardId-child", child)]])
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


def test_a_confirmation_the_store_refuses_is_written_again_before_another_container_could_resend(
    stats_table_name: str, topic: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the stats table errs on the first two writes of the firing's confirmation, and every failed
    # invocation is retried in a fresh container (which does not remember what it published)
    from hotkeys.detector.adapters.incident_store import DynamoIncidentStore

    real_update = DynamoIncidentStore.update
    failures = {"left": 2}

    def flaky(self: DynamoIncidentStore, incident: Any, version: int, now: float) -> Any:
        if incident.pending is None and failures["left"]:
            failures["left"] -= 1
            raise RuntimeError("DynamoDB is unavailable")
        return real_update(self, incident, version, now)

    monkeypatch.setattr(DynamoIncidentStore, "update", flaky)
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], share_min_wcu=10**9)
    turns = Turns()

    def fresh_container(_ports: Any) -> Any:
        def invoke(event: dict[str, Any]) -> Any:
            ports = build_ports(settings, AwsClients(), clock=lambda: turns.now, wall_clock=lambda: turns.now)
            return process_batch(parse_event(event), settings, ports).response()

        return invoke

    # When a key fires
    records = traffic([("event#42", 900, 0, 15), ("quiet", 1, 0, 70)])
    emulate(
        Deployment(settings, AwsClients()),
        [[("shardId-0", records)]],
        containers=Containers(handler=fresh_container),
        turns=turns,
    )
    # Then the confirmation was written on its third try, and one firing arrived
    assert failures["left"] == 0
    assert statuses(delivered(topic["queue"]))[("event#42", "partition_limit", "firing")] == 1


def test_a_burst_of_a_key_that_wrote_steadily_before_it_fires(stats_table_name: str, topic: dict) -> None:
    # Given a key writing 50 WCU/s from the window's start, then 1,500 WCU/s for 25 s from second 30
    # (over its active span it averages 660 WCU/s: below the 800 WCU/s alert rate)
    records = traffic([("event#42", 50, 0, 60), ("event#42", 1450, 30, 25), ("quiet", 5, 0, 150)])
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], share_min_wcu=10**9)
    # When it is consumed
    consume(settings, [records])
    alerts = delivered(topic["queue"])
    # Then the burst fires (its 10-second buckets reach the alert rate), is updated once its peak (1,500
    # WCU/s) outgrows what the firing quoted, and later resolves
    assert statuses(alerts) == Counter(
        {
            ("event#42", "partition_limit", "firing"): 1,
            ("event#42", "partition_limit", "escalated"): 1,
            ("event#42", "partition_limit", "resolved"): 1,
        }
    )
    firing = next(a for a in alerts if a["status"] == "firing")
    escalated = next(a for a in alerts if a["status"] == "escalated")
    assert 800 <= firing["wcu_per_second"] < 1200
    assert escalated["peak_wcu_per_second"] == 1500.0 and escalated["suggested_shards"] == 2


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
        assert (item["status"], "pending" in item) == ("resolved", False), name


def test_shards_that_find_a_partition_hot_pay_one_request_per_incident_not_per_window(
    stats_table_name: str, topic: dict
) -> None:
    """An index partition spread over every shard is found hot by each shard's first alarm: each pays one
    conditional write (DynamoDB returns the incident with the failed condition) the first time, and none
    in the windows after while it stays hot (its container remembers it firing): at 100 shards this is
    what keeps incident requests within the budget."""
    from hotkeys.detector.adapters.incident_store import DynamoIncidentStore
    from hotkeys.detector.adapters.publisher import SnsPublisher
    from hotkeys.detector.alerts.first_alarm import FirstAlarm
    from hotkeys.detector.alerts.notifier import Notifier
    from hotkeys.detector.consumer.state import ShardState
    from hotkeys.detector.domain.records import Change, ChangeKind
    from hotkeys.detector.domain.summary import Counting

    table = boto3.resource("dynamodb").Table(stats_table_name)
    calls: Counter[str] = Counter()
    table.meta.client.meta.events.register("before-call.dynamodb.*", lambda model, **_: calls.update([model.name]))
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"])
    notifier = Notifier(
        settings, DynamoIncidentStore(table), SnsPublisher(boto3.client("sns"), topic["arn"]), "consumer"
    )
    alarms = [FirstAlarm(settings, notifier, lambda: float(T0)) for _ in range(8)]  # a container per shard

    def window(start: int, shard: int) -> int:
        state = ShardState()
        for second in range(10):  # 900 WCU/s of index writes on this shard, in 10 one-second writes
            change = Change("tickets", f"o{shard}-{second}", start + second, 1 + second, 1, ChangeKind.WRITE)
            change.index_writes = (("by-status", "PENDING", 900),)
            state.apply(change, 60, Counting.of(settings), ("by-status",))
        return alarms[shard].review(f"shardId-{shard}", state, list(state.segments.values()))

    # Given eight shards that each find the partition hot in the first window
    assert sum(window(T0, shard) for shard in range(8)) == 1
    first = dict(calls)
    # When they find it hot in the next two windows
    for start in (T0 + 60, T0 + 120):
        for shard in range(8):
            assert window(start, shard) == 0
    # Then the first window cost one claim per shard (and the firing's confirmation), the next ones nothing
    assert first == {"PutItem": 9}  # 8 claims, and the first one's confirmation (a version-checked put)
    assert dict(calls) == first
    assert statuses(delivered(topic["queue"])) == Counter({("PENDING", "partition_limit", "firing"): 1})
