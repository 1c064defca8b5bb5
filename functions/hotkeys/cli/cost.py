"""``hotkeys cost``: the detector's monthly cost next to Contributor Insights' for the same traffic.

Prices are inputs, listed and dated below (us-east-1 list prices as published on the AWS
pricing pages; Contributor Insights' rule and event prices as reported by third-party
pricing write-ups, not verified against AWS here). Update ``PRICES`` when they change.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from hotkeys.cli import cost_kinesis
from hotkeys.cli.cost_kinesis import KinesisSource
from hotkeys.deployment import EVENT_SOURCE, JUDGE_MEMORY_MB, JUDGE_SCHEDULE_SECONDS
from hotkeys.detector.alerts import judge
from hotkeys.detector.config import default_of
from hotkeys.detector.consumer import layout
from hotkeys.detector.consumer.state import MAX_COUNTED_INDEXES
from hotkeys.detector.proposals import MAX_PROPOSALS
from hotkeys.throttling import THROTTLE_METRICS

PRICES_DATED = "2026-11 (us-east-1 list prices; update functions/hotkeys/cli/cost.py PRICES if they changed)"
PRICES = {
    "lambda_request": 0.20 / 1e6,  # per invocation
    "lambda_gb_second_arm64": 0.0000133334,
    "dynamodb_write_request_unit": 0.625 / 1e6,  # on-demand
    "dynamodb_read_request_unit": 0.125 / 1e6,  # on-demand
    "dynamodb_storage_gb_month": 0.25,
    "sns_publish": 0.50 / 1e6,
    "s3_put": 0.005 / 1000,
    "s3_standard_gb_month": 0.023,
    "cloudwatch_logs_ingested_gb": 0.50,
    # first 10,000 metrics; "prorated by the hour": a metric costs only the hours in which it is published
    "cloudwatch_custom_metric_month": 0.30,
    "cloudwatch_alarm_month": 0.10,  # per alarm metric, standard resolution
    "cloudwatch_dashboard_month": 3.00,
    "contributor_insights_rule_month": 0.50,
    "contributor_insights_event": 0.03 / 1e6,
    "sqs_request": 0.40 / 1e6,  # standard queue, per request (of up to 64 KB); SSE-SQS adds nothing
}
SECONDS_PER_MONTH = 30 * 86_400
HOURS_PER_MONTH = SECONDS_PER_MONTH // 3600
# What a Lambda container pays per ~1 KB record at one full vCPU: the runtime's parse, GC and the
# handler with alerts and archive on, batches of 1,000. The source is the committed benchmark output
# docs/lambda-process-latest.json (`python -m bench.lambda_process --part matrix`), cell
# BENCH_CELL's "total_us", times CPU_MARGIN: the same code has measured that far apart on different
# days on this shared machine (docs/measurements.md), and the benchmark ran on x86_64 (the function
# runs on arm64).
# tests/unit/test_cost_sources.py recomputes both figures from that file. Lambda gives
# memory/1769 MB of a vCPU.
BENCH_OUTPUT = "docs/lambda-process-latest.json"
BENCH_CELL = "1KB-12 mixed simple key, batch 1000"
CPU_MARGIN = 1.6
CPU_SECONDS_PER_RECORD = 44e-6
# Each counted GSI adds its write rules and its own summary update per record: the same cell with 5
# GSIs (BENCH_CELL + ", 5 GSIs") less the cell without, per index, times CPU_MARGIN, rounded up.
CPU_SECONDS_PER_RECORD_PER_GSI = 6e-6
INVOCATION_OVERHEAD_SECONDS = 0.010
RETENTION_DAYS = default_of("stats_retention_days")
# What the consumer puts in CloudWatch Logs (the stack logs at INFO in Lambda's JSON format). The
# function's own lines are measured from the handler's real output by tests/integration/
# test_log_volume.py (realistic names: a CDK function name and ARN, a real shard id), which fails if
# the handler writes more than these figures or if they overstate it by more than a fifth:
# its EMF metrics line, one per container and minute (``app.METRICS_SECONDS``; a healthy invocation
# writes nothing of its own; errors, malformed records, alerts and the archive spool add lines: they
# are rare and left out): RecordsCounted, its table's StreamRecordsRead, the flush figures as properties,
# and the TTL pair of a table with TTL deletions (the measured line's; a line without them is about 60
# bytes shorter),
EMF_LINE_BYTES = 560
# plus this much per counted global secondary index of its table (its metric's name in the line's
# directive and its value).
EMF_BYTES_PER_INDEX = 200
# The whole per 1,000 records of a saturated shard is measured by `python -m bench.log_volume`
# (LOG_BENCH_OUTPUT); tests/unit/test_cost_sources.py checks log_bytes against it.
LOG_BENCH_OUTPUT = "docs/log-volume-latest.json"
# Lambda's system records in the JSON log format, shaped as the telemetry schema documents them
# (platform.start and platform.report, with the X-Ray tracing context active tracing adds). Built from
# that shape, not observed on a live function: the least certain of these figures.
_REQUEST_ID = "0" * 36
_TRACING = '{"spanId":"' + "0" * 16 + '","type":"X-Amzn-Trace-Id","value":"Root=1-' + "0" * 8 + "-" + "0" * 24
_TRACING += ";Parent=" + "0" * 16 + ';Sampled=1"}'
PLATFORM_RECORDS = (
    '{"time":"2026-12-01T00:00:00.000Z","type":"platform.start","record":{"requestId":"'
    + _REQUEST_ID
    + '","version":"$LATEST","tracing":'
    + _TRACING
    + "}}",
    '{"time":"2026-12-01T00:00:00.000Z","type":"platform.report","record":{"requestId":"'
    + _REQUEST_ID
    + '","metrics":{"durationMs":1234.567,"billedDurationMs":1235,"memorySizeMB":512,"maxMemoryUsedMB":128},'
    + '"tracing":'
    + _TRACING
    + ',"status":"success"}}',
)
PLATFORM_BYTES_PER_INVOCATION = sum(len(record) + 1 for record in PLATFORM_RECORDS)
# The consumer's custom metrics (hotkeys.detector.handlers.app._record_metrics), one dimension set each. A
# custom metric is billed for each hour in which it is published, prorated ("All custom metrics charges are
# prorated by the hour and metered only when you send metrics to CloudWatch", CloudWatch pricing page):
# RecordsCounted is in every EMF line, so it bills every hour of a table that writes;
CONSUMER_METRICS_ALWAYS = 1
# the rest (app.RARE_METRICS: duplicates skipped, TTL deletions, malformed records, records without images,
# items archived, records out of order, spooled and drained archive objects, carried states discarded,
# items whose TTL DynamoDB ignores, alerts published, Kinesis records beyond the dedupe horizon, Kinesis copies)
# only when not zero, the TTL pair (TtlDeletions, ItemsArchived) every hour of a table that has TTL deletions
# (``--ttl-deletes-per-second``);
CONSUMER_METRICS_RARE = 13
CONSUMER_METRICS_TTL = 2
# of which only a Kinesis source's consumer publishes two (ChangesBeyondDedupeHorizon, ChangeCopiesSkipped);
CONSUMER_METRICS_KINESIS = 2
# plus one per counted index (IndexWriteUnits/<table>/<index>), in every hour its index is written.
# tests/unit/test_metric_count.py pins these counts to what the handler publishes.
# The judge's (hotkeys.detector.handlers.judge_app.publish_metrics): JudgeLooks and JudgeLookSeconds every
# look; alerts published, failed looks, what-if notices and chain restarts only when not zero.
JUDGE_METRICS_ALWAYS = 2
JUDGE_METRICS_RARE = 4
# An assumption, not a measurement: each rare metric is published in this many hours a month (a day's worth:
# an hour with a duplicate batch, an alert, a failed look ... each month). A metric in every hour costs
# HOURS_PER_MONTH of them.
RARE_METRIC_HOURS = 24
# The stack's alarms, list prices before the free tier (10 alarms and 3 dashboards per account); the infra
# tests check the counts against the synthesized template: the consumer's (infra/monitoring.py: iterator
# age, dead letters, errors; and its throttles, records without images, spooled archive objects, records
# out of order, carried states discarded, items whose TTL DynamoDB ignores), the throttle explainer's failed
# invocations (infra/stack.py), the judge's (infra/judge.py: errors, wake-ups that stop, failed looks,
# a chain that keeps stopping); one more per alert subscriber with its own undelivered-message queue, not
# counted here; and the one dashboard.
CONSUMER_ALARMS = 9
EXPLAINER_ALARMS = 1
JUDGE_ALARMS = 4
ALARMS = CONSUMER_ALARMS + EXPLAINER_ALARMS + JUDGE_ALARMS
# Each table's StreamUnread alarm (infra/stream_unread.py, in a lean deployment too): a metric-math alarm on
# three metrics, the table's writes, its TTL deletions and its records read, billed per metric.
UNREAD_ALARM_METRICS_PER_TABLE = 3
DASHBOARDS = 1
# The lean deployment (-c lean, ``--lean``): no dashboard, no throttle alarms nor their explainer,
# Contributor Insights off unless asked for, and of the consumer's alarms iterator age, dead letters and
# errors (infra/monitoring.LEAN_ALARMS); the judge's stay.
LEAN_ALARMS = 3 + JUDGE_ALARMS
# infra/throttle_alarms.py: one alarm per DynamoDB throttle metric (read and write, by cause: key range,
# on-demand maximum, provisioned, account limit) on each table, and as many again for its GSIs: per GSI
# where the stack knows them, else one Metrics Insights alarm per metric over all of the table's GSIs.
# Priced per alarm metric: a Metrics Insights alarm as one per GSI it analyzes (the pricing page bills
# such alarms per metric analyzed), so none for a table without GSIs (not verified against a bill).
THROTTLE_ALARMS_PER_SCOPE = len(THROTTLE_METRICS)
# What a shard writes to the stats table, measured through the pipeline by `python -m bench.stats_units`
# (STATS_UNITS_OUTPUT; tests/unit/test_cost_sources.py recomputes each figure): per records/s of one shard,
# the write units of a stats item and of its window-heads index entry, each the mean over its writes
# (Zipf(1.1) over 100,000 keys of 45 bytes, 1 KB items). A rate between two rows takes the higher row's.
# Writes per window: a shard that fills no batch (under batch size / batching window records/s) writes
# after every batch (window / batching window: 12), a busier one at the flush boundaries (5): the bench
# counts both.
STATS_UNITS_OUTPUT = "docs/stats-units-latest.json"
STATS_UNITS = (  # (records/s of a shard, item units per write, index entry units per write)
    (1, 1.958, 1.0),
    (10, 2.75, 1.0),
    (100, 3.229, 1.583),
    (199, 3.583, 1.688),
    (1000, 3.95, 1.8),
)
# The judge at scale comes from the committed simulation docs/scale-latest.json (`python -m bench.scale`,
# SCALE_OUTPUT); tests/unit/test_cost_sources.py recomputes each figure:
SCALE_OUTPUT = "docs/scale-latest.json"
# windows of heads a look reads per shard in the steady state (the latest, and the one before until
# it settled twice: docs/decisions.md §64), at 1,000 shards,
JUDGE_WINDOWS_PER_LOOK = 1.2
# and the judge's CPU per head read (decoded and merged), at one full vCPU, times CPU_MARGIN, rounded up
# to 10 µs, at 1,000 shards.
JUDGE_CPU_SECONDS_PER_HEAD = 710e-6
# The largest head the code can store, in write units (KB) of its window-heads index entry: every
# summary's share of HEAD_BYTES filled with keys zlib cannot shrink, MAX_COUNTED_INDEXES index names of
# 255 characters, the item figures of HEAD_ITEM_KEYS keys, the longest table and shard names.
# tests/unit/test_head_bound.py builds that head through snapshots and checks this figure against it.
HEAD_MAX_KB = 23
# The judge (alerts.look_chain): each look is one invocation, woken by the message the look before sent
# to the judge's queue (SQS DelaySeconds to the next flush boundary plus LOOK_DELAY_SECONDS): a look
# every flush interval, whatever the phase of its minute rule. Each claims its look with one conditional
# PutItem on the stats table (a claim under 1 KB: one write unit, charged whether its condition holds or
# not). The minute rule is its watchdog: one short invocation a minute that reads the latest claim (one
# Query of half a read unit, priced here as the write it makes when the chain has stopped: an upper
# bound) and nothing else while the chain is alive; it never waits (look_chain.watchdog_due).
JUDGE_WATCHDOG_RUNS_PER_MONTH = SECONDS_PER_MONTH // JUDGE_SCHEDULE_SECONDS
JUDGE_CLAIM_WRITE_UNITS = 1
# Billed duration of a wake-up besides its look: the handler's own work, the
# claim's conditional PutItem and the next look's SendMessage. Not measured (no AWS here): a bound of 100
# ms, ten times the consumer's per-invocation overhead, where AWS documents single-digit milliseconds for
# DynamoDB; the line moves by 9 cents a month per 100 ms at 256 MB.
JUDGE_INVOCATION_OVERHEAD_SECONDS = 0.100
# Its memory: the stack's default (-c judgeMemoryMb, hotkeys.deployment.JUDGE_MEMORY_MB).
# The judge's queue: each look sends one message (SendMessage), and Lambda's poller receives and deletes it
# (a ReceiveMessage that returns it, a DeleteMessage). Lambda polls a standard queue continuously: "For
# standard queues, Lambda uses long polling to poll a queue until it becomes active ... When traffic is
# low, Lambda scales back the processing to five concurrent batches, and can optimize to as few as 2"
# (Lambda developer guide, "Configuring scaling behavior for SQS event source mappings"). Assumed: five
# pollers, each a ReceiveMessage per 20 s (the longest long poll SQS allows; Lambda does not document its
# wait) when nothing arrives.
JUDGE_QUEUE_POLLERS = 5
SQS_LONG_POLL_SECONDS = 20
# What a wake-up writes to CloudWatch Logs: its EMF line and its "judge look" line, plus Lambda's two
# system records (tests/integration/test_log_volume.py measures the first two); a watchdog run that finds
# its look claimed writes its one line (priced as a look's).
JUDGE_LOG_BYTES_PER_LOOK = 1100
# Other stats-table reads, each a Query of half a read unit: the judge's open incidents and layouts
# (every INCIDENTS_READ_SECONDS and LAYOUT_READ_SECONDS per table), its tables' lag reports (one Query per
# table and look: consumer.lag; a shard that keeps up reports nothing, so their writes are left out), a
# consumer's layout (per shard, on average every layout.REFRESH_SECONDS less half its spread:
# layout.refresh_due).
INCIDENTS_READ_SECONDS = judge.INCIDENTS_READ_SECONDS
LAYOUT_READ_SECONDS = judge.LAYOUT_READ_SECONDS
LAYOUT_REFRESH_SECONDS = layout.REFRESH_SECONDS * (1 - layout.REFRESH_SPREAD / 2)


@dataclass(frozen=True)
class CostInputs:
    writes_per_second: float
    avg_item_kb: float = 1.0
    tables: int = 1
    reads_per_second: float = 0.0  # Contributor Insights counts reads too; the detector never sees them
    ttl_deletes_per_second: float = 0.0
    memory_mb: int = 512
    batch_size: int = EVENT_SOURCE.batch_size
    window_seconds: int = default_of("window_seconds")
    flush_seconds: int = default_of("flush_seconds")
    gsis: int = 0  # global secondary indexes per table
    # What-if proposals per table (-c whatIfIndexes/whatIfKeys): counted by the same code as a GSI (the
    # per-record CPU, the EMF metric), with no Contributor Insights rule and no throttle alarm of their own.
    proposals: int = 0
    sort_keys: bool = False  # the tables and their indexes have a sort key (Contributor Insights: 4 rules each)
    # Requests DynamoDB throttles (each an event of Contributor Insights in throttled-keys mode)
    throttled_per_second: float = 0.0
    # The stack turns Contributor Insights on in throttled-keys mode (-c throttledKeyInsights): None is the
    # stack's default, on unless the deployment is lean.
    throttled_key_insights: bool | None = None
    judge_memory_mb: int = JUDGE_MEMORY_MB
    # The consumer's system log level (-c consumerSystemLogLevel): at WARN Lambda sends no platform
    # records of its invocations; DEBUG sends more than INFO's two, priced as INFO (a lower bound).
    consumer_system_log_level: str = "WARN"
    # The lean deployment (-c lean): no dashboard, no throttle alarms, fewer alarms (LEAN_ALARMS).
    lean: bool = False
    # Where the changes come from: DynamoDB Streams (dynamodb) or a Kinesis data stream (kinesis, priced by
    # cost_kinesis; its batches are per Kinesis shard, so ``shards`` counts those).
    source: str = "dynamodb"
    kinesis: KinesisSource = field(default_factory=KinesisSource)

    @property
    def counted_indexes(self) -> int:
        """Indexes the consumer counts per table: the GSIs and the what-if proposals."""
        return self.gsis + self.proposals

    @property
    def insights_on(self) -> bool:
        """Whether the stack turns Contributor Insights on (throttled-keys mode)."""
        return not self.lean if self.throttled_key_insights is None else self.throttled_key_insights

    def validate(self) -> None:
        if self.proposals > MAX_PROPOSALS:
            raise ValueError(f"--what-if: at most {MAX_PROPOSALS} proposals per table")
        if self.counted_indexes > MAX_COUNTED_INDEXES:
            raise ValueError(
                f"--gsis plus --what-if: at most {MAX_COUNTED_INDEXES} (a window keeps that many index summaries; "
                "proposals after the real GSIs are not counted)"
            )
        if self.writes_per_second <= 0 or self.avg_item_kb <= 0 or self.tables < 1:
            raise ValueError("--writes-per-second and --avg-item-kb must be positive, --tables at least 1")
        if self.throttled_per_second < 0:
            raise ValueError("--throttled-per-second cannot be negative")
        if self.consumer_system_log_level not in ("WARN", "INFO", "DEBUG"):
            raise ValueError("--consumer-system-log-level is WARN, INFO or DEBUG")
        cost_kinesis.validate(self.source, self.kinesis)


def shards(inputs: CostInputs) -> int:
    """Stream shards ≈ partitions: at least one per 1,000 WCU/s (plus one per 3,000 RCU/s, ignored); from a
    Kinesis source, the Kinesis stream's shards (``cost_kinesis.kinesis_shards``)."""
    if inputs.source == "kinesis":
        record = cost_kinesis.record_bytes(inputs.kinesis, inputs.avg_item_kb)
        return cost_kinesis.kinesis_shards(inputs.kinesis, inputs.writes_per_second, record)
    wcu = inputs.writes_per_second * math.ceil(inputs.avg_item_kb)
    return max(inputs.tables, math.ceil(wcu / 1000))


