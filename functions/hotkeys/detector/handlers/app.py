"""Lambda entry point: configuration → event → one call into the pipeline → response.

The container's settings and ports are built once, at the first invocation, from the
function's environment (``load_settings``) and boto3's default session. ``build_handler``
makes the same decorated handler around other settings and ports: the CLI's replay and
the tests run exactly this code without touching the process environment.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.config import Settings, load_settings
from hotkeys.detector.consumer.pipeline import BatchOutcome, Ports, parse_event, process_batch
from hotkeys.detector.handlers.wiring import build_ports
from hotkeys.detector.names import INDEX_METRIC_PREFIX, READ_METRIC_PREFIX, metric_name
from hotkeys.detector.observability import logger, metrics, tracer

Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


# A container sums its invocations' metrics and writes them as one EMF line at most every this many
# seconds (the dashboard reads them per minute): a line per invocation was the largest item of the
# detector's bill. Counts an alarm watches are written at once (docs/decisions.md §64).
METRICS_SECONDS = 60
_SUMMED = (
    "counted",
    "duplicates",
    "ttl_deletes",
    "malformed",
    "without_images",
    "stats_writes",
    "archived",
    "out_of_order",
    "spooled",
    "drained",
    "alerts_published",
    "states_discarded",
    "ttl_ignored",
    "beyond_horizon",
    "copies",
)
_LARGEST = ("summary_size", "keys_over_one_percent")
# (Items whose TTL DynamoDB ignores can come in every batch of a table for good: they wait for the minute's
# line, which the TtlIgnored alarm's five-minute period still sees.)
_AT_ONCE = ("malformed", "without_images", "out_of_order", "spooled", "states_discarded")


class MetricsBuffer:
    """The container's metrics since its last EMF line. What it holds when the container is reclaimed
    (under a minute of routine counts) is not written; counts an alarm watches never wait."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.totals = BatchOutcome()
        self._holding = False
        self._flushed: float | None = None

    def add(self, outcome: BatchOutcome) -> None:
        now = self._clock()
        self._holding = True
        totals = self.totals
        for name in _SUMMED:
            setattr(totals, name, getattr(totals, name) + getattr(outcome, name))
        for name in _LARGEST:
            setattr(totals, name, max(getattr(totals, name), getattr(outcome, name)))
        for index, wcu in outcome.index_wcu.items():
            totals.index_wcu[index] = totals.index_wcu.get(index, 0) + wcu
        for table, read in outcome.records_read.items():
            totals.records_read[table] = totals.records_read.get(table, 0) + read
        # At most one line a minute, and the first after a quiet minute at once: a table that writes now
        # and then shows its reads in the minutes it wrote, which its StreamUnread alarm relies on.
        last = self._flushed
        if last is None or now - last >= METRICS_SECONDS or any(getattr(outcome, name) for name in _AT_ONCE):
            self.flush()

    def flush(self) -> None:
        if not self._holding:
            return
        _record_metrics(self.totals)
        metrics.flush_metrics()
        self.totals, self._holding, self._flushed = BatchOutcome(), False, self._clock()


@dataclass(frozen=True)
class Container:
    """What one Lambda container keeps between invocations."""

    settings: Settings
    ports: Ports
    metrics: MetricsBuffer = field(default_factory=MetricsBuffer)


def build_handler(container: Callable[[], Container]) -> Handler:
    """The handler, with its settings and ports from ``container`` (called at each invocation; cache it)."""

    @logger.inject_lambda_context(log_event=False, clear_state=True)
    @tracer.capture_lambda_handler(capture_response=False)
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        current = container()
        batch = parse_event(event)
        logger.append_keys(shard_id=batch.shard_id, records=len(batch.records))
        outcome = process_batch(batch, current.settings, current.ports)
        current.metrics.add(outcome)
        return outcome.response()

    decorated: Handler = handler  # the decorators keep the signature; their stubs say Any
    return decorated


