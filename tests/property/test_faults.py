"""Fault injection: AWS misbehaving under the real handler, through the event-source-mapping emulation.

Each schedule is seeded (reproducible): DynamoDB, SNS and S3 calls fail at random with
throttling or 5xx errors, before the call or after it succeeded (the container dies
after writing, before answering), while Lambda loses responses (function errors),
redelivers overlapping ranges and picks random batch sizes. Each schedule also draws
the retry quota (so some batches exhaust it and go to the DLQ, then `hotkeys redrive`
runs), the undocumented partial-failure state reading, and a stream-shard rollover
(none, mid-burst, or right after the burst so the incident's key never writes again).
After every schedule the invariants are checked against a clean run and against exact
figures the test computes itself.

CI runs FAULT_SCHEDULES (default 16: the first 16 seeds cover every retry quota, both state
readings and every rollover point, checked below) schedules; `make soak` runs thousands.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import random
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from hotkeys.cli.esm import PARTIAL_FAILURE_STATES, Chaos, Delivery, RandomChaos, consume_lineage
from hotkeys.cli.events import sequence_number, stream_record
from hotkeys.cli.local import create_stats_table
from hotkeys.cli.redrive import redrive_entry
from hotkeys.cli.replay_view import archived_objects
from hotkeys.cli.top import ALL_INDEXES, window_figures, windows_in_range
from hotkeys.deployment import EventSourceSettings
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.config import Settings
from hotkeys.detector.pipeline import parse_event, process_batch
from hotkeys.detector.wiring import build_ports
from tests import support
from tests.stream_wire import WireStream

T0 = 1_796_083_200
SCHEDULES = int(os.environ.get("FAULT_SCHEDULES", "16"))
ERRORS = [
    ("ThrottlingException", 400),
    ("ProvisionedThroughputExceededException", 400),
    ("InternalServerError", 500),
    ("ServiceUnavailable", 503),
    ("SlowDown", 503),
]


def workload() -> tuple[list[dict[str, Any]], set[str], set[str]]:
    """A burst key, background writes, application deletes, TTL deletions and two poison records.

    The table has a ``by-status`` index projecting ALL: each burst write moves event#42 from OPEN to
    SOLD (a delete on one index partition, a put on the other: both take the burst's rate);
    background writes change or keep one of two statuses."""
    rng = random.Random(42)
    # 900 WCU/s for 12 s as 300 writes/s of ~3 KB items (3 WCU each, on the table and, the index
    # projecting ALL, on each index partition): a third of the records of 1 KB writes, same figures.
    events: list[tuple[float, str, str]] = [(T0 + 25 + i / 300, "event#42", "write") for i in range(300 * 12)]
    # Background for six and a half windows: long enough to resolve an incident nobody carries.
    for i in range(1300):
        events.append((T0 + i * 0.3, f"user#{rng.randint(0, 40)}", rng.choice(["write", "write", "delete", "ttl"])))
    events.sort()
    records, poison, ttl = [], set(), set()
    for position, (when, key, kind) in enumerate(events):
        image = {"pk": key, "n": position, "expireAt": int(when) - 60}
        if key == "event#42":
            image["seat"] = "s" * 2_900  # ~2.95 KB: 3 write units
        before, after = ("OPEN", "SOLD") if key == "event#42" else (rng.choice("AB"), rng.choice("AB"))
        sequence = sequence_number(0, position)
        record = stream_record(
            table="tickets",
            event_name="MODIFY" if kind == "write" else "REMOVE",
            keys={"pk": key},
            sequence=sequence,
            event_time=int(when),
            new_image={**image, "status": after} if kind == "write" else None,
            old_image={**image, "status": before},
            ttl_delete=kind == "ttl",
        )
        if kind == "ttl":
            ttl.add(record["eventID"])
        if position in (150, 4000):
            record["dynamodb"]["NewImage"] = {"pk": {"S": key}, "broken": {"Q": "?"}}
            poison.add(sequence)
        records.append(record)
    return records, poison, ttl


class FaultInjector:
    """Raises AWS errors from inside botocore, before a call or after it took effect."""

    def __init__(self, rng: random.Random, probability: float) -> None:
        self.rng = rng
        self.probability = probability
        self.injected = Counter[str]()

    def _error(self, operation: str) -> ClientError:
        code, status = self.rng.choice(ERRORS)
        return ClientError(
            {"Error": {"Code": code, "Message": "injected"}, "ResponseMetadata": {"HTTPStatusCode": status}},
            operation,
        )

    def before(self, model: Any, **_: Any) -> None:
        if self.rng.random() < self.probability:
            self.injected[f"before {model.name}"] += 1
            raise self._error(model.name)

    def after(self, model: Any, **_: Any) -> None:
        # The call took effect but its answer never arrived: a timeout, or the container died.
        if (
            model.name in ("PutItem", "UpdateItem", "Publish", "PutObject", "DeleteItem")
            and self.rng.random() < self.probability
        ):
            self.injected[f"after {model.name}"] += 1
            raise ReadTimeoutError(endpoint_url=f"https://{model.service_model.endpoint_prefix}.amazonaws.com")

    @contextlib.contextmanager
    def attach(self, aws_clients: AwsClients) -> Iterator[None]:
        clients = [
            aws_clients.resource("dynamodb").meta.client,
            aws_clients.client("sns"),
            aws_clients.client("s3"),
            aws_clients.client("dynamodb"),
        ]
        for aws in clients:
            aws.meta.events.register("before-call.*.*", self.before)
            aws.meta.events.register("after-call.*.*", self.after)
        try:
            yield
        finally:
            for aws in clients:
                aws.meta.events.unregister("before-call.*.*", self.before)
                aws.meta.events.unregister("after-call.*.*", self.after)


def environment() -> tuple[Settings, str]:
    suffix = uuid.uuid4().hex[:8]
    stats = f"stats-{suffix}"
    create_stats_table(boto3.client("dynamodb"), stats)
    sns, sqs = boto3.client("sns"), boto3.client("sqs")
    topic = sns.create_topic(Name=f"alerts-{suffix}")["TopicArn"]
    queue = sqs.create_queue(QueueName=f"copies-{suffix}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    boto3.client("s3").create_bucket(Bucket=f"archive-{suffix}")
    create_source_table()
    return Settings(
        stats_table_name=stats,
        alert_topic_arn=topic,
        archive_bucket_name=f"archive-{suffix}",
        share_min_wcu=10**9,
        ttl_attribute="expireAt",
    ), queue


STREAM_ARN = "arn:aws:dynamodb:us-east-1:1:table/tickets/stream/x"
# Shard ids as long as the API requires (GetShardIterator refuses shorter ones).
PARENT, CHILD = "shardId-00000001796083200000-00000001", "shardId-00000001796083245000-00000002"
# The alerts every schedule must publish: the burst key, and the two index partitions it moves between.
EXPECTED_ALERTS = Counter(
    {(key, status): 1 for key in ("event#42", "OPEN", "SOLD") for status in ("firing", "resolved")}
)


def create_source_table() -> None:
    """``tickets`` with a KEYS_ONLY index on status (the function reads it with DescribeTable)."""
    if "tickets" not in boto3.client("dynamodb").list_tables()["TableNames"]:
        support.create_source_table("tickets", None, status_index=True, status_projection="ALL")


@dataclass(frozen=True)
class Schedule:
    retry_attempts: int = 25
    reading: str = "returned"
    rollover_at: int | None = None  # seconds after T0 at which the shard ends and a child carries on

    @classmethod
    def draw(cls, rng: random.Random) -> Schedule:
        return cls(
            retry_attempts=rng.choice([1, 2, 25]),
            reading=rng.choice(PARTIAL_FAILURE_STATES),
            rollover_at=rng.choice([None, 31, 38, 46]),
        )

    def lineage(self, records: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
        if self.rollover_at is None:
            return [(PARENT, records)]
        at = T0 + self.rollover_at
        split = next(i for i, r in enumerate(records) if r["dynamodb"]["ApproximateCreationDateTime"] >= at)
        return [(PARENT, records[:split]), (CHILD, records[split:])]


def run(
    records: list[dict[str, Any]], chaos: Chaos, faults: FaultInjector | None, schedule: Schedule = Schedule()
) -> dict[str, Any]:
    settings, queue = environment()
    aws = AwsClients()  # the container's clients: faults are injected into exactly these
    ports = build_ports(settings, aws)
    esm = EventSourceSettings(batch_size=500, tumbling_window_seconds=60, retry_attempts=schedule.retry_attempts)
    lineage = schedule.lineage(records)
    with faults.attach(aws) if faults is not None else contextlib.nullcontext():
        runs = consume_lineage(
            lambda e: process_batch(parse_event(e), settings, ports).response(),
            lineage,
            esm,
            chaos,
            stream_arn=STREAM_ARN,
            delivery=Delivery(partial_failure_state=schedule.reading),  # type: ignore[arg-type]
        )
    letters = [letter for shard_run in runs for letter in shard_run.dead_letters]
    # The operator redrives the DLQ once AWS is healthy again (a fresh container); it first moves the
    # archive objects spooled while S3 refused them into S3 (as `hotkeys redrive` does).
    redrive_ports = build_ports(settings, AwsClients())
    assert redrive_ports.archiver is not None
    while redrive_ports.archiver.drain(force=True) != (0, True):
        pass
    # It reads each range with GetRecords: the records come back as boto3 parses them.
    streams = WireStream(STREAM_ARN, dict(lineage), parents={CHILD: PARENT} if len(lineage) > 1 else {}).client()
    redriven = already = malformed = 0
    for letter in letters:
        info = letter.to_message()["DDBStreamBatchInfo"]
        result = redrive_entry(info, settings, redrive_ports, streams, redrive_ports.stats, dry_run=False)
        assert result.unreadable is None and result.read == letter.batch_size, result
        redriven += result.counted
        already += result.already_counted
        malformed += len(result.malformed)
    store = redrive_ports.stats
    figures = window_figures(
        store,
        windows_in_range(
            store,
            since=0,
            last=None,
            until=2**40,  # type: ignore[arg-type]
            table=None,
        ),
        ALL_INDEXES,
    )
    sqs, s3 = boto3.client("sqs"), boto3.client("s3")
    alerts = []
    while messages := sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", []):
        for message in messages:
            alerts.append(json.loads(json.loads(message["Body"])["Message"]))
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
    archived_ids = []
    for item in archived_objects(settings.archive_bucket_name, AwsClients()):
        body = s3.get_object(Bucket=settings.archive_bucket_name, Key=item["key"])["Body"].read()
        archived_ids.extend(json.loads(line)["event_id"] for line in gzip.decompress(body).decode().splitlines())
    return {
        "figures": figures,
        "alerts": alerts,
        "archived": archived_ids,
        "dlq": letters,
        "redriven": redriven,
        "already": already,
        "malformed": malformed,
    }


@pytest.fixture(scope="module")
def clean(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    from moto import mock_aws

    with pytest.MonkeyPatch.context() as patch, mock_aws():
        for name, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_REGION": "us-east-1",
            "POWERTOOLS_TRACE_DISABLED": "true",
        }.items():
            patch.setenv(name, value)
        patch.delenv("AWS_ENDPOINT_URL", raising=False)
        records, poison, ttl = workload()
        yield {"records": records, "poison": poison, "ttl": ttl, "result": run(records, Chaos(), None)}


def test_clean_run_matches_the_exact_figures(clean: dict[str, Any]) -> None:
    figures = clean["result"]["figures"]
    writes = sum(
        1
        for r in clean["records"]
        if "userIdentity" not in r and r["dynamodb"]["SequenceNumber"] not in clean["poison"]
    )
    table = [w for w in figures if w.index is None]
    assert sum(w.writes for w in table) == writes
    assert sum(w.ttl_deletes for w in table) == len(clean["ttl"])
    # and the index: every burst write moved event#42 from OPEN to SOLD, three units each way (~3 KB
    # entries: the index projects ALL)
    index = [w for w in figures if w.index == "by-status"]
    burst = sum(
        1
        for r in clean["records"]
        if r["dynamodb"]["Keys"]["pk"]["S"] == "event#42" and r["dynamodb"]["SequenceNumber"] not in clean["poison"]
    )
    for status in ("OPEN", "SOLD"):
        assert sum(k.wcu for w in index for k in w.keys if k.key == status) == 3 * burst
    assert sorted(clean["result"]["archived"]) == sorted(clean["ttl"])


# 2026 and 2135 cut the burst with the rollover at 31 s where batch cuts once hid it (issue #24).
CUT_BY_A_ROLLOVER = (2026, 2135)


@pytest.mark.parametrize("seed", [*range(SCHEDULES), *CUT_BY_A_ROLLOVER])
def test_invariants_hold_under_a_random_fault_schedule(clean: dict[str, Any], seed: int, aws: None) -> None:
    rng = random.Random(seed)
    faults = FaultInjector(rng, probability=rng.choice([0.02, 0.05, 0.1]))
    schedule = Schedule.draw(rng)
    result = run(clean["records"], RandomChaos(rng, lose_probability=0.15), faults, schedule)
    # Stats: identical to the clean pass
    assert result["figures"] == clean["result"]["figures"], dict(faults.injected)
    # Archive: every TTL deletion, nothing else; duplicates only as copies of the same event_id
    assert set(result["archived"]) == clean["ttl"]
    # Alerts: one firing and one resolved for the burst key and for each index partition it moves between
    statuses = Counter((a["key"], a["status"]) for a in result["alerts"])
    assert statuses == EXPECTED_ALERTS, (
        dict(faults.injected),
        schedule,
    )
    # DLQ: bisection isolates every failure to one record; every poison record is there, and whatever
    # else exhausted its retries was counted by the redrive, or found counted (a failed invocation had
    # flushed it: its snapshot's ranges say so)
    assert all(d.start_sequence == d.end_sequence and d.batch_size == 1 for d in result["dlq"])
    assert {d.start_sequence for d in result["dlq"]} >= clean["poison"]
    # (a redelivery may send a poison record, and so its dead letter, twice)
    assert result["redriven"] + result["already"] + result["malformed"] == len(result["dlq"])
    assert result["malformed"] == sum(1 for d in result["dlq"] if d.start_sequence in clean["poison"])
    assert all(d.shard_id and d.stream_arn for d in result["dlq"])


@pytest.mark.parametrize("seed", range(SCHEDULES // 2))
def test_records_redelivered_out_of_order_are_counted_and_archived_exactly(
    clean: dict[str, Any], seed: int, aws: None
) -> None:
    """Bisected batches whose later half is retried first ("If records are processed more than once, they
    might be processed out of order"): the figures and the archive stay exact. The alerts are not held to
    one firing and one resolved here: a key's peak bucket keeps only its latest bucket, so a burst whose
    earlier records are folded after its later ones can read below the alert rate (docs/decisions.md §32);
    an alert is still never published twice."""
    rng = random.Random(1000 + seed)
    faults = FaultInjector(rng, probability=rng.choice([0.02, 0.05, 0.1]))
    chaos = RandomChaos(rng, lose_probability=0.15, reorder_probability=0.5)
    result = run(clean["records"], chaos, faults, Schedule.draw(rng))
    assert chaos.reordered > 0
    assert result["figures"] == clean["result"]["figures"], dict(faults.injected)
    assert set(result["archived"]) == clean["ttl"]
    statuses = Counter((a["key"], a["status"]) for a in result["alerts"])
    assert all(count == 1 for count in statuses.values()), statuses
    assert all(statuses[(key, "firing")] for key, status in statuses if status == "resolved"), statuses
    assert result["redriven"] + result["already"] + result["malformed"] == len(result["dlq"])


def test_the_schedules_really_inject_faults(clean: dict[str, Any], aws: None) -> None:
    # A schedule that injected nothing would prove nothing: check that the injector bites everywhere.
    seen: Counter[str] = Counter()
    for seed in range(100, 110):
        rng = random.Random(seed)
        faults = FaultInjector(rng, probability=0.15)
        result = run(clean["records"], RandomChaos(rng, lose_probability=0.15), faults)
        assert result["figures"] == clean["result"]["figures"]
        assert Counter(a["status"] for a in result["alerts"]) == Counter({"firing": 3, "resolved": 3})
        seen.update(faults.injected)
        if {"before Publish", "after Publish", "after PutItem", "after PutObject"} <= set(seen):
            break
    assert {
        "before Publish",
        "after Publish",
        "before PutItem",
        "after PutItem",
        "before PutObject",
        "after PutObject",
    } <= set(seen), seen


def test_the_schedules_really_dead_letter_redrive_and_roll_over(clean: dict[str, Any], aws: None) -> None:
    # The schedules CI runs cover every retry quota, both state readings and every rollover point...
    drawn = [Schedule.draw(random.Random(seed)) for seed in range(SCHEDULES)]
    assert {s.reading for s in drawn} == set(PARTIAL_FAILURE_STATES)
    assert {s.rollover_at for s in drawn} == {None, 31, 38, 46}
    assert {s.retry_attempts for s in drawn} == {1, 2, 25}
    # ...and a schedule with one retry really exhausts it, so redrive has work to do
    rng = random.Random(5)
    faults = FaultInjector(rng, probability=0.15)
    result = run(clean["records"], RandomChaos(rng, lose_probability=0.3), faults, Schedule(1, "previous", 38))
    assert result["redriven"] > 0
    assert result["figures"] == clean["result"]["figures"]
    assert set(result["archived"]) == clean["ttl"]