def records_per_shard_second(inputs: CostInputs) -> float:
    return inputs.writes_per_second / shards(inputs)


def quiet(inputs: CostInputs) -> bool:
    """Whether a shard's batches are cut by the batching window before they fill: then every batch is
    written at once (``consumer.pipeline._flush_due``), not only at the flush boundaries."""
    return records_per_shard_second(inputs) * EVENT_SOURCE.max_batching_window_seconds < inputs.batch_size


def stats_writes_per_shard_window(inputs: CostInputs) -> int:
    """A shard's snapshot writes per window: one per batch when its batches are quiet (12 for 60 s windows
    and a 5 s batching window), else one per flush interval of event time, the last being the window's
    final one (5 for 60 s windows flushed every 12 s). ``bench.stats_units`` counts both."""
    if quiet(inputs):
        return math.ceil(inputs.window_seconds / EVENT_SOURCE.max_batching_window_seconds)
    return math.ceil(inputs.window_seconds / inputs.flush_seconds)


def stats_units(inputs: CostInputs) -> tuple[float, float]:
    """Write units of a stats item and of its window-heads index entry, per write, at this shard rate:
    the measured row of the least rate at or above it (``STATS_UNITS``)."""
    rate = records_per_shard_second(inputs)
    for measured, item, entry in STATS_UNITS:
        if rate <= measured:
            return item, entry
    return STATS_UNITS[-1][1], STATS_UNITS[-1][2]


