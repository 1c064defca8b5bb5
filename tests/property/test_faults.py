"""Fault injection: AWS misbehaving under the real handler, through the event-source-mapping emulation.

Each schedule is seeded (reproducible): DynamoDB, SNS and S3 calls fail at random with
throttling or 5xx errors, before the call or after it succeeded (the container dies
after writing, before answering), while Lambda loses responses (function errors),
redelivers overlapping ranges and picks random batch sizes. Each schedule also draws
the retry quota (so some batches exhaust it and go to the DLQ, then `hotkeys redrive`
runs), the undocumented partial-failure state reading, 1 to 8 stream shards (each table key on
one, the burst's index partitions spread over all), and per shard a rollover or a split into two
siblings (none, mid-burst, or right after the burst so the incident's key never writes again);
the shards run out of step (``tests.integration.test_table_wide.Lambda``), and the judge looks on its
schedule with faults of its own (throttled, its writes timing out after they took effect).
After every schedule the invariants are checked against a clean run and against exact
figures the test computes itself.

CI runs FAULT_SCHEDULES (default 16: the first 16 seeds cover every retry quota, both state
readings, 1 and 8 shards and every cut point, checked below) schedules; `make soak` runs thousands.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import uuid
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from hotkeys.cli.redrive import Counting, redrive_entry
from hotkeys.cli.replay_view import archived_objects
from hotkeys.cli.top import ALL_INDEXES, window_figures, windows_in_range
from hotkeys.deployment import EventSourceSettings
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.config import Settings
from hotkeys.detector.handlers.wiring import build_ports
from hotkeys.emulator.esm import PARTIAL_FAILURE_STATES, Deliveries, Delivery
from hotkeys.emulator.events import ItemChange, sequence_number, stream_record
from hotkeys.emulator.local import create_stats_table
from tests import reference_partitions as oracle
from tests import support
from tests.esm_faults import RandomFaults
from tests.integration.test_table_wide import Lambda, describe, out_of_step
from tests.message_checks import check_messages
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


@dataclass(frozen=True)
class Workload:
    """The records of each stream shard (the table's keys dealt over them), the poison records'
    sequence numbers and the TTL deletions' event ids."""

    shards: list[list[dict[str, Any]]]
    poison: set[str]
    ttl: set[str]


SEATS = 24  # table keys whose moves between OPEN and SOLD make the index burst, dealt over the shards


def shard_of(key: str, shards: int, burst_shard: int) -> int:
    """Each table key on one shard: the burst key on ``burst_shard``, the others dealt by number."""
    if key == "event#42":
        return burst_shard
    return int(key.split("#")[1]) % shards


def workload(shards: int = 1, burst_shard: int = 0) -> Workload:
    """A burst key, an index burst spread over every shard, background writes, application deletes,
    TTL deletions and two poison records, on ``shards`` stream shards.

    The table has a ``by-status`` index projecting ALL. event#42 (no status: no index writes) takes
    900 WCU/s for 12 s on its shard; over the same 12 s, seats (each its own table key, dealt over
    all shards) move between OPEN and SOLD (a delete on one index partition, a put on the other):
    both index partitions take 900 WCU/s, each shard only its part. Background writes change or
    keep one of two statuses."""
    rng = random.Random(42)
    # 100 writes/s of ~9 KB items (9 WCU each) for each burst: the figures of 900 1-KB writes a second
    events: list[tuple[float, str, str]] = [(T0 + 20 + i / 100, "event#42", "write") for i in range(100 * 12)]
    events += [(T0 + 20 + (i + 0.5) / 100, f"seat#{i % SEATS}", "write") for i in range(100 * 12)]
    # Background for six and a half windows: long enough to resolve an incident nobody carries.
    for i in range(1300):
        events.append((T0 + i * 0.3, f"user#{rng.randint(0, 40)}", rng.choice(["write", "write", "delete", "ttl"])))
    events.sort()
    dealt: list[list[dict[str, Any]]] = [[] for _ in range(shards)]
    poison, ttl = set(), set()
    moves = Counter[str]()
    for position, (when, key, kind) in enumerate(events):
        image: dict[str, Any] = {"pk": key, "n": position, "expireAt": int(when) - 60}
        before: str | None
        if key.startswith("user#"):
            before, after = rng.choice("AB"), rng.choice("AB")
        elif key == "event#42":
            before = after = None
            image["seat"] = "s" * 8_900  # ~8.95 KB: 9 write units
        else:
            before, after = ("OPEN", "SOLD") if moves[key] % 2 == 0 else ("SOLD", "OPEN")
            moves[key] += 1
            image["holder"] = "h" * 8_900
        shard = shard_of(key, shards, burst_shard)
        sequence = sequence_number(shard, position)
        old = {**image, "status": before} if before else image
        new = {**image, "status": after} if after else image
        record = stream_record(
            ItemChange(
                event_name="MODIFY" if kind == "write" else "REMOVE",
                keys={"pk": key},
                new_image=new if kind == "write" else None,
                old_image=old,
                ttl_delete=kind == "ttl",
            ),
            table="tickets",
            sequence=sequence,
            event_time=int(when),
        )
        if kind == "ttl":
            ttl.add(record["eventID"])
        if position in (150, 3000):  # one in the bursts, one in the background after them
            record["dynamodb"]["NewImage"] = {"pk": {"S": key}, "broken": {"Q": "?"}}
            poison.add(sequence)
        dealt[shard].append(record)
    return Workload(dealt, poison, ttl)


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

    def register(self, aws_clients: AwsClients) -> None:
        """Fail calls of these clients (a container's; thrown away with it)."""
        for aws in (
            aws_clients.resource("dynamodb").meta.client,
            aws_clients.client("sns"),
            aws_clients.client("s3"),
            aws_clients.client("dynamodb"),
        ):
            aws.meta.events.register("before-call.*.*", self.before)
            aws.meta.events.register("after-call.*.*", self.after)


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
# The alerts every schedule must publish: the burst key, and the two index partitions its seats move between.
EXPECTED_ALERTS = Counter(
    {(key, status): 1 for key in ("event#42", "OPEN", "SOLD") for status in ("firing", "resolved")}
)


def create_source_table() -> None:
    """``tickets`` with an index on status projecting ALL (the function reads it with DescribeTable)."""
    if "tickets" not in boto3.client("dynamodb").list_tables()["TableNames"]:
        support.create_source_table("tickets", None, status_index=True, status_projection="ALL")


@dataclass(frozen=True)
class Cut:
    """A shard ending ``at`` seconds after T0: one child carries on (a rollover), or two siblings
    share its keys (a split)."""

    at: int
    siblings: int = 1


# During the bursts (20 to 32 s: their heaviest aligned 10 s at 900 WCU/s), right after them
# (the burst key never writes again on the parent's lineage), and later.
CUTS: tuple[Cut | None, ...] = (None, None, Cut(31), Cut(38), Cut(46), Cut(25, 2), Cut(29, 2))


def shard_id(shard: int, generation: int) -> str:
    """A shard id as long as the API requires (GetShardIterator refuses shorter ones)."""
    return f"shardId-{T0 + shard:020d}-{generation:08d}"


@dataclass(frozen=True)
class Schedule:
    retry_attempts: int = 25
    reading: str = "returned"
    shards: int = 1
    burst_shard: int = 0
    cuts: tuple[Cut | None, ...] = ()  # per shard (missing: no cut)

    @classmethod
    def draw(cls, rng: random.Random) -> Schedule:
        shards = rng.randint(1, 8)
        return cls(
            retry_attempts=rng.choice([1, 2, 25]),
            reading=rng.choice(PARTIAL_FAILURE_STATES),
            shards=shards,
            burst_shard=rng.randrange(shards),
            cuts=tuple(rng.choice(CUTS) for _ in range(shards)),
        )

    def lineages(self, work: Workload) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str]]:
        """Every shard's records by shard id, and each child's parent."""
        records_of: dict[str, list[dict[str, Any]]] = {}
        parents: dict[str, str] = {}
        for shard, records in enumerate(work.shards):
            cut = self.cuts[shard] if shard < len(self.cuts) else None
            parent = shard_id(shard, 0)
            if cut is None:
                records_of[parent] = records
                continue
            at = T0 + cut.at
            split = next(i for i, r in enumerate(records) if r["dynamodb"]["ApproximateCreationDateTime"] >= at)
            records_of[parent] = records[:split]
            children = [shard_id(shard, 1 + sibling) for sibling in range(cut.siblings)]
            for child in children:
                parents[child] = parent
                records_of[child] = []
            for record in records[split:]:
                # a split divides the parent's keys between its siblings (a key on one of them)
                key = record["dynamodb"]["Keys"]["pk"]["S"]
                records_of[children[zlib.crc32(key.encode()) % cut.siblings]].append(record)
        return {shard: records for shard, records in records_of.items() if records}, parents


