"""The judge's own faults, as the subscriber lives them: two runs at once, a run that dies between its claim
and its message, a judge throttled for a minute, a shard an hour behind, a consumer stuck on a poison
record. In each, every incident's messages arrive once: nothing lost, nothing doubled."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from hotkeys.deployment import EVENT_SOURCE
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.adapters.publisher import SnsPublisher
from hotkeys.detector.alerts.incidents import TAKEOVER_SECONDS
from hotkeys.detector.alerts.messages import Alert
from hotkeys.detector.config import Settings
from hotkeys.detector.handlers.wiring import build_judge
from hotkeys.emulator.emulation import Deployment, Judging, emulate
from hotkeys.emulator.lanes import EventSourceMapping, Turns
from tests.integration.test_alerts import T0, delivered, traffic

MAPPING = dataclasses.replace(EVENT_SOURCE, batch_size=500, retry_attempts=3)


def settings_of(stats_table_name: str, topic: dict[str, str]) -> Settings:
    return Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], share_min_wcu=10**9)


def split_key() -> list[list[dict[str, Any]]]:
    """A key at 450 WCU/s on each of two shards for 15 s (under the alert rate on either, over it merged:
    only the judge sees it), quiet background on both for two minutes."""
    return [traffic([("event#42", 450, 10, 15), (f"bg{shard}", 2, 0, 120)], shard=shard) for shard in range(2)]


def messages(topic: dict[str, str]) -> Counter[tuple[str, str]]:
    return Counter((a["key"], a["status"]) for a in delivered(topic["queue"]))


def lineages_of(shards: list[list[dict[str, Any]]]) -> list[list[tuple[str, list[dict[str, Any]]]]]:
    return [[(f"shardId-{number:05d}", records)] for number, records in enumerate(shards)]


def test_two_judges_looking_at_once_send_each_message_once(stats_table_name: str, topic: dict[str, str]) -> None:
    # Given two judge runs at once (one overran its minute), each its own container, at every look
    settings = settings_of(stats_table_name, topic)
    emulate(
        Deployment(settings, AwsClients()),
        lineages_of(split_key()),
        mapping=EventSourceMapping(MAPPING),
        judge=Judging(clients=[AwsClients(), AwsClients()]),
    )
    # Then the incident fired once and resolved once
    assert messages(topic) == Counter({("event#42", "firing"): 1, ("event#42", "resolved"): 1})


class Died(BaseException):
    """The run's Lambda timed out (nothing after this line of its code ran)."""


class DiesOnPublish:
    def publish(self, alert: Alert) -> str:
        raise Died


def test_a_run_that_dies_between_its_claim_and_its_message_is_taken_over_once(
    stats_table_name: str, topic: dict[str, str]
) -> None:
    # Given the shards' heads stored, and a judge run that dies once it claimed the firing, before sending it
    settings = settings_of(stats_table_name, topic)
    emulate(
        Deployment(settings, AwsClients()), lineages_of(split_key()), mapping=EventSourceMapping(MAPPING), judge=None
    )
    now = [float(T0 + 42)]
    dying = build_judge(settings, AwsClients(), lambda: now[0], lambda: 0.0, ("tickets",), DiesOnPublish())
    with pytest.raises(Died):
        dying.look()
    claimed_at = now[0]
    # When the next runs (new containers) look every 12 s
    sent: list[tuple[float, str]] = []

    class Sns(SnsPublisher):
        def publish(self, alert: Alert) -> str:
            sent.append((now[0], alert.status))
            return super().publish(alert)

    nxt = build_judge(
        settings, AwsClients(), lambda: now[0], lambda: 0.0, ("tickets",), Sns(boto3.client("sns"), topic["arn"])
    )
    while now[0] < T0 + 900:
        now[0] += settings.flush_seconds
        nxt.look()
    # Then the firing went out once, by the next run, once the claim was TAKEOVER_SECONDS old; then resolved
    assert messages(topic) == Counter({("event#42", "firing"): 1, ("event#42", "resolved"): 1})
    firing_at = next(at for at, status in sent if status == "firing")
    assert claimed_at + TAKEOVER_SECONDS <= firing_at < claimed_at + TAKEOVER_SECONDS + settings.flush_seconds


def test_a_judge_throttled_for_a_minute_sends_each_message_once_when_it_recovers(
    stats_table_name: str, topic: dict[str, str]
) -> None:
    # Given a judge whose stats-table calls are all throttled from second 20 to second 80 of the emulation
    settings = settings_of(stats_table_name, topic)
    turns = Turns()
    judge = AwsClients()
    refused = Counter[str]()

    def throttle(model: Any, **_: Any) -> None:
        if T0 + 20 <= turns.now < T0 + 80:
            refused[model.name] += 1
            raise ClientError(
                {"Error": {"Code": "ThrottlingException", "Message": "injected"}, "ResponseMetadata": {}}, model.name
            )

    judge.resource("dynamodb").meta.client.meta.events.register("before-call.dynamodb.*", throttle)
    emulate(
        Deployment(settings, AwsClients()),
        lineages_of(split_key()),
        mapping=EventSourceMapping(MAPPING),
        judge=Judging(clients=[judge]),
        turns=turns,
    )
    # Then its looks in that minute failed (and were retried by the later ones): one firing, one resolved
    assert refused["Query"] >= 5
    assert messages(topic) == Counter({("event#42", "firing"): 1, ("event#42", "resolved"): 1})