def consumer_invocations(inputs: CostInputs) -> float:
    """A month's invocations: per shard, one per full batch, or per batching window when traffic is low,
    plus one final invocation per tumbling window."""
    shard_count = shards(inputs)
    per_shard_rate = inputs.writes_per_second / shard_count
    batching = 1 / EVENT_SOURCE.max_batching_window_seconds
    per_second = shard_count * max(per_shard_rate / inputs.batch_size, batching) + shard_count / inputs.window_seconds
    return per_second * SECONDS_PER_MONTH


def judge_look_seconds(inputs: CostInputs) -> float:
    """The wall time of one look at every table, at the judge's memory (its share of a vCPU; one process
    uses one vCPU at most)."""
    heads = shards(inputs) * JUDGE_WINDOWS_PER_LOOK
    return heads * JUDGE_CPU_SECONDS_PER_HEAD / min(1.0, inputs.judge_memory_mb / 1769)


def judge_keeps_up(inputs: CostInputs) -> bool:
    """Whether a look ends within half the flush interval (the next look is due a flush after it)."""
    return judge_look_seconds(inputs) <= inputs.flush_seconds / 2


def judge_memory_needed(inputs: CostInputs) -> int | None:
    """The least memory (MB, in 64 MB steps from 128) at which the judge keeps up; None if even a full
    vCPU does not (past about 7,000 shards with these figures)."""
    cpu = shards(inputs) * JUDGE_WINDOWS_PER_LOOK * JUDGE_CPU_SECONDS_PER_HEAD
    vcpu = cpu / (inputs.flush_seconds / 2)
    if vcpu > 1:
        return None
    return max(128, math.ceil(vcpu * 1769 / 64) * 64)


