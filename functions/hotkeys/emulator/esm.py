"""An emulation of Lambda's event source mapping for stream shards: DynamoDB Streams' and Kinesis Data
Streams' (a table's changes sent to Kinesis), records told apart by ``positions``.

Each rule cites the Lambda developer guide ("Using AWS Lambda with Amazon DynamoDB":
sections "Error handling", "Tumbling windows", "Reporting batch item failures"). Where
the guide is silent the emulation takes a parameter, and the test suites run every value.
The guide's Kinesis page ("Using AWS Lambda with Amazon Kinesis") states the same rules in the same
words for a Kinesis shard: "Lambda processes records in each shard in order"; "Each batch contains
records from a single shard/data stream"; the "Error handling" paragraphs quoted below (retries, "Splitting
a batch does not count towards the retry quota", discarded batches' details sent to the destination);
"Time windows" (state, final invocation, resharding) and "Reporting batch item failures" (the lowest
sequence number is the checkpoint; bisect at the returned sequence number). Two differences, both from
that page: windows follow the Kinesis record's ``approximateArrivalTimestamp`` ("All records have an
approximate timestamp available that Lambda uses in boundary determinations": ``positions``), and the
on-failure destination gets ``KinesisBatchInfo`` (with ``approximateArrivalOfFirstRecord`` and
``approximateArrivalOfLastRecord``) instead of ``DDBStreamBatchInfo``.

Delivery
* Records of a shard arrive in order, in batches of at most ``batch_size``.
* "If your function returns an error, Lambda retries the batch until processing succeeds
  or the data expires" ... "until the records in the batch expire, exceed the maximum
  age, or reach the configured retry quota."
* "For function errors, you can also configure the event source mapping to split a failed
  batch into two batches ... Splitting a batch does not count towards the retry quota."
  A failed batch of two or more records is split (attempts unchanged); a failed single
  record is retried until ``retry_attempts`` retries are used.
* A timeout or a lost response is a function error like any other: Lambda never saw a
  success. (``Deliveries.lose_response``: the function's side effects happened all the same.)
* "When Lambda discards a batch of records that's too old or has exhausted all retries,
  Lambda sends details about the batch to the queue or topic" (``DeadLetter``: the
  coordinates, never the records), and the shard continues after that batch.

Tumbling windows
* "Lambda determines tumbling window boundaries based on the time when records were
  inserted into the stream." Alignment is not documented: ``window_offset_seconds``.
  Batches never span windows.
* "Each invocation receives a state" that "contains the aggregate result of the messages
  previously processed for the current window": the state the last successful invocation
  returned (a failed invocation returned none). The window ends with an invocation marked
  ``isFinalInvokeForWindow`` with no records.
* "If the response does not contain a state property, Lambda considers this a failed
  invocation."
* Final invocation: "After successful invocation, your function checkpoints the sequence
  number and stream processing continues. If invocation is unsuccessful, your Lambda
  function suspends further processing until a successful invocation." It is retried
  until it succeeds (``ShardStuck`` after ``max_final_attempts``: the iterator age grows).
* "Tumbling window aggregations do not support resharding. When the shard ends, Lambda
  considers the window closed, and the child shards start their own window in a fresh
  state." (``consume_lineage``.)

Partial batch responses
* "If the batchItemFailures array contains multiple items, Lambda uses the record with the
  lowest sequence number as the checkpoint. Lambda then retries all records starting from
  that checkpoint." With bisect on, "the batch is bisected at the returned sequence number
  and Lambda retries only the remaining records." An identifier that is not in the batch
  fails the whole batch. Such a retry counts against the retry quota.
* Not documented: which state the retry receives after a response carrying both
  ``batchItemFailures`` and ``state``. ``partial_failure_state`` is ``"returned"`` (that
  response's state) or ``"previous"`` (the state that invocation was given); the shard
  carries the same state on after the batch goes to the DLQ.

Not emulated: the maximum record age (there is no clock), throttles and service errors
that never reach the function ("This doesn't apply to service errors or throttles where
the batch didn't reach the function"), ParallelizationFactor > 1 (the stack refuses it
with a tumbling window).

``Deliveries`` holds the choices the documentation leaves to Lambda (batch sizes, a lost response,
a redelivered overlap, the order of a split's retries): by default a clean run, the one the replay
uses; the tests and benchmarks pass their own to play what production does (``tests/esm_faults.py``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from hotkeys.deployment import EVENT_SOURCE, EventSourceSettings
from hotkeys.emulator.positions import arrival_of, inserted_second, kinesis_body, sequence_of

Invoke = Callable[[dict[str, Any]], dict[str, Any]]
PartialFailureState = Literal["returned", "previous"]
PARTIAL_FAILURE_STATES: tuple[PartialFailureState, ...] = ("returned", "previous")
WindowClock = Literal["insertion", "record"]
WINDOW_CLOCKS: tuple[WindowClock, ...] = ("insertion", "record")
_END: Any = object()  # the end of a window's records (a malformed record may be None)


class Deliveries:
    """The delivery choices left to Lambda, made as in a clean run: full batches, every response seen,
    nothing redelivered, a split's halves in order. Subclasses make other choices."""

    def batch_size(self, limit: int) -> int:
        return limit

    def lose_response(self) -> bool:
        """The invocation ran but Lambda never saw its answer (timeout, crash after the work)."""
        return False

    def overlap(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Records of a successful batch that at-least-once delivery sends once more."""
        return []

    def second_half_first(self) -> bool:
        """A bisected batch's halves are retried later half first: "If records are processed more than
        once, they might be processed out of order" (the order of a split's retries is not documented)."""
        return False


class ShardStuck(RuntimeError):
    """A final invocation kept failing: the shard is suspended (in AWS its iterator age grows)."""


@dataclass
class DeadLetter:
    """What Lambda sends to the on-failure destination: batch coordinates only."""

    shard_id: str
    start_sequence: str
    end_sequence: str
    batch_size: int
    reason: str
    stream_arn: str | None = None
    # A Kinesis batch's first and last records' arrival times (ISO 8601, milliseconds); None: DynamoDB Streams.
    kinesis_arrivals: tuple[str, str] | None = None

    def batch_info(self) -> dict[str, Any]:
        """The batch's coordinates, as the destination's ``DDBStreamBatchInfo`` or ``KinesisBatchInfo`` holds them."""
        info: dict[str, Any] = {
            "shardId": self.shard_id,
            "startSequenceNumber": self.start_sequence,
            "endSequenceNumber": self.end_sequence,
        }
        if self.kinesis_arrivals is not None:
            first, last = self.kinesis_arrivals
            info |= {"approximateArrivalOfFirstRecord": first, "approximateArrivalOfLastRecord": last}
        return info | {"batchSize": self.batch_size, "streamArn": self.stream_arn}

    def to_message(self) -> dict[str, Any]:
        name = "KinesisBatchInfo" if self.kinesis_arrivals is not None else "DDBStreamBatchInfo"
        return {"requestContext": {"condition": self.reason, "approximateInvokeCount": 1}, name: self.batch_info()}


@dataclass
class ShardRun:
    invocations: int = 0
    function_errors: int = 0
    partial_failures: int = 0
    final_failures: int = 0
    dead_letters: list[DeadLetter] = field(default_factory=list)
    # What the function raised, as the Lambda runtime would log it ("<type>: <message>"), and how often.
    errors: dict[str, int] = field(default_factory=dict)


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _iso_milliseconds(epoch: float) -> str:
    """An arrival time as ``KinesisBatchInfo`` writes it (``2019-11-14T00:38:04.835Z``)."""
    return datetime.fromtimestamp(round(epoch, 3), tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _window_groups(
    records: Iterable[dict[str, Any]], seconds: int, offset: int, clock: WindowClock = "insertion"
) -> Iterator[tuple[int, Iterator[dict[str, Any]]]]:
    """(window start, its records) in stream order; a record without a creation time stays in the
    window before it. Lazy: a window's records are read as they are delivered.

    Windows follow "the time when records were inserted into the stream". A record's
    ``ApproximateCreationDateTime`` is not documented as monotonic, and the guide does not say what a
    window does with one that steps back: ``clock`` "insertion" keeps it in the current window
    (insertion time only moves forward), "record" puts it in its own, so a window start already
    closed opens again, with a fresh state (both readings run in the exactly-once suite)."""
    current = 0

    def start_of(record: dict[str, Any]) -> int:
        nonlocal current
        # A time no window can hold (not a number, or outside what a date can say) is the record's own
        # problem: the function dead-letters it; here it stays in the window before it.
        created = inserted_second(record)
        if created is not None:
            start = created - (created - offset) % seconds
            current = start if clock == "record" else max(current, start)
        return current

    return itertools.groupby(records, key=start_of)


@dataclass(frozen=True)
class Delivery:
    """The emulation's choices where the documentation leaves room."""

    partial_failure_state: PartialFailureState = "returned"
    window_offset_seconds: int = 0
    window_clock: WindowClock = "insertion"
    max_final_attempts: int = 1000


class ShardConsumer:
    """Feeds one shard's records to ``invoke`` the way the event source mapping would."""

    def __init__(
        self,
        invoke: Invoke,
        shard_id: str,
        settings: EventSourceSettings = EVENT_SOURCE,
        deliveries: Deliveries | None = None,
        stream_arn: str | None = None,
        delivery: Delivery | None = None,
    ) -> None:
        self._invoke = invoke
        self._shard_id = shard_id
        self._settings = settings
        self._deliveries = deliveries or Deliveries()
        self._stream_arn = stream_arn
        self._delivery = delivery or Delivery()
        self.run = ShardRun()

    def consume(self, records: Iterable[dict[str, Any]]) -> ShardRun:
        seconds = self._settings.tumbling_window_seconds
        if not seconds:
            self._consume_window(records, None)
            return self.run
        for start, window_records in _window_groups(
            records, seconds, self._delivery.window_offset_seconds, self._delivery.window_clock
        ):
            self._consume_window(window_records, (start, start + seconds))
        return self.run

    def _consume_window(self, records: Iterable[dict[str, Any]], window: tuple[int, int] | None) -> None:
        state: dict[str, Any] = {}
        remaining = iter(records)
        following = next(remaining, _END)
        while following is not _END:
            size = self._deliveries.batch_size(self._settings.batch_size)
            batch = [following, *itertools.islice(remaining, size - 1)]
            following = next(remaining, _END)
            state = self._deliver(batch, window, state)
            again = self._deliveries.overlap(batch)
            if again:
                state = self._deliver(again, window, state)
        if window is not None:
            self._final(window, state)

    def _final(self, window: tuple[int, int], state: dict[str, Any]) -> None:
        for _attempt in range(self._delivery.max_final_attempts):
            if self._call([], window, state, final=True) is not None:
                return
            self.run.final_failures += 1
        raise ShardStuck(f"{self._shard_id}: the final invocation of window {_iso(window[0])} keeps failing")

    def _deliver(
        self, batch: list[dict[str, Any]], window: tuple[int, int] | None, state: dict[str, Any]
    ) -> dict[str, Any]:
        """Deliver one batch until it succeeds or is given up; returns the state to carry on with."""
        pending: list[tuple[list[dict[str, Any]], int]] = [(batch, 0)]
        while pending:
            current, attempts = pending.pop(0)
            response = self._call(current, window, state, final=False)
            if response is None:  # function error: split for free, or use up a retry
                self.run.function_errors += 1
                if self._settings.bisect_batch_on_error and len(current) > 1:
                    middle = len(current) // 2
                    halves = [(current[:middle], attempts), (current[middle:], attempts)]
                    pending[:0] = halves[::-1] if self._deliveries.second_half_first() else halves
                elif attempts >= self._settings.retry_attempts:
                    self._dead_letter(current, "RetryAttemptsExhausted")
                else:
                    pending.insert(0, (current, attempts + 1))
                continue
            returned = response.get("state", state) if window is not None else state
            failed = _lowest_failure(current, response)
            if failed is None:
                state = returned
                continue
            self.run.partial_failures += 1
            if self._delivery.partial_failure_state == "returned":
                state = returned
            remaining = current[failed:]
            if attempts >= self._settings.retry_attempts:
                self._dead_letter(remaining, "RetryAttemptsExhausted")
                continue
            pending.insert(0, (remaining, attempts + 1))
        return state

    def _dead_letter(self, records: list[dict[str, Any]], reason: str) -> None:
        sequences = [str(sequence) for r in records if (sequence := sequence_of(r)) is not None]
        arrivals = [_iso_milliseconds(arrived) for r in records if (arrived := arrival_of(r)) is not None]
        kinesis = any(kinesis_body(r) is not None for r in records)
        self.run.dead_letters.append(
            DeadLetter(
                shard_id=self._shard_id,
                start_sequence=sequences[0] if sequences else "",
                end_sequence=sequences[-1] if sequences else "",
                batch_size=len(records),
                reason=reason,
                stream_arn=self._stream_arn,
                kinesis_arrivals=((arrivals[0], arrivals[-1]) if arrivals else ("", "")) if kinesis else None,
            )
        )

    def _call(
        self,
        records: list[dict[str, Any]],
        window: tuple[int, int] | None,
        state: dict[str, Any],
        *,
        final: bool,
    ) -> dict[str, Any] | None:
        """One invocation; None for a function error (raised, no state, or the answer was lost)."""
        event: dict[str, Any] = {"Records": records}
        if window is not None:
            event.update(
                {
                    "window": {"start": _iso(window[0]), "end": _iso(window[1])},
                    "state": state,
                    "shardId": self._shard_id,
                    "eventSourceARN": self._stream_arn,
                    "isFinalInvokeForWindow": final,
                    "isWindowTerminatedEarly": False,
                }
            )
        self.run.invocations += 1
        try:
            response = self._invoke(event)
        except Exception as error:
            text = f"{type(error).__name__}: {error}"
            self.run.errors[text] = self.run.errors.get(text, 0) + 1
            return None
        if self._deliveries.lose_response():
            return None
        if window is not None and not isinstance(response.get("state"), dict):
            return None
        return response


def consume_lineage(
    invoke: Invoke,
    shards: Sequence[tuple[str, Iterable[dict[str, Any]]]],
    settings: EventSourceSettings = EVENT_SOURCE,
    deliveries: Deliveries | None = None,
    stream_arn: str | None = None,
    delivery: Delivery | None = None,
) -> list[ShardRun]:
    """A parent shard, then its children in order: each ends its windows at its end, and each
    child starts the same windows again with a fresh state."""
    return [
        ShardConsumer(invoke, shard_id, settings, deliveries, stream_arn, delivery).consume(records)
        for shard_id, records in shards
    ]


def _lowest_failure(batch: list[dict[str, Any]], response: dict[str, Any]) -> int | None:
    failures = response.get("batchItemFailures") or []
    if not failures:
        return None
    positions = {sequence_of(r): i for i, r in enumerate(batch) if isinstance(r, dict)}
    indexes = []
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if identifier not in positions:
            return 0  # an unknown identifier fails the whole batch
        indexes.append(positions[identifier])
    return min(indexes)