def test_a_shard_an_hour_behind_delays_resolutions_but_loses_and_doubles_nothing(
    stats_table_name: str, topic: dict[str, str]
) -> None:
    # Given a key hot on shard 0, another on shard 1, which runs an hour behind its records
    settings = settings_of(stats_table_name, topic)
    shards = [
        traffic([("early", 900, 10, 15), ("bg0", 2, 0, 180)], shard=0),
        traffic([("late", 900, 10, 15), ("bg1", 2, 0, 180)], shard=1),
    ]
    emulate(
        Deployment(settings, AwsClients()),
        lineages_of(shards),
        mapping=EventSourceMapping(MAPPING, delays=[0.0, 3600.0]),
    )
    # Then each fired once and resolved once (the early one's resolution waited for the stream's lag)
    assert messages(topic) == Counter(
        {("early", "firing"): 1, ("early", "resolved"): 1, ("late", "firing"): 1, ("late", "resolved"): 1}
    )


def test_a_consumer_stuck_on_a_poison_record_holds_back_resolutions_only_until_it_moves_on(
    stats_table_name: str, topic: dict[str, str]
) -> None:
    # Given a poison record on shard 1 (its batch fails until the mapping gives it up, a minute per attempt),
    # a key hot on shard 0 and one on shard 1 after the poison record
    settings = settings_of(stats_table_name, topic)
    stuck = traffic([("after", 900, 30, 15), ("bg1", 2, 0, 180)], shard=1)
    stuck[20]["dynamodb"]["NewImage"] = {"pk": {"S": "bg1"}, "broken": {"Q": "?"}}
    shards = [traffic([("hot", 900, 10, 15), ("bg0", 2, 0, 180)], shard=0), stuck]
    emulated = emulate(
        Deployment(settings, AwsClients()), lineages_of(shards), mapping=EventSourceMapping(MAPPING, retry_seconds=60.0)
    )
    # Then the poison record went to the DLQ, and each incident fired once and resolved once
    letters = [letter for runs in emulated.runs for run in runs for letter in run.dead_letters]
    assert [letter.start_sequence for letter in letters] == [stuck[20]["dynamodb"]["SequenceNumber"]]
    assert messages(topic) == Counter(
        {("hot", "firing"): 1, ("hot", "resolved"): 1, ("after", "firing"): 1, ("after", "resolved"): 1}
    )


@pytest.mark.parametrize("phase", [0.0, 37.0, 55.0])
def test_a_table_an_hour_behind_delays_nothing_on_another_table(
    stats_table_name: str, topic: dict[str, str], phase: float
) -> None:
    # Given table alpha, read as its records come, with a key hot from second 10 to 25, and table beta,
    # whose shard is being read an hour behind its records all along, with a key hot in the hour before
    settings = settings_of(stats_table_name, topic)
    turns = Turns()
    timed = Timed(turns, topic["arn"])
    shards = [
        traffic([("alpha-hot", 900, 10, 15), ("a-bg", 2, 0, 180)], shard=0, table="alpha"),
        traffic([("beta-hot", 900, -3590, 15), ("b-bg", 2, -3600, 3780)], shard=1, table="beta"),
    ]
    emulate(
        Deployment(settings, AwsClients(), timed),
        lineages_of(shards),
        mapping=EventSourceMapping(MAPPING, delays=[0.0, 3600.0]),
        judge=Judging(phase=phase),
        turns=turns,
    )
    sent = dict(zip(((a.key, a.status) for a in timed.alerts), timed.times, strict=True))
    # Then alpha resolves within two windows of its key cooling (beta's lag is beta's own)
    assert sent[("alpha-hot", "resolved")] <= T0 + 25 + 2 * 60, sent[("alpha-hot", "resolved")] - T0
    # and beta, judged by its own lag, loses and doubles nothing: fired once, resolved once, after its
    # records came
    assert messages(topic) == Counter(
        {
            ("alpha-hot", "firing"): 1,
            ("alpha-hot", "resolved"): 1,
            ("beta-hot", "firing"): 1,
            ("beta-hot", "resolved"): 1,
        }
    )
    assert sent[("beta-hot", "resolved")] >= T0 + 25


class Timed:
    """SNS, with the emulated time each message went out."""

    def __init__(self, turns: Turns, topic_arn: str) -> None:
        self._turns = turns
        self._sns = SnsPublisher(boto3.client("sns"), topic_arn)
        self.times: list[float] = []
        self.alerts: list[Alert] = []

    def publish(self, alert: Alert) -> str:
        self.times.append(self._turns.now)
        self.alerts.append(alert)
        return self._sns.publish(alert)


def test_a_tables_own_shard_behind_holds_its_shares_until_its_records_are_in(
    stats_table_name: str, topic: dict[str, str]
) -> None:
    # Given a table on two shards: shard 0 read as its records come, with one key at 30 WCU/s in the first
    # window (all but all of shard 0's writes), and shard 1 read an hour behind all along, with 400 WCU/s
    # over 50 other keys in that window (so the key takes 7% of the table's writes: no share alert)
    settings = dataclasses.replace(settings_of(stats_table_name, topic), share_min_wcu=1000)
    busy = [(f"other#{n}", 8, 0, 60) for n in range(50)]
    shards = [
        traffic([("solo", 30, 0, 60), ("a-bg", 2, 0, 120)], shard=0),
        traffic([*busy, ("b-bg", 2, -3600, 3720)], shard=1),
    ]
    emulate(
        Deployment(settings, AwsClients()),
        lineages_of(shards),
        mapping=EventSourceMapping(MAPPING, delays=[0.0, 3600.0]),
        judge=Judging(phase=37.0),
    )
    # Then no share alert goes out: the window waited for shard 1's records (the table's own lag), and its
    # shares are of the writes on every shard
    assert messages(topic) == Counter()