def judge_looks(inputs: CostInputs) -> float:
    """The judge's looks in a month: one per flush interval, each its own invocation."""
    return SECONDS_PER_MONTH / inputs.flush_seconds


def judge_cost(inputs: CostInputs) -> dict[str, float]:
    """The judge's month: its invocations (looks and watchdog runs), their claims, its queue's requests."""
    looks = judge_looks(inputs)
    wakes = looks + JUDGE_WATCHDOG_RUNS_PER_MONTH
    seconds = looks * (JUDGE_INVOCATION_OVERHEAD_SECONDS + judge_look_seconds(inputs))
    seconds += JUDGE_WATCHDOG_RUNS_PER_MONTH * JUDGE_INVOCATION_OVERHEAD_SECONDS
    # Lambda's pollers' empty long polls, a ReceiveMessage that returns each message, its DeleteMessage,
    # and the look's SendMessage of the next one
    empty_polls = JUDGE_QUEUE_POLLERS * SECONDS_PER_MONTH / SQS_LONG_POLL_SECONDS
    return {
        "judge_lambda": wakes * PRICES["lambda_request"]
        + seconds * inputs.judge_memory_mb / 1024 * PRICES["lambda_gb_second_arm64"],
        # each look's claim and the record of its end; a watchdog run's read, priced as a write (a bound)
        "judge_claims": (2 * looks + JUDGE_WATCHDOG_RUNS_PER_MONTH)
        * JUDGE_CLAIM_WRITE_UNITS
        * PRICES["dynamodb_write_request_unit"],
        "judge_queue": (empty_polls + 3 * looks) * PRICES["sqs_request"],
    }