def run(
    work: Workload,
    chaos: Deliveries,
    faults: FaultInjector | None,
    schedule: Schedule = Schedule(),
    order: random.Random | None = None,
) -> dict[str, Any]:
    settings, queue = environment()
    esm = EventSourceSettings(batch_size=500, tumbling_window_seconds=60, retry_attempts=schedule.retry_attempts)
    shards, parents = schedule.lineages(work)

    def container() -> AwsClients:
        # a container's clients: faults are injected into exactly these
        clients = AwsClients()
        if faults is not None:
            faults.register(clients)
        return clients

    function = Lambda(
        settings,
        chaos,
        esm=esm,
        delivery=Delivery(partial_failure_state=schedule.reading),  # type: ignore[arg-type]
        stream_arn=STREAM_ARN,
        clients=container,
    )
    # the shards out of step (up to the documented limit), each child after its parent (a split's second
    # sibling in a lane of its own, starting where the parent ended), the judge with faults of its own
    groups: list[list[str]] = []
    for shard in shards:
        parent = parents.get(shard)
        lineage = next((group for group in groups if parent is not None and group[-1] == parent), None)
        if lineage is not None:
            lineage.append(shard)
        elif parent is None or not any(parent in group for group in groups):
            groups.append([shard])
        else:
            groups.append([shard])
    function.run(shards, out_of_step(shards, order or random.Random(0)), lineages=groups, judge_clients=container())
    letters = [letter for shard_run in function.runs for letter in shard_run.dead_letters]
    # The operator redrives the DLQ once AWS is healthy again (a fresh container); it first moves the
    # archive objects spooled while S3 refused them into S3 (as `hotkeys redrive` does).
    redrive_ports = build_ports(settings, AwsClients())
    assert redrive_ports.archiver is not None
    while redrive_ports.archiver.drain(force=True) != (0, True):
        pass
    # It reads each range with GetRecords: the records come back as boto3 parses them.
    streams = WireStream(STREAM_ARN, shards, parents=parents).client()
    redriven = already = malformed = 0
    for letter in letters:
        info = letter.to_message()["DDBStreamBatchInfo"]
        result = redrive_entry(info, Counting(settings, redrive_ports, redrive_ports.stats), streams, dry_run=False)
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
        work = workload()
        yield {"work": work, "result": run(work, Deliveries(), None)}


