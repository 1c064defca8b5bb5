"""How the stack deploys the detector: the event source mapping, the runtime, the reading plan.

Pure constants, no CDK import, installed with the CLI: ``hotkeys replay`` emulates the
same event source mapping the stack deploys and ``hotkeys doctor`` checks a deployment
against it, so local and deployed behaviour cannot drift. The function's own settings
are in ``hotkeys.detector.config``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hotkeys.detector.config import default_of

POWERTOOLS_VERSION = "3.37.0"  # must equal the aws-lambda-powertools pin in pyproject.toml (tested)
LAMBDA_RUNTIME = "python3.13"
LAMBDA_ARCHITECTURE = "arm64"
# AWS's public parameter naming the managed Powertools layer for exactly this runtime, architecture and release.
POWERTOOLS_PARAMETER = f"/aws/service/powertools/python/{LAMBDA_ARCHITECTURE}/{LAMBDA_RUNTIME}/{POWERTOOLS_VERSION}"
HANDLER = "hotkeys.detector.handlers.app.handler"
JUDGE_HANDLER = "hotkeys.detector.handlers.judge_app.handler"
# The judge's watchdog (an EventBridge rule: alerts.look_chain) and its function: one look per invocation,
# whose timeout holds the longest look the cost model expects at 10,000 shards at the default memory (a
# deploy's transient: tests/unit/test_judge_app.py, docs/scale.md). A look that long delays the next one
# (the chain sends its message when the look ends); it is billed only as long as it runs.
JUDGE_SCHEDULE_SECONDS = 60
JUDGE_TIMEOUT_SECONDS = 300
# The judge's memory by default (-c judgeMemoryMb; `hotkeys cost` prices it): its share of a vCPU.
JUDGE_MEMORY_MB = 256
# The judge's queue keeps a message hidden this long while an invocation has it (Lambda requires at least
# the function's timeout), and keeps one past SQS's longest delay (a message's expiry counts from when it was
# sent): a message that comes after its chain was given up is dropped by the judge (alerts.look_chain).
JUDGE_QUEUE_VISIBILITY_SECONDS = 2 * JUDGE_TIMEOUT_SECONDS
JUDGE_MESSAGE_RETENTION_SECONDS = 900 + 60
DEMO_TABLE_TTL_ATTRIBUTE = "expireAt"
STREAM_RETENTION_HOURS = 24


@dataclass(frozen=True)
class EventSourceSettings:
    """How Lambda reads each stream shard. Chosen in docs/decisions.md §7."""

    batch_size: int = 1000
    max_batching_window_seconds: int = 5
    # The deployed mapping's window is the function's WINDOW_SECONDS (one setting, two readers).
    tumbling_window_seconds: int = default_of("window_seconds")
    bisect_batch_on_error: bool = True
    retry_attempts: int = 3
    # Where a new mapping starts and when a record is given up: per source, see reading_plan().
    max_record_age_hours: int = 6
    report_batch_item_failures: bool = True


EVENT_SOURCE = EventSourceSettings()
# The stack's stream mappings (infra/stream_mapping.py; physical id: the mapping's UUID), and those of a
# release before it, which a stack keeps until its next update.
STREAM_MAPPING_TYPE = "Custom::StreamMapping"
EARLIER_MAPPING_TYPE = "AWS::Lambda::EventSourceMapping"
MAPPING_TYPES = (STREAM_MAPPING_TYPE, EARLIER_MAPPING_TYPE)
# The physical id of a stream mapping the stack could not create yet (the mapping it displaced was still
# being deleted), followed by its stream's ARN: the next deploy creates it, the table's StreamUnread alarm
# names it until then.
NOT_CREATED_PREFIX = "not-created:"
# The stack's stream enablers (-c enableStream; infra/stream_enabler.py).
STREAM_ENABLER_TYPE = "Custom::DynamoDBStream"
# The stack's Kinesis streaming destinations (-c enableKinesis; infra/kinesis_streaming.py).
KINESIS_STREAMING_TYPE = "Custom::KinesisStreaming"
# Its physical id: KINESIS_STREAMING_ID_PREFIX:<table>:<stream ARN> (the CLI reads the table from it).
KINESIS_STREAMING_ID_PREFIX = "kinesis-streaming"
# A property of the stack's deploy-time resources that changes at every synth (infra.stream_enabler.redeploy_stamp),
# so that every deploy sends them an Update: the only way a redeploy repairs what changed outside the stack.
REDEPLOY_PROPERTY = "SynthesizedAt"
# A -c key that fixes its value (tests; a deploy that must not touch the mappings).
REDEPLOY_CONTEXT = "hotkeys:synthesizedAt"
STARTING_POSITIONS = ("TRIM_HORIZON", "LATEST")


@dataclass(frozen=True)
class ReadingPlan:
    starting_position: str
    max_record_age_hours: int


def reading_plan(new_table: bool, starting_position: str | None, max_record_age_hours: int | None) -> ReadingPlan:
    """Where the mapping starts reading a stream, and after how long it gives a record up.

    * A table the stack creates (demo): its stream holds nothing old, TRIM_HORIZON reads it all.
    * An existing table: LATEST by default. TRIM_HORIZON would replay up to 24 h of backlog,
      and with a 6 h record age send everything older than 6 h to the DLQ on day one
      (the DLQ and iterator-age alarms firing at once). `hotkeys watch --from trim-horizon`
      diagnoses the past 24 h without deploying anything.
    * TRIM_HORIZON chosen for an existing table (a backfill): the record age defaults to the
      stream's 24 h retention, so nothing is given up for age while the backlog drains.
    """
    position = starting_position or ("TRIM_HORIZON" if new_table else "LATEST")
    backfill = position == "TRIM_HORIZON" and not new_table
    age = max_record_age_hours or (STREAM_RETENTION_HOURS if backfill else EVENT_SOURCE.max_record_age_hours)
    return ReadingPlan(position, age)


# Alarm on iterator age well before records fall out of the 24 h stream (and the 6 h record age).
ITERATOR_AGE_ALARM_MS = 15 * 60 * 1000