def custom_metric_hours(inputs: CostInputs) -> float:
    """Metric-hours published in a month: the metrics in every hour, each counted index's, the TTL pair when
    there are TTL deletions, and RARE_METRIC_HOURS of each rare one."""
    ttl = CONSUMER_METRICS_TTL if inputs.ttl_deletes_per_second > 0 else 0
    # (each table's StreamRecordsRead, and each of its counted indexes' write units)
    always = CONSUMER_METRICS_ALWAYS + JUDGE_METRICS_ALWAYS + ttl + inputs.tables * (1 + inputs.counted_indexes)
    kinesis_only = 0 if inputs.source == "kinesis" else CONSUMER_METRICS_KINESIS
    rare = CONSUMER_METRICS_RARE - ttl - kinesis_only + JUDGE_METRICS_RARE
    return always * HOURS_PER_MONTH + rare * RARE_METRIC_HOURS


def detector_cost(inputs: CostInputs) -> dict[str, float]:
    records = inputs.writes_per_second * SECONDS_PER_MONTH
    shard_count = shards(inputs)
    invocations = consumer_invocations(inputs)
    vcpu = min(1.0, inputs.memory_mb / 1769)
    per_record = CPU_SECONDS_PER_RECORD + inputs.counted_indexes * CPU_SECONDS_PER_RECORD_PER_GSI
    seconds = records * per_record / vcpu + invocations * INVOCATION_OVERHEAD_SECONDS
    windows = shard_count * SECONDS_PER_MONTH / inputs.window_seconds
    stats_writes = windows * stats_writes_per_shard_window(inputs)
    item_units, _entry_units = stats_units(inputs)
    ttl = inputs.ttl_deletes_per_second * SECONDS_PER_MONTH
    archive_objects = min(ttl, invocations)
    lookups_per_table = SECONDS_PER_MONTH / INCIDENTS_READ_SECONDS + SECONDS_PER_MONTH / LAYOUT_READ_SECONDS
    lookups_per_table += judge_looks(inputs)
    other_reads = inputs.tables * lookups_per_table + shard_count * SECONDS_PER_MONTH / LAYOUT_REFRESH_SECONDS
    alarms, dashboards = (LEAN_ALARMS, 0) if inputs.lean else (ALARMS, DASHBOARDS)
    return {
        "lambda_requests": invocations * PRICES["lambda_request"],
        "lambda_compute": seconds * inputs.memory_mb / 1024 * PRICES["lambda_gb_second_arm64"],
        **judge_cost(inputs),
        "stats_table_writes": stats_writes * item_units * PRICES["dynamodb_write_request_unit"],
        **heads_cost(inputs),
        "stats_other_reads": other_reads * 0.5 * PRICES["dynamodb_read_request_unit"],
        # ~2 KB per window kept for the retention period
        "stats_table_storage": windows * RETENTION_DAYS / 30 * 2e-6 * PRICES["dynamodb_storage_gb_month"],
        "sns": 1000 * PRICES["sns_publish"],  # alerts are rare: 1,000 a month is generous
        "archive_puts": archive_objects * PRICES["s3_put"],
        "archive_storage_first_month": ttl * inputs.avg_item_kb * 0.25 / 1e6 * PRICES["s3_standard_gb_month"],
        "cloudwatch_logs": log_bytes(inputs, invocations) / 1e9 * PRICES["cloudwatch_logs_ingested_gb"],
        "custom_metrics": custom_metric_hours(inputs) / HOURS_PER_MONTH * PRICES["cloudwatch_custom_metric_month"],
        "alarms_and_dashboard": (alarms + inputs.tables * UNREAD_ALARM_METRICS_PER_TABLE)
        * PRICES["cloudwatch_alarm_month"]
        + dashboards * PRICES["cloudwatch_dashboard_month"],
        "throttle_alarms": throttle_alarm_metrics(inputs) * PRICES["cloudwatch_alarm_month"],
        # What the stack turns on by default: the throttled-keys rules, and an event per throttled request.
        "contributor_insights_throttled_keys": sum(contributor_insights_throttled_cost(inputs).values())
        if inputs.insights_on
        else 0.0,
        **source_cost(inputs),
    }