def test_clean_run_matches_the_exact_figures(clean: dict[str, Any]) -> None:
    work, figures = clean["work"], clean["result"]["figures"]
    counted = [r for r in work.shards[0] if r["dynamodb"]["SequenceNumber"] not in work.poison]
    writes = sum(1 for r in counted if "userIdentity" not in r)
    table = [w for w in figures if w.index is None]
    assert sum(w.writes for w in table) == writes
    assert sum(w.ttl_deletes for w in table) == len(work.ttl)
    # and the index, as the oracle sums it (each seat's move: 9 units on OPEN, 9 on SOLD)
    found = oracle.partitions([counted], describe("tickets"))
    index = [w for w in figures if w.index == "by-status"]
    for status in ("OPEN", "SOLD"):
        assert sum(w.entries[status].wcu for w in index if status in w.entries) == sum(
            p.units for (_t, i, key, _w), p in found.items() if i == "by-status" and key == status
        )
    assert sorted(clean["result"]["archived"]) == sorted(work.ttl)


# 2026 and 2135 cut the burst with the rollover at 31 s where batch cuts once hid it (issue #24):
# their faults, on one shard that rolls over at 31 s.
CUT_BY_A_ROLLOVER = (2026, 2135)


def schedule_of(seed: int, rng: random.Random) -> Schedule:
    schedule = Schedule.draw(rng)
    if seed in CUT_BY_A_ROLLOVER:
        return Schedule(schedule.retry_attempts, schedule.reading, shards=1, cuts=(Cut(31),))
    return schedule


def what_arrived(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(a["key"], a["status"], a["window_start"], a.get("wcu_per_second")) for a in result["alerts"]]