def container_from(environment: Mapping[str, str], aws: AwsClients) -> Container:
    settings = load_settings(environment)
    return Container(settings, build_ports(settings, aws))


@cache  # once per container: the environment of a Lambda function does not change while it runs
def _this_container() -> Container:
    return container_from(os.environ, AwsClients())


# CloudWatch bills a custom metric for each hour in which it is published (prorated): a metric in every
# line costs all month. The line always carries RecordsCounted (the dashboard's heartbeat); a count of
# what happens now and then, or should never happen, is published only when it is not zero, so it costs
# only the hours in which something happened (an alarm on one treats missing data as not breaching).
RARE_METRICS = (
    ("DuplicateRecordsSkipped", "duplicates"),
    ("TtlDeletions", "ttl_deletes"),
    ("MalformedRecords", "malformed"),
    ("RecordsWithoutImages", "without_images"),
    ("ItemsArchived", "archived"),
    ("RecordsOutOfOrder", "out_of_order"),
    ("ArchiveObjectsSpooled", "spooled"),
    ("ArchiveObjectsDrained", "drained"),
    ("StatesDiscarded", "states_discarded"),
    ("TtlIgnoredItems", "ttl_ignored"),
    ("AlertsPublished", "alerts_published"),
    ("ChangesBeyondDedupeHorizon", "beyond_horizon"),
    ("ChangeCopiesSkipped", "copies"),
)
# Figures of every flush that no alarm watches: properties of the same line (CloudWatch Logs Insights
# queries them; the dashboard's log widget shows them), not metrics.
LINE_PROPERTIES = (
    ("StatsWrites", "stats_writes"),
    ("SummarySize", "summary_size"),
    ("KeysOverOnePercent", "keys_over_one_percent"),
)


def _record_metrics(outcome: BatchOutcome) -> None:
    metrics.add_metric(name="RecordsCounted", unit=MetricUnit.Count, value=outcome.counted)
    for name, counter in RARE_METRICS:
        value = getattr(outcome, counter)
        if value:
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
    for name, figure in LINE_PROPERTIES:
        metrics.add_metadata(key=name, value=getattr(outcome, figure))
    # One metric per counted index that took writes, named by table and index (both bounded, unlike
    # partition keys), in the same metrics line: the dashboard finds them with a search expression.
    for (table, index), wcu in outcome.index_wcu.items():
        if wcu:
            metrics.add_metric(name=index_metric_name(table, index), unit=MetricUnit.Count, value=wcu)
    # One per table read, the same way: its StreamUnread alarm (infra/stream_unread.py) weighs it against
    # the table's own writes.
    for table, read in outcome.records_read.items():
        metrics.add_metric(name=metric_name(READ_METRIC_PREFIX, table), unit=MetricUnit.Count, value=read)


def index_metric_name(table: str, index: str) -> str:
    """``IndexWriteUnits/<table>/<index>`` (``names.metric_name``)."""
    return metric_name(INDEX_METRIC_PREFIX, table, index)


handler = build_handler(_this_container)

# Young collections run after this many new container objects (CPython's default: 700). The runtime's
# parse of a 100-record event of 40 KB nested items allocates hundreds of thousands of them, and the
# default ran enough young collections to promote the event's objects into full collections, most of
# that parse's time (docs/decisions.md §21; figures in docs/measurements.md, from `python -m
# bench.lambda_process --part matrix`). Garbage without cycles is freed by reference counting either
# way; only cyclic garbage waits longer (at most 10,000 objects).
YOUNG_COLLECTION_THRESHOLD = 10_000


def settle_heap() -> None:
    """Initialisation is done. Lambda parses each event in this process before calling the handler, and
    a 1,000-record event allocates enough objects to trigger full collections, which would scan every
    module and client created so far on every one of them. Frozen, those are skipped, which cuts the
    total CPU per record (parse + GC + handler; docs/decisions.md §21)."""
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])


settle_heap()