def kinesis_stream(inputs: CostInputs) -> cost_kinesis.Stream:
    """The Kinesis stream the detector reads in a month: every change of its tables, over its shards."""
    record = cost_kinesis.record_bytes(inputs.kinesis, inputs.avg_item_kb)
    return cost_kinesis.Stream(inputs.writes_per_second * SECONDS_PER_MONTH, record, shards(inputs))


def source_cost(inputs: CostInputs) -> dict[str, float]:
    """Reading the changes: DynamoDB Streams' GetRecords by a Lambda trigger are free; a Kinesis stream's
    lines are ``cost_kinesis.kinesis_cost``'s, and each shard's recent changes in the stats table."""
    if inputs.source == "kinesis":
        return {**cost_kinesis.kinesis_cost(inputs.kinesis, kinesis_stream(inputs)), **recent_changes_cost(inputs)}
    return {"stream_reads": 0.0}


def recent_changes_cost(inputs: CostInputs) -> dict[str, float]:
    """``cost_kinesis.recent_changes_cost`` at the detector's prices."""
    return cost_kinesis.recent_changes_cost(
        inputs.writes_per_second,
        shards(inputs),
        inputs.window_seconds,
        PRICES["dynamodb_write_request_unit"],
        PRICES["dynamodb_read_request_unit"],
    )


