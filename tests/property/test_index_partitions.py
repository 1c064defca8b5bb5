"""Property: an index partition spread over all of a table's stream shards fires iff the oracle says
it must (``tests.reference_partitions``: its heaviest aligned 10 s bucket summed over all shards at
least 10% over the alert rate), never when no stretch of 10 s reaches half the limit, never twice."""

from __future__ import annotations

import random
import uuid
from collections import Counter

import boto3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from hotkeys.detector.config import Settings
from hotkeys.emulator.local import create_stats_table
from tests import reference_partitions as oracle
from tests.esm_faults import RandomFaults
from tests.integration.test_alerts import T0, delivered
from tests.integration.test_table_wide import (
    Lambda,
    background,
    describe,
    limits_of,
    out_of_step,
    pending_orders,
    shard_records,
)
from tests.support import create_source_table

LIMIT = 10


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shards=st.integers(min_value=1, max_value=8),
    fraction=st.floats(min_value=0.3, max_value=2.5),
    batch_size=st.sampled_from([10, 50, 100]),
    seed=st.one_of(st.none(), st.integers(min_value=0, max_value=2**32)),
    lead=st.integers(min_value=0, max_value=2),
)
def test_an_index_partition_fires_iff_its_merged_rate_must(
    shards: int, fraction: float, batch_size: int, seed: int | None, lead: int
) -> None:
    with mock_aws():
        stats = f"stats-{uuid.uuid4().hex[:8]}"
        create_stats_table(boto3.client("dynamodb"), stats)
        sns, sqs = boto3.client("sns"), boto3.client("sqs")
        topic = sns.create_topic(Name="alerts")["TopicArn"]
        queue = sqs.create_queue(QueueName="copies")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
        create_source_table("tickets", None, status_index=True)
        # Given PENDING at `fraction` of the limit in one aligned 10 s, 40% of that the rest of window 0,
        # dealt evenly over the shards; quiet windows after
        rate = fraction * LIMIT
        dealt = pending_orders([(0.4 * rate, 0, 20), (rate, 20, 10), (0.4 * rate, 30, 30)], shards)
        records = {f"shardId-{i}": shard_records(i, dealt[i], background(i, 6, rate=0.2)) for i in range(shards)}
        setup = Settings(stats_table_name=stats, alert_topic_arn=topic, partition_wcu_limit=LIMIT, share_min_wcu=10**9)
        limits = limits_of(setup)
        found = oracle.partitions(records.values(), describe("tickets"))
        verdict = oracle.verdict(found[("tickets", "by-status", "PENDING", T0)], limits)
        # When the shards are consumed out of step (up to `lead` windows), with or without faults of delivery
        rng = random.Random(seed)
        Lambda(setup, RandomFaults(rng) if seed is not None else None, batch_size).run(
            records, out_of_step(records, rng, lead)
        )
        arrived = delivered(queue)
        alerts = Counter((a["index"], a["key"], a["status"]) for a in arrived if a["status"] != "escalated")
        escalations = [a["peak_wcu_per_second"] for a in arrived if a["status"] == "escalated"]
    # Then: never twice; a firing and a resolution when it must; nothing when it must not; an update only
    # for a peak its writes reached (the oracle's heaviest aligned bucket), each higher than the last
    assert all(count == 1 for count in alerts.values()), alerts
    assert set(alerts) <= {("by-status", "PENDING", "firing"), ("by-status", "PENDING", "resolved")}, alerts
    heaviest = found[("tickets", "by-status", "PENDING", T0)].heaviest_bucket(10) / 10
    assert escalations == sorted(escalations) and all(peak <= heaviest + 0.05 for peak in escalations)
    if verdict.must_fire:
        assert alerts == Counter({("by-status", "PENDING", "firing"): 1, ("by-status", "PENDING", "resolved"): 1})
    if verdict.must_not_fire:
        assert not alerts, (verdict, alerts)
