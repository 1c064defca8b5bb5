"""Names and defaults shared by the CDK app, the local replay and the docs.

Pure constants, no CDK import: ``hotkeys replay`` reads the same event source
mapping settings the stack deploys, so local and deployed behaviour cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass

POWERTOOLS_VERSION = "3.37.0"  # must equal the aws-lambda-powertools pin in pyproject.toml (tested)
LAMBDA_RUNTIME = "python3.13"
LAMBDA_ARCHITECTURE = "arm64"
HANDLER = "detector.app.handler"
FUNCTION_ASSET_DIR = "functions"

DEFAULT_WINDOW_SECONDS = 60
DEFAULT_STATS_RETENTION_DAYS = 14
DEFAULT_ARCHIVE_PREFIX = "ttl-archive/"
DEFAULT_ARCHIVE_TRANSITION_DAYS = 30
DEMO_TABLE_TTL_ATTRIBUTE = "expireAt"
STREAM_RETENTION_HOURS = 24


@dataclass(frozen=True)
class EventSourceSettings:
    """How Lambda reads each stream shard. Chosen for the cost targets in docs/decisions.md."""

    batch_size: int = 1000
    max_batching_window_seconds: int = 5
    tumbling_window_seconds: int = DEFAULT_WINDOW_SECONDS
    bisect_batch_on_error: bool = True
    retry_attempts: int = 3
    max_record_age_hours: int = 6
    report_batch_item_failures: bool = True
    starting_position: str = "TRIM_HORIZON"


EVENT_SOURCE = EventSourceSettings()
# Alarm on iterator age well before records fall out of the 24 h stream (and the 6 h record age).
ITERATOR_AGE_ALARM_MS = 15 * 60 * 1000
