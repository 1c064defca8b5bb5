"""``hotkeys cost``: the detector's monthly cost next to Contributor Insights' for the same traffic.

Prices are inputs, listed and dated below (us-east-1 list prices as published on the AWS
pricing pages; Contributor Insights' rule and event prices as reported by third-party
pricing write-ups, not verified against AWS here). Update ``PRICES`` when they change.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from hotkeys.deployment import EVENT_SOURCE, JUDGE_TIMEOUT_SECONDS
from hotkeys.detector.alerts import judge
from hotkeys.detector.alerts.judge import LOOK_DELAY_SECONDS
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
    "cloudwatch_custom_metric_month": 0.30,  # first 10,000 metrics
    "cloudwatch_alarm_month": 0.10,  # standard resolution
    "cloudwatch_dashboard_month": 3.00,
    "contributor_insights_rule_month": 0.50,
    "contributor_insights_event": 0.03 / 1e6,
    "cloudwatch_get_metric_data_metric": 0.01 / 1000,  # per metric requested
}
SECONDS_PER_MONTH = 30 * 86_400
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
# are rare and left out),
EMF_LINE_BYTES = 900
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
# The metrics the handler publishes (hotkeys.detector.handlers.app._record_metrics), one dimension set each.
CUSTOM_METRICS = 15
# The judge's (hotkeys.detector.handlers.judge_app.handler): looks, alerts published, failed looks, look lateness.
JUDGE_CUSTOM_METRICS = 4
# The stack's alarms (infra/monitoring.py: iterator age, dead letters, errors, throttles, records
# without images, spooled archive objects, records out of order, carried states discarded, items whose TTL
# DynamoDB ignores; and the
# throttle explainer's failed invocations, which infra/stack.py has it watch; the judge's errors, missing
# runs and failed looks, infra/judge.py; one more per alert
# subscriber with its own undelivered-message queue, not counted here) and its one dashboard; the infra
# tests check both against the synthesized template. List prices, before the free tier (10 alarms and 3
# dashboards per account).
ALARMS = 13
DASHBOARDS = 1
# infra/throttle_alarms.py: one alarm per DynamoDB throttle metric (read and write, by cause: key range,
# on-demand maximum, provisioned, account limit) on each table, and as many again for its GSIs: per GSI
# where the stack knows them, else one Metrics Insights alarm per metric over all of the table's GSIs.
# Priced per alarm metric (a Metrics Insights alarm as one per GSI it analyzes, and at least one).
THROTTLE_ALARMS_PER_SCOPE = len(THROTTLE_METRICS)
# The stats table and the judge at scale come from the committed simulation docs/scale-latest.json
# (`python -m bench.scale`, SCALE_OUTPUT); tests/unit/test_cost_sources.py recomputes each figure:
SCALE_OUTPUT = "docs/scale-latest.json"
# write units of a snapshot write (the largest of its sized snapshots: 400-key summaries of Zipf traffic),
STATS_WRU_PER_WRITE = 4
# windows of heads a look reads per shard in the steady state (the latest, and the one before until
# it settled twice: docs/decisions.md §64), at 1,000 shards,
JUDGE_WINDOWS_PER_LOOK = 1.2
# and the judge's CPU per head read (decoded and merged), at one full vCPU, times CPU_MARGIN, rounded up
# to 10 µs, at 1,000 shards.
JUDGE_CPU_SECONDS_PER_HEAD = 710e-6
# A head as the window-heads index copies it (snapshots.head_of): its summaries within HEAD_BYTES
# (16 KB) before compression, a few KB compressed for keys of tens of bytes, plus index names and
# totals (the simulation's heads, without indexes, take 2 write units). Each snapshot write writes it
# to the index too; each look of the judge reads the heads of the windows it has not kept
# (eventually consistent: half a read unit per 4 KB).
HEAD_KB = 3
# The largest head the code can store, in write units (KB) of its window-heads index entry: every
# summary's share of HEAD_BYTES filled with keys zlib cannot shrink, MAX_COUNTED_INDEXES index names of
# 255 characters, the item figures of HEAD_ITEM_KEYS keys, the longest table and shard names.
# tests/unit/test_head_bound.py builds that head through snapshots and checks this figure against it.
HEAD_MAX_KB = 23
# The judge: one run a minute (its schedule), billed from its start to the end of its last look: the
# minute's last flush boundary plus LOOK_DELAY_SECONDS, plus that look.
JUDGE_RUNS_PER_MONTH = SECONDS_PER_MONTH // 60
JUDGE_MEMORY_MB = 256  # the stack's default (-c judgeMemoryMb)
# What a run writes to CloudWatch Logs: its EMF line, its "judge run" line and Lambda's two system
# records (tests/integration/test_log_volume.py measures the first two).
JUDGE_LOG_BYTES_PER_RUN = 1200
# Other stats-table reads, each a Query of half a read unit: the judge's open incidents and layouts
# (every INCIDENTS_READ_SECONDS and LAYOUT_READ_SECONDS per table), a consumer's layout (per shard, on
# average every layout.REFRESH_SECONDS less half its spread: layout.refresh_due).
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
    # The stack turns Contributor Insights on in throttled-keys mode (-c throttledKeyInsights, default true)
    throttled_key_insights: bool = True
    judge_memory_mb: int = JUDGE_MEMORY_MB
    # The consumer's system log level (-c consumerSystemLogLevel): at WARN Lambda sends no platform
    # records of its invocations; DEBUG sends more than INFO's two, priced as INFO (a lower bound).
    consumer_system_log_level: str = "WARN"

    @property
    def counted_indexes(self) -> int:
        """Indexes the consumer counts per table: the GSIs and the what-if proposals."""
        return self.gsis + self.proposals

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


def stats_writes_per_shard_window(inputs: CostInputs) -> int:
    """One snapshot per flush interval of event time, the last being the window's final one: 5 for 60 s
    windows flushed every 12 s."""
    return math.ceil(inputs.window_seconds / inputs.flush_seconds)


def shards(inputs: CostInputs) -> int:
    """Stream shards ≈ partitions: at least one per 1,000 WCU/s (plus one per 3,000 RCU/s, ignored)."""
    wcu = inputs.writes_per_second * math.ceil(inputs.avg_item_kb)
    return max(inputs.tables, math.ceil(wcu / 1000))


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


def detector_cost(inputs: CostInputs) -> dict[str, float]:
    records = inputs.writes_per_second * SECONDS_PER_MONTH
    shard_count = shards(inputs)
    invocations = consumer_invocations(inputs)
    vcpu = min(1.0, inputs.memory_mb / 1769)
    per_record = CPU_SECONDS_PER_RECORD + inputs.counted_indexes * CPU_SECONDS_PER_RECORD_PER_GSI
    seconds = records * per_record / vcpu + invocations * INVOCATION_OVERHEAD_SECONDS
    windows = shard_count * SECONDS_PER_MONTH / inputs.window_seconds
    stats_writes = windows * stats_writes_per_shard_window(inputs)
    ttl = inputs.ttl_deletes_per_second * SECONDS_PER_MONTH
    archive_objects = min(ttl, invocations)
    # The judge: billed from each run's start to the end of its last look (at most its timeout).
    last_look = 60 - inputs.flush_seconds + LOOK_DELAY_SECONDS
    judge_seconds = JUDGE_RUNS_PER_MONTH * min(JUDGE_TIMEOUT_SECONDS, last_look + judge_look_seconds(inputs))
    lookups_per_table = SECONDS_PER_MONTH / INCIDENTS_READ_SECONDS + SECONDS_PER_MONTH / LAYOUT_READ_SECONDS
    other_reads = inputs.tables * lookups_per_table + shard_count * SECONDS_PER_MONTH / LAYOUT_REFRESH_SECONDS
    return {
        "lambda_requests": invocations * PRICES["lambda_request"],
        "lambda_compute": seconds * inputs.memory_mb / 1024 * PRICES["lambda_gb_second_arm64"],
        "judge_lambda": JUDGE_RUNS_PER_MONTH * PRICES["lambda_request"]
        + judge_seconds * inputs.judge_memory_mb / 1024 * PRICES["lambda_gb_second_arm64"],
        "stats_table_writes": stats_writes * STATS_WRU_PER_WRITE * PRICES["dynamodb_write_request_unit"],
        **heads_cost(inputs, HEAD_KB),
        "stats_other_reads": other_reads * 0.5 * PRICES["dynamodb_read_request_unit"],
        # ~2 KB per window kept for the retention period
        "stats_table_storage": windows * RETENTION_DAYS / 30 * 2e-6 * PRICES["dynamodb_storage_gb_month"],
        "sns": 1000 * PRICES["sns_publish"],  # alerts are rare: 1,000 a month is generous
        "archive_puts": archive_objects * PRICES["s3_put"],
        "archive_storage_first_month": ttl * inputs.avg_item_kb * 0.25 / 1e6 * PRICES["s3_standard_gb_month"],
        "cloudwatch_logs": log_bytes(inputs, invocations) / 1e9 * PRICES["cloudwatch_logs_ingested_gb"],
        # and one per counted GSI (IndexWriteUnits/<table>/<index>)
        "custom_metrics": (CUSTOM_METRICS + JUDGE_CUSTOM_METRICS + inputs.tables * inputs.counted_indexes)
        * PRICES["cloudwatch_custom_metric_month"],
        # the judge reads the consumer's IteratorAge once a minute (GetMetricData, one metric)
        "judge_lag_reads": JUDGE_RUNS_PER_MONTH * PRICES["cloudwatch_get_metric_data_metric"],
        "alarms_and_dashboard": ALARMS * PRICES["cloudwatch_alarm_month"]
        + DASHBOARDS * PRICES["cloudwatch_dashboard_month"],
        "throttle_alarms": throttle_alarm_metrics(inputs) * PRICES["cloudwatch_alarm_month"],
        # What the stack turns on by default: the throttled-keys rules, and an event per throttled request.
        "contributor_insights_throttled_keys": sum(contributor_insights_throttled_cost(inputs).values())
        if inputs.throttled_key_insights
        else 0.0,
        "stream_reads": 0.0,  # GetRecords by a Lambda trigger are free
    }


def heads_cost(inputs: CostInputs, head_kb: int) -> dict[str, float]:
    """The window heads' index writes and the judge's reads of them in a month, with heads of ``head_kb``
    KB each: every look reads each table's heads once (one Query per bucket), so reads grow with the shard
    count, not its square."""
    shard_count = shards(inputs)
    windows = shard_count * SECONDS_PER_MONTH / inputs.window_seconds
    stats_writes = windows * stats_writes_per_shard_window(inputs)
    looks = SECONDS_PER_MONTH / inputs.flush_seconds
    per_table = shard_count / inputs.tables * JUDGE_WINDOWS_PER_LOOK * head_kb
    read_units = looks * inputs.tables * max(1, math.ceil(per_table / 4)) * 0.5
    return {
        "stats_heads_index_writes": stats_writes * head_kb * PRICES["dynamodb_write_request_unit"],
        "stats_heads_reads": read_units * PRICES["dynamodb_read_request_unit"],
    }


def throttle_alarm_metrics(inputs: CostInputs) -> int:
    """Alarm metrics of infra/throttle_alarms.py: each table's, and its GSIs' (at least one)."""
    return inputs.tables * THROTTLE_ALARMS_PER_SCOPE * (1 + max(1, inputs.gsis))


def log_bytes(inputs: CostInputs, invocations: float) -> float:
    """Bytes ingested by CloudWatch Logs in a month: Lambda's system records of each consumer invocation
    (unless its system log level is WARN), each consumer container's EMF line per minute (a container per
    shard), the judge's runs with their system records. Error, alert and spool lines are rare and left
    out; the archive's per-object line is DEBUG (the ItemsArchived metric counts what it said)."""
    container_minutes = shards(inputs) * SECONDS_PER_MONTH / 60
    emf = container_minutes * (EMF_LINE_BYTES + inputs.counted_indexes * EMF_BYTES_PER_INDEX)
    judge_bytes = JUDGE_RUNS_PER_MONTH * (JUDGE_LOG_BYTES_PER_RUN + PLATFORM_BYTES_PER_INVOCATION)
    platform = 0.0 if inputs.consumer_system_log_level == "WARN" else invocations * PLATFORM_BYTES_PER_INVOCATION
    return platform + emf + judge_bytes


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
        # The heads' lines are priced at HEAD_KB per head; this is what they cost if every head were the
        # largest the code can store (HEAD_MAX_KB): their upper bound.
        "head_kb": {"assumed": HEAD_KB, "largest": HEAD_MAX_KB},
        "stats_heads_at_largest": round(sum(heads_cost(inputs, HEAD_MAX_KB).values()), 2),
        "prices": PRICES,
        "prices_dated": PRICES_DATED,
        "detector": {k: round(v, 2) for k, v in ours.items()},
        "detector_total": round(sum(ours.values()), 2),
        # How many times the detector's total Contributor Insights' full mode costs
        "contributor_insights_ratio": round(sum(theirs.values()) / sum(ours.values()), 1),
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