def kinesis_figures(inputs: CostInputs) -> dict[str, Any] | None:
    """What ``--json`` says of a Kinesis source besides its lines: the stream's shape, the detector's share of
    each shard's shared read limits, DynamoDB's change data capture units (counted, not priced) and the prices."""
    if inputs.source != "kinesis":
        return None
    stream, kinesis = kinesis_stream(inputs), inputs.kinesis
    units = cost_kinesis.change_data_capture_units(inputs.writes_per_second, inputs.avg_item_kb, SECONDS_PER_MONTH)
    return {
        "mode": kinesis.stream_mode,
        "enhanced_fan_out": kinesis.enhanced_fan_out,
        "stream_made_by_stack": kinesis.stream_made_by_stack,
        "shards": stream.shards,
        "record_bytes": round(stream.record),
        "billed_written_kb_per_record": cost_kinesis.billed_written_kb(stream.record),
        "gb_read": round(stream.gb, 2),
        "shared_read_per_shard": cost_kinesis.shared_read_use(kinesis, stream, SECONDS_PER_MONTH),
        "change_data_capture_units": units if kinesis.stream_made_by_stack else None,
        "change_data_capture_priced": cost_kinesis.DYNAMODB_KINESIS_CDC_UNIT is not None,
        "prices": cost_kinesis.KINESIS_PRICES,
    }


def heads_cost(inputs: CostInputs, head_kb: float | None = None) -> dict[str, float]:
    """The window heads' index writes and the judge's reads of them in a month, with heads of ``head_kb``
    KB each (None: as measured, ``stats_units``): every look reads each table's heads once (one Query per
    bucket), so reads grow with the shard count, not its square."""
    shard_count = shards(inputs)
    windows = shard_count * SECONDS_PER_MONTH / inputs.window_seconds
    stats_writes = windows * stats_writes_per_shard_window(inputs)
    kb = stats_units(inputs)[1] if head_kb is None else head_kb
    per_table = shard_count / inputs.tables * JUDGE_WINDOWS_PER_LOOK * kb
    read_units = judge_looks(inputs) * inputs.tables * max(1, math.ceil(per_table / 4)) * 0.5
    return {
        "stats_heads_index_writes": stats_writes * kb * PRICES["dynamodb_write_request_unit"],
        "stats_heads_reads": read_units * PRICES["dynamodb_read_request_unit"],
    }


def throttle_alarm_metrics(inputs: CostInputs) -> int:
    """Alarm metrics of infra/throttle_alarms.py: each table's, and one per GSI (none in a lean deployment)."""
    if inputs.lean:
        return 0
    return inputs.tables * THROTTLE_ALARMS_PER_SCOPE * (1 + inputs.gsis)


def log_bytes(inputs: CostInputs, invocations: float) -> float:
    """Bytes ingested by CloudWatch Logs in a month: Lambda's system records of each consumer invocation
    (unless its system log level is WARN), each consumer container's EMF line per minute (a container per
    shard), the judge's wake-ups with their system records. Error, alert and spool lines are rare and left
    out; the archive's per-object line is DEBUG (the ItemsArchived metric counts what it said)."""
    container_minutes = shards(inputs) * SECONDS_PER_MONTH / 60
    emf = container_minutes * (EMF_LINE_BYTES + inputs.counted_indexes * EMF_BYTES_PER_INDEX)
    platform = 0.0 if inputs.consumer_system_log_level == "WARN" else invocations * PLATFORM_BYTES_PER_INVOCATION
    return platform + emf + judge_log_bytes(inputs)


def judge_log_bytes(inputs: CostInputs) -> float:
    """The judge's part of ``log_bytes``: each wake-up's lines and Lambda's system records (its log level is
    Lambda's INFO), whatever the traffic."""
    wakes = judge_looks(inputs) + JUDGE_WATCHDOG_RUNS_PER_MONTH
    return wakes * (JUDGE_LOG_BYTES_PER_LOOK + PLATFORM_BYTES_PER_INVOCATION)


def sustained_records_per_second(inputs: CostInputs) -> float:
    """What one shard's function keeps up with (records/s of such items): full batches back to back,
    each costing its records' CPU at this memory's share of a vCPU plus the invocation overhead."""
    vcpu = min(1.0, inputs.memory_mb / 1769)
    per_record = CPU_SECONDS_PER_RECORD + inputs.counted_indexes * CPU_SECONDS_PER_RECORD_PER_GSI
    batch_seconds = inputs.batch_size * per_record / vcpu + INVOCATION_OVERHEAD_SECONDS
    return inputs.batch_size / batch_seconds