@pytest.mark.parametrize("seed", [*range(SCHEDULES), *CUT_BY_A_ROLLOVER])
def test_invariants_hold_under_a_random_fault_schedule(clean: dict[str, Any], seed: int, aws: None) -> None:
    rng = random.Random(seed)
    faults = FaultInjector(rng, probability=rng.choice([0.02, 0.05, 0.1]))
    schedule = schedule_of(seed, rng)
    work = workload(schedule.shards, schedule.burst_shard)
    result = run(work, RandomFaults(rng, lose_probability=0.15), faults, schedule, random.Random(seed))
    # Stats: identical to the clean pass on one shard
    assert result["figures"] == clean["result"]["figures"], (dict(faults.injected), schedule)
    # Archive: every TTL deletion, nothing else; duplicates only as copies of the same event_id
    assert set(result["archived"]) == work.ttl
    # Alerts: one firing and one resolved for the burst key and for each index partition its seats move between
    statuses = Counter((a["key"], a["status"]) for a in result["alerts"])
    assert statuses == EXPECTED_ALERTS, (schedule, what_arrived(result), dict(faults.injected))
    # and every message keeps to what a subscriber can hold it to (its peak at least its rate, ...)
    check_messages(result["alerts"])
    # DLQ: bisection isolates every failure to one record; every poison record is there, and whatever
    # else exhausted its retries was counted by the redrive, or found counted (a failed invocation had
    # flushed it: its snapshot's ranges say so)
    assert all(d.start_sequence == d.end_sequence and d.batch_size == 1 for d in result["dlq"])
    assert {d.start_sequence for d in result["dlq"]} >= work.poison
    # (a redelivery may send a poison record, and so its dead letter, twice)
    assert result["redriven"] + result["already"] + result["malformed"] == len(result["dlq"])
    assert result["malformed"] == sum(1 for d in result["dlq"] if d.start_sequence in work.poison)
    assert all(d.shard_id and d.stream_arn for d in result["dlq"])


@pytest.mark.parametrize("seed", range(SCHEDULES // 2))
def test_records_redelivered_out_of_order_are_counted_and_archived_exactly(
    clean: dict[str, Any], seed: int, aws: None
) -> None:
    """Bisected batches whose later half is retried first ("If records are processed more than once, they
    might be processed out of order"): the figures and the archive stay exact. The alerts are not held to
    one firing and one resolved here: a burst whose earlier records are folded after its later ones can
    read below the alert rate when the rule runs (docs/decisions.md §45);
    an alert is still never published twice."""
    rng = random.Random(1000 + seed)
    faults = FaultInjector(rng, probability=rng.choice([0.02, 0.05, 0.1]))
    chaos = RandomFaults(rng, lose_probability=0.15, reorder_probability=0.5)
    schedule = Schedule.draw(rng)
    work = workload(schedule.shards, schedule.burst_shard)
    result = run(work, chaos, faults, schedule, random.Random(seed))
    assert chaos.reordered > 0
    assert result["figures"] == clean["result"]["figures"], (dict(faults.injected), schedule)
    assert set(result["archived"]) == work.ttl
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
        result = run(clean["work"], RandomFaults(rng, lose_probability=0.15), faults)
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
    # The schedules CI runs cover every retry quota, both state readings, one shard and eight, the burst
    # key's shard cut mid-burst, every rollover point and both split points...
    drawn = []
    for seed in range(SCHEDULES):
        rng = random.Random(seed)
        FaultInjector(rng, probability=rng.choice([0.02, 0.05, 0.1]))
        drawn.append(schedule_of(seed, rng))
    assert {s.reading for s in drawn} == set(PARTIAL_FAILURE_STATES)
    assert {s.retry_attempts for s in drawn} == {1, 2, 25}
    assert {1, 8} <= {s.shards for s in drawn}
    assert {cut for s in drawn for cut in s.cuts} == set(CUTS)
    assert any(s.cuts[s.burst_shard] in (Cut(31), Cut(25, 2), Cut(29, 2)) for s in drawn if s.shards > 1)
    # ...and a schedule with one retry really exhausts it, so redrive has work to do
    rng = random.Random(5)
    faults = FaultInjector(rng, probability=0.15)
    schedule = Schedule(1, "previous", shards=3, burst_shard=1, cuts=(None, Cut(38), Cut(29, 2)))
    work = workload(3, 1)
    result = run(work, RandomFaults(rng, lose_probability=0.3), faults, schedule)
    assert result["redriven"] > 0
    assert result["figures"] == clean["result"]["figures"]
    assert set(result["archived"]) == work.ttl