# Contributor Insights' rules per table or GSI. "DynamoDB creates the following rules on your
# behalf": most accessed items (partition key, PKC), most throttled keys (partition key, PKT), and,
# for a table or index with a sort key, most accessed and most throttled keys (partition and sort
# keys, SKC and SKT) (DynamoDB developer guide, "CloudWatch Contributor Insights for DynamoDB: How
# it works"; DescribeContributorInsights lists 2 rules for a table or index without a sort key, 4
# with one). Enabling it on a GSI is a separate UpdateContributorInsights call with its own rules.
CI_RULES_PARTITION_KEY = 2
CI_RULES_SORT_KEY = 2
# Throttled-keys mode: "In this mode, DynamoDB tracks only: Most throttled items" and it "focuses
# exclusively on throttled requests by only processing events when throttling occurs" (same page):
# the throttled rules alone (PKT, and SKT with a sort key), and an event per throttled request only.
CI_THROTTLED_RULES_PARTITION_KEY = 1
CI_THROTTLED_RULES_SORT_KEY = 1


def contributor_insights_rules(inputs: CostInputs) -> int:
    per_target = CI_RULES_PARTITION_KEY + (CI_RULES_SORT_KEY if inputs.sort_keys else 0)
    return inputs.tables * (1 + inputs.gsis) * per_target


def contributor_insights_throttled_rules(inputs: CostInputs) -> int:
    per_target = CI_THROTTLED_RULES_PARTITION_KEY + (CI_THROTTLED_RULES_SORT_KEY if inputs.sort_keys else 0)
    return inputs.tables * (1 + inputs.gsis) * per_target


def contributor_insights_cost(inputs: CostInputs) -> dict[str, float]:
    """Accessed-and-throttled-keys mode: every read and write is an event, plus the rules."""
    events = (inputs.writes_per_second + inputs.reads_per_second) * SECONDS_PER_MONTH
    return {
        "rules": contributor_insights_rules(inputs) * PRICES["contributor_insights_rule_month"],
        "events": events * PRICES["contributor_insights_event"],
    }


def contributor_insights_throttled_cost(inputs: CostInputs) -> dict[str, float]:
    """Throttled-keys mode: its throttled-keys rules, and an event per throttled request
    (``throttled_per_second``; 0 by default: the model cannot know them) at the same event price."""
    return {
        "rules": contributor_insights_throttled_rules(inputs) * PRICES["contributor_insights_rule_month"],
        "events": inputs.throttled_per_second * SECONDS_PER_MONTH * PRICES["contributor_insights_event"],
    }


def estimate(inputs: CostInputs) -> dict[str, Any]:
    inputs.validate()
    ours = detector_cost(inputs)
    theirs = contributor_insights_cost(inputs)
    throttled = contributor_insights_throttled_cost(inputs)
    return {
        "inputs": asdict(inputs),
        "shards": shards(inputs),
        "sustained_records_per_second_per_shard": round(sustained_records_per_second(inputs)),
        "contributor_insights_rules": contributor_insights_rules(inputs),
        "contributor_insights_throttled_keys_rules": contributor_insights_throttled_rules(inputs),
        "throttle_alarm_metrics": throttle_alarm_metrics(inputs),
        # The heads' lines are priced at the measured head size (``stats_units``); this is what they cost if
        # every head were the largest the code can store (HEAD_MAX_KB): their upper bound.
        "head_kb": {"measured": stats_units(inputs)[1], "largest": HEAD_MAX_KB},
        "stats_heads_at_largest": round(sum(heads_cost(inputs, HEAD_MAX_KB).values()), 2),
        "prices": PRICES,
        "prices_dated": PRICES_DATED,
        "source": inputs.source,
        "kinesis": kinesis_figures(inputs),
        "detector": {k: round(v, 2) for k, v in ours.items()},
        "detector_total": round(sum(ours.values()), 2),
        # How many times the detector's total Contributor Insights' full mode costs
        "contributor_insights_ratio": round(sum(theirs.values()) / sum(ours.values()), 1),
        "lean": inputs.lean,
        "judge": {
            "memory_mb": inputs.judge_memory_mb,
            "look_seconds": round(judge_look_seconds(inputs), 2),
            "keeps_up": judge_keeps_up(inputs),
            "memory_needed_mb": judge_memory_needed(inputs),
        },
        "contributor_insights": {k: round(v, 2) for k, v in theirs.items()},
        "contributor_insights_total": round(sum(theirs.values()), 2),
        "contributor_insights_throttled_keys": {k: round(v, 2) for k, v in throttled.items()},
        "contributor_insights_throttled_keys_total": round(sum(throttled.values()), 2),
    }
